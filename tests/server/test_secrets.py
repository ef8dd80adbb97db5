#!/usr/bin/env python3
"""test_secrets.py — credentials and run-time rules of sessions (issue 24,
docs/secrets.md "Sessions", protocol.md 4.1 and 4.20): a session's secret is
put in by the relay at its own host and refused anywhere else, checked on
the receiving server's side; session.grant of a name that was refused, and
its expiry; session.revoke; a grant by another uid; bad specs; the value
nowhere in what the server writes. Loopback only: a local HTTPS server
(tests/server/https_echo.py, a test CA made now with the openssl CLI) under
names mapped with --egress-resolve. Run by test_server.py; alone:
python3 tests/server/test_secrets.py."""
import base64
import os
import shutil
import subprocess
import sys
import tempfile

from srvtest import main, HERE, ROOT, TUSER, PY, check, user_exists, wait_for, Server, session_inits, test
import https_echo

REAL = "ghp_real-value-4f9d2c7be1a0"   # what the relay puts in; never inside


class Web:
    """The HTTPS echo server for api.test and other.test (and the CA)."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="fbsec.")
        os.chmod(self.dir, 0o755)
        self.ca = https_echo.make_ca(self.dir, ["api.test", "other.test", "late.test"])
        os.chmod(self.ca["ca"], 0o644)
        self.srv = https_echo.EchoServer(self.dir, self.ca)
        self.port = self.srv.port

    def params(self, **kw):
        """session.create params: these names allowed, mapped to the server."""
        p = {"allowNet": ["api.test:%d" % self.port, "other.test:%d" % self.port],
             "upstreamCa": self.ca["ca"],
             "options": ["--ro-bind", self.dir + ":/testca", "--egress-resolve", "api.test=127.0.0.1", "--egress-resolve",
                         "other.test=127.0.0.1", "--egress-resolve", "late.test=127.0.0.1"]}
        p.update(kw)
        return p

    def host(self, name):
        return "%s:%d" % (name, self.port)

    def url(self, name, path="/"):
        return "https://%s:%d%s" % (name, self.port, path)

    def got(self, pred):
        return [r for r in self.srv.requests() if pred(r)]

    def close(self):
        self.srv.stop()
        shutil.rmtree(self.dir, ignore_errors=True)


E2E = ("--cacert", "/testca/ca.pem")  # a host the relay passes end to end: the test CA


def curl(c, s, url, *args):
    """curl inside the session: (http status or 0, stdout+stderr). An
    inspected host's certificate comes from the session's CA, which its
    trust store has; give E2E for the others."""
    x = c.call("exec", {"session": s, "timeoutMs": 30000, "argv":
                        ["curl", "-sS", "-m", "10", "-o", "/dev/stderr", "-w", "%{http_code}"] + list(args) + [url]})
    try:
        code = int(x["stdout"].strip() or "0")
    except ValueError:
        code = 0
    return code, x["stderr"]


def needs_tools():
    missing = [t for t in ("curl", "openssl") if not shutil.which(t)]
    if missing:
        print("ok - session secrets # SKIP missing: %s" % " ".join(missing))
        return False
    return True


@test
def t_secret_injected(srv):
    """The stand-in inside, the real value at the secret's host only."""
    if not needs_tools():
        return
    w = Web()
    try:
        c = srv.conn()
        # other.test has an HTTP rule, so the relay reads its requests too;
        # late.test is passed end to end (TLS the relay cannot read).
        p = w.params(secrets=[{"name": "GH_TOKEN", "hosts": [w.host("api.test")], "value": REAL}],
                     allowHttp=["* " + w.host("other.test")])
        p["allowNet"].append(w.host("late.test"))
        r = c.call("session.create", p)
        s = r["session"]
        check("secrets: info lists the secret's name and hosts, no value",
              r.get("secrets") == [{"name": "GH_TOKEN", "hosts": [w.host("api.test")]}] and REAL not in str(r), r.get("secrets"))
        x = c.call("exec", {"session": s, "command": "printf %s \"$GH_TOKEN\"; echo; env; cat /proc/1/environ 2>&1"})
        standin = x["stdout"].split("\n")[0]
        check("secrets: inside, the variable holds a stand-in, and the value is in no environment",
              standin.startswith("fluebox-standin-") and REAL not in x["stdout"], x["stdout"][:300])
        code, out = curl(c, s, w.url("api.test", "/user"), "-H", "Authorization: Bearer " + standin)
        got = w.got(lambda q: q["path"] == "/user")
        check("secrets: the secret's host receives the real value (Bearer)", code == 200 and got and
              got[-1]["headers"].get("Authorization") == "Bearer " + REAL, (code, out[-300:], got[-1:]))
        code, out = curl(c, s, w.url("api.test", "/basic"), "-u", "x-access-token:" + standin)
        got = w.got(lambda q: q["path"] == "/basic")
        want = "Basic " + base64.b64encode(("x-access-token:" + REAL).encode()).decode()
        check("secrets: ... and inside Authorization: Basic", code == 200 and got and
              got[-1]["headers"].get("Authorization") == want, (code, got[-1:]))
        code, out = curl(c, s, w.url("other.test", "/leak"), "-H", "Authorization: Bearer " + standin)
        check("secrets: the stand-in to another inspected host is refused (403) and never arrives",
              code == 403 and not w.got(lambda q: q["path"] == "/leak"), (code, out[-300:]))
        code, out = curl(c, s, w.url("other.test", "/plain"))
        check("secrets: that host still works without it", code == 200, (code, out[-300:]))
        code, out = curl(c, s, w.url("late.test", "/e2e"), "-H", "Authorization: Bearer " + standin, *E2E)
        got = w.got(lambda q: q["path"] == "/e2e")
        check("secrets: a host passed end to end gets the useless stand-in, never the value",
              code == 200 and got and got[-1]["headers"].get("Authorization") == "Bearer " + standin,
              (code, out[-300:], got[-1:]))
        f = c.call("session.fork", {"session": s})["session"]
        st2 = c.call("exec", {"session": f, "command": "printf %s \"$GH_TOKEN\""})["stdout"]
        code, out = curl(c, f, w.url("api.test", "/forked"), "-H", "Authorization: Bearer " + st2)
        got = w.got(lambda q: q["path"] == "/forked")
        check("secrets: a fork has its own stand-in and the same value at the same host",
              st2.startswith("fluebox-standin-") and st2 != standin and code == 200 and got
              and got[-1]["headers"].get("Authorization") == "Bearer " + REAL, (st2, code, got[-1:]))
        c.call("session.revoke", {"session": s, "kind": "secret", "spec": "GH_TOKEN"})
        # Revoked, api.test has nothing left to inspect: its TLS goes end to
        # end again (so try with either trust), and only the stand-in can
        # arrive.
        codes = [curl(c, s, w.url("api.test", "/after-revoke"), "-H", "Authorization: Bearer " + standin, *t)[0]
                 for t in ((), E2E)]
        got = w.got(lambda q: q["path"] == "/after-revoke")
        check("secrets: revoked, the value is no longer put in (a request arrives with the stand-in only)",
              got and all(q["headers"].get("Authorization") == "Bearer " + standin for q in got), (codes, got[-1:]))
        f2 = c.call("session.fork", {"session": s})["session"]
        x = c.call("exec", {"session": f2, "command": "printf %s \"${GH_TOKEN-unset}\""})
        check("secrets: a fork made after the revoke does not get it back", x["stdout"] == "unset", x)
        for x in (f, f2, s):
            c.call("session.destroy", {"session": x})
        check("secrets: the value is in nothing the server wrote", REAL not in srv.stderr())
    finally:
        w.close()


def mem_regions_with(pid, needle):
    """The mappings of pid whose bytes contain needle (root: /proc/PID/mem)."""
    hits = []
    with open("/proc/%d/maps" % pid) as f:
        maps = f.read().splitlines()
    with open("/proc/%d/mem" % pid, "rb", 0) as mem:
        for line in maps:
            parts = line.split()
            a, b = (int(x, 16) for x in parts[0].split("-"))
            if "r" not in parts[1] or b - a > (1 << 30):
                continue
            try:
                mem.seek(a)
                if needle in mem.read(b - a):
                    hits.append(parts[5] if len(parts) > 5 else "anonymous")
            except (OSError, ValueError, OverflowError):
                continue
    return hits


@test
def t_value_only_in_its_keeping(srv):
    """The real value is in the server's memory only where the engine keeps
    it (its own locked, wipe-on-fork pages): not in the heap or the stack
    (the request's JSON, its line, the read buffer are wiped), and not in any
    session's init, which is a clone of the server made while the values of
    other sessions were in it."""
    if not ROOT:
        print("ok - secret values in memory # SKIP needs root (/proc/PID/mem)")
        return
    c = srv.conn()
    v1, v2 = "zq-created-" + REAL, "zq-granted-" + REAL
    a = c.call("session.create", {"allowNet": ["a.test"], "secrets": [{"name": "T1", "hosts": ["a.test"], "value": v1}]})
    b = c.call("session.create", {"allowNet": ["a.test"]})
    c.call("session.grant", {"session": b["session"], "kind": "secret", "spec": "T2:a.test", "value": v2})
    d = c.call("session.create", {"allowNet": ["a.test"]})
    inits = session_inits(srv.pid)
    for v in (v1, v2):
        where = mem_regions_with(srv.pid, v.encode())
        check("memory: %s value: in the server only in anonymous pages of its own (%s)" % (v[3:10], where),
              where and all(w == "anonymous" for w in where), where)
        bad = [(i, mem_regions_with(i, v.encode())) for i in inits]
        check("memory: %s value: in none of the %d session inits" % (v[3:10], len(inits)),
              inits and not any(h for _, h in bad), bad)
    for x in (a, b, d):
        c.call("session.destroy", {"session": x["session"]})


@test
def t_grant_expiry_revoke(srv):
    """A name the allowlist refused, granted for a short time: it works,
    then it does not (polled, never slept on); revoke takes one back."""
    if not needs_tools():
        return
    w = Web()
    try:
        c = srv.conn()
        s = c.call("session.create", w.params())["session"]
        late = w.url("late.test", "/late")
        code, _ = curl(c, s, late, *E2E)
        check("grant: before, the name is refused", code == 0, code)
        r = c.call("session.grant", {"session": s, "kind": "allowNet", "spec": "late.test:%d" % w.port,
                                     "ttlMs": 3000})
        check("grant: the answer says what and until when",
              r.get("kind") == "allowNet" and r.get("ttlMs") == 3000 and isinstance(r.get("expiresAt"), int), r)
        code, out = curl(c, s, late, *E2E)
        check("grant: the granted name is reachable", code == 200, (code, out[-300:]))
        gone = wait_for(lambda: curl(c, s, late, *E2E)[0] == 0, timeout=30, step=0.3)
        check("grant: after its ttl the name is refused again", gone)
        log = srv.stderr()
        check("grant: the server's log has the grant", "session.grant" in log and "late.test" in log, log[-400:])
        c.call("session.grant", {"session": s, "kind": "allowNet", "spec": "late.test:%d" % w.port})
        code, _ = curl(c, s, late, *E2E)
        check("revoke: granted without ttl, reachable", code == 200, code)
        c.call("session.revoke", {"session": s, "kind": "allowNet", "spec": "late.test:%d" % w.port})
        code, _ = curl(c, s, late, *E2E)
        check("revoke: after session.revoke, refused", code == 0, code)
        c.call("session.destroy", {"session": s})
    finally:
        w.close()


@test
def t_grant_secret(srv):
    """A secret granted to a running session: its stand-in comes back in
    the answer, and the relay puts the value in at its host only."""
    if not needs_tools():
        return
    w = Web()
    try:
        c = srv.conn()
        s = c.call("session.create", w.params())["session"]
        r = c.call("session.grant", {"session": s, "kind": "secret", "spec": "LATE_TOKEN:" + w.host("api.test"),
                                     "value": REAL})
        standin = r.get("standin") or ""
        check("grant secret: a stand-in comes back, no value", standin.startswith("fluebox-standin-")
              and REAL not in str(r), r)
        code, out = curl(c, s, w.url("api.test", "/granted"), "-H", "X-Api-Key: " + standin)
        got = w.got(lambda q: q["path"] == "/granted")
        check("grant secret: its host receives the value", code == 200 and got and
              got[-1]["headers"].get("X-Api-Key") == REAL, (code, out[-300:], got[-1:]))
        c.call("session.grant", {"session": s, "kind": "allowHttp", "spec": "GET " + w.host("other.test")})
        code, _ = curl(c, s, w.url("other.test", "/granted-leak"), "-H", "X-Api-Key: " + standin)
        check("grant secret: another inspected host (a granted HTTP rule) refuses it", code == 403 and not w.got(lambda q: q["path"] == "/granted-leak"), code)
        c.call("session.revoke", {"session": s, "kind": "secret", "spec": "LATE_TOKEN"})
        code, _ = curl(c, s, w.url("api.test", "/revoked"), "-H", "X-Api-Key: " + standin)
        got = w.got(lambda q: q["path"] == "/revoked")
        check("revoke secret: the value is no longer put in", not got or got[-1]["headers"].get("X-Api-Key") != REAL,
              (code, got[-1:]))
        c.call("session.destroy", {"session": s})
        check("grant secret: the value is in nothing the server wrote", REAL not in srv.stderr())
    finally:
        w.close()


@test
def t_grant_errors(srv):
    """Bad grants get clear errors naming the parameter; a session without a
    relay cannot be granted anything."""
    c = srv.conn()
    s = c.call("session.create", {"allowNet": ["api.test"]})["session"]
    bad = [
        ({}, "invalid_params", "kind"),
        ({"kind": "nope", "spec": "x"}, "invalid_params", "kind"),
        ({"kind": "allowNet"}, "invalid_params", "spec"),
        ({"kind": "allowNet", "spec": "bad name!"}, "invalid_params", "spec"),
        ({"kind": "allowHttp", "spec": "FETCH api.test"}, "invalid_params", "spec"),
        ({"kind": "allowHttp", "spec": "GET"}, "invalid_params", "spec"),
        ({"kind": "secret", "spec": "NO_HOSTS"}, "invalid_params", "spec"),
        ({"kind": "secret", "spec": "NEW_ONE:api.test"}, "invalid_params", "spec"),  # no value for a new name
        ({"kind": "secret", "spec": "T:api.test", "value": ""}, "invalid_params", "value"),
        ({"kind": "allowNet", "spec": "x.test", "value": "v"}, "invalid_params", "value"),
        ({"kind": "allowNet", "spec": "x.test", "ttlMs": -1}, "invalid_params", "ttlMs"),
        ({"kind": "allowNet", "spec": "x.test", "ttlMs": "1s"}, "invalid_params", "ttlMs"),
    ]
    out = []
    for p, code, param in bad:
        p = dict(p, session=s)
        _, e = c.try_call("session.grant", p)
        if not e or e["code"] != code or e.get("param") != param or "\n" in e.get("message", "x\n"):
            out.append((p, e))
    check("grant errors: each bad spec gets invalid_params naming the parameter, one line", not out, out[:3])
    _, e = c.try_call("session.revoke", {"session": s, "kind": "allowNet", "spec": "never.test"})
    check("revoke of what was never granted: a clear error", e and e["code"] in ("invalid_params", "not_found")
          and "never.test" in e["message"], e)
    n = c.call("session.create", {})["session"]
    _, e = c.try_call("session.grant", {"session": n, "kind": "allowNet", "spec": "api.test"})
    check("grant to a session without a relay (network none): not_supported", e and e["code"] == "not_supported", e)
    _, e = c.try_call("session.grant", {"session": "s-0000000000000000", "kind": "allowNet", "spec": "api.test"})
    check("grant to no such session: not_found", e and e["code"] == "not_found", e)
    _, e = c.try_call("session.create", {"allowNet": ["api.test"], "secrets": [{"name": "T", "hosts": ["api.test"]}]})
    check("create: a secret without a value: invalid_params naming it", e and e["code"] == "invalid_params"
          and e.get("param") == "secrets[0]" and "T" in e["message"], e)
    _, e = c.try_call("session.create", {"allowNet": ["api.test"], "secrets": [{"name": "T", "hosts": ["b.test"], "value": REAL}]})
    check("create: a secret's host that is not allowed: invalid_params, no value in the message",
          e and e["code"] == "invalid_params" and e.get("param") == "secrets" and REAL not in str(e), e)
    _, e = c.try_call("session.create", {"allowNet": ["api.test"], "options": ["--secret", "HOME:api.test"]})
    check("create: --secret in options (the server's environment) is refused", e and e["code"] == "invalid_params"
          and e.get("param") == "options", e)
    _, e = c.try_call("session.create", {"allowNet": ["api.test"], "upstreamCa": "/nonexistent/ca.pem"})
    check("create: an unreadable upstreamCa: invalid_params", e and e["code"] == "invalid_params"
          and e.get("param") == "upstreamCa", e)
    for x in (s, n):
        c.call("session.destroy", {"session": x})


@test
def t_grant_other_uid():
    """Only the session's owner may grant: another uid gets not_found (its
    sessions do not exist for it), and nothing inside the session reaches
    the server's socket at all."""
    if not ROOT or not user_exists(TUSER):
        print("ok - grant by another uid # SKIP needs root and user %s" % TUSER)
        return
    srv = Server()
    try:
        c = srv.conn()
        s = c.call("session.create", {"allowNet": ["api.test"]})["session"]
        os.chmod(srv.sock, 0o666)
        code = ("import sys,json; sys.path.insert(0,%r); import fbc; c=fbc.Conn(sys.argv[1]); "
                "print(json.dumps([c.try_call(m,{'session':sys.argv[2],'kind':'allowNet','spec':'evil.test'})[1]['code'] "
                "for m in ('session.grant','session.revoke')]))") % HERE
        r = subprocess.run(["setpriv", "--reuid=" + TUSER, "--regid=" + TUSER, "--init-groups", PY, "-c", code,
                            srv.sock, s], capture_output=True, text=True)
        check("grant by another uid: not_found for grant and revoke", r.stdout.strip() == '["not_found", "not_found"]',
              r.stdout + r.stderr[-300:])
        x = c.call("exec", {"session": s, "argv": ["sh", "-c", "test -e '%s' && echo VISIBLE || echo absent" % srv.sock]})
        check("inside the session the server's socket does not exist", x["stdout"].strip() == "absent", x)
        check("the server logged no grant", "session.grant" not in srv.stderr())
    finally:
        srv.cleanup()


if __name__ == "__main__":
    sys.exit(main())
