"""The asyncio client, against a real `fluebox serve`."""

import asyncio
import unittest

from fluebox import (
    AsyncFluebox,
    AsyncSession,
    ConnectionClosed,
    FileSystemError,
    InvalidParams,
    NotFound,
    SandboxDiedError,
)

from helpers import Server, binary, pid_alive, wait_for


def arun(coro):
    return asyncio.run(asyncio.wait_for(coro, 120))


async def running(s):
    return (await s.info())["execs"]["running"]


async def until(cond, timeout=10.0, what="condition"):
    loop = asyncio.get_event_loop()
    end = loop.time() + timeout
    while not await cond():
        if loop.time() > end:
            raise AssertionError("timed out waiting for %s" % what)
        await asyncio.sleep(0.025)


class AsyncClientTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()

    @classmethod
    def tearDownClass(cls):
        cls.srv.stop()

    def test_every_method(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb:
                info = await fb.server_info()
                self.assertEqual(info["protocol"], 1)
                async with fb.session("standard", memory="256M", env={"A": "1"}) as s:
                    self.assertIsInstance(s, AsyncSession)
                    self.assertIn(s.id, [i["session"] for i in await fb.list_sessions()])
                    self.assertEqual((await s.info())["state"], "ready")
                    r = await s.exec("echo $A; echo e >&2; exit 2", cwd="/tmp", env={"B": "2"})
                    self.assertEqual((r.exit_code, r.stdout, r.stderr), (2, "1\n", "e\n"))
                    self.assertEqual((await s.exec(["cat"], stdin=b"\x00x", binary=True)).stdout, b"\x00x")
                    self.assertEqual(await s.write_file("d/f.txt", "héllo"), 6)
                    self.assertEqual(await s.read_file("d/f.txt"), "héllo")
                    self.assertEqual(await s.read_bytes("d/f.txt", offset=1, length=2), "é".encode())
                    self.assertEqual((await s.stat("d/f.txt")).size, 6)
                    await s.exec("ln -s f.txt d/l")
                    self.assertTrue((await s.lstat("d/l")).is_symlink)
                    self.assertEqual(await s.listdir("d"), ["f.txt", "l"])
                    self.assertEqual([e.type for e in await s.readdir("d")], ["file", "symlink"])
                    self.assertTrue(await s.exists("d/f.txt"))
                    self.assertFalse(await s.exists("d/none"))
                    self.assertTrue(await s.mkdir("d/x/y", parents=True))
                    await s.rename("d/f.txt", "d/g.txt")
                    self.assertTrue(await s.rm("d", recursive=True))
                    self.assertFalse(await s.rm("d", force=True))
                    with self.assertRaises(FileNotFoundError) as cm:
                        await s.read_file("d/g.txt")
                    self.assertIsInstance(cm.exception, FileSystemError)
                    with self.assertRaises(InvalidParams):
                        await s.stat("a\0b")
                    t = fb.attach(s.id)
                    self.assertEqual((await t.exec("echo attached")).stdout, "attached\n")
                self.assertTrue(s.dead)
                with self.assertRaises(NotFound):
                    await s.exec("true")
                s2 = await fb.session()
                await s2.destroy()

        arun(main())

    def test_timeout_124(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb, fb.session() as s:
                r = await s.exec("echo a; sleep 30", timeout=0.3)
                self.assertEqual((r.exit_code, r.timed_out, r.stdout), (124, True, "a\n"))

        arun(main())

    def test_stream(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb, fb.session() as s:
                st = s.stream("for i in 1 2 3; do echo $i; sleep 0.1; done; exit 3")
                chunks = [c async for c in st]
                self.assertEqual("".join(c.data for c in chunks), "1\n2\n3\n")
                self.assertGreaterEqual(len(chunks), 2)
                self.assertEqual((await st.result()).exit_code, 3)
                r = await s.stream("printf a; printf b >&2").collect()
                self.assertEqual((r.stdout, r.stderr), ("a", "b"))
                # slow consumer of a large output (backpressure), another request meanwhile
                st = s.stream('head -c 20000000 /dev/zero | tr "\\0" z')
                n = 0
                i = 0
                async for c in st:
                    n += len(c.data)
                    i += 1
                    if i == 3:
                        self.assertEqual((await s.exec("echo side")).stdout, "side\n")
                    if i % 50 == 0:
                        await asyncio.sleep(0.005)
                self.assertEqual(n, 20000000)
                # leaving the loop early kills the command
                st = s.stream("while :; do echo t; sleep 0.05; done")
                async for c in st:
                    break
                self.assertEqual((await st.result()).signal, "SIGKILL")

        arun(main())

    def test_cancellation_kills_the_command(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb, fb.session() as s:
                task = asyncio.ensure_future(s.exec("sleep 30; touch /tmp/after", exec_id="c1"))
                await until(lambda: _has(s, "c1"), what="exec started")
                task.cancel()
                with self.assertRaises(asyncio.CancelledError):
                    await task
                await until(lambda: _lacks(s, "c1"), what="exec killed")
                with self.assertRaises(asyncio.TimeoutError):
                    await asyncio.wait_for(s.exec("sleep 30", exec_id="c2"), 0.5)
                await until(lambda: _lacks(s, "c2"), what="exec killed by wait_for")
                self.assertFalse(await s.exists("/tmp/after"))

        arun(main())

    def test_session_death(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb:
                s = await fb.create_session()
                task = asyncio.ensure_future(s.exec("sleep 30", exec_id="v"))
                await until(lambda: _has(s, "v"), what="exec started")
                async with await AsyncFluebox.connect(self.srv.socket) as other:
                    await other.attach(s.id).destroy()
                with self.assertRaises(SandboxDiedError) as cm:
                    await task
                self.assertEqual(cm.exception.code, "session_dead")
                self.assertTrue(s.dead)

        arun(main())

    def test_server_death(self):
        async def main():
            own = Server()
            try:
                fb = await AsyncFluebox.connect(own.socket)
                s = await fb.create_session()
                task = asyncio.ensure_future(s.exec("sleep 30", exec_id="v"))
                await until(lambda: _has(s, "v"), what="exec started")
                own.proc.kill()
                with self.assertRaises(ConnectionClosed):
                    await task
                self.assertTrue(fb.closed)
                await fb.close()
            finally:
                own.stop()

        arun(main())

    def test_private_server(self):
        async def main():
            fb = await AsyncFluebox.connect(private=True, binary=binary())
            pid = fb.server_pid
            self.assertTrue(pid_alive(pid))
            async with fb.session() as s:
                self.assertEqual((await s.exec("echo p")).stdout, "p\n")
            await fb.close()
            return pid

        pid = arun(main())
        wait_for(lambda: not pid_alive(pid), what="private server exit")


async def _has(s, xid):
    return xid in await running(s)


async def _lacks(s, xid):
    return xid not in await running(s)


if __name__ == "__main__":
    unittest.main()
