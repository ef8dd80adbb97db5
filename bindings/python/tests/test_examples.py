"""The scripted agent loop in examples/python runs against a real (private)
server and every step behaves as expected."""

import os
import subprocess
import sys
import unittest

from helpers import REPO, binary, tmpdir


class ExampleTest(unittest.TestCase):
    def test_agent_loop(self):
        env = dict(os.environ, FLUEBOX_BIN=binary(), FLUEBOX_SOCKET=os.path.join(tmpdir(), "none.sock"))
        r = subprocess.run([sys.executable, os.path.join(REPO, "examples", "python", "agent_loop.py")],
                           capture_output=True, text=True, env=env, timeout=120)
        self.assertEqual(r.returncode, 0, r.stdout + r.stderr)
        self.assertIn("every step behaved as expected", r.stdout)
        self.assertIn("http://example.com/ DENIED", r.stdout)
        self.assertIn("read via symlink: ENOENT", r.stdout)


if __name__ == "__main__":
    unittest.main()
