#!/usr/bin/env python3
"""Capacity of the profile model: 10 million samples over 1 million
distinct stacks must fit in 1 GiB.

Generates a folded file with STACKS distinct stacks (depth 20-35, drawn
from 3,000 function names under 5,000 shared prefixes, as real programs
share their upper frames) whose counts sum to SAMPLES, then reads it with
`plateau convert` and `plateau top` and reports each one's peak RSS.
"""
import os
import random
import subprocess
import sys
import tempfile
import time

plateau = sys.argv[1] if len(sys.argv) > 1 else "build/plateau"
stacks = int(os.environ.get("STACKS", 1_000_000))
samples = int(os.environ.get("SAMPLES", 10_000_000))

rng = random.Random(42)
names = ["fn_%d_%s" % (i, rng.choice(["parse", "hash", "alloc", "io", "lock", "sort"]))
         for i in range(3000)]
prefixes = [";".join(rng.choice(names) for _ in range(rng.randint(8, 15)))
            for _ in range(5000)]

path = os.path.join(tempfile.gettempdir(), "plateau-capacity-%d.folded" % stacks)
if not os.path.exists(path):
    per = samples // stacks
    with open(path, "w") as f:
        for i in range(stacks):
            suffix = ";".join(rng.choice(names) for _ in range(rng.randint(12, 20)))
            # the stack id makes each stack distinct even if the draw repeats
            f.write("%s;%s;leaf_%d %d\n" % (rng.choice(prefixes), suffix, i, per))
size = os.path.getsize(path)
print("input: %d distinct stacks, %d samples, %.0f MB folded" % (stacks, samples, size / 1e6))

failed = False
for args in (["convert", "--format", "folded", "-o", "/dev/null", path], ["top", "-n", "5", path]):
    t0 = time.time()
    rss_file = path + ".rss"
    # GNU time reports the peak RSS of the command alone (see compare.py).
    p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file, plateau] + args,
                       stdout=subprocess.DEVNULL)
    dt = time.time() - t0
    if p.returncode:
        sys.exit("plateau %s failed with status %d" % (args[0], p.returncode))
    with open(rss_file) as f:
        rss = int(f.read().split()[-1]) / 1024
    os.unlink(rss_file)
    print("plateau %-8s peak RSS %6.0f MiB (goal: under 1024), %.1f s" % (args[0], rss, dt))
    if rss >= 1024:
        failed = True
sys.exit(1 if failed else 0)
