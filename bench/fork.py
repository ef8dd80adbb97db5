#!/usr/bin/env python3
"""bench/fork.py — session.fork against a fresh session.create (issue 16),
for `make bench` (bench/run.sh, group "fork").

Starts a private `fluebox serve`, makes a "typical repository" (1,500 files
of 1 to 24 KiB in 150 directories, about 18 MB, like a mid-sized source
tree), and times, interleaved, REPS times each:

  create          session.create, no pool: a fresh, empty sandbox
  create-cow      session.create of a copy-on-write session over the
                  repository on the host (what fork-cow builds, empty layer)
  fork-tmpfs      session.fork of a session whose /workspace (a tmpfs) holds
                  the repository, plus a home and /tmp with a few files
  fork-cow        session.fork of a copy-on-write session over the
                  repository on the host, after 25 files were changed
  snapshot-cow    session.snapshot of that session's layer
  restore-cow     session.restore of it

Memory: the new session's cgroup memory (memory.current, usage.memoryBytes
of session.info) right after it is made, create against fork.

Appends one JSON object per group to --json (the format of bench/fbbench.c)
and Markdown tables to --md. Never asserts anything."""
import argparse
import base64
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time


class Conn:
    def __init__(self, path):
        self.s = socket.socket(socket.AF_UNIX)
        self.s.connect(path)
        self.buf = b""
        self.n = 0

    def call(self, method, **params):
        self.n += 1
        self.s.sendall((json.dumps({"id": self.n, "method": method, "params": params}) + "\n").encode())
        while True:
            while b"\n" not in self.buf:
                d = self.s.recv(1 << 20)
                if not d:
                    raise RuntimeError("the server closed the connection")
                self.buf += d
            line, self.buf = self.buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == self.n and "event" not in m:
                if "error" in m:
                    raise RuntimeError("%s: %s" % (method, m["error"]["message"]))
                return m["result"]


def make_repo(root, rnd):
    n = 0
    for d in range(150):
        path = os.path.join(root, "pkg%03d" % (d // 10), "mod%02d" % (d % 10))
        os.makedirs(path, exist_ok=True)
        for f in range(10):
            with open(os.path.join(path, "file%02d.c" % f), "w") as fh:
                size = rnd.randint(1024, 24 * 1024)
                line = "int f%d(int x) { return x * %d; } /* %s */\n" % (f, d, "x" * 20)
                fh.write((line * (size // len(line) + 1))[:size])
            n += 1
    return n


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


def variant(name, cmd, samples):
    return {"name": name, "command": cmd, "failures": 0, "samples": len(samples),
            "median_ms": round(statistics.median(samples), 3), "p90_ms": round(pct(samples, 90), 3),
            "p99_ms": round(pct(samples, 99), 3), "mean_ms": round(statistics.mean(samples), 3),
            "min_ms": round(min(samples), 3), "max_ms": round(max(samples), 3)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fluebox", required=True)
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()

    tmp = tempfile.mkdtemp(prefix="fbbench-fork.")
    os.chmod(tmp, 0o755)
    sock = os.path.join(tmp, "sock")
    repo = os.path.join(tmp, "repo")
    os.mkdir(repo)
    nfiles = make_repo(repo, random.Random(16))
    srv = subprocess.Popen([a.fluebox, "serve", "--socket", sock], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=open(os.path.join(tmp, "log"), "w"))
    try:
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        c = Conn(sock)
        limits = {"memory": "1G", "disk": "256M"}
        # The originals.
        t = c.call("session.create", pool=False, limits=limits)["session"]
        # A tmpfs workspace gets the repository through a tar stream of exec.
        tar = subprocess.run(["tar", "-C", repo, "-czf", "-", "."], stdout=subprocess.PIPE, check=True).stdout
        c.call("exec", session=t, argv=["tar", "-C", "/workspace", "-xzf", "-"],
               stdin=base64.b64encode(tar).decode(), stdinEncoding="base64")
        c.call("exec", session=t, command="echo token > ~/.token; mkdir -p ~/.cache/pip; "
               "head -c 200000 /dev/urandom > ~/.cache/pip/blob; echo x > /tmp/x")
        w = c.call("session.create", pool=False, limits=limits, workspace=repo, cow=True)["session"]
        c.call("exec", session=w, command="for f in $(find . -name '*.c' | head -25); do echo changed >> $f; done")

        times = {k: [] for k in ("create", "create-cow", "fork-tmpfs", "fork-cow", "snapshot-cow", "restore-cow")}
        mem = {k: [] for k in ("create", "create-cow", "fork-tmpfs", "fork-cow")}
        copy_ms = {"fork-tmpfs": [], "fork-cow": []}
        c.call("session.snapshot", session=w, name="base")
        for _ in range(a.reps):
            for k in times:
                t0 = time.perf_counter()
                if k == "create":
                    r = c.call("session.create", pool=False, limits=limits)
                elif k == "create-cow":
                    r = c.call("session.create", pool=False, limits=limits, workspace=repo, cow=True)
                elif k == "fork-tmpfs":
                    r = c.call("session.fork", session=t)
                elif k == "fork-cow":
                    r = c.call("session.fork", session=w)
                elif k == "snapshot-cow":
                    r = c.call("session.snapshot", session=w, name="s")
                else:
                    r = c.call("session.restore", session=w, name="base")
                times[k].append((time.perf_counter() - t0) * 1000)
                if k in mem:
                    sid = r["session"]
                    mem[k].append(c.call("session.info", session=sid)["usage"]["memoryBytes"] / 1024.0)
                    if k in copy_ms:
                        copy_ms[k].append(r.get("copyMs", 0))
                    c.call("session.destroy", session=sid)
        repo_mb = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(repo) for f in fs) / 1e6
        note = ("A typical repository: %d files, %.1f MB. fork-tmpfs copies it (the session's tmpfs "
                "/workspace) with the home and /tmp; fork-cow copies only the copy-on-write layer (25 changed "
                "files) over the same repository on the host. Each fork also builds a new sandbox, as create "
                "does. Median time of the copy itself: tmpfs %d ms, cow %d ms." %
                (nfiles, repo_mb, statistics.median(copy_ms["fork-tmpfs"]), statistics.median(copy_ms["fork-cow"])))
        cmds = {"create": "session.create {pool:false}", "create-cow": "session.create {workspace, cow}", "fork-tmpfs": "session.fork (tmpfs workspace)",
                "fork-cow": "session.fork (cow workspace)", "snapshot-cow": "session.snapshot (cow layer)",
                "restore-cow": "session.restore (cow layer)"}
        vs = []
        base = statistics.median(times["create"])
        base_cow = statistics.median(times["create-cow"])
        for k, v in times.items():
            x = variant(k, cmds[k], v)
            x["ratios"] = {"create": round(x["median_ms"] / base, 3),
                           "create-cow": round(x["median_ms"] / base_cow, 3)}
            vs.append(x)
        g = {"title": "session fork: time against a fresh create", "kind": "time", "reps": a.reps,
             "warmup": 0, "note": note, "variants": vs}
        mvs = [{"name": k, "command": cmds[k], "samples": len(v), "median_kb": round(statistics.median(v), 1),
                "ratios": {"create": round(statistics.median(v) / statistics.median(mem["create"]), 3),
                           "create-cow": round(statistics.median(v) / statistics.median(mem["create-cow"]), 3)}}
               for k, v in mem.items()]
        gm = {"title": "session fork: memory of the new session", "kind": "memory", "reps": a.reps,
              "note": "memory.current of the new session's cgroup right after it was made (the copied "
                      "files are tmpfs pages charged to it).", "variants": mvs}
        with open(a.json, "a") as f:
            f.write(json.dumps(g) + "\n")
            f.write(json.dumps(gm) + "\n")
        def r(x, k):
            return "—" if x["name"] == k else "%.2f×" % x["ratios"][k]
        md = ["", "### %s" % g["title"], "", "| variant | median ms | p90 ms | p99 ms | × create | × create-cow |",
              "|---|---|---|---|---|---|"]
        for x in vs:
            md.append("| %s | %.2f | %.2f | %.2f | %s | %s |" % (x["name"], x["median_ms"], x["p90_ms"],
                      x["p99_ms"], r(x, "create"), r(x, "create-cow")))
        md += ["", note, "", "### %s" % gm["title"], "", "| variant | median KiB | × create | × create-cow |",
               "|---|---|---|---|"]
        for x in mvs:
            md.append("| %s | %.0f | %s | %s |" % (x["name"], x["median_kb"], r(x, "create"), r(x, "create-cow")))
        md += ["", gm["note"], ""]
        with open(a.md, "a") as f:
            f.write("\n".join(md) + "\n")
        print("\n".join(md))
    finally:
        srv.terminate()
        try:
            srv.wait(20)
        except subprocess.TimeoutExpired:
            srv.kill()
            srv.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
