# SPDX-License-Identifier: MIT
"""
A full disk (issue 14 item 6), on a 24 MiB tmpfs in a mount namespace of
its own (it goes away with the test, even when the test fails): pushes
fill it (a filler file takes what they leave) until the server refuses;
every push it acknowledged must survive kill -9 and a restart on the
still-full disk, which starts read-only (degraded): queries answer,
pushes get 507, /healthz and /metrics say so.  Deleting the filler brings
pushes back without a restart; and on a full disk a restart with
--retention frees the space it needs and takes pushes at once.
"""
import os
import random
import re
import subprocess
import sys
import time

# A private mount namespace: as root, or as a user through a user namespace.
if not os.environ.get("DISKFULL_NS"):
    os.environ["DISKFULL_NS"] = "1"
    ns = ["--mount", "--propagation", "private"]
    if os.geteuid() != 0:
        ns = ["--user", "--map-root-user"] + ns
    sys.stdout.flush()
    os.execvp("unshare", ["unshare"] + ns + [sys.executable] + sys.argv)

from tortlib import ASAN, TMP, Server, comment, done, ok, push_folded  # noqa: E402

MNT = os.path.join(TMP, "mnt")
DATA = os.path.join(MNT, "data")
FILLER = os.path.join(MNT, "filler")
LINES = 3000  # stacks per push: about 40 KiB stored
OLD_PUSHES = 70
NOW = int(time.time())
OLD = NOW - 3 * 3600  # pushes retention (1h) deletes
NEW = NOW - 1800  # pushes it keeps
SERVERS = []
# A reserve of 2 MiB (128 MiB by default): the WAL stays under 1 MiB, writes
# resume with 3.5 MiB free.
RESERVE = ["--disk-reserve", "2MiB"]


def mount():
    os.makedirs(MNT, exist_ok=True)
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=24m", "tmpfs", MNT],
                       capture_output=True, text=True)
    return ok("a 24 MiB tmpfs is mounted", r.returncode == 0, r.stderr)


def umount():
    subprocess.run(["umount", "-l", MNT], capture_output=True)


def body(i):
    """Push I's folded text: its own frames, and a total of its own."""
    rnd = random.Random(i)
    lines = ["main;p%d;fn_%016x %d" % (i, rnd.getrandbits(64), 1 + (i * 7919 + j * 104729) % 997)
             for j in range(LINES)]
    return "\n".join(lines) + "\n"


def total(i):
    return sum(1 + (i * 7919 + j * 104729) % 997 for j in range(LINES))


def push(srv, i, at):
    st, b = push_folded(srv, "fill.cpu", body(i), at, at + 1)
    return st, b


def fill_filler(leave):
    """Write FILLER until the file system is full, then give LEAVE bytes back."""
    chunk = b"\0" * (256 << 10)
    with open(FILLER, "ab") as f:
        try:
            while True:
                f.write(chunk)
                f.flush()
        except OSError:
            pass
    try:
        os.truncate(FILLER, max(0, os.path.getsize(FILLER) - leave))
    except OSError:
        pass


def wal_bytes():
    try:
        return os.path.getsize(os.path.join(DATA, "plateau.db-wal"))
    except OSError:
        return 0


def push_until_refused(srv, acked, first, at0, limit):
    """Push until one is refused; (its status, its body, pushes tried)."""
    for k in range(limit):
        i = first + k
        st, b = push(srv, i, at0 + k)
        if st == 200:
            acked[i] = at0 + k
        else:
            return st, b, k + 1
    return 200, b"", limit


def timeline(srv, base, n):
    """The total of fill.cpu per second over [base, base + n)."""
    st, b = srv.request("GET", "/api/v1/timeline?query=fill.cpu&from=%d&until=%d&step=1s" %
                        (base, base + n), timeout=30)
    if st != 200:
        return None, (st, b[:300])
    m = re.search(rb'"values":\[([^\]]*)\]', b)
    return [int(v) for v in m.group(1).split(b",") if v] if m else None, b[:300]


def lost(srv, acked, base, n):
    """Acknowledged pushes in [base, base + n) the store does not give back."""
    vals, detail = timeline(srv, base, n)
    if vals is None:
        return list(acked), detail
    return [i for i, at in acked.items()
            if base <= at < base + n and (at - base >= len(vals) or vals[at - base] != total(i))
            ], detail


def metric(srv, name):
    st, b = srv.request("GET", "/metrics")
    m = re.search((r"^%s (\d+)$" % re.escape(name)).encode(), b or b"", re.M)
    return int(m.group(1)) if m else None


def health(srv):
    st, b = srv.request("GET", "/healthz")
    return st, (b or b"").decode(errors="replace").strip()


def wait_health(srv, want, seconds):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if health(srv)[1] == want:
            return True
        time.sleep(0.1)
    return False


def main():
    if not mount():
        return
    srv = Server("diskfull", *RESERVE, data=DATA)
    SERVERS.append(srv)
    if not ok("the server starts on the empty tmpfs", srv.start()):
        return
    acked_old, acked_new = {}, {}
    # Old pushes first (a third of the disk), then recent ones until refused.
    for k in range(OLD_PUSHES):
        st, _ = push(srv, k, OLD + k)
        if st == 200:
            acked_old[k] = OLD + k
    ok("%d pushes of 3 hours ago are acknowledged" % OLD_PUSHES, len(acked_old) == OLD_PUSHES,
       len(acked_old))
    fill_filler(3 << 19)
    st, b, tried = push_until_refused(srv, acked_new, 1000, NEW, 400)
    comment("disk full after %d recent pushes (%d acknowledged): %s %s" %
            (tried, len(acked_new), st, b[:200]))
    ok("the push that meets the full disk gets 507, not 500", st == 507, (st, b))
    ok("... with a one-line JSON message saying the disk is full",
       b.count(b"\n") == 1 and b.startswith(b'{"error":"the disk is full'), b)
    wal = wal_bytes()
    codes = [push(srv, 2000 + k, NEW + 600 + k)[0] for k in range(5)]
    ok("the next pushes get 507 at once (no loop of 500s)", codes == [507] * 5, codes)
    # The server gives up its reserve file to make room; take that room too.
    end = time.monotonic() + 5
    while os.path.exists(os.path.join(DATA, "plateau.reserve")) and time.monotonic() < end:
        time.sleep(0.05)
    ok("the server gives up its reserve", not os.path.exists(os.path.join(DATA, "plateau.reserve")))
    fill_filler(0)
    ok("... and the WAL does not grow (%d KiB)" % (wal >> 10), wal_bytes() <= wal,
       (wal, wal_bytes()))
    ok("/healthz reports the degraded mode",
       health(srv) == (200, "degraded: read-only (disk full)"), health(srv))
    ok("/metrics: plateau_store_degraded 1", metric(srv, "plateau_store_degraded") == 1)
    ok("/metrics counts the pushes refused for space",
       (metric(srv, 'plateau_pushes_rejected_total{reason="disk_full"}') or 0) >= 6,
       metric(srv, 'plateau_pushes_rejected_total{reason="disk_full"}'))

    # kill -9 on the full disk, restart on it.
    srv.kill9()
    fill_filler(0)  # whatever the server gave back meanwhile: still full
    srv = Server("diskfull-restart", *RESERVE, data=DATA)
    SERVERS.append(srv)
    t0 = time.monotonic()
    started = srv.start()
    restart = time.monotonic() - t0
    ok("after kill -9 the server starts again on the full disk", started,
       srv.log_text()[-1000:])
    if not started:
        return
    comment("restart on the full disk: %.0f ms to listening" % (restart * 1000))
    ok("... degraded: /healthz says read-only",
       health(srv) == (200, "degraded: read-only (disk full)"), health(srv))
    ok("... /metrics: plateau_store_degraded 1", metric(srv, "plateau_store_degraded") == 1)
    gone, detail = lost(srv, acked_old, OLD, 200)
    gone2, detail2 = lost(srv, acked_new, NEW, 1200)
    ok("... every acknowledged push is queryable (%d + %d, %d lost)" %
       (len(acked_old), len(acked_new), len(gone) + len(gone2)),
       not gone and not gone2, (gone[:10], gone2[:10], detail, detail2))
    st, b = push(srv, 3000, NEW + 700)
    ok("... a push gets 507 with the message", st == 507 and b"disk is full" in b, (st, b))

    # Space comes back: the store takes pushes again, no restart.
    os.unlink(FILLER)
    t0 = time.monotonic()
    back = wait_health(srv, "ok", 10)
    comment("space freed: writable again after %.0f ms" % ((time.monotonic() - t0) * 1000))
    ok("freeing space leaves the degraded mode", back, health(srv))
    ok("... /metrics: plateau_store_degraded 0", metric(srv, "plateau_store_degraded") == 0)
    st, b = push(srv, 3001, NEW + 701)
    ok("... and pushes succeed again", st == 200, (st, b))
    if st == 200:
        acked_new[3001] = NEW + 701
    gone, detail = lost(srv, acked_new, NEW, 1200)
    ok("... every acknowledged push still there", not gone, (gone[:10], detail))

    # Full again; a restart with --retention frees the space first.
    fill_filler(0)
    st, b, tried = push_until_refused(srv, acked_new, 4000, NEW + 800, 400)
    ok("filled again: 507", st == 507, (st, b))
    srv.kill9()
    srv = Server("diskfull-retention", "--retention", "1h", *RESERVE, data=DATA)
    SERVERS.append(srv)
    t0 = time.monotonic()
    started = srv.start()
    restart = time.monotonic() - t0
    ok("after kill -9 it starts with --retention 1h on the full disk", started,
       srv.log_text()[-1000:])
    if not started:
        return
    comment("restart with retention on the full disk: %.0f ms to listening" % (restart * 1000))
    ok("... retention made room at startup: not degraded", wait_health(srv, "ok", 3),
       (health(srv), srv.log_text()[-600:]))
    st, b = push(srv, 5000, NEW + 1100)
    ok("... pushes succeed", st == 200, (st, b))
    if st == 200:
        acked_new[5000] = NEW + 1100
    gone, detail = lost(srv, acked_new, NEW, 1200)
    ok("... every acknowledged push within the retention is there (%d)" % len(acked_new),
       not gone, (gone[:10], detail))
    vals, _ = timeline(srv, OLD, 200)
    ok("... the pushes older than the retention are gone", vals is not None and not any(vals),
       vals and sum(vals))
    comment("acknowledged %d pushes, lost %d" % (len(acked_old) + len(acked_new), len(gone)))
    srv.stop()


try:
    main()
finally:
    for srv in SERVERS:
        srv.kill9()
    umount()
done()
