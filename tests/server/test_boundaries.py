#!/usr/bin/env python3
"""test_boundaries.py — what a server lets others do: a session belongs to
the uid that made it (another uid cannot connect, see or touch it), the
--foreign-* rules for other uids, and a session's network allowlist
(loopback only: the relay reaches a 127.0.0.1 server by an allowed name,
nothing else). Run by test_server.py; alone:
python3 tests/server/test_boundaries.py."""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading

from srvtest import main, HERE, ROOT, TUSER, PY, check, user_exists, wait_for, Server, test


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
    # -u: its "Serving HTTP ... port N" line must reach the pipe now, not when
    # a buffer fills (it waited for ever where PYTHONUNBUFFERED was not set).
    web = subprocess.Popen([sys.executable, "-u", "-m", "http.server", "0", "--bind", "127.0.0.1"], cwd=d,
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


if __name__ == "__main__":
    sys.exit(main())
