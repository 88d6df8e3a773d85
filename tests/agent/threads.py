#!/usr/bin/env python3
"""A threaded workload of several kinds for the agent's multi-kind profiles.

Producer threads build JSON documents and put them on a queue; consumer
threads take them, parse and hash them (CPU, the GIL, the queue's lock and
condition variable); sleeper threads nap (wall time only).  Runs for the
number of milliseconds given as argv[1] (default 1500).
"""
import hashlib
import json
import queue
import sys
import threading
import time


def produce(q, stop, seed):
    i = 0
    while not stop.is_set():
        doc = {"id": seed * 1000000 + i, "items": [str(i * k) for k in range(64)]}
        q.put(json.dumps(doc))
        i += 1


def consume(q, stop):
    while not stop.is_set() or not q.empty():
        try:
            text = q.get(timeout=0.05)
        except queue.Empty:
            continue
        doc = json.loads(text)
        h = hashlib.sha256()
        for item in doc["items"]:
            h.update(item.encode())
        h.hexdigest()


def sleeper(stop):
    while not stop.is_set():
        time.sleep(0.02)


def main():
    ms = int(sys.argv[1]) if len(sys.argv) > 1 else 1500
    q = queue.Queue(maxsize=256)
    stop = threading.Event()
    threads = [threading.Thread(target=produce, args=(q, stop, n)) for n in range(2)]
    threads += [threading.Thread(target=consume, args=(q, stop)) for _ in range(2)]
    threads += [threading.Thread(target=sleeper, args=(stop,)) for _ in range(2)]
    for t in threads:
        t.start()
    time.sleep(ms / 1000.0)
    stop.set()
    for t in threads:
        t.join()


if __name__ == "__main__":
    main()
