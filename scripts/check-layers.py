#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
check-layers: every #include under src/ follows the arrows of
doc/architecture.md ("Parts and arrows").

    scripts/check-layers.py [ROOT]

ROOT is the repository (default: this script's parent's parent).  The
table in the document is the rule: each part (a folder of src/, or
`main` for src/plateau.c) may include its own headers and what its row
lists, either a whole part (`profile`) or one header (`util/banned.h`).
Prints one line per include that breaks the rule, naming file and line,
and exits 1; a folder of src/ that has no row is an error too.
"""
import os
import re
import sys

ROOT = sys.argv[1] if len(sys.argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOC = os.path.join(ROOT, "doc", "architecture.md")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
ROW = re.compile(r"^\|\s*`([a-z]+)`\s*\|[^|]*\|([^|]*)\|\s*$")


def read_rules():
    """{part: set of allowed parts or headers} from the document's table."""
    rules, inside = {}, False
    for line in open(DOC, encoding="utf-8"):
        if line.startswith("<!-- layers:begin"):
            inside = True
        elif line.startswith("<!-- layers:end"):
            inside = False
        elif inside:
            m = ROW.match(line.rstrip("\n"))
            if m:
                allowed = {a.strip(" `") for a in m.group(2).split(",")}
                rules[m.group(1)] = {a for a in allowed if a and a != "—"}
    if not rules:
        sys.exit("%s: no table between <!-- layers:begin --> and <!-- layers:end -->" % DOC)
    return rules


def part_of(rel):
    """src/format/folded.c -> format; src/plateau.c -> main."""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else "main"


def allowed(rules, part, header):
    if "/" not in header:  # generated (profile.pb-c.h) or public (plateau.h)
        return header in rules[part]
    target = header.split("/")[0]
    return target == part or target in rules[part] or header in rules[part]


def main():
    rules = read_rules()
    bad = 0
    src = os.path.join(ROOT, "src")
    for d in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, d)) and d not in rules:
            print("src/%s: a part with no row in doc/architecture.md" % d)
            bad += 1
    for top, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if not f.endswith((".c", ".h")):
                continue
            rel = os.path.relpath(os.path.join(top, f), ROOT)
            part = part_of(rel)
            if part not in rules:
                continue
            for n, line in enumerate(open(os.path.join(top, f), encoding="utf-8",
                                          errors="replace"), 1):
                m = INCLUDE.match(line)
                if m and not allowed(rules, part, m.group(1)):
                    print('%s:%d: %s may not include "%s"' % (rel, n, part, m.group(1)))
                    bad += 1
    if bad:
        print("%d include(s) against the arrows of doc/architecture.md" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
