#!/usr/bin/env python3
"""test_server.py — tests of `fluebox serve` through the wire protocol
(docs/protocol.md). Prints "ok - NAME" / "not ok - NAME: WHY" lines for
tests/run.sh (run by tests/suites/server.sh).

  FB=./fluebox python3 tests/server/test_server.py [-k SUBSTRING] [--asan BIN]

Every test starts what it needs (its own server on a private socket) and
tries to cross the boundary it is about: another uid's sessions, a symlink to
a host file, malformed input, vanishing clients, a killed server. No timing
asserts: waits poll for a state with a generous deadline."""
import base64
import json
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fbc  # noqa: E402

FB = os.path.abspath(os.environ.get("FB", "./fluebox"))
ROOT = os.geteuid() == 0
TUSER = os.environ.get("FB_TEST_USER", "fbtest")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
RESULTS = {"pass": 0, "fail": 0}
ONLY = None


def ok(name):
    RESULTS["pass"] += 1
    print("ok - %s" % name, flush=True)


def notok(name, why):
    RESULTS["fail"] += 1
    why = str(why).replace("\n", " | ")[:400]
    print("not ok - %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        notok(name, why or "condition false")
    return cond


def user_exists(u):
    try:
        pwd.getpwnam(u)
        return True
    except KeyError:
        return False


def wait_for(fn, timeout=15.0, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return fn()


class Server:
    """A fluebox serve process on a private socket."""

    def __init__(self, args=(), user=None, binary=None, env=None, wrap=()):
        self.dir = tempfile.mkdtemp(prefix="fbsrv.")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "s.sock")
        self.user = user
        cmd = list(wrap) + [binary or FB, "serve", "--socket", self.sock] + list(args)
        if user:
            uid = pwd.getpwnam(user).pw_uid
            os.chown(self.dir, uid, -1)
            envargs = ["%s=%s" % kv for kv in (env or {}).items()]
            cmd = ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups",
                   "--reset-env", "--", "env", "PATH=" + os.environ.get("PATH", "/usr/bin:/bin"),
                   "HOME=/tmp"] + envargs + cmd
        self.errf = open(os.path.join(self.dir, "stderr"), "w+")
        e = dict(os.environ)
        e.update(env or {})
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.errf, env=e)
        def up():
            if self.p.poll() is not None:
                return True
            try:  # the file exists from bind(); connect works from listen()
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.sock)
                s.close()
                return True
            except OSError:
                return False
        if not wait_for(up, 20):
            raise RuntimeError("server did not start")
        if self.p.poll() is not None:
            raise RuntimeError("server exited: " + self.stderr())

    @property
    def pid(self):
        """The fluebox process (not setpriv: it execs, so the same pid)."""
        return self.p.pid

    def conn(self):
        return fbc.Conn(self.sock)

    def stderr(self):
        self.errf.flush()
        with open(self.errf.name) as f:
            return f.read()

    def rss_kb(self, field="VmRSS"):
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        return -1

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode

    def cleanup(self):
        self.stop()
        self.errf.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def session_inits(server_pid):
    """Pids of session inits that are children of the server."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid == server_pid:
                out.append(int(d))
        except (OSError, ValueError):
            pass
    return out


def cgroups_of(pid):
    out = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith("fluebox-%d-" % pid):
                out.append(os.path.join(root, d))
        if root.count("/") > 8:
            dirs[:] = []
    return out


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# ---------------------------------------------------------------- basics


@test
def t_server_info(srv):
    c = srv.conn()
    r = c.call("server.info")
    check("server.info: protocol 1 and limits", r["protocol"] == 1 and r["limits"]["maxMessageBytes"] > 0
          and "exec" in r["methods"] and r["peerUid"] == os.geteuid(), r)
    r = c.call("server.info", None)
    check("server.info: params may be omitted or null", r["name"] == "fluebox")


@test
def t_session_lifecycle(srv):
    c = srv.conn()
    info = c.call("session.create", {"ttlMs": 0, "env": {"FOO": "bar"}})
    s = info["session"]
    check("session.create: id and info", s.startswith("s-") and len(s) == 18 and info["state"] == "ready", info)
    lst = c.call("session.list")["sessions"]
    check("session.list: contains it", any(x["session"] == s for x in lst))
    i2 = c.call("session.info", {"session": s})
    check("session.info: fields", i2["session"] == s and "usage" in i2 and "limits" in i2
          and i2["execs"]["total"] == 0, i2)
    r = c.call("exec", {"session": s, "command": "echo $FOO"})
    check("session.create env reaches execs", r["stdout"] == "bar\n", r)
    l = c.call("session.create", {"label": "agent-7"})
    check("session.create label echoed", l["label"] == "agent-7" and info["label"] is None, l)
    lst = c.call("session.list", {"label": "agent-7"})["sessions"]
    check("session.list filters by label", [x["session"] for x in lst] == [l["session"]], lst)
    c.call("session.destroy", {"session": l["session"]})
    check("session.destroy", c.call("session.destroy", {"session": s}) == {})
    _, e = c.try_call("session.info", {"session": s})
    check("session.info after destroy: not_found", e and e["code"] == "not_found", e)
    _, e = c.try_call("session.destroy", {"session": s})
    check("session.destroy twice: not_found", e and e["code"] == "not_found", e)
    for m in ("exec", "file.read", "file.stat", "exec.kill", "session.info"):
        _, e = c.try_call(m, {"session": "s-0000000000000000", "path": "x", "argv": ["true"],
                              "execId": "x1"})
        check("%s on unknown session: not_found" % m, e and e["code"] == "not_found", e)
    _, e = c.try_call("exec", {"argv": ["true"]})
    check("exec without session: invalid_params", e and e["code"] == "invalid_params"
          and e.get("param") == "session", e)


@test
def t_create_params(srv):
    c = srv.conn()
    bad = [
        ({"profile": 5}, "profile"),
        ({"limits": {"memory": "lots"}}, "limits.memory"),
        ({"limits": {"pids": "x"}}, "limits.pids"),
        ({"limits": {"cpus": -1}}, "limits.cpus"),
        ({"limits": 3}, "limits"),
        ({"network": "internet"}, "network"),
        ({"allowNet": "example.com"}, "allowNet"),
        ({"env": {"A": 1}}, "env"),
        ({"env": {"A=B": "x"}}, "env"),
        ({"ttlMs": -1}, "ttlMs"),
        ({"idleTimeoutMs": "soon"}, "idleTimeoutMs"),
        ({"workspace": "relative/dir"}, "workspace"),
        ({"options": ["--report", "/tmp/x"]}, "options"),
        ({"options": "--mem 1G"}, "options"),
        ({"cwd": "relative"}, "cwd"),
        ({"caller": "PATH=/usr/bin"}, "caller"),
        ({"caller": {"path": 1}}, "caller"),
        ({"caller": {"cwd": "relative"}}, "caller"),
        ({"caller": {"env": {"HOME": 1}}}, "caller"),
    ]
    for params, param in bad:
        _, e = c.try_call("session.create", params)
        check("session.create %s: invalid_params" % json.dumps(params), e and e["code"] == "invalid_params"
              and e.get("param") == param, e)
    for key in ("memory", "pids", "disk", "nofile", "fsize"):
        _, e = c.try_call("session.create", {"limits": {key: 0}})
        check("session.create limits.%s: 0 is refused as on the command line" % key,
              e and e["code"] == "invalid_params" and e.get("param") == "limits." + key
              and "0 is not a limit" in e["message"], e)
    for opt in (["--net-log", "/tmp/x.log"], ["--cow-upper", "/tmp"], ["--commit"], ["--seccomp-log"]):
        _, e = c.try_call("session.create", {"options": opt})
        check("session.create options %s: not available for sessions" % opt[0],
              e and e["code"] == "invalid_params" and e.get("param") == "options"
              and "%s is not available for sessions" % opt[0] in e["message"], e)
    _, e = c.try_call("session.create", {"options": ["--hostname", "x", "extra"]})
    check("session.create options with a stray word: invalid_params",
          e and e["code"] == "invalid_params" and "unexpected argument" in e["message"], e)
    r = c.call("session.create", {"options": ["--hostname=eq-agent", "--mem=128M"]})
    x = c.call("exec", {"session": r["session"], "command": "hostname"})
    check("session.create options: --opt=value", x["stdout"] == "eq-agent\n" and r["limits"]["memory"] == 128 << 20, (r, x))
    c.call("session.destroy", {"session": r["session"]})
    for params in ({"profile": "no-such-profile"}, {"options": ["--no-such-option"]},
                   {"workspace": "/nonexistent/dir"}, {"limits": {"memory": "1K"}}):
        _, e = c.try_call("session.create", params)
        check("session.create %s: invalid_params with fluebox's message" % json.dumps(params),
              e and e["code"] == "invalid_params" and e["message"], e)
    r = c.call("session.create", {"limits": {"memory": "256M", "pids": 64, "cpus": 0.5},
                                  "options": ["--hostname", "agent"], "cwd": "/tmp"})
    check("session.create limits and options", r["limits"]["memory"] == 256 << 20 and r["limits"]["pids"] == 64
          and r["cwd"] == "/tmp", r)
    x = c.call("exec", {"session": r["session"], "command": "hostname; pwd"})
    check("session options apply (hostname, cwd)", x["stdout"] == "agent\n/tmp\n", x)
    c.call("session.destroy", {"session": r["session"]})


@test
def t_workspace(srv):
    c = srv.conn()
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    with open(os.path.join(ws, "hello.txt"), "w") as f:
        f.write("from host\n")
    s = c.call("session.create", {"workspace": ws})["session"]
    r = c.call("file.read", {"session": s, "path": "hello.txt"})
    check("workspace: host file readable by file.read", r["data"] == "from host\n", r)
    c.call("file.write", {"session": s, "path": "/workspace/out.txt", "data": "from session"})
    x = c.call("exec", {"session": s, "command": "echo exec >> out.txt"})
    check("workspace: exec writes", x["exitCode"] == 0, x)
    c.call("session.destroy", {"session": s})
    with open(os.path.join(ws, "out.txt")) as f:
        data = f.read()
    check("workspace: files stay on the host after destroy", data == "from sessionexec\n", data)
    shutil.rmtree(ws, ignore_errors=True)


# ---------------------------------------------------------------- exec


@test
def t_exec(srv):
    c = srv.conn()
    s = c.call("session.create")["session"]
    r = c.call("exec", {"session": s, "argv": ["sh", "-c", "echo out; echo err >&2; exit 3"]})
    check("exec argv: output and exit code", r["stdout"] == "out\n" and r["stderr"] == "err\n"
          and r["exitCode"] == 3 and r["signal"] is None and not r["timedOut"], r)
    r = c.call("exec", {"session": s, "command": "pwd; echo $X", "cwd": "sub", "env": {"X": "y"}})
    check("exec cwd missing: fails with a message", r["exitCode"] != 0 and "sub" in r["stderr"], r)
    c.call("file.mkdir", {"session": s, "path": "sub"})
    r = c.call("exec", {"session": s, "command": "pwd; echo $X", "cwd": "sub", "env": {"X": "y"}})
    check("exec relative cwd and env", r["stdout"] == "/workspace/sub\ny\n", r)
    r = c.call("exec", {"session": s, "argv": ["cat"], "stdin": "hello"})
    check("exec stdin utf8", r["stdout"] == "hello", r)
    r = c.call("exec", {"session": s, "argv": ["cat"], "stdin": base64.b64encode(b"\x00\x01\xff").decode(),
                        "stdinEncoding": "base64", "encoding": "base64"})
    check("exec stdin and output base64 (binary)", base64.b64decode(r["stdout"]) == b"\x00\x01\xff", r)
    r = c.call("exec", {"session": s, "argv": ["od", "-An", "-c"], "stdin": "x\x00y"})
    check("exec stdin with NUL characters", "\\0" in r["stdout"], r)
    _, e = c.try_call("exec", {"session": s, "argv": ["echo", "a\x00b"]})
    check("exec argv with NUL: invalid_params", e and e["code"] == "invalid_params" and e.get("param") == "argv", e)
    r = c.call("exec", {"session": s, "argv": ["cat"]})
    check("exec without stdin: empty input", r["stdout"] == "" and r["exitCode"] == 0, r)
    r = c.call("exec", {"session": s, "argv": ["no-such-command-here"]})
    check("exec command not found: 127", r["exitCode"] == 127 and "not found" in r["stderr"], r)
    r = c.call("exec", {"session": s, "command": "kill -9 $$"})
    check("exec killed by a signal: 137 SIGKILL", r["exitCode"] == 137 and r["signal"] == "SIGKILL", r)
    r = c.call("exec", {"session": s, "command": "sleep 30", "timeoutMs": 300})
    check("exec timeout: 124, timedOut", r["exitCode"] == 124 and r["timedOut"] and r["signal"] == "SIGKILL", r)
    check("exec timeout: a note on stderr", "timed out after 300 ms" in r["stderr"], r)
    r = c.call("exec", {"session": s, "command": "head -c 100000 /dev/zero", "maxOutputBytes": 1000})
    check("exec maxOutputBytes truncates", len(r["stdout"]) == 1000 and r["stdoutTruncated"], len(r["stdout"]))
    r = c.call("exec", {"session": s, "command": "printf '\\377abc\\303'"})
    check("exec utf8 output repairs invalid bytes", r["stdout"] == "\ufffdabc\ufffd", repr(r["stdout"]))
    # A multi-byte character straddling the 64 KiB chunk boundary.
    evs, r = c.wait(c.send("exec", {"session": s, "stream": True,
                                     "command": "head -c 65535 /dev/zero | tr '\\0' a; printf '\\303\\251z'"}))
    data = "".join(e["data"] for e in evs if e["event"] == "stdout")
    check("exec stream: UTF-8 never split across events", data == "a" * 65535 + "\u00e9z"
          and "\ufffd" not in data, repr(data[-5:]))
    r = c.call("exec", {"session": s, "command": "sleep 100 & echo bg"})
    check("exec with a background child returns", r["stdout"] == "bg\n" and r["exitCode"] == 0, r)
    # Bad params.
    for params, code in (({"argv": ["a"], "command": "b"}, "invalid_params"),
                         ({}, "invalid_params"),
                         ({"argv": []}, "invalid_params"),
                         ({"argv": [""]}, "invalid_params"),
                         ({"argv": "ls"}, "invalid_params"),
                         ({"argv": ["ls", 3]}, "invalid_params"),
                         ({"command": "true", "timeoutMs": -5}, "invalid_params"),
                         ({"command": "true", "stdin": "!!", "stdinEncoding": "base64"}, "invalid_params"),
                         ({"command": "true", "encoding": "latin1"}, "invalid_params"),
                         ({"command": "true", "execId": "bad id!"}, "invalid_params"),
                         ({"command": "true", "env": {"": "x"}}, "invalid_params"),
                         ({"command": "x" * 200000}, "too_large")):
        p = dict(params)
        p["session"] = s
        _, e = c.try_call("exec", p)
        check("exec %s: %s" % (json.dumps(params)[:60], code), e and e["code"] == code, e)
    c.call("session.destroy", {"session": s})


@test
def t_exec_stream_kill(srv):
    c = srv.conn()
    s = c.call("session.create")["session"]
    evs, r = c.wait(c.send("exec", {"session": s, "stream": True, "command": "echo a; echo b >&2; echo c"}))
    kinds = [e["event"] for e in evs]
    out = "".join(e["data"] for e in evs if e["event"] == "stdout")
    check("exec stream: start first, then output, then the result",
          kinds[0] == "start" and evs[0]["execId"] and out == "a\nc\n" and "stdout" not in r["result"], (kinds, r))
    i = c.send("exec", {"session": s, "stream": True, "execId": "long-1", "command": "echo started; sleep 60"})
    m = c.recv()
    while m.get("event") != "stdout":
        m = c.recv()
    info = c.call("session.info", {"session": s})
    check("session.info lists the running exec", "long-1" in info["execs"]["running"], info["execs"])
    _, e = c.try_call("exec", {"session": s, "command": "true", "execId": "long-1"})
    check("exec duplicate execId: invalid_params", e and e["code"] == "invalid_params", e)
    _, e = c.try_call("exec.kill", {"session": s, "execId": "long-1", "signal": "SIGBOGUS"})
    check("exec.kill bad signal: invalid_params", e and e["code"] == "invalid_params", e)
    check("exec.kill", c.call("exec.kill", {"session": s, "execId": "long-1", "signal": "TERM"}) == {})
    _, r = c.wait(i)
    check("exec ended by exec.kill: SIGTERM 143", r["result"]["signal"] == "SIGTERM" and r["result"]["exitCode"] == 143, r)
    _, e = c.try_call("exec.kill", {"session": s, "execId": "long-1"})
    check("exec.kill of a finished exec: not_found", e and e["code"] == "not_found", e)
    # Collect mode, killed by its own execId from another connection.
    c2 = srv.conn()
    i = c.send("exec", {"session": s, "execId": "coll", "command": "sleep 60"})
    wait_for(lambda: "coll" in c2.call("session.info", {"session": s})["execs"]["running"])
    c2.call("exec.kill", {"session": s, "execId": "coll", "signal": 9})
    _, r = c.wait(i)
    check("exec.kill from another connection of the same uid", r["result"]["signal"] == "SIGKILL", r)
    c.call("session.destroy", {"session": s})


@test
def t_exec_limits(srv_args=("--max-execs", "2", "--max-sessions", "2")):
    srv = Server(srv_args)
    try:
        c = srv.conn()
        a = c.call("session.create")["session"]
        c.call("session.create")
        _, e = c.try_call("session.create")
        check("sessions per uid: limit_exceeded", e and e["code"] == "limit_exceeded"
              and e.get("limit") == "sessionsPerUid", e)
        i1 = c.send("exec", {"session": a, "command": "sleep 60", "execId": "a"})
        i2 = c.send("exec", {"session": a, "command": "sleep 60", "execId": "b"})
        _, e = c.try_call("exec", {"session": a, "command": "true"})
        check("execs per session: limit_exceeded", e and e["code"] == "limit_exceeded"
              and e.get("limit") == "execsPerSession", e)
        c.call("exec.kill", {"session": a, "execId": "a"})
        c.call("exec.kill", {"session": a, "execId": "b"})
        c.wait(i1)
        c.wait(i2)
        r = c.call("exec", {"session": a, "command": "echo again"})
        check("execs per session: free again after they end", r["stdout"] == "again\n", r)
    finally:
        srv.cleanup()


# ---------------------------------------------------------------- files


@test
def t_files(srv):
    c = srv.conn()
    s = c.call("session.create")["session"]
    S = {"session": s}

    def call(m, **p):
        p.update(S)
        return c.call(m, p)

    def err(m, **p):
        p.update(S)
        _, e = c.try_call(m, p)
        return e and e["code"]

    check("file.write", call("file.write", path="a.txt", data="hello\n") == {"bytesWritten": 6})
    check("file.write append", call("file.write", path="a.txt", data="more", append=True)["bytesWritten"] == 4)
    r = call("file.read", path="a.txt")
    check("file.read whole", r["data"] == "hello\nmore" and r["eof"] and r["size"] == 10 and r["bytesRead"] == 10, r)
    r = call("file.read", path="a.txt", offset=2, length=3)
    check("file.read offset/length", r["data"] == "llo" and not r["eof"], r)
    r = call("file.read", path="a.txt", offset=100)
    check("file.read past the end", r["data"] == "" and r["eof"] and r["bytesRead"] == 0, r)
    r = call("file.read", path="/workspace/a.txt", encoding="base64")
    check("file.read base64", base64.b64decode(r["data"]) == b"hello\nmore", r)
    check("file.write exclusive: EEXIST", err("file.write", path="a.txt", data="x", exclusive=True) == "EEXIST")
    check("file.write into a missing dir: ENOENT", err("file.write", path="no/dir/f", data="x") == "ENOENT")
    call("file.write", path="no/dir/f", data="x", parents=True, mode="0600")
    r = call("file.stat", path="no/dir/f")
    check("file.write parents and mode", r["type"] == "file" and r["mode"] == 0o600 and r["size"] == 1, r)
    call("file.write", path="bin.dat", data=base64.b64encode(bytes(range(256))).decode(), encoding="base64")
    r = call("file.read", path="bin.dat", encoding="base64")
    check("file.write/read binary roundtrip", base64.b64decode(r["data"]) == bytes(range(256)))
    r = call("file.read", path="bin.dat")
    check("file.read utf8 of binary is repaired, valid JSON", r["bytesRead"] == 256 and "\ufffd" in r["data"])
    check("file.write data with NUL characters (utf8)", call("file.write", path="nul.txt", data="a\x00b")["bytesWritten"] == 3
          and base64.b64decode(call("file.read", path="nul.txt", encoding="base64")["data"]) == b"a\x00b")
    check("file path with NUL: invalid_params naming path", err("file.stat", path="a\x00b") == "invalid_params")
    check("file.write bad base64: invalid_params", err("file.write", path="x", data="@@", encoding="base64") == "invalid_params")
    check("file.write to a dir: EISDIR", err("file.write", path="no", data="x") == "EISDIR")
    check("file.read a dir: EISDIR", err("file.read", path="no") == "EISDIR")
    check("file.read missing: ENOENT", err("file.read", path="missing") == "ENOENT")
    check("file.write read-only system: EROFS/EACCES", err("file.write", path="/usr/x", data="x") in ("EROFS", "EACCES"))
    check("file.read length above the limit: too_large", err("file.read", path="a.txt", length=1 << 30) == "too_large")
    check("file.read negative offset: invalid_params", err("file.read", path="a.txt", offset=-1) == "invalid_params")
    check("file.read empty path: invalid_params", err("file.read", path="") == "invalid_params")
    check("file.read path not a string: invalid_params", err("file.read", path=["a"]) == "invalid_params")
    # stat / exists / symlinks
    c.call("exec", {"session": s, "command": "ln -s a.txt link; ln -s nowhere dangling; mkfifo fifo"})
    r = call("file.stat", path="link")
    check("file.stat follows symlinks", r["type"] == "file" and r["size"] == 10, r)
    r = call("file.stat", path="link", follow=False)
    check("file.stat follow:false describes the link", r["type"] == "symlink" and r["target"] == "a.txt", r)
    check("file.stat dangling: ENOENT", err("file.stat", path="dangling") == "ENOENT")
    check("file.read a FIFO: EINVAL (never blocks)", err("file.read", path="fifo") == "EINVAL")
    check("file.write a FIFO: refused", err("file.write", path="fifo", data="x") in ("EINVAL", "ENXIO"))
    check("file.exists true", call("file.exists", path="a.txt") == {"exists": True, "type": "file"})
    check("file.exists false", call("file.exists", path="nope") == {"exists": False})
    check("file.exists under a file: false", call("file.exists", path="a.txt/x") == {"exists": False})
    # readdir
    r = call("file.readdir", path=".")
    names = [e["name"] for e in r["entries"]]
    types = {e["name"]: e["type"] for e in r["entries"]}
    check("file.readdir sorted with types", names == sorted(names) and types.get("no") == "dir"
          and types.get("link") == "symlink" and types.get("fifo") == "fifo" and "." not in names, r)
    check("file.readdir of a file: ENOTDIR", err("file.readdir", path="a.txt") == "ENOTDIR")
    c.call("exec", {"session": s, "command": "mkdir many && cd many && seq 1 5000 | xargs touch"})
    r = call("file.readdir", path="many")
    check("file.readdir big (through a helper)", len(r["entries"]) == 5000, len(r["entries"]))
    # mkdir / rm / rename
    check("file.mkdir", call("file.mkdir", path="d1") == {"created": True})
    check("file.mkdir existing: EEXIST", err("file.mkdir", path="d1") == "EEXIST")
    check("file.mkdir missing parent: ENOENT", err("file.mkdir", path="x/y/z") == "ENOENT")
    check("file.mkdir recursive", call("file.mkdir", path="x/y/z", recursive=True) == {"created": True})
    check("file.mkdir recursive existing", call("file.mkdir", path="x/y/z", recursive=True) == {"created": False})
    check("file.mkdir recursive over a file: EEXIST/ENOTDIR", err("file.mkdir", path="a.txt/q", recursive=True) in ("ENOTDIR", "EEXIST"))
    check("file.rm dir without recursive: EISDIR", err("file.rm", path="x") == "EISDIR")
    check("file.rm recursive", call("file.rm", path="x", recursive=True) == {"removed": True})
    check("file.rm missing: ENOENT", err("file.rm", path="x") == "ENOENT")
    check("file.rm missing force", call("file.rm", path="x", force=True) == {"removed": False})
    check("file.rm a symlink, not its target", call("file.rm", path="link") == {"removed": True}
          and call("file.exists", path="a.txt")["exists"])
    check("file.rm recursive of many files", call("file.rm", path="many", recursive=True) == {"removed": True})
    check("file.rm a mount point: EBUSY or refused", err("file.rm", path="/proc", recursive=True) is not None)
    call("file.write", path="b.txt", data="b")
    check("file.rename overwrite:false: EEXIST", err("file.rename", **{"from": "a.txt", "to": "b.txt", "overwrite": False}) == "EEXIST")
    check("file.rename", call("file.rename", **{"from": "a.txt", "to": "b.txt"}) == {})
    check("file.rename result", call("file.read", path="b.txt")["data"] == "hello\nmore")
    check("file.rename missing: ENOENT", err("file.rename", **{"from": "a.txt", "to": "c.txt"}) == "ENOENT")
    check("file.rename without to: invalid_params", err("file.rename", **{"from": "b.txt"}) == "invalid_params")
    check("workspace.diff: not_supported", err("workspace.diff") == "not_supported")
    c.call("session.destroy", S)


@test
def t_big_files(srv):
    c = srv.conn()
    s = c.call("session.create", {"limits": {"memory": "512M"}})["session"]
    data = os.urandom(10 << 20)
    r = c.call("file.write", {"session": s, "path": "ten", "data": base64.b64encode(data).decode(), "encoding": "base64"})
    check("file.write 10 MiB in one request", r["bytesWritten"] == len(data), r)
    r = c.call("file.read", {"session": s, "path": "ten", "encoding": "base64"})
    check("file.read 10 MiB in one request", base64.b64decode(r["data"]) == data and r["eof"])
    # 50 MiB: in chunks, both ways.
    big = os.urandom(50 << 20)
    chunk = 8 << 20
    for off in range(0, len(big), chunk):
        c.call("file.write", {"session": s, "path": "fifty", "append": off > 0, "encoding": "base64",
                              "data": base64.b64encode(big[off:off + chunk]).decode()})
    got = b""
    while True:
        r = c.call("file.read", {"session": s, "path": "fifty", "offset": len(got), "encoding": "base64"})
        got += base64.b64decode(r["data"])
        if r["eof"]:
            break
    check("file.write/read 50 MiB in chunks", got == big and r["size"] == len(big), len(got))
    r = c.call("file.read", {"session": s, "path": "fifty", "encoding": "base64"})
    check("file.read without length stops at maxReadBytes", r["bytesRead"] == 16 << 20 and not r["eof"], r["bytesRead"])
    c.call("session.destroy", {"session": s})


@test
def t_write_full_disk(srv):
    """file.write on a full file system (the session's own /tmp, a tmpfs of
    limits.disk) fails with ENOSPC and leaves the old file, or no file, never
    a partial one; an append is cut back to the old length."""
    c = srv.conn()
    s = c.call("session.create", {"limits": {"disk": "1M"}})["session"]
    S = {"session": s}

    def write(path, data, **kw):
        p = dict(S, path=path, data=base64.b64encode(data).decode(), encoding="base64", **kw)
        return c.try_call("file.write", p)

    def content(path):
        r, e = c.try_call("file.read", dict(S, path=path, encoding="base64"))
        return None if e else base64.b64decode(r["data"])

    write("/tmp/keep", b"old\n")
    big = os.urandom(2 << 20)  # more than the disk, sent through the bulk path
    _, e = write("/tmp/keep", big)
    check("file.write past a full disk (bulk): ENOSPC", e and e["code"] == "ENOSPC", e)
    check("file.write past a full disk (bulk): the old file is intact", content("/tmp/keep") == b"old\n")
    _, e = write("/tmp/new", big)
    check("file.write of a new file past a full disk: ENOSPC, no file",
          e and e["code"] == "ENOSPC" and content("/tmp/new") is None, e)
    _, e = write("/tmp/keep", big, append=True)
    check("file.write append past a full disk: ENOSPC, cut back to the old length",
          e and e["code"] == "ENOSPC" and content("/tmp/keep") == b"old\n", e)
    # Fill the disk, then a small write (inline in the request) fails the same way.
    c.call("exec", dict(S, command="head -c 2000000 /dev/zero > /tmp/fill; true"))
    _, e = write("/tmp/keep", b"x" * 50000)
    check("file.write on a full disk (inline): ENOSPC, the old file intact",
          e and e["code"] == "ENOSPC" and content("/tmp/keep") == b"old\n", e)
    r = c.call("exec", dict(S, command="ls -A /tmp"))
    check("file.write on a full disk leaves no temporary file", "fluebox" not in r["stdout"], r["stdout"])
    c.call("session.destroy", S)


# ---------------------------------------------------------------- boundaries


@test
def t_symlink_escape(srv):
    """A symlink in a host workspace that points at a host secret must not
    let file operations reach it."""
    c = srv.conn()
    sec_dir = tempfile.mkdtemp(prefix="fbsecret.")
    secret = os.path.join(sec_dir, "secret")
    with open(secret, "w") as f:
        f.write("TOPSECRET")
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    os.symlink(secret, os.path.join(ws, "abs"))
    os.symlink(os.path.relpath(secret, ws), os.path.join(ws, "rel"))
    os.symlink(sec_dir, os.path.join(ws, "dirlink"))
    os.symlink("/proc/self/mem", os.path.join(ws, "mem"))
    os.symlink("/proc/self/fd/0", os.path.join(ws, "fd0"))
    os.symlink("/proc/1/environ", os.path.join(ws, "initenv"))
    # Magic links that lead out of /proc: refused as such (docs/protocol.md 4.6).
    os.symlink("/proc/self/root/etc/hostname", os.path.join(ws, "rootlink"))
    with open(os.path.join(ws, "plain.txt"), "w") as f:
        f.write("plain")
    s = c.call("session.create", {"workspace": ws})["session"]
    for path in ("rootlink", "/proc/1/root/etc/hostname", "/proc/self/cwd/plain.txt",
                 "/proc/1/cwd/plain.txt"):
        r, e = c.try_call("file.read", {"session": s, "path": path})
        check("a /proc magic link (%s): file.read is ELOOP" % path, e is not None and e["code"] == "ELOOP", (r, e))
    r, e = c.try_call("file.write", {"session": s, "path": "/proc/1/cwd/new.txt", "data": "x"})
    check("a /proc magic link: file.write is ELOOP and creates nothing",
          e is not None and e["code"] == "ELOOP" and not os.path.exists(os.path.join(ws, "new.txt")), (r, e))
    r, e = c.try_call("file.readdir", {"session": s, "path": "/proc/1/root/etc"})
    check("a /proc magic link: file.readdir is ELOOP", e is not None and e["code"] == "ELOOP", (r, e))
    r, e = c.try_call("file.stat", {"session": s, "path": "/proc/1/root/etc/hostname"})
    check("a /proc magic link: file.stat is ELOOP", e is not None and e["code"] == "ELOOP", (r, e))
    r = c.call("file.read", {"session": s, "path": "plain.txt"})
    check("a plain file still reads", r.get("data") == "plain", r)
    for name in ("abs", "rel", "dirlink/secret"):
        r, e = c.try_call("file.read", {"session": s, "path": name})
        check("symlink to a host secret (%s): file.read fails" % name, e is not None and r is None
              and "TOPSECRET" not in json.dumps(e), (r, e))
    r, e = c.try_call("file.readdir", {"session": s, "path": "dirlink"})
    check("symlink to a host dir: file.readdir fails", e is not None, r)
    c.try_call("file.write", {"session": s, "path": "abs", "data": "OVERWRITTEN", "parents": True})
    c.try_call("file.write", {"session": s, "path": "dirlink/new", "data": "x", "parents": True})
    with open(secret) as f:
        check("symlink to a host secret: file.write does not reach it", f.read() == "TOPSECRET")
    check("symlink to a host dir: file.write creates nothing there", os.listdir(sec_dir) == ["secret"], os.listdir(sec_dir))
    c.try_call("file.rm", {"session": s, "path": "dirlink/secret"})
    check("symlink to a host dir: file.rm does not reach it", os.path.exists(secret))
    c.try_call("file.rm", {"session": s, "path": "dirlink", "recursive": True})
    check("file.rm recursive of a symlinked dir removes only the link", os.path.exists(secret))
    x = c.call("exec", {"session": s, "command": "cat abs rel dirlink/secret 2>&1; true"})
    check("symlink to a host secret: exec cannot read it either", "TOPSECRET" not in x["stdout"], x)
    for name in ("mem", "fd0", "initenv"):
        r, e = c.try_call("file.read", {"session": s, "path": name})
        check("symlink into /proc (%s): file.read refused" % name, e is not None, (r, e))
    r, e = c.try_call("file.write", {"session": s, "path": "mem", "data": "x"})
    check("symlink to /proc/self/mem: file.write refused", e is not None, (r, e))
    r, e = c.try_call("file.read", {"session": s, "path": "/proc/self/environ"})
    check("file.read /proc/self/environ (init's own) refused", e is not None and e["code"] == "EACCES", (r, e))
    c.call("session.destroy", {"session": s})
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(sec_dir, ignore_errors=True)


MALFORMED = [
    (b"{", "parse_error"),
    (b"not json at all", "parse_error"),
    (b"[1,2,3]", "invalid_request"),
    (b"\"just a string\"", "invalid_request"),
    (b"42", "invalid_request"),
    (b"null", "invalid_request"),
    (b"{}", "invalid_request"),
    (b'{"id":1}', "invalid_request"),
    (b'{"method":"server.info"}', "invalid_request"),
    (b'{"id":1.5,"method":"server.info"}', "invalid_request"),
    (b'{"id":true,"method":"server.info"}', "invalid_request"),
    (b'{"id":{"a":1},"method":"server.info"}', "invalid_request"),
    (b'{"id":"","method":"server.info"}', "invalid_request"),
    (b'{"id":"' + b"x" * 200 + b'","method":"server.info"}', "invalid_request"),
    (b'{"id":99999999999999999999,"method":"server.info"}', "parse_error"),
    (b'{"id":1,"method":5}', "invalid_request"),
    (b'{"id":1,"method":"server.info","params":[1]}', "invalid_request"),
    (b'{"id":1,"method":"server.info","params":"x"}', "invalid_request"),
    (b'{"id":1,"method":"no.such.method"}', "method_not_found"),
    (b'{"id":1,"method":""}', "method_not_found"),
    (b'{"id":1,"id":2,"method":"server.info"}', "parse_error"),
    (b'{"id":1,"method":"server.info"} trailing', "parse_error"),
    (b'{"id":1,"method":"server.info\\u0000x"}', "method_not_found"),
    (b'{"id":1,"method":"file.read","params":{"session":"s-0","path":"a\\u0000b"}}', "not_found"),
    (b'{"id":1,"method":"exec","params":{"session":"s\\u0000","argv":["x"]}}', "invalid_params"),
    (b'{"id":"\xff\xfe","method":"server.info"}', "parse_error"),
    (b"\x00\x01\x02\x03", "parse_error"),
    (b"[" * 100000, "parse_error"),
    (b'{"a":' * 5000, "parse_error"),
    (b'{"id":1,"method":"session.create","params":{"limits":{"memory":[[[[]]]]}}}', "invalid_params"),
    (b'{"id":1,"method":"session.info","params":{"session":5}}', "invalid_params"),
    (b'{"id":1,"method":"session.info","params":{"session":"' + b"s" * 100 + b'"}}', "invalid_params"),
    (b'{"id":1,"method":"exec","params":{"session":null}}', "invalid_params"),
    (b'{"id":1,"method":"file.read","params":{"session":"s-0","path":"a"}}', "not_found"),
    (b'\xef\xbb\xbf{"id":1,"method":"server.info"}', "parse_error"),
]


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


@test
def t_other_uid():
    """A session belongs to the uid that created it: another uid gets
    not_found, for real (setpriv to other users)."""
    if not ROOT or not user_exists(TUSER):
        print("ok - other uid # SKIP needs root and user %s" % TUSER)
        return
    # 1. Root's server: the socket is 0600, fbtest cannot even connect.
    srv = Server()
    try:
        r = subprocess.run(["setpriv", "--reuid=" + TUSER, "--regid=" + TUSER, "--init-groups", PY, "-c",
                            "import socket,sys; s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1])", srv.sock],
                           capture_output=True, text=True)
        check("socket is 0600: another user cannot connect", r.returncode != 0 and "Permission denied" in r.stderr,
              r.stderr[-200:])
        st = os.stat(srv.sock)
        check("socket mode 0600", (st.st_mode & 0o777) == 0o600, oct(st.st_mode))
    finally:
        srv.cleanup()
    # 2. fbtest's server; fbtest creates a session; root (who can connect) and
    # nobody (socket opened up on purpose) must not see or touch it.
    srv = Server(user=TUSER)
    try:
        code = ("import sys,json; sys.path.insert(0,%r); import fbc; c=fbc.Conn(sys.argv[1]); "
                "s=c.call('session.create')['session']; c.call('file.write',{'session':s,'path':'f','data':'mine'}); "
                "print(s)") % HERE
        r = subprocess.run(["setpriv", "--reuid=" + TUSER, "--regid=" + TUSER, "--init-groups", PY, "-c", code, srv.sock],
                           capture_output=True, text=True)
        s = r.stdout.strip()
        if not check("another uid: %s creates a session" % TUSER, s.startswith("s-"), r.stderr[-300:]):
            return
        c = srv.conn()  # root
        check("another uid: session.list does not show it", all(x["session"] != s for x in c.call("session.list")["sessions"]))
        for m, p in (("session.info", {}), ("exec", {"argv": ["true"]}), ("file.read", {"path": "f"}),
                     ("file.write", {"path": "f", "data": "x"}), ("exec.kill", {"execId": "x1"}),
                     ("session.destroy", {})):
            p["session"] = s
            _, e = c.try_call(m, p)
            check("another uid: %s -> not_found" % m, e and e["code"] == "not_found", e)
        check("another uid: server.info counts only the caller's sessions", c.call("server.info")["sessions"] == 0)
        os.chmod(srv.sock, 0o666)
        code2 = ("import sys,json; sys.path.insert(0,%r); import fbc; c=fbc.Conn(sys.argv[1]); s=sys.argv[2]; "
                 "out=[c.try_call('file.read',{'session':s,'path':'f'})[1]['code'], "
                 "c.try_call('session.create',{'workspace':'/etc'})[1]['code'], "
                 "c.try_call('session.create',{'options':['--bind','/etc:/x']})[1]['code'], "
                 "c.try_call('session.create',{'caller':{'path':'/x/bin'}})[1]['code'], "
                 "len(c.call('session.list')['sessions'])]; print(json.dumps(out))") % HERE
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-c", code2, srv.sock, s],
                           capture_output=True, text=True)
        try:
            out = json.loads(r.stdout)
        except ValueError:
            out = r.stderr[-300:]
        check("a third uid: not_found, host paths and caller permission_denied, empty list",
              out == ["not_found", "permission_denied", "permission_denied", "permission_denied", 0], out)
        r = subprocess.run(["setpriv", "--reuid=" + TUSER, "--regid=" + TUSER, "--init-groups", PY, "-c",
                            ("import sys; sys.path.insert(0,%r); import fbc; c=fbc.Conn(sys.argv[1]); "
                             "print(c.call('file.read',{'session':sys.argv[2],'path':'f'})['data'])") % HERE, srv.sock, s],
                           capture_output=True, text=True)
        check("the owner still has it, untouched", r.stdout.strip() == "mine", r.stderr[-200:])
    finally:
        srv.cleanup()


@test
def t_foreign_rules():
    """Other uids (a socket opened to them) get only the profiles and options
    its owner allows (serve --foreign-*): by default never trusted, the host
    network, or options that act on the host."""
    if not ROOT or not user_exists(TUSER):
        print("ok - foreign rules # SKIP needs root and user %s" % TUSER)
        return

    def as_nobody(srv, calls):
        code = ("import sys,json; sys.path.insert(0,%r); import fbc; c=fbc.Conn(sys.argv[1]); out=[]\n"
                "for p in json.loads(sys.argv[2]):\n"
                "    r, e = c.try_call('session.create', p)\n"
                "    out.append(e['code'] if e else 'ok')\n"
                "    if r: c.call('session.destroy', {'session': r['session']})\n"
                "out.append(c.call('server.info')['profiles'])\n"
                "print(json.dumps(out))") % HERE
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", PY, "-c", code,
                            srv.sock, json.dumps(calls)], capture_output=True, text=True)
        try:
            return json.loads(r.stdout)
        except ValueError:
            return r.stderr[-300:]

    srv = Server(user=TUSER)
    try:
        os.chmod(srv.sock, 0o666)
        calls = [{"profile": "trusted"}, {"network": "host"}, {"options": ["--profile", "trusted"]},
                 {"options": ["--net", "host"]}, {"options": ["--env-pass", "HOME"]},
                 {"options": ["--egress-resolve", "x.test=127.0.0.1"]}, {"profile": "/etc/x.json"},
                 {"workspace": "/tmp"},
                 {"profile": "strict", "limits": {"memory": "128M"},
                  "options": ["--hostname", "guest", "--mem=128M"]}]
        out = as_nobody(srv, calls)
        check("another uid by default: no trusted, no host network, no host-side options; limits and hostname are fine",
              out == ["permission_denied"] * 8 + ["ok", ["strict", "standard"]], out)
    finally:
        srv.cleanup()
    srv = Server(args=("--foreign-profiles", "strict,trusted", "--foreign-options", "mem,net",
                       "--foreign-net-host"), user=TUSER)
    try:
        os.chmod(srv.sock, 0o666)
        out = as_nobody(srv, [{"profile": "trusted", "options": ["--mem", "128M"]},
                              {"profile": "trusted", "network": "host"}, {"profile": "standard"},
                              {"options": ["--hostname", "x"]}, {"limits": {"pids": 64}}])
        check("another uid: what --foreign-profiles, --foreign-options and --foreign-net-host allow, only that",
              out == ["ok", "ok", "permission_denied", "permission_denied", "permission_denied",
                      ["strict", "trusted"]], out)
    finally:
        srv.cleanup()


@test
def t_network(srv):
    """A session with an allowlist: the egress relay runs in the server's
    loop; an allowed name works, anything else does not."""
    if not shutil.which("curl"):
        print("ok - network allowlist # SKIP no curl")
        return
    d = tempfile.mkdtemp(prefix="fbweb.")
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("served-from-host\n")
    web = subprocess.Popen([sys.executable, "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=d,
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    try:
        line = web.stdout.readline()  # "Serving HTTP on 127.0.0.1 port N ..."
        port = int(line.split(" port ")[1].split()[0])
        c = srv.conn()
        r = c.call("session.create", {"allowNet": ["example.test:%d" % port],
                                      "options": ["--egress-resolve", "example.test=127.0.0.1"]})
        check("network: allowNet gives network allow", r["network"] == "allow" and not r["pooled"], r)
        s = r["session"]
        x = c.call("exec", {"session": s, "timeoutMs": 30000, "command":
                            "curl -s -m 10 http://example.test:%d/; curl -s -m 5 http://127.0.0.1:%d/ || echo no-host-loopback; "
                            "curl -s -m 5 http://other.test/ || echo denied" % (port, port)})
        check("network: the allowed name is reachable through the relay", "served-from-host" in x["stdout"], x)
        check("network: the host's loopback and other names are not", "no-host-loopback" in x["stdout"]
              and "denied" in x["stdout"], x)
        # Sessions built while the egress resolver threads run getaddrinfo():
        # a lock of theirs copied into a new session must not hang it.
        stop = []

        rounds = []

        def lookups():
            w = srv.conn()
            while not stop:
                rounds.append(1)
                try:
                    w.call("exec", {"session": s, "timeoutMs": 60000, "command":
                                    "for i in 1 2 3 4 5 6 7 8; do curl -s -m 2 http://localhost/ >/dev/null; "
                                    "curl -s -m 2 http://x$i.example.com/ >/dev/null; done; true"})
                except Exception:  # noqa: BLE001
                    return
        r2 = c.call("session.create", {"allowNet": ["localhost", "*.example.com"]})
        s = r2["session"]
        t = threading.Thread(target=lookups, daemon=True)
        t.start()
        c2 = srv.conn()
        c2.s.settimeout(30)
        bad = []
        wait_for(lambda: len(rounds) >= 2, 10)
        try:
            for k in range(6):
                for i in range(12):
                    c2.send("session.create", {"pool": False}, id="n%d-%d" % (k, i))
                ids = [c2.wait("n%d-%d" % (k, i))[1]["result"]["session"] for i in range(12)]
                for x2 in ids:
                    if c2.call("exec", {"session": x2, "command": "echo ok"})["stdout"] != "ok\n":
                        bad.append(x2)
                    c2.call("session.destroy", {"session": x2})
        except Exception as ex:  # noqa: BLE001
            bad.append(repr(ex))
        stop.append(1)
        check("network: %d sessions created while resolver threads ran (%d rounds) all work"
              % (72, len(rounds)), not bad, bad[:3])
        c.call("session.destroy", {"session": s})
    finally:
        web.terminate()
        web.wait(10)
        shutil.rmtree(d, ignore_errors=True)


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
        pid = srv.pid
        rc = srv.stop(signal.SIGTERM)
        check("SIGTERM: exit 0", rc == 0, rc)
        _, r = c.wait(i)
        check("SIGTERM: a running exec is answered", "error" in r, r)
        check("SIGTERM: socket removed", not os.path.exists(srv.sock))
        check("SIGTERM: no session init left", wait_for(lambda: not any(os.path.exists("/proc/%d" % p) for p in inits), 10), inits)
        check("SIGTERM: no cgroup left", not cgroups_of(pid), cgroups_of(pid))
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
        pid = srv.pid
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
            check("SIGKILL: stale cgroups swept", not cgroups_of(pid), cgroups_of(pid))
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


def run_requests(c, s, n):
    for i in range(n):
        k = i % 10
        if k == 0:
            c.call("exec", {"session": s, "argv": ["true"]})
        elif k == 1:
            c.call("file.write", {"session": s, "path": "m.txt", "data": "x" * 4096})
        elif k == 2:
            c.call("file.read", {"session": s, "path": "m.txt"})
        elif k == 3:
            c.try_call("file.read", {"session": s, "path": "missing"})
        elif k == 4:
            c.send_raw(b'{"id":"bad","method":\n')
            c.recv()
        elif k == 5:
            c.call("session.info", {"session": s})
        elif k == 6:
            c.call("file.readdir", {"session": s, "path": "/"})
        elif k == 7:
            c.try_call("nope.method", {})
        else:
            c.call("file.stat", {"session": s, "path": "m.txt"})


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


# ------------------------------------------------- fairness and limits (issue 12.4)

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


@test
def t_workspace_off_loop():
    """A workspace.diff of 150,000 new files runs beside the event loop:
    another client is answered meanwhile, progress events come while it
    runs, and workspace.cancel stops a commit before it changes the host."""
    srv = Server(["--max-message", "64M"])
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    try:
        c = srv.conn()
        s = c.call("session.create", {"workspace": ws, "cow": True, "limits": {"disk": "2G"}})["session"]
        x = c.call("exec", {"session": s, "timeoutMs": 600000, "command":
                            "mkdir -p /workspace/t && cd /workspace/t && "
                            "for a in 0 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do mkdir $a; (cd $a && seq 10000 | xargs touch); done"})
        if not check("workspace off the loop: 150,000 files made", x["exitCode"] == 0, x):
            return
        other = srv.conn()
        d = c.send("workspace.diff", {"session": s, "diffs": False})
        sent_at = time.monotonic()
        got = {}

        def diff_reply():
            got["diff"] = c.wait(d)
            got["diff_at"] = time.monotonic()
        t = threading.Thread(target=diff_reply)
        t.start()
        info = other.call("server.info")
        info_at = time.monotonic()
        t.join()
        evs, r = got["diff"]
        progress = [e for e in evs if e.get("event") == "progress"]
        check("...the diff is answered (%d changes, %d progress events)" %
              (len(r.get("result", {}).get("changes", [])), len(progress)),
              "result" in r and len(r["result"]["changes"]) >= 150000, str(r)[:200])
        check("...progress events say the phase and count items",
              all(e["method"] == "workspace.diff" and e["phase"] in ("scan", "diff") and e["done"] >= 0
                  for e in progress) and any(e["done"] > 0 for e in progress), progress[:2])
        check("...another client was served while the diff ran",
              info.get("protocol") == 1 and (info_at < got["diff_at"] or got["diff_at"] - sent_at < 0.5),
              "server.info answered %.2fs after the diff" % (info_at - got["diff_at"]))
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


# ------------------------------------------------- memory budgets (issue 12.2, 12.3)


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


def main():
    global ONLY
    args = sys.argv[1:]
    if "-k" in args:
        ONLY = args[args.index("-k") + 1]
    if not os.path.exists(FB):
        print("not ok - server tests: no fluebox binary at %s" % FB)
        return 1
    shared = None
    try:
        for fn in TESTS:
            if ONLY and ONLY not in fn.__name__:
                continue
            try:
                if fn.__code__.co_argcount == 1 and fn.__code__.co_varnames[0] == "srv":
                    if shared is None or shared.p.poll() is not None:
                        shared = Server()
                    fn(shared)
                else:
                    fn()
            except Exception as e:  # noqa: BLE001
                notok(fn.__name__, "exception: %r %s" % (e, traceback.format_exc().splitlines()[-3:]))
    finally:
        if shared:
            if shared.p.poll() is not None:
                notok("shared server", "it exited: " + shared.stderr()[-300:])
            shared.cleanup()
    print("# server tests: %d passed, %d failed" % (RESULTS["pass"], RESULTS["fail"]))
    print("# end of suite")  # ran to its end (tests/tap.sh)
    return 1 if RESULTS["fail"] else 0


if __name__ == "__main__":
    sys.exit(main())
