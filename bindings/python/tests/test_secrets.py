"""Secrets and run-time rules through the Python client (issue 24,
docs/secrets.md): create_session(secrets=...) reads the value from this
process's environment or a file and the relay puts it in at its host only;
grant()/revoke() with a ttl, polled for its end. Against a real server and
a local HTTPS server with a test CA made now (tests/server/https_echo.py),
loopback only."""

import asyncio
import os
import shutil
import sys
import unittest

from fluebox import AsyncFluebox, Fluebox, InvalidParams

from helpers import REPO, Server, tmpdir, wait_for

sys.path.insert(0, os.path.join(REPO, "tests", "server"))
import https_echo  # noqa: E402

REAL = "pyreal-7c1e0b9d55aa"


@unittest.skipUnless(shutil.which("curl") and shutil.which("openssl"), "needs curl and openssl")
class SecretsTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.dir = tmpdir("fbpysec-")
        cls.ca = https_echo.make_ca(cls.dir, ["api.test", "other.test", "late.test"])
        os.chmod(cls.ca["ca"], 0o644)
        cls.web = https_echo.EchoServer(cls.dir, cls.ca)
        cls.port = cls.web.port
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()
        cls.web.stop()

    def opts(self, **kw):
        # other.test has an HTTP rule: the relay reads its requests too.
        o = dict(allow_net=["api.test:%d" % self.port, "other.test:%d" % self.port],
                 allow_http=["* other.test:%d" % self.port], upstream_ca=self.ca["ca"],
                 options=["--ro-bind", self.dir + ":/testca", "--egress-resolve", "api.test=127.0.0.1", "--egress-resolve", "other.test=127.0.0.1",
                          "--egress-resolve", "late.test=127.0.0.1"])
        o.update(kw)
        return o

    def curl(self, s, name, path, *args):
        r = s.exec(["curl", "-sS", "-m", "10", "-o", "/dev/null", "-w", "%{http_code}"] + list(args)
                   + ["https://%s:%d%s" % (name, self.port, path)], timeout=30)
        try:
            return int(r.stdout.strip() or "0")
        except ValueError:
            return 0

    def api(self):
        return "api.test:%d" % self.port

    def late(self, s, path):
        """late.test is passed end to end: its certificate is the test CA's."""
        return self.curl(s, "late.test", path, "--cacert", "/testca/ca.pem")

    def received(self, path):
        return [q for q in self.web.requests() if q["path"] == path]

    def test_secret_from_env_and_file(self):
        os.environ["FBPY_TOKEN"] = REAL
        f = os.path.join(self.dir, "tok")
        with open(f, "w") as fh:
            fh.write(REAL + "-file\n")
        try:
            with self.fb.session(**self.opts(secrets=["FBPY_TOKEN:" + self.api(),
                                                      "FILE_TOKEN=@%s:%s" % (f, self.api())])) as s:
                env = s.exec("echo $FBPY_TOKEN; echo $FILE_TOKEN").stdout.split()
                self.assertTrue(all(x.startswith("fluebox-standin-") for x in env), env)
                self.assertNotIn(REAL, s.exec("env").stdout)
                self.assertEqual(self.curl(s, "api.test", "/py-env", "-H", "Authorization: Bearer " + env[0]), 200)
                self.assertEqual(self.received("/py-env")[-1]["headers"]["Authorization"], "Bearer " + REAL)
                self.assertEqual(self.curl(s, "api.test", "/py-file", "-H", "X-Key: " + env[1]), 200)
                self.assertEqual(self.received("/py-file")[-1]["headers"]["X-Key"], REAL + "-file")
                self.assertEqual(self.curl(s, "other.test", "/py-leak", "-H", "X-Key: " + env[1]), 403)
                self.assertEqual(self.received("/py-leak"), [])
        finally:
            del os.environ["FBPY_TOKEN"]

    def test_unset_variable_is_refused_here(self):
        os.environ.pop("FBPY_UNSET", None)
        with self.assertRaises(ValueError) as cm:
            self.fb.create_session(**self.opts(secrets=["FBPY_UNSET:" + self.api()]))
        self.assertIn("FBPY_UNSET", str(cm.exception))

    def test_grant_ttl_and_revoke(self):
        with self.fb.session(**self.opts()) as s:
            self.assertEqual(self.late(s, "/py-late"), 0)
            r = s.grant(allow_net="late.test:%d" % self.port, ttl=2)
            self.assertEqual(r["kind"], "allowNet")
            self.assertIsInstance(r["expiresAt"], int)
            self.assertEqual(self.late(s, "/py-late"), 200)
            wait_for(lambda: self.late(s, "/py-late") == 0, 30, "the grant's end")
            s.grant(allow_net="late.test:%d" % self.port)
            self.assertEqual(self.late(s, "/py-late"), 200)
            s.revoke(allow_net="late.test:%d" % self.port)
            self.assertEqual(self.late(s, "/py-late"), 0)

    def test_grant_secret(self):
        with self.fb.session(**self.opts()) as s:
            r = s.grant(secret={"name": "PY_LATE", "hosts": [self.api()], "value": REAL})
            st = r["standin"]
            self.assertTrue(st.startswith("fluebox-standin-"))
            self.assertEqual(self.curl(s, "api.test", "/py-granted", "-H", "X-Key: " + st), 200)
            self.assertEqual(self.received("/py-granted")[-1]["headers"]["X-Key"], REAL)
            s.revoke(secret="PY_LATE")

    def test_bad_grants(self):
        with self.fb.session(**self.opts()) as s:
            with self.assertRaises(TypeError):
                s.grant()
            with self.assertRaises(TypeError):
                s.grant(allow_net="a.test", allow_http="GET a.test")
            with self.assertRaises(InvalidParams) as cm:
                s.grant(allow_http="FETCH api.test")
            self.assertIn("FETCH", str(cm.exception))

    def test_async(self):
        async def go():
            fb = await AsyncFluebox.connect(self.srv.socket)
            try:
                s = await fb.create_session(**self.opts())
                r = await s.grant(allow_net="late.test:%d" % self.port, ttl=60)
                await s.revoke(allow_net="late.test:%d" % self.port)
                await s.destroy()
                return r
            finally:
                await fb.close()
        r = asyncio.run(go())
        self.assertEqual(r["ttlMs"], 60000)


if __name__ == "__main__":
    unittest.main()
