#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
check-layers: every #include under src/ follows the arrows of
doc/architecture.md ("Parts and arrows").

    scripts/check-layers.py [ROOT]

ROOT is the repository (default: this script's parent's parent).  The
table in the document is the rule: each part (a folder of src/, or
`main` for src/plateau.c) may include its own headers and what its row
lists, either a whole part (`profile`) or one header (`util/banned.h`);
an entry marked "(tests)" holds only for the part's tests (*_test.c,
*_testutil.h).
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
                allowed = set()
                for a in m.group(2).split(","):
                    a = a.strip(" `")
                    if a.endswith("(tests)"):
                        a = "tests:" + a[: -len("(tests)")].strip(" `")
                    if a and a != "—":
                        allowed.add(a)
                rules[m.group(1)] = allowed
    if not rules:
        sys.exit("%s: no table between <!-- layers:begin --> and <!-- layers:end -->" % DOC)
    return rules


def part_of(rel):
    """src/format/folded.c -> format; src/plateau.c -> main."""
    parts = rel.split("/")
    return parts[1] if len(parts) > 2 else "main"


def is_test(rel):
    return rel.endswith(("_test.c", "_testutil.h"))


def allowed(rules, part, header, test):
    """Whether PART may include HEADER; TEST: from one of its tests."""
    kinds = ("", "tests:") if test else ("",)
    if "/" not in header:  # generated (profile.pb-c.h) or public (plateau.h)
        return any(k + header in rules[part] for k in kinds)
    target = header.split("/")[0]
    return target == part or any(k + target in rules[part] or k + header in rules[part]
                                 for k in kinds)


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
                if m and not allowed(rules, part, m.group(1), is_test(rel)):
                    print('%s:%d: %s may not include "%s"' % (rel, n, part, m.group(1)))
                    bad += 1
    if bad:
        print("%d include(s) against the arrows of doc/architecture.md" % bad)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
