#!/usr/bin/env python3
"""Check that every interval plateau printed holds its own estimate.

    intervals_check.py KIND FILE...

KIND says what FILE holds: top (plateau top), check (plateau check's
table), json-diff (plateau diff --format json), json-check (plateau check
--json), svg (a flame graph's tooltips), html (the viewer's data: the
share and interval each tooltip shows, computed as viewer.js does).
Prints each violating row and exits 1 when there is one, or when the FILEs
hold no interval at all; otherwise prints how many were checked.
"""
import json
import os
import re
import subprocess
import sys

SHARE = r'(-?[\d.]+)%\s*\[\s*([\d.]+)-\s*([\d.]+)\]'


def rows_top(text):
    """(row, estimate, lo, hi) for the self and total columns of each row."""
    for line in text.splitlines()[2:]:
        m = re.match(r'\s*\S+\s+' + SHARE + r'\s+\S+\s+' + SHARE + r'\s+(.*)$', line)
        if not m:
            yield line, None, None, None
            continue
        g = m.groups()
        yield 'self ' + g[6], float(g[0]), float(g[1]), float(g[2])
        yield 'total ' + g[6], float(g[3]), float(g[4]), float(g[5])


def rows_check(text):
    for line in text.splitlines()[2:]:
        m = re.match(r'\s*\S+\s+' + SHARE + r'\s+' + SHARE + r'\s+\S+\s+\S+\s+(.*)$', line)
        if not m:
            yield line, None, None, None
            continue
        g = m.groups()
        yield 'base ' + g[6], float(g[0]), float(g[1]), float(g[2])
        yield 'new ' + g[6], float(g[3]), float(g[4]), float(g[5])


def rows_json(text):
    for f in json.loads(text)['functions']:
        for side in ('base', 'new'):
            lo, hi = f.get(side + '_lo'), f.get(side + '_hi')
            yield '%s %s' % (side, f['name']), f[side + '_share'], lo, hi


def rows_svg(text):
    """Each frame's tooltip: "name (N unit, P%)" then "95% interval: L% to H%" (not the root's)."""
    for m in re.finditer(r'<title>([^<]*)</title>', text):
        lines = m.group(1).split('\n')
        head = re.match(r'(.*) \([\d,.]+ [^,]*, ([\d.]+)%\)$', lines[0])
        if not head or head.group(1) == 'all':
            continue
        ci = re.match(r'95% interval: ([\d.]+)% to ([\d.]+)%$', lines[1] if len(lines) > 1 else '')
        if not ci:
            yield lines[0], None, None, None
            continue
        yield head.group(1), float(head.group(2)), float(ci.group(1)), float(ci.group(2))


def rows_html(path):
    """Every frame's tooltip share and interval, from the page's own viewer.js (viewer_tips.mjs)."""
    here = os.path.dirname(os.path.abspath(__file__))
    run = subprocess.run(['node', os.path.join(here, 'viewer_tips.mjs'), path],
                         capture_output=True, text=True)
    if run.returncode:
        yield 'viewer_tips.mjs: ' + run.stderr.strip(), 0, None, None
        return
    for line in run.stdout.splitlines():
        name, share, lo, hi = line.split('\t')
        yield name, float(share), float(lo), float(hi)


def main():
    kind, paths = sys.argv[1], sys.argv[2:]
    each = {'top': rows_top, 'check': rows_check, 'json-diff': rows_json,
            'json-check': rows_json, 'svg': rows_svg, 'html': rows_html}[kind]
    n = bad = 0
    for row, est, lo, hi in (r for path in paths for r in
                             each(path if kind == 'html' else open(path, encoding='utf-8').read())):
        if lo is None or hi is None:
            bad += 1
            print('no interval: %s' % row)
            continue
        n += 1
        if not lo <= est <= hi:
            bad += 1
            print('outside: %s %s [%s, %s]' % (row, est, lo, hi))
    if not n:
        print('no intervals in %s' % ' '.join(paths))
        return 1
    print('checked %d intervals, %d outside' % (n, bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
