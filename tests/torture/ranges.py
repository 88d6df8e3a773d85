# SPDX-License-Identifier: MIT
"""
Extreme time ranges on the query endpoints: the server answers every one
(a 4xx or a correct answer), and keeps serving.
"""
import time

from tortlib import Server, ok, done, push_folded

srv = Server("ranges")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
st, _ = push_folded(srv, "x.cpu", "main;work 7\n", now - 20, now - 10)
ok("a push is stored", st == 200)

# Issue 14 item 1: (until - from + step - 1) / step overflowed and the
# server died of it.
st, body = srv.request("GET", "/api/v1/timeline?query=x.cpu&from=0"
                       "&until=9223372036854775807&step=1y")
ok("timeline over 0..2^63-1 by 1y answers", st is not None and st < 500, (st, body[:300]))
ok("... and the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
done()
