# SPDX-License-Identifier: MIT
"""
Gzip bombs (issue 14 item 4): 12 clients push at once a body of ~1.3 MB
that inflates to 1 GiB, then 12 push a pprof of empty samples (64 MiB
inflated, 20 times that once decoded into sample records).  Every bomb
gets a 413 or a 503, the server's peak RSS stays under a ceiling (it took
2.6 GiB for the first round and 16 GiB for the second before inflated and
decoded bytes came out of one budget, max-inflated-total), and legitimate
pushes, gzip-compressed and raw, are stored before and after.
"""
import re
import threading
import time

from tortlib import ASAN, Server, comment, done, gzip_bomb, ok, push_folded

BOMBS = 12
# The documented bound is max-inflated-total (128 MiB) plus the bodies and
# the decoder's per-request state; 300 MiB is issue 14's goal.  Under ASan
# the shadow (1/8) and the quarantine of freed blocks (256 MiB by
# default) come on top: the growth over the start is asserted there.
CEILING_MIB = 300 if not ASAN else 600

srv = Server("bombs")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
base_kb = srv.rss_kb()


def storm(path, body):
    out = []

    def one():
        st, _ = srv.request("POST", path, body=body, timeout=60)
        out.append(st)

    ts = [threading.Thread(target=one) for _ in range(BOMBS)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    return out


def folded_gz(lines):
    import gzip
    return gzip.compress("".join(lines).encode())


# A realistic agent push, a few MB inflated: 40,000 distinct stacks.
legit = folded_gz("svc;handler%d;work%d;leaf %d\n" % (i % 97, i, i % 13 + 1)
                  for i in range(40000))
st, body = push_folded(srv, "legit.cpu", legit, now - 30, now - 20)
ok("a gzip-compressed push of 40,000 stacks is stored", st == 200, (st, body[:200]))

zeros = gzip_bomb(b"\0", 1 << 30)
out = storm("/ingest?name=bomb.cpu&format=pprof", zeros)
hwm = srv.hwm_kb()
comment("12 x 1 GiB bombs (%d KiB each): answers %s, peak RSS %.1f MiB (start %.1f MiB)" %
        (len(zeros) >> 10, sorted(map(str, out)), hwm / 1024, base_kb / 1024))
ok("every 1 GiB bomb gets a 413 or a 503", all(s in (413, 503) for s in out), out)
ok("... and the server's peak RSS stays under %d MiB" % CEILING_MIB,
   (hwm if not ASAN else hwm - base_kb) < CEILING_MIB * 1024, "%d KiB" % hwm)

# 0x12 0x00 is an empty sample: 2 bytes on the wire, a 40-byte record decoded.
samples = gzip_bomb(b"\x12\x00", 64 << 20)
out = storm("/ingest?name=bomb.cpu&format=pprof", samples)
hwm = srv.hwm_kb()
comment("12 x 64 MiB pprof of empty samples (%d KiB each): answers %s, peak RSS %.1f MiB" %
        (len(samples) >> 10, sorted(map(str, out)), hwm / 1024))
ok("every pprof that decodes past the budget gets a 4xx or a 503",
   all(s is not None and (400 <= s < 500 or s == 503) for s in out), out)
ok("... and the server's peak RSS stays under %d MiB" % CEILING_MIB,
   (hwm if not ASAN else hwm - base_kb) < CEILING_MIB * 1024, "%d KiB" % hwm)

ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
st, body = push_folded(srv, "legit.cpu", legit, now - 20, now - 10)
ok("a gzip-compressed push is stored after the bombs", st == 200, (st, body[:200]))
st, body = push_folded(srv, "legit.cpu", "main;work 7\n", now - 10, now - 5)
ok("a raw push is stored after the bombs", st == 200, (st, body[:200]))
st, body = srv.request("GET", "/api/v1/query?query=legit.cpu&from=%d&until=%d&format=folded&maxNodes=0" %
                       (now - 60, now))
ok("... and both pushes are read back", st == 200 and b"main;work 7" in body and
   b"svc;handler0;work0;leaf 2" in body, (st, body[:200]))
st, body = srv.request("GET", "/metrics")
m = re.search(rb'plateau_pushes_rejected_total\{reason="busy"\} (\d+)', body)
ok("/metrics counts the refusals for the budget as busy", m and int(m.group(1)) > 0, body[:300])
srv.stop()
done()
