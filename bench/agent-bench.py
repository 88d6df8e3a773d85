#!/usr/bin/env python3
"""Benchmarks of the in-process agent (libplateau.so) against the unprofiled
program and its peers, side by side in one invocation, printing ratios.

    bench/agent-bench.py [BUILD_DIR] [cpu] [alloc] [lock] [wall]

With no section named, all four run (about 2.5 minutes on 2 idle cores).
BUILD_DIR (default build) holds libplateau.so and plateau.  The fixtures
(bench/agent/*.c) are built with $CC $CFLAGS (default cc -O2) into a
temporary directory, removed at the end.  Environment:

  RUNS          interleaved runs per configuration (default 7)
  SCALE         multiplies every fixture's fixed amount of work (default 1)
  PIN           CPU list for `taskset -c` around every run (default: none)
  HEAPTRACK_DIV heaptrack's runs do 1/HEAPTRACK_DIV of the allocation work
                (default 8), next to unprofiled and plateau runs of the
                same size, because it traces every call
  IDLE_SECONDS  how long the wall fixture sleeps (default 2)
  LIBPROFILER   gperftools' CPU profiler (default
                /usr/lib/x86_64-linux-gnu/libprofiler.so)
  KEEP          when set, keep the temporary directory

Sections (targets from the issue; a target missed is reported, not an error):
1. cpu: bench/agent/cpu-work.c (2 threads, fixed work) unprofiled, under
   plateau (PLATEAU_MODES=cpu) and gperftools' libprofiler (CPUPROFILE) at
   99 Hz and 1000 Hz.  Target at 99 Hz: plateau <= 1% slower than
   unprofiled and no slower than gperftools.  Also the CPU time each
   profiler accounted against the worker threads' own CPU clocks.
2. alloc: bench/agent/alloc-work.c (4 threads, malloc/calloc/realloc/free
   of 16 B..64 KiB) unprofiled and under PLATEAU_MODES=alloc (512 KiB mean):
   target <= 5% slower; also with PLATEAU_ALLOC_RATE=1024MiB (the hooks
   with almost no sample), and heaptrack at 1/HEAPTRACK_DIV of the work
   next to unprofiled and plateau runs of that size.
3. lock: bench/agent/lock-work.c, one thread on its own mutex (target
   <= 3% slower under PLATEAU_MODES=lock); the same loop in a program
   without threads (lock mode, and cpu mode, which hooks no lock); and 4
   threads on one mutex (slowdown reported).
4. wall: bench/agent/idle-threads.c, 1,000 threads blocked in read() and
   main sleeping; the CPU the agent uses (PLATEAU_MODES=wall, 99 Hz) while
   nothing runs, as % of one core.

Every run is timed three ways: the fixture's own wall and CPU time over
its fixed work (from main to the last join: CPU of all threads, the
agent's included), and the process's wall and CPU time from the driver
(fork to wait4, rusage of the whole process tree: start-up, exit and
profile writing included).  Ratios are medians over rounds of the
per-round ratio to the baseline run of the same round; configurations are
interleaved and their order rotated each round.  "outside" is process wall
minus work wall: start-up before main, exit and writing the profile.  Each
section ends with what else ran on the machine meanwhile (/proc/stat busy
time minus this driver's and its children's CPU, and steal).  Exit status:
0 unless a run fails, the agent refuses its configuration, or plateau's
build is missing.
"""
import gzip
import os
import re
import resource
import shlex
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SECTIONS = ("cpu", "alloc", "lock", "wall")


def env_num(name, default, kind=int):
    v = os.environ.get(name)
    return kind(v) if v else default


def fail(msg):
    sys.exit("agent-bench: " + msg)


args = sys.argv[1:]
build = args.pop(0) if args and args[0] not in SECTIONS else "build"
sections = args or list(SECTIONS)
for s in sections:
    if s not in SECTIONS:
        fail("unknown section %s (%s)" % (s, ", ".join(SECTIONS)))
build = build if os.path.isabs(build) else os.path.join(ROOT, build)
LIB = os.path.join(build, "libplateau.so")
PLATEAU = os.path.join(build, "plateau")
RUNS = env_num("RUNS", 7)
SCALE = env_num("SCALE", 1.0, float)
PIN = ["taskset", "-c", os.environ["PIN"]] if os.environ.get("PIN") else []
HT_DIV = env_num("HEAPTRACK_DIV", 8)
IDLE_S = env_num("IDLE_SECONDS", 2)
LIBPROFILER = os.environ.get("LIBPROFILER", "/usr/lib/x86_64-linux-gnu/libprofiler.so")
TMP = tempfile.mkdtemp(prefix="plateau-agent-bench-")
SUMMARY = []  # (what, measured, target, verdict)


def med(xs):
    return statistics.median(xs) if xs else float("nan")


def pct(r):
    return "%+.1f%%" % (100 * (r - 1))


def scaled(n):
    return str(max(1, int(n * SCALE)))


# ---------------------------------------------------------------- running
def machine_cpu():
    """(busy, steal) CPU seconds of the whole machine so far, from /proc/stat, and this
    driver's own CPU plus that of its waited-for children."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    hz = os.sysconf("SC_CLK_TCK")
    mine = sum(resource.getrusage(w)[0] + resource.getrusage(w)[1]
               for w in (resource.RUSAGE_SELF, resource.RUSAGE_CHILDREN))
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / hz, v[7] / hz, mine


def other_load(start, seconds):
    """What else ran on the machine since start, in cores: other processes, and steal."""
    now = machine_cpu()
    return ((now[0] - start[0]) - (now[2] - start[2])) / seconds, (now[1] - start[1]) / seconds


def build_fixtures():
    cc = os.environ.get("CC", "cc")
    cflags = shlex.split(os.environ.get("CFLAGS", "-O2"))
    exes = {}
    for name in ("cpu-work", "alloc-work", "lock-work", "idle-threads"):
        exe = os.path.join(TMP, name)
        subprocess.run([cc] + cflags + ["-pthread", os.path.join(HERE, "agent", name + ".c"),
                                        "-o", exe], check=True)
        exes[name] = exe
    return exes, " ".join([cc] + cflags)


def clean_env(extra):
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("PLATEAU_", "CPUPROFILE", "HEAPTRACK")) and k != "LD_PRELOAD"}
    env.update(extra)
    return env


def run_once(cfg):
    """One run of a configuration: the fixture's report plus the driver's timings."""
    for f in cfg.get("files", ()):
        if os.path.exists(f):
            os.unlink(f)
    out_path, err_path = os.path.join(TMP, "run.out"), os.path.join(TMP, "run.err")
    with open(out_path, "w") as out, open(err_path, "w") as err:
        t0 = time.monotonic()
        p = subprocess.Popen(PIN + cfg["cmd"], stdout=out, stderr=err, env=clean_env(cfg["env"]))
        _, status, ru = os.wait4(p.pid, 0)
        pwall = time.monotonic() - t0
    p.returncode = os.waitstatus_to_exitcode(status)
    with open(out_path) as f:
        m = re.search(r"^bench: (.*)$", f.read(), re.M)
    with open(err_path) as f:
        err_text = f.read()
    if p.returncode != 0 or not m:
        fail("%s failed (exit status %d): %s" % (cfg["name"], p.returncode,
                                                 " / ".join(err_text.strip().splitlines()[-4:])))
    if cfg["env"].get("LD_PRELOAD") == LIB:  # a configuration error leaves the agent off
        bad = [line for line in err_text.splitlines() if line.startswith("plateau")]
        missing = [f for f in cfg.get("files", ()) if not os.path.exists(f)]
        if bad or missing:
            fail("%s: the agent did not profile: %s" % (
                cfg["name"], " / ".join(bad) or "no profile written"))
    rep = {k: int(v) for k, v in re.findall(r"(\w+)=(\d+)", m.group(1))}
    res = {"wall": rep["wall_ns"] / 1e9, "cpu": rep["cpu_ns"] / 1e9, "pwall": pwall,
           "pcpu": ru.ru_utime + ru.ru_stime, "rss": ru.ru_maxrss / 1024.0, "rep": rep}
    if cfg.get("after"):
        res.update(cfg["after"](res))
    return res


def measure(title, cfgs):
    """RUNS rounds of every configuration, order rotated each round, after one warm-up run."""
    print("%s; %d interleaved runs each" % (title, RUNS))
    run_once(cfgs[0])
    res = {c["name"]: [] for c in cfgs}
    for r in range(RUNS):
        for i in range(len(cfgs)):
            c = cfgs[(i + r) % len(cfgs)]
            res[c["name"]].append(run_once(c))
    sums = {}
    for c in cfgs:  # the agent must not change what the program computes
        for x in res[c["name"]]:
            sums.setdefault(tuple(c["cmd"][-4:]), set()).add(x["rep"]["checksum"])
    for key, vals in sums.items():
        if len(vals) > 1:
            fail("%s: the fixture's checksum differs between configurations: %s" % (
                title, sorted(vals)))
    return res


def ratio(res, a, b, key):
    """Median over rounds of a's value / b's value in the same round."""
    return med([x[key] / y[key] for x, y in zip(res[a], res[b]) if y[key] > 0])


def table(cfgs, res):
    print("  %-26s %9s %7s %9s %7s | %9s %7s %9s %7s %8s %8s" % (
        "", "work wall", "ratio", "work CPU", "ratio", "proc wall", "ratio", "proc CPU",
        "ratio", "outside", "max RSS"))
    for c in cfgs:
        n, b = c["name"], c.get("base")
        rs = res[n]
        cols = []
        for key in ("wall", "cpu", "pwall", "pcpu"):
            v = med([x[key] for x in rs])
            r = ratio(res, n, b, key) if b else None
            cols.append("%8.3fs %7s" % (v, pct(r) if r is not None else ""))
        print("  %-26s %s %s | %s %s %6.0fms %7.1fM" % (
            n, cols[0], cols[1], cols[2], cols[3], 1e3 * med([x["pwall"] - x["wall"] for x in rs]),
            med([x["rss"] for x in rs])))


def target(what, res, a, b, key, limit):
    """a against b on key, checked against limit; returns the text for the verdict line."""
    rs = [x[key] / y[key] for x, y in zip(res[a], res[b]) if y[key] > 0]
    r, v = med(rs), "met" if med(rs) <= limit else "NOT MET"
    spread = "%s..%s" % (pct(min(rs)), pct(max(rs)))
    by_min = min(x[key] for x in res[a]) / min(y[key] for y in res[b])
    SUMMARY.append((what, "%s (%s)" % (pct(r), spread), "<= %s" % pct(limit), v))
    return "%s (rounds %s, minimums %s; %s)" % (pct(r), spread, pct(by_min), v)


def report(what, measured):
    SUMMARY.append((what, measured, "(report)", ""))


# ---------------------------------------------------------------- profiles
def plateau_total(path, sample_type):
    """Sum of one sample type over the profile, from `plateau convert --format folded`."""
    out = subprocess.run([PLATEAU, "convert", "-o", "-", "--format", "folded", "--sample-type",
                          sample_type, path], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    if out.returncode != 0:
        fail("plateau convert %s: %s" % (path, out.stderr.strip()))
    return sum(float(line.rsplit(None, 1)[1]) for line in out.stdout.splitlines() if line.strip())


def pb_strings(data):
    """The string table (field 6) of a serialized pprof Profile, read at the top level only."""
    def varint(i):
        v = shift = 0
        while True:
            b = data[i]
            v |= (b & 0x7F) << shift
            i += 1
            if b < 0x80:
                return v, i
            shift += 7
    i, out = 0, []
    while i < len(data):
        key, i = varint(i)
        wire = key & 7
        if wire == 0:
            _, i = varint(i)
        elif wire == 1:
            i += 8
        elif wire == 5:
            i += 4
        elif wire == 2:
            n, i = varint(i)
            if key >> 3 == 6:
                out.append(data[i:i + n].decode("utf-8", "replace"))
            i += n
        else:
            fail("malformed pprof profile (wire type %d)" % wire)
    return out


def agent_counters(path):
    """The agent's counters from the profile's comments (`plateau agent: NAME=N`)."""
    with gzip.open(path) as f:
        strings = pb_strings(f.read())
    return {m.group(1): int(m.group(2)) for m in
            (re.fullmatch(r"plateau agent: (\w+)=(\d+)", s) for s in strings) if m}


def drops(path):
    c = agent_counters(path)
    return {k: v for k, v in c.items() if k.startswith(("dropped", "inuse_table")) and v}


def gperf_samples(path):
    """(samples, period in s) of a gperftools CPU profile (legacy binary format, 64-bit words):
    header 0, 3, 0, period_us, 0; records count, depth, pcs...; trailer 0, 1, 0; then maps."""
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 40:
        fail("%s: not a gperftools profile" % path)
    hdr = struct.unpack_from("<5Q", data, 0)
    if hdr[0] != 0 or hdr[1] != 3:
        fail("%s: not a gperftools profile (header %s)" % (path, hdr))
    off, samples = 40, 0
    while off + 16 <= len(data):
        count, depth = struct.unpack_from("<2Q", data, off)
        if count == 0 and depth == 1:
            break
        samples += count
        off += 16 + 8 * depth
    return samples, hdr[3] / 1e6


def gperf_result(prof):
    n, period = gperf_samples(prof)
    return {"acc": n * period, "samples": n}


def google_pprof_total(exe, path):
    tool = shutil.which("google-pprof") or shutil.which("pprof")
    if not tool:
        return None
    out = subprocess.run([tool, "--text", exe, path], stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, text=True).stdout
    m = re.search(r"Total: (\d+) samples", out)
    return int(m.group(1)) if m else None


# ---------------------------------------------------------------- 1. cpu
def cpu_configs(exe, have_gperf):
    cmd = [exe, "-t", "2", "-n", scaled(300000)]
    cfgs = [{"name": "unprofiled", "cmd": cmd, "env": {}}]
    for hz in ("99", "1000"):
        pb = os.path.join(TMP, "cpu%s.pb.gz" % hz)
        cfgs.append({"name": "plateau cpu %s Hz" % hz, "cmd": cmd, "base": "unprofiled",
                     "files": [pb], "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "cpu",
                                            "PLATEAU_HZ": hz, "PLATEAU_OUTPUT": pb},
                     "after": lambda r, pb=pb: {
                         "acc": plateau_total(pb, "cpu") / 1e9, "drops": drops(pb)}})
        if have_gperf:
            prof = os.path.join(TMP, "gperf%s.prof" % hz)
            cfgs.append({"name": "gperftools %s Hz" % hz, "cmd": cmd, "base": "unprofiled",
                         "files": [prof], "peer": "gperftools", "prof": prof,
                         "env": {"LD_PRELOAD": LIBPROFILER, "CPUPROFILE": prof,
                                 "CPUPROFILE_FREQUENCY": hz},
                         "after": lambda r, prof=prof: gperf_result(prof)})
    return cfgs


def cpu_accounting(cfgs, res, exe):
    print("  accounted CPU (plateau: cpu/nanoseconds; gperftools: samples x period) against the"
          " worker threads' CPU clocks:")
    for c in cfgs[1:]:
        rs = res[c["name"]]
        acc = med([x["acc"] / (x["rep"]["threads_cpu_ns"] / 1e9) for x in rs])
        extra = ""
        if c.get("peer") == "gperftools":
            n, check = rs[-1]["samples"], google_pprof_total(exe, c["prof"])
            extra = "; last run %d samples%s" % (n, "" if check is None else (
                ", google-pprof --text agrees" if check == n else
                ", google-pprof --text says %d" % check))
        elif any(x["drops"] for x in rs):
            extra = "; agent drops: %s" % rs[-1]["drops"]
        print("    %-24s %.3f (median; range %.3f..%.3f)%s" % (
            c["name"], acc, min(x["acc"] / (x["rep"]["threads_cpu_ns"] / 1e9) for x in rs),
            max(x["acc"] / (x["rep"]["threads_cpu_ns"] / 1e9) for x in rs), extra))
        report("cpu accounted/real, " + c["name"], "%.3f" % acc)


def section_cpu(exes):
    have_gperf = os.path.exists(LIBPROFILER)
    if not have_gperf:
        print("note: %s is missing (apt-get install libgoogle-perftools-dev): the gperftools "
              "side is skipped" % LIBPROFILER)
    cfgs = cpu_configs(exes["cpu-work"], have_gperf)
    res = measure("cpu: bench/agent/cpu-work.c, 2 threads x %s rounds (fixed work)" %
                  cfgs[0]["cmd"][-1], cfgs)
    table(cfgs, res)
    cpu_accounting(cfgs, res, exes["cpu-work"])
    mine, peer = "plateau cpu 99 Hz", "gperftools 99 Hz"
    print("  => 99 Hz, plateau vs unprofiled: work wall %s, work CPU %s" % (
        target("cpu 99 Hz: plateau vs unprofiled, work wall", res, mine, "unprofiled", "wall",
               1.01),
        target("cpu 99 Hz: plateau vs unprofiled, work CPU", res, mine, "unprofiled", "cpu",
               1.01)))
    if peer in res:
        print("  => 99 Hz, plateau vs gperftools: work wall %s, work CPU %s" % (
            target("cpu 99 Hz: plateau vs gperftools, work wall", res, mine, peer, "wall", 1.0),
            target("cpu 99 Hz: plateau vs gperftools, work CPU", res, mine, peer, "cpu", 1.0)))
    mine, peer = "plateau cpu 1000 Hz", "gperftools 1000 Hz"
    w, c = ratio(res, mine, "unprofiled", "wall"), ratio(res, mine, "unprofiled", "cpu")
    report("cpu 1000 Hz: plateau vs unprofiled, work wall / CPU", pct(w) + " / " + pct(c))
    line = "  => 1000 Hz, plateau vs unprofiled: work wall %s, work CPU %s" % (pct(w), pct(c))
    if peer in res:
        pw, pc = ratio(res, mine, peer, "wall"), ratio(res, mine, peer, "cpu")
        report("cpu 1000 Hz: plateau vs gperftools, work wall / CPU", pct(pw) + " / " + pct(pc))
        line += "; vs gperftools: work wall %s, work CPU %s" % (pct(pw), pct(pc))
    print(line)


# ---------------------------------------------------------------- 2. alloc
def alloc_configs(exe, have_ht):
    full = [exe, "-t", "4", "-n", scaled(3000000)]
    small = [exe, "-t", "4", "-n", scaled(3000000 / HT_DIV)]
    cfgs = []
    pb = os.path.join(TMP, "alloc.pb.gz")
    for tag, cmd in (("", full), (" 1/%d" % HT_DIV, small)):
        if tag and not have_ht:
            break
        cfgs.append({"name": "unprofiled" + tag, "cmd": cmd, "env": {}})
        cfgs.append({"name": "plateau alloc" + tag, "cmd": cmd, "base": "unprofiled" + tag,
                     "files": [pb], "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "alloc",
                                            "PLATEAU_OUTPUT": pb},
                     "after": lambda r, pb=pb: {
                         "objects": plateau_total(pb, "alloc_objects"),
                         "space": plateau_total(pb, "alloc_space"),
                         "samples": agent_counters(pb).get("samples", 0), "drops": drops(pb)}})
        if not tag:  # the hooks with (almost) no sample taken: their per-call cost alone
            cfgs.append({"name": "plateau alloc rate 1024MiB", "cmd": cmd, "base": "unprofiled",
                         "files": [pb], "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "alloc",
                                                "PLATEAU_ALLOC_RATE": "1024MiB",
                                                "PLATEAU_OUTPUT": pb},
                         "after": lambda r, pb=pb: {
                             "samples": agent_counters(pb).get("samples", 0)}})
    if have_ht:
        out = os.path.join(TMP, "heaptrack")
        cfgs.append({"name": "heaptrack 1/%d" % HT_DIV, "peer": "heaptrack",
                     "base": "unprofiled 1/%d" % HT_DIV,
                     "cmd": ["heaptrack", "-o", out] + small, "env": {},
                     "files": [out + ".zst", out + ".gz", out],
                     "after": lambda r, out=out: {"size": sum(
                         os.path.getsize(f) for f in (out + ".zst", out + ".gz", out)
                         if os.path.exists(f))}})
    return cfgs


def section_alloc(exes):
    have_ht = shutil.which("heaptrack") is not None
    if not have_ht:
        print("note: heaptrack is not installed (apt-get install heaptrack): that side is skipped")
    cfgs = alloc_configs(exes["alloc-work"], have_ht)
    res = measure("alloc: bench/agent/alloc-work.c, 4 threads x %s malloc/free steps (fixed "
                  "work); heaptrack and its baselines at 1/%d of it" % (cfgs[0]["cmd"][-1],
                                                                         HT_DIV), cfgs)
    table(cfgs, res)
    x = res["plateau alloc"]
    print("  plateau's estimates against the truth: alloc_objects %.3f, alloc_space %.3f "
          "(medians; %d samples a run)%s" % (
              med([r["objects"] / r["rep"]["allocs"] for r in x]),
              med([r["space"] / r["rep"]["bytes"] for r in x]), med([r["samples"] for r in x]),
              "; drops " + str(x[-1]["drops"]) if x[-1]["drops"] else ""))
    allocs = x[0]["rep"]["allocs"]
    d_ns = med([(a["cpu"] - b["cpu"]) / allocs * 1e9 for a, b in zip(x, res["unprofiled"])])
    print("  => plateau vs unprofiled: work wall %s, work CPU %s;\n     %.1f ns of CPU added "
          "per allocation call (%d calls)" % (
              target("alloc: plateau vs unprofiled, work wall", res, "plateau alloc",
                     "unprofiled", "wall", 1.05),
              target("alloc: plateau vs unprofiled, work CPU", res, "plateau alloc",
                     "unprofiled", "cpu", 1.05), d_ns, allocs))
    y = res["plateau alloc rate 1024MiB"]
    c1 = ratio(res, "plateau alloc rate 1024MiB", "unprofiled", "cpu")
    d1 = med([(a["cpu"] - b["cpu"]) / allocs * 1e9 for a, b in zip(y, res["unprofiled"])])
    n = med([r["samples"] for r in x])
    each = ("so the %.0f samples cost about %.1f us each, everything included (unwind, live "
            "table, ring, caches)" % (n, (d_ns - d1) * allocs / max(n, 1) / 1e3)
            if 0 < d1 < d_ns else "the two are inside this run's noise")
    print("     hooks alone (PLATEAU_ALLOC_RATE=1024MiB, %d samples): work CPU %s, %.1f ns a call;"
          "\n     %s" % (med([r["samples"] for r in y]), pct(c1), d1, each))
    report("alloc: hooks alone (rate 1024MiB) vs unprofiled, work CPU", pct(c1))
    if have_ht:
        h, s = "heaptrack 1/%d" % HT_DIV, "plateau alloc 1/%d" % HT_DIV
        hw, hp = ratio(res, h, "unprofiled 1/%d" % HT_DIV, "pwall"), ratio(res, h, s, "pwall")
        hc = ratio(res, h, "unprofiled 1/%d" % HT_DIV, "pcpu")
        print("  => heaptrack (traces every call) at 1/%d of the work: process wall %.1fx "
              "unprofiled, %.1fx plateau's; process-tree CPU %.1fx unprofiled; %.1f MB of output"
              % (HT_DIV, hw, hp, hc, med([r["size"] for r in res[h]]) / 1e6))
        report("alloc: heaptrack vs unprofiled / vs plateau, process wall",
               "%.1fx / %.1fx" % (hw, hp))


# ---------------------------------------------------------------- 3. lock
def lock_configs(name, cmd, cpu_too=False):
    pb = os.path.join(TMP, "lock.pb.gz")
    cfgs = [{"name": name + " unprofiled", "cmd": cmd, "env": {}},
            {"name": name + " plateau lock", "cmd": cmd, "base": name + " unprofiled",
             "files": [pb], "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "lock",
                                    "PLATEAU_OUTPUT": pb},
             "after": lambda r, pb=pb: {"contentions": plateau_total(pb, "contentions"),
                                        "delay": plateau_total(pb, "delay") / 1e9}}]
    if cpu_too:  # no lock hook at all: what the agent's own threads cost
        cfgs.append({"name": name + " plateau cpu", "cmd": cmd, "base": name + " unprofiled",
                     "files": [pb], "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "cpu",
                                            "PLATEAU_OUTPUT": pb}})
    return cfgs


def lock_ratios(res, cfgs, i=1):
    """(work wall, work CPU) of configuration i against the first."""
    return (ratio(res, cfgs[i]["name"], cfgs[0]["name"], "wall"),
            ratio(res, cfgs[i]["name"], cfgs[0]["name"], "cpu"))


def per_call_ns(res, cfgs, iters, i=1):
    """(CPU ns that configuration i adds per iteration, the first's CPU ns per iteration)."""
    a, b = res[cfgs[i]["name"]], res[cfgs[0]["name"]]
    return med([(x["cpu"] - y["cpu"]) / iters * 1e9 for x, y in zip(a, b)]), \
        med([y["cpu"] for y in b]) / iters * 1e9


def lock_uncontended(exe):
    iters = scaled(60000000)
    cfgs = lock_configs("1 thread", [exe, "-t", "1", "-n", iters])
    res = measure("lock, uncontended: bench/agent/lock-work.c, 1 thread, its own mutex, %s "
                  "lock/unlock (fixed work)" % iters, cfgs)
    table(cfgs, res)
    d_ns, base_ns = per_call_ns(res, cfgs, int(iters))
    a, b = cfgs[1]["name"], cfgs[0]["name"]
    print("  => plateau vs unprofiled: work wall %s, work CPU %s;\n     %.2f ns added per "
          "pthread_mutex_lock (unprofiled %.2f ns per lock/unlock pair)" % (
              target("lock uncontended: plateau vs unprofiled, work wall", res, a, b, "wall",
                     1.03),
              target("lock uncontended: plateau vs unprofiled, work CPU", res, a, b, "cpu", 1.03),
              d_ns, base_ns))


def lock_no_thread(exe):
    iters = scaled(20000000)
    cfgs = lock_configs("no thread", [exe, "-t", "0", "-n", iters], cpu_too=True)
    res = measure("lock, a program without threads: the same loop on the main thread, %s "
                  "lock/unlock; also under PLATEAU_MODES=cpu (no lock hook)" % iters, cfgs)
    table(cfgs, res)
    (_, c), (d_ns, base_ns) = lock_ratios(res, cfgs), per_call_ns(res, cfgs, int(iters))
    (_, c2), (d2_ns, _) = lock_ratios(res, cfgs, 2), per_call_ns(res, cfgs, int(iters), 2)
    print("  => plateau lock vs unprofiled: work CPU %s (%.2f ns added per lock/unlock pair, "
          "unprofiled %.2f ns);\n     plateau cpu (no hook) vs unprofiled: work CPU %s (%.2f ns"
          "): glibc's single-thread\n     fast path ends with the agent's first thread" % (
              pct(c), d_ns, base_ns, pct(c2), d2_ns))
    report("lock, program without threads: plateau lock / plateau cpu vs unprofiled, CPU",
           pct(c) + " / " + pct(c2))


def lock_contended(exe):
    per = scaled(3000000)
    cfgs = lock_configs("4 threads", [exe, "-t", "4", "-s", "-w", "20", "-n", per])
    res = measure("lock, contended: 4 threads on one mutex, %s lock/unlock each with a little "
                  "work outside the lock" % per, cfgs)
    table(cfgs, res)
    a = res[cfgs[1]["name"]]
    w, c = lock_ratios(res, cfgs)
    print("  => plateau vs unprofiled: work wall %s, work CPU %s; the profile estimates %.0f "
          "contentions, %.3f s of waiting a run (medians)" % (
              pct(w), pct(c), med([x["contentions"] for x in a]), med([x["delay"] for x in a])))
    report("lock contended (4 threads): plateau vs unprofiled, work wall / CPU",
           pct(w) + " / " + pct(c))


def section_lock(exes):
    lock_uncontended(exes["lock-work"])
    lock_no_thread(exes["lock-work"])
    lock_contended(exes["lock-work"])


# ---------------------------------------------------------------- 4. wall
def section_wall(exes):
    exe, pb = exes["idle-threads"], os.path.join(TMP, "wall.pb.gz")
    cmd = [exe, "-t", "1000", "-s", str(IDLE_S)]
    cfgs = [{"name": "unprofiled", "cmd": cmd, "env": {}},
            {"name": "plateau wall 99 Hz", "cmd": cmd, "base": "unprofiled", "files": [pb],
             "env": {"LD_PRELOAD": LIB, "PLATEAU_MODES": "wall", "PLATEAU_HZ": "99",
                     "PLATEAU_OUTPUT": pb},
             "after": lambda r, pb=pb: {"wall_acc": plateau_total(pb, "wall") / 1e9}}]
    res = measure("wall: bench/agent/idle-threads.c, 1,000 threads blocked in read(), main "
                  "sleeping %d s" % IDLE_S, cfgs)
    table(cfgs, res)
    a, b = res[cfgs[1]["name"]], res["unprofiled"]
    idle = med([(x["rep"]["idle_cpu_ns"] - y["rep"]["idle_cpu_ns"]) / x["rep"]["idle_ns"]
                for x, y in zip(a, b)])
    whole = med([x["pcpu"] - y["pcpu"] for x, y in zip(a, b)])
    acc = med([x["wall_acc"] / (1001 * x["rep"]["wall_ns"] / 1e9) for x in a])
    print("  => the agent's CPU while the 1,001 threads idle: %.2f%% of one core (median of "
          "profiled minus unprofiled process CPU over the sleep; unprofiled %.3f%%);\n"
          "     whole process, start-up and exit included: +%.3f s of CPU; wall time accounted "
          "%.3f of 1,001 x the run" % (
              100 * idle, 100 * med([y["rep"]["idle_cpu_ns"] / y["rep"]["idle_ns"] for y in b]),
              whole, acc))
    report("wall, 1,000 idle threads: agent CPU, % of one core", "%.2f%%" % (100 * idle))


# ---------------------------------------------------------------- main
def main():
    for f in (LIB, PLATEAU):
        if not os.path.exists(f):
            fail("%s is missing: build plateau first (make build)" % f)
    exes, cc = build_fixtures()
    print("agent-bench: %s, fixtures built with %s%s; %d runs each, SCALE %g" % (
        os.path.realpath(LIB), cc, ", pinned to CPUs " + PIN[2] if PIN else "", RUNS, SCALE))
    print("  work wall/CPU: the fixture's own wall and CPU time (all threads) over its fixed "
          "work;\n  proc wall/CPU: fork to wait4, rusage of the process tree; outside: proc wall"
          " - work wall\n  (start-up before main, exit, writing the profile); ratio: median of "
          "per-round ratios to the baseline\n")
    t_all = time.monotonic()
    for s in sections:
        t0, c0, first = time.monotonic(), machine_cpu(), len(SUMMARY)
        globals()["section_" + s](exes)
        dt = time.monotonic() - t0
        others, steal = other_load(c0, dt)
        print("  (%s took %.0f s; meanwhile other processes used %.2f of the 2 cores and the "
              "hypervisor stole %.2f)\n" % (s, dt, max(others, 0.0), steal))
        SUMMARY.insert(first, ("%s (other load %.2f cores, steal %.2f):" % (
            s, max(others, 0), steal), "", "", ""))
    print("summary (%.0f s in all; ratios are medians of per-round ratios):" % (
        time.monotonic() - t_all))
    w = max(len(x[0]) for x in SUMMARY)
    for what, measured, goal, v in SUMMARY:
        print("  %-*s %24s %9s %s" % (w, what, measured, goal, v))


try:
    main()
finally:
    if not os.environ.get("KEEP"):
        shutil.rmtree(TMP, ignore_errors=True)
    else:
        print("kept %s" % TMP)
