#!/usr/bin/env python3
"""bench.py — timings of `fluebox serve` (issue 7): session.create from the
warm pool and without it, a small exec round trip, file.read / file.write of
4 KiB and 10 MiB. Starts its own server on a private socket.

  python3 tests/server/bench.py [--fluebox ./fluebox] [--n 50] [--json]

Prints one row per measurement: name, median and p90 in milliseconds."""
import argparse
import base64
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import fbc  # noqa: E402


def start_server(fb, sock, pool):
    p = subprocess.Popen([fb, "serve", "--socket", sock, "--pool", str(pool)],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    for _ in range(500):
        if os.path.exists(sock):
            break
        time.sleep(0.01)
    c = fbc.Conn(sock)
    if pool:
        # wait for the pool to fill
        for _ in range(1000):
            if c.call("server.info")["pool"]["ready"] >= pool:
                break
            time.sleep(0.01)
    return p, c


def stop_server(p):
    p.terminate()
    try:
        p.wait(10)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def timed(fn, n):
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t) * 1000)
    return out


def row(name, ms, rows):
    ms = sorted(ms)
    med = statistics.median(ms)
    p90 = ms[min(len(ms) - 1, int(len(ms) * 0.9))]
    rows.append({"name": name, "median_ms": round(med, 3), "p90_ms": round(p90, 3), "n": len(ms)})


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fluebox", default=os.environ.get("FB", "./fluebox"))
    ap.add_argument("--n", type=int, default=30)
    ap.add_argument("--json", action="store_true")
    a = ap.parse_args()
    fb = os.path.abspath(a.fluebox)
    d = tempfile.mkdtemp(prefix="fbbench.")
    rows = []
    try:
        # Without a pool.
        sock = os.path.join(d, "a.sock")
        p, c = start_server(fb, sock, 0)
        ids = []
        row("session.create (no pool)", timed(lambda: ids.append(c.call("session.create")["session"]), a.n), rows)
        for s in ids:
            c.call("session.destroy", {"session": s})
        stop_server(p)

        # With a pool as large as the burst, refilled between samples.
        sock = os.path.join(d, "b.sock")
        p, c = start_server(fb, sock, 4)
        ms = []
        for _ in range(a.n):
            for _ in range(1000):
                if c.call("server.info")["pool"]["ready"] >= 1:
                    break
                time.sleep(0.005)
            t = time.perf_counter()
            r = c.call("session.create")
            ms.append((time.perf_counter() - t) * 1000)
            if not r.get("pooled"):
                print("warning: a create was not served from the pool", file=sys.stderr)
            c.call("session.destroy", {"session": r["session"]})
        row("session.create (pool)", ms, rows)

        s = c.call("session.create")["session"]
        row("exec true (round trip)", timed(lambda: c.call("exec", {"session": s, "argv": ["true"]}), a.n * 3), rows)
        row("exec sh -c 'echo hi'", timed(lambda: c.call("exec", {"session": s, "command": "echo hi"}), a.n * 3), rows)
        small = base64.b64encode(os.urandom(4096)).decode()
        row("file.write 4 KiB", timed(lambda: c.call("file.write", {"session": s, "path": "small", "data": small, "encoding": "base64"}), a.n * 3), rows)
        row("file.read 4 KiB", timed(lambda: c.call("file.read", {"session": s, "path": "small", "encoding": "base64"}), a.n * 3), rows)
        big = base64.b64encode(os.urandom(10 << 20)).decode()
        row("file.write 10 MiB", timed(lambda: c.call("file.write", {"session": s, "path": "big", "data": big, "encoding": "base64"}), max(5, a.n // 3)), rows)
        row("file.read 10 MiB", timed(lambda: c.call("file.read", {"session": s, "path": "big", "encoding": "base64"}), max(5, a.n // 3)), rows)
        row("file.stat", timed(lambda: c.call("file.stat", {"session": s, "path": "big"}), a.n * 3), rows)
        c.call("session.destroy", {"session": s})
        stop_server(p)
    finally:
        shutil.rmtree(d, ignore_errors=True)
    if a.json:
        print(json.dumps(rows, indent=2))
    else:
        for r in rows:
            print("%-28s median %8.3f ms   p90 %8.3f ms   (n=%d)" % (r["name"], r["median_ms"], r["p90_ms"], r["n"]))


if __name__ == "__main__":
    main()
