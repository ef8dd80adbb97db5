"""Concurrency, large files and unicode paths (skipped with --quick)."""

import asyncio
import hashlib
import os
import unittest
from concurrent.futures import ThreadPoolExecutor

from fluebox import AsyncFluebox, Fluebox

from helpers import QUICK, Server


@unittest.skipIf(QUICK, "quick run")
class ScaleTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_20_sessions_in_parallel_threads(self):
        def one(i):
            with self.fb.session(memory="128M") as s:
                s.write_file("n.txt", str(i))
                r = s.exec('cat n.txt; echo " $(hostname)"; ls /workspace')
                return i, s.id, r.stdout, s.read_file("n.txt")

        pool = ThreadPoolExecutor(20)
        try:
            results = list(pool.map(one, range(20)))
        finally:
            pool.shutdown(wait=False)  # a hung exec must not hold the run (see run.py's timeout)
        self.assertEqual(len({r[1] for r in results}), 20)
        for i, _, out, back in results:
            self.assertEqual(back, str(i))
            self.assertEqual(out, "%d fluebox\nn.txt\n" % i)

    def test_20_sessions_in_parallel_asyncio(self):
        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb:
                async def one(i):
                    async with fb.session(memory="128M") as s:
                        await s.write_file("n.txt", str(i))
                        r = await s.exec("cat n.txt; ls /workspace")
                        return s.id, r.stdout

                return await asyncio.gather(*(one(i) for i in range(20)))

        results = asyncio.run(main())
        self.assertEqual(len({r[0] for r in results}), 20)
        self.assertEqual(sorted(r[1] for r in results), sorted("%dn.txt\n" % i for i in range(20)))

    def test_50mb_round_trip_checksummed(self):
        with self.fb.session(disk="256M") as s:
            data = os.urandom(50 * 1024 * 1024)
            want = hashlib.sha256(data).hexdigest()
            self.assertEqual(s.write_file("/tmp/big.bin", data), len(data))
            self.assertEqual(s.stat("/tmp/big.bin").size, len(data))
            self.assertEqual(s.exec(["sha256sum", "/tmp/big.bin"]).stdout.split()[0], want)
            back = s.read_bytes("/tmp/big.bin")
            self.assertEqual(len(back), len(data))
            self.assertEqual(hashlib.sha256(back).hexdigest(), want)

    def test_large_text_multibyte_intact(self):
        with self.fb.session(disk="128M") as s:
            line = "ünïcødé ✓ 日本語 🎉\n"
            text = line * (20 * 1024 * 1024 // len(line.encode()) + 1)
            s.write_file("/tmp/big.txt", text)
            self.assertTrue(s.read_file("/tmp/big.txt") == text)

    def test_unicode_paths(self):
        with self.fb.session() as s:
            d = "ünïcødé dir/日本語"
            name = 'файл 🎉 "quoted" $x.txt'
            p = d + "/" + name
            s.write_file(p, "contenu: é")
            self.assertEqual(s.listdir(d), [name])
            self.assertEqual(s.stat(p).size, len("contenu: é".encode()))
            self.assertEqual(s.exec(["cat", "/workspace/" + p]).stdout, "contenu: é")
            self.assertEqual(s.exec(["ls", "/workspace/ünïcødé dir"]).stdout, "日本語\n")
            s.rename(p, d + "/ok ✓")
            self.assertEqual(s.read_file(d + "/ok ✓"), "contenu: é")
            s.rm("ünïcødé dir", recursive=True)
            self.assertFalse(s.exists("ünïcødé dir"))


if __name__ == "__main__":
    unittest.main()
