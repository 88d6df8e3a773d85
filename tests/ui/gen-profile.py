#!/usr/bin/env python3
"""Write a synthetic folded profile whose call tree has exactly N frames.

    gen-profile.py N [SEED] > big.folded

Frames are distinct (parent, name) pairs, so a flame graph of the output
has N boxes above the root.  Deterministic for a given N and SEED.
"""
import random
import sys


def main():
    n = int(sys.argv[1])
    rng = random.Random(int(sys.argv[2]) if len(sys.argv) > 2 else 1)
    pool = ["m%d::f%d" % (i % 37, i) for i in range(4000)]
    parent = [-1]
    name = [""]
    depth = [0]
    kids = [set()]
    while len(parent) <= n:
        size = len(parent)
        if rng.random() < 0.5:
            p = rng.randrange(max(0, size - 512), size)
        else:
            p = rng.randrange(size)
        if depth[p] >= 40:
            continue
        nm = pool[rng.randrange(len(pool))]
        if nm in kids[p]:
            continue
        kids[p].add(nm)
        parent.append(p)
        name.append(nm)
        depth.append(depth[p] + 1)
        kids.append(set())
    out = []
    for node in range(1, len(parent)):
        if kids[node] and rng.random() > 0.2:
            continue
        stack = []
        v = node
        while v > 0:
            stack.append(name[v])
            v = parent[v]
        stack.reverse()
        out.append("%s %d\n" % (";".join(stack), rng.randint(1, 100)))
    sys.stdout.write("".join(out))


if __name__ == "__main__":
    main()
