#!/usr/bin/env python3
"""test_lifecycle.py — how sessions and the server end and start: a session
whose init is killed, TTL and idle timeouts, the warm pool, SIGTERM and
SIGKILL of the server (nothing left, the next start takes over), --ready-fd,
--exit-with-parent, --remove-dir, a second server refused, and the server's
memory after 10,000 requests. Run by test_server.py; alone:
python3 tests/server/test_lifecycle.py."""
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import fbc
from srvtest import main, FB, check, wait_for, Server, session_inits, cgroups_of, test, run_requests


@test
def t_dead_session(srv):
    """Init killed from outside: requests get session_dead, info says dead,
    destroy cleans up."""
    c = srv.conn()
    before = set(session_inits(srv.pid))
    s = c.call("session.create", {"pool": False})["session"]
    new = set(session_inits(srv.pid)) - before
    if not check("dead session: found the session's init", len(new) == 1, new):
        return
    i = c.send("exec", {"session": s, "execId": "sl", "command": "sleep 60"})
    wait_for(lambda: "sl" in c.call("session.info", {"session": s})["execs"]["running"])
    os.kill(new.pop(), signal.SIGKILL)
    _, r = c.wait(i)
    check("dead session: the running exec gets session_dead", r.get("error", {}).get("code") == "session_dead", r)
    _, e = c.try_call("file.stat", {"session": s, "path": "/"})
    check("dead session: requests get session_dead", e and e["code"] == "session_dead", e)
    info = c.call("session.info", {"session": s})
    check("dead session: info says dead", info["state"] == "dead", info)
    check("dead session: destroy", c.call("session.destroy", {"session": s}) == {})
    check("dead session: gone after destroy", c.try_call("session.info", {"session": s})[1]["code"] == "not_found")


@test
def t_ttl_idle(srv):
    c = srv.conn()
    s1 = c.call("session.create", {"ttlMs": 300})["session"]
    s2 = c.call("session.create", {"idleTimeoutMs": 300})["session"]
    info = c.call("session.info", {"session": s1})
    check("ttl: expiresAt set", info["expiresAt"] == info["createdAt"] + 300, info)
    check("ttl: the session is destroyed", wait_for(lambda: c.try_call("session.info", {"session": s1})[1] is not None, 15))
    # s2 was touched by nothing since; it goes too (we do not touch it while waiting).
    check("idle timeout: the session is destroyed",
          wait_for(lambda: all(x["session"] != s2 for x in c.call("session.list")["sessions"]), 15))


@test
def t_pool():
    srv = Server(["--pool", "2"])
    try:
        c = srv.conn()
        check("pool: fills", wait_for(lambda: c.call("server.info")["pool"]["ready"] == 2, 20))
        r = c.call("session.create")
        check("pool: default create is pooled", r["pooled"], r)
        x = c.call("exec", {"session": r["session"], "command": "echo pooled"})
        check("pool: pooled session works", x["stdout"] == "pooled\n", x)
        r2 = c.call("session.create", {"limits": {"memory": "128M", "pids": 100}, "env": {"A": "1"}})
        lim_ok = r2["limits"]["memory"] == 128 << 20 and r2["limits"]["pids"] == 100
        check("pool: limits changed on a pooled sandbox (or spawned fresh)", lim_ok, r2)
        if r2["pooled"] and r2["limits"]["applied"]:
            x = c.call("exec", {"session": r2["session"], "command":
                                "cat /sys/fs/cgroup/memory.max /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null; true"})
            check("pool: the live cgroup got the new memory limit", str(128 << 20) in x["stdout"] or not x["stdout"], x)
        ws = tempfile.mkdtemp(prefix="fbws.")
        r3 = c.call("session.create", {"workspace": ws})
        check("pool: a workspace session is not pooled", not r3["pooled"], r3)
        shutil.rmtree(ws, ignore_errors=True)
        check("pool: refilled in the background", wait_for(lambda: c.call("server.info")["pool"]["ready"] == 2, 20))
    finally:
        srv.cleanup()


@test
def t_sigterm():
    srv = Server(["--pool", "1"])
    try:
        c = srv.conn()
        ws = tempfile.mkdtemp(prefix="fbws.")
        os.chmod(ws, 0o777)
        s = c.call("session.create", {"workspace": ws})["session"]
        c.call("file.write", {"session": s, "path": "keep.txt", "data": "kept"})
        i = c.send("exec", {"session": s, "command": "sleep 60"})
        inits = session_inits(srv.pid)
        pid, since = srv.pid, srv.started
        rc = srv.stop(signal.SIGTERM)
        check("SIGTERM: exit 0", rc == 0, rc)
        _, r = c.wait(i)
        check("SIGTERM: a running exec is answered", "error" in r, r)
        check("SIGTERM: socket removed", not os.path.exists(srv.sock))
        check("SIGTERM: no session init left", wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in inits), 10), inits)
        check("SIGTERM: no cgroup left", not cgroups_of(pid, since), cgroups_of(pid, since))
        with open(os.path.join(ws, "keep.txt")) as f:
            check("SIGTERM: host workspace keeps its files", f.read() == "kept")
        shutil.rmtree(ws, ignore_errors=True)
    finally:
        srv.cleanup()


@test
def t_sigkill():
    srv = Server(["--pool", "1"])
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    try:
        c = srv.conn()
        s = c.call("session.create", {"workspace": ws})["session"]
        c.call("file.write", {"session": s, "path": "keep.txt", "data": "kept"})
        c.call("exec", {"session": s, "command": "sleep 600 >/dev/null 2>&1 &"})
        wait_for(lambda: c.call("server.info")["pool"]["ready"] == 1)
        inits = session_inits(srv.pid)
        pid, since = srv.pid, srv.started
        srv.stop(signal.SIGKILL)
        check("SIGKILL: every session init dies with the server",
              wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in inits), 10), inits)
        # Restart on the same socket.
        sock = srv.sock
        p2 = subprocess.Popen([FB, "serve", "--socket", sock], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        try:
            def up():
                try:
                    return fbc.Conn(sock).call("server.info")["pid"] == p2.pid
                except OSError:
                    return False
            ok2 = wait_for(up, 20)
            check("SIGKILL: the next start takes over the stale socket", ok2)
            c2 = fbc.Conn(sock)
            _, e = c2.try_call("session.info", {"session": s})
            check("SIGKILL: old sessions are gone", e and e["code"] == "not_found", e)
            check("SIGKILL: stale cgroups swept", not cgroups_of(pid, since), cgroups_of(pid, since))
            with open(os.path.join(ws, "keep.txt")) as f:
                check("SIGKILL: host workspace keeps its files across the restart", f.read() == "kept")
            s2 = c2.call("session.create", {"workspace": ws})["session"]
            r = c2.call("file.read", {"session": s2, "path": "keep.txt"})
            check("SIGKILL: a new session on the same workspace sees them", r["data"] == "kept", r)
        finally:
            p2.terminate()
            p2.wait(20)
    finally:
        srv.cleanup()
        shutil.rmtree(ws, ignore_errors=True)


@test
def t_ready_fd_and_parent():
    d = tempfile.mkdtemp(prefix="fbsrv.")
    sock = os.path.join(d, "s.sock")
    try:
        r, w = os.pipe()
        p = subprocess.Popen([FB, "serve", "--socket", sock, "--ready-fd", str(w)], pass_fds=(w,),
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(w)
        line = os.read(r, 100)
        os.close(r)
        ok1 = line == b"ready\n" and fbc.Conn(sock).call("server.info")["protocol"] == 1
        check("--ready-fd: 'ready' once it listens", ok1, line)
        p.terminate()
        p.wait(20)
        # --exit-with-parent: a parent shell that is SIGKILLed takes the server along.
        sh = subprocess.Popen(["sh", "-c", '"$0" serve --socket "$1" --exit-with-parent & echo $!; wait', FB, sock],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        spid = int(sh.stdout.readline())
        wait_for(lambda: os.path.exists(sock))
        sh.kill()
        sh.wait()
        gone = wait_for(lambda: not os.path.exists("/proc/%d" % spid) or
                        open("/proc/%d/stat" % spid).read().split(")")[1].split()[0] == "Z", 15)
        check("--exit-with-parent: the server exits with its parent", gone)
        check("--exit-with-parent: and cleans up its socket", wait_for(lambda: not os.path.exists(sock), 10))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test
def t_remove_dir():
    """--remove-dir (the clients' private servers): the server removes the
    socket's directory, with the log its client keeps there, when it stops,
    also when its parent was SIGKILLed and nobody else is left to; a second
    server refused on the socket removes nothing; a directory others may
    write in is refused."""
    d = tempfile.mkdtemp(prefix="fbrd.")  # 0700, ours
    sock = os.path.join(d, "fluebox.sock")
    log = os.path.join(d, "server.log")
    try:
        sh = subprocess.Popen(["sh", "-c", '"$0" serve --socket "$1" --exit-with-parent --remove-dir '
                               '2>"$2" & echo $!; wait', FB, sock, log],
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        spid = int(sh.stdout.readline())
        up = wait_for(lambda: os.path.exists(sock) and fbc.Conn(sock).call("server.info"), 20)
        r = subprocess.run([FB, "serve", "--socket", sock, "--remove-dir"], capture_output=True,
                           text=True, timeout=20)
        check("--remove-dir: a second server on the socket is refused and removes nothing",
              up and r.returncode == 125 and "another" in r.stderr and os.path.exists(sock) and
              os.path.exists(log) and fbc.Conn(sock).call("server.info")["protocol"] == 1, r.stderr)
        sh.kill()
        sh.wait()
        gone = wait_for(lambda: not os.path.exists(d), 15)
        check("--remove-dir: its parent SIGKILLed, the server stops and removes its directory "
              "(socket, lock, log)", gone and wait_for(lambda: not os.path.exists("/proc/%d" % spid) or
                                                      open("/proc/%d/stat" % spid).read().split(")")[1].split()[0] == "Z", 15),
              os.listdir(d) if os.path.exists(d) else "server still running")
    finally:
        shutil.rmtree(d, ignore_errors=True)
    d = tempfile.mkdtemp(prefix="fbrd.")
    os.chmod(d, 0o1777)
    try:
        open(os.path.join(d, "keep"), "w").close()
        r = subprocess.run([FB, "serve", "--socket", os.path.join(d, "s.sock"), "--remove-dir"],
                           capture_output=True, text=True, timeout=20)
        check("--remove-dir: a directory others may write in is refused (125), nothing removed",
              r.returncode == 125 and "--remove-dir" in r.stderr and
              os.listdir(d) == ["keep"], (r.returncode, r.stderr, os.listdir(d)))
    finally:
        shutil.rmtree(d, ignore_errors=True)


@test
def t_second_server_refused(srv):
    r = subprocess.run([FB, "serve", "--socket", srv.sock], capture_output=True, text=True, timeout=20)
    check("a second server on the same socket is refused", r.returncode == 125 and "another" in r.stderr, r.stderr)
    check("the first one still serves", srv.conn().call("server.info")["protocol"] == 1)


@test
def t_memory(srv):
    """After 10,000 requests the server's RSS has not grown meaningfully."""
    c = srv.conn()
    s = c.call("session.create")["session"]
    run_requests(c, s, 2000)  # warm up: allocator pools, caches
    rss0 = srv.rss_kb()
    run_requests(c, s, 10000)
    for _ in range(20):  # sessions come and go too
        x = c.call("session.create")["session"]
        c.call("session.destroy", {"session": x})
    rss1 = srv.rss_kb()
    check("10,000 requests: RSS growth %d KiB (< 2 MiB)" % (rss1 - rss0), rss1 - rss0 < 2048, (rss0, rss1))
    c.call("session.destroy", {"session": s})


if __name__ == "__main__":
    sys.exit(main())
