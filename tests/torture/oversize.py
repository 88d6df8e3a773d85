# SPDX-License-Identifier: MIT
"""
Refused while still sending (issue 14 item 10b): a body over max-body, or
a request without a valid token, used to get its 4xx written and the
connection closed while the client was still sending, so the client saw
a broken pipe or a reset instead of the answer.  The server now reads and
drops the body (up to 64 MiB) before answering, or answers before the
body when the client asked for "100 Continue": real clients (Python's
http.client, curl with and without Expect) read the 413 or 401.
"""
import http.client
import os
import subprocess
import time

from tortlib import TMP, Server, done, ok, push_folded

TOKEN = "oversize-token-1"
BIG = 8 << 20  # bytes sent; max-body is 1 MiB

conf = os.path.join(TMP, "oversize.conf")
with open(conf, "w") as f:
    f.write("max-body = 1MiB\ntoken = %s\n" % TOKEN)
srv = Server("oversize", "--config", conf)
if not ok("the server starts with max-body 1MiB", srv.start()):
    done()
auth = {"Authorization": "Bearer " + TOKEN}
now = int(time.time())
path = "/ingest?name=x.cpu&from=%d&until=%d&format=folded" % (now - 20, now - 10)
body = b"main;work 1\n" * (BIG // 12)


def post(chunks=None, headers=None, data=None):
    """(status, body) read by http.client, or (None, the exception) if the answer was lost."""
    conn = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=10)
    try:
        if chunks is not None:
            conn.request("POST", path, body=iter(chunks), headers=headers or {},
                         encode_chunked=True)
        else:
            conn.request("POST", path, body=data, headers=headers or {})
        r = conn.getresponse()
        return r.status, r.read()
    except (OSError, http.client.HTTPException) as e:
        return None, "%s: %s" % (type(e).__name__, e)
    finally:
        conn.close()


st, b = post(data=body, headers=auth)
ok("http.client, Content-Length 8 MiB over max-body 1 MiB: reads the 413", st == 413, (st, b))
ok("... whose message names max-body", st == 413 and b"max-body" in b, b)
st, b = post(chunks=[body[i:i + 65536] for i in range(0, len(body), 65536)], headers=auth)
ok("http.client, a chunked body growing past max-body: reads the 413", st == 413, (st, b))
st, b = post(data=body[:2 << 20])
ok("http.client, no token and a 2 MiB body: reads the 401", st == 401, (st, b))

big = os.path.join(TMP, "big.folded")
with open(big, "wb") as f:
    f.write(body)
for expect in ([], ["-H", "Expect:"]):
    r = subprocess.run(["curl", "-sS", "-o", os.path.join(TMP, "curl.out"), "-w", "%{http_code}",
                        "-H", "Authorization: Bearer " + TOKEN] + expect +
                       ["--data-binary", "@" + big, srv.url + path],
                       capture_output=True, text=True, timeout=30)
    ok("curl --data-binary of 8 MiB%s: reads the 413" %
       (" without Expect: 100-continue" if expect else ""),
       r.returncode == 0 and r.stdout == "413", (r.returncode, r.stdout, r.stderr))

st, _ = push_folded(srv, "x.cpu", "main;work 7\n", now - 20, now - 10, auth)
ok("a push within max-body is stored afterwards", st == 200)
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
done()
