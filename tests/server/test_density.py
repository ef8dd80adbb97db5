#!/usr/bin/env python3
"""test_density.py — what idle sessions hold and how sessions are made
(issue 30): server descriptors per idle session bounded, creates from two
clients at once, the fair queue between clients, and the warm one-shot run
(`fluebox run --server`, the `run` method with the caller's descriptors
passed): its output and exit status, no data through the server, no other
descriptor of the caller reaching the command, a directory refused as
stdio. Properties, never times. Run by test_server.py; alone:
python3 tests/server/test_density.py."""
import json
import os
import select
import subprocess
import sys
import tempfile

from srvtest import FB, TUSER, Server, check, session_inits, status_kb, test

N_IDLE = 12


def nfds(pid):
    return len(os.listdir("/proc/%d/fd" % pid))


def io_bytes(pid):
    """Bytes the process's threads moved through read/write-like calls
    (/proc/PID/task/TID/io: its own, not those of the children it reaped,
    which /proc/PID/io adds: a session's init and its commands)."""
    total = 0
    for tid in os.listdir("/proc/%d/task" % pid):
        try:
            with open("/proc/%d/task/%s/io" % (pid, tid)) as f:
                for line in f:
                    k, n = line.split(":")
                    if k in ("rchar", "wchar"):
                        total += int(n)
        except OSError:
            pass  # a thread that just ended
    return total


def idle_descriptors(user, who):
    """An idle session holds 1 of the server's descriptors: its control
    socket. Its network's listening sockets (the resolver's two, the
    allowed ports') are kept and watched by its init until the first query
    or connection, which hands them to the server; its scratch space is
    taken from its init when needed (docs/server.md, "Density"). Before
    issue 30: 10; then 3 (the resolver's sockets in the server's epoll)."""
    srv = Server(["--pool", "0"], user=user)
    try:
        c = srv.conn()
        # Once first: what the first create allocates for good (the workers).
        s = c.call("session.create", {"network": "none"})["session"]
        c.call("session.destroy", {"session": s})
        base = nfds(srv.pid)
        ids = [c.call("session.create", {"network": "none"})["session"] for _ in range(N_IDLE)]
        n = nfds(srv.pid)
        check("%s: %d idle sessions (--net none): server fds %d <= base %d + 1 each" % (who, N_IDLE, n, base),
              n <= base + N_IDLE, "%d fds" % n)
        # A lookup in one of them: answered "not found" at once (a resolver
        # nobody watched would make it "try again", EAI_AGAIN, after a
        # timeout), twice (the second by the server, which holds the
        # sockets from then on), and only that session's sockets come back.
        probe = ("import socket\nfor n in ('pypi.org', 'x.test'):\n"
                 "    try: socket.getaddrinfo(n, 443)\n"
                 "    except socket.gaierror as e: print(n, e.errno == socket.EAI_NONAME)\n")
        r = c.call("exec", {"session": ids[0], "argv": ["python3", "-c", probe], "timeoutMs": 20000})
        check("%s: a lookup in an idle session is answered 'not found', twice" % who,
              r["stdout"] == "pypi.org True\nx.test True\n", r)
        n2 = nfds(srv.pid)
        check("%s: ... then the server holds that session's two resolver sockets (%d -> %d fds)"
              % (who, n, n2), n2 == n + 2, n2)
        for s in ids:
            c.call("session.destroy", {"session": s})
        ids = [c.call("session.create")["session"] for _ in range(N_IDLE)]
        n = nfds(srv.pid)
        check("%s: %d idle sessions (default profile): server fds %d <= base %d + 1 each"
              % (who, N_IDLE, n, base), n <= base + N_IDLE, "%d fds" % n)
        for s in ids:
            c.call("session.destroy", {"session": s})
        n = nfds(srv.pid)
        check("%s: after destroying them the server is back at its base (%d fds)" % (who, base), n <= base + 2,
              "%d fds" % n)
        # The scratch space taken back from init: disk usage, a fork.
        s = c.call("session.create", {"network": "none", "limits": {"disk": "64M"}})["session"]
        c.call("exec", {"session": s, "command": "head -c 3000000 /dev/zero > /tmp/x"})
        used = c.call("session.info", {"session": s})["usage"]["diskUsedBytes"]
        check("%s: an idle session's disk usage is still measured (%d bytes)" % (who, used), used >= 3000000, used)
        f = c.call("session.fork", {"session": s})["session"]
        r = c.call("exec", {"session": f, "command": "wc -c < /tmp/x"})
        check("%s: ... and a fork still copies its files" % who, r["stdout"].strip() == "3000000", r)
        for x in (s, f):
            c.call("session.destroy", {"session": x})
    finally:
        srv.cleanup()


@test
def t_idle_descriptors():
    idle_descriptors(None, "root's server")


@test
def t_idle_descriptors_rootless():
    idle_descriptors(TUSER, "a non-root server")


def pipelined_creates(conn, k):
    ids = [conn.send("session.create", {"network": "none"}) for _ in range(k)]
    return ids


@test
def t_parallel_two_clients():
    srv = Server(["--pool", "0"])
    try:
        a, b = srv.conn(), srv.conn()
        ia = pipelined_creates(a, 6)
        ib = pipelined_creates(b, 6)
        got = []
        for conn, ids in ((a, ia), (b, ib)):
            for i in ids:
                _, r = conn.wait(i)
                got.append(r)
        ok = [r for r in got if "result" in r]
        check("two clients creating 6 sessions each at once: all 12 made", len(ok) == 12,
              [r.get("error") for r in got if "error" in r][:2])
        sids = set(r["result"]["session"] for r in ok)
        check("... 12 distinct sessions", len(sids) == 12)
        for s in sids:
            a.call("session.destroy", {"session": s})
    finally:
        srv.cleanup()


@test
def t_fair_queue():
    """One client's burst does not hold up another's create: B's single
    create, sent while A's burst is queued, is answered before A's last."""
    srv = Server(["--pool", "0"])
    try:
        a, b = srv.conn(), srv.conn()
        burst = 40
        ia = pipelined_creates(a, burst)
        # A's first answer: the burst is being worked on.
        _, first = a.wait(ia[0])
        order = []
        ib = b.send("session.create", {"network": "none"})
        # Read both connections in arrival order.
        a.s.setblocking(False)
        b.s.setblocking(False)
        pending_a = set(ia[1:])
        b_done = None
        for i, ms in list(a.pending.items()):  # read early by wait()
            for m in ms:
                if "event" not in m:
                    order.append(("a", m))
                    pending_a.discard(i)
        a.pending.clear()
        while pending_a or b_done is None:
            r, _, _ = select.select([a.s, b.s], [], [], 120)
            if not r:
                break
            for sk, conn, who in ((a.s, a, "a"), (b.s, b, "b")):
                if sk not in r:
                    continue
                try:
                    d = sk.recv(1 << 20)
                except BlockingIOError:
                    continue
                if not d:
                    pending_a = set() if who == "a" else pending_a
                    continue
                conn.buf += d
                while b"\n" in conn.buf:
                    line, conn.buf = conn.buf.split(b"\n", 1)
                    m = json.loads(line)
                    if "event" in m:
                        continue
                    order.append((who, m))
                    if who == "a":
                        pending_a.discard(m.get("id"))
                    elif m.get("id") == ib:
                        b_done = m
        a.s.setblocking(True)
        b.s.setblocking(True)
        whos = [w for w, _ in order]
        check("fair queue: B's create answered (%s)" % (b_done and ("result" in b_done)),
              b_done is not None and "result" in b_done, b_done)
        check("fair queue: B's create answered before A's burst of %d ended (%d of A's after it)"
              % (burst, len(whos) - 1 - (whos.index("b") if "b" in whos else len(whos))),
              "b" in whos and whos.index("b") < len(whos) - 1 and whos[-1] == "a", whos)
        sids = [m["result"]["session"] for _, m in order if "result" in m]
        if "result" in first:
            sids.append(first["result"]["session"])
        for s in sids:
            a.send("session.destroy", {"session": s})
        for _ in sids:
            a.recv()
    finally:
        srv.cleanup()


def run_server(sock, args, stdin=None, env=None, **kw):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([FB, "run", "--server", sock] + args, input=stdin, capture_output=True,
                          env=e, timeout=120, **kw)


@test
def t_warm_run_fds():
    srv = Server(["--pool", "2"])
    try:
        r = run_server(srv.sock, ["--", "sh", "-c", "cat; echo to-stderr >&2; exit 3"], stdin=b"piped in\n")
        check("warm run: stdin piped in reaches the command, stdout comes out",
              r.stdout == b"piped in\n", r)
        check("warm run: stderr comes out", b"to-stderr" in r.stderr, r.stderr)
        check("warm run: the command's exit status", r.returncode == 3, r.returncode)
        # 8 MiB in and out: with the caller's descriptors passed, none of it
        # goes through the server (its read/write counters barely move).
        big = os.urandom(8 << 20)
        before = io_bytes(srv.pid)
        r = run_server(srv.sock, ["--", "sh", "-c", "cat | wc -c; cat /dev/null"], stdin=big)
        moved = io_bytes(srv.pid) - before
        check("warm run: 8 MiB of stdin reach the command", r.stdout.strip() == str(len(big)).encode(), r.stdout)
        check("warm run: the data does not pass through the server (it moved %d bytes)" % moved,
              moved < (1 << 20), moved)
        before = io_bytes(srv.pid)
        r = run_server(srv.sock, ["--", "head", "-c", str(8 << 20), "/dev/zero"])
        moved = io_bytes(srv.pid) - before
        check("warm run: 8 MiB of output come out", len(r.stdout) == 8 << 20, len(r.stdout))
        check("warm run: the output does not pass through the server (it moved %d bytes)" % moved,
              moved < (1 << 20), moved)
        # The old path still works (a client that passes nothing).
        r = run_server(srv.sock, ["--", "sh", "-c", "cat; exit 5"], stdin=b"old\n",
                       env={"FLUEBOX_RUN_NO_PASS": "1"})
        check("run --server without passed descriptors: output and status", r.stdout == b"old\n"
              and r.returncode == 5, r)
        # Only 0, 1 and 2 reach the command, whatever else the caller holds.
        rfd, wfd = os.pipe()
        r = run_server(srv.sock, ["--", "sh", "-c", "ls /proc/self/fd"], pass_fds=(rfd, wfd))
        os.close(rfd)
        os.close(wfd)
        fds = sorted(int(x) for x in r.stdout.split())
        check("warm run: the command has 0, 1, 2 (and ls's own) only", fds[:3] == [0, 1, 2]
              and len(fds) <= 4, r.stdout)
        # A directory is not a stream: refused (it would be a way to host files).
        d = os.open("/", os.O_RDONLY | os.O_DIRECTORY)
        try:
            r = subprocess.run([FB, "run", "--server", srv.sock, "--", "true"], stdin=d,
                               capture_output=True, timeout=60)
        finally:
            os.close(d)
        check("warm run: a directory as stdin is refused (125, says why)",
              r.returncode == 125 and b"directory" in r.stderr, r)
        # Sessions of runs are gone after them.
        c = srv.conn()
        left = [s for s in c.call("session.list")["sessions"] if s.get("label") == "fluebox-run"]
        check("warm run: no session left after the runs", not left, left)
    finally:
        srv.cleanup()


@test
def t_run_method_errors():
    srv = Server(["--pool", "0"])
    try:
        c = srv.conn()
        _, e = c.try_call("run", {"exec": {"argv": ["true"]}, "passFds": True})
        check("run with passFds but no descriptors: invalid_params", e and e["code"] == "invalid_params"
              and e.get("param") == "passFds", e)
        _, e = c.try_call("run", {"create": {}})
        check("run without exec: invalid_params", e and e["code"] == "invalid_params", e)
        # Without passFds the exec is streamed as usual and the session goes.
        i = c.send("run", {"exec": {"argv": ["sh", "-c", "echo hi; exit 7"]}})
        evs, r = c.wait(i)
        res = r.get("result", {})
        check("run without passFds: output collected through the server, exit status",
              res.get("stdout") == "hi\n" and res.get("exitCode") == 7, r)
        sess = [ev.get("session") for ev in evs if ev.get("event") == "session"]
        left = c.call("session.list")["sessions"]
        check("run: its session is destroyed after the answer", sess and not any(
            s["session"] == sess[0] for s in left), left)
    finally:
        srv.cleanup()


@test
def t_init_image():
    """A session's init runs its loop in a fresh image of fluebox, exec'd
    before it loads seccomp (docs/server.md, "Density"): it holds none of
    the server's memory (other sessions' requests, the CA's key), and it
    makes itself undumpable again after that exec, so nothing inside can
    read it or take its descriptors (the control socket, the scratch
    space) through /proc/1."""
    srv = Server(["--pool", "0"])
    try:
        c = srv.conn()
        before = set(session_inits(srv.pid))
        s = c.call("session.create")["session"]
        inits = [k for k in session_inits(srv.pid) if k not in before]
        cmd = b""
        if len(inits) == 1:
            with open("/proc/%d/cmdline" % inits[0], "rb") as f:
                cmd = f.read()
        check("the session's init is the fresh image (fluebox __session-init)",
              cmd.startswith(b"fluebox\0__session-init\0"), (inits, cmd))
        if inits:
            mine, server = status_kb(inits[0], "VmSize"), srv.rss_kb("VmSize")
            check("... mapping a fraction of the server's address space (%d of %d KiB)"
                  % (mine, server), 0 < mine * 4 < server, (mine, server))
        r = c.call("exec", {"session": s, "command":
                            "for f in /proc/1/environ /proc/1/mem /proc/1/fd/0 /proc/1/maps; do "
                            "cat $f >/dev/null 2>&1 && echo readable $f; done; "
                            "readlink /proc/1/exe >/dev/null 2>&1 && echo readable exe; "
                            "ls /proc/1/fd >/dev/null 2>&1 && echo readable fds; echo done"})
        check("inside, pid 1 cannot be read: environ, mem, fds, maps, exe",
              r.get("stdout") == "done\n", r)
        r = c.call("exec", {"session": s, "argv": ["sh", "-c", "echo $((6*7))"]})
        check("... and it serves execs", r.get("stdout") == "42\n", r)
        c.call("session.destroy", {"session": s})
    finally:
        srv.cleanup()


@test
def t_init_image_by_hand():
    """The hidden command is the image's entry, not a command: run by hand
    (no control socket) it says so in one line and exits 125."""
    for args in ([], ["3", "-1", "1"], ["0", "-1", "1"], ["x", "y", "z"], ["4", "-1", "2"],
                 ["3", "-1", "1", "-"], ["3", "-1", "1", "1,2"], ["3", "-1", "1", "5,x"]):
        r = subprocess.run([FB, "__session-init"] + args, capture_output=True, timeout=30,
                           stdin=subprocess.DEVNULL)
        lines = r.stderr.decode(errors="replace").strip().splitlines()
        check("fluebox __session-init %s: exit 125, one line" % " ".join(args),
              r.returncode == 125 and len(lines) == 1 and "not a command" in lines[0], r)


if __name__ == "__main__":
    from srvtest import main
    sys.exit(main())
