#!/usr/bin/env python3
"""https_echo.py — a local HTTPS server for the secrets tests (server,
Node and Python client suites) and the bench: a test CA made at test time
with the openssl CLI, a certificate for the names given, and a server on
127.0.0.1 that writes one JSON line per request it receives (method, path,
headers, body length) to LOG and answers 200 with {"ok": true, "path": ...}
(or N bytes with /bytes/N). The tests then check from the server's side
what arrived.

  python3 https_echo.py [--port N] DIR NAME [NAME...]   # prints "PORT CA_PEM LOG", serves

or from Python: ca = make_ca(dir, names); srv = EchoServer(dir, ca); srv.port,
srv.requests(). Loopback only; names are mapped with --egress-resolve."""
import http.server
import json
import os
import socketserver
import ssl
import subprocess
import sys
import threading


def make_ca(d, names):
    """A test CA and a server certificate for names, in d: returns
    {"ca": ca.pem, "cert": srv.pem, "key": srv.key}."""
    def run(*a):
        subprocess.run(["openssl"] + list(a), check=True, capture_output=True)
    ca_key, ca = os.path.join(d, "ca.key"), os.path.join(d, "ca.pem")
    key, csr, cert = (os.path.join(d, x) for x in ("srv.key", "srv.csr", "srv.pem"))
    ext = os.path.join(d, "srv.ext")
    run("req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
        "-keyout", ca_key, "-out", ca, "-days", "2", "-subj", "/CN=fluebox test CA",
        "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign")
    run("req", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes", "-keyout", key,
        "-out", csr, "-subj", "/CN=%s" % names[0])
    with open(ext, "w") as f:
        f.write("subjectAltName=%s\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n"
                % ",".join("DNS:" + n for n in names))
    run("x509", "-req", "-in", csr, "-CA", ca, "-CAkey", ca_key, "-CAcreateserial", "-out", cert,
        "-days", "2", "-extfile", ext)
    return {"ca": ca, "cert": cert, "key": key}


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *a):
        pass

    def _any(self):
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n) if n else b""
        rec = {"method": self.command, "path": self.path, "headers": dict(self.headers.items()),
               "body": body.decode("latin-1")}
        self.server.echo_log(rec)
        if self.path.startswith("/bytes/"):
            out = b"x" * int(self.path.split("/")[2])
            ctype = "application/octet-stream"
        else:
            out = json.dumps({"ok": True, "path": self.path}).encode() + b"\n"
            ctype = "application/json"
        self.send_response(200)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_POST = do_PUT = do_DELETE = do_PATCH = do_HEAD = _any


class _Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class EchoServer:
    """The HTTPS server on 127.0.0.1 (a free port), in a thread."""

    def __init__(self, d, ca, log_requests=True, port=0):
        self.log = os.path.join(d, "requests.jsonl")
        self._mu = threading.Lock()
        self.httpd = _Server(("127.0.0.1", port), _Handler)
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(ca["cert"], ca["key"])
        self.httpd.socket = ctx.wrap_socket(self.httpd.socket, server_side=True)
        self.httpd.echo_log = self._write if log_requests else (lambda rec: None)
        self.port = self.httpd.server_address[1]
        self.t = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.t.start()

    def _write(self, rec):
        with self._mu, open(self.log, "a") as f:
            f.write(json.dumps(rec) + "\n")

    def requests(self):
        """Every request received so far (dicts)."""
        try:
            with self._mu, open(self.log) as f:
                return [json.loads(x) for x in f if x.strip()]
        except FileNotFoundError:
            return []

    def stop(self):
        self.httpd.shutdown()
        self.httpd.server_close()


if __name__ == "__main__":
    args = sys.argv[1:]
    port = 0
    if args[:1] == ["--port"]:
        port, args = int(args[1]), args[2:]
    d, names = args[0], args[1:]
    os.makedirs(d, exist_ok=True)
    ca = make_ca(d, names)
    srv = EchoServer(d, ca, port=port)
    print("%d %s %s" % (srv.port, ca["ca"], srv.log), flush=True)
    try:
        srv.t.join()
    except KeyboardInterrupt:
        pass
