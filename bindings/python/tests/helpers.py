"""Test helpers: a real `fluebox serve` (never a mock).

The binary: FB (set by tests/run.sh), FLUEBOX_BIN, or the repository's
./fluebox."""

import atexit
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
QUICK = bool(os.environ.get("FLUEBOX_TEST_QUICK"))


def binary() -> str:
    b = os.environ.get("FB") or os.environ.get("FLUEBOX_BIN") or os.path.join(REPO, "fluebox")
    if not os.path.exists(b):
        raise unittest.SkipTest("fluebox binary not found at %s (set FB)" % b)
    return b


_TMPDIRS = []


def _remove_tmpdirs() -> None:
    for d in _TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)


atexit.register(_remove_tmpdirs)


def tmpdir(prefix="fbpy-") -> str:
    """A fresh directory, removed when the test process exits."""
    d = tempfile.mkdtemp(prefix=prefix)
    os.chmod(d, 0o755)
    _TMPDIRS.append(d)
    return d


def _can_connect(path: str) -> bool:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(path)
        return True
    except OSError:
        return False
    finally:
        s.close()


class Server:
    """`fluebox serve --socket DIR/s.sock ARGS`, ready when it accepts."""

    def __init__(self, *args: str):
        self.dir = tmpdir("fbpysrv-")
        self.socket = os.path.join(self.dir, "s.sock")
        self.log = open(os.path.join(self.dir, "server.log"), "wb")
        self.proc = subprocess.Popen([binary(), "serve", "--socket", self.socket] + list(args),
                                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=self.log)
        deadline = time.monotonic() + 20
        while not (os.path.exists(self.socket) and _can_connect(self.socket)):
            if self.proc.poll() is not None:
                raise RuntimeError("fluebox serve exited %s: %s" % (self.proc.returncode, self.stderr()))
            if time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError("fluebox serve not ready: %s" % self.stderr())
            time.sleep(0.02)

    def stderr(self) -> str:
        try:
            with open(os.path.join(self.dir, "server.log"), "rb") as f:
                return f.read()[-4000:].decode("utf-8", "replace")
        except OSError:
            return ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        return True
    except ProcessLookupError:
        return False
    except PermissionError:
        return True


def wait_for(cond, timeout=10.0, what="condition"):
    end = time.monotonic() + timeout
    while not cond():
        if time.monotonic() > end:
            raise AssertionError("timed out waiting for %s" % what)
        time.sleep(0.025)


def running(session) -> list:
    return session.info()["execs"]["running"]
