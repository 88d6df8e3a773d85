# SPDX-License-Identifier: MIT
"""
Shared pieces of the torture suite (tests/torture/*.py, run by
tests/cli/torture.sh): start `plateau serve` on 127.0.0.1, speak raw HTTP
to it (attackers need sockets, not a polite client), read its memory, and
print results as TAP lines without numbers ("ok - what" / "not ok - what");
the runner numbers them.  Every attack is bounded in connections and time
and never leaves the loopback interface.
"""
import http.client
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time

PLATEAU = os.environ["PLATEAU"]
BUILD = os.environ.get("BUILD", os.path.dirname(PLATEAU))
TMP = os.environ["TMP"]
# Under ASan+UBSan everything is slower and memory is shadowed: attacks
# keep their shape, ceilings that measure RSS are scaled by the caller.
def _sanitized():
    try:
        opts = json.load(open(os.path.join(BUILD, "meson-info", "intro-buildoptions.json")))
    except (OSError, ValueError):
        return False
    return any(o["name"] == "b_sanitize" and "address" in str(o["value"]) for o in opts)


ASAN = _sanitized()
_failed = 0


def ok(desc, cond, detail=""):
    """One TAP result; DETAIL (any text) is shown as comments on failure."""
    global _failed
    if cond:
        print("ok - %s" % desc, flush=True)
    else:
        _failed += 1
        print("not ok - %s" % desc, flush=True)
        for line in str(detail).splitlines()[:20]:
            print("# " + line, flush=True)
    return cond


def comment(text):
    for line in str(text).splitlines():
        print("# " + line, flush=True)


def done():
    sys.exit(1 if _failed else 0)


class Server:
    """plateau serve ARGS on 127.0.0.1 (port picked by the kernel)."""

    def __init__(self, name, *args, data=None):
        self.name = name
        self.data = data or os.path.join(TMP, name + ".data")
        self.log = os.path.join(TMP, name + ".log")
        self.args = list(args)
        self.proc = None
        self.url = None
        self.port = None

    def start(self, timeout=10.0, expect_fail=False):
        self.logf = open(self.log, "a")
        self.proc = subprocess.Popen(
            [PLATEAU, "serve", "--listen", "127.0.0.1:0", "--data", self.data] + self.args,
            stdout=subprocess.DEVNULL, stderr=self.logf)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            m = re.search(r"listening on (http://127\.0\.0\.1:(\d+))", open(self.log).read())
            if m:
                self.url, self.port = m.group(1), int(m.group(2))
                return True
            if self.proc.poll() is not None:
                break
            time.sleep(0.05)
        if not expect_fail:
            comment("server %s did not start:\n%s" % (self.name, open(self.log).read()[-2000:]))
        return False

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def rss_kb(self):
        """Resident set size now, in KiB (0 when gone)."""
        try:
            for line in open("/proc/%d/status" % self.proc.pid):
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def hwm_kb(self):
        """Peak resident set size so far, in KiB."""
        try:
            for line in open("/proc/%d/status" % self.proc.pid):
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
        except OSError:
            pass
        return 0

    def kill9(self):
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        if self.proc:
            self.proc.wait()

    def stop(self):
        if self.alive():
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def log_text(self):
        return open(self.log).read()

    def request(self, method, path, body=None, headers=None, timeout=5.0):
        """(status, body bytes), or (None, error text) when no answer came."""
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=timeout)
        try:
            conn.request(method, path, body=body, headers=headers or {})
            r = conn.getresponse()
            return r.status, r.read()
        except (OSError, http.client.HTTPException) as e:
            return None, ("%s: %s" % (type(e).__name__, e)).encode()
        finally:
            conn.close()

    def timed(self, method, path, body=None, headers=None, timeout=5.0):
        """(status, body, seconds) of one request."""
        t0 = time.monotonic()
        st, b = self.request(method, path, body, headers, timeout)
        return st, b, time.monotonic() - t0

    def connect(self, timeout=5.0):
        """A raw socket to the server, for attackers."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=timeout)
        return s


def push_folded(srv, name, text, t0, t1, headers=None):
    """POST /ingest of folded TEXT as NAME over [T0, T1] (seconds)."""
    from urllib.parse import quote
    return srv.request("POST", "/ingest?name=%s&from=%d&until=%d&format=folded" %
                       (quote(name, safe=""), t0, t1),
                       body=text.encode() if isinstance(text, str) else text,
                       headers=headers)


def gzip_bomb(unit, size):
    """A gzip member that inflates to SIZE bytes of UNIT repeated (SIZE a
    multiple of the 64 KiB-ish chunk UNIT fills), made in about a second
    per GiB: each chunk is compressed once after a full flush, which
    resets the history, so its compressed form repeats byte for byte."""
    import zlib
    chunk = unit * (65536 // len(unit) or 1)
    if size % len(chunk):
        raise ValueError("gzip_bomb: size is not a multiple of %d" % len(chunk))
    c = zlib.compressobj(9, zlib.DEFLATED, -15)
    c.compress(chunk)
    c.flush(zlib.Z_FULL_FLUSH)
    c.compress(chunk)
    again = c.flush(zlib.Z_FULL_FLUSH)
    n, crc = size // len(chunk), 0
    for _ in range(n):
        crc = zlib.crc32(chunk, crc)
    last = zlib.compressobj(9, zlib.DEFLATED, -15).flush(zlib.Z_FINISH)
    return b"".join([b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x02\xff", again * n, last,
                     crc.to_bytes(4, "little"), (size & 0xffffffff).to_bytes(4, "little")])
