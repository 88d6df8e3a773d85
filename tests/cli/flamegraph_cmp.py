#!/usr/bin/env python3
"""Compare the frames of two flame graph SVGs, e.g. flamegraph.pl's and
plateau's: for every box, the first line of its tooltip, its geometry,
fill and label.  Exit 0 when they agree; print the first differences.

Either argument may instead be a golden: the frames of flamegraph.pl's SVG
as JSON (.json.gz), as `flamegraph_cmp.py --golden SVG OUT` writes them
(tests/fixtures/flamegraph/README.md).

With --departures first, A is flamegraph.pl's drawing and B plateau's, and
plateau's two deliberate differences are checked, then set aside: the root
frame is labelled with its title line ("all (N samples, 100%)", where
flamegraph.pl leaves it blank), and unsymbolized frames ("[unknown]",
"0xADDR", "MODULE+0xOFFSET") are grey outside differential graphs."""
import gzip
import json
import re
import sys
import xml.dom.minidom

ROOT = re.compile(r'^all \(.*, 100%\)$')
UNSYM = re.compile(r'^(|\[unknown\]|0x[0-9a-fA-F]+|[^ \t]+\+0x[0-9a-fA-F]+)$')
DIFF = re.compile(r'%; [-+]?[0-9.]+%\)$')
GREY = re.compile(r'^rgb\((\d+),\1,\1\)$')


def frames(path):
    if path.endswith('.json.gz'):
        with gzip.open(path, 'rt', encoding='utf-8') as f:
            return {(r[0], r[1]): tuple(r[2:]) for r in json.load(f)}
    doc = xml.dom.minidom.parse(path)
    group = [g for g in doc.getElementsByTagName('g') if g.getAttribute('id') == 'frames'][0]
    out = {}
    for f in group.childNodes:
        if f.nodeType != f.ELEMENT_NODE:
            continue
        title = f.getElementsByTagName('title')[0].firstChild.nodeValue.split('\n')[0]
        rect = f.getElementsByTagName('rect')[0]
        text = f.getElementsByTagName('text')[0]
        label = text.firstChild.nodeValue if text.firstChild else ''
        key = (rect.getAttribute('x'), rect.getAttribute('y'))
        out[key] = (title, rect.getAttribute('width'), rect.getAttribute('height'),
                    rect.getAttribute('fill'), label, text.getAttribute('x'),
                    text.getAttribute('y'))
    return out


def departures(a, b):
    """Check plateau's departures in b (flamegraph.pl's drawing: a); return why not, or None."""
    diff = any(DIFF.search(v[0]) for v in a.values())
    for k in set(a) & set(b):
        title, label = b[k][0], b[k][4]
        name = re.sub(r'_\[[kwij]\]$', '', title.rsplit(' (', 1)[0])
        if ROOT.match(title):
            if not (label == title or (label.endswith('..') and title.startswith(label[:-2]))):
                return 'root %s labelled %r' % (title, label)
            a[k] = a[k][:4] + ('',) + a[k][5:]
            b[k] = b[k][:4] + ('',) + b[k][5:]
        elif UNSYM.match(name) and not diff:
            m = GREY.match(b[k][3])
            if not m or not 175 <= int(m.group(1)) <= 215:
                return 'unsymbolized %s not grey: %s' % (title, b[k][3])
            a[k] = a[k][:3] + ('grey',) + a[k][4:]
            b[k] = b[k][:3] + ('grey',) + b[k][4:]
    return None


if sys.argv[1] == '--golden':
    rows = [list(k) + list(v) for k, v in sorted(frames(sys.argv[2]).items())]
    # mtime=0: the same frames always give the same bytes.
    with open(sys.argv[3], 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', mtime=0) as f:
        text = '[\n' + ',\n'.join(json.dumps(r, separators=(',', ':')) for r in rows) + '\n]\n'
        f.write(text.encode('ascii'))
    sys.exit(0 if rows else 1)
args = sys.argv[1:]
check_departures = args[0] == '--departures'
if check_departures:
    args = args[1:]
a, b = frames(args[0]), frames(args[1])
if check_departures:
    why = departures(a, b)
    if why:
        print(why)
        sys.exit(1)
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in bad[:5]:
    print(k, a.get(k), b.get(k))
print('%d and %d frames, %d differ' % (len(a), len(b), len(bad)))
sys.exit(1 if bad or not a else 0)
