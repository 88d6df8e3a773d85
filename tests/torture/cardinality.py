# SPDX-License-Identifier: MIT
"""
A noisy app pushes a label with a new value every time (a request id):
it fills its own series budget, and the other apps still create series;
the 422 names the app and the label; /metrics counts series per app; the
global budget stays a ceiling over every app, and what the budgets
refused is counted and nothing already stored is lost.
"""
import os
import re

from tortlib import TMP, Server, done, ok, push_folded

conf = os.path.join(TMP, "cardinality.conf")
with open(conf, "w") as f:
    f.write("series-budget = 40\nseries-budget-per-app = 10\n")
srv = Server("cardinality", "--config", conf)
if not ok("the server starts with series-budget-per-app", srv.start()):
    done()
T = 1764590400

refused = []
for i in range(30):
    st, body = push_folded(srv, "noisy.cpu{req_id=r%d}" % i, "main;work 1\n", T, T + 10)
    if st != 200:
        refused.append((i, st, body))
ok("the noisy app gets its 10 series, then 422s (%d refused)" % len(refused),
   len(refused) == 20 and refused[0][0] == 10 and all(r[1] == 422 for r in refused),
   refused[:3])
msg = refused[0][2] if refused else b""
ok("... the 422 names the app", b'app \\"noisy\\" has 10 series' in msg, msg)
ok("... and the label with the most values", b'label \\"req_id\\" has 10 values' in msg, msg)
ok("... and the budget per app", b"series budget of 10 per app reached" in msg, msg)

for app in ("shop", "web", "db"):
    sts = [push_folded(srv, "%s.cpu{region=r%d}" % (app, i), "main;serve 2\n", T, T + 10)[0]
           for i in range(5)]
    ok("another app (%s) still creates new series: %s" % (app, sts), sts == [200] * 5)
st, body = push_folded(srv, "noisy.cpu{req_id=r3}", "main;work 1\n", T + 10, T + 20)
ok("the noisy app's existing series still take pushes", st == 200, (st, body))

# The global ceiling: 10 + 15 = 25 series; 15 more apps of 1 series each fit.
sts = [push_folded(srv, "app%d.cpu" % i, "main 1\n", T, T + 10)[0] for i in range(20)]
ok("the global budget of 40 admits 15 more apps, then refuses (%s)" % sts,
   sts == [200] * 15 + [422] * 5)
st, body = push_folded(srv, "late.cpu", "main 1\n", T, T + 10)
ok("... its 422 names the global budget and the largest app",
   st == 422 and b'series budget of 40 reached' in body and b'app \\"noisy\\"' in body,
   (st, body))

st, m = srv.request("GET", "/metrics")
m = m.decode()
per = dict(re.findall(r'^plateau_app_series\{app="([^"]+)"\} (\d+)$', m, re.M))
ok("/metrics counts series per app", per.get("noisy") == "10" and per.get("shop") == "5"
   and per.get("db") == "5" and per.get("app0") == "1", per)
ok("... every app listed, adding up to plateau_series",
   len(per) == 19 and sum(map(int, per.values())) == 40 and
   re.search(r"^plateau_series 40$", m, re.M) and re.search(r"^plateau_apps 19$", m, re.M),
   m[-1500:])
ok("... the largest first", list(per)[0] == "noisy", list(per)[:4])

# Nothing stored was lost to the refusals: the noisy app's 10 series, 11 pushes.
st, body = srv.request("GET", "/api/v1/query?query=noisy.cpu&format=json&from=%d&until=%d" %
                       (T - 10, T + 30))
ok("the noisy app's stored pushes all read back (11 samples)",
   st == 200 and b'"numTicks":11' in body, (st, body[:300]))
srv.stop()
# Counts are rebuilt from the store at start (a fresh log: start() reads
# the port from it).
open(srv.log, "w").close()
ok("the server restarts", srv.start())
st, m = srv.request("GET", "/metrics")
ok("... with the same counts per app", b'plateau_app_series{app="noisy"} 10' in m and
   b"plateau_apps 19" in m, m[-800:])
st, body = push_folded(srv, "noisy.cpu{req_id=new}", "main 1\n", T, T + 10)
ok("... and the same budget for the noisy app", st == 422, (st, body))
srv.stop()
done()
