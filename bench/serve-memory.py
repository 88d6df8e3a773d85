#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Memory of `plateau serve` around a burst of heavy queries: the resident
set before, at its peak, and after the burst once the server has been
idle a few seconds (issue 14: 313 MiB during a burst, 272 MiB after).

    bench/serve-memory.py [PLATEAU] [--stacks N] [--threads T] [--rounds R]

It starts its own server on 127.0.0.1 with a scratch store, pushes
profiles of N distinct stacks into 6 windows, then T threads each run R
JSON queries over all of them at once, and prints the figures in KiB.
"""
import argparse
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request


def rss_kb(pid, field="VmRSS"):
    for line in open("/proc/%d/status" % pid):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0


def folded(n, seed):
    rnd = random.Random(seed)
    out = []
    for i in range(n):
        depth = rnd.randint(12, 30)
        out.append(";".join("mod%d::fn_%d_%d" % (rnd.randint(0, 40), d, rnd.randint(0, 400))
                            for d in range(depth)) + " %d\n" % rnd.randint(1, 50))
    return "".join(out).encode()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("plateau", nargs="?", default="build/plateau")
    ap.add_argument("--stacks", type=int, default=40000)
    ap.add_argument("--threads", type=int, default=8)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--idle", type=float, default=6.0, help="seconds idle before 'after'")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="plateau-serve-memory-")
    log = open(os.path.join(tmp, "log"), "w+")
    p = subprocess.Popen([a.plateau, "serve", "--listen", "127.0.0.1:0", "--data",
                          os.path.join(tmp, "data")], stderr=log, stdout=subprocess.DEVNULL)
    try:
        url = None
        for _ in range(200):
            m = re.search(r"listening on (http://\S+),", open(log.name).read())
            if m:
                url = m.group(1)
                break
            time.sleep(0.05)
        if not url:
            sys.exit("server did not start: " + open(log.name).read())
        t0 = int(time.time()) - 3600
        for w in range(6):
            body = folded(a.stacks, w)
            req = urllib.request.Request("%s/ingest?name=big.cpu&format=folded&from=%d&until=%d"
                                         % (url, t0 + w * 60, t0 + w * 60 + 10), data=body)
            urllib.request.urlopen(req, timeout=60).read()
        time.sleep(2)
        before = rss_kb(p.pid)
        q = "%s/api/v1/query?query=big.cpu&format=json&from=%d&until=%d" % (url, t0 - 10, t0 + 3600)
        peak = [before]
        errors = []

        def worker():
            for _ in range(a.rounds):
                try:
                    urllib.request.urlopen(q, timeout=120).read()
                except OSError as e:
                    errors.append(e)
                peak[0] = max(peak[0], rss_kb(p.pid))

        ts = [threading.Thread(target=worker) for _ in range(a.threads)]
        t = time.monotonic()
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        burst = time.monotonic() - t
        peak[0] = max(peak[0], rss_kb(p.pid, "VmHWM"))
        time.sleep(a.idle)
        after = rss_kb(p.pid)
        print("stacks %d x 6 windows, %d threads x %d JSON queries in %.1f s, %d errors"
              % (a.stacks, a.threads, a.rounds, burst, len(errors)))
        print("rss_before_kib %d" % before)
        print("rss_peak_kib %d" % peak[0])
        print("rss_after_kib %d (after %.0f s idle)" % (after, a.idle))
        print("given back %.0f%% of the burst's growth"
              % (100.0 * (peak[0] - after) / max(1, peak[0] - before)))
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
