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

    bench/serve-bench.py --live [BUILD_DIR]    the live scenario only
    bench/serve-bench.py --all [BUILD_DIR]     both, the aligned one first

The live scenario (issue 16): a fleet of 40 instances (labels region=eu,
instance=i-NN, service, version) pushing folded profiles of 200 stacks
drawn from a pool of 4,000 stacks of depth 8-24, one push per instance per
10-second window, from a Python client (its CPU shares the machine).
1. backfill, in time order over CONNS processes: the 23 hours before the
   last hour at a coarser rate (one 10-second push per instance every
   LIVE_DAY_STEP seconds, 120 by default; 0 skips them), then the last
   hour at the full rate (14,400 pushes). Pushes/s and server CPU per push.
2. right after the backfill (the roller behind): fleet.cpu{region="eu"}
   for the last 1 h, 6 h and 24 h, unaligned (from=now-R&until=now).
3. live, LIVE_SECONDS (120) of real time: the newest windows' pushes keep
   arriving (each instance pushes its window when it ends, spread over
   the next 10 s) while a dashboard queries the three ranges every
   LIVE_EVERY seconds (3); p50/p95 of each range.
4. peak RSS, bytes on disk per pushed sample.
"""
import http.client
import multiprocessing
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
import urllib.parse
import urllib.request

ARGS = [a for a in sys.argv[1:] if not a.startswith("--")]
MODES = [a for a in sys.argv[1:] if a.startswith("--")]
BUILD = ARGS[0] if ARGS else "build"
PLATEAU = os.path.join(BUILD, "plateau")
LOAD = os.path.join(BUILD, "serve_load")
CONNS = int(os.environ.get("CONNS", "4"))
RUNS = int(os.environ.get("QUERY_RUNS", "5"))
DAY = os.environ.get("DAY", "1") != "0"
INSTANCES, STEP, SAMPLES = 40, 10, 2000


def fail(msg):
    print("serve-bench: " + msg, file=sys.stderr)
    sys.exit(1)


def start(data, config=None):
    log = open(os.path.join(os.path.dirname(data), "serve.log"), "w")
    cmd = [PLATEAU, "serve", "--listen", "127.0.0.1:0", "--data", data, "-q"]
    config = config or os.environ.get("SERVE_CONFIG")
    if config:
        cmd += ["--config", config]
    p = subprocess.Popen(cmd, stderr=log)
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


# ---- the live scenario (issue 16) -------------------------------------------

LIVE_STACKS, LIVE_POOL, LIVE_BODIES = 200, 4000, 64
LIVE_SECONDS = float(os.environ.get("LIVE_SECONDS", "120"))
LIVE_EVERY = float(os.environ.get("LIVE_EVERY", "3"))
LIVE_DAY_STEP = int(os.environ.get("LIVE_DAY_STEP", "120"))


def live_bodies():
    """LIVE_BODIES folded bodies of LIVE_STACKS stacks each, drawn from one
    pool of LIVE_POOL stacks of depth 8-24 (a fixed seed: every run pushes
    the same bytes). Returns [(body bytes, samples)]."""
    rnd = random.Random(16)
    funcs = ["pkg%d/mod%d.(*T%d).fn%d" % (i % 13, i % 41, i % 7, i) for i in range(800)]
    pool = []
    for _ in range(LIVE_POOL):
        depth = rnd.randint(8, 24)
        pool.append(";".join(["main", "runtime.main"] +
                             [rnd.choice(funcs) for _ in range(depth - 2)]))
    bodies = []
    for _ in range(LIVE_BODIES):
        lines, total = [], 0
        for st in rnd.sample(pool, LIVE_STACKS):
            v = rnd.randint(1, 20)
            total += v
            lines.append("%s %d" % (st, v))
        bodies.append((("\n".join(lines) + "\n").encode(), total))
    return bodies


def live_path(inst, t):
    name = "fleet.cpu{region=eu,instance=i-%02d,service=shop,version=v%d}" % (inst, 1 + inst % 3)
    return "/ingest?name=%s&from=%d&until=%d&format=folded&units=samples" % (
        urllib.parse.quote(name, safe=""), t, t + STEP)


def live_body_of(inst, t):
    return (inst * 7 + t // STEP) % LIVE_BODIES


def live_post(conn, bodies, inst, t):
    body = bodies[live_body_of(inst, t)][0]
    conn.request("POST", live_path(inst, t), body=body,
                 headers={"Content-Type": "text/plain"})
    r = conn.getresponse()
    r.read()
    if r.status != 200:
        raise RuntimeError("push %d %d: HTTP %d" % (inst, t, r.status))


def live_worker(args):
    port, jobs = args
    bodies = live_bodies()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    for inst, t in jobs:
        live_post(conn, bodies, inst, t)
    conn.close()
    return len(jobs)


def live_query(url, now, rng):
    sel = urllib.parse.quote('fleet.cpu{region="eu"}', safe="")
    dt, body = get("%s/api/v1/query?query=%s&from=%d&until=%d&format=json" % (
        url, sel, now - rng, now))
    ticks = re.search(rb'"numTicks":(\d+)', body)
    return dt, int(ticks.group(1)) if ticks else 0, len(body)


def pct(xs, p):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(p / 100 * (len(xs) - 1))))]


def live_main(config_text=None, res=None):
    """The live scenario; with CONFIG_TEXT, the server's config file; the
    figures also into RES (a dict) for --compare."""
    if not os.access(PLATEAU, os.X_OK):
        fail("%s is missing: build first (make)" % PLATEAU)
    res = {} if res is None else res
    tmp = tempfile.mkdtemp(prefix="plateau-serve-bench-live.")
    data = os.path.join(tmp, "data")
    config = None
    if config_text:
        config = os.path.join(tmp, "serve.conf")
        with open(config, "w") as f:
            f.write(config_text)
    bodies = live_bodies()
    srv, url, port = start(data, config)
    ranges = [("1 h", 3600), ("6 h", 6 * 3600), ("24 h", 86400)]
    try:
        now0 = int(time.time()) // STEP * STEP
        # The backfill in time order: job k goes to connection k % CONNS.
        day = []
        if LIVE_DAY_STEP > 0:
            day = [(i, t) for t in range(now0 - 86400, now0 - 3600, LIVE_DAY_STEP)
                   for i in range(INSTANCES)]
        hour = [(i, t) for t in range(now0 - 3600, now0, STEP) for i in range(INSTANCES)]
        samples = 0
        c0 = cpu_s(srv.pid)
        for name, jobs in (("23 h before, one push per instance every %d s" % LIVE_DAY_STEP, day),
                           ("the last hour, every 10 s", hour)):
            if not jobs:
                continue
            samples += sum(bodies[live_body_of(i, t)][1] for i, t in jobs)
            ca, ta = cpu_s(srv.pid), time.monotonic()
            with multiprocessing.Pool(CONNS) as pool:
                pool.map(live_worker, [(port, jobs[k::CONNS]) for k in range(CONNS)])
            secs, cpu = time.monotonic() - ta, cpu_s(srv.pid) - ca
            print("backfill %s: %d folded pushes (%d stacks) in %.1f s over %d connections: "
                  "%.0f pushes/s; server CPU %.2f ms per push" % (
                      name, len(jobs), LIVE_STACKS, secs, CONNS, len(jobs) / secs,
                      cpu * 1e3 / len(jobs)))
            res["CPU per push, the hour's backfill (ms)"] = cpu * 1e3 / len(jobs)
        pushed = len(day) + len(hour)
        print("  server peak RSS %.1f MiB, rollups pending %d" % (
            rss_peak_kib(srv.pid) / 1024, metric(url, "plateau_rollups_pending") or 0))
        now = int(time.time())
        for label, rng in ranges:
            dt, ticks, size = live_query(url, now, rng)
            print("query %s right after the backfill (from=now-%d&until=now): %.0f ms, "
                  "numTicks %d, %d bytes" % (label, rng, dt * 1e3, ticks, size))
            res["%s right after the backfill (ms)" % label] = dt * 1e3
        print("  rollups pending after these queries %d" % (
            metric(url, "plateau_rollups_pending") or 0))

        # Live: windows [t, t+10) for t >= now0, each pushed once it has ended.
        stop = time.time() + LIVE_SECONDS
        live_pushes = [0]
        live_samples = [0]
        errors = []

        def pusher():
            conn = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
            t = now0
            try:
                while True:
                    end = t + STEP
                    for i in range(INSTANCES):
                        due = end + i * STEP / INSTANCES
                        wait = due - time.time()
                        if due > stop:
                            return
                        if wait > 0:
                            time.sleep(wait)
                        live_post(conn, bodies, i, t)
                        live_pushes[0] += 1
                        live_samples[0] += bodies[live_body_of(i, t)][1]
                    t += STEP
            except Exception as e:  # reported after the run
                errors.append(e)

        lat = {label: [] for label, _ in ranges}
        cl = cpu_s(srv.pid)
        th = threading.Thread(target=pusher)
        th.start()
        rounds = 0
        while time.time() < stop:
            ta = time.time()
            for label, rng in ranges:
                lat[label].append(live_query(url, int(time.time()), rng)[0])
            rounds += 1
            rest = LIVE_EVERY - (time.time() - ta)
            if rest > 0:
                time.sleep(rest)
        th.join()
        if errors:
            fail("live push: %s" % errors[0])
        cpu_live = cpu_s(srv.pid) - cl
        samples += live_samples[0]
        pushed += live_pushes[0]
        print("live %.0f s: %d pushes (%.1f/s), %d dashboard rounds every %.0f s; server CPU "
              "%.1f s (pushes, roller and queries)" % (
                  LIVE_SECONDS, live_pushes[0], live_pushes[0] / LIVE_SECONDS, rounds,
                  LIVE_EVERY, cpu_live))
        for label, rng in ranges:
            xs = lat[label]
            print("query %s live (from=now-%d&until=now): p50 %.0f ms, p95 %.0f ms, "
                  "min %.0f, max %.0f (%d queries)" % (
                      label, rng, pct(xs, 50) * 1e3, pct(xs, 95) * 1e3, min(xs) * 1e3,
                      max(xs) * 1e3, len(xs)))
            res["%s live p50 (ms)" % label] = pct(xs, 50) * 1e3
            res["%s live p95 (ms)" % label] = pct(xs, 95) * 1e3
        res["live: server CPU per push, roller and queries included (ms)"] = (
            cpu_live * 1e3 / max(1, live_pushes[0]))
        disk = metric(url, "plateau_store_bytes")
        print("server peak RSS %.1f MiB; server CPU %.1f s in all" % (
            rss_peak_kib(srv.pid) / 1024, cpu_s(srv.pid) - c0))
        print("disk: %.1f MiB for %d pushes, %d samples: %.2f bytes per sample" % (
            disk / 2**20, pushed, samples, disk / samples))
        res["disk per sample (bytes)"] = disk / samples
        res["server peak RSS (MiB)"] = rss_peak_kib(srv.pid) / 1024
    finally:
        srv.terminate()
        srv.wait()
        if not os.environ.get("KEEP"):
            shutil.rmtree(tmp)


def live_compare():
    """--compare: the live scenario without fleet rollups, then with them
    (the same build), and the ratios of their figures."""
    runs = [("fleet-rollups = off", "fleet-rollups = off\n", {}),
            ("fleet-rollups = on", "fleet-rollups = on\n", {})]
    for name, text, res in runs:
        print("== %s" % name)
        sys.stdout.flush()
        live_main(text, res)
    print("== on / off")
    for key in runs[0][2]:
        a, b = runs[0][2][key], runs[1][2].get(key)
        if b is not None:
            print("%-60s off %8.2f  on %8.2f  on/off %.3f" % (key, a, b, b / a if a else 0))


if __name__ == "__main__":
    unknown = [m for m in MODES if m not in ("--live", "--all", "--compare")]
    if unknown:
        fail("unknown option %s (--live, --all, --compare)" % unknown[0])
    if "--compare" in MODES:
        live_compare()
    elif "--live" not in MODES:
        main()
    if MODES and "--compare" not in MODES:
        live_main()
