"""fbc.py — a minimal client of the fluebox wire protocol for the server
tests and benchmarks (stdlib only; the real clients live in bindings/)."""
import json
import os
import socket


class Error(Exception):
    def __init__(self, err):
        super().__init__("%s: %s" % (err.get("code"), err.get("message")))
        self.code = err.get("code")
        self.err = err


class Conn:
    def __init__(self, path=None, timeout=60):
        self.path = path or os.environ.get("FLUEBOX_SOCKET")
        self.s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.s.settimeout(timeout)
        self.s.connect(self.path)
        self.buf = b""
        self.next = 0
        self.pending = {}  # id -> list of messages received early

    def close(self):
        self.s.close()

    def send_raw(self, data):
        self.s.sendall(data)

    def send(self, method, params=None, id=None):
        if id is None:
            self.next += 1
            id = self.next
        msg = {"id": id, "method": method}
        if params is not None:
            msg["params"] = params
        self.s.sendall(json.dumps(msg).encode() + b"\n")
        return id

    def recv(self):
        """Next message from the server (dict), or None at EOF."""
        while b"\n" not in self.buf:
            d = self.s.recv(1 << 20)
            if not d:
                return None
            self.buf += d
        line, self.buf = self.buf.split(b"\n", 1)
        return json.loads(line)

    def wait(self, id):
        """Events and the response for id: (events, response)."""
        evs = []
        q = self.pending.pop(id, [])
        while True:
            m = q.pop(0) if q else self.recv()
            if m is None:
                raise EOFError("server closed the connection")
            if m.get("id") != id:
                self.pending.setdefault(m.get("id"), []).append(m)
                continue
            if "event" in m:
                evs.append(m)
                continue
            return evs, m

    def call(self, method, params=None):
        _, r = self.wait(self.send(method, params))
        if "error" in r:
            raise Error(r["error"])
        return r["result"]

    def try_call(self, method, params=None):
        """(result, None) or (None, error dict)."""
        _, r = self.wait(self.send(method, params))
        return r.get("result"), r.get("error")
