#!/usr/bin/env python3
"""Test servers for the network tests, on 127.0.0.1 only (random ports).

  server.py DIR CERT KEY PORTFILE

  http    HTTP/1.1 file server for DIR; POST /upload answers the sha256 of
          the body (Content-Length or chunked); GET /hello answers "hello <Host>"; GET /ws with
          "Upgrade: websocket" answers 101 and then echoes bytes
  https   the same over TLS with CERT/KEY
  banner  speaks first ("220 fluebox-banner"), then echoes lines
  sink    accepts and never reads
  flood   sends without end
Writes {"http": P, "https": P, "banner": P, "sink": P, "flood": P} to PORTFILE once
everything listens, then serves until killed.
"""
import hashlib
import http.server
import json
import os
import socket
import socketserver
import ssl
import sys
import threading


class Handler(http.server.SimpleHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def do_GET(self):
        if self.path.startswith("/ws") and self.headers.get("Upgrade", "").lower() == "websocket":
            # 101, then echo whatever comes, byte for byte, until EOF
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
        if self.path.startswith("/hello"):
            body = ("hello %s\n" % self.headers.get("Host", "")).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
            return
        super().do_GET()

    def do_POST(self):
        h = hashlib.sha256()
        if self.headers.get("Transfer-Encoding", "").lower() == "chunked":
            while True:
                size = int(self.rfile.readline().split(b";")[0], 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    break
                h.update(self.rfile.read(size))
                self.rfile.readline()
        n = int(self.headers.get("Content-Length", "0"))
        while n > 0:
            chunk = self.rfile.read(min(n, 1 << 20))
            if not chunk:
                break
            h.update(chunk)
            n -= len(chunk)
        body = (h.hexdigest() + "\n").encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128
    ctx = None

    def finish_request(self, request, client_address):
        # TLS handshake in the worker thread, so one slow client cannot hold
        # up the accept loop.
        if self.ctx:
            request.settimeout(60)
            try:
                request = self.ctx.wrap_socket(request, server_side=True)
            except (ssl.SSLError, OSError):
                return
        super().finish_request(request, client_address)


def serve_tcp(sock, handle):
    def loop():
        while True:
            c, _ = sock.accept()
            threading.Thread(target=handle, args=(c,), daemon=True).start()
    threading.Thread(target=loop, daemon=True).start()


def banner(c):
    try:
        c.sendall(b"220 fluebox-banner\r\n")
        f = c.makefile("rb")
        for line in f:
            c.sendall(b"echo " + line)
    except OSError:
        pass
    finally:
        c.close()


def flood(c):
    # sends without end; blocks when the other side stops reading
    block = b"x" * 65536
    try:
        while True:
            c.sendall(block)
    except OSError:
        c.close()


held = []


def sink(c):
    held.append(c)  # never read, never close


def listener():
    s = socket.socket()
    s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    s.bind(("127.0.0.1", 0))
    s.listen(128)
    return s


def main():
    d, cert, key, portfile = sys.argv[1:5]
    os.chdir(d)
    handler = lambda *a, **kw: Handler(*a, directory=d, **kw)
    httpd = Server(("127.0.0.1", 0), handler)
    httpsd = Server(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    httpsd.ctx = ctx
    b, s, f = listener(), listener(), listener()
    serve_tcp(b, banner)
    serve_tcp(s, sink)
    serve_tcp(f, flood)
    for srv in (httpd, httpsd):
        threading.Thread(target=srv.serve_forever, daemon=True).start()
    ports = {"http": httpd.server_address[1], "https": httpsd.server_address[1],
             "banner": b.getsockname()[1], "sink": s.getsockname()[1],
             "flood": f.getsockname()[1]}
    with open(portfile + ".tmp", "w") as f:
        json.dump(ports, f)
    os.rename(portfile + ".tmp", portfile)
    threading.Event().wait()


if __name__ == "__main__":
    main()
