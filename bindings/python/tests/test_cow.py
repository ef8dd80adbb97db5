"""Copy-on-write sessions: diff, commit, reset (issue 9), against a real server."""

import os
import shutil
import subprocess
import time
import unittest

from fluebox import AsyncFluebox, CommitError, Fluebox

from helpers import Server, tmpdir


def repo():
    d = tmpdir("fbpycow-")
    for name, text in (("main.c", "int foo;\n"), ("old.txt", "old\n"), ("keep.txt", "keep\n")):
        with open(os.path.join(d, name), "w") as f:
            f.write(text)
    return d


def read(d, name):
    with open(os.path.join(d, name)) as f:
        return f.read()


class CowTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.srv = Server()
        cls.fb = Fluebox.connect(cls.srv.socket)

    @classmethod
    def tearDownClass(cls):
        cls.fb.close()
        cls.srv.stop()

    def test_diff_json(self):
        d = repo()
        with self.fb.session(workspace=d, cow=True) as s:
            s.exec("sed -i s/foo/bar/ main.c && rm old.txt && echo new > n.txt")
            self.assertEqual(read(d, "main.c"), "int foo;\n")
            self.assertTrue(os.path.exists(os.path.join(d, "old.txt")))
            r = s.diff()
            by = {c["path"]: c for c in r["changes"]}
            self.assertEqual(by["main.c"]["status"], "modified")
            self.assertIn("-int foo;\n+int bar;", by["main.c"]["diff"])
            self.assertEqual(by["old.txt"]["status"], "deleted")
            self.assertEqual(by["n.txt"]["status"], "added")
            self.assertNotIn("keep.txt", by)
            only = s.diff(paths="main.c", diffs=False)
            self.assertEqual([c["path"] for c in only["changes"]], ["main.c"])
            self.assertNotIn("diff", only["changes"][0])
        shutil.rmtree(d, ignore_errors=True)

    def test_patch_applies_with_git(self):
        d = repo()
        copy = tmpdir("fbpycow-copy-")
        shutil.copytree(d, copy, dirs_exist_ok=True)
        with self.fb.session(workspace=d, cow=True) as s:
            s.write_file("main.c", "int bar;\n")
            s.write_file("sub/new.txt", "hello\n")
            patch = s.diff(format="patch")["patch"]
        with open(os.path.join(copy, "p.diff"), "w") as f:
            f.write(patch)
        subprocess.run(["git", "apply", "p.diff"], cwd=copy, check=True)
        self.assertEqual(read(copy, "main.c"), "int bar;\n")
        self.assertEqual(read(copy, "sub/new.txt"), "hello\n")

    def test_commit_and_reset(self):
        d = repo()
        with self.fb.session(workspace=d, cow=True) as s:
            s.write_file("main.c", "int committed;\n")
            s.write_file("other.txt", "not chosen\n")
            self.assertTrue(s.commit(paths=["main.c"])["committed"])
            self.assertEqual(read(d, "main.c"), "int committed;\n")
            self.assertFalse(os.path.exists(os.path.join(d, "other.txt")))
            self.assertEqual(s.reset(), {"reset": True})
            self.assertEqual(s.diff()["changes"], [])
            self.assertFalse(s.exists("other.txt"))

    def test_conflict_raises_commit_error(self):
        d = repo()
        with self.fb.session(workspace=d, cow=True) as s:
            s.write_file("main.c", "int sandbox;\n")
            s.write_file("added.txt", "a\n")
            time.sleep(0.02)
            with open(os.path.join(d, "main.c"), "w") as f:
                f.write("int host;\n")
            with self.assertRaises(CommitError) as cm:
                s.commit()
            self.assertEqual(cm.exception.code, "commit_conflict")
            self.assertEqual([c["path"] for c in cm.exception.conflicts], ["main.c"])
            self.assertEqual(read(d, "main.c"), "int host;\n")
            self.assertFalse(os.path.exists(os.path.join(d, "added.txt")))
            self.assertTrue(s.commit(force=True)["committed"])
            self.assertEqual(read(d, "main.c"), "int sandbox;\n")

    def test_asyncio(self):
        import asyncio

        d = repo()

        async def main():
            async with await AsyncFluebox.connect(self.srv.socket) as fb, fb.session(workspace=d, cow=True) as s:
                await s.write_file("main.c", "int a;\n")
                self.assertEqual([c["path"] for c in (await s.diff())["changes"]], ["main.c"])
                self.assertTrue((await s.commit())["committed"])
                self.assertEqual(await s.reset(), {"reset": True})

        asyncio.run(main())
        self.assertEqual(read(d, "main.c"), "int a;\n")


if __name__ == "__main__":
    unittest.main()
