#!/usr/bin/env python3
"""Server CPU per push of plateau serve, for A/B runs of builds (issue 16).

    bench/ingest-cpu.py [-n PUSHES] [-r ROUNDS] [--formats pprof,folded] BUILD[@CONFIG]...

For each round and each BUILD in turn (interleaved, so a busy machine
weighs on all alike), starts BUILD/plateau serve on a fresh temporary
store, pushes N realistic profiles and prints the server's CPU per push
(utime + stime from /proc/PID/stat) three ways: all-in (from the first
push until the rollups have caught up, plateau_rollups_pending 0: what
a push costs in the end), at the last push's answer, and of the push
threads alone (the main thread, where the roller runs, left out); then
pushes/s and the store's bytes on disk per pushed sample (WAL
included: a short run's figure is above a day's).  For changes to the
readers alone, build/read_bench (bench/read_bench.c) is steadier.  Formats:

  pprof   BUILD/serve_load (bench/serve_load.c): gzip pprof of 2,000
          samples over 500 stacks, 2 sample types, 6 labels, 40
          instances, 4 keep-alive connections, as the Pyroscope SDKs send
  folded  /ingest?format=folded from Python (4 threads, keep-alive): the
          same 500 stacks (10-30 frames of 400 functions), 2,000 samples,
          6 labels in the name, 40 instances

Bytes per sample: the data directory's size over (pushes x 2,000); for
pprof that counts one sample once though it feeds 2 series, as
bench/serve-bench.py does.  Ends with the ratio of each build's median
to the first build's.
"""
import argparse
import http.client
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time

INSTANCES = 40
CONNS = 4
SAMPLES = 2000
STACKS = 500
FUNCS = 400


def fail(msg):
    print("ingest-cpu: " + msg, file=sys.stderr)
    sys.exit(1)


def start(plateau, data, log, config=None):
    p = subprocess.Popen([plateau, "serve", "--listen", "127.0.0.1:0", "--data", data] +
                         (["--config", config] if config else []),
                         stderr=open(log, "w"))
    for _ in range(200):
        time.sleep(0.05)
        with open(log) as f:
            m = re.search(r"listening on http://[\d.]+:(\d+)", f.read())
        if m:
            return p, int(m.group(1))
    p.kill()
    fail("the server did not start")


def cpu_s(pid, path=None):
    with open(path or "/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def main_thread_s(pid):
    return cpu_s(pid, "/proc/%d/task/%d/stat" % (pid, pid))


def rollups_pending(port):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    c.request("GET", "/metrics")
    body = c.getresponse().read().decode()
    c.close()
    m = re.search(r"^plateau_rollups_pending (\S+)$", body, re.M)
    return float(m.group(1)) if m else 0


def wait_rollups(port, limit_s=90):
    t = time.monotonic()
    while time.monotonic() - t < limit_s:
        if rollups_pending(port) == 0:
            return True
        time.sleep(0.5)
    return False


def du(path):
    total = 0
    for root, _, files in os.walk(path):
        for f in files:
            try:
                total += os.stat(os.path.join(root, f)).st_blocks * 512
            except FileNotFoundError:
                pass
    return total


def folded_body():
    rnd = random.Random(42)
    funcs = ["pkg%d::Module%d::function_%d" % (f % 17, f % 41, f) for f in range(FUNCS)]
    lines, per = [], SAMPLES // STACKS
    for _ in range(STACKS):
        depth = 10 + rnd.randrange(21)
        stack = [funcs[d] if d < 3 else funcs[rnd.randrange(FUNCS)] for d in range(depth)]
        lines.append("%s %d" % (";".join(stack), per))
    return ("\n".join(lines) + "\n").encode()


def push_folded(port, n, t0):
    body = folded_body()
    counter = iter(range(n))
    lock = threading.Lock()
    errors = []

    def worker():
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        while True:
            with lock:
                i = next(counter, None)
            if i is None:
                break
            inst = i % INSTANCES
            frm = t0 + (i // INSTANCES) * 10
            name = ("bench.cpu{service=checkout,version=v2.4.%d,region=eu-west-%d,zone=z%d,"
                    "env=prod,instance=i%d}" % (inst % 3, inst % 2, inst % 4, inst))
            c.request("POST", "/ingest?name=%s&format=folded&from=%d&until=%d&units=samples"
                      % (name, frm, frm + 10), body)
            r = c.getresponse()
            r.read()
            if r.status != 200:
                errors.append(r.status)
        c.close()

    t = time.monotonic()
    th = [threading.Thread(target=worker) for _ in range(CONNS)]
    for x in th:
        x.start()
    for x in th:
        x.join()
    if errors:
        fail("%d folded pushes failed (%s)" % (len(errors), errors[0]))
    return n / (time.monotonic() - t)


def push_pprof(build, port, n, t0):
    out = subprocess.run([os.path.join(build, "serve_load"), "127.0.0.1", str(port), str(n),
                          str(CONNS), str(INSTANCES), str(t0)], capture_output=True, text=True)
    if out.returncode != 0:
        fail("serve_load: " + out.stderr.strip())
    m = dict(re.findall(r"(\w+)=([\d.]+)", out.stdout))
    if float(m["errors"]) > 0:
        fail("%s pushes failed" % m["errors"])
    return float(m["rate"])


def run(build, fmt, n):
    """BUILD, or BUILD@CONFIG: the server of BUILD with that config file."""
    build, _, config = build.partition("@")
    tmp = tempfile.mkdtemp(prefix="plateau-ingest-cpu.")
    data = os.path.join(tmp, "data")
    t0 = (int(time.time()) - 2 * 86400) // 3600 * 3600
    srv, port = start(os.path.join(build, "plateau"), data, os.path.join(tmp, "serve.log"),
                      config or None)
    try:
        c0, m0 = cpu_s(srv.pid), main_thread_s(srv.pid)
        rate = push_pprof(build, port, n, t0) if fmt == "pprof" else push_folded(port, n, t0)
        c1, m1 = cpu_s(srv.pid), main_thread_s(srv.pid)
        if not wait_rollups(port):
            fail("the rollups did not catch up in 90 s")
        c2 = cpu_s(srv.pid)
        disk = du(data)
    finally:
        srv.terminate()
        srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)
    # all-in (rollups done), at the last answer, the push threads alone (not the roller's)
    return ((c2 - c0) / n * 1000, (c1 - c0) / n * 1000, (c1 - c0 - (m1 - m0)) / n * 1000,
            rate, disk / (n * SAMPLES))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("-n", type=int, default=14400)
    ap.add_argument("-r", "--rounds", type=int, default=3)
    ap.add_argument("--formats", default="pprof,folded")
    ap.add_argument("builds", nargs="+")
    a = ap.parse_args()
    res = {}
    for r in range(a.rounds):
        for fmt in a.formats.split(","):
            for b in a.builds:
                got = run(b, fmt, a.n)
                res.setdefault((fmt, b), []).append(got)
                print("round %d %-6s %-24s cpu/push all-in %.3f ms, at last answer %.3f, "
                      "push threads %.3f; %5.0f pushes/s; %.2f bytes/sample"
                      % ((r + 1, fmt, b) + got), flush=True)
    for fmt in a.formats.split(","):
        base = [statistics.median(x[k] for x in res[(fmt, a.builds[0])]) for k in range(3)]
        for b in a.builds:
            m = [statistics.median(x[k] for x in res[(fmt, b)]) for k in range(3)]
            print("median %-6s %-24s cpu/push all-in %.3f ms (ratio %.2f), push threads %.3f "
                  "(ratio %.2f)" % (fmt, b, m[0], m[0] / base[0], m[2], m[2] / base[2]))


if __name__ == "__main__":
    main()
