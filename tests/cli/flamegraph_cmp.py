#!/usr/bin/env python3
"""Compare the frames of two flame graph SVGs, e.g. flamegraph.pl's and
plateau's: for every box, the first line of its tooltip, its geometry,
fill and label.  Exit 0 when they agree; print the first differences.

Either argument may instead be a golden: the frames of flamegraph.pl's SVG
as JSON (.json.gz), as `flamegraph_cmp.py --golden SVG OUT` writes them
(tests/fixtures/flamegraph/README.md)."""
import gzip
import json
import sys
import xml.dom.minidom


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


if sys.argv[1] == '--golden':
    rows = [list(k) + list(v) for k, v in sorted(frames(sys.argv[2]).items())]
    # mtime=0: the same frames always give the same bytes.
    with open(sys.argv[3], 'wb') as raw, gzip.GzipFile(fileobj=raw, mode='wb', mtime=0) as f:
        text = '[\n' + ',\n'.join(json.dumps(r, separators=(',', ':')) for r in rows) + '\n]\n'
        f.write(text.encode('ascii'))
    sys.exit(0 if rows else 1)
a, b = frames(sys.argv[1]), frames(sys.argv[2])
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in bad[:5]:
    print(k, a.get(k), b.get(k))
print('%d and %d frames, %d differ' % (len(a), len(b), len(bad)))
sys.exit(1 if bad or not a else 0)
