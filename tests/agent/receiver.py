#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""A loopback HTTP receiver for the agent's push tests (Python 3 stdlib).

Binds 127.0.0.1 on a free port, prints "PORT n" on stdout and writes n to
--port-file (atomically), then records every request to --dir as one file
req-NNNN (written to a temporary name and renamed, so a reader never sees
half a file):

    METHOD POST
    PATH /ingest
    QUERY name=app&from=1
    PEER 127.0.0.1:54321
    HEADER Content-Type: application/octet-stream
    ...
    ANSWER 503 | 200 | close | stall
    BODY <n>
    <n raw body bytes>

The first --close N requests are answered by closing the connection before
the body is read; the next --fail N get --fail-status (503); the rest get
--status (200) with --body as the response body.  --stall S sleeps S
seconds before answering every request (recorded as "ANSWER stall" first).
GET or POST /quit exits.  The receiver also exits when its parent dies.
"""
import argparse
import http.server
import os
import sys
import threading
import time
import urllib.parse


class State:
    def __init__(self, args):
        self.args = args
        self.lock = threading.Lock()
        self.seq = 0

    def next_seq(self):
        with self.lock:
            self.seq += 1
            return self.seq


def write_atomic(path, data):
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.rename(tmp, path)


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the agent expects

    def log_message(self, fmt, *args):  # quiet: the test reads the files
        pass

    def record(self, seq, answer, body):
        url = urllib.parse.urlsplit(self.path)
        lines = [
            "METHOD " + self.command,
            "PATH " + url.path,
            "QUERY " + url.query,
            "PEER %s:%d" % self.client_address[:2],
        ]
        lines += ["HEADER %s: %s" % (k, v) for k, v in self.headers.items()]
        lines += ["ANSWER " + answer, "BODY %d" % len(body)]
        data = ("\n".join(lines) + "\n").encode("utf-8", "replace") + body
        write_atomic(os.path.join(self.server.state.args.dir, "req-%04d" % seq), data)

    def read_body(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = b""
        while len(body) < n:
            chunk = self.rfile.read(n - len(body))
            if not chunk:
                break
            body += chunk
        return body

    def answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
        self.wfile.flush()

    def handle_any(self):
        st = self.server.state
        a = st.args
        if urllib.parse.urlsplit(self.path).path == "/quit":
            self.answer(200, b"bye\n")
            os._exit(0)
        seq = st.next_seq()
        if seq <= a.close:
            self.record(seq, "close", b"")
            self.close_connection = True
            return
        body = self.read_body()
        if a.stall > 0:
            self.record(seq, "stall", body)
            time.sleep(a.stall)
        if seq <= a.close + a.fail:
            status, text = a.fail_status, b"try again later\n"
        else:
            status, text = a.status, a.body.encode().decode("unicode_escape").encode()
        self.record(seq, str(status), body)
        try:
            self.answer(status, text)
        except OSError:  # the client gave up while we stalled
            self.close_connection = True

    do_POST = handle_any
    do_GET = handle_any
    do_PUT = handle_any


def watch_parent(ppid):
    while os.getppid() == ppid:
        time.sleep(0.2)
    os._exit(0)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dir", required=True, help="where to record requests")
    ap.add_argument("--port-file", help="write the port here")
    ap.add_argument("--close", type=int, default=0, help="close the first N requests")
    ap.add_argument("--fail", type=int, default=0, help="fail the next N requests")
    ap.add_argument("--fail-status", type=int, default=503)
    ap.add_argument("--status", type=int, default=200, help="status of the other requests")
    ap.add_argument("--body", default="ok\\n", help="their body (backslash escapes allowed)")
    ap.add_argument("--stall", type=float, default=0, help="sleep S seconds before answering")
    args = ap.parse_args()

    os.makedirs(args.dir, exist_ok=True)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    server.state = State(args)
    threading.Thread(target=watch_parent, args=(os.getppid(),), daemon=True).start()
    port = server.server_address[1]
    if args.port_file:
        write_atomic(args.port_file, b"%d\n" % port)
    print("PORT %d" % port, flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
