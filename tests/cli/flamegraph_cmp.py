#!/usr/bin/env python3
"""Compare the frames of two flame graph SVGs, e.g. flamegraph.pl's and
plateau's: for every box, the first line of its tooltip, its geometry,
fill and label.  Exit 0 when they agree; print the first differences."""
import sys
import xml.dom.minidom


def frames(path):
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


a, b = frames(sys.argv[1]), frames(sys.argv[2])
bad = [k for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
for k in bad[:5]:
    print(k, a.get(k), b.get(k))
print('%d and %d frames, %d differ' % (len(a), len(b), len(bad)))
sys.exit(1 if bad or not a else 0)
