#!/usr/bin/env python3
"""Gzip bombs against plateau serve (issue 14, item 4): the server's peak
resident memory (VmHWM) while N clients push a gzip body that inflates to
SIZE bytes each, at once, on loopback:

    bench/serve-bombs.py [BUILD_DIR] [N] [SIZE_MIB]      # default build 12 1024

Five rounds, each on a fresh server with the default configuration:
  zeros-pprof   /ingest?format=pprof, SIZE MiB of zero bytes (the issue's bomb)
  samples-pprof /ingest?format=pprof, SIZE/16 MiB of empty samples (the
                decoder's expansion: 2 bytes become a 40-byte record)
  zeros-folded  /ingest?format=folded, the zeros
  lines-folded  /ingest?format=folded, SIZE MiB of one folded line repeated
  stacks-pprof  /ingest?format=pprof, 400,000 random stacks (12 MiB, 9 MiB
                gzipped: real bytes sent, a call tree of 4 million nodes)
ROUNDS=a,b runs only those.  For each: the answers (status: count), the seconds until the last one, and
the peak RSS (VmHWM) against the server's RSS before (MiB).
"""
import collections
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
import zlib

BUILD = sys.argv[1] if len(sys.argv) > 1 else "build"
N = int(sys.argv[2]) if len(sys.argv) > 2 else 12
SIZE = (int(sys.argv[3]) if len(sys.argv) > 3 else 1024) << 20
PLATEAU = os.path.join(BUILD, "plateau")


def gzip_bomb(unit, size):
    """A gzip member inflating to SIZE bytes of UNIT repeated (SIZE a
    multiple of len(UNIT) * 65536): each 64 KiB-ish chunk is compressed
    once after a full flush, so it repeats byte for byte."""
    chunk = unit * (65536 // len(unit) or 1)
    assert size % len(chunk) == 0
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    c.compress(chunk)
    first = c.flush(zlib.Z_FULL_FLUSH)
    c.compress(chunk)
    again = c.flush(zlib.Z_FULL_FLUSH)  # no reference to the first: a full flush resets
    crc, n = 0, size // len(chunk)
    for _ in range(n):
        crc = zlib.crc32(chunk, crc)
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    last = c.flush(zlib.Z_FINISH)  # an empty final block
    head = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff"
    return b"".join([head, first, again * (n - 1), last, crc.to_bytes(4, "little"),
                     (size & 0xffffffff).to_bytes(4, "little")])


def varint(n):
    out = bytearray()
    while True:
        b, n = n & 0x7f, n >> 7
        out.append(b | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def stacks_pprof(nsamples, nfuncs=2000, depth=12):
    """A gzipped pprof of NSAMPLES random stacks of DEPTH of NFUNCS
    functions: not a bomb (it compresses 1.3 times), but a tree of
    millions of nodes built from each byte sent."""
    import gzip
    import random
    rnd = random.Random(1)
    parts = [field(1, varint(1 << 3) + varint(1) + varint(2 << 3) + varint(2))]
    for _ in range(nsamples):
        ids = b"".join(varint(rnd.randrange(1, nfuncs + 1)) for _ in range(depth))
        parts.append(field(2, field(1, ids) + field(2, varint(rnd.randrange(1, 1000)))))
    for i in range(1, nfuncs + 1):
        parts.append(field(4, varint(1 << 3) + varint(i) + field(4, varint(1 << 3) + varint(i))))
        parts.append(field(5, varint(1 << 3) + varint(i) + varint(2 << 3) + varint(2 + i)))
    for s in ["", "cpu", "nanoseconds"] + ["function_name_%d" % i for i in range(nfuncs)]:
        parts.append(field(6, s.encode()))
    raw = b"".join(parts)
    return gzip.compress(raw, 6), len(raw)


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return 0


def start(tmp):
    log = os.path.join(tmp, "serve.log")
    p = subprocess.Popen([PLATEAU, "serve", "--listen", "127.0.0.1:0", "--data",
                          os.path.join(tmp, "data")], stderr=open(log, "w"))
    for _ in range(200):
        time.sleep(0.05)
        m = re.search(r"listening on (http://[\d.]+:\d+)", open(log).read())
        if m:
            return p, m.group(1)
    p.kill()
    sys.exit("serve-bombs: the server did not start")


def push(url, body, out):
    rq = urllib.request.Request(url, data=body, method="POST",
                                headers={"Content-Type": "application/octet-stream"})
    try:
        with urllib.request.urlopen(rq, timeout=120) as r:
            out.append(r.status)
    except urllib.error.HTTPError as e:
        out.append(e.code)
    except OSError as e:
        out.append(type(e).__name__)


def round_(name, fmt, body, size=SIZE):
    tmp = tempfile.mkdtemp(prefix="plateau-bombs.")
    p, base = start(tmp)
    try:
        time.sleep(0.2)
        before = status_kb(p.pid, "VmRSS")
        url = base + "/ingest?name=bomb.cpu&format=" + fmt
        out = []
        t0 = time.monotonic()
        ts = [threading.Thread(target=push, args=(url, body, out)) for _ in range(N)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        secs = time.monotonic() - t0
        hwm = status_kb(p.pid, "VmHWM")
        alive = p.poll() is None
        answers = ", ".join("%s: %d" % kv for kv in sorted(
            collections.Counter(map(str, out)).items()))
        print("%-13s %2d x %4d MiB in %6d KiB: %-22s %5.1f s  RSS before %5.1f MiB, "
              "peak %6.1f MiB (+%.1f)%s" % (
                  name, N, size >> 20, len(body) >> 10, answers, secs, before / 1024,
                  hwm / 1024, (hwm - before) / 1024, "" if alive else "  SERVER DIED"),
              flush=True)
    finally:
        p.terminate()
        p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


def main():
    only = os.environ.get("ROUNDS", "").split(",") if os.environ.get("ROUNDS") else None
    if only:
        global round_
        full = round_
        round_ = lambda name, *a: full(name, *a) if name in only else None  # noqa: E731
    zeros = gzip_bomb(b"\0", SIZE)
    line = b"main;handler;parse;" + b"x" * 42 + b" 1\n"  # 64 bytes
    lines = gzip_bomb(line, SIZE)
    # 0x12 0x00: an empty sample; a pprof of nothing else decodes to 20
    # times its size in sample records unless the decoder is bounded too.
    samples = gzip_bomb(b"\x12\x00", SIZE // 16)
    round_("zeros-pprof", "pprof", zeros)
    round_("samples-pprof", "pprof", samples, SIZE // 16)
    round_("zeros-folded", "folded", zeros)
    round_("lines-folded", "folded", lines)
    stacks, raw = stacks_pprof(400000)
    round_("stacks-pprof", "pprof", stacks, raw)


if __name__ == "__main__":
    main()
