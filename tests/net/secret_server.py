#!/usr/bin/env python3
"""The upstream of tests/integration/45-secrets.sh, on 127.0.0.1 only.

  secret_server.py CERT KEY PORTFILE RECORD GITROOT

One HTTPS port and one plain HTTP port, for every name (the certificate
names api.test, other.test, git.test). Each request is appended to RECORD
as one JSON line, exactly as received: {"host", "method", "path",
"headers": [[k, v]...], "body"}. Then
  /echo...   answers the record itself (what the server saw)
  /ws        with Upgrade: websocket: 101, then echoes bytes
  /git/...   git's smart HTTP (git http-backend over GITROOT), only with
             Authorization: Basic of user "git" and the password in
             $SECRET_EXPECT (else 401 asking for it)
  else       "ok METHOD PATH"
Writes {"https": P, "http": P} to PORTFILE once listening; serves until
killed.
"""
import base64
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading

CERT, KEY, PORTFILE, RECORD, GITROOT = sys.argv[1:6]
LOCK = threading.Lock()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def body(self):
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.readline()
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def answer(self, code, body, ctype="text/plain", extra=()):
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(body)))
        for k, v in extra:
            self.send_header(k, v)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def handle_any(self):
        try:
            body = self.body()
        except Exception:  # the relay cut the request off
            body = b"(cut off)"
        rec = {"host": self.headers.get("Host", ""), "method": self.command, "path": self.path,
               "headers": list(self.headers.items()), "body": body.decode("latin1")}
        with LOCK, open(RECORD, "a") as f:
            f.write(json.dumps(rec) + "\n")
        if self.path.startswith("/ws") and self.headers.get("Upgrade", "").lower() == "websocket":
            self.wfile.write(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             b"Connection: Upgrade\r\n\r\n")
            self.wfile.flush()
            while True:
                b = self.connection.recv(65536)
                if not b:
                    break
                self.connection.sendall(b)
            self.close_connection = True
            return
        if self.path.startswith("/echo"):
            return self.answer(200, json.dumps(rec).encode(), "application/json")
        if self.path.startswith("/git/"):
            return self.git(body)
        self.answer(200, ("ok %s %s\n" % (self.command, self.path)).encode())

    def git(self, body):
        want = base64.b64encode(("git:" + os.environ["SECRET_EXPECT"]).encode()).decode()
        if self.headers.get("Authorization", "") != "Basic " + want:
            return self.answer(401, b"auth\n", extra=[("WWW-Authenticate", 'Basic realm="git"')])
        path, _, query = self.path[4:].partition("?")
        env = dict(os.environ, GIT_PROJECT_ROOT=GITROOT, GIT_HTTP_EXPORT_ALL="1", PATH_INFO=path,
                   QUERY_STRING=query, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)), REMOTE_USER="git")
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        code, extra, ctype = 200, [], "text/plain"
        for line in head.split(b"\r\n"):
            k, _, v = line.decode().partition(": ")
            if k.lower() == "status":
                code = int(v.split()[0])
            elif k.lower() == "content-type":
                ctype = v
            elif k:
                extra.append((k, v))
        self.answer(code, rest, ctype, extra)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = handle_any


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True


tls = Server(("127.0.0.1", 0), Handler)
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(CERT, KEY)
tls.socket = ctx.wrap_socket(tls.socket, server_side=True)
plain = Server(("127.0.0.1", 0), Handler)
for s in (tls, plain):
    threading.Thread(target=s.serve_forever, daemon=True).start()
tmp = PORTFILE + ".tmp"
with open(tmp, "w") as f:
    json.dump({"https": tls.server_address[1], "http": plain.server_address[1]}, f)
os.rename(tmp, PORTFILE)
threading.Event().wait()
