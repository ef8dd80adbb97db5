#!/usr/bin/env python3
"""test_limits.py — a server under hostile load keeps its limits and keeps
serving: connections per uid, descriptors running out, file operations a
session tries to stall or that pass --file-timeout, a workspace diff beside
the event loop (issue 12.4), the memory budgets of replies, stdin and
collected output (issues 12.2, 12.3), and the ASan/LSan build under a
workload of all of it. Run by test_server.py; alone:
python3 tests/server/test_limits.py."""
import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

import fbc
from srvtest import (main, FB, ROOT, TUSER, PY, ok, check, user_exists, wait_for, Server, test,
                     MALFORMED, run_requests, session_inits)


# ---- fairness and limits (issue 12.4)

HOLD_CONNS = r"""
import json, socket, sys
path, n = sys.argv[1], int(sys.argv[2])
held, out = [], []
for i in range(n):
    s = socket.socket(socket.AF_UNIX)
    s.connect(path)
    try:
        s.sendall(b'{"id":1,"method":"server.info"}\n')
    except OSError:
        pass  # refused: the reason is there to read
    f = s.makefile("rb")
    m = json.loads(f.readline() or b"{}")
    out.append(m.get("error", {}).get("limit") or ("ok" if "result" in m else "closed"))
    held.append((s, f))
print(json.dumps(out), flush=True)
sys.stdin.read()  # hold them until told
"""


def hold_as(user, sock, n):
    """A process of `user` that opens n connections and holds them: (proc, outcomes)."""
    p = subprocess.Popen(["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups", PY, "-c",
                          HOLD_CONNS, sock, str(n)], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    return p, json.loads(p.stdout.readline() or b"[]")


@test
def t_conn_limits_per_uid():
    """Another uid gets at most --max-conns-per-uid connections and never the
    last slots, which are kept for the server's own uid."""
    if not ROOT or not user_exists(TUSER):
        ok("connection limits per uid # SKIP needs root and user %s" % TUSER)
        return
    srv = Server(["--max-conns", "20", "--max-conns-per-uid", "4"])
    try:
        os.chmod(srv.sock, 0o666)
        p, got = hold_as(TUSER, srv.sock, 6)
        check("another uid: 4 connections, then connectionsPerUid", got == ["ok"] * 4 + ["connectionsPerUid"] * 2, got)
        p.communicate(b"")
    finally:
        srv.cleanup()
    srv = Server(["--max-conns", "20", "--max-conns-per-uid", "100"])
    try:
        os.chmod(srv.sock, 0o666)
        p, got = hold_as(TUSER, srv.sock, 20)
        check("another uid cannot take the owner's reserve: 15 of 20, then connections",
              got == ["ok"] * 15 + ["connections"] * 5, got)
        c = srv.conn()
        check("...and the owner still gets in", c.call("server.info")["protocol"] == 1)
        c.close()
        p.communicate(b"")
    finally:
        srv.cleanup()


@test
def t_cli_refused_not_killed():
    """A refused CLI (all connections taken) says why; SIGPIPE does not kill it."""
    srv = Server(["--max-conns", "2"])
    try:
        held, refused = [], 0
        while len(held) < 10 and refused < 3:  # take every slot (a probe of the start may hold one briefly)
            h = srv.conn()
            try:
                h.call("server.info")
            except (OSError, EOFError, fbc.Error):
                h.close()
                refused += 1
                continue
            held.append(h)
            refused = 0
        bad = []
        for _ in range(5):
            r = subprocess.run([FB, "session", "ls", "--socket", srv.sock], capture_output=True, text=True, timeout=30)
            if r.returncode != 125 or "too many connections" not in r.stderr:
                bad.append((r.returncode, r.stderr[-200:]))
        check("session ls when refused: exit 125 and the reason, 5 of 5 times (no SIGPIPE)", not bad, bad)
        [h.close() for h in held]
    finally:
        srv.cleanup()


@test
def t_out_of_fds():
    """Near its descriptor limit the server says so plainly, and keeps
    serving; a destroyed session gives its descriptors back."""
    if not shutil.which("prlimit"):
        ok("out of descriptors # SKIP missing: prlimit")
        return
    srv = Server(wrap=["prlimit", "--nofile=200:200", "--"])
    try:
        c = srv.conn()
        made, err = [], None
        for _ in range(150):
            r, e = c.try_call("session.create")
            if e:
                err = e
                break
            made.append(r["session"])
        check("sessions until the descriptors run out (%d): limit_exceeded, fileDescriptors" % len(made),
              err and err["code"] == "limit_exceeded" and err.get("limit") == "fileDescriptors" and
              "file descriptors" in err["message"], err)
        x = c.call("exec", {"session": made[0], "command": "echo still"}) if made else {}
        check("...the sessions there still work", x.get("stdout") == "still\n", x)
        for s in made[:4]:
            c.call("session.destroy", {"session": s})
        r, e = c.try_call("session.create")
        check("...and after destroying some, a create works again", r and not e, e)
    finally:
        srv.cleanup()


STOPPER = r"""
while :; do
  kill -STOP 1 2>/dev/null
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    [ "$p" = 1 ] || [ "$p" = $$ ] || {
      read -r _ _ _ pp _ < "$d/stat" 2>/dev/null && [ "$pp" = 1 ] && kill -STOP "$p" 2>/dev/null
    }
  done
done
"""


@test
def t_file_ops_out_of_reach():
    """Code in the session stops every process it can (init itself, which
    ignores it, and every other child of init): big file.read, file.write,
    file.readdir and recursive file.rm still work, because init does them
    itself and the session cannot stop its init."""
    srv = Server(["--file-timeout", "20s"])
    try:
        c = srv.conn()
        # 140,000 files: the scratch space has one inode per 8 KiB.
        s = c.call("session.create", {"limits": {"disk": "2G"}})["session"]
        c.call("exec", {"session": s, "timeoutMs": 120000, "command":
                        "head -c 16000000 /dev/urandom > big; mkdir many; cd many; seq 20000 | xargs touch; cd ..; "
                        "for i in $(seq 40); do mkdir -p t$i/a/b && (cd t$i && seq 1500 | xargs touch && cd a/b && seq 1500 | xargs touch); done"})
        st = c.send("exec", {"session": s, "command": STOPPER, "stream": True, "execId": "stopper"})
        bad = []
        for i in range(8):
            r, e = c.try_call("file.read", {"session": s, "path": "big", "encoding": "base64"})
            if e or r["bytesRead"] != 16000000:
                bad.append(("read", e))
            r, e = c.try_call("file.write", {"session": s, "path": "w%d" % i, "data": "y" * (1 << 20)})
            if e or r["bytesWritten"] != 1 << 20:
                bad.append(("write", e))
        r, e = c.try_call("file.readdir", {"session": s, "path": "many"})
        if e or len(r["entries"]) != 20000:
            bad.append(("readdir", e))
        check("with everything stoppable stopped: 8 reads of 16 MB, 8 writes of 1 MiB and a "
              "20,000-entry listing all work", not bad, bad[:3])
        outcomes = []
        for i in range(1, 41):
            r, e = c.try_call("file.rm", {"session": s, "path": "t%d" % i, "recursive": True})
            outcomes.append(e["code"] if e else "removed")
        c.call("exec.kill", {"session": s, "execId": "stopper"})
        c.wait(st)
        left = c.call("exec", {"session": s, "command": "ls -d t* 2>/dev/null | wc -l"})["stdout"].strip()
        check("...and 40 recursive removals of 3,000 files each (no helper process to stop)",
              outcomes == ["removed"] * 40 and left == "0", (outcomes, left))
    finally:
        srv.cleanup()


@test
def t_file_deadline():
    """A file operation past --file-timeout is answered ETIMEDOUT and ended
    in the session: a recursive removal too big for a 20 ms deadline stops
    where it was (what is left stays), and the session goes on."""
    srv = Server(["--file-timeout", "20ms"])
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        c.call("exec", {"session": s, "timeoutMs": 120000, "command":
                        "mkdir -p t && cd t && for i in $(seq 8); do mkdir d$i && (cd d$i && seq 5000 | xargs touch); done"})
        r, e = c.try_call("file.rm", {"session": s, "path": "t", "recursive": True})
        check("file.rm of 40,000 files under --file-timeout 20ms: ETIMEDOUT naming --file-timeout",
              e and e["code"] == "ETIMEDOUT" and "file-timeout" in e["message"], (r, e))
        # The server sent init the request's end before the answer; init
        # serves its records in order, so the removal is over by now.
        count = "find t | wc -l"
        n1 = c.call("exec", {"session": s, "command": count})["stdout"].strip()
        n2 = c.call("exec", {"session": s, "command": count})["stdout"].strip()
        check("...the removal stopped there: what is left stays (%s entries), the session goes on" % n1,
              n1 == n2 and 0 < int(n1) < 40010, (n1, n2))
    finally:
        srv.cleanup()


def answered_beside(c, other, method, params):
    """Sends method on c and, while it runs, server.info on other. Returns
    the events and reply of method, and (served, why): whether other was
    answered first (or method took under 0.5 s, too short to tell)."""
    rid = c.send(method, params)
    sent_at = time.monotonic()
    got = {}

    def reply():
        got["r"] = c.wait(rid)
        got["at"] = time.monotonic()
    t = threading.Thread(target=reply)
    t.start()
    info = other.call("server.info")
    info_at = time.monotonic()
    t.join()
    evs, r = got["r"]
    served = info.get("protocol") == 1 and (info_at < got["at"] or got["at"] - sent_at < 0.5)
    return evs, r, (served, "server.info answered %.2fs after %s" % (info_at - got["at"], method))


@test
def t_workspace_off_loop():
    """A workspace.diff of 150,000 new files runs beside the event loop:
    another client is answered meanwhile, progress events come while it
    runs; so does a session.snapshot of that layer; and workspace.cancel
    stops a commit before it changes the host."""
    srv = Server(["--max-message", "64M"])
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    try:
        c = srv.conn()
        s = c.call("session.create", {"workspace": ws, "cow": True, "limits": {"disk": "4G"}})["session"]
        x = c.call("exec", {"session": s, "timeoutMs": 600000, "command":
                            "mkdir -p /workspace/t && cd /workspace/t && "
                            "for a in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do mkdir $a; (cd $a && seq 10000 | xargs touch); done"})
        if not check("workspace off the loop: 150,000 files made", x["exitCode"] == 0, x):
            return
        other = srv.conn()
        evs, r, served = answered_beside(c, other, "workspace.diff", {"session": s, "diffs": False})
        progress = [e for e in evs if e.get("event") == "progress"]
        check("...the diff is answered (%d changes, %d progress events)" %
              (len(r.get("result", {}).get("changes", [])), len(progress)),
              "result" in r and len(r["result"]["changes"]) >= 150000, str(r)[:200])
        check("...progress events say the phase and count items",
              all(e["method"] == "workspace.diff" and e["phase"] in ("scan", "diff") and e["done"] >= 0
                  for e in progress) and any(e["done"] > 0 for e in progress), progress[:2])
        check("...another client was served while the diff ran", served[0], served[1])
        # A snapshot copies the 150,000 entries of the layer: beside the loop too.
        _, r, served = answered_beside(c, other, "session.snapshot", {"session": s, "name": "big"})
        check("...a session.snapshot of the layer is answered (%s entries)" %
              r.get("result", {}).get("entries"),
              "result" in r and r["result"]["entries"] >= 150000, str(r)[:200])
        check("...another client was served while the snapshot copied", served[0], served[1])
        cm = c.send("workspace.commit", {"session": s})
        cancel = c.call("workspace.cancel", {"session": s})
        _, r = c.wait(cm)
        if cancel["cancelled"]:
            stopped = ("error" in r and r["error"]["code"] == "cancelled") or \
                      ("result" in r and not r["result"]["committed"] and "cancel" in (r["result"]["reason"] or ""))
            check("...workspace.cancel stops the commit", stopped, str(r)[:300])
            if "error" in r:
                check("...a commit cancelled before it started changed nothing on the host",
                      not os.path.exists(os.path.join(ws, "t")))
        else:
            check("...a commit that finished before the cancel is whole", r.get("result", {}).get("committed"), str(r)[:200])
        c.call("session.destroy", {"session": s})
    finally:
        srv.cleanup()
        shutil.rmtree(ws, ignore_errors=True)


# ---- memory budgets (issue 12.2, 12.3)


def drain(c, ids):
    """The replies to ids, in whatever order they come."""
    got = {}
    for i in ids:
        _, got[i] = c.wait(i)
    return got


@test
def t_big_replies_together():
    """Three collected execs of 16 MiB each finishing together on one
    connection: every reply arrives whole, and a sleep on the same
    connection is answered too (the connection is not dropped)."""
    srv = Server()
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        n = 16 << 20
        ids = [c.send("exec", {"session": s, "command":
                               "while [ ! -e /tmp/go ]; do sleep 0.01; done; "
                               "head -c %d /dev/zero | tr '\\0' a" % n})
               for _ in range(3)]
        sl = c.send("exec", {"session": s, "command": "sleep 1; echo slept"})
        # One file releases all three at once.
        c.call("file.write", {"session": s, "path": "/tmp/go", "data": ""})
        got = drain(c, ids + [sl])
        whole = all(len(got[i]["result"]["stdout"]) == n for i in ids if "result" in got[i])
        check("three 16 MiB replies at once: all whole", whole and all("result" in got[i] for i in ids),
              [str(got[i])[:150] for i in ids])
        check("...and the sleep beside them is answered", got[sl].get("result", {}).get("stdout") == "slept\n",
              str(got[sl])[:200])
    finally:
        srv.cleanup()


@test
def t_memory_budget_reads():
    """40 pipelined 4 MiB file.reads from a client that does not read its
    replies: the server holds about the connection's budget, not 40 answers;
    every answer arrives once the client reads."""
    srv = Server(["--conn-memory", "16M", "--uid-memory", "64M"])
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        c.call("exec", {"session": s, "command": "head -c 4194304 /dev/urandom > f"})
        rss0 = srv.rss_kb()
        c.s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        ids = [c.send("file.read", {"session": s, "path": "f", "encoding": "base64"}) for _ in range(40)]
        # Wait until the server has done what it will without a reader.
        def settled():
            a = srv.rss_kb()
            time.sleep(0.3)
            return abs(srv.rss_kb() - a) < 256 and a
        wait_for(settled, 20)
        grown = srv.rss_kb() - rss0
        check("40 unread 4 MiB reads: server RSS grew %d MiB (budget 16 MiB; < 48)" % (grown >> 10),
              grown < 48 << 10, grown)
        got = drain(c, ids)
        check("...and every read is answered in full once the client reads",
              all(got[i].get("result", {}).get("bytesRead") == 4194304 for i in ids),
              [str(got[i])[:120] for i in ids if "result" not in got[i]][:2])
    finally:
        srv.cleanup()


@test
def t_memory_control_bytes():
    """A 16 MiB file of control bytes read as utf8: the answer comes as
    base64 (as "encoding" says), not as a 96 MiB line of escapes; the
    server's peak memory stays near the file's size."""
    srv = Server()
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        c.call("exec", {"session": s, "command": "head -c 16777216 /dev/zero | tr '\\0' '\\1' > f"})
        peak0 = srv.rss_kb("VmHWM")
        rss0 = srv.rss_kb()
        i = c.send("file.read", {"session": s, "path": "f"})
        line = b""
        while b"\n" not in c.buf:
            d = c.s.recv(1 << 20)
            if not d:
                break
            c.buf += d
        line, c.buf = c.buf.split(b"\n", 1)
        r = json.loads(line)["result"]
        ok_data = r["encoding"] == "base64" and base64.b64decode(r["data"]) == b"\x01" * 16777216
        check("16 MiB of control bytes: a %d MiB answer in base64" % (len(line) >> 20),
              ok_data and len(line) < 24 << 20, (r.get("encoding"), len(line)))
        peak = max(srv.rss_kb("VmHWM"), peak0) - rss0
        check("...server peak %d MiB above its start (< 64)" % (peak >> 10), peak < 64 << 10, peak)
        _, e = c.try_call("exec", {"session": s, "command": "printf 'a\\001b'"})
        r = c.call("exec", {"session": s, "command": "printf 'a\\001b'"})
        check("...small outputs with control bytes stay text", r["encoding"] == "utf8" and r["stdout"] == "a\x01b", r)
    finally:
        srv.cleanup()


@test
def t_memory_budget_stdin():
    """Execs that never read their stdin: beyond the connection's budget the
    server refuses more stdin with a clear error instead of holding it."""
    srv = Server(["--conn-memory", "8M", "--uid-memory", "64M"])
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        rss0 = srv.rss_kb()
        ids = [c.send("exec", {"session": s, "command": "sleep 60", "stdin": "x" * (1 << 20)})
               for _ in range(16)]
        refused = None
        t0 = time.time()
        while refused is None and time.time() - t0 < 30:
            m = c.recv()
            if m and "error" in m:
                refused = m["error"]
        check("stdin beyond the 8 MiB budget is refused: limit_exceeded, memoryPerConnection",
              refused and refused["code"] == "limit_exceeded" and refused.get("limit") == "memoryPerConnection",
              refused)
        grown = srv.rss_kb() - rss0
        running = c.call("session.info", {"session": s})["execs"]["running"]
        check("...the ones accepted run (%d of 16), the server holds %d MiB (< 16)" %
              (len(running), grown >> 10), 4 <= len(running) < 16 and grown < 16 << 10, (running, grown))
        for x in running:
            c.call("exec.kill", {"session": s, "execId": x})
    finally:
        srv.cleanup()


@test
def t_memory_budget_collected():
    """Collected output beyond the connection's budget is cut and reported
    as truncated (the command is not blocked)."""
    srv = Server(["--conn-memory", "4M"])
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        r = c.call("exec", {"session": s, "command": "head -c 10000000 /dev/zero | tr '\\0' a; echo done >&2"})
        check("10 MB of output under a 4 MiB budget: cut, stdoutTruncated, the command ran to the end",
              r["stdoutTruncated"] and len(r["stdout"]) <= 4 << 20 and r["exitCode"] == 0, str(r)[:200])
    finally:
        srv.cleanup()


@test
def t_exec_output_beside_reads():
    """file.reads in flight hold the room their answers can take, not
    maxReadBytes' worth each (issue 27.6): with 19 reads of a small file
    stalled in one session (its init stopped), an exec in another session
    on the same uid collects 8 MB whole, and `echo tok` is answered
    "tok" (it was answered with nothing, stdoutTruncated)."""
    srv = Server(["--uid-memory", "48M"])
    a_init = None
    try:
        c = srv.conn()
        before = set(session_inits(srv.pid))
        a = c.call("session.create", {"pool": False})["session"]
        c.call("file.write", {"session": a, "path": "f", "data": "small file\n"})
        a_init = wait_for(lambda: (set(session_inits(srv.pid)) - before) or None)
        b = c.call("session.create", {"pool": False})["session"]
        check("the stalled session's init is found", a_init and len(a_init) == 1, a_init)
        a_init = a_init.pop()
        os.kill(a_init, signal.SIGSTOP)
        readers = [srv.conn() for _ in range(19)]
        rids = [r.send("file.read", {"session": a, "path": "f"}) for r in readers]
        # Every read is in the server (admitted or refused) before the execs.
        c.call("server.info")
        x = c.send("exec", {"session": b, "command":
                            "head -c 8000000 /dev/zero | tr '\\0' a; touch /tmp/a_done"})
        _, rx = c.wait(x)
        big = rx.get("result", {})
        check("beside 19 stalled reads: 8 MB of collected output arrives whole",
              len(big.get("stdout", "")) == 8000000 and not big.get("stdoutTruncated"),
              (len(big.get("stdout", "")), big.get("stdoutTruncated"), big.get("truncatedBy"), rx.get("error")))
        r = c.call("exec", {"session": b, "command": "echo tok"})
        check("...and echo tok is answered tok", r["stdout"] == "tok\n" and not r["stdoutTruncated"], r)
        os.kill(a_init, signal.SIGCONT)
        got = [r.wait(i)[1] for r, i in zip(readers, rids)]
        check("...and every read is answered once the session goes on",
              all(g.get("result", {}).get("data") == "small file\n" for g in got),
              [g for g in got if "result" not in g][:2])
        a_init = None
    finally:
        if a_init:
            os.kill(a_init, signal.SIGCONT)
        srv.cleanup()


@test
def t_exec_output_floor():
    """At the memory budget collected output is cut, but the first 64 KiB of
    each stream are kept: an exec beside one that filled the connection's
    budget still gets its few bytes; truncatedBy says why output was cut."""
    srv = Server(["--conn-memory", "4M"])
    try:
        c = srv.conn()
        p = srv.conn()
        s = c.call("session.create")["session"]
        x = c.send("exec", {"session": s, "command":
                            "head -c 20000000 /dev/zero | tr '\\0' a; touch /tmp/a_done; "
                            "while [ ! -e /tmp/go ]; do sleep 0.01; done"})
        # The output is in (cut at the budget) and held while it runs.
        wait_for(lambda: p.call("file.exists", {"session": s, "path": "/tmp/a_done"})["exists"], 60)
        r = c.call("exec", {"session": s, "command": "echo tok; echo err >&2"})
        check("beside an exec that filled the 4 MiB budget: echo tok is answered tok (and stderr)",
              r["stdout"] == "tok\n" and r["stderr"] == "err\n" and not r["stdoutTruncated"], r)
        p.call("file.write", {"session": s, "path": "/tmp/go", "data": ""})
        _, rx = c.wait(x)
        big = rx["result"]
        check("...the big one is cut, stdoutTruncated, truncatedBy memory",
              big["stdoutTruncated"] and big.get("truncatedBy") == "memory" and len(big["stdout"]) <= 4 << 20,
              (len(big["stdout"]), big["stdoutTruncated"], big.get("truncatedBy")))
        r = c.call("exec", {"session": s, "command": "head -c 3000 /dev/zero", "maxOutputBytes": 1000})
        check("...maxOutputBytes: truncatedBy maxOutputBytes",
              r["stdoutTruncated"] and r.get("truncatedBy") == "maxOutputBytes", str(r)[:200])
    finally:
        srv.cleanup()


@test
def t_asan():
    """The ASan/LSan build under a workload of every method, bad input and
    vanishing clients: no error, no leak at exit."""
    asan = os.environ.get("FB_ASAN")
    if not asan or not os.path.exists(asan):
        print("ok - asan workload # SKIP no ASan build (FB_ASAN)")
        return
    env = {"ASAN_OPTIONS": "detect_leaks=1:exitcode=99:abort_on_error=0",
           "LSAN_OPTIONS": "exitcode=99", "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1"}
    srv = Server(["--pool", "1"], binary=asan, env=env)
    try:
        c = srv.conn()
        s = c.call("session.create")["session"]
        run_requests(c, s, 1000)
        for line, _ in MALFORMED:
            c.send_raw(line + b"\n")
            c.recv()
        c.call("file.write", {"session": s, "path": "big", "data": "y" * (1 << 20)})
        c.call("file.read", {"session": s, "path": "big", "encoding": "base64"})
        c.call("exec", {"session": s, "command": "seq 1 100000", "stream": True})
        g = srv.conn()
        g.send("exec", {"session": s, "stream": True, "command": "yes"})
        g.recv()
        g.close()
        g = srv.conn()
        g.send("session.create", {"pool": False})
        g.close()
        c.call("session.create", {"limits": {"memory": "64M"}})
        c.send("exec", {"session": s, "execId": "sl", "command": "sleep 30"})
        wait_for(lambda: "sl" in c.call("session.info", {"session": s})["execs"]["running"])
        rc = srv.stop(signal.SIGTERM)
        err = srv.stderr()
        bad = [ln for ln in err.splitlines() if "Sanitizer" in ln or "runtime error" in ln]
        check("ASan/LSan build: clean exit after the workload", rc == 0 and not bad, (rc, bad[:5]))
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
