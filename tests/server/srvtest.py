"""srvtest.py — what the tests of `fluebox serve` share (tests/server/test_*.py,
run together by test_server.py): the "ok - NAME" / "not ok - NAME: WHY"
lines, the Server fixture (a fluebox serve on a private socket, as root or
another user), waiting for a condition, the session inits and cgroups a
server leaves, a mixed request workload, the corpus of malformed lines,
the @test registry and the runner.

A test whose one argument is named srv gets the server shared by such tests
(started again if a test ended it); any other starts what it needs. Tests
run in the order they are registered: the order test_server.py imports the
modules, then the order of each file."""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import fbc  # noqa: E402

FB = os.path.abspath(os.environ.get("FB", "./fluebox"))
ROOT = os.geteuid() == 0
TUSER = os.environ.get("FB_TEST_USER", "fbtest")
PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
RESULTS = {"pass": 0, "fail": 0}
ONLY = None


def ok(name):
    RESULTS["pass"] += 1
    print("ok - %s" % name, flush=True)


def notok(name, why):
    RESULTS["fail"] += 1
    why = str(why).replace("\n", " | ")[:400]
    print("not ok - %s: %s" % (name, why), flush=True)


def check(name, cond, why=""):
    if cond:
        ok(name)
    else:
        notok(name, why or "condition false")
    return cond


def user_exists(u):
    try:
        pwd.getpwnam(u)
        return True
    except KeyError:
        return False


def wait_for(fn, timeout=15.0, step=0.02):
    end = time.time() + timeout
    while time.time() < end:
        v = fn()
        if v:
            return v
        time.sleep(step)
    return fn()


class Server:
    """A fluebox serve process on a private socket."""

    def __init__(self, args=(), user=None, binary=None, env=None, wrap=()):
        self.dir = tempfile.mkdtemp(prefix="fbsrv.")
        os.chmod(self.dir, 0o755)
        self.sock = os.path.join(self.dir, "s.sock")
        self.user = user
        cmd = list(wrap) + [binary or FB, "serve", "--socket", self.sock] + list(args)
        if user:
            uid = pwd.getpwnam(user).pw_uid
            os.chown(self.dir, uid, -1)
            envargs = ["%s=%s" % kv for kv in (env or {}).items()]
            cmd = ["setpriv", "--reuid=" + user, "--regid=" + user, "--init-groups",
                   "--reset-env", "--", "env", "PATH=" + os.environ.get("PATH", "/usr/bin:/bin"),
                   "HOME=/tmp"] + envargs + cmd
        self.errf = open(os.path.join(self.dir, "stderr"), "w+")
        e = dict(os.environ)
        e.update(env or {})
        self.started = time.time() - 1  # cgroups_of(pid, since=started): its own
        self.p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=self.errf, env=e)
        def up():
            if self.p.poll() is not None:
                return True
            try:  # the file exists from bind(); connect works from listen()
                s = socket.socket(socket.AF_UNIX)
                s.connect(self.sock)
                s.close()
                return True
            except OSError:
                return False
        if not wait_for(up, 20):
            raise RuntimeError("server did not start")
        if self.p.poll() is not None:
            raise RuntimeError("server exited: " + self.stderr())

    @property
    def pid(self):
        """The fluebox process (not setpriv: it execs, so the same pid)."""
        return self.p.pid

    def conn(self):
        return fbc.Conn(self.sock)

    def stderr(self):
        self.errf.flush()
        with open(self.errf.name) as f:
            return f.read()

    def rss_kb(self, field="VmRSS"):
        return status_kb(self.pid, field)

    def stop(self, sig=signal.SIGTERM, timeout=30):
        if self.p.poll() is None:
            self.p.send_signal(sig)
            try:
                self.p.wait(timeout)
            except subprocess.TimeoutExpired:
                self.p.kill()
                self.p.wait()
        return self.p.returncode

    def cleanup(self):
        self.stop()
        self.errf.close()
        shutil.rmtree(self.dir, ignore_errors=True)


def status_kb(pid, field):
    """A kB field of /proc/PID/status (VmRSS, VmSize, ...), -1 if absent."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    return -1


def session_inits(server_pid):
    """Pids of session inits that are children of the server."""
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open("/proc/%s/stat" % d) as f:
                st = f.read()
            ppid = int(st[st.rindex(")") + 2:].split()[1])
            if ppid == server_pid:
                out.append(int(d))
        except (OSError, ValueError):
            pass
    return out


def cgroups_of(pid, since=0.0):
    """The fluebox-PID-* cgroups made at or after since (a time.time()):
    pids are reused (pid_max is often 32768), so one left long ago by a
    killed fluebox of another run can carry this pid."""
    out = []
    for root, dirs, _ in os.walk("/sys/fs/cgroup"):
        for d in dirs:
            if d.startswith("fluebox-%d-" % pid):
                path = os.path.join(root, d)
                try:
                    if os.stat(path).st_mtime < since:
                        continue
                except OSError:
                    continue
                out.append(path)
        if root.count("/") > 8:
            dirs[:] = []
    return out


TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


# Lines that are not requests, each with the error code it must get
# (test_protocol.py; the ASan workload of test_limits.py sends them too).
MALFORMED = [
    (b"{", "parse_error"),
    (b"not json at all", "parse_error"),
    (b"[1,2,3]", "invalid_request"),
    (b"\"just a string\"", "invalid_request"),
    (b"42", "invalid_request"),
    (b"null", "invalid_request"),
    (b"{}", "invalid_request"),
    (b'{"id":1}', "invalid_request"),
    (b'{"method":"server.info"}', "invalid_request"),
    (b'{"id":1.5,"method":"server.info"}', "invalid_request"),
    (b'{"id":true,"method":"server.info"}', "invalid_request"),
    (b'{"id":{"a":1},"method":"server.info"}', "invalid_request"),
    (b'{"id":"","method":"server.info"}', "invalid_request"),
    (b'{"id":"' + b"x" * 200 + b'","method":"server.info"}', "invalid_request"),
    (b'{"id":99999999999999999999,"method":"server.info"}', "parse_error"),
    (b'{"id":1,"method":5}', "invalid_request"),
    (b'{"id":1,"method":"server.info","params":[1]}', "invalid_request"),
    (b'{"id":1,"method":"server.info","params":"x"}', "invalid_request"),
    (b'{"id":1,"method":"no.such.method"}', "method_not_found"),
    (b'{"id":1,"method":""}', "method_not_found"),
    (b'{"id":1,"id":2,"method":"server.info"}', "parse_error"),
    (b'{"id":1,"method":"server.info"} trailing', "parse_error"),
    (b'{"id":1,"method":"server.info\\u0000x"}', "method_not_found"),
    (b'{"id":1,"method":"file.read","params":{"session":"s-0","path":"a\\u0000b"}}', "not_found"),
    (b'{"id":1,"method":"exec","params":{"session":"s\\u0000","argv":["x"]}}', "invalid_params"),
    (b'{"id":"\xff\xfe","method":"server.info"}', "parse_error"),
    (b"\x00\x01\x02\x03", "parse_error"),
    (b"[" * 100000, "parse_error"),
    (b'{"a":' * 5000, "parse_error"),
    (b'{"id":1,"method":"session.create","params":{"limits":{"memory":[[[[]]]]}}}', "invalid_params"),
    (b'{"id":1,"method":"session.info","params":{"session":5}}', "invalid_params"),
    (b'{"id":1,"method":"session.info","params":{"session":"' + b"s" * 100 + b'"}}', "invalid_params"),
    (b'{"id":1,"method":"exec","params":{"session":null}}', "invalid_params"),
    (b'{"id":1,"method":"file.read","params":{"session":"s-0","path":"a"}}', "not_found"),
    (b'\xef\xbb\xbf{"id":1,"method":"server.info"}', "parse_error"),
]


def run_requests(c, s, n):
    """n requests of every kind, good and bad, on session s through c."""
    for i in range(n):
        k = i % 10
        if k == 0:
            c.call("exec", {"session": s, "argv": ["true"]})
        elif k == 1:
            c.call("file.write", {"session": s, "path": "m.txt", "data": "x" * 4096})
        elif k == 2:
            c.call("file.read", {"session": s, "path": "m.txt"})
        elif k == 3:
            c.try_call("file.read", {"session": s, "path": "missing"})
        elif k == 4:
            c.send_raw(b'{"id":"bad","method":\n')
            c.recv()
        elif k == 5:
            c.call("session.info", {"session": s})
        elif k == 6:
            c.call("file.readdir", {"session": s, "path": "/"})
        elif k == 7:
            c.try_call("nope.method", {})
        else:
            c.call("file.stat", {"session": s, "path": "m.txt"})


def main():
    global ONLY
    args = sys.argv[1:]
    if "-k" in args:
        ONLY = args[args.index("-k") + 1]
    if not os.path.exists(FB):
        print("not ok - server tests: no fluebox binary at %s" % FB)
        return 1
    shared = None
    try:
        for fn in TESTS:
            if ONLY and ONLY not in fn.__name__:
                continue
            try:
                if fn.__code__.co_argcount == 1 and fn.__code__.co_varnames[0] == "srv":
                    if shared is None or shared.p.poll() is not None:
                        shared = Server()
                    fn(shared)
                else:
                    fn()
            except Exception as e:  # noqa: BLE001
                notok(fn.__name__, "exception: %r %s" % (e, traceback.format_exc().splitlines()[-3:]))
    finally:
        if shared:
            if shared.p.poll() is not None:
                notok("shared server", "it exited: " + shared.stderr()[-300:])
            shared.cleanup()
    print("# server tests: %d passed, %d failed" % (RESULTS["pass"], RESULTS["fail"]))
    print("# end of suite")  # ran to its end (tests/tap.sh)
    return 1 if RESULTS["fail"] else 0
