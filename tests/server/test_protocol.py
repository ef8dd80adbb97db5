#!/usr/bin/env python3
"""test_protocol.py — the wire itself under bad input and bad clients:
malformed lines (the shared corpus and the protocol fuzzer's seeds),
oversized and pipelined lines, clients that vanish mid-stream or read
slowly (backpressure), 50 sessions x 20 execs at once, and issue 12.1's
stress run where every request must get its reply. Run by test_server.py;
alone: python3 tests/server/test_protocol.py."""
import base64
import json
import os
import shutil
import socket
import sys
import threading
import time

import fbc
from srvtest import main, HERE, notok, check, wait_for, Server, test, MALFORMED


@test
def t_malformed(srv):
    c = srv.conn()
    bad = []
    for line, code in MALFORMED:
        c.send_raw(line + b"\n")
        m = c.recv()
        if not m or "error" not in m or m["error"]["code"] != code:
            bad.append((line[:40], code, m))
    check("malformed corpus: every line gets its error code (%d lines)" % len(MALFORMED), not bad, bad[:3])
    check("malformed corpus: the connection still works", c.call("server.info")["protocol"] == 1)
    # Whitespace, CRLF and empty lines.
    c.send_raw(b"\n   \n\r\n")
    c.send_raw(b'{"id":"crlf","method":"server.info"}\r\n')
    _, r = c.wait("crlf")
    check("CRLF line endings and blank lines are accepted", "result" in r, r)
    # Oversized line: error with id null, then the connection is usable.
    big = b'{"id":"big-1","method":"file.write","params":{"data":"' + b"a" * (17 << 20) + b'"}}\n'
    c.send_raw(big)
    m = c.recv()
    check("oversized line: too_large with the id read from its start",
          m and m["id"] == "big-1" and m["error"]["code"] == "too_large", m)
    c.send_raw(b'{"method":"file.write","id":7,"params":{"data":"' + b"a" * (17 << 20) + b'"}}\n')
    m = c.recv()
    check("oversized line, id not first: too_large with id null", m and m["id"] is None
          and m["error"]["code"] == "too_large", m)
    check("oversized line: connection still usable", c.call("server.info")["protocol"] == 1)
    # Many requests in one write, some bad.
    c.send_raw(b"".join(b'{"id":%d,"method":"server.info"}\n{bad\n' % i for i in range(100, 200)))
    got = 0
    for _ in range(200):
        m = c.recv()
        got += 1 if m else 0
    check("pipelined good and bad lines all answered", got == 200)
    # A request id reused while in flight.
    s = c.call("session.create")["session"]
    c.send("exec", {"session": s, "command": "sleep 1"}, id="dup")
    c.send("server.info", id="dup")
    m1 = c.recv()
    check("duplicate in-flight id: invalid_request", m1["id"] == "dup" and m1.get("error", {}).get("code") == "invalid_request", m1)
    m2 = c.recv()
    check("the first request with that id still completes", m2["id"] == "dup" and "result" in m2, m2)
    c.call("session.destroy", {"session": s})
    # Random garbage from several connections at once, then the server still serves.
    def garbage(seed):
        import random
        rnd = random.Random(seed)
        try:
            g = srv.conn()
            for _ in range(200):
                n = rnd.randint(0, 300)
                g.send_raw(bytes(rnd.getrandbits(8) for _ in range(n)) + b"\n")
            g.close()
        except OSError:
            pass
    ts = [threading.Thread(target=garbage, args=(i,)) for i in range(4)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    c2 = srv.conn()
    check("random garbage from 4 clients: the server still serves", c2.call("server.info")["protocol"] == 1)
    # A client that sends half a line and vanishes.
    g = srv.conn()
    g.send_raw(b'{"id":1,"method":"serv')
    g.close()
    g = socket.socket(socket.AF_UNIX)
    g.connect(srv.sock)
    g.close()
    check("half a line then close: the server still serves", srv.conn().call("server.info")["protocol"] == 1)
    check("malformed input never stopped the server", srv.p.poll() is None)


@test
def t_corpus_files(srv):
    """Every seed of the protocol fuzzer (tests/fuzz/corpus-proto) is sent
    as one request line."""
    d = os.path.join(HERE, "..", "fuzz", "corpus-proto")
    if not os.path.isdir(d):
        return
    c = srv.conn()
    n = 0
    for name in sorted(os.listdir(d)):
        with open(os.path.join(d, name), "rb") as f:
            data = f.read().replace(b"\n", b" ")
        c.send_raw(data + b"\n")
        m = c.recv()
        n += 1
        if m is None:
            notok("corpus %s" % name, "connection closed")
            return
    check("corpus files (%d): each answered, server alive" % n, c.call("server.info")["protocol"] == 1)


@test
def t_disconnect_mid_stream(srv):
    c = srv.conn()
    s = c.call("session.create")["session"]
    g = srv.conn()
    g.send("exec", {"session": s, "stream": True, "execId": "yes", "command": "yes flood"})
    n = 0
    while n < 20:
        m = g.recv()
        if m and m.get("event") == "stdout":
            n += 1
    g.s.shutdown(socket.SHUT_RDWR)
    g.close()
    check("client vanished mid-stream: server still serves", c.call("server.info")["protocol"] == 1)
    gone = wait_for(lambda: not c.call("session.info", {"session": s})["execs"]["running"])
    check("client vanished mid-stream: its exec is killed", gone)
    r = c.call("exec", {"session": s, "command": "cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^yes$'; true"})
    check("client vanished mid-stream: no 'yes' left in the session", r["stdout"].strip() == "0", r)
    # A collect-mode exec whose client vanishes.
    g = srv.conn()
    g.send("exec", {"session": s, "execId": "sl", "command": "sleep 60"})
    wait_for(lambda: "sl" in c.call("session.info", {"session": s})["execs"]["running"])
    g.close()
    check("client vanished during a collect exec: exec killed",
          wait_for(lambda: not c.call("session.info", {"session": s})["execs"]["running"]))
    # A client that vanishes while its session is being created.
    g = srv.conn()
    before = {x["session"] for x in c.call("session.list")["sessions"]}
    g.send("session.create", {"pool": False})
    g.close()
    # A barrier: sessions are made one at a time, in the order the requests
    # arrive, so once this one is made the vanished client's was handled.
    x = c.call("session.create", {"pool": False})["session"]
    c.call("session.destroy", {"session": x})
    after = wait_for(lambda: {x["session"] for x in c.call("session.list")["sessions"]} == before, 10)
    check("client vanished during session.create: no orphan session", after)
    c.call("session.destroy", {"session": s})


@test
def t_slow_reader(srv):
    """Backpressure: a client that does not read a streaming exec does not
    make the server buffer without bound, and others are served meanwhile."""
    c = srv.conn()
    s = c.call("session.create")["session"]
    rss0 = srv.rss_kb()
    g = srv.conn()
    total = 40 << 20
    i = g.send("exec", {"session": s, "stream": True, "encoding": "base64",
                        "command": "head -c %d /dev/zero" % total})
    # Wait for the backpressure itself: the server stops draining the
    # exec's output, so `head` sits blocked writing to its full pipe (had
    # the server buffered everything, head would have finished instead).
    def head_blocked():
        for d in os.listdir("/proc"):
            try:
                if d.isdigit() and open("/proc/%s/cmdline" % d, "rb").read() == b"head\0-c\0%d\0/dev/zero\0" % total:
                    return open("/proc/%s/wchan" % d).read().endswith("pipe_write")
            except OSError:
                pass
        return False
    check("slow reader: the exec is held back (head blocked on its full pipe)", wait_for(head_blocked, 30))
    rss1 = srv.rss_kb()
    check("slow reader: another client is served meanwhile", c.call("server.info")["protocol"] == 1)
    check("slow reader: server memory bounded (<%d MiB growth)" % 24, rss1 - rss0 < 24 * 1024, (rss0, rss1))
    got = 0
    while True:
        m = g.recv()
        if m.get("event") == "stdout":
            got += len(base64.b64decode(m["data"]))
        elif "result" in m or "error" in m:
            break
    check("slow reader: every byte arrives in the end", got == total and m["result"]["exitCode"] == 0, (got, m))
    c.call("session.destroy", {"session": s})


@test
def t_concurrency(srv):
    """50 sessions x 20 execs, all at once."""
    NS, NX = 50, 20
    c = srv.conn()
    ids = []
    for i in range(NS):
        c.send("session.create", {"limits": {"pids": 64}}, id="c%d" % i)
    for i in range(NS):
        _, r = c.wait("c%d" % i)
        if "result" in r:
            ids.append(r["result"]["session"])
    if not check("concurrency: %d sessions created" % NS, len(ids) == NS, len(ids)):
        return
    errors = []

    def worker(k, s):
        try:
            w = srv.conn()
            for j in range(NX):
                w.send("exec", {"session": s, "command": "echo %d-%d; cat /proc/self/cgroup >/dev/null" % (k, j)}, id=j)
            for j in range(NX):
                _, r = w.wait(j)
                if r.get("result", {}).get("stdout") != "%d-%d\n" % (k, j):
                    errors.append(r)
            w.close()
        except Exception as e:  # noqa: BLE001
            errors.append(repr(e))
    ts = [threading.Thread(target=worker, args=(k, s)) for k, s in enumerate(ids)]
    t0 = time.time()
    [t.start() for t in ts]
    [t.join() for t in ts]
    check("concurrency: %d x %d execs, every output right (%.1fs)" % (NS, NX, time.time() - t0), not errors, errors[:3])
    for s in ids:
        c.send("session.destroy", {"session": s}, id=s)
    for s in ids:
        c.wait(s)
    check("concurrency: all sessions destroyed", not c.call("session.list")["sessions"])


class SlowConn(fbc.Conn):
    """A client that reads its replies a few hundred bytes at a time from
    a small socket buffer: the server's writes to it keep hitting EAGAIN."""

    def __init__(self, path):
        super().__init__(path, timeout=300)
        self.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)

    def recv(self):
        while b"\n" not in self.buf:
            d = self.s.recv(700)
            if not d:
                return None
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)


def epoll_report(pid):
    """Which of the server's fds are not in its epoll set (for a failure)."""
    try:
        fds = {}
        for fd in os.listdir("/proc/%d/fd" % pid):
            fds[int(fd)] = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        ep = [fd for fd, t in fds.items() if "eventpoll" in t]
        watched = set()
        for e in ep:
            with open("/proc/%d/fdinfo/%d" % (pid, e)) as f:
                for line in f:
                    if line.startswith("tfd:"):
                        watched.add(int(line.split()[1]))
        kinds = {}
        for fd, t in fds.items():
            if fd > 2 and fd not in watched and fd not in ep:
                k = t.split(":")[0]
                kinds[k] = kinds.get(k, 0) + 1
        return "fds %d, watched %d, unwatched by kind %s" % (len(fds), len(watched), kinds)
    except OSError as e:
        return repr(e)


@test
def t_stress_every_reply():
    """Issue 12.1: under load, every request gets its reply. 240 sessions'
    worth of execs (created and destroyed while others run), pipelined
    collected, streamed and stdin-fed execs and file operations, half the
    clients reading slowly, the server and all its sessions squeezed onto
    one CPU. A request without a reply fails the test, with the server's
    epoll state."""
    args = ["--max-sessions", "1000"]
    pre = []
    if shutil.which("taskset"):
        pre = ["taskset", "-c", "0"]
    srv = Server(args, wrap=pre)
    NT, PER, NX = 24, 10, 8
    lock = threading.Lock()
    state = {"sent": 0, "answered": 0, "bad": [], "last": time.time()}
    pending = {}

    def one(c, tid, method, params, expect):
        i = c.send(method, params)
        with lock:
            state["sent"] += 1
            pending[(tid, i)] = (method, params.get("session"))
        return i, expect

    def settle(c, tid, calls):
        for i, expect in calls:
            evs, r = c.wait(i)
            with lock:
                state["answered"] += 1
                state["last"] = time.time()
                pending.pop((tid, i), None)
                if not expect(evs, r):
                    state["bad"].append(str(r)[:200])

    def exec_ok(text):
        def f(evs, r):
            if "result" not in r or r["result"]["exitCode"] != 0:
                return False
            out = r["result"].get("stdout")
            if out is None:
                out = "".join(e.get("data", "") for e in evs if e.get("event") == "stdout")
            return out == text
        return f

    def worker(tid):
        try:
            c = SlowConn(srv.sock) if tid % 2 else srv.conn()
            for k in range(PER):
                _, r = c.wait(c.send("session.create", {"limits": {"pids": 64}}))
                with lock:
                    state["answered"] += 1
                    state["last"] = time.time()
                if "result" not in r:
                    with lock:
                        state["bad"].append("create: %s" % r)
                    continue
                s = r["result"]["session"]
                for batch in range(2):
                    calls = []
                    for j in range(NX // 2):
                        tag = "%d-%d-%d-%d" % (tid, k, batch, j)
                        mode = (tid + k + j) % 4
                        p = {"session": s, "command": "echo %s; head -c 3000 /dev/zero >&2" % tag}
                        if mode == 1:
                            p["stream"] = True
                        elif mode == 2:
                            p["command"] = "cat; echo %s" % tag
                            p["stdin"] = "x" * 70000
                            calls.append(one(c, tid, "exec", p, exec_ok("x" * 70000 + tag + "\n")))
                            continue
                        elif mode == 3:
                            calls.append(one(c, tid, "file.write", {"session": s, "path": "f%s" % tag,
                                                                      "data": tag},
                                             lambda evs, r: "result" in r))
                        calls.append(one(c, tid, "exec", p, exec_ok(tag + "\n")))
                    settle(c, tid, calls)
                settle(c, tid, [one(c, tid, "session.destroy", {"session": s},
                                    lambda evs, r: "result" in r)])
            c.close()
        except Exception as e:  # noqa: BLE001
            with lock:
                state["bad"].append("client %d: %r" % (tid, e))

    ts = [threading.Thread(target=worker, args=(t,), daemon=True) for t in range(NT)]
    t0 = time.time()
    [t.start() for t in ts]
    stalled = False
    while any(t.is_alive() for t in ts):
        time.sleep(0.2)
        with lock:
            if time.time() - state["last"] > float(os.environ.get("FB_STRESS_STALL", "120")):
                stalled = True
                break
    report = ""
    if stalled:
        with lock:
            report = "no reply for a long time to %d requests %s; %s" % (
                len(pending), list(pending.values())[:5], epoll_report(srv.pid))
    check("stress: %d requests over %d sessions, every one answered (%.0fs)" %
          (state["sent"], NT * PER, time.time() - t0),
          not stalled and state["answered"] == state["sent"] + NT * PER, report or
          "%d sent, %d answered" % (state["sent"] + NT * PER, state["answered"]))
    check("stress: every answer right", not state["bad"], state["bad"][:3])
    check("stress: the server is still there", srv.p.poll() is None, srv.stderr()[-300:])
    srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
