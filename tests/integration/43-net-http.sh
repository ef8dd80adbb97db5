#!/bin/bash
# 43-net-http: on plain HTTP every request of a connection is checked, not
# only the first: a later request (kept alive or pipelined) for another host,
# an absolute-form target of any scheme (ws://, ftp://) for another host, a
# request after a body (Content-Length or chunked) — each refuses the
# connection before it reaches the server; bodies that look like requests,
# keep-alive with the right host and a WebSocket upgrade (101, then opaque)
# work. Servers on 127.0.0.1 only (tests/net/server.py).
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

R="$CL rawall api.test 80"
G='GET /hello HTTP/1.1\r\nHost: api.test\r\n\r\n'
E='GET /hello HTTP/1.1\r\nHost: other.test\r\n\r\n'

# ---- absolute-form targets, any scheme ----
for scheme in ws ftp wss gopher; do
  fresh_log
  run_fb run $NET --net-log "$LOG" -- $R "GET $scheme://other.test/hello HTTP/1.1\r\nHost: api.test\r\n\r\n"
  case "$OUT" in *"hello"*) fail "$scheme://other.test target refused" "$OUT" ;;
    *"end: reset"*) ok "$scheme://other.test target refused" ;; *) fail "$scheme://other.test target refused" "rc $RC $OUT $ERR" ;; esac
done
log_has "log: target and Host differ" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "different hosts" in e["reason"]'
run_fb run $NET -- $R 'GET api.test:80 HTTP/1.1\r\nHost: api.test\r\n\r\n'
case "$OUT" in *"end: reset"*) ok "authority-form target outside CONNECT refused" ;; *) fail "authority-form target outside CONNECT refused" "$OUT" ;; esac
run_fb run $NET -- $R 'GET ws://api.test/hello HTTP/1.1\r\nHost: api.test\r\nConnection: close\r\n\r\n'
case "$OUT" in "end: closed") ok "ws://api.test target for api.test passes" ;; *) fail "ws://api.test target for api.test passes" "$OUT" ;; esac

# ---- later requests on the same connection ----
fresh_log
run_fb run $NET --net-log "$LOG" -- $R "$G$E"
case "$OUT" in *"hello other.test"*) fail "pipelined request for another host refused" "$OUT" ;;
  *"end: reset") ok "pipelined request for another host refused" ;;
  *) fail "pipelined request for another host refused" "rc $RC $OUT" ;; esac
log_has "log: the second request named" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "Host other.test does not match api.test (request 2)" in e["reason"]'
run_fb run $NET -- $PY -c '
import http.client
c = http.client.HTTPConnection("api.test", 80, timeout=30)
for h in ("api.test", "api.test", "other.test"):
    try:
        c.request("GET", "/hello", headers={"Host": h})
        print(c.getresponse().read().decode().strip())
    except (ConnectionError, http.client.HTTPException) as e:
        print("refused:", type(e).__name__)'
case "$OUT" in "hello api.test"*"hello api.test"*"refused"*) ok "keep-alive: a later request for another host refused" ;;
  *) fail "keep-alive: a later request for another host refused" "$OUT" ;; esac
run_fb run $NET -- $R 'GET /hello HTTP/1.1\r\nHost: api.test\r\n\r\nGET ws://other.test/hello HTTP/1.1\r\nHost: api.test\r\n\r\n'
case "$OUT" in *"hello"*"hello"*) fail "a later request's ws:// target checked" "$OUT" ;;
  *"end: reset") ok "a later request's ws:// target checked" ;; *) fail "a later request's ws:// target checked" "$OUT" ;; esac

# ---- bodies: what is inside is body, what follows is a request ----
B='GET /hello HTTP/1.1\r\nHost: other.test\r\n\r\n'   # 44 bytes
expect_out "bodies that hold a request pass; the next request is checked" "body ok chunked ok hello api.test refused" \
  run $NET -- $PY -c '
import http.client, hashlib
c = http.client.HTTPConnection("api.test", 80, timeout=30)
B = b"GET /hello HTTP/1.1\r\nHost: other.test\r\n\r\n"
out = []
c.request("POST", "/upload", body=B)
out.append("body ok" if c.getresponse().read().strip() == hashlib.sha256(B).hexdigest().encode() else "body bad")
c.request("POST", "/upload", body=iter([B[:10], B[10:]]), headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
out.append("chunked ok" if c.getresponse().read().strip() == hashlib.sha256(B).hexdigest().encode() else "chunked bad")
c.request("GET", "/hello")
out.append(c.getresponse().read().decode().strip())
try:
    c.request("GET", "/hello", headers={"Host": "other.test"})
    out.append(c.getresponse().read().decode().strip())
except (ConnectionError, http.client.HTTPException):
    out.append("refused")
print(" ".join(out))'
run_fb run $NET -- $R "POST /upload HTTP/1.1\r\nHost: api.test\r\nContent-Length: 44\r\n\r\n$B$G$E"
case "$OUT" in *"hello other.test"*) fail "pipelined: Content-Length body, then a request for another host" "$OUT" ;;
  *"end: reset") ok "pipelined: Content-Length body, then a request for another host" ;;
  *) fail "pipelined: Content-Length body, then a request for another host" "$OUT" ;; esac
run_fb run $NET -- $R "POST /upload HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n2c\r\n$B\r\n0\r\n\r\n$G$E"
case "$OUT" in *"hello other.test"*) fail "pipelined: chunked body, then a request for another host" "$OUT" ;;
  *"end: reset") ok "pipelined: chunked body, then a request for another host" ;;
  *) fail "pipelined: chunked body, then a request for another host" "$OUT" ;; esac
for bad in 'Content-Length: 5\r\nContent-Length: 6' 'Content-Length: 5\r\nTransfer-Encoding: chunked' 'Transfer-Encoding: xchunked'; do
  run_fb run $NET -- $R "POST /upload HTTP/1.1\r\nHost: api.test\r\n$bad\r\n\r\nhello$E"
  case "$OUT" in "end: reset") ok "ambiguous body refused: $bad" ;; *) fail "ambiguous body refused: $bad" "$OUT" ;; esac
done
expect_out "100 chunked uploads on one connection" "100 ok" run $NET -- $PY -c '
import http.client, hashlib
c = http.client.HTTPConnection("api.test", 80, timeout=30)
good = 0
for i in range(100):
    body = bytes([i]) * (1 + i * 997)
    c.request("POST", "/upload", body=iter([body[:i], body[i:]]), headers={"Transfer-Encoding": "chunked"}, encode_chunked=True)
    good += c.getresponse().read().decode().strip() == hashlib.sha256(body).hexdigest()
print(good, "ok")'

# ---- upgrades ----
expect_out "WebSocket upgrade: after 101 the bytes are opaque" "101, echo intact" run $NET -- $CL ws api.test 80 /ws
run_fb run $NET -- $CL ws api.test 80 /hello "$E"
case "$OUT" in *"answer 200"*"then: reset"*) ok "upgrade declined: the next request is checked" ;;
  *) fail "upgrade declined: the next request is checked" "$OUT" ;; esac
run_fb run $NET -- $R "$G"'GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n'
case "$OUT" in *"end: reset") ok "upgrade on a later request refused" ;; *) fail "upgrade on a later request refused" "$OUT" ;; esac
run_fb run $NET -- $R 'GET /hello HTTP/1.1\r\nHost: api.test\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n\r\n'
case "$OUT" in "end: reset") ok "h2c upgrade refused" ;; *) fail "h2c upgrade refused" "$OUT" ;; esac

# ---- real clients reuse connections and still work ----
expect_out "curl: two URLs on one connection" "hello api.test
hello api.test" run $NET -- curl -sS -m 30 http://api.test/hello http://api.test/hello
if need node "node fetch: keep-alive requests"; then
  expect_out "node fetch: keep-alive requests" "hello api.test,hello api.test,hello api.test" run $NET -- node -e '
(async () => { const r = []; for (let i = 0; i < 3; i++) r.push((await (await fetch("http://api.test/hello")).text()).trim()); console.log(r.join(",")) })().catch(e => { console.error(e); process.exit(3) })'
fi
expect_out "proxy: pipelined requests after CONNECT checked too" "end: reset" run $NET --proxy-env -- $PY -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"CONNECT api.test:80 HTTP/1.1\r\nHost: api.test:80\r\n\r\n")
assert s.recv(100).startswith(b"HTTP/1.1 200")
s.sendall(b"GET /hello HTTP/1.1\r\nHost: api.test\r\n\r\nGET /hello HTTP/1.1\r\nHost: other.test\r\n\r\n")
data = b""
try:
    while True:
        b = s.recv(65536)
        if not b:
            print("end: closed", data); break
        data += b
except ConnectionResetError:
    print("end: reset" if b"other.test" not in data else "passed")'
no_leftovers "no leftovers"
