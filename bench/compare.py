#!/usr/bin/env python3
"""Run plateau and its peers side by side on the same inputs, in one
invocation, and print time and peak-memory ratios.

    bench/compare.py PLATEAU PERF_SCRIPT_TXT FOLDED

Peers: FlameGraph's stackcollapse-perf.pl, flamegraph.pl and
difffolded.pl from $FLAMEGRAPH_DIR; inferno-collapse-perf and
inferno-flamegraph from $INFERNO_DIR (or PATH when it is unset) when
present, else "not measured": every figure printed is measured by this
run, none is copied from elsewhere.  Each command
runs RUNS times (default 3; Perl commands once when slower than 5 s) and
the median wall time counts; peak RSS is the largest seen.  Outputs are
compared where they must be identical.
"""
import os
import shutil
import statistics
import subprocess
import sys
import time

plateau, perf_txt, folded = sys.argv[1:4]
fg = os.environ.get("FLAMEGRAPH_DIR", "")
runs = int(os.environ.get("RUNS", "3"))
out_dir = os.environ.get("BENCH_OUT", "/tmp/plateau-bench/out")
os.makedirs(out_dir, exist_ok=True)


def find_inferno(name):
    """The inferno binary NAME from $INFERNO_DIR (or PATH when unset), else
    None after saying it was not measured: no figure is ever printed for a
    tool this run did not run."""
    d = os.environ.get("INFERNO_DIR")
    if d:
        path = os.path.join(d, name)
        if os.access(path, os.X_OK):
            return path
        print("  %s: not measured (INFERNO_DIR=%s has no executable %s)" % (name, d, name))
        return None
    path = shutil.which(name)
    if not path:
        print("  %s: not measured (set INFERNO_DIR to a directory with inferno's binaries)" % name)
    return path


def run(cmd, stdout_path):
    """One run: (wall seconds, peak RSS MiB).

    The peak comes from GNU time, not from wait4(): a child's ru_maxrss
    keeps the high-water mark of the (Python-sized) process it was forked
    from, which would hide any tool smaller than this script.
    """
    rss_file = stdout_path + ".rss"
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        p = subprocess.run(["/usr/bin/time", "-f", "%M", "-o", rss_file] + cmd,
                           stdout=out, stderr=subprocess.DEVNULL)
        dt = time.perf_counter() - t0
    if p.returncode:
        sys.exit("bench: %s failed (status %d)" % (" ".join(cmd), p.returncode))
    with open(rss_file) as f:
        kib = int(f.read().split()[-1])
    os.unlink(rss_file)
    return dt, kib / 1024


def measure(name, cmd, out):
    times, rss = [], 0
    for i in range(runs):
        dt, r = run(cmd, out)
        times.append(dt)
        rss = max(rss, r)
        if dt > 5 and i == 0:
            break
    t = statistics.median(times)
    print("  %-28s %8.3f s  %7.1f MiB  (%d run%s)" % (name, t, rss, len(times),
                                                       "" if len(times) == 1 else "s"))
    return t, rss


def same(a, b, what):
    with open(a, "rb") as f1, open(b, "rb") as f2:
        ok = f1.read() == f2.read()
    print("  output %s: %s" % (what, "identical" if ok else "DIFFERENT"))
    return ok


def ratio_line(what, mine, peer, peer_name, goal=None):
    r = peer[0] / mine[0] if mine[0] else float("inf")
    m = mine[1] / peer[1] if peer[1] else float("inf")
    verdict = ""
    if goal:
        verdict = "  goal >= %gx: %s" % (goal, "met" if r >= goal else "NOT MET")
    print("  => %s: plateau %.1fx faster than %s; memory %.2fx of %s's%s" % (
        what, r, peer_name, m, peer_name, verdict))
    return r, m


size_mb = os.path.getsize(perf_txt) / 1e6
print("inputs: %s (%.1f MB perf script), %s (%.1f MB folded)" % (
    perf_txt, size_mb, folded, os.path.getsize(folded) / 1e6))
results = {}

print("\ncollapse (perf script -> folded)")
mine = measure("plateau collapse", [plateau, "collapse", "--cut-paren", perf_txt],
               os.path.join(out_dir, "plateau.folded"))
print("  plateau: %.0f MB/s" % (size_mb / mine[0]))
if fg:
    perl = measure("stackcollapse-perf.pl", ["perl", os.path.join(fg, "stackcollapse-perf.pl"), perf_txt],
                   os.path.join(out_dir, "perl.folded"))
    same(os.path.join(out_dir, "plateau.folded"), os.path.join(out_dir, "perl.folded"),
         "plateau collapse --cut-paren vs stackcollapse-perf.pl")
    results["collapse/perl"] = ratio_line("collapse", mine, perl, "stackcollapse-perf.pl", 20)
inf = find_inferno("inferno-collapse-perf")
if inf:
    peer = measure("inferno-collapse-perf", [inf, perf_txt], os.path.join(out_dir, "inferno.folded"))
    results["collapse/inferno"] = ratio_line("collapse", mine, peer, "inferno-collapse-perf", 1)

print("\nflamegraph (folded -> SVG)")
mine = measure("plateau flamegraph", [plateau, "flamegraph", folded], os.path.join(out_dir, "plateau.svg"))
if fg:
    perl = measure("flamegraph.pl", ["perl", os.path.join(fg, "flamegraph.pl"), folded],
                   os.path.join(out_dir, "perl.svg"))
    results["flamegraph/perl"] = ratio_line("flamegraph", mine, perl, "flamegraph.pl", 20)
inf = find_inferno("inferno-flamegraph")
if inf:
    peer = measure("inferno-flamegraph", [inf, folded], os.path.join(out_dir, "inferno.svg"))
    results["flamegraph/inferno"] = ratio_line("flamegraph", mine, peer, "inferno-flamegraph", 1)

print("\nflamegraph straight from perf script (plateau only; the peers need collapse first)")
measure("plateau flamegraph perf.txt", [plateau, "flamegraph", perf_txt], os.path.join(out_dir, "direct.svg"))

if fg:
    print("\ndiff (two folded files -> differential folded, normalised)")
    half = os.path.join(out_dir, "half.folded")
    with open(folded) as f, open(half, "w") as h:
        for i, line in enumerate(f):
            stack, _, count = line.rstrip("\n").rpartition(" ")
            h.write("%s %d\n" % (stack, int(count) // 2 + (i % 7)))
    mine = measure("plateau diff -n", [plateau, "diff", "-n", "--format", "folded", folded, half],
                   os.path.join(out_dir, "plateau.diff"))
    perl = measure("difffolded.pl -n", ["perl", os.path.join(fg, "difffolded.pl"), "-n", folded, half],
                   os.path.join(out_dir, "perl.diff"))
    results["diff/perl"] = ratio_line("diff", mine, perl, "difffolded.pl")

print("\nsummary")
for k, (r, m) in results.items():
    print("  %-20s %6.1fx faster, %.2fx the memory" % (k, r, m))
