# SPDX-License-Identifier: MIT
"""
Overflow poison (issue 14 item 5).  A folded push of two stacks of
2^63-1 was acknowledged, then every JSON query over its window answered
"422 totals overflow 64 bits" and the roller retried the window every
second forever.  Now: pushes whose values sum past 64 bits are refused
(folded naming the line, pprof the sample), as are negative values; two
pushes that each fit but overflow together leave the window readable
(saturated, flagged); the roller rolls it; and a window whose data
cannot be rolled up at all (a blob corrupted on disk) is logged once,
counted in /metrics and skipped, not retried in a loop.
"""
import json
import os
import re
import sqlite3
import time

from tortlib import Server, comment, done, ok, push_folded

MAX = 2**63 - 1


def varint(n):
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7f
        n >>= 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    """A length-delimited protobuf field."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def pprof(values):
    """A pprof with one sample per value, each its own one-frame stack."""
    strs = ["", "cpu", "nanoseconds"] + ["f%d" % i for i in range(len(values))]
    msg = field(1, varint(1 << 3) + varint(1) + varint(2 << 3) + varint(2))
    for i, v in enumerate(values):
        msg += field(2, field(1, varint(i + 1)) + field(2, varint(v)))
        msg += field(4, varint(1 << 3) + varint(i + 1) + field(4, varint(1 << 3) + varint(i + 1)))
        msg += field(5, varint(1 << 3) + varint(i + 1) + varint(2 << 3) + varint(3 + i))
    for s in strs:
        msg += field(6, s.encode())
    return msg


srv = Server("poison")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
old = now - 3600 - now % 3600  # an hour boundary, long due

st, body = push_folded(srv, "x.cpu", "a;b %d\na;c %d\n" % (MAX, MAX), old, old + 10)
ok("a folded push summing past 64 bits is refused with a 4xx", st is not None and
   400 <= st < 500, (st, body))
ok("... naming the line", b"body:2: sum of counts overflows 64 bits" in body, body)
st, body = srv.request("POST", "/ingest?name=x&format=pprof&from=%d&until=%d" % (old, old + 10),
                       body=pprof([MAX, MAX]))
ok("a pprof push summing past 64 bits is refused with a 4xx", st is not None and
   400 <= st < 500, (st, body))
ok("... naming the sample", b"sample 1: sum of values overflows 64 bits" in body, body)
st, body = srv.request("POST", "/ingest?name=x&format=pprof&from=%d&until=%d" % (old, old + 10),
                       body=pprof([5, -3]))
ok("a pprof push with a negative value is refused, naming it",
   st == 400 and b"negative cpu value (-3)" in body, (st, body))
st, body = srv.request("POST", "/ingest?name=x&format=pprof&from=%d&until=%d" % (old, old + 10),
                       body=pprof([5, 7]))
ok("... a pprof push of the same shape is stored", st == 200, (st, body))

# Two pushes that each fit and overflow together, in one 10-second window.
for t in (old + 20, old + 25):
    st, body = push_folded(srv, "y.cpu", "a;b %d\na;c 1\n" % (MAX - 1), t, t + 5)
    ok("a push of 2^63-2 is stored", st == 200, (st, body))
q = "query=y.cpu&from=%d&until=%d" % (old, old + 3600)
st, body = srv.request("GET", "/api/v1/query?" + q)
ok("a JSON query over the window they overflow answers 200", st == 200, (st, body[:300]))
try:
    fb = json.loads(body)
except ValueError:
    fb = {}
ok("... flagged as saturated, its total within 64 bits",
   fb.get("metadata", {}).get("saturated") is True and
   0 < fb.get("flamebearer", {}).get("numTicks", -1) <= MAX, body[:400])
st, body = srv.request("GET", "/api/v1/query?format=folded&" + q)
ok("... the folded answer holds a;b at 2^63-1", st == 200 and
   ("a;b %d" % MAX).encode() in body, (st, body[:300]))
st, body = srv.request("GET", "/api/v1/timeline?step=10s&" + q)
ok("... the timeline's step holds at 2^63-1, not a wrapped negative",
   st == 200 and str(MAX).encode() in body and b"-" not in body, (st, body[:300]))

# A third series whose stored blob is corrupted on disk: its window cannot
# be rolled up whatever the roller does.
st, _ = push_folded(srv, "z.cpu", "main;z 1\n", old + 30, old + 35)
db = sqlite3.connect(os.path.join(srv.data, "plateau.db"), timeout=5)
with db:
    n = db.execute("UPDATE profiles SET blob = x'00ff00ff' WHERE series IN "
                   "(SELECT id FROM series WHERE app = 'z')").rowcount
db.close()
ok("a stored blob is corrupted on disk", st == 200 and n == 1, (st, n))
# Later pushes make the old windows due at once (their series moved on).
for app in ("y", "z"):
    st, _ = push_folded(srv, app + ".cpu", "main;late 1\n", now - 60, now - 50)
    ok("a later push to %s.cpu is stored" % app, st == 200)


def metric(name):
    st, body = srv.request("GET", "/metrics")
    m = re.search(rb"^%s (\d+)$" % name.encode(), body or b"", re.M)
    return int(m.group(1)) if m else None


def rollup_lines():
    return [ln for ln in srv.log_text().splitlines() if "rollup:" in ln]


deadline = time.monotonic() + 6
while time.monotonic() < deadline and not (metric("plateau_rollups_failed_total") or 0):
    time.sleep(0.2)
first = len(rollup_lines())
time.sleep(3.5)  # three more roller steps (one a second)
lines = rollup_lines()
comment("rollup log lines: %d then %d; rollups written %s, failed %s" % (
    first, len(lines), metric("plateau_rollups_total"), metric("plateau_rollups_failed_total")))
ok("the corrupted window is logged once, not each second", len(lines) == 1, "\n".join(lines))
ok("... naming the window and that it is skipped", lines and
   "skipped until a push changes it" in lines[0], "\n".join(lines))
ok("/metrics counts the windows that failed", (metric("plateau_rollups_failed_total") or 0) >= 1)
ok("the other windows, the overflowing one included, are rolled up",
   (metric("plateau_rollups_total") or 0) >= 3)
st, body = srv.request("GET", "/api/v1/query?" + q)
ok("the overflowing window is readable from its rollups", st == 200 and
   b'"saturated":true' in body, (st, body[:300]))
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
done()
