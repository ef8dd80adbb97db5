#!/usr/bin/env python3
"""A scripted "agent loop": the fixed list of tool calls an agent might make,
run in a fluebox session, printing what happened at each step.

    python3 examples/python/agent_loop.py

It connects to the server on the default socket (FLUEBOX_SOCKET, ...) or
starts a private one (binary from FLUEBOX_BIN or PATH). It exits 0 when every
step behaved as expected (allowed things worked, forbidden things were
denied), 1 otherwise. No traffic leaves this machine: the one allowed host is
mapped to a small HTTP server on 127.0.0.1 that this script starts, and the
forbidden one is refused by the sandbox's own DNS.
"""

import http.server
import os
import shutil
import sys
import tempfile
import threading

try:
    import fluebox  # installed: pip install ./bindings/python
except ImportError:  # from the repository
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "bindings", "python"))
    import fluebox

from fluebox import FileSystemError, Fluebox

failures = 0


def step(n, tool, what, ok, detail):
    global failures
    if not ok:
        failures += 1
    print("[%d] %-6s %s" % (n, tool, what))
    for line in str(detail).rstrip().splitlines() or [""]:
        print("         " + line)
    print("         -> " + ("as expected" if ok else "UNEXPECTED"))


class Api(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = ('{"weather": "sunny", "path": "%s"}\n' % self.path).encode()
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


def main() -> int:
    # A secret on the host, outside anything the sandbox is given.
    secret_dir = tempfile.mkdtemp(prefix="fluebox-example-")
    secret = os.path.join(secret_dir, "api-key.txt")
    with open(secret, "w") as f:
        f.write("sk-host-secret-do-not-leak\n")
    os.chmod(secret, 0o600)

    # The one host the agent may reach, served locally.
    api = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Api)
    threading.Thread(target=api.serve_forever, daemon=True).start()
    port = api.server_address[1]

    try:
        with Fluebox.connect() as fb, fb.session(
            "standard",
            memory="256M",
            allow_net=["api.example.test:80"],
            # Tests and demos map the allowed name to a local server (like curl --resolve).
            options=["--egress-resolve", "api.example.test:80=127.0.0.1:%d" % port],
        ) as s:
            print("session %s on %s\n" % (s.id, fb.socket))

            # 1. write: the agent writes a program.
            s.write_file("src/primes.py", "primes = []\nn = 2\nwhile len(primes) < 10:\n"
                         "    if all(n % p for p in primes):\n        primes.append(n)\n    n += 1\n"
                         "print('first primes:', *primes)\n")
            st = s.stat("src/primes.py")
            step(1, "write", "src/primes.py", st.is_file and st.size > 0,
                 "%d bytes written (parent directory created)" % st.size)

            # 2. bash: the agent runs it.
            r = s.exec("python3 src/primes.py > out.txt && echo done", timeout=10)
            step(2, "bash", "python3 src/primes.py > out.txt", r.exit_code == 0,
                 "exit %d: %s%s" % (r.exit_code, r.stdout, r.stderr))

            # 3. read: the agent reads the output.
            out = s.read_file("out.txt")
            step(3, "read", "out.txt", "2 3 5 7 11 13 17 19 23 29" in out, out)

            # 4. read a host secret: by path, through the shell, through a symlink.
            denied = []
            try:
                s.read_file(secret)
            except FileSystemError as e:
                denied.append("read %s: %s" % (secret, e.code))
            cat = s.exec(["cat", secret, "/etc/shadow"])
            if cat.exit_code != 0 and "sk-host" not in cat.stdout:
                denied.append("cat: exit %d: %s" % (cat.exit_code, "; ".join(cat.stderr.strip().splitlines())))
            s.exec(["ln", "-s", secret, "key-link"])
            try:
                s.read_file("key-link")
            except FileNotFoundError as e:  # FileSystemError is also an OSError
                denied.append("read via symlink: %s" % e.code)
            step(4, "read", "the host secret " + secret, len(denied) == 3, "\n".join(denied))

            # 5. network: the allowed host answers; any other host does not exist.
            s.write_file("fetch.py", "import sys, urllib.request\nfor url in sys.argv[1:]:\n"
                         "    try:\n        r = urllib.request.urlopen(url, timeout=5)\n"
                         "        print(url, r.status, r.read().decode().strip())\n"
                         "    except Exception as e:\n        print(url, 'DENIED', getattr(e, 'reason', e))\n")
            net = s.exec(["python3", "fetch.py", "http://api.example.test/today", "http://example.com/"], timeout=20)
            lines = net.stdout.strip().splitlines() + ["", ""]
            step(5, "bash", "fetch an allowed and a non-allowed host",
                 "api.example.test/today 200" in lines[0] and "sunny" in lines[0]
                 and lines[1].startswith("http://example.com/ DENIED"),
                 net.stdout + net.stderr)

            # 6. a runaway command hits its timeout: exit code 124, the sandbox lives on.
            slow = s.exec("sleep 30", timeout=0.5)
            step(6, "bash", "sleep 30 with a 0.5 s timeout", slow.exit_code == 124 and slow.timed_out,
                 "exit %d; %s" % (slow.exit_code, slow.stderr.strip()))

            # 7. what did the session cost? (-1: no cgroup controller measures it)
            info = s.info()
            u = info["usage"]
            fmt = lambda v, unit: "not measured" if v < 0 else "%d %s" % (v, unit)  # noqa: E731
            step(7, "info", "session usage", info["state"] == "ready",
                 "memory peak %s, cpu %s, %d execs" % (fmt(u["memoryPeakBytes"], "bytes"),
                                                      fmt(u["cpuMs"], "ms"), info["execs"]["total"]))
    finally:
        api.shutdown()
        shutil.rmtree(secret_dir, ignore_errors=True)

    print("\n%d step(s) did not behave as expected" % failures if failures else "\nevery step behaved as expected")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
