#!/usr/bin/env python3
"""Parse an SVG (strictly, with expat) and print it as a JSON tree for
flamegraph_dom.js: {"tag", "attrs", "children": [elements or strings]}."""
import json
import sys
import xml.dom.minidom


def convert(node):
    out = {"tag": node.tagName, "attrs": dict(node.attributes.items()), "children": []}
    for c in node.childNodes:
        if c.nodeType == c.ELEMENT_NODE:
            out["children"].append(convert(c))
        elif c.nodeType in (c.TEXT_NODE, c.CDATA_SECTION_NODE):
            out["children"].append(c.data)
    return out


doc = xml.dom.minidom.parse(sys.argv[1])
json.dump(convert(doc.documentElement), sys.stdout)
