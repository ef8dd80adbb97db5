#!/usr/bin/env python3
"""test_exec.py — exec: collected and streamed output, stdin, encodings,
timeouts, signals and exit codes, bad parameters, exec.kill from this and
another connection, and the per-session and per-uid limits on execs and
sessions. Run by test_server.py; alone: python3 tests/server/test_exec.py."""
import base64
import json
import sys

from srvtest import main, check, wait_for, Server, test, ROOT


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
    check("exec killed by a signal, not by the OOM killer: oomKilled false", r.get("oomKilled") is False, r)
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


@test
def t_exec_oom(srv):
    """An exec the OOM killer ends says so (oomKilled), not only 137."""
    if not ROOT:
        print("ok - exec oomKilled # SKIP needs root (a memory cgroup for the session)")
        return
    c = srv.conn()
    s = c.call("session.create", {"limits": {"memory": "64M", "disk": "16M"}})["session"]
    r = c.call("exec", {"session": s, "argv": ["python3", "-c", "b = [bytearray(1 << 20) for _ in range(512)]"]})
    check("exec OOM-killed: 137, SIGKILL, oomKilled true",
          r["exitCode"] == 137 and r["signal"] == "SIGKILL" and r.get("oomKilled") is True, str(r)[:300])
    r = c.call("exec", {"session": s, "command": "echo still here"})
    check("the session serves the next exec after an OOM kill, oomKilled false",
          r["stdout"] == "still here\n" and r.get("oomKilled") is False, r)
    c.call("session.destroy", {"session": s})


if __name__ == "__main__":
    sys.exit(main())
