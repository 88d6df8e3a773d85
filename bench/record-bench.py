#!/usr/bin/env python3
"""Benchmarks of `plateau record` against perf and the FlameGraph scripts,
side by side in one invocation, printing ratios.

    bench/record-bench.py [BUILD_DIR] [overhead] [e2e] [symbolize]

With no section named, all three run.  BUILD_DIR (default build) holds
plateau and symbolize_bench.  Environment:

  FLAMEGRAPH_DIR  FlameGraph checkout, for e2e (skipped, saying so, without it)
  BENCH_DIR       scratch directory (default /tmp/plateau-bench/record)
  RUNS            overhead runs per configuration (default 5); E2E_RUNS (default 3)
  BURN_ROUNDS     work per thread of bench/burn-threads.c (default: its own, ~3 s)
  BURN_CFLAGS     how the workload is built (default "-O2 -g": no frame
                  pointers, like Debian's packages and its libc)
  PLATEAU_ARGS    extra arguments for `plateau record` (e.g. "-g fp")
  SYM_FILES       files for the symbolization benchmark (default libLLVM-14
                  or the largest C++ library found, then BUILD_DIR/plateau
                  for the DWARF path); SYM_N addresses (default 100000)
  PEER_BUDGET     seconds a symbolization peer may take (default 10): slow
                  peers get a prefix of the same addresses

1. overhead: bench/burn-threads.c (2 threads, fixed work) unprofiled, under
   `plateau record` and `perf record -g` at -F 99 and -F 999, and under
   `perf record --call-graph dwarf` at -F 99 (the perf mode that gives the
   stacks plateau gives on code without frame pointers); runs interleaved,
   configuration order rotated each round.  The time is the workload's own
   wall time (it times itself from main to the last join), so the
   profiler's CPU on the same 2 cores counts, but not its start-up before
   exec nor its work after the exit.  CPU columns (the workload's, and its
   parent's while it ran) are less disturbed by other load than wall time.
2. e2e: from the workload's exit to a written SVG.  The workload prints
   CLOCK_MONOTONIC at exit; the driver takes CLOCK_MONOTONIC when the last
   process of the tool chain has exited; the difference is what the user
   waits for after the program ended.  Peer: perf record -g (its own exit
   work, build-id collection, counts) then perf script | stackcollapse-perf.pl
   | flamegraph.pl.
3. symbolize: build/symbolize_bench on random .text addresses (cold and
   warm passes), against addr2line, eu-addr2line and llvm-addr2line fed the
   same addresses on stdin; names compared.
"""
import glob
import os
import re
import shlex
import shutil
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def env_int(name, default):
    v = os.environ.get(name)
    return int(v) if v else default


args = sys.argv[1:]
build = args.pop(0) if args and args[0] not in ("overhead", "e2e", "symbolize") else "build"
sections = args or ["overhead", "e2e", "symbolize"]
build = os.path.abspath(os.path.join(ROOT, build)) if not os.path.isabs(build) else build
plateau = os.path.join(build, "plateau")
bench_dir = os.environ.get("BENCH_DIR", "/tmp/plateau-bench/record")
os.makedirs(bench_dir, exist_ok=True)
fg_dir = os.environ.get("FLAMEGRAPH_DIR", "")
plateau_extra = shlex.split(os.environ.get("PLATEAU_ARGS", ""))


def have_record():
    """`plateau record` exists (the command may not be built yet)."""
    if not os.access(plateau, os.X_OK):
        return False
    p = subprocess.run([plateau, "record", "--help"], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL)
    return p.returncode == 0


def have_perf():
    return shutil.which("perf") is not None and subprocess.run(
        ["perf", "record", "-q", "-o", "/dev/null", "true"], stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL).returncode == 0


def build_workload():
    src = os.path.join(HERE, "burn-threads.c")
    cflags = shlex.split(os.environ.get("BURN_CFLAGS", "-O2 -g"))
    exe = os.path.join(bench_dir, "burn-threads")
    stamp = exe + ".flags"
    old = None
    if os.path.exists(stamp):
        with open(stamp) as f:
            old = f.read()
    if old != " ".join(cflags) or not os.path.exists(exe) or \
            os.path.getmtime(exe) < os.path.getmtime(src):
        subprocess.run([os.environ.get("CC", "cc")] + cflags + ["-pthread", src, "-o", exe],
                       check=True)
        with open(stamp, "w") as f:
            f.write(" ".join(cflags))
    return exe, " ".join(cflags)


def workload_cmd(exe, report):
    cmd = [exe, "-r", report]
    rounds = os.environ.get("BURN_ROUNDS")
    return cmd + ["-n", rounds] if rounds else cmd


def read_report(path):
    with open(path) as f:
        return {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", f.read())}


def run_tree(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL):
    """Run cmd; (exit status, CLOCK_MONOTONIC at its end, CPU seconds of its process tree)."""
    p = subprocess.Popen(cmd, stdout=stdout, stderr=stderr)
    _, status, ru = os.wait4(p.pid, 0)
    end = time.monotonic()  # CLOCK_MONOTONIC on Linux, as the workload's clock_gettime
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, end, ru.ru_utime + ru.ru_stime


def med(xs):
    return statistics.median(xs) if xs else float("nan")


# ---------------------------------------------------------------- overhead
def overhead_configs(record_ok, perf_ok, out_pb, out_data):
    cfgs = [("unprofiled", lambda: [])]
    for hz in ("99", "999"):
        if record_ok:
            cfgs.append(("plateau record -F " + hz, lambda hz=hz: [
                plateau, "record", "-q", "-F", hz] + plateau_extra + ["-o", out_pb, "--"]))
        if perf_ok:
            cfgs.append(("perf record -F %s -g" % hz, lambda hz=hz: [
                "perf", "record", "-q", "-F", hz, "-g", "-o", out_data, "--"]))
        if perf_ok and hz == "99":
            cfgs.append(("perf record -F %s dwarf" % hz, lambda hz=hz: [
                "perf", "record", "-q", "-F", hz, "--call-graph", "dwarf", "-o", out_data,
                "--"]))
    return cfgs


def overhead_run(name, cmd, report):
    """One run, retried once if the tool fails (perf record has been seen to abort at exit)."""
    err = os.path.join(bench_dir, "overhead.stderr")
    for attempt in range(2):
        with open(err, "w") as e:
            status, _, cpu = run_tree(cmd, stderr=e)
        if status == 0 and os.path.exists(report):
            rep = read_report(report)
            return rep, cpu - rep["cpu_ns"] / 1e9
        with open(err) as e:
            print("  %s failed (status %d)%s: %s" % (
                name, status, ", retrying" if not attempt else "",
                " / ".join(e.read().strip().splitlines()[-3:])))
    sys.exit("bench: %s failed twice" % name)


def overhead_table(cfgs, res):
    """Per configuration: wall median/min and CPU; returns {name: (median, min)}."""
    base_cpu = med([r["work"] for r in res["unprofiled"]])
    print("  %-24s %8s %8s %7s %7s %8s %8s %7s %8s" % (
        "", "wall med", "wall min", "d med", "d min", "work CPU", "prof run", "d CPU",
        "prof all"))
    out = {}
    for name, _ in cfgs:
        el = [r["wall"] for r in res[name]]
        out[name] = (med(el), min(el))
        b = out.get("unprofiled", out[name])
        print("  %-24s %7.3fs %7.3fs %+6.1f%% %+6.1f%% %7.3fs %7.3fs %+6.1f%% %7.3fs" % (
            name, med(el), min(el), 100 * (med(el) / b[0] - 1), 100 * (min(el) / b[1] - 1),
            med([r["work"] for r in res[name]]), med([r["run"] for r in res[name]]),
            100 * (med([r["work"] + r["run"] for r in res[name]]) / base_cpu - 1),
            med([r["all"] for r in res[name]])))
    return out


def overhead_verdict(out, hz):
    mine = out.get("plateau record -F " + hz)
    peer = out.get("perf record -F %s -g" % hz)
    base = out["unprofiled"]
    if not mine:
        print("  => -F %s: plateau record not available: only the peer side was measured" % hz)
        return
    r = mine[0] / base[0]
    line = "  => -F %s: plateau/unprofiled %.3f (min %.3f; goal <= 1.01: %s)" % (
        hz, r, mine[1] / base[1], "met" if r <= 1.01 else "NOT MET")
    if peer:
        line += "; perf -g/unprofiled %.3f; plateau/perf -g %.3f (min %.3f; goal <= 1: %s)" % (
            peer[0] / base[0], mine[0] / peer[0], mine[1] / peer[1],
            "met" if mine[0] <= peer[0] else "NOT MET")
    dwarf = out.get("perf record -F %s dwarf" % hz)
    if dwarf:
        line += "; plateau/perf dwarf %.3f" % (mine[0] / dwarf[0])
    print(line)


def overhead(record_ok, perf_ok):
    exe, cflags = build_workload()
    runs = env_int("RUNS", 5)
    out_pb = os.path.join(bench_dir, "overhead.pb.gz")
    out_data = os.path.join(bench_dir, "overhead.perf.data")
    report = os.path.join(bench_dir, "overhead.report")
    cfgs = overhead_configs(record_ok, perf_ok, out_pb, out_data)
    print("overhead: bench/burn-threads.c (%s), 2 threads, fixed work; %d interleaved runs each;"
          " load average %.2f at the start" % (cflags, runs, os.getloadavg()[0]))
    print("  wall: the workload's own wall time (d: change against unprofiled); work CPU: its"
          " CPU time;\n  prof run: the profiler's CPU while the workload ran; d CPU: work + prof"
          " run against unprofiled work;\n  prof all: the profiler's CPU in all (start-up and"
          " writing the output included)")
    res = {name: [] for name, _ in cfgs}
    for r in range(runs):
        for i in range(len(cfgs)):
            name, prefix = cfgs[(i + r) % len(cfgs)]
            for f in (out_pb, out_data, report):
                if os.path.exists(f):
                    os.unlink(f)
            rep, cpu = overhead_run(name, prefix() + workload_cmd(exe, report), report)
            res[name].append({"wall": rep["elapsed_ns"] / 1e9, "work": rep["cpu_ns"] / 1e9,
                              "run": rep["parent_cpu_ns"] / 1e9, "all": cpu})
    out = overhead_table(cfgs, res)
    for hz in ("99", "999"):
        overhead_verdict(out, hz)
    print("  load average %.2f at the end (2 cores: above ~0.5 other work competes)" %
          os.getloadavg()[0])


# ---------------------------------------------------------------- end to end
def e2e_plateau(exe, svg, report):
    for f in (svg, report):
        if os.path.exists(f):
            os.unlink(f)
    err = os.path.join(bench_dir, "e2e.plateau.stderr")
    with open(err, "w") as e:
        status, end, _ = run_tree([plateau, "record", "-F", "99"] + plateau_extra +
                                  ["-o", svg, "--"] + workload_cmd(exe, report), stderr=e)
    if status != 0 or not os.path.getsize(svg):
        sys.exit("bench: plateau record failed (status %d), see %s" % (status, err))
    with open(err) as e:
        m = re.search(r"([\d,]+) samples", e.read())
    n = int(m.group(1).replace(",", "")) if m else -1
    return end - read_report(report)["exit_mono_ns"] / 1e9, n


def e2e_perf(exe, svg, report, data):
    for f in (svg, report, data):
        if os.path.exists(f):
            os.unlink(f)
    for attempt in range(2):  # perf record has been seen to abort in its build-id collection
        status, rec_end, _ = run_tree(["perf", "record", "-q", "-F", "99", "-g", "-o", data,
                                       "--"] + workload_cmd(exe, report))
        if status == 0:
            break
        print("  perf record failed (status %d)%s" % (status, ", retrying" if not attempt else ""))
    if status != 0:
        sys.exit("bench: perf record failed twice")
    pipe = "perf script -i %s 2>/dev/null | perl %s | perl %s > %s" % (
        shlex.quote(data), shlex.quote(os.path.join(fg_dir, "stackcollapse-perf.pl")),
        shlex.quote(os.path.join(fg_dir, "flamegraph.pl")), shlex.quote(svg))
    status, end, _ = run_tree(["sh", "-c", pipe])
    if status != 0 or not os.path.getsize(svg):
        sys.exit("bench: %s failed (status %d)" % (pipe, status))
    exit_s = read_report(report)["exit_mono_ns"] / 1e9
    return end - exit_s, rec_end - exit_s


def root_share(path):
    """Share of samples whose stack reaches the workload's thread function (complete stacks)."""
    out = subprocess.run([plateau, "top", "--sort", "total", "-n", "0", path],
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    for line in out.splitlines():
        if line.endswith(" worker_main"):
            return float(re.findall(r"([\d.]+)%", line)[1])
    return 0.0


def e2e_stacks(exe, record_ok, perf_ok, report):
    """How complete the stacks of each side are (one more, untimed, plateau run)."""
    parts = []
    if record_ok:
        folded = os.path.join(bench_dir, "e2e.plateau.folded")
        run_tree([plateau, "record", "-q", "-F", "99"] + plateau_extra + ["-o", folded, "--"] +
                 workload_cmd(exe, report))
        parts.append("plateau %.1f%%" % root_share(folded))
    if perf_ok and os.access(plateau, os.X_OK):
        txt = os.path.join(bench_dir, "e2e.perf.txt")
        with open(txt, "w") as f:
            subprocess.run(["perf", "script", "-i", os.path.join(bench_dir, "e2e.perf.data")],
                           stdout=f, stderr=subprocess.DEVNULL)
        parts.append("perf record -g %.1f%%" % root_share(txt))
    if parts:
        print("  complete stacks (samples whose stack reaches the thread function worker_main): " +
              ", ".join(parts))


def e2e(record_ok, perf_ok):
    if not os.path.exists(os.path.join(fg_dir, "flamegraph.pl")):
        print("e2e: skipped: set FLAMEGRAPH_DIR to a FlameGraph checkout")
        return
    exe, cflags = build_workload()
    runs = env_int("E2E_RUNS", 3)
    report = os.path.join(bench_dir, "e2e.report")
    print("end to end: burn-threads (%s) at -F 99, from the workload's exit "
          "(its CLOCK_MONOTONIC) to the SVG written and the last process exited; %d runs each"
          % (cflags, runs))
    mine, peer, peer_rec, samples = [], [], [], []
    for _ in range(runs):
        if record_ok:
            t, n = e2e_plateau(exe, os.path.join(bench_dir, "e2e.plateau.svg"), report)
            mine.append(t)
            samples.append(n)
        if perf_ok:
            t, rec = e2e_perf(exe, os.path.join(bench_dir, "e2e.perf.svg"), report,
                              os.path.join(bench_dir, "e2e.perf.data"))
            peer.append(t)
            peer_rec.append(rec)
    if mine:
        print("  plateau record -o x.svg        %8.3f s  (%s samples)" % (
            med(mine), "/".join(str(n) for n in samples)))
    else:
        print("  plateau record: not available: only the peer side was measured")
    if peer:
        print("  perf record + script | stackcollapse-perf.pl | flamegraph.pl  %.3f s "
              "(of which perf record's exit work %.3f s)" % (med(peer), med(peer_rec)))
    e2e_stacks(exe, record_ok, perf_ok, report)
    if mine and peer:
        r = med(peer) / med(mine)
        print("  => plateau %.1fx faster from end of recording to SVG (goal >= 10x: %s)" % (
            r, "met" if r >= 10 else "NOT MET"))


# ---------------------------------------------------------------- symbolization
def largest_cxx_library():
    files = [f for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib/llvm-*/lib")
             for f in glob.glob(os.path.join(d, "*.so*"))
             if os.path.isfile(f) and not os.path.islink(f)]
    for f in sorted(files, key=os.path.getsize, reverse=True):
        with open(f, "rb") as fh:
            if b"libstdc++.so" in fh.read(1 << 24):
                return f
    return None


def sym_files():
    if os.environ.get("SYM_FILES"):
        return os.environ["SYM_FILES"].split()
    llvm = "/usr/lib/x86_64-linux-gnu/libLLVM-14.so.1"
    first = llvm if os.path.exists(llvm) else largest_cxx_library()
    return [f for f in (first, plateau) if f]


def sym_plateau(path, n, addrs=None, names=None):
    cmd = [os.path.join(build, "symbolize_bench"), "-n", str(n), path]
    if addrs:
        cmd[1:1] = ["--addrs", addrs, "--names", names]
    out = subprocess.run(cmd, check=True, stdout=subprocess.PIPE, text=True).stdout
    res = {k: float(v) for k, v in re.findall(r"(\w+)=([\d.]+)", out.splitlines()[-1])}
    return out, res


def peer_run(cmd, addrs, n, out_path):
    """Time cmd fed the first n addresses; its output lines in out_path."""
    inp = os.path.join(bench_dir, "sym.in")
    with open(addrs) as f, open(inp, "w") as g:
        for _ in range(n):
            g.write(f.readline())
    with open(inp) as i, open(out_path, "w") as o:
        t0 = time.monotonic()
        subprocess.run(cmd, stdin=i, stdout=o, stderr=subprocess.DEVNULL, check=True)
        return time.monotonic() - t0


def norm(name):
    """Ignore gcc's clone suffixes and demangler spacing/parenthesis style."""
    name = re.sub(r"\.(constprop|isra|part|cold|lto_priv|localalias)(\.\d+)?", "", name)
    return re.sub(r"[\s()]", "", name)


def compare_names(mine, peer_out, n):
    with open(peer_out) as f:
        lines = f.read().split("\n")
    # -f prints "function\nfile:line"; eu-addr2line adds " inlined at FILE:LINE in CALLER"
    peer = [lines[2 * i].split(" inlined at ")[0] for i in range(n)]
    both = [(a, b) for a, b in zip(mine, peer) if a != "??" and b != "??"]
    exact = sum(a == b for a, b in both)
    close = sum(norm(a) == norm(b) for a, b in both)
    only_mine = sum(a != "??" and b == "??" for a, b in zip(mine, peer))
    only_peer = sum(a == "??" and b != "??" for a, b in zip(mine, peer))
    diff = [(a, b) for a, b in both if norm(a) != norm(b)][:2]
    return len(both), exact, close, only_mine, only_peer, diff


def symbolize_peer(label, cmd, path, addrs, names, n_all, budget):
    probe = 200
    t = peer_run(cmd, addrs, probe, os.path.join(bench_dir, "sym.peer"))
    n = min(n_all, max(probe, int(probe / max(t, 1e-3) * budget) // 100 * 100))
    out = os.path.join(bench_dir, "sym.peer")
    t = peer_run(cmd, addrs, n, out)
    _, mine = sym_plateau(path, n)  # same seed: the same first n addresses
    mine_t = mine["load_s"] + mine["cold_s"]
    both, exact, close, only_mine, only_peer, diff = compare_names(names, out, n)
    r = t / mine_t
    print("  %-15s %7d addrs %8.3f s %10.0f addr/s | plateau on the same %d: %.3f s "
          "=> plateau %.1fx %s" % (label, n, t, n / t, n, mine_t, r if r >= 1 else 1 / r,
                                   "faster" if r >= 1 else "SLOWER"))
    print("  %-15s names: both named %d, agree %.2f%% exactly, %.2f%% modulo clone suffixes "
          "and demangler style; named only by plateau %d, only by %s %d" % (
              "", both, 100 * exact / max(both, 1), 100 * close / max(both, 1), only_mine,
              label, only_peer))
    if label == "addr2line" and only_peer:
        print("  %-15s (binutils addr2line names an address after the nearest symbol below it, "
              "even past that symbol's size)" % "")
    for a, b in diff:
        j = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
        k = max(0, j - 30)
        print("  %-15s   e.g. plateau ...%s... vs ...%s..." % ("", a[k:j + 40], b[k:j + 40]))


def symbolize():
    if not os.access(os.path.join(build, "symbolize_bench"), os.X_OK):
        print("symbolize: skipped: %s/symbolize_bench is not built" % build)
        return
    n_all = env_int("SYM_N", 100000)
    budget = float(os.environ.get("PEER_BUDGET", "10"))
    peers = [("addr2line", "addr2line"), ("eu-addr2line", "eu-addr2line"),
             ("llvm-addr2line", "llvm-addr2line")]
    for path in sym_files():
        addrs = os.path.join(bench_dir, "sym.addrs")
        names_file = os.path.join(bench_dir, "sym.names")
        # Both passes within about the peers' budget: fewer addresses when plateau is slow.
        _, probe = sym_plateau(path, 5000)
        n = min(n_all, max(5000, int(5000 / probe["cold_s"] * budget / 2) // 1000 * 1000))
        print("symbolize: %s, %d random .text addresses (seed 42)%s" % (
            path, n, "" if n == n_all else "; fewer than SYM_N: plateau is slow on this file"))
        out, res = sym_plateau(path, n, addrs, names_file)
        for line in out.splitlines()[1:-1]:
            print("  plateau " + line)
        print("  plateau load + cold pass: %.0f addr/s" % (n / (res["load_s"] + res["cold_s"])))
        with open(names_file) as f:
            names = f.read().split("\n")
        for label, prog in peers:
            if shutil.which(prog):
                symbolize_peer(label, [prog, "-f", "-C", "-e", path], path, addrs, names, n,
                               budget)
            else:
                print("  %s: not installed" % label)


def main():
    record_ok, perf_ok = have_record(), have_perf()
    if not record_ok:
        print("note: `%s record` is not available yet: the plateau side is skipped" % plateau)
    if not perf_ok:
        print("note: `perf record` does not work here: the perf side is skipped")
    for s in sections:
        t0 = time.monotonic()
        if s == "overhead":
            overhead(record_ok, perf_ok)
        elif s == "e2e":
            e2e(record_ok, perf_ok)
        elif s == "symbolize":
            symbolize()
        else:
            sys.exit("bench: unknown section %s (overhead, e2e, symbolize)" % s)
        print("  (%s took %.0f s)\n" % (s, time.monotonic() - t0))


main()
