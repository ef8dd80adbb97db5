"""Interactive sessions (issue 16): published ports, fork, snapshot and
restore from the Python client (threads and asyncio), against a real server.
The ports are tried from the host the way a user would (urllib, sockets)."""

import asyncio
import os
import shutil
import socket
import time
import unittest
import urllib.error
import urllib.request

from fluebox import AsyncFluebox, Fluebox, InvalidParams, NotFound, NotSupported

from helpers import Server, tmpdir


def get(url, wait=15.0):
    """GET url until it answers (the server inside is starting): its body."""
    deadline = time.monotonic() + wait
    while True:
        try:
            with urllib.request.urlopen(url, timeout=3) as r:
                return r.read().decode()
        except (urllib.error.URLError, ConnectionError, OSError):
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def refused(host, port):
    """True when a TCP connection to host:port cannot be made."""
    try:
        with socket.create_connection((host, port), timeout=3):
            return False
    except OSError:
        return True


def start_http(s, port, text):
    """python3 -m http.server on 127.0.0.1:port inside s, serving text; waits
    (inside) until it listens."""
    s.exec("mkdir -p /tmp/www%d && echo '%s' > /tmp/www%d/index.html && cd /tmp/www%d && "
           "(python3 -m http.server %d --bind 127.0.0.1 >/dev/null 2>&1 &)" % (port, text, port, port, port))
    probe = ("import socket,sys,time\n"
             "for _ in range(300):\n"
             "    try: socket.create_connection(('127.0.0.1', %d), 1).close(); sys.exit(0)\n"
             "    except OSError: time.sleep(0.05)\n"
             "sys.exit(1)\n" % port)
    r = s.exec(["python3", "-c", probe])
    if r.exit_code != 0:
        raise AssertionError("http.server on %d did not start inside" % port)


class PublishTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_publish_reaches_only_the_published_port_on_loopback(self):
        # A host port held bound (not listening) for the whole test: nothing
        # on the host listens there, and a session that shared the host's
        # network could not listen there either.
        held = socket.socket()
        held.bind(("127.0.0.1", 0))
        other = held.getsockname()[1]
        try:
            with self.fb.session() as s:
                start_http(s, 8000, "published")
                start_http(s, other, "not published")
                p = s.publish(8000)
                self.assertEqual((p["port"], p["host"], p["anyUid"]), (8000, "127.0.0.1", False))
                self.assertEqual(p["url"], "http://127.0.0.1:%d/" % p["hostPort"])
                self.assertEqual(get(p["url"] + "index.html"), "published\n")
                # The listener is on 127.0.0.1 only, not on every address.
                self.assertTrue(refused("127.0.0.2", p["hostPort"]), "the host port answers on 127.0.0.2")
                # The server inside on the port not published is out of reach.
                self.assertTrue(refused("127.0.0.1", other), "an unpublished port inside answers on the host")
                info = s.info()
                self.assertEqual([(x["port"], x["hostPort"]) for x in info["ports"]], [(8000, p["hostPort"])])
                # The same request again returns the same entry.
                self.assertEqual(s.publish(8000)["hostPort"], p["hostPort"])
                s.unpublish(8000)
                self.assertTrue(refused("127.0.0.1", p["hostPort"]), "unpublish left the listener")
                self.assertEqual(s.info()["ports"], [])
        finally:
            held.close()

    def test_publish_at_create_and_closed_at_destroy(self):
        s = self.fb.create_session(publish=[8001])
        try:
            ports = s.create_info["ports"]
            self.assertEqual([x["port"] for x in ports], [8001])
            start_http(s, 8001, "at create")
            self.assertEqual(get(ports[0]["url"]), "at create\n")
        finally:
            s.destroy()
        self.assertTrue(refused("127.0.0.1", ports[0]["hostPort"]), "destroy left the listener")


class ForkTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_fork_is_a_copy_at_that_moment(self):
        with self.fb.session(label="orig") as a:
            a.write_file("state.txt", "one\n")
            a.exec("echo cfg > ~/.cfg; echo tmp > /tmp/t; (sleep 300 >/dev/null 2>&1 &)")
            with a.fork() as b:
                self.assertNotEqual(b.id, a.id)
                self.assertEqual(b.create_info["forkedFrom"], a.id)
                self.assertEqual(b.create_info["label"], "orig")
                self.assertIsInstance(b.create_info["copyMs"], (int, float))
                self.assertEqual(b.exec("cat state.txt ~/.cfg /tmp/t").stdout, "one\ncfg\ntmp\n")
                self.assertEqual(b.exec("ps -eo args | grep -c '^sleep 300' || true").stdout.strip(), "0")
                # The original's later writes, to the same files, stay its own.
                a.exec("echo two > state.txt; echo cfg2 > ~/.cfg; echo tmp2 > /tmp/t")
                self.assertEqual(b.exec("cat state.txt ~/.cfg /tmp/t").stdout, "one\ncfg\ntmp\n")
                # And the fork's stay the fork's.
                b.exec("echo fork > state.txt; echo new > new.txt")
                self.assertEqual(a.read_file("state.txt"), "two\n")
                self.assertFalse(a.exists("new.txt"))
            # Destroying the fork leaves the original working.
            self.assertEqual(a.exec("cat state.txt").stdout, "two\n")

    def test_fork_label_and_refusal(self):
        with self.fb.session(label="x") as a:
            with a.fork(label="y") as b:
                self.assertEqual(b.create_info["label"], "y")
        d = tmpdir("fbpyfork-")
        try:
            with self.fb.session(workspace=d) as h:
                with self.assertRaises(NotSupported):
                    h.fork()
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_snapshot_restore(self):
        d = tmpdir("fbpysnap-")
        with open(os.path.join(d, "f.txt"), "w") as f:
            f.write("host\n")
        try:
            with self.fb.session(workspace=d, cow=True) as s:
                s.write_file("f.txt", "v1\n")
                snap = s.snapshot("v1")
                self.assertEqual(snap["name"], "v1")
                s.write_file("f.txt", "v2\n")
                s.write_file("g.txt", "later\n")
                r = s.restore("v1")
                self.assertTrue(r["restored"])
                self.assertEqual(s.read_file("f.txt"), "v1\n")
                self.assertFalse(s.exists("g.txt"))
                self.assertEqual(s.info()["snapshots"], ["v1"])
                with open(os.path.join(d, "f.txt")) as f:
                    self.assertEqual(f.read(), "host\n")
        finally:
            shutil.rmtree(d, ignore_errors=True)


def read_until(it, text, acc):
    """Consume stdout chunks from the stream iterator it until acc (a list
    of one string) contains text."""
    while text not in acc[0]:
        c = next(it)
        if c.stream == "stdout":
            acc[0] += c.data


class StdinTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_repl_fed_line_by_line(self):
        # The interpreter answers each line before the next is written: the
        # command runs and reads while the client feeds it.
        with self.fb.session() as s:
            st = s.stream(["python3", "-q", "-u", "-i"], stdin_open=True)
            it = iter(st)
            out = [""]
            st.write("x = 6 * 7\nprint(x)\n")
            read_until(it, "42\n", out)
            with st.stdin as w:
                print("print(x + 1)", file=w)
                read_until(it, "43\n", out)
                w.write(b"print('bytes', len([1, 2]))\n")
                read_until(it, "bytes 2\n", out)
            for _ in it:
                pass
            self.assertEqual(st.wait().exit_code, 0)
            self.assertEqual(out[0], "42\n43\nbytes 2\n")

    def test_closed_stdin_and_ended_command(self):
        with self.fb.session() as s:
            # A command that closed its stdin and runs on: EPIPE.
            st = s.stream("exec <&-; echo closed; sleep 60", stdin_open=True)
            it = iter(st)
            read_until(it, "closed\n", [""])
            with self.assertRaises(BrokenPipeError):
                st.write("more\n")
            st.kill()
            st.wait()
            # A command that ended: nothing runs to write to.
            st = s.stream("head -n 1", stdin_open=True)
            st.write("one\ntwo\n")
            self.assertEqual(st.collect().stdout, "one\n")
            with self.assertRaises(NotFound):
                st.write("more\n")
            # Without stdin_open there is nothing to write to.
            plain = s.stream("sleep 5")
            with self.assertRaises(InvalidParams):
                plain.write("x")
            plain.kill()
            plain.wait()

    def test_cat_round_trip_binary(self):
        with self.fb.session() as s:
            st = s.stream(["sh", "-c", "cat | sha256sum"], stdin_open=True)
            blob = os.urandom(1500 * 1024)  # more than one request and a pipe's worth
            self.assertEqual(st.write(blob), len(blob))
            st.close_stdin()
            import hashlib
            self.assertEqual(st.collect().stdout.split()[0], hashlib.sha256(blob).hexdigest())


class TtyTest(unittest.TestCase):
    """exec with a terminal: a pty of the sandbox's devpts as the command's
    controlling terminal, driven the way a terminal would be."""

    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)
        cls.s = cls.fb.create_session()

    @classmethod
    def tearDownClass(cls):
        cls.s.destroy()
        cls.fb.close()
        cls.srv.stop()

    def test_a_terminal_of_the_given_size(self):
        r = self.s.stream("tty; [ -t 0 ] && [ -t 1 ] && [ -t 2 ] && echo all-tty; stty size",
                          tty=(33, 101)).collect()
        self.assertEqual(r.exit_code, 0)
        self.assertRegex(r.stdout, r"^/dev/pts/\d+\r\nall-tty\r\n33 101\r\n$")

    def test_resize_reaches_the_command(self):
        st = self.s.stream("trap 'stty size' WINCH; stty size; echo ready; until read x; do :; done",
                            tty=(24, 80))
        it = iter(st)
        out = [""]
        read_until(it, "ready", out)
        st.resize(30, 100)
        read_until(it, "30 100", out)  # the SIGWINCH trap ran with the new size
        st.write("\n")
        for c in it:
            pass
        self.assertEqual(st.wait().exit_code, 0)

    def test_ctrl_c_goes_to_the_foreground_process_group(self):
        st = self.s.stream("trap 'echo INT; exit 3' INT; echo ready; read x", tty=True)
        it = iter(st)
        out = [""]
        read_until(it, "ready", out)
        st.write("\x03")  # the terminal's line discipline makes it SIGINT
        read_until(it, "INT", out)
        for c in it:
            pass
        self.assertEqual(st.wait().exit_code, 3)

    def test_job_control_in_an_interactive_shell(self):
        r = self.s.stream(["bash", "-i", "-c", "sleep 30 & jobs; kill %1; wait; echo done"], tty=True).collect()
        self.assertIn("Running", r.stdout)
        self.assertNotIn("no job control", r.stdout)
        self.assertTrue(r.stdout.endswith("done\r\n"), r.stdout)

    def test_tiocsti_stays_denied(self):
        # Pushing input into the terminal would let a command type into
        # whatever reads it next: the seccomp filter refuses it.
        r = self.s.stream(["python3", "-c", "import fcntl, termios\n"
                           "try:\n    fcntl.ioctl(0, termios.TIOCSTI, b'x'); print('allowed')\n"
                           "except OSError as e:\n    print('denied', e.errno)"], tty=True).collect()
        self.assertIn("denied", r.stdout)
        self.assertNotIn("allowed", r.stdout)


class AsyncInteractiveTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_async_publish_and_fork(self):
        async def main():
            fb = await AsyncFluebox.connect(self.srv.socket)
            try:
                async with fb.session() as a:
                    await a.write_file("x.txt", "async\n")
                    await a.exec("mkdir -p /tmp/w && echo served > /tmp/w/index.html && cd /tmp/w && "
                                 "(python3 -m http.server 8002 --bind 127.0.0.1 >/dev/null 2>&1 &)")
                    p = await a.publish(8002)
                    body = await asyncio.get_running_loop().run_in_executor(None, get, p["url"])
                    b = await a.fork()
                    try:
                        self.assertEqual(b.create_info["forkedFrom"], a.id)
                        self.assertEqual(await b.read_file("x.txt"), "async\n")
                        self.assertEqual((await b.info())["ports"], [])
                    finally:
                        await b.destroy()
                    await a.unpublish(8002)
                    return body
            finally:
                await fb.close()

        self.assertEqual(asyncio.run(main()), "served\n")

    def test_async_streaming_stdin(self):
        async def main():
            fb = await AsyncFluebox.connect(self.srv.socket)
            try:
                async with fb.session() as s:
                    st = s.stream(["python3", "-q", "-u", "-i"], stdin_open=True)
                    it = st.__aiter__()
                    out = ""
                    await st.write("print(2 ** 10)\n")
                    while "1024\n" not in out:
                        c = await it.__anext__()
                        out += c.data if c.stream == "stdout" else ""
                    await st.write(b"print('again')\n")
                    while "again\n" not in out:
                        c = await it.__anext__()
                        out += c.data if c.stream == "stdout" else ""
                    await st.close_stdin()
                    async for c in it:
                        out += c.data if c.stream == "stdout" else ""
                    return out, (await st.result()).exit_code
            finally:
                await fb.close()

        self.assertEqual(asyncio.run(main()), ("1024\nagain\n", 0))


if __name__ == "__main__":
    unittest.main()
