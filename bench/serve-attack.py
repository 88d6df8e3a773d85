#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""
Probe latency of `plateau serve` under slow clients (issue 14 items 2, 3):

  slowloris   N connections (default 300) that each send one byte of a
              never-ending request header per second, no token;
  trickle     M requests (default 40) with a valid token whose bodies
              arrive at one byte per second.

While each attack holds its connections, a well-behaved client on
127.0.0.1 sends /healthz, a query and a push in turn for SECONDS; the
script prints, per probe, how many answered, their statuses, the latency
p50 and max, and the server's RSS.  The slowloris connections come from
127.0.0.1 too, or spread over 127.0.0.2 .. 127.0.0.(SOURCES+1) with
--sources (to stay under the per-address cap).  Loopback only; every
attacker is closed at the end.

    bench/serve-attack.py [--plateau build/plateau] [--conns 300]
                          [--sources 0] [--trickle 40] [--seconds 6]
"""
import argparse
import http.client
import os
import re
import shutil
import socket
import subprocess
import tempfile
import threading
import time

TOKEN = "bench-token-123"


def start(plateau, tmp, config):
    cfg = os.path.join(tmp, "serve.conf")
    with open(cfg, "w") as f:
        f.write(config)
    log = open(os.path.join(tmp, "serve.log"), "w")
    proc = subprocess.Popen([plateau, "serve", "--listen", "127.0.0.1:0", "--data",
                             os.path.join(tmp, "data"), "--config", cfg],
                            stdout=subprocess.DEVNULL, stderr=log)
    for _ in range(200):
        m = re.search(r"listening on http://127\.0\.0\.1:(\d+)",
                      open(os.path.join(tmp, "serve.log")).read())
        if m:
            return proc, int(m.group(1))
        time.sleep(0.05)
    proc.kill()
    raise SystemExit("serve did not start: " + open(os.path.join(tmp, "serve.log")).read())


def request(port, method, path, body=None, headers=None, timeout=5.0):
    t0 = time.monotonic()
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        conn.request(method, path, body=body, headers=headers or {})
        r = conn.getresponse()
        r.read()
        status = r.status
    except (OSError, http.client.HTTPException) as e:
        status = type(e).__name__
    finally:
        conn.close()
    return status, time.monotonic() - t0


class Attack:
    """Sockets that each get one byte per second from one thread."""

    def __init__(self, port, n, head, drip, sources=0):
        self.socks, self.stop, self.drip = [], threading.Event(), drip
        for i in range(n):
            src = ("127.0.0.%d" % (2 + i % sources), 0) if sources else None
            try:
                s = socket.create_connection(("127.0.0.1", port), timeout=2,
                                             source_address=src)
                s.sendall(head)
                self.socks.append(s)
            except OSError:
                pass
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(1.0):
            for s in self.socks:
                try:
                    s.send(self.drip)
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def probes(port, seconds, headers):
    now = int(time.time())
    kinds = {
        "healthz": ("GET", "/healthz", None),
        "query": ("GET", "/api/v1/query?query=bench.cpu&from=%d&until=%d" % (now - 3600, now + 60),
                  None),
        "push": ("POST", "/ingest?name=bench.cpu&from=%d&until=%d" % (now - 10, now),
                 b"main;work 3\n"),
    }
    got = {k: [] for k in kinds}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for k, (m, p, b) in kinds.items():
            got[k].append(request(port, m, p, b, headers if k != "healthz" else None))
        time.sleep(0.1)
    return got


def rss_mib(pid):
    for line in open("/proc/%d/status" % pid):
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0


def report(title, got, pid):
    print("%s (server RSS %.1f MiB)" % (title, rss_mib(pid)))
    for k, res in got.items():
        lat = sorted(t for _, t in res)
        statuses = {}
        for st, _ in res:
            statuses[st] = statuses.get(st, 0) + 1
        print("  %-8s %3d probes  statuses %-28s p50 %7.1f ms  max %7.1f ms" %
              (k, len(res), ",".join("%s:%d" % kv for kv in sorted(statuses.items(), key=str)),
               1000 * lat[len(lat) // 2], 1000 * lat[-1]))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--plateau", default="build/plateau")
    ap.add_argument("--conns", type=int, default=300)
    ap.add_argument("--sources", type=int, default=0)
    ap.add_argument("--trickle", type=int, default=40)
    ap.add_argument("--seconds", type=float, default=6)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="serve-attack.")
    proc = None
    try:
        proc, port = start(a.plateau, tmp, "token = %s\n" % TOKEN)
        auth = {"Authorization": "Bearer " + TOKEN}
        request(port, "POST", "/ingest?name=bench.cpu", b"main;work 7\n", auth)
        report("no attack", probes(port, min(a.seconds, 2), auth), proc.pid)

        att = Attack(port, a.conns, b"GET /healthz HTTP/1.1\r\nHost: x\r\n", b"X", a.sources)
        time.sleep(1.5)
        report("slowloris: %d of %d connections open from %s, one header byte/s each" %
               (len(att.socks), a.conns, "%d addresses" % a.sources if a.sources else "127.0.0.1"),
               probes(port, a.seconds, auth), proc.pid)
        att.close()

        if a.trickle:
            head = ("POST /ingest?name=trickle.cpu HTTP/1.1\r\nHost: x\r\n"
                    "Authorization: Bearer %s\r\nContent-Length: 1000\r\n\r\n" % TOKEN).encode()
            att = Attack(port, a.trickle, head, b"a")
            time.sleep(1.5)
            report("trickle: %d authorised pushes, body one byte/s each" % len(att.socks),
                   probes(port, a.seconds, auth), proc.pid)
            att.close()
    finally:
        if proc:
            proc.terminate()
            proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
