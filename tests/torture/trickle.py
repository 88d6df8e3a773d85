# SPDX-License-Identifier: MIT
"""
Authorised trickle (issue 14 item 3): 40 requests with valid tokens (20
pushes with the write token, 20 queries with the read-only one) whose
bodies arrive at one byte a second.  They used to take every one of the
32 max-concurrent slots before their bodies were read, and /healthz and
every push got 429.  A request now takes its slot once its body is
complete, and /healthz never takes one: meanwhile /healthz, a push and a
query answer 200, and a slow push that does finish is stored.
"""
import os
import socket
import threading
import time

from tortlib import ASAN, TMP, Server, comment, done, ok, push_folded

WRITE, READ = "trickle-write-1", "trickle-read-22"
N = 40
BOUND = 3.0 if ASAN else 1.0


class Trickle:
    """Requests whose bodies get one byte every PERIOD seconds from one thread."""

    def __init__(self, srv, heads, period=1.0):
        self.socks = []
        for head in heads:
            s = socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            s.sendall(head)
            self.socks.append([s, 0])
        self.period = period
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.run, daemon=True)
        self.thread.start()

    def run(self):
        while not self.stop.wait(self.period):
            for ent in self.socks:
                try:
                    ent[0].send(b"main;slow 5\n"[ent[1] % 12:ent[1] % 12 + 1])
                    ent[1] += 1
                except OSError:
                    pass

    def close(self):
        self.stop.set()
        self.thread.join()
        for s, _ in self.socks:
            s.close()


def head(method, path, token, length):
    return ("%s %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\n"
            "Content-Length: %d\r\n\r\n" % (method, path, token, length)).encode()


conf = os.path.join(TMP, "tokens.conf")
with open(conf, "w") as f:
    f.write("token = write:%s\ntoken = read:%s\n" % (WRITE, READ))
srv = Server("trickle", "--config", conf)
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
wauth, rauth = {"Authorization": "Bearer " + WRITE}, {"Authorization": "Bearer " + READ}
ok("a push is stored",
   push_folded(srv, "x.cpu", "main;work 7\n", now - 20, now - 10, wauth)[0] == 200)

heads = [head("POST", "/ingest?name=x.cpu&from=%d&until=%d" % (now - 20, now - 10), WRITE, 1000)
         for _ in range(N // 2)]
heads += [head("GET", "/api/v1/query?query=x.cpu", READ, 1000) for _ in range(N // 2)]
att = Trickle(srv, heads)
# One more slow push, 12 bytes at 4 a second: it finishes and must be stored.
slow = Trickle(srv, [head("POST", "/ingest?name=slow.cpu&from=%d&until=%d" % (now - 20, now - 10),
                          WRITE, 12)], period=0.25)
time.sleep(1.0)

res = {"healthz": [], "push": [], "query": []}
end = time.monotonic() + 3.0
while time.monotonic() < end:
    res["healthz"].append(srv.timed("GET", "/healthz", timeout=BOUND + 1))
    t0 = time.monotonic()
    st, body = push_folded(srv, "x.cpu", "main;probe 1\n", now - 5, now, wauth)
    res["push"].append((st, body, time.monotonic() - t0))
    res["query"].append(srv.timed("GET", "/api/v1/query?query=x.cpu&from=%d&until=%d" %
                                  (now - 3600, now + 60), headers=rauth, timeout=BOUND + 1))
    time.sleep(0.1)
for kind, r in res.items():
    lat = sorted(sec for _, _, sec in r)
    comment("%s under %d trickled bodies: %d probes, statuses %s, p50 %.1f ms, max %.1f ms" %
            (kind, N, len(r), sorted(set(st for st, _, _ in r), key=str),
             1000 * lat[len(lat) // 2], 1000 * lat[-1]))
    ok("%s answers 200 within %.0f s while %d trickled bodies are open" % (kind, BOUND, N),
       all(st == 200 for st, _, _ in r) and lat[-1] < BOUND, [(st, b[:80]) for st, b, _ in r[:3]])

s = slow.socks[0][0]
s.settimeout(5)
try:
    answer = s.recv(4096)
except OSError as e:
    answer = str(e).encode()
ok("the slow push that finished its body is answered 200", answer.startswith(b"HTTP/1.1 200"),
   answer[:200])
slow.close()
att.close()
st, body = srv.request("GET", "/api/v1/query?query=slow.cpu&from=%d&until=%d&format=folded" %
                       (now - 3600, now + 60), headers=rauth)
ok("... and stored", st == 200 and b"main;slow 5" in body, (st, body[:200]))
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
done()
