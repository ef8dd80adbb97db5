"""Every method of the synchronous client, against a real `fluebox serve`."""

import os
import shutil
import threading
import time
import unittest

import fluebox
from fluebox import (
    Cancelled,
    ExecResult,
    FileSystemError,
    Fluebox,
    FlueboxError,
    InvalidParams,
    NotFound,
    NotSupported,
    ProtocolError,
    SandboxDiedError,
    Session,
    Stat,
)

from helpers import Server, running, tmpdir, wait_for


class ClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)
        cls.s = cls.fb.create_session("standard", memory="256M", env={"GREETING": "hello"})

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    # -- server and sessions --

    def test_server_info(self):
        i = self.fb.server_info()
        self.assertEqual(i["name"], "fluebox")
        self.assertEqual(i["protocol"], 1)
        self.assertIn("exec", i["methods"])

    def test_create_session(self):
        self.assertIsInstance(self.s, Session)
        self.assertRegex(self.s.id, r"^s-[0-9a-f]{16}$")
        self.assertEqual(self.s.create_info["state"], "ready")
        self.assertEqual(self.s.cwd, "/workspace")

    def test_create_session_options(self):
        with self.assertRaises(TypeError):
            self.fb.create_session(memroy="1G")
        with self.fb.session(memory="128M", pids=64, cwd="/tmp", ttl=600, idle_timeout=300.0001) as t:
            i = t.info()
            self.assertEqual(i["limits"]["memory"], 128 * 1024 * 1024)
            self.assertEqual(i["limits"]["pids"], 64)
            self.assertEqual(i["cwd"], "/tmp")
            self.assertEqual(i["ttlMs"], 600000)
            self.assertEqual(i["idleTimeoutMs"], 300001)  # rounded up
            self.assertIn(t.id, [x["session"] for x in self.fb.list_sessions()])
        self.assertTrue(t.dead)
        self.assertNotIn(t.id, [x["session"] for x in self.fb.list_sessions()])

    def test_bad_param_is_invalid_params(self):
        with self.assertRaises(InvalidParams) as cm:
            self.fb.create_session(memory="lots")
        self.assertEqual(cm.exception.code, "invalid_params")
        self.assertIn("memory", str(cm.exception.data.get("param")))

    def test_list_and_info(self):
        self.assertIn(self.s.id, [i["session"] for i in self.fb.list_sessions()])
        info = self.s.info()
        self.assertEqual(info["session"], self.s.id)
        self.assertIn("usage", info)

    def test_attach(self):
        self.s.write_file("attach.txt", "same")
        self.assertEqual(self.fb.attach(self.s.id).read_file("attach.txt"), "same")

    def test_destroy_then_not_found(self):
        t = self.fb.create_session()
        t.destroy()
        self.assertTrue(t.dead)
        with self.assertRaises(NotFound) as cm:
            t.exec("true")
        self.assertEqual(cm.exception.code, "not_found")

    def test_host_workspace(self):
        d = tmpdir()
        try:
            with open(os.path.join(d, "from-host.txt"), "w") as f:
                f.write("host data")
            with self.fb.session(workspace=d) as t:
                self.assertEqual(t.read_file("/workspace/from-host.txt"), "host data")
                t.write_file("from-sandbox.txt", "sandbox data")
            with open(os.path.join(d, "from-sandbox.txt")) as f:
                self.assertEqual(f.read(), "sandbox data")
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_caller_default_and_venv(self):
        # By default the caller is this process, with only the variables
        # fluebox reads; a caller's activated venv is what exec runs.
        from fluebox import _common
        os.environ["FLUEBOX_TEST_NOT_SENT"] = "x"
        try:
            c = _common.session_params(None)["caller"]
            self.assertEqual((c["path"], c["cwd"]), (os.environ["PATH"], os.getcwd()))
            self.assertNotIn("FLUEBOX_TEST_NOT_SENT", c["env"])
            self.assertNotIn("caller", _common.session_params(None, caller=False))
        finally:
            del os.environ["FLUEBOX_TEST_NOT_SENT"]
        d = tmpdir()
        try:
            venv = os.path.join(d, "venv")
            import subprocess
            subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip", venv], check=True)
            with self.fb.session(caller={"path": venv + "/bin:/usr/bin:/bin",
                                         "env": {"VIRTUAL_ENV": venv}}) as v:
                r = v.exec('python -c "import sys; print(sys.prefix)"; echo "$VIRTUAL_ENV"')
                self.assertEqual(r.stdout, "%s\n%s\n" % (venv, venv))
        finally:
            shutil.rmtree(d, ignore_errors=True)

    def test_raw_request(self):
        self.assertEqual(self.fb.request("session.info", {"session": self.s.id})["session"], self.s.id)
        with self.assertRaises(ProtocolError) as cm:
            self.fb.request("no.such.method")
        self.assertEqual(cm.exception.code, "method_not_found")

    # -- exec --

    def test_exec_shell_string(self):
        r = self.s.exec("echo out; echo err >&2; exit 3")
        self.assertIsInstance(r, ExecResult)
        self.assertEqual((r.exit_code, r.stdout, r.stderr, r.timed_out), (3, "out\n", "err\n", False))
        self.assertIs(r.oom_killed, False)
        self.assertFalse(r.ok)
        self.assertRegex(r.exec_id, r"^p[0-9a-f]{16}$")

    def test_exec_argv(self):
        r = self.s.exec(["printf", "%s|", "a b", "$HOME", ";"])
        self.assertEqual(r.stdout, "a b|$HOME|;|")

    def test_exec_cwd_env_stdin(self):
        self.s.mkdir("/tmp/wd", parents=True)
        r = self.s.exec('pwd; echo "$GREETING $WHO"', cwd="/tmp/wd", env={"WHO": "world"})
        self.assertEqual(r.stdout, "/tmp/wd\nhello world\n")
        self.assertEqual(self.s.exec("cat", stdin="piped").stdout, "piped")
        r = self.s.exec(["od", "-An", "-tx1"], stdin=b"\x00\xff\n")
        self.assertEqual(" ".join(r.stdout.split()), "00 ff 0a")

    def test_exec_binary(self):
        r = self.s.exec(["sh", "-c", 'printf "\\000\\377\\200"'], binary=True)
        self.assertEqual(r.stdout, b"\x00\xff\x80")

    def test_exec_not_found_is_127(self):
        r = self.s.exec(["no-such-command-here"])
        self.assertEqual(r.exit_code, 127)
        self.assertIn("no-such-command-here", r.stderr)

    def test_exec_timeout_is_124(self):
        r = self.s.exec("echo started; sleep 30; echo never", timeout=0.3)
        self.assertEqual(r.exit_code, 124)
        self.assertTrue(r.timed_out)
        self.assertEqual(r.stdout, "started\n")

    def test_timeout_rounds_up(self):
        # 0.1 ms becomes 1 ms: the command is killed; rounded down to 0 it
        # would mean "no timeout" and sleep would finish.
        self.assertEqual(self.s.exec("sleep 2", timeout=0.0001).exit_code, 124)
        self.assertEqual(fluebox._common.ceil_ms(0.0001), 1)
        self.assertEqual(fluebox._common.ceil_ms(1.0001), 1001)
        with self.assertRaises(ValueError):
            self.s.exec("true", timeout=-1)
        # A duration string is a clear error, not "can't multiply sequence".
        with self.assertRaisesRegex(TypeError, r"timeout must be a number of seconds \(e.g. timeout=10\), not '10s'"):
            self.s.exec("true", timeout="10s")
        with self.assertRaisesRegex(TypeError, "number of seconds"):
            self.fb.create_session(timeout="10s")

    def test_exec_kill(self):
        out = {}
        th = threading.Thread(target=lambda: out.setdefault("r", self.s.exec("sleep 30", exec_id="killme")))
        th.start()
        wait_for(lambda: "killme" in running(self.s), what="exec started")
        self.s.kill("killme", "SIGTERM")
        th.join(10)
        self.assertEqual(out["r"].signal, "SIGTERM")
        self.assertEqual(out["r"].exit_code, 128 + 15)
        with self.assertRaises(NotFound):
            self.s.kill("killme")

    def test_exec_cancel_event(self):
        ev = threading.Event()
        threading.Timer(0.3, ev.set).start()
        with self.assertRaises(Cancelled):
            self.s.exec("sleep 30; touch /tmp/after-cancel", cancel=ev, exec_id="cancelme")
        wait_for(lambda: "cancelme" not in running(self.s), what="exec killed")
        self.assertFalse(self.s.exists("/tmp/after-cancel"))

    def test_exec_bad_arguments(self):
        with self.assertRaises(TypeError):
            self.s.exec("true", timeout_seconds=5)
        with self.assertRaises(TypeError):
            self.s.exec([])
        with self.assertRaises(TypeError):
            self.s.exec(42)

    def test_max_output_bytes(self):
        r = self.s.exec("head -c 100000 /dev/zero", max_output_bytes=1000)
        self.assertEqual(len(r.stdout), 1000)
        self.assertTrue(r.stdout_truncated)
        self.assertEqual(r.truncated_by, "maxOutputBytes")

    # -- files --

    def test_write_read_text_parents(self):
        self.s.write_file("deep/er/notes.md", "# hi\n")
        self.assertEqual(self.s.read_file("deep/er/notes.md"), "# hi\n")
        self.assertEqual(self.s.read_file("/workspace/deep/er/notes.md"), "# hi\n")

    def test_write_without_parents(self):
        with self.assertRaises(FileNotFoundError) as cm:
            self.s.write_file("nope/x.txt", "x", parents=False)
        self.assertIsInstance(cm.exception, FileSystemError)
        self.assertEqual(cm.exception.code, "ENOENT")
        self.assertEqual(cm.exception.errno, 2)

    def test_write_bytes_append_mode_exclusive(self):
        self.assertEqual(self.s.write_file("bin.dat", b"\x01\x02\x03"), 3)
        self.s.write_file("bin.dat", bytearray(b"\x04"), append=True)
        self.assertEqual(self.s.read_bytes("bin.dat"), b"\x01\x02\x03\x04")
        self.s.write_file("script.sh", "#!/bin/sh\necho ran\n", mode=0o755)
        self.assertEqual(self.s.stat("script.sh").mode, 0o755)
        self.assertEqual(self.s.exec("./script.sh").stdout, "ran\n")
        with self.assertRaises(FileExistsError):
            self.s.write_file("bin.dat", "x", exclusive=True)

    def test_large_write_all_or_nothing(self):
        # 20 MiB takes several file.write requests; the session's fsize (12M)
        # stops it part way: no partial file, no temporary left, and an old
        # file keeps its content.
        data = os.urandom(20 * 1024 * 1024)
        with self.fb.session(fsize="12M") as t:
            with self.assertRaises(FileSystemError) as cm:
                t.write_file("big.bin", data)
            self.assertEqual(cm.exception.code, "EFBIG")
            self.assertFalse(t.exists("big.bin"))
            t.write_file("old.bin", b"old content")
            with self.assertRaises(FileSystemError):
                t.write_file("old.bin", data)
            self.assertEqual(t.read_bytes("old.bin"), b"old content")
            self.assertEqual([n for n in t.listdir(".") if n.startswith(".fluebox-write")], [])
            # Through a symlink, with the old file's mode kept: a write that fits.
            t.write_file("real.bin", b"x", mode=0o600)
            t.exec("ln -s real.bin link.bin")
            ok = os.urandom(10 * 1024 * 1024)
            self.assertEqual(t.write_file("link.bin", ok), len(ok))
            self.assertEqual(t.lstat("link.bin").type, "symlink")
            self.assertEqual(t.stat("real.bin").mode, 0o600)
            self.assertEqual(t.read_bytes("real.bin"), ok)
            with self.assertRaises(FileExistsError):
                t.write_file("real.bin", ok, exclusive=True)
            self.assertEqual([n for n in t.listdir(".") if n.startswith(".fluebox-write")], [])

    def test_read_offset_length(self):
        self.s.write_file("abc.txt", "abcdefghij")
        self.assertEqual(self.s.read_file("abc.txt", offset=2, length=3), "cde")
        self.assertEqual(self.s.read_bytes("abc.txt", offset=8), b"ij")

    def test_read_errors(self):
        with self.assertRaises(FileNotFoundError) as cm:
            self.s.read_file("missing.txt")
        self.assertTrue(cm.exception.filename.endswith("missing.txt"))
        with self.assertRaises(IsADirectoryError):
            self.s.read_file("/workspace")

    def test_stat_lstat_symlink(self):
        self.s.write_file("target.txt", "12345")
        self.s.exec("ln -sf target.txt link.txt")
        st = self.s.stat("link.txt")
        self.assertIsInstance(st, Stat)
        self.assertTrue(st.is_file)
        self.assertEqual(st.size, 5)
        self.assertIsInstance(st.mtime, float)
        lst = self.s.lstat("link.txt")
        self.assertTrue(lst.is_symlink)
        self.assertEqual(lst.target, "target.txt")
        self.assertTrue(self.s.stat("/workspace").is_dir)
        with self.assertRaises(FileNotFoundError):
            self.s.stat("nope")

    def test_readdir_listdir(self):
        self.s.mkdir("/tmp/ls", parents=True)
        self.s.write_file("/tmp/ls/b.txt", "")
        self.s.mkdir("/tmp/ls/a")
        self.assertEqual(self.s.listdir("/tmp/ls"), ["a", "b.txt"])
        self.assertEqual([(e.name, e.type) for e in self.s.readdir("/tmp/ls")], [("a", "dir"), ("b.txt", "file")])
        with self.assertRaises(NotADirectoryError):
            self.s.listdir("/tmp/ls/b.txt")

    def test_exists(self):
        self.assertTrue(self.s.exists("/workspace"))
        self.assertFalse(self.s.exists("/no/such/path"))
        self.s.exec("ln -sf /nowhere dangling")
        self.assertFalse(self.s.exists("dangling"))
        self.assertTrue(self.s.exists("dangling", follow=False))

    def test_mkdir(self):
        self.assertTrue(self.s.mkdir("/tmp/m1"))
        with self.assertRaises(FileExistsError):
            self.s.mkdir("/tmp/m1")
        with self.assertRaises(FileNotFoundError):
            self.s.mkdir("/tmp/m2/x")
        self.assertTrue(self.s.mkdir("/tmp/m2/x/y", parents=True))
        self.assertFalse(self.s.mkdir("/tmp/m2/x/y", parents=True))
        self.s.mkdir("/tmp/m3", mode=0o700)
        self.assertEqual(self.s.stat("/tmp/m3").mode, 0o700)

    def test_rm(self):
        self.s.write_file("/tmp/r/a/b.txt", "x")
        with self.assertRaises(IsADirectoryError):
            self.s.rm("/tmp/r")
        self.assertTrue(self.s.rm("/tmp/r/a/b.txt"))
        self.assertTrue(self.s.rm("/tmp/r", recursive=True))
        self.assertFalse(self.s.exists("/tmp/r"))
        with self.assertRaises(FileNotFoundError):
            self.s.rm("/tmp/r")
        self.assertFalse(self.s.rm("/tmp/r", force=True))

    def test_rename(self):
        self.s.write_file("/tmp/mv1", "one")
        self.s.write_file("/tmp/mv2", "two")
        with self.assertRaises(FileExistsError):
            self.s.rename("/tmp/mv1", "/tmp/mv2", overwrite=False)
        self.s.rename("/tmp/mv1", "/tmp/mv2")
        self.assertEqual(self.s.read_file("/tmp/mv2"), "one")
        self.assertFalse(self.s.exists("/tmp/mv1"))

    def test_symlink_to_host_does_not_reach_host(self):
        d = tmpdir()
        secret = os.path.join(d, "secret.txt")
        with open(secret, "w") as f:
            f.write("host secret")
        self.s.exec(["ln", "-sf", secret, "to-host"])
        with self.assertRaises(FileSystemError):
            self.s.read_file("to-host")
        shutil.rmtree(d, ignore_errors=True)

    def test_nul_in_names_is_invalid_params_and_kept_in_data(self):
        with self.assertRaises(InvalidParams) as cm:
            self.s.read_file("a\0b")
        self.assertEqual(cm.exception.data.get("param"), "path")
        with self.assertRaises(InvalidParams):
            self.s.exec(["echo", "a\0b"])
        self.assertEqual(self.s.exec("echo fine").stdout, "fine\n")
        self.s.write_file("/tmp/nul.txt", "a\0b")
        self.assertEqual(self.s.read_bytes("/tmp/nul.txt"), b"a\0b")
        self.assertIn("\\0", self.s.exec(["od", "-An", "-c"], stdin="x\0y").stdout)

    def test_labels(self):
        with self.fb.session(label="agent-a") as a, self.fb.session(label="agent-b"):
            self.assertEqual(a.create_info["label"], "agent-a")
            self.assertEqual([i["session"] for i in self.fb.list_sessions(label="agent-a")], [a.id])
            self.assertEqual(self.fb.list_sessions(label="nobody"), [])

    def test_workspace_methods_need_cow(self):
        with self.assertRaises(NotSupported):
            self.s.diff()
        with self.assertRaises(NotSupported):
            self.s.commit()
        with self.assertRaises(NotSupported):
            self.s.reset()
        with self.assertRaises(ValueError):
            self.s.diff(format="xml")

    def test_errors_shape(self):
        e = SandboxDiedError("x")
        self.assertEqual((e.code, e.type), ("session_dead", "sandbox_died"))
        self.assertIs(fluebox.SessionDead, SandboxDiedError)
        self.assertTrue(issubclass(NotSupported, FlueboxError))


class StreamTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)
        cls.s = cls.fb.create_session()

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_stream_chunks_then_result(self):
        st = self.s.stream("for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2; exit 7")
        chunks = list(st)
        out = "".join(c.data for c in chunks if c.stream == "stdout")
        err = "".join(c.data for c in chunks if c.stream == "stderr")
        self.assertEqual(out, "line1\nline2\nline3\n")
        self.assertEqual(err, "oops\n")
        self.assertGreaterEqual(len([c for c in chunks if c.stream == "stdout"]), 2)
        self.assertEqual(st.result.exit_code, 7)
        self.assertGreater(st.pid, 0)

    def test_collect_and_binary(self):
        r = self.s.stream("printf a; printf b >&2; printf c").collect()
        self.assertEqual((r.stdout, r.stderr, r.exit_code), ("ac", "b", 0))
        r = self.s.stream(["head", "-c", "70000", "/dev/urandom"], binary=True).collect()
        self.assertIsInstance(r.stdout, bytes)
        self.assertEqual(len(r.stdout), 70000)

    def test_large_output_consumed_slowly(self):
        st = self.s.stream('head -c 30000000 /dev/zero | tr "\\0" x')
        n = 0
        for i, c in enumerate(st):
            n += len(c.data)
            if i % 50 == 0:
                time.sleep(0.005)
        self.assertEqual(n, 30000000)
        self.assertEqual(st.result.exit_code, 0)

    def test_other_request_while_stream_is_behind(self):
        st = self.s.stream('head -c 20000000 /dev/zero | tr "\\0" y')
        it = iter(st)
        next(it)
        time.sleep(0.3)
        self.assertEqual(self.s.exec("echo side").stdout, "side\n")
        n = sum(len(c.data) for c in it)
        self.assertGreater(n, 0)
        self.assertEqual(st.result.exit_code, 0)

    def test_break_kills(self):
        st = self.s.stream("while :; do echo tick; sleep 0.05; done")
        for c in st:
            break
        self.assertEqual(st.result.signal, "SIGKILL")

    def test_kill_stream(self):
        st = self.s.stream('trap "echo got-term; exit 5" TERM; : > /tmp/trapped; while :; do sleep 0.05; done')
        # The signal once the trap is set (the file says so), not after a while.
        wait_for(lambda: self.s.exec("test -e /tmp/trapped").exit_code == 0, what="the trap set")
        st.kill("SIGTERM")
        r = st.collect()
        self.assertEqual(r.exit_code, 5)
        self.assertIn("got-term", r.stdout)

    def test_cancel_stream(self):
        ev = threading.Event()
        st = self.s.stream("while :; do echo x; sleep 0.05; done", cancel=ev)
        with self.assertRaises(Cancelled):
            for i, c in enumerate(st):
                if i == 1:
                    ev.set()
        wait_for(lambda: st.exec_id not in running(self.s), what="stream killed")

    def test_destroy_fails_running_exec_with_sandbox_died(self):
        t = self.fb.create_session()
        other = Fluebox.connect(self.srv.socket)
        try:
            out = {}

            def run():
                try:
                    t.exec("sleep 30", exec_id="victim")
                except BaseException as e:  # noqa: B902
                    out["e"] = e

            th = threading.Thread(target=run)
            th.start()
            st = t.stream("sleep 30")
            wait_for(lambda: "victim" in running(t), what="exec started")
            other.attach(t.id).destroy()
            th.join(10)
            self.assertIsInstance(out.get("e"), SandboxDiedError)
            self.assertEqual(out["e"].code, "session_dead")
            with self.assertRaises(SandboxDiedError):
                st.wait()
            self.assertTrue(t.dead)
            with self.assertRaises(NotFound):
                t.exec("true")
        finally:
            other.close()

    def test_server_death_is_connection_closed(self):
        own = Server()
        c = Fluebox.connect(own.socket)
        t = c.create_session()
        out = {}
        th = threading.Thread(target=lambda: out.setdefault("r", _catch(lambda: t.exec("sleep 30", exec_id="x"))))
        th.start()
        wait_for(lambda: "x" in running(t), what="exec started")
        own.proc.kill()
        th.join(10)
        self.assertIsInstance(out["r"], fluebox.ConnectionClosed)
        with self.assertRaises(fluebox.ConnectionClosed):
            t.exec("true")
        self.assertTrue(c.closed)
        c.close()
        own.stop()


def _catch(fn):
    try:
        return fn()
    except BaseException as e:  # noqa: B902
        return e


if __name__ == "__main__":
    unittest.main()
