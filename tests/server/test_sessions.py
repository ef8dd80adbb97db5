#!/usr/bin/env python3
"""test_sessions.py — sessions through the wire protocol: server.info,
session.create/list/info/destroy and every way their parameters can be
wrong (limits, options, env, caller), and a host workspace mounted into a
session. Run by test_server.py; alone: python3 tests/server/test_sessions.py."""
import json
import os
import shutil
import sys
import tempfile

from srvtest import main, check, test


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


if __name__ == "__main__":
    sys.exit(main())
