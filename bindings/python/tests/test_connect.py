"""Fluebox.connect (socket, default socket, private server that exits with
the client), `python3 -m fluebox`, and installing the package offline."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

import fluebox
from fluebox import (BinaryNotFound, ConnectionClosed, Fluebox, ServerFailed, UntrustedServer,
                     default_socket_path, find_binary)
from fluebox.errors import ProtocolError

from helpers import QUICK, REPO, Server, binary, pid_alive, tmpdir, wait_for

PKG = os.path.join(REPO, "bindings", "python")


def fake_server(reply: bytes) -> str:
    """A one-connection stand-in for the server: it answers the first
    request with `reply` (raw bytes) and closes. Returns the socket path."""
    path = os.path.join(tmpdir(), "fake.sock")
    ls = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    ls.bind(path)
    ls.listen(1)

    def serve():
        c, _ = ls.accept()
        f = c.makefile("rb")
        req = json.loads(f.readline())
        c.sendall(reply.replace(b"ID", json.dumps(req["id"]).encode()))
        c.close()
        ls.close()
    import threading
    threading.Thread(target=serve, daemon=True).start()
    return path


class FramingTest(unittest.TestCase):
    """A broken reply says what broke: the connection, or the line."""

    def test_connection_lost_inside_a_reply(self):
        path = fake_server(b'{"id":ID,"result":{"name":"fluebox","stdout":"abc')
        with Fluebox.connect(path) as fb:
            with self.assertRaises(ConnectionClosed) as cm:
                fb.server_info()
        self.assertIn("lost in the middle of a reply", str(cm.exception))

    def test_a_line_that_is_not_json(self):
        path = fake_server(b'{"id":ID,"result":nope}\n')
        with Fluebox.connect(path) as fb:
            with self.assertRaises(ProtocolError) as cm:
                fb.server_info()
        self.assertEqual(cm.exception.code, "parse_error")
        self.assertIn("not JSON", str(cm.exception))
        self.assertIn("nope", str(cm.exception))

    def test_async_connection_lost_inside_a_reply(self):
        import asyncio
        from fluebox.aio import AsyncFluebox
        path = fake_server(b'{"id":ID,"result":{"name":"flue')

        async def go():
            fb = await AsyncFluebox.connect(path)
            with self.assertRaises(ConnectionClosed) as cm:
                await fb.server_info()
            await fb.close()
            self.assertIn("lost in the middle of a reply", str(cm.exception))
        asyncio.run(go())


class ConnectTest(unittest.TestCase):
    def test_explicit_socket(self):
        srv = Server()
        try:
            with Fluebox.connect(srv.socket) as fb:
                self.assertEqual(fb.socket, srv.socket)
                self.assertIsNone(fb.server_pid)
                self.assertEqual(fb.server_info()["name"], "fluebox")
        finally:
            srv.stop()

    def test_explicit_socket_without_server(self):
        with self.assertRaises(ConnectionClosed):
            Fluebox.connect(os.path.join(tmpdir(), "none.sock"))

    def test_default_socket_env(self):
        srv = Server()
        old = os.environ.get("FLUEBOX_SOCKET")
        os.environ["FLUEBOX_SOCKET"] = srv.socket
        try:
            self.assertEqual(default_socket_path(), srv.socket)
            with Fluebox.connect(auto_start=False) as fb:
                self.assertEqual(fb.socket, srv.socket)
        finally:
            if old is None:
                del os.environ["FLUEBOX_SOCKET"]
            else:
                os.environ["FLUEBOX_SOCKET"] = old
            srv.stop()

    def test_default_socket_rule(self):
        uid = os.getuid()
        d = tmpdir()
        os.chmod(d, 0o700)
        self.assertEqual(default_socket_path({"XDG_RUNTIME_DIR": d}), os.path.join(d, "fluebox.sock"))
        fallback = ("/run/user/%d/fluebox.sock" % uid, "/tmp/fluebox-%d/fluebox.sock" % uid)
        p = default_socket_path({"XDG_RUNTIME_DIR": "/nonexistent"})
        self.assertIn(p, fallback)
        # A runtime directory others can read or enter is not the user's private one.
        os.chmod(d, 0o755)
        self.assertIn(default_socket_path({"XDG_RUNTIME_DIR": d}), fallback)

    def test_private_server_stops_on_close(self):
        fb = Fluebox.connect(private=True, binary=binary())
        pid, sock = fb.server_pid, fb.socket
        self.assertTrue(pid_alive(pid))
        with fb.session() as s:
            self.assertEqual(s.exec("echo private").stdout, "private\n")
        fb.close()
        wait_for(lambda: not pid_alive(pid), what="private server exit")
        self.assertFalse(os.path.exists(sock))

    def test_private_server_outlives_the_thread_that_started_it(self):
        import threading

        box = {}
        th = threading.Thread(target=lambda: box.setdefault("fb", Fluebox.connect(private=True, binary=binary())))
        th.start()
        th.join()
        fb = box["fb"]
        try:
            time.sleep(0.3)  # --exit-with-parent would have fired by now if tied to that thread
            self.assertTrue(pid_alive(fb.server_pid))
            with fb.session() as s:
                self.assertEqual(s.exec("echo still here").stdout, "still here\n")
        finally:
            fb.close()

    def test_private_server_from_env_and_path(self):
        old = dict(os.environ)
        try:
            os.environ["FLUEBOX_BIN"] = binary()
            with Fluebox.connect(private=True) as fb:
                self.assertEqual(fb.server_info()["name"], "fluebox")
            if os.path.basename(binary()) == "fluebox":
                del os.environ["FLUEBOX_BIN"]
                os.environ["PATH"] = os.path.dirname(binary()) + ":" + os.environ.get("PATH", "")
                self.assertEqual(find_binary(), os.path.abspath(binary()))
                with Fluebox.connect(private=True) as fb:
                    self.assertEqual(fb.server_info()["name"], "fluebox")
        finally:
            os.environ.clear()
            os.environ.update(old)

    def test_no_binary(self):
        with self.assertRaises(BinaryNotFound):
            find_binary(env={"PATH": tmpdir()})
        with self.assertRaises(BinaryNotFound):
            Fluebox.connect(private=True, binary="/nonexistent/fluebox")

    def test_private_server_that_fails(self):
        with self.assertRaises(ServerFailed):
            Fluebox.connect(private=True, binary=binary(), server_args=["--no-such-option"])

    def _child(self, tail):
        code = (
            "import sys, time; sys.path.insert(0, %r)\n"
            "from fluebox import Fluebox\n"
            "fb = Fluebox.connect(private=True, binary=%r)\n"
            "fb.create_session()\n"
            "print(fb.server_pid, fb.socket, flush=True)\n" % (PKG, binary())
        ) + tail
        p = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE)
        pid, sock = p.stdout.readline().decode().split()
        return p, int(pid), os.path.dirname(sock)

    def test_private_server_exits_with_client_process(self):
        p, pid, d = self._child("")
        p.wait(20)
        wait_for(lambda: not pid_alive(pid), 15, "private server exit")
        wait_for(lambda: not os.path.exists(d), 15, "the private server's directory removed")

    def test_private_server_exits_when_client_is_sigkilled(self):
        # Nobody is left to clean up but the server: it removes its own
        # directory (socket, lock and server.log) as it stops.
        p, pid, d = self._child("time.sleep(60)\n")
        self.assertTrue(os.path.exists(os.path.join(d, "server.log")))  # the client still runs
        p.send_signal(signal.SIGKILL)
        p.wait(10)
        wait_for(lambda: not pid_alive(pid), 15, "private server exit")
        wait_for(lambda: not os.path.exists(d), 15, "the private server's directory removed")


def _other_uid():
    import pwd
    if os.getuid() != 0:
        raise unittest.SkipTest("needs root to act as another user")
    try:
        return pwd.getpwnam("fbtest").pw_uid
    except KeyError:
        raise unittest.SkipTest("no user fbtest") from None


# A listener that is not the user's: bound by the test (root) in a directory
# of the given owner, then listening as another uid. Prints "ready".
_FAKE_SERVER = r"""
import os, socket, sys
path, uid = sys.argv[1], int(sys.argv[2])
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
os.chmod(path, 0o666)
os.setgid(uid); os.setuid(uid)   # SO_PEERCRED reports who called listen()
s.listen(8)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    data = c.recv(65536)   # what a client would have sent to an impostor
    if data:
        sys.stderr.buffer.write(b"GOT " + data)
        sys.stderr.flush()
    c.close()
"""


class TrustTest(unittest.TestCase):
    """The client talks only to a server of the user's own, of root, or of the
    uid it is told to trust (docs/protocol.md 1), and says so plainly."""

    def _fake(self, d, uid):
        path = os.path.join(d, "fake.sock")
        p = subprocess.Popen([sys.executable, "-c", _FAKE_SERVER, path, str(uid)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.addCleanup(lambda: (p.kill(), p.wait()))
        self.assertEqual(p.stdout.readline().strip(), b"ready")
        return path, p

    def test_server_of_another_uid_is_refused(self):
        other = _other_uid()
        d = tmpdir()   # root's, 0755: the socket file is root's too
        path, p = self._fake(d, other)
        with self.assertRaisesRegex(UntrustedServer, "runs as uid %d, not as you" % other):
            Fluebox.connect(path)
        with self.assertRaises(UntrustedServer):
            import asyncio
            from fluebox import AsyncFluebox
            asyncio.run(AsyncFluebox.connect(path))
        # Told to trust that uid: it connects.
        Fluebox.connect(path, server_uid=other).close()
        old = os.environ.get("FLUEBOX_SERVER_UID")
        os.environ["FLUEBOX_SERVER_UID"] = str(other)
        try:
            Fluebox.connect(path).close()
        finally:
            if old is None:
                del os.environ["FLUEBOX_SERVER_UID"]
            else:
                os.environ["FLUEBOX_SERVER_UID"] = old

    def test_socket_in_another_users_directory_is_refused(self):
        other = _other_uid()
        d = tmpdir()
        os.chown(d, other, other)
        path, p = self._fake(d, other)
        with self.assertRaisesRegex(UntrustedServer, "owned by uid %d" % other):
            Fluebox.connect(path)
        # The default path in a runtime directory of someone else: not used.
        self.assertNotEqual(default_socket_path({"XDG_RUNTIME_DIR": d}), os.path.join(d, "fluebox.sock"))

    def test_socket_in_a_directory_others_may_write(self):
        d = tmpdir()
        os.chmod(d, 0o777)
        with self.assertRaisesRegex(UntrustedServer, "others could replace the socket"):
            Fluebox.connect(os.path.join(d, "s.sock"))

    def test_bad_server_uid(self):
        with self.assertRaisesRegex(TypeError, "server_uid must be a numeric uid"):
            Fluebox.connect(os.path.join(tmpdir(), "none.sock"), server_uid="alice")


class MainTest(unittest.TestCase):
    def _run(self, *args, env=None):
        e = dict(os.environ, PYTHONPATH=PKG, FLUEBOX_BIN=binary())
        if env:
            e.update(env)
        return subprocess.run([sys.executable, "-m", "fluebox"] + list(args), capture_output=True, env=e, timeout=60)

    def test_run_passes_through(self):
        r = self._run("run", "--", "sh", "-c", "echo from-sandbox; echo err >&2; exit 3")
        self.assertEqual(r.returncode, 3)
        self.assertEqual(r.stdout, b"from-sandbox\n")
        self.assertIn(b"err", r.stderr)

    def test_version(self):
        r = self._run("--version")
        self.assertEqual(r.returncode, 0)
        self.assertIn(b"fluebox", r.stdout + r.stderr)

    def test_no_binary_is_125(self):
        r = self._run("run", "--", "true", env={"FLUEBOX_BIN": "/nonexistent", "PATH": "/usr/bin:/bin"})
        self.assertEqual(r.returncode, 125)
        self.assertIn(b"not found", r.stderr)


@unittest.skipIf(QUICK, "quick run")
class InstallTest(unittest.TestCase):
    def test_pip_install_offline_into_a_venv(self):
        d = tempfile.mkdtemp(prefix="fbpyvenv-")
        try:
            subprocess.run([sys.executable, "-m", "venv", d], check=True, timeout=120)
            py = os.path.join(d, "bin", "python")
            r = subprocess.run([py, "-m", "pip", "install", "--no-index", "--no-cache-dir", PKG],
                               capture_output=True, timeout=300)
            if r.returncode != 0 and b"No module named pip" in r.stderr:
                self.skipTest("this Python has no pip")
            self.assertEqual(r.returncode, 0, r.stderr.decode(errors="replace")[-2000:])
            out = subprocess.run([py, "-c", "import fluebox, fluebox.aio; print(fluebox.__version__, fluebox.__file__)"],
                                 capture_output=True, check=True, cwd=d, timeout=60).stdout.decode()
            self.assertTrue(out.startswith(fluebox.__version__ + " " + d), out)
        finally:
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
