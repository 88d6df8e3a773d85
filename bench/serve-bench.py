#!/usr/bin/env python3
"""Benchmark of plateau serve: ingest rate, query latency over long windows,
bytes on disk per sample (issue 5). Runs the server and a load generator
(build/serve_load, bench/serve_load.c) on loopback, in one invocation:

    bench/serve-bench.py [BUILD_DIR]

1. ingest: 40 instances pushing every 10 s for an hour = 14,400 pprof
   profiles of ~2,000 samples, 500 distinct stacks and 6 labels each, over
   CONNS keep-alive connections (default 4); pushes per second and the
   server's peak RSS (VmHWM). Goal: >= 2,000/s.
2. query, 1 hour of the 40 instances (14,400 profiles): the merged flame
   graph (format=json) right after the pushes (read from the pushes) and
   after the rollups are written; median of QUERY_RUNS (5). Goal < 300 ms.
3. 24 hours: the other 23 hours of the same fleet (331,200 more pushes;
   DAY=0 skips it), then the 24-hour query. Goal < 1 s.
4. bytes on disk (plateau.db + WAL) per ingested sample.

Environment: CONNS, QUERY_RUNS, DAY (1), KEEP (keep the data directory).
Peers' published figures are in bench/README.md (they cannot run here).
"""
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
PLATEAU = os.path.join(BUILD, "plateau")
LOAD = os.path.join(BUILD, "serve_load")
CONNS = int(os.environ.get("CONNS", "4"))
RUNS = int(os.environ.get("QUERY_RUNS", "5"))
DAY = os.environ.get("DAY", "1") != "0"
INSTANCES, STEP, SAMPLES = 40, 10, 2000


def fail(msg):
    print("serve-bench: " + msg, file=sys.stderr)
    sys.exit(1)


def start(data):
    log = open(os.path.join(os.path.dirname(data), "serve.log"), "w")
    p = subprocess.Popen([PLATEAU, "serve", "--listen", "127.0.0.1:0", "--data", data],
                         stderr=log)
    for _ in range(100):
        time.sleep(0.1)
        with open(log.name) as f:
            m = re.search(r"listening on (http://[\d.]+:(\d+))", f.read())
        if m:
            return p, m.group(1), int(m.group(2))
    p.kill()
    fail("the server did not start")


def get(url):
    t = time.monotonic()
    with urllib.request.urlopen(url, timeout=600) as r:
        body = r.read()
    return time.monotonic() - t, body


def metric(url, name):
    _, body = get(url + "/metrics")
    m = re.search(r"^%s (\S+)$" % re.escape(name), body.decode(), re.M)
    return float(m.group(1)) if m else None


def rss_peak_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        return int(re.search(r"VmHWM:\s+(\d+)", f.read()).group(1))


def cpu_s(pid):
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def push(port, n, t0):
    out = subprocess.run([LOAD, "127.0.0.1", str(port), str(n), str(CONNS), str(INSTANCES),
                          str(t0)], capture_output=True, text=True)
    if out.returncode != 0:
        fail("serve_load: " + out.stderr.strip())
    m = dict(re.findall(r"(\w+)=([\d.]+)", out.stdout))
    if float(m["errors"]) > 0:
        fail("%s pushes failed" % m["errors"])
    return float(m["rate"]), float(m["seconds"]), int(m["body_bytes"])


def wait_rollups(url, limit_s):
    t = time.monotonic()
    while time.monotonic() - t < limit_s:
        if metric(url, "plateau_rollups_pending") == 0:
            return time.monotonic() - t
        time.sleep(0.5)
    return None


def query(url, t0, seconds):
    q = "%s/api/v1/query?query=bench.cpu&from=%d&until=%d&format=json" % (url, t0, t0 + seconds)
    times, body = [], b""
    for _ in range(RUNS):
        dt, body = get(q)
        times.append(dt)
    ticks = re.search(rb'"numTicks":(\d+)', body)
    return statistics.median(times), min(times), len(body), int(ticks.group(1)) if ticks else 0


def main():
    for exe in (PLATEAU, LOAD):
        if not os.access(exe, os.X_OK):
            fail("%s is missing: build first (make)" % exe)
    tmp = tempfile.mkdtemp(prefix="plateau-serve-bench.")
    data = os.path.join(tmp, "data")
    now = int(time.time())
    day0 = (now - 2 * 86400) // 3600 * 3600  # an hour boundary, two days back
    hour0 = day0 + 23 * 3600                  # the last hour of that day
    srv, url, port = start(data)
    try:
        n1 = INSTANCES * 3600 // STEP
        rate, secs, body = push(port, n1, hour0)
        c1 = cpu_s(srv.pid)
        c0 = c1
        print("ingest: %d pprof profiles (%d samples, 500 stacks, 6 labels; %d bytes gzip each) "
              "in %.1f s over %d connections: %.0f profiles/s (goal >= 2000/s)" % (
                  n1, SAMPLES, body, secs, CONNS, rate, ))
        print("  server peak RSS %.1f MiB" % (rss_peak_kib(srv.pid) / 1024))
        q1 = query(url, hour0, 3600)
        print("query 1 h (%d profiles, from the pushes): median %.0f ms, best %.0f ms; "
              "%d bytes of JSON, numTicks %d" % (n1, q1[0] * 1e3, q1[1] * 1e3, q1[2], q1[3]))
        w = wait_rollups(url, 900)
        print("  rollups written in %s" % ("%.1f s" % w if w is not None else "more than 900 s"))
        q2 = query(url, hour0, 3600)
        print("query 1 h (rollups): median %.0f ms, best %.0f ms (goal < 300 ms)" % (
            q2[0] * 1e3, q2[1] * 1e3))
        if q1[3] != q2[3]:
            fail("the rollups changed the total: %d != %d" % (q1[3], q2[3]))
        total_pushes = n1
        if DAY:
            n2 = INSTANCES * 23 * 3600 // STEP
            rate2, secs2, _ = push(port, n2, day0)
            total_pushes += n2
            print("ingest: %d more profiles (23 h) in %.0f s: %.0f profiles/s" % (n2, secs2, rate2))
            print("  server peak RSS %.1f MiB" % (rss_peak_kib(srv.pid) / 1024))
            w = wait_rollups(url, 3600)
            print("  rollups written in %s" % ("%.1f s" % w if w is not None else "more than 1 h"))
            q3 = query(url, day0, 86400)
            print("query 24 h (%d profiles, rollups): median %.0f ms, best %.0f ms "
                  "(goal < 1 s); numTicks %d" % (total_pushes, q3[0] * 1e3, q3[1] * 1e3, q3[3]))
            # Every hour holds the same pushes (an instance's body is fixed): 24 of the first.
            if q3[3] != 24 * q1[3]:
                fail("the day's total is not 24 hours of the first: %d != 24 x %d" % (q3[3], q1[3]))
        disk = metric(url, "plateau_store_bytes")
        print("disk: %.1f MiB for %d pushes x %d samples: %.2f bytes per sample "
              "(rollups and both sample types included)" % (
                  disk / 2**20, total_pushes, SAMPLES, disk / (total_pushes * SAMPLES)))
        print("  server CPU: %.2f ms per push in the first hour's ingest; %.1f s from then to the "
              "end of the run (queries and rollups included)" % (c1 * 1e3 / n1, cpu_s(srv.pid) - c0))
    finally:
        srv.terminate()
        srv.wait()
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp)


if __name__ == "__main__":
    main()
