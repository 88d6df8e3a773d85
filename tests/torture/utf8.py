# SPDX-License-Identifier: MIT
"""
Poison strings: a push whose frame names and label values hold invalid
UTF-8 (a stray 0xFF, a truncated sequence, an overlong '/', an encoded
surrogate, a code point past U+10FFFF), control characters, quotes and
backslashes; then every JSON answer (query, render, diff in both forms,
labels, label values, series, timeline, and the errors that echo what was
asked) must parse as strict JSON, hold only valid UTF-8, and carry the
names (each bad byte as U+FFFD, the rest as sent).
"""
import json
import time
from urllib.parse import quote

from tortlib import Server, done, ok, push_folded

POISON = [b"\xff", b"a\xffb", b"\xc3", b"x\xe2\x82", b"\xc0\xaf", b"\xe0\x80\xaf",
          b"\xed\xa0\x80", b"\xed\xbf\xbf", b"\xf4\x90\x80\x80", b"\xf8\x88\x80\x80\x80",
          b"\x01\x1f\x7f", b"tab\there", b'q"uote', b"back\\slash", b"\\u0000", b"\\ud800",
          b"</script>", b"\xe2\x80\xa8", b"ok\xc3\xa9"]
def expected(b):
    """B as the server writes it: each byte not part of well-formed UTF-8
    (Python's strict decoder: no overlongs, surrogates or code points past
    U+10FFFF) becomes U+FFFD, one per byte, as Go does."""
    out, i = [], 0
    while i < len(b):
        for n in (1, 2, 3, 4):
            try:
                ch = b[i:i + n].decode("utf-8")
            except UnicodeDecodeError:
                continue
            out.append(ch)
            i += n
            break
        else:
            out.append("\ufffd")
            i += 1
    return "".join(out)


def valid_label(b):
    try:
        t = b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return not any(ord(c) < 0x20 or ord(c) == 0x7f for c in t)


srv = Server("utf8")
if not ok("the server starts", srv.start()):
    done()
now = int(time.time())
stacks = b"".join(b"main;" + p.replace(b";", b"_") + b" %d\n" % (i + 1)
                  for i, p in enumerate(POISON) if b"\n" not in p and b" " not in p)
st, body = push_folded(srv, "u.cpu", stacks, now - 30, now - 20)
ok("a push with poisoned frame names is stored", st == 200, (st, body))
# Label values (Pyroscope's name=app.type{k=v,...}, percent-encoded): valid
# UTF-8 without control characters is stored as sent; the rest is a 400
# naming the label.
for i, p in enumerate(POISON):
    name = b"u.cpu{k=" + p + b",i=%d}" % i
    st, body = srv.request("POST", "/ingest?name=%s&from=%d&until=%d&format=folded" %
                           (quote(name, safe=""), now - 30, now - 20), body=b"main;lab 1\n")
    if valid_label(p):
        ok("push with label value %r: stored" % p, st == 200, (st, body[:300]))
    else:
        ok("push with label value %r: 400 naming the label" % p,
           st == 400 and b'label \\"k\\"' in body, (st, body[:300]))


def strict(body):
    """Parsed BODY, or raise: strict UTF-8, strict JSON (no control characters in strings)."""
    text = body.decode("utf-8")  # raises on any invalid byte
    return json.loads(text, strict=True)


W = "from=%d&until=%d" % (now - 60, now)
# 0: JSON that must come back 200; 1: an error that echoes the poison.
def urls():
    yield "/api/v1/query?query=u.cpu&format=json&" + W, 200
    yield "/render?name=u.cpu&format=json&" + W, 200
    yield "/render?query=u.cpu&" + W, 200
    d = "left=u.cpu&right=u.cpu&leftFrom=%d&rightFrom=%d" % (now - 60, now - 60)
    yield "/api/v1/diff?" + d, 200
    yield "/api/v1/diff?format=flamebearer&" + d, 200
    yield "/api/v1/labels", 200
    yield "/api/v1/labels?query=u.cpu", 200
    yield "/api/v1/labels/k/values", 200
    yield "/api/v1/labels/k/values?query=u.cpu", 200
    yield "/api/v1/series?query=u.cpu", 200
    yield "/api/v1/series", 200
    yield "/api/v1/timeline?query=u.cpu&step=10s&" + W, 200
    for p in POISON:
        e = quote(p, safe="")
        yield "/api/v1/query?query=%s" % e, None
        yield "/api/v1/query?query=u.cpu%%7Bk%%3D%%22%s%%22%%7D&format=json&%s" % (e, W), None
        yield "/api/v1/query?query=u.cpu&from=%s" % e, None
        yield "/api/v1/query?query=u.cpu&format=%s" % e, None
        yield "/api/v1/timeline?query=u.cpu&step=%s" % e, None
        yield "/api/v1/diff?left=%s&right=u.cpu" % e, None
        yield "/api/v1/labels/%s/values" % e, None
        yield "/api/v1/series?query=%s" % e, None


bad, n = 0, 0
bodies = {}
for url, want in urls():
    st, body = srv.request("GET", url)
    n += 1
    try:
        j = strict(body)
        bodies[url] = j
        good = st is not None and st < 500 and (want is None or st == want)
        why = "status %s" % st
    except (UnicodeDecodeError, ValueError) as e:
        good, why = False, "%s %s: %r" % (st, e, body[:200])
    if not good:
        bad += 1
        ok("%s: strict JSON" % url, False, why)
ok("%d JSON answers (query, render, diff x2, labels, values, series, timeline, errors): "
   "each strict UTF-8 JSON" % n, bad == 0)

# The names come through, each invalid byte as U+FFFD.
q = bodies.get("/api/v1/query?query=u.cpu&format=json&" + W)
names = set(q["flamebearer"]["names"]) if q else set()
missing = [p for p in POISON if expected(p.replace(b";", b"_")) not in names]
ok("the query's names hold every poisoned frame (bad bytes as U+FFFD)", q and not missing,
   "missing %r of %r" % (missing, sorted(names)[:40]))
d = bodies.get("/api/v1/diff?left=u.cpu&right=u.cpu&leftFrom=%d&rightFrom=%d" %
               (now - 60, now - 60))
fnames = {f["name"] for f in d["functions"]} if d else set()
ok("the diff's functions hold them too", d and all(expected(p.replace(b";", b"_")) in fnames
                                                    for p in POISON), sorted(fnames)[:40])
v = bodies.get("/api/v1/labels/k/values")
want = sorted(p.decode() for p in POISON if valid_label(p))
ok("label values come back as sent", v == want, "%r != %r" % (v, want))
ok("the server is alive", srv.alive() and srv.request("GET", "/healthz")[0] == 200)
srv.stop()
done()
