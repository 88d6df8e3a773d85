# SPDX-License-Identifier: MIT
"""
Slowloris (issue 14 item 2): 300 connections from 127.0.0.1, no token,
each sending one byte of a never-ending request header a second.  The
server used to give each connection a thread out of 144 and lost them
all; now, with the 300 connections open on the server, /healthz, a query
and a push from another client on the same address answer within 1 s
(3 s under ASan).  Then: a connection that does not finish its headers
within header-timeout is cut, and the per-address cap leaves other
addresses served.
"""
import os
import socket
import threading
import time

from tortlib import ASAN, TMP, Server, comment, done, ok, push_folded

N = 300
BOUND = 3.0 if ASAN else 1.0


class Drip:
    """Sockets given one more header byte every second by one thread."""

    def __init__(self, srv, n, source=None):
        self.socks = []
        for i in range(n):
            try:
                s = socket.create_connection(("127.0.0.1", srv.port), timeout=2,
                                             source_address=(source, 0) if source else None)
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow-%d: " % i)
                self.socks.append(s)
            except OSError:
                pass
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(1.0):
            for s in self.socks:
                try:
                    s.send(b"a")
                except OSError:
                    pass

    def closed_by_server(self, wait):
        """How many of the sockets the server closed within WAIT seconds."""
        end, n = time.monotonic() + wait, 0
        for s in self.socks:
            s.settimeout(max(0.01, end - time.monotonic()))
            try:
                n += s.recv(4096) == b""
            except ConnectionResetError:
                n += 1
            except OSError:
                pass
        return n

    def close(self):
        self.stop.set()
        self.thread.join()
        for s in self.socks:
            s.close()


def metric(srv, name):
    st, body = srv.request("GET", "/metrics", timeout=BOUND + 2)
    for line in body.decode(errors="replace").splitlines() if st == 200 else []:
        if line.startswith(name + " "):
            return float(line.split()[1])
    return -1


def probe(srv, seconds):
    """Latencies of /healthz, a query and a push, in turn for SECONDS."""
    now = int(time.time())
    kinds = {
        "healthz": lambda: srv.timed("GET", "/healthz", timeout=BOUND + 1),
        "query": lambda: srv.timed("GET", "/api/v1/query?query=x.cpu&from=%d&until=%d" %
                                   (now - 3600, now + 60), timeout=BOUND + 1),
        "push": lambda: (lambda t0: push_folded(srv, "x.cpu", "main;probe 1\n", now - 5, now) +
                         (time.monotonic() - t0,))(time.monotonic()),
    }
    got = {k: [] for k in kinds}
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for k, f in kinds.items():
            st, _, sec = f()
            got[k].append((st, sec))
        time.sleep(0.1)
    return got


# ---- 300 slow connections, default limits ----
srv = Server("slowloris")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
ok("a push is stored", push_folded(srv, "x.cpu", "main;work 7\n", now - 20, now - 10)[0] == 200)
drip = Drip(srv, N)
time.sleep(0.5)
open_now = metric(srv, "plateau_http_connections")
ok("the %d slow connections are open on the server" % N,
   len(drip.socks) == N and open_now >= N, "client %d, server %s" % (len(drip.socks), open_now))
got = probe(srv, 2.5)
for kind, res in got.items():
    lat = sorted(sec for _, sec in res)
    comment("%s under %d slow connections: %d probes, p50 %.1f ms, max %.1f ms" %
            (kind, N, len(res), 1000 * lat[len(lat) // 2], 1000 * lat[-1]))
    ok("%s answers 200 within %.0f s, every time" % (kind, BOUND),
       all(st == 200 for st, _ in res) and lat[-1] < BOUND, res[:5])
drip.close()
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
# The access log's lines are the probes' requests, not connection messages.
lines = [l for l in srv.log_text().splitlines()
         if "listening on" not in l and "plateau serve: access: " not in l]
comment("%d lines of log after %d dropped connections" % (len(lines), N))
ok("the log stays short: at most 20 connection messages a minute, then a count",
   len(lines) <= 22, "\n".join(lines[:5] + lines[-3:]))

# ---- header-timeout: slow headers are cut, whatever they trickle ----
conf = os.path.join(TMP, "deadline.conf")
with open(conf, "w") as f:
    f.write("header-timeout = 2s\nmax-connections-per-ip = 20\n")
srv = Server("deadline", "--config", conf)
if not ok("a server with header-timeout 2s and 20 connections per address starts", srv.start()):
    done()
drip = Drip(srv, 10)
t0 = time.monotonic()
cut = drip.closed_by_server(6.0 if ASAN else 4.5)
comment("10 slow connections cut after %.1f s (header-timeout 2s)" % (time.monotonic() - t0))
ok("every slow connection is cut once header-timeout has passed", cut == 10, "%d of 10" % cut)
ok("... and counted in /metrics", metric(srv, "plateau_http_header_timeouts_total") >= 10)
drip.close()

# ---- the per-address cap: 30 from one address, 20 kept, others served ----
drip = Drip(srv, 30, source="127.0.0.2")
refused = drip.closed_by_server(1.0)
ok("20 connections per address: 10 of 30 from 127.0.0.2 are closed at once", refused == 10,
   "%d closed" % refused)
st, _, sec = srv.timed("GET", "/healthz", timeout=BOUND + 1)
ok("... while 127.0.0.1 is served", st == 200 and sec < BOUND, (st, sec))
drip.close()
srv.stop()
done()
