#!/usr/bin/env python3
"""bench/mcp.py — the round trip of an MCP tool call through `fluebox mcp`
(issue 25), for `make bench` (bench/run.sh, group "mcp").

Starts `fluebox mcp` (which starts its private server and session), speaks
MCP over its stdin and stdout as an agent's client would, and times,
interleaved, REPS times each after a warm-up:

  mcp-exec      tools/call exec {"argv": ["/bin/true"]}: JSON-RPC line in,
                fluebox mcp, the server, the session's init, fork and exec
                of /bin/true, and back
  mcp-ping      ping: the JSON-RPC floor (a line to fluebox mcp and back)
  session-exec  the same exec sent straight to a `fluebox serve` session
                over its socket (the wire protocol, no MCP): what MCP adds
                is the difference

Appends one JSON object (the format of bench/fbbench.c) to --json and a
Markdown table to --md. Never asserts anything."""
import argparse
import json
import os
import shutil
import socket
import statistics
import subprocess
import tempfile
import time


def pct(v, p):
    v = sorted(v)
    return v[min(len(v) - 1, int(round(p / 100.0 * (len(v) - 1))))]


class Lines:
    """Newline-delimited JSON over a pair of file objects or a socket."""

    def __init__(self, send, recv):
        self.send, self.recv, self.buf = send, recv, b""

    def call(self, msg, want_id):
        self.send((json.dumps(msg) + "\n").encode())
        while True:
            while b"\n" not in self.buf:
                d = self.recv()
                if not d:
                    raise RuntimeError("connection closed")
                self.buf += d
            line, self.buf = self.buf.split(b"\n", 1)
            m = json.loads(line)
            if m.get("id") == want_id and "event" not in m:
                if "error" in m:
                    raise RuntimeError(str(m["error"]))
                return m["result"]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fluebox", required=True)
    ap.add_argument("--reps", type=int, default=200)
    ap.add_argument("--json", required=True)
    ap.add_argument("--md", required=True)
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="fbbench-mcp.")
    mcp = subprocess.Popen([a.fluebox, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           stderr=subprocess.DEVNULL)
    sock = os.path.join(tmp, "sock")
    srv = subprocess.Popen([a.fluebox, "serve", "--socket", sock], stdin=subprocess.DEVNULL,
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        def send(b):
            mcp.stdin.write(b)
            mcp.stdin.flush()
        m = Lines(send, lambda: os.read(mcp.stdout.fileno(), 1 << 16))
        m.call({"jsonrpc": "2.0", "id": 0, "method": "initialize",
                "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                           "clientInfo": {"name": "bench", "version": "1"}}}, 0)
        send(b'{"jsonrpc":"2.0","method":"notifications/initialized"}\n')
        for _ in range(200):
            if os.path.exists(sock):
                break
            time.sleep(0.05)
        s = socket.socket(socket.AF_UNIX)
        s.connect(sock)
        w = Lines(s.sendall, lambda: s.recv(1 << 16))
        sid = w.call({"id": 1, "method": "session.create", "params": {"pool": False}}, 1)["session"]
        n = [10]

        def mcp_exec():
            n[0] += 1
            r = m.call({"jsonrpc": "2.0", "id": n[0], "method": "tools/call",
                        "params": {"name": "exec", "arguments": {"argv": ["/bin/true"]}}}, n[0])
            if r.get("isError"):
                raise RuntimeError("exec failed: %s" % r)

        def mcp_ping():
            n[0] += 1
            m.call({"jsonrpc": "2.0", "id": n[0], "method": "ping"}, n[0])

        def session_exec():
            n[0] += 1
            r = w.call({"id": n[0], "method": "exec", "params": {"session": sid, "argv": ["/bin/true"]}}, n[0])
            if r.get("exitCode") != 0:
                raise RuntimeError("exec failed: %s" % r)

        fns = {"mcp-exec": mcp_exec, "mcp-ping": mcp_ping, "session-exec": session_exec}
        cmds = {"mcp-exec": 'tools/call exec {"argv": ["/bin/true"]} through fluebox mcp',
                "mcp-ping": "ping through fluebox mcp",
                "session-exec": "exec /bin/true on a fluebox serve session (wire protocol)"}
        times = {k: [] for k in fns}
        for _ in range(5):
            for f in fns.values():
                f()
        for _ in range(a.reps):
            for k, f in fns.items():
                t = time.perf_counter()
                f()
                times[k].append((time.perf_counter() - t) * 1000.0)
        vs = []
        for k, v in times.items():
            vs.append({"name": k, "command": cmds[k], "failures": 0, "samples": len(v),
                       "median_ms": round(statistics.median(v), 3), "p90_ms": round(pct(v, 90), 3),
                       "p99_ms": round(pct(v, 99), 3), "mean_ms": round(statistics.mean(v), 3),
                       "min_ms": round(min(v), 3), "max_ms": round(max(v), 3)})
        note = ("One `fluebox mcp` (its own private server and session, default policy) driven over "
                "its stdio by this script, and a `fluebox serve` session driven over its socket, "
                "interleaved; each call waits for its answer.")
        g = {"title": "mcp: a tool call's round trip through fluebox mcp", "kind": "time",
             "reps": a.reps, "warmup": 5, "note": note, "variants": vs}
        with open(a.json, "a") as f:
            f.write(json.dumps(g) + "\n")
        md = ["", "### %s" % g["title"], "", "| variant | median ms | p90 ms | p99 ms |", "|---|---|---|---|"]
        for x in vs:
            md.append("| %s | %.3f | %.3f | %.3f |" % (x["name"], x["median_ms"], x["p90_ms"], x["p99_ms"]))
        md += ["", note, ""]
        with open(a.md, "a") as f:
            f.write("\n".join(md) + "\n")
        print("\n".join(md))
    finally:
        for p in (mcp, srv):
            if p is mcp:
                try:
                    p.stdin.close()
                except OSError:
                    pass
            else:
                p.terminate()
            try:
                p.wait(20)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
