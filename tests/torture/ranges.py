# SPDX-License-Identifier: MIT
"""
Extreme times on every endpoint that takes one (query, render, diff,
timeline, series, labels, label values, ingest): each answer is a 4xx
that names the parameter or a 200 with valid JSON, never a 5xx, a crash
or a hang; where the range holds the pushed data, the answer holds it;
the server keeps serving and (under UBSan) no arithmetic overflowed.
"""
import json
import time
from urllib.parse import quote

from tortlib import ASAN, Server, comment, done, ok, push_folded

EXTREMES = ["0", "-1", "9223372036854775807", "-9223372036854775808",
            "9223372036854775808", "1677-09-21T00:12:44Z", "2262-04-11T23:47:16Z",
            "1677-09-21T00:12:43.145224192Z", "2262-04-11T23:47:16.854775807Z",
            "9999-12-31T23:59:59Z", "0000-01-01T00:00:00Z", "now-300y", "now-292y",
            "now+292y", "now-1000000y", "1e30", "now-99999999999999999999y"]
# Ranges that hold the push (at now - 20 s): the answer must have it.
HOLDING = [("0", "9223372036854775807"), ("1677-09-21T00:12:44Z", "2262-04-11T23:47:16Z"),
           ("1677-09-21T00:12:44Z", "2262-04-11T23:47:16.854775807Z"),
           ("now-292y", "now+100y"), ("now-1h", "2262-04-11T23:47:16Z")]

srv = Server("ranges")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
st, _ = push_folded(srv, "x.cpu", "main;work 7\n", now - 20, now - 10)
ok("a push is stored", st == 200)


def get(path):
    st, body = srv.request("GET", path, timeout=20.0)
    return st, body


def answers(what, path, names):
    """GET PATH: a 200 with JSON or a 4xx naming one of NAMES; (st, parsed or None)."""
    st, body = get(path)
    if st == 200:
        try:
            return st, json.loads(body)
        except ValueError as e:
            return ok(what, False, "%s: not JSON: %s: %r" % (path, e, body[:200])) and (st, None)
    good = st is not None and 400 <= st < 500 and any(
        n.encode() in body for n in names)
    if not good:
        ok(what, False, "%s -> %s %r" % (path, st, body[:300]))
    return st, None


def q(v):
    return quote(v, safe="")


bad = 0
requests = 0
t0 = time.monotonic()
# Every endpoint, each extreme as FROM and as UNTIL (the other default).
for v in EXTREMES:
    for p in ("from", "until"):
        paths = [
            ("/api/v1/query?query=x.cpu&format=json&%s=%s" % (p, q(v)), [p]),
            ("/render?name=x.cpu&format=json&%s=%s" % (p, q(v)), [p]),
            ("/api/v1/timeline?query=x.cpu&step=1y&%s=%s" % (p, q(v)), [p, "step"]),
            ("/api/v1/series?query=x.cpu&%s=%s" % (p, q(v)), [p]),
            ("/api/v1/labels?%s=%s" % (p, q(v)), [p]),
            ("/api/v1/labels/service_name/values?%s=%s" % (p, q(v)), [p]),
        ]
        P = p[0].upper() + p[1:]
        for side in ("left", "right"):
            paths.append(("/api/v1/diff?left=x.cpu&right=x.cpu&%s%s=%s" % (side, P, q(v)),
                          [side + P, side + "From", side + "Until"]))
        for path, names in paths:
            requests += 1
            st, _ = answers("%s %s=%s" % (path.split("?")[0], p, v), path, names)
            bad += st is None or st >= 500
ok("%d requests with extreme from/until on 7 endpoints: no 5xx, no silence" % requests,
   bad == 0)

# Both ends extreme at once, every pair, on the query and the timeline.
bad = 0
for a in EXTREMES[:10]:
    for b in EXTREMES[:10]:
        for path in ("/api/v1/query?query=x.cpu&format=json&from=%s&until=%s" % (q(a), q(b)),
                     "/api/v1/timeline?query=x.cpu&step=100y&from=%s&until=%s" % (q(a), q(b))):
            st, _ = answers("%s from=%s until=%s" % (path.split("?")[0], a, b), path,
                            ["from", "until", "step"])
            bad += st is None or st >= 500
ok("every pair of extremes as from and until: no 5xx", bad == 0)

# Steps: zero, negative, huge, and 1 ns over centuries.
for step in ["0", "-1", "-1s", "1ns", "1e30", "9223372036854775807ns",
             "9223372036854775808ns", "292y", "300y", "1000000y"]:
    for frm, until in [("0", "9223372036854775807"), ("now-1h", "now")]:
        path = "/api/v1/timeline?query=x.cpu&from=%s&until=%s&step=%s" % (q(frm), q(until), q(step))
        t = time.monotonic()
        st, body = answers("timeline step=%s from=%s" % (step, frm), path, ["step"])
        ok("timeline step=%s over %s..%s: bounded answer %s in %.2f s" %
           (step, frm, until, st, time.monotonic() - t), st is not None and st < 500)

# Where the range holds the push, every reader has it.
for frm, until in HOLDING:
    w = "from=%s&until=%s" % (q(frm), q(until))
    st, j = answers("query", "/api/v1/query?query=x.cpu&format=json&" + w, ["from", "until"])
    ok("query %s..%s holds the push (7 samples)" % (frm, until),
       st == 200 and j and j["flamebearer"]["numTicks"] == 7, (st, j))
    st, j = answers("render", "/render?name=x.cpu&format=json&" + w, ["from", "until"])
    ok("render %s..%s holds the push" % (frm, until),
       st == 200 and j and j["flamebearer"]["numTicks"] == 7, (st, j))
    st, j = answers("timeline", "/api/v1/timeline?query=x.cpu&step=1y&" + w, ["step"])
    ok("timeline %s..%s by 1y holds the push" % (frm, until),
       st == 200 and j and sum(j["values"]) == 7, (st, str(j)[:300]))
    dw = "leftFrom=%s&leftUntil=%s&rightFrom=%s&rightUntil=%s" % (q(frm), q(until), q(frm), q(until))
    st, j = answers("diff", "/api/v1/diff?left=x.cpu&right=x.cpu&format=flamebearer&" + dw,
                    ["left", "right"])
    ok("diff %s..%s holds the push on both sides" % (frm, until),
       st == 200 and j and j["flamebearer"]["numTicks"] == 14, (st, str(j)[:300]))

# A range after everything stored, at the end of int64_t: empty, not the past.
st, j = answers("query", "/api/v1/query?query=x.cpu&format=json&from=2262-04-11T23:00:00Z"
                "&until=9223372036854775807", ["from"])
ok("query over 2262-04-11T23:00Z..2^63-1 holds nothing",
   st == 200 and j["flamebearer"]["numTicks"] == 0, (st, j))

# Pushes: stored times lie in 1970..2262-01-01; outside, a 400 naming the field.
for frm, until, field in [("9223372035", "9223372036", "until"),
                          ("2262-01-01T00:00:01Z", "2262-01-01T00:00:02Z", "until"),
                          ("1677-09-21T00:12:44Z", "1677-09-21T00:12:45Z", "from"),
                          ("1969-12-31T23:59:59Z", "1970-01-01T00:00:01Z", "from"),
                          ("1e30", "now", "from"), ("now", "now+1000000y", "until"),
                          ("-1", "now", "from"), ("9223372036854775808", "now", "from"),
                          ("now", "now-1s", "until")]:
    st, body = srv.request("POST", "/ingest?name=y.cpu&format=folded&from=%s&until=%s" %
                           (q(frm), q(until)), body=b"a;b 1\n")
    ok("push from=%s until=%s: 400 naming %s" % (frm, until, field),
       st == 400 and field.encode() in body, (st, body[:300]))
st, body = srv.request("POST", "/ingest?name=y.cpu&format=folded&from=0&until=1", body=b"a;b 1\n")
ok("push at the epoch (from=0&until=1) is stored", st == 200, (st, body))
st, j = answers("query", "/api/v1/query?query=y.cpu&format=json&from=0&until=1", ["from"])
ok("... and read back", st == 200 and j["flamebearer"]["numTicks"] == 1, (st, j))

comment("%d requests in %.1f s" % (requests, time.monotonic() - t0))
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
# The roller runs every second: let it meet what was pushed.
time.sleep(1.5)
srv.stop()
log = srv.log_text()
ok("no arithmetic overflowed (UBSan: no runtime error in the log)%s" % ("" if ASAN else
   ", checked under ASan"), "runtime error" not in log, log[-2000:])
done()
