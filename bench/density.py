#!/usr/bin/env python3
"""bench/density.py — how many idle sessions one `fluebox serve` holds and what
each costs (issue 30), for `make bench` (bench/run.sh, group "density").

For each size N (--sizes, default 100,1000): a private `fluebox serve`
(no pool, --max-sessions above N), then

  create     N session.create (default profile), WINDOW requests in flight
             at once from one connection (--window; 1 = one after another):
             creates/s, and the p50/p99 of a single create
  idle       the server's descriptors (/proc/PID/fd), the machine's
             MemAvailable, Slab, PageTables and KernelStack before and after,
             per session; the server's own RSS
  info       server.info round trips with every session live: p50/p99
  exec       exec /bin/true in a random live session: p50/p99
  fair       while connection A has a burst of --burst creates in flight, a
             second connection B creates one session at a time: how many of
             B's creates were answered before A's burst ended, and their
             p50/p99 (a fair queue serves B between A's)
  destroy    every session destroyed (pipelined): the time

Memory per session is MemAvailable's drop over N: what the machine gives for
them, sessions' processes, their tmpfs, the kernel's share (namespaces,
mounts, cgroups: slab) and page tables. Slab, PageTables and KernelStack
are shown apart. On a machine shared with other work these move with it:
the load average is printed with each size.

Appends one JSON object per size to --json (the format of bench/fbbench.c:
title, variants) and Markdown tables to --md. Never asserts anything.
10,000 sessions: `bench/density.py --sizes 10000` (or
`make bench DENSITY_SIZES=100,1000,10000`); it takes minutes and about
6 GB of memory."""
import argparse
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


class Conn:
    """One connection; requests pipelined, replies matched by id."""

    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def send(self, method, **params):
        self.n += 1
        self.s.sendall((json.dumps({"id": self.n, "method": method, "params": params}) + "\n").encode())
        return self.n

    def recv(self):
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                raise RuntimeError("the server closed the connection")
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def reply(self):
        """The next final reply (events skipped)."""
        while True:
            m = self.recv()
            if "event" not in m:
                return m

    def call(self, method, **params):
        i = self.send(method, **params)
        while True:
            m = self.reply()
            if m.get("id") == i:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]["message"]))
                return m["result"]


def meminfo():
    out = {}
    with open("/proc/meminfo") as f:
        for l in f:
            k, v = l.split(":", 1)
            out[k] = int(v.split()[0])
    return out


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for l in f:
            if l.startswith("VmRSS:"):
                return int(l.split()[1])
    return 0


def pct(v, p):
    if not v:
        return None
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def pipelined(c, n, window, make):
    """n requests, window in flight: (latencies ms, errors, seconds, results)."""
    sent = {}
    lat, errs, res = [], [], []
    t0 = time.monotonic()
    k = 0
    while k < n or sent:
        while k < n and len(sent) < window:
            meth, params = make(k)
            sent[c.send(meth, **params)] = time.monotonic()
            k += 1
        m = c.reply()
        t = sent.pop(m.get("id"), None)
        if t is None:
            continue
        lat.append((time.monotonic() - t) * 1000)
        if "error" in m:
            errs.append(m["error"].get("message", "?"))
        else:
            res.append(m["result"])
    return lat, errs, time.monotonic() - t0, res


def start_server(fb, d, n, extra):
    sock = os.path.join(d, "sock")
    log = open(os.path.join(d, "log"), "w")
    rfd, wfd = os.pipe()
    args = [fb, "serve", "--socket", sock, "--pool", "0", "--max-sessions", str(n + 50),
            "--ready-fd", str(wfd)] + extra
    p = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=log, stderr=log, pass_fds=(wfd,))
    os.close(wfd)
    with os.fdopen(rfd) as r:
        ok = r.read(16).startswith("ready")
    if not ok:
        p.kill()
        p.wait()
        raise RuntimeError("fluebox serve did not start: " + open(os.path.join(d, "log")).read()[-300:])
    return p, sock


def one_size(fb, n, window, burst, reps, extra, cparams=None):
    cparams = cparams or {}
    d = tempfile.mkdtemp(prefix="fbdensity.")
    srv, sock = start_server(fb, d, n + burst, extra)
    try:
        c = Conn(sock)
        c.call("server.info")
        # One session made and destroyed first, so the baseline includes
        # what the first create allocates once (the worker, caches).
        sid = c.call("session.create", **cparams)["session"]
        c.call("session.destroy", session=sid)
        time.sleep(0.5)
        base_fds = nfds(srv.pid)
        base_rss = rss_kb(srv.pid)
        m0 = meminfo()
        load0 = open("/proc/loadavg").read().split()[:3]
        lat, errs, secs, res = pipelined(c, n, window, lambda k: ("session.create", cparams))
        ids = [r["session"] for r in res]
        time.sleep(1.0)  # settle: the sessions are idle
        m1 = meminfo()
        fds = nfds(srv.pid)
        rss = rss_kb(srv.pid)
        info = []
        for _ in range(reps * 4):
            t = time.monotonic()
            c.call("server.info")
            info.append((time.monotonic() - t) * 1000)
        ex = []
        for _ in range(reps):
            s = random.choice(ids) if ids else None
            if not s:
                break
            t = time.monotonic()
            c.call("exec", session=s, argv=["/bin/true"])
            ex.append((time.monotonic() - t) * 1000)
        # Fairness: A's burst in flight, B one at a time.
        fair = None
        if burst:
            a, b = Conn(sock), Conn(sock)
            sent = set(a.send("session.create") for _ in range(burst))
            a_done, b_lat, b_ids, b_before = 0, [], [], 0
            a.s.setblocking(False)
            b_err = ""
            while a_done < burst:
                if not b_err:
                    t = time.monotonic()
                    try:
                        r = b.call("session.create")
                        b_lat.append((time.monotonic() - t) * 1000)
                        b_ids.append(r["session"])
                    except RuntimeError as e:
                        # At the machine's limits (descriptors, id ranges)
                        # B's create fails: say so, keep A's results.
                        b_err = str(e)
                try:
                    while True:
                        a.s.setblocking(False)
                        d_ = a.s.recv(1 << 20)
                        if not d_:
                            break
                        a.buf += d_
                except BlockingIOError:
                    if b_err and b"\n" not in a.buf:
                        a.s.setblocking(True)
                        d_ = a.s.recv(1 << 20)
                        a.buf += d_
                        if not d_:
                            break
                a.s.setblocking(True)
                while b"\n" in a.buf:
                    m = a.reply()
                    if m.get("id") in sent and "event" not in m:
                        a_done += 1
                        if "result" in m:
                            b_ids.append(m["result"]["session"])
                if a_done < burst and not b_err:
                    b_before += 1
            a.s.setblocking(True)
            fair = {"burst": burst, "b_creates_during_burst": b_before,
                    "b_p50_ms": pct(b_lat, 50), "b_p99_ms": pct(b_lat, 99), "b_error": b_err}
            for s in b_ids:
                c.send("session.destroy", session=s)
            for _ in b_ids:
                c.reply()
            a.s.close()
            b.s.close()
        t = time.monotonic()
        dl, derrs, dsecs, _ = pipelined(c, len(ids), 64, lambda k: ("session.destroy", {"session": ids[k]}))
        load1 = open("/proc/loadavg").read().split()[:3]
        kib = lambda key: (m0[key] - m1[key]) if key == "MemAvailable" else (m1[key] - m0[key])
        per = lambda key: kib(key) / max(len(ids), 1)
        return {
            "sessions": n, "created": len(ids), "errors": len(errs), "first_error": errs[0] if errs else "",
            "window": window, "creates_per_s": len(ids) / secs if secs else 0,
            "create_p50_ms": pct(lat, 50), "create_p99_ms": pct(lat, 99),
            "mem_per_session_kib": per("MemAvailable"), "slab_per_session_kib": per("Slab"),
            "pagetables_per_session_kib": per("PageTables"),
            "kernelstack_per_session_kib": per("KernelStack"),
            "server_fds": fds, "server_fds_base": base_fds,
            "fds_per_session": (fds - base_fds) / max(len(ids), 1),
            "server_rss_per_session_kib": (rss - base_rss) / max(len(ids), 1),
            "info_p50_ms": pct(info, 50), "info_p99_ms": pct(info, 99),
            "exec_p50_ms": pct(ex, 50), "exec_p99_ms": pct(ex, 99),
            "destroy_s": dsecs, "fair": fair, "load_start": " ".join(load0), "load_end": " ".join(load1),
        }
    finally:
        try:
            srv.terminate()
            srv.wait(timeout=300)
        except Exception:
            srv.kill()
            srv.wait()
        shutil.rmtree(d, ignore_errors=True)


def fmt(v, f="%.2f"):
    return "-" if v is None else f % v


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--fluebox", default=os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fluebox"))
    ap.add_argument("--sizes", default=os.environ.get("DENSITY_SIZES", "100,1000"))
    ap.add_argument("--window", type=int, default=16)
    ap.add_argument("--burst", type=int, default=100)
    ap.add_argument("--reps", type=int, default=50)
    ap.add_argument("--json")
    ap.add_argument("--md")
    ap.add_argument("--serve-arg", action="append", default=[])
    ap.add_argument("--create", default="{}", help="session.create parameters (JSON)")
    a = ap.parse_args()
    rows = []
    for n in [int(x) for x in a.sizes.split(",") if x.strip()]:
        r = one_size(os.path.abspath(a.fluebox), n, a.window, a.burst, a.reps, a.serve_arg,
                     json.loads(a.create))
        rows.append(r)
        print(json.dumps(r), file=sys.stderr)
    title = "density: idle sessions in one fluebox serve"
    md = ["", "#### " + title, "",
          "| sessions | errors | memory per session KiB | of it slab | page tables | kernel stacks | server fds (base) | fds per session | creates/s | create p50 / p99 ms | server.info p50 / p99 ms | exec p50 / p99 ms | destroy all s |",
          "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        md.append("| %d | %d | %.0f | %.0f | %.0f | %.0f | %d (%d) | %.2f | %.0f | %s / %s | %s / %s | %s / %s | %.1f |" % (
            r["created"], r["errors"], r["mem_per_session_kib"], r["slab_per_session_kib"],
            r["pagetables_per_session_kib"], r["kernelstack_per_session_kib"], r["server_fds"],
            r["server_fds_base"], r["fds_per_session"], r["creates_per_s"], fmt(r["create_p50_ms"], "%.1f"),
            fmt(r["create_p99_ms"], "%.1f"), fmt(r["info_p50_ms"]), fmt(r["info_p99_ms"]),
            fmt(r["exec_p50_ms"]), fmt(r["exec_p99_ms"]), r["destroy_s"]))
    md.append("")
    md.append("Creates: %d in flight from one connection. Memory: MemAvailable's drop over the sessions "
              "(slab, page tables and kernel stacks are the kernel's share of it, shown apart). "
              "Load average at each size's start: %s." % (a.window, "; ".join(
                  "%d: %s" % (r["sessions"], r["load_start"]) for r in rows)))
    fr = [r for r in rows if r["fair"]]
    if fr:
        md.append("")
        md.append("Fair queue: while one connection had %d creates in flight, a second one created "
                  "one at a time: %s." % (a.burst, "; ".join(
                      "at %d sessions %d of its creates were answered before the burst ended, p50 %s ms, p99 %s ms" % (
                          r["sessions"], r["fair"]["b_creates_during_burst"], fmt(r["fair"]["b_p50_ms"], "%.1f"),
                          fmt(r["fair"]["b_p99_ms"], "%.1f")) +
                      (" (then its create failed: %s)" % r["fair"]["b_error"] if r["fair"]["b_error"] else "")
                      for r in fr)))
    text = "\n".join(md) + "\n"
    print(text)
    if a.md:
        with open(a.md, "a") as f:
            f.write(text)
    if a.json:
        with open(a.json, "a") as f:
            f.write(json.dumps({"title": title, "variants": [dict(r, name="%d sessions" % r["sessions"]) for r in rows]}) + "\n")


if __name__ == "__main__":
    main()
