#!/bin/bash
# 45-secrets: secrets never enter the sandbox (docs/secrets.md). Inside, the
# variable holds a stand-in; the relay terminates TLS for the secret's hosts
# with the per-run CA (trusted inside by curl, Python, Node and git without
# -k), swaps the real value in — Bearer, Basic (git), a custom header, the
# query — only towards those hosts, and refuses (403, upstream never sees it)
# a stand-in sent anywhere else: in a header, a body, split across packets, in
# a pipelined second request. HTTP rules refuse what they do not allow; an
# upstream certificate that does not verify is a 502 that says why. The real
# value is in no file the run leaves and in no /proc/*/environ inside.
# The upstream (tests/net/secret_server.py) records what it received; its
# certificate comes from a test CA made here. Loopback only.
# timeout: 900
. "$ROOT/tests/lib.sh"

for t in openssl curl; do command -v $t >/dev/null || skip_all "missing: $t"; done
PY=/usr/bin/python3
NETDIR=$ROOT/tests/net
mkdir -p "$T/certs" "$T/git" "$T/out"
# ---- the test CA and the upstream's certificate ----
(cd "$T/certs" &&
  openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -keyout ca.key -out ca.pem -subj "/CN=fluebox test CA" &&
  openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout key.pem \
    -out req.csr -subj /CN=api.test &&
  printf 'subjectAltName=DNS:api.test,DNS:other.test,DNS:git.test\n' > ext &&
  openssl x509 -req -in req.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 2 \
    -extfile ext -out cert.pem) >/dev/null 2>&1 || bail "openssl cannot make the test CA"
chmod 644 "$T/certs/ca.pem" "$T/certs/cert.pem"
# ---- a git repository served by git http-backend ----
GITOK=no
if command -v git >/dev/null; then
  (cd "$T/git" && git init -q --bare repo.git && git init -q work && cd work &&
    git -c user.name=t -c user.email=t@t commit -q --allow-empty -m one &&
    git push -q ../repo.git HEAD:refs/heads/main) >/dev/null 2>&1 && GITOK=yes
fi
# ---- the secret: random, per test run ----
REAL="real-$(head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n')"
export FLUEBOX_TEST_TOK=$REAL   # run_fb passes FLUEBOX_* on to the test user
printf '%s\n' "$REAL" > "$T/tokfile"; chmod 644 "$T/tokfile"
REC=$T/record.jsonl
SECRET_EXPECT=$REAL $PY "$NETDIR/secret_server.py" "$T/certs/cert.pem" "$T/certs/key.pem" \
  "$T/ports.json" "$REC" "$T/git" >"$T/server.log" 2>&1 &
SRV=$!
at_exit 'kill "$SRV"; wait "$SRV"'
wait_for 10 test -s "$T/ports.json" || bail "the test server did not start: $(cat "$T/server.log")"
port_of() { $PY -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$T/ports.json" "$1"; }
HTTPS=$(port_of https); HTTP=$(port_of http)
MAP=""
for n in api.test other.test git.test; do
  MAP="$MAP --allow-net $n --egress-resolve $n:443=127.0.0.1:$HTTPS --egress-resolve $n:80=127.0.0.1:$HTTP"
done
NET="$MAP --upstream-ca $T/certs/ca.pem --bind $T/out:/out"
chmod 777 "$T/out"
S="--secret FLUEBOX_TEST_TOK:api.test,git.test"
TOKV='$FLUEBOX_TEST_TOK'

# rec_has NAME PYEXPR — some record r (a dict) satisfies PYEXPR.
rec_has() {
  if [ -f "$REC" ] && $PY -c '
import json, sys
sys.exit(0 if any(eval(sys.argv[2], {}, {"r": json.loads(l), "real": sys.argv[3]}) for l in open(sys.argv[1])) else 1)
' "$REC" "$2" "$REAL"; then ok "$1"; else fail "$1" "no record with $2 in: $(tail -c 600 "$REC" 2>/dev/null)"; fi
}
# nowhere NAME STRING FILES... — STRING is in none of FILES.
nowhere() {
  local name=$1 s=$2 f; shift 2
  for f in "$@"; do
    if [ -e "$f" ] && grep -qaF -- "$s" "$f"; then fail "$name" "found in $f"; return; fi
  done
  ok "$name"
}
fresh_rec() { rm -f "$REC"; }
fresh_log() { LOGN=$(( ${LOGN:-0} + 1 )); LOG=$T/net$LOGN.jsonl; rm -f "$LOG"; }
log_has() {
  if [ -f "$2" ] && $PY -c '
import json, sys
sys.exit(0 if any(eval(sys.argv[2], {}, {"e": json.loads(l)}) for l in open(sys.argv[1])) else 1)
' "$2" "$3"; then ok "$1"; else fail "$1" "no log line with $3 in: $(tail -c 800 "$2" 2>/dev/null)"; fi
}

# ---- bad input: one line, 125, nothing started ----
expect_err "unset variable refused" 125 "FLUEBOX_TEST_NOPE is not set" run $MAP \
  --secret FLUEBOX_TEST_NOPE:api.test -- true
FLUEBOX_TEST_EMPTY= expect_err "empty variable refused" 125 "FLUEBOX_TEST_EMPTY is empty" run $MAP \
  --secret FLUEBOX_TEST_EMPTY:api.test -- true
expect_err "a secret's host not allowed refused" 125 "host nothere.test is not allowed" run $MAP \
  --secret FLUEBOX_TEST_TOK:nothere.test -- true
expect_err "malformed --allow-http refused" 125 "--allow-http" run $MAP --allow-http 'GET' -- true
expect_err "unknown method refused" 125 'unknown method "FETCH"' run $MAP --allow-http 'FETCH api.test' -- true
expect_err "unreadable --upstream-ca refused" 125 "--upstream-ca $T/none.pem" run $MAP \
  --upstream-ca "$T/none.pem" -- true
expect_err "--secret without the filtered network refused" 125 "needs the filtered network" run \
  --secret FLUEBOX_TEST_TOK:api.test -- true
expect_err "--isolation landlock refused (no inspection there)" 125 "landlock" run $MAP $S --isolation landlock -- true
expect_err "--env-pass of a secret refused" 125 "--env-pass" run $MAP $S --env-pass FLUEBOX_TEST_TOK -- true
case "$ERR" in *"$REAL"*) fail "no error shows the value" "$ERR" ;; *) ok "no error shows the value" ;; esac
no_leftovers "bad input leaves nothing behind"

# ---- the stand-in inside, the CA trusted ----
run_fb run $NET $S -- /bin/sh -c 'echo "$FLUEBOX_TEST_TOK"; grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/fluebox-ca.crt;
  for f in /etc/ssl/certs/*.0; do [ "$(readlink "$f")" = fluebox-ca.crt ] && echo hashed; done;
  tail -c 2000 /etc/ssl/certs/ca-certificates.crt | cmp -s - /dev/null || true
  grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt; echo "$SSL_CERT_FILE $NODE_EXTRA_CA_CERTS $REQUESTS_CA_BUNDLE $CURL_CA_BUNDLE $PIP_CERT $GIT_SSL_CAINFO"'
STANDIN=$(printf '%s\n' "$OUT" | head -n 1)
case "$STANDIN" in fluebox-standin-????????????????????????????????) ok "NAME holds a stand-in inside" ;;
  *) fail "NAME holds a stand-in inside" "rc $RC $OUT $ERR" ;; esac
case "$OUT" in *"$REAL"*) fail "the real value is not inside" "$OUT" ;; *) ok "the real value is not inside" ;; esac
case "$OUT" in *hashed*) ok "the CA is in the hashed directory" ;; *) fail "the CA is in the hashed directory" "$OUT" ;; esac
HOSTN=$(grep -c "BEGIN CERTIFICATE" /etc/ssl/certs/ca-certificates.crt 2>/dev/null || echo 0)
case "$OUT" in *"$((HOSTN + 1))"*) ok "the system bundle is the host's plus the CA" ;;
  *) fail "the system bundle is the host's plus the CA ($((HOSTN + 1)) certificates)" "$OUT" ;; esac
B=/etc/ssl/certs/ca-certificates.crt
case "$OUT" in *"$B /etc/ssl/certs/fluebox-ca.crt $B $B $B $B"*) ok "the CA variables point at it" ;;
  *) fail "the CA variables point at it" "$OUT" ;; esac

# ---- curl: Bearer, Basic, a custom header, the query ----
fresh_rec; fresh_log
run_fb run $NET $S --net-log "$LOG" --report "$T/report.json" -- /bin/sh -c "
  curl -sS https://api.test/bearer -H \"Authorization: Bearer $TOKV\" &&
  curl -sS -u \"user:$TOKV\" https://api.test/basic &&
  curl -sS https://api.test/custom -H \"X-Api-Key: k-$TOKV\" &&
  curl -sS \"https://api.test/query?key=$TOKV&other=1\""
case "$OUT" in *"ok GET /bearer"*"ok GET /basic"*"ok GET /custom"*"ok GET /query"*) ok "curl through the relay without -k" ;;
  *) fail "curl through the relay without -k" "rc $RC $OUT $ERR" ;; esac
rec_has "Bearer: the server got the real value" 'r["path"]=="/bearer" and ["Authorization","Bearer "+real] in r["headers"]'
rec_has "Basic: the server got the real value" '__import__("base64").b64encode(("user:"+real).encode()).decode() in str(r["headers"]) and r["path"]=="/basic"'
rec_has "custom header: the server got the real value" 'r["path"]=="/custom" and ["X-Api-Key","k-"+real] in r["headers"]'
rec_has "query: the server got the real value" 'r["path"]=="/query?key="+real+"&other=1"'
log_has "log: one http line per request, with the secret's name" "$LOG" \
  'e["event"]=="http" and e["path"]=="/query?key&other" and e["secrets"]==["FLUEBOX_TEST_TOK"] and e["status"]==200 and e["verdict"]=="allow"'
if $PY -c 'import json,sys; n=json.load(open(sys.argv[1]))["network"]; sys.exit(0 if n["http_requests"]>=4 and n["http_secrets_injected"]>=4 else 1)' "$T/report.json" 2>/dev/null; then
  ok "report: inspected requests counted"; else fail "report: inspected requests counted" "$(cat "$T/report.json" 2>/dev/null | head -c 600)"; fi

# HTTP/2: not spoken on an inspected host; a client that offers h2 gets
# HTTP/1.1 by ALPN, one that insists (prior knowledge) is refused
fresh_log
run_fb run $NET $S --net-log "$LOG" -- /bin/sh -c "curl -sS --http2 -w ' %{http_version}' https://api.test/h2 -H \"X-Key: $TOKV\";
  curl -sS --http2-prior-knowledge http://api.test/h2pk >/dev/null 2>&1 || echo refused"
case "$OUT" in "ok GET /h2"*" 1.1"*refused) ok "h2 offered: HTTP/1.1 by ALPN; prior knowledge refused" ;;
  *) fail "h2 offered: HTTP/1.1 by ALPN; prior knowledge refused" "rc $RC $OUT $ERR" ;; esac
log_has "log: the h2 prior-knowledge stream refused" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "HTTP/2" in e["reason"]'

# ---- Python (urllib), Node (fetch), git (Basic via the URL) ----
fresh_rec
run_fb run $NET $S -- $PY -c '
import os, urllib.request
r = urllib.request.Request("https://api.test/python", headers={"Authorization": "token " + os.environ["FLUEBOX_TEST_TOK"]})
print(urllib.request.urlopen(r, timeout=30).read().decode().strip())'
case "$OUT" in "ok GET /python") ok "python urllib verifies and passes" ;; *) fail "python urllib verifies and passes" "rc $RC $OUT $ERR" ;; esac
rec_has "python: the server got the real value" 'r["path"]=="/python" and ["Authorization","token "+real] in r["headers"]'
if need node "node fetch through the relay"; then
  run_fb run $NET $S -- /usr/bin/node -e '
fetch("https://api.test/node", {headers: {authorization: "Bearer " + process.env.FLUEBOX_TEST_TOK}})
  .then(r => r.text()).then(t => console.log(t.trim()), e => { console.log("error", e.cause || e); process.exit(1); })'
  case "$OUT" in "ok GET /node") ok "node fetch verifies and passes" ;; *) fail "node fetch verifies and passes" "rc $RC $OUT $ERR" ;; esac
  rec_has "node: the server got the real value" 'r["path"]=="/node" and ["authorization","Bearer "+real] in [[k.lower(),v] for k,v in r["headers"]]'
fi
if [ "$GITOK" = yes ]; then
  run_fb run $NET $S -- /bin/sh -c "git ls-remote https://git:$TOKV@git.test/git/repo.git"
  case "$OUT" in *"refs/heads/main"*) ok "git ls-remote with Basic auth" ;; *) fail "git ls-remote with Basic auth" "rc $RC $OUT $ERR" ;; esac
else
  skip_missing "git ls-remote with Basic auth" git
fi

# ---- the stand-in towards another host: refused, upstream never sees it ----
# other.test is inspected (an HTTP rule) but not bound to the secret.
fresh_rec; fresh_log
run_fb run $NET $S --allow-http '* other.test' --net-log "$LOG" -- /bin/sh -c "
  curl -sS -w ' %{http_code}\n' https://other.test/h -H \"X-Key: $TOKV\";
  curl -sS -w ' %{http_code}\n' \"https://other.test/q?k=$TOKV\";
  curl -sS -w ' %{http_code}\n' -u \"u:$TOKV\" https://other.test/b;
  curl -sS -w ' %{http_code}\n' https://other.test/body --data-binary \"x=$TOKV\";
  curl -sS -w ' %{http_code}\n' https://other.test/fine"
case "$OUT" in *"not bound to other.test"*" 403"*" 403"*" 403"*"bodies are never rewritten"*" 403"*"ok GET /fine"*" 200"*)
  ok "header, query, Basic and body towards another host: 403 naming the rule" ;;
  *) fail "header, query, Basic and body towards another host: 403 naming the rule" "rc $RC $OUT $ERR" ;; esac
nowhere "upstream never saw the stand-in" "$STANDIN" "$REC"
nowhere "nor the real value" "$REAL" "$REC"
log_has "log: the refusal, with the secret's name" "$LOG" \
  'e["event"]=="http" and e["verdict"]=="deny" and e["status"]==403 and "FLUEBOX_TEST_TOK" in e["reason"]'

# split across packets (a byte per TLS record) and in a pipelined second request
fresh_rec
cat > "$T/out/raw.py" <<'EOF'
import os, re, socket, ssl, sys
host, mode = sys.argv[1], sys.argv[2]
tok = os.environ["FLUEBOX_TEST_TOK"]
s = ssl.create_default_context().wrap_socket(socket.create_connection((host, 443), timeout=30), server_hostname=host)
s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
one = ("GET /first HTTP/1.1\r\nHost: %s\r\n\r\n" % host).encode()
two = ("GET /second HTTP/1.1\r\nHost: %s\r\nX-Key: %s\r\nConnection: close\r\n\r\n" % (host, tok)).encode()
if mode == "split":
    for i in range(len(two)):
        s.send(two[i:i + 1])
else:
    s.sendall(one + two)
out = b""
while True:
    try:
        b = s.recv(65536)
    except (ConnectionError, ssl.SSLError):
        break
    if not b:
        break
    out += b
print(" ".join(re.findall(r"HTTP/1.1 (\d\d\d)", out.decode("latin1"))))
EOF
run_fb run $NET $S --allow-http '* other.test' -- /bin/sh -c "$PY /out/raw.py api.test split; $PY /out/raw.py other.test split; $PY /out/raw.py other.test pipelined"
case "$OUT" in "200"*"403"*"200 403") ok "split into one-byte records: swapped for its host, refused for another; pipelined: the second refused" ;;
  *) fail "split into one-byte records: swapped for its host, refused for another; pipelined: the second refused" "rc $RC $OUT $ERR" ;; esac
rec_has "split: the server got the real value" 'r["path"]=="/second" and r["host"]=="api.test" and ["X-Key",real] in r["headers"]'
rec_has "pipelined: the first request went through" 'r["path"]=="/first" and r["host"]=="other.test"'
nowhere "split and pipelined: upstream never saw the stand-in" "$STANDIN" "$REC"

# keep-alive and chunked bodies through a bound host; an echo is masked
fresh_rec
run_fb run $NET $S -- $PY -c '
import http.client, os, ssl, json
t = os.environ["FLUEBOX_TEST_TOK"]
c = http.client.HTTPSConnection("api.test", 443, timeout=30, context=ssl.create_default_context())
out = []
for i in range(3):
    c.request("POST", "/k%d" % i, body=iter([b"chunk-a ", b"chunk-b"]), headers={"Authorization": "Bearer " + t, "Transfer-Encoding": "chunked"}, encode_chunked=True)
    out.append(c.getresponse().read().decode().strip())
c.request("GET", "/echo", headers={"X-Key": t})
e = c.getresponse().read().decode()
out.append("echo-masked" if "*" * len("'"$REAL"'") in e and t not in e else "echo:" + e)
print(" | ".join(out))'
case "$OUT" in "ok POST /k0 | ok POST /k1 | ok POST /k2 | echo-masked") ok "keep-alive, chunked bodies, an echoed value masked" ;;
  *) fail "keep-alive, chunked bodies, an echoed value masked" "rc $RC $(printf %s "$OUT" | head -c 300) $ERR" ;; esac
rec_has "chunked bodies arrive whole" 'r["path"]=="/k2" and r["body"]=="chunk-a chunk-b" and ["Authorization","Bearer "+real] in r["headers"]'
case "$OUT" in *"$REAL"*) fail "the echoed real value never reaches the sandbox" "$OUT" ;; *) ok "the echoed real value never reaches the sandbox" ;; esac

# a WebSocket upgrade: 101, then opaque
run_fb run $NET $S -- $PY -c '
import socket, ssl
s = ssl.create_default_context().wrap_socket(socket.create_connection(("api.test", 443), timeout=30), server_hostname="api.test")
s.sendall(b"GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n")
h = b""
while b"\r\n\r\n" not in h:
    h += s.recv(1)
s.sendall(b"frame-bytes")
got = b""
while len(got) < 11:
    got += s.recv(64)
print(h.split(b" ")[1].decode(), got.decode())'
case "$OUT" in "101 frame-bytes") ok "WebSocket upgrade through an inspected host" ;; *) fail "WebSocket upgrade through an inspected host" "rc $RC $OUT $ERR" ;; esac

# plain HTTP (port 80) to a bound host is inspected too
fresh_rec
run_fb run $NET $S -- /bin/sh -c "curl -sS http://api.test/plain -H \"Authorization: Bearer $TOKV\""
case "$OUT" in "ok GET /plain") ok "plain HTTP to a bound host" ;; *) fail "plain HTTP to a bound host" "rc $RC $OUT $ERR" ;; esac
rec_has "plain HTTP: the server got the real value" 'r["path"]=="/plain" and ["Authorization","Bearer "+real] in r["headers"]'

# through the in-sandbox CONNECT proxy (--proxy-env) as well
fresh_rec
run_fb run $NET $S --proxy-env -- /bin/sh -c "curl -sS https://api.test/proxied -H \"X-Key: $TOKV\""
case "$OUT" in "ok GET /proxied") ok "through the CONNECT proxy" ;; *) fail "through the CONNECT proxy" "rc $RC $OUT $ERR" ;; esac
rec_has "proxy: the server got the real value" 'r["path"]=="/proxied" and ["X-Key",real] in r["headers"]'

# NAME=@FILE
fresh_rec
run_fb run $NET --secret "FILETOK=@$T/tokfile:api.test" -- /bin/sh -c 'curl -sS https://api.test/file -H "X-T: $FILETOK"'
case "$OUT" in "ok GET /file") ok "NAME=@FILE" ;; *) fail "NAME=@FILE" "rc $RC $OUT $ERR" ;; esac
rec_has "@FILE: the value without its line end" 'r["path"]=="/file" and ["X-T",real] in r["headers"]'

# ---- HTTP rules ----
fresh_rec; fresh_log
run_fb run $NET --allow-http 'GET,HEAD api.test/allowed' --net-log "$LOG" -- /bin/sh -c "
  curl -sS -w ' %{http_code}\n' https://api.test/allowed/x;
  curl -sS -w ' %{http_code}\n' https://api.test/other;
  curl -sS -w ' %{http_code}\n' -X POST https://api.test/allowed;
  curl -sS -w ' %{http_code}\n' --path-as-is https://api.test/allowed/../other"
case "$OUT" in *"ok GET /allowed/x"*" 200"*"allows GET /other"*" 403"*"allows POST /allowed"*" 403"*"plain paths"*" 403"*) ok "HTTP rules: only what a rule allows" ;;
  *) fail "HTTP rules: only what a rule allows" "rc $RC $OUT $ERR" ;; esac
rec_has "HTTP rules: the allowed request arrived" 'r["path"]=="/allowed/x"'
if [ -f "$REC" ] && grep -q '"/other"\|"/allowed/../other"' "$REC"; then fail "HTTP rules: refused requests never arrived" "$(cat "$REC")"; else ok "HTTP rules: refused requests never arrived"; fi
log_has "log: the rule refusal" "$LOG" 'e["event"]=="http" and e["verdict"]=="deny" and e["method"]=="POST"'

# ---- an upstream that does not verify: 502 that says why ----
fresh_log
run_fb run $MAP $S --net-log "$LOG" -- /bin/sh -c "curl -sS -w ' %{http_code}' https://api.test/x -H \"Authorization: Bearer $TOKV\""
case "$OUT" in *"did not verify"*" 502") ok "unverified upstream: 502 naming the cause" ;; *) fail "unverified upstream: 502 naming the cause" "rc $RC $OUT $ERR" ;; esac
log_has "log: why the upstream failed" "$LOG" 'e["event"]=="http" and e["status"]==502 and "did not verify" in e["reason"]'

# ---- the real value in no file the run leaves, nor in /proc inside ----
fresh_log; fresh_rec
rm -f "$T/rec.jsonl"
run_fb run $NET $S --net-log "$LOG" --report "$T/report2.json" --record "$T/rec.jsonl" -- /bin/sh -c "
  curl -sS -o /dev/null https://api.test/a -H \"Authorization: Bearer $TOKV\"; curl -sS -o /dev/null \"https://api.test/q?t=$TOKV\";
  $PY -c 'import glob
with open(\"/out/proc.txt\", \"wb\") as f:
    for p in glob.glob(\"/proc/[0-9]*/environ\") + glob.glob(\"/proc/[0-9]*/cmdline\"):
        try: f.write(open(p, \"rb\").read() + b\"\n\")
        except OSError: pass'"
[ -s "$T/out/proc.txt" ] && ok "read /proc/*/environ inside" || fail "read /proc/*/environ inside" "rc $RC $ERR"
rec_has "the requests carried the value upstream" 'r["path"]=="/q?t="+real'
nowhere "the value is in no net log, report, record, or /proc inside" "$REAL" "$LOG" "$T/report2.json" "$T/rec.jsonl" "$T/out/proc.txt"
if grep -qaF "$STANDIN" "$T/out/proc.txt" 2>/dev/null || grep -qa "fluebox-standin-" "$T/out/proc.txt"; then ok "(the stand-in is what is inside)"; else fail "(the stand-in is what is inside)" "$(head -c 300 "$T/out/proc.txt")"; fi
no_leftovers "nothing left behind"
