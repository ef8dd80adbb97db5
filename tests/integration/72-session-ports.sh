#!/bin/bash
# 72-session-ports.sh — published ports (session publish, session create
# --publish): `python3 -m http.server` inside a session reached with curl from
# the host, in each network mode, refused to another uid unless --any-uid,
# closed at unpublish and destroy; the session subcommands for copy-on-write
# workspaces (diff, commit, reset); the server's JSON log of session events.
. "$ROOT/tests/lib.sh"

command -v curl >/dev/null || skip_all "missing: curl"
command -v python3 >/dev/null || skip_all "missing: python3"

if [ "$FB_AS" = root ]; then FBCMD=("$FB"); OTHER=fbtest; else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
  OTHER=root
fi
# curl as the session's owner, and as someone else.
curl_as() {
  local who=$1; shift
  if [ "$who" = root ]; then curl -sS -m 10 "$@"; else
    setpriv --reuid="$who" --regid="$who" --init-groups -- curl -sS -m 10 "$@"; fi
}

chmod 755 "$T"
SOCK=$T/fb.sock
mkdir -p "$T/ws"
echo "from the host" > "$T/ws/a.txt"
[ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T/ws"

"${FBCMD[@]}" serve --socket="$SOCK" --log-format json --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV 2>/dev/null'
wait_for 10 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"

# serve PORT: start python3 -m http.server on PORT in session $ID, serving
# /tmp/www (an index.html that says which session it is).
serve_in() {
  run_fb exec --socket "$SOCK" "$1" -- sh -c "mkdir -p /tmp/www && echo 'hello from $1' > /tmp/www/index.html &&
    cd /tmp/www && (python3 -m http.server $2 --bind 127.0.0.1 >/tmp/www.log 2>&1 &)"
}

# --- none: the default network mode --------------------------------------------------
run_fb session create --socket "$SOCK" --publish 8000
ID=$OUT
case "$ID" in s-*) ;; *) bail "session create --publish: rc=$RC $ERR";; esac
run_fb session info --socket "$SOCK" "$ID"
HP=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ports"][0]["hostPort"])' 2>/dev/null)
[ -n "$HP" ] && ok "session info lists the published port" || fail "session info lists the port" "$OUT"
case "$OUT" in *'"network": "none"'*) ok "the session has no network (none)";; *) fail "network none" "$OUT";; esac
serve_in "$ID" 8000
if wait_for 15 curl_as "$FB_AS" -f "http://127.0.0.1:$HP/index.html" -o /dev/null; then
  out=$(curl_as "$FB_AS" "http://127.0.0.1:$HP/index.html")
  [ "$out" = "hello from $ID" ] && ok "curl on the host reaches http.server inside (network none)" || fail "curl reaches http.server" "$out"
else
  fail "curl reaches http.server inside (network none)" "$(curl_as "$FB_AS" "http://127.0.0.1:$HP/" 2>&1)"
fi
# The listener is on 127.0.0.1 only: another loopback address of the host
# (127.0.0.2, same interface) does not answer on that port.
out=$(curl_as "$FB_AS" "http://127.0.0.2:$HP/index.html" 2>&1)
case "$out" in *"hello from"*) fail "the published port is bound to 127.0.0.1 only" "$out";;
  *) ok "the published port is bound to 127.0.0.1 only";; esac
# A large answer arrives whole (both directions of the relay, backpressure).
run_fb exec --socket "$SOCK" "$ID" -- sh -c 'head -c 20000000 /dev/urandom > /tmp/www/big.bin; sha256sum < /tmp/www/big.bin'
want=${OUT%% *}
got=$(curl_as "$FB_AS" "http://127.0.0.1:$HP/big.bin" | sha256sum); got=${got%% *}
[ -n "$want" ] && [ "$want" = "$got" ] && ok "20 MB through the published port, same bytes" || fail "20 MB through the port" "want $want got $got"
# Another uid: the listener is on 127.0.0.1, which every local user can
# reach; its connection must be closed before anything is relayed.
out=$(curl_as "$OTHER" "http://127.0.0.1:$HP/index.html" 2>&1)
case "$out" in *"hello from"*) fail "another uid ($OTHER) cannot use the published port" "$out";;
  *) ok "another uid ($OTHER) cannot use the published port";; esac

# session publish prints the URL; --any-uid opens it to everyone.
run_fb session publish --socket "$SOCK" --any-uid "$ID" 8000
URL=$OUT
case "$OUT" in *"port 8000 is published already"*) ;; esac
run_fb session unpublish --socket "$SOCK" "$ID" 8000
[ "$RC" = 0 ] && ok "session unpublish" || fail "session unpublish" "$ERR"
out=$(curl_as "$FB_AS" "http://127.0.0.1:$HP/" 2>&1)
case "$out" in *"hello from"*) fail "an unpublished port is closed" "$out";; *) ok "an unpublished port is closed";; esac
run_fb session publish --socket "$SOCK" --any-uid "$ID" 8000
URL=$OUT
case "$URL" in http://127.0.0.1:*/) ok "session publish prints the URL";; *) fail "session publish prints the URL" "$OUT $ERR";; esac
out=$(curl_as "$OTHER" "${URL}index.html" 2>&1)
[ "$out" = "hello from $ID" ] && ok "--any-uid: another uid may connect" || fail "--any-uid: another uid may connect" "$out"
# --- the Host allowlist (DNS rebinding) ---------------------------------------------
# A page whose name an attacker points at 127.0.0.1 is loaded by the owner's
# browser, which connects as the owner (the uid check passes) and sends its
# own name as Host. With --allow-host only requests naming an allowed host
# reach the server inside; the others get 403 and the server never sees them.
serve_in "$ID" 8002
run_fb session publish --socket "$SOCK" --allow-host localhost --allow-host '*.dev.test' "$ID" 8002
HURL=$OUT; HHP=${HURL#http://127.0.0.1:}; HHP=${HHP%/}
[ "$RC" = 0 ] && ok "session publish --allow-host" || fail "session publish --allow-host" "rc=$RC $ERR"
if wait_for 15 curl_as "$FB_AS" -f -H "Host: localhost:$HHP" "${HURL}index.html" -o /dev/null; then
  ok "--allow-host: a request naming an allowed host (localhost:PORT) is relayed"
else
  fail "--allow-host: an allowed host is relayed" "$(curl_as "$FB_AS" -i -H "Host: localhost:$HHP" "${HURL}index.html" 2>&1)"
fi
out=$(curl_as "$FB_AS" -H "Host: app.dev.test" "${HURL}index.html" 2>&1)
[ "$out" = "hello from $ID" ] && ok "--allow-host '*.dev.test': app.dev.test is relayed" || fail "*.dev.test" "$out"
# The rebinding itself: evil.test resolved to 127.0.0.1, as the browser would.
code=$(curl_as "$FB_AS" -o "$T/rebind.out" -w '%{http_code}' --resolve "evil.test:$HHP:127.0.0.1" "http://evil.test:$HHP/rebind-probe" 2>&1)
if [ "$code" = 403 ] && grep -q "does not serve that host name" "$T/rebind.out"; then
  ok "--allow-host: a rebound name (Host: evil.test:PORT) gets 403"
else
  fail "--allow-host: a rebound name gets 403" "$code $(cat "$T/rebind.out")"
fi
code=$(curl_as "$FB_AS" -o /dev/null -w '%{http_code}' -H "Host: dev.test" "${HURL}rebind-probe" 2>&1)
[ "$code" = 403 ] && ok "--allow-host '*.dev.test' does not allow dev.test itself" || fail "*.dev.test vs dev.test" "$code"
code=$(curl_as "$FB_AS" -o /dev/null -w '%{http_code}' -H "Host:" "${HURL}rebind-probe" 2>&1)
[ "$code" = 400 ] && ok "--allow-host: a request without Host gets 400" || fail "no Host: 400" "$code"
# raw_as PORT PIECE...: send the pieces (a moment apart) as the owner, print
# the answer's body, or "status NNN" for an answer that is not 200.
raw_as() {
  local who=(); [ "$FB_AS" = root ] || who=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --)
  local py=python3; [ -x /usr/bin/python3 ] && py=/usr/bin/python3
  "${who[@]}" "$py" - "$@" <<'PYEOF'
import socket, sys, time
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), 10)
s.settimeout(10)
for i, piece in enumerate(sys.argv[2:]):
    if i:
        time.sleep(0.3)
    s.sendall(piece.encode().decode("unicode_escape").encode())
data = b""
while True:
    b = s.recv(65536)
    if not b:
        break
    data += b
head, _, body = data.partition(b"\r\n\r\n")
status = head.split(b" ")[1].decode() if b" " in head else "none"
print(body.decode().strip() if status == "200" else "status " + status)
PYEOF
}
out=$(raw_as "$HHP" 'GET /rebind-probe HTTP/1.0\r\nHost: localhost\r\nHost: evil.test\r\n\r\n' 2>&1)
[ "$out" = "status 400" ] && ok "--allow-host: two Host headers get 400" || fail "two Host headers: 400" "$out"
code=$(curl_as "$FB_AS" -o /dev/null -w '%{http_code}' --request-target "http://evil.test/rebind-probe" -H "Host: localhost" "${HURL}" 2>&1)
[ "$code" = 400 ] && ok "--allow-host: an absolute request target gets 400" || fail "absolute target: 400" "$code"
# A head that arrives in pieces is read whole before the check; what
# follows it is relayed as usual (20 MB back, the same bytes).
out=$(raw_as "$HHP" 'GET /index.html HTTP/1.0\r\nHo' 'st: LOCALHOST.\r\n\r\n' 2>&1)
[ "$out" = "hello from $ID" ] && ok "--allow-host: a head sent in pieces, LOCALHOST. (case, final dot) is relayed" || fail "head in pieces" "$out"
got=$(curl_as "$FB_AS" -H "Host: localhost" "${HURL}big.bin" | sha256sum); got=${got%% *}
[ "$want" = "$got" ] && ok "--allow-host: 20 MB through the checked port, same bytes" || fail "20 MB through the checked port" "want $want got $got"
run_fb exec --socket "$SOCK" "$ID" -- cat /tmp/www.log
case "$OUT" in *rebind-probe*) fail "refused requests never reach the server inside" "$OUT";;
  *index.html*) ok "refused requests never reach the server inside (its log has none)";;
  *) fail "refused requests never reach the server inside" "no log: $OUT $ERR";; esac
run_fb session info --socket "$SOCK" "$ID"
if printf '%s' "$OUT" | python3 -c '
import json, sys
p = [x for x in json.load(sys.stdin)["ports"] if x["port"] == 8002][0]
sys.exit(not (p["hosts"] == ["localhost", "*.dev.test"] and p["refused"] == 5))'; then
  ok "session info: the port's hosts and its 5 refused connections"
else
  fail "session info: hosts and refused" "$OUT"
fi
expect_err "--allow-host '*' is refused" 125 "is not a host name" session publish --socket "$SOCK" --allow-host '*' "$ID" 8003
expect_err "--allow-host 'a/b' is refused" 125 "is not a host name" session publish --socket "$SOCK" --allow-host 'a/b' "$ID" 8003
expect_err "--allow-host on session diff is refused" 125 "option of session publish" session diff --socket "$SOCK" --allow-host x "$ID"
# A port nobody listens on inside: the client's connection is closed.
run_fb session publish --socket "$SOCK" "$ID" 9
out=$(curl_as "$FB_AS" "$OUT" 2>&1); rc=$?
[ "$rc" != 0 ] && ok "a published port nothing listens on: the connection closes" || fail "nothing listening" "$out"
expect_err "publish: a bad port is refused" 125 "expected [HOSTPORT:]PORT" session publish --socket "$SOCK" "$ID" 70000
hp=${URL#http://127.0.0.1:}; hp=${hp%/}
expect_err "publish: a host port in use is refused" 125 "in use" session publish --socket "$SOCK" "$ID" "$hp:8001"
expect_err "unpublish of a port not published: 125" 125 "not_found" session unpublish --socket "$SOCK" "$ID" 8123

# --- destroy closes the listeners ---------------------------------------------------
run_fb session rm --socket "$SOCK" "$ID"
out=$(curl_as "$FB_AS" "${URL}index.html" 2>&1)
case "$out" in *"hello from"*) fail "destroy closes published ports" "$out";; *) ok "destroy closes published ports";; esac
if ss -Hltn "sport = :$hp" 2>/dev/null | grep -q LISTEN; then fail "no listener left after destroy" "$(ss -Hltn "sport = :$hp")"; else ok "no listener left after destroy"; fi

# --- allow: the allowlist mode ------------------------------------------------------
run_fb session create --socket "$SOCK" --allow-net example.invalid --json --publish 8000
ID2=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])' 2>/dev/null)
HP2=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ports"][0]["hostPort"])' 2>/dev/null)
case "$OUT" in *'"allowNet": ['*'"example.invalid"'*) ok "session info shows the allowlist";; *) fail "session info shows the allowlist" "$OUT";; esac
if [ -n "$ID2" ]; then
  serve_in "$ID2" 8000
  wait_for 15 curl_as "$FB_AS" -f "http://127.0.0.1:$HP2/index.html" -o /dev/null
  out=$(curl_as "$FB_AS" "http://127.0.0.1:$HP2/index.html" 2>&1)
  [ "$out" = "hello from $ID2" ] && ok "published port in network mode allow" || fail "published port (allow)" "$out"
  "${FBCMD[@]}" session rm --socket "$SOCK" "$ID2" >/dev/null 2>&1
else
  fail "session create --allow-net --publish" "$ERR"
fi

# --- host: the host's network, where a profile permits it -----------------------------
run_fb session create --socket "$SOCK" --profile trusted --net host --json --publish 8000
if [ "$RC" = 0 ]; then
  ID3=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])')
  HP3=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["ports"][0]["hostPort"])')
  # In the host's network, the server inside listens on the host's loopback:
  # a free port of its own.
  IP=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
  run_fb session unpublish --socket "$SOCK" "$ID3" 8000
  run_fb session publish --socket "$SOCK" "$ID3" "$IP"
  URL3=$OUT
  serve_in "$ID3" "$IP"
  wait_for 15 curl_as "$FB_AS" -f "${URL3}index.html" -o /dev/null
  out=$(curl_as "$FB_AS" "${URL3}index.html" 2>&1)
  [ "$out" = "hello from $ID3" ] && ok "published port in network mode host" || fail "published port (host)" "$out"
  "${FBCMD[@]}" session rm --socket "$SOCK" "$ID3" >/dev/null 2>&1
else
  skip "published port in network mode host" "the trusted profile does not allow --net host here: $ERR"
fi

# --- copy-on-write workspace from the command line ----------------------------------
run_fb session create --socket "$SOCK" --workspace "$T/ws" --cow
CW=$OUT
run_fb exec --socket "$SOCK" "$CW" -- sh -c 'echo changed > a.txt; echo new > b.txt'
run_fb session diff --socket "$SOCK" "$CW"
case "$OUT" in *"diff --git a/a.txt b/a.txt"*"+changed"*"+++ b/b.txt"*) ok "session diff prints a patch";; *) fail "session diff" "$OUT $ERR";; esac
[ "$(cat "$T/ws/a.txt")" = "from the host" ] && ok "the host file is untouched before commit" || fail "host untouched"
run_fb session diff --socket "$SOCK" --json "$CW" b.txt
case "$OUT" in *'"path": "b.txt"'*'"status": "added"'*) ok "session diff --json PATH";; *) fail "session diff --json" "$OUT $ERR";; esac
case "$OUT" in *'"path": "a.txt"'*) fail "session diff PATH selects" "$OUT";; *) ok "session diff PATH selects";; esac
run_fb session commit --socket "$SOCK" "$CW" b.txt
[ "$RC" = 0 ] && [ "$(cat "$T/ws/b.txt")" = new ] && [ "$(cat "$T/ws/a.txt")" = "from the host" ] &&
  ok "session commit PATH applies that path only" || fail "session commit PATH" "rc=$RC $OUT $ERR"
echo "host edit" > "$T/ws/a.txt"
run_fb session commit --socket "$SOCK" "$CW"
[ "$RC" = 125 ] && printf '%s' "$ERR" | grep -q "conflict: a.txt" && [ "$(cat "$T/ws/a.txt")" = "host edit" ] &&
  ok "session commit: a conflict is 125, named, nothing applied" || fail "session commit conflict" "rc=$RC $ERR"
run_fb session reset --socket "$SOCK" "$CW"
expect_out "session reset: the session sees the host's files again" "host edit" exec --socket "$SOCK" "$CW" -- cat a.txt
run_fb session diff --socket "$SOCK" "$CW"
[ "$RC" = 0 ] && [ -z "$OUT" ] && ok "session diff after reset is empty" || fail "diff after reset" "$OUT"
run_fb session create --socket "$SOCK"
PLAIN=$OUT
expect_err "session diff of a session without cow: 125, not_supported" 125 "not_supported" session diff --socket "$SOCK" "$PLAIN"

# --- the log ------------------------------------------------------------------------
"${FBCMD[@]}" session rm --socket "$SOCK" "$CW" "$PLAIN" >/dev/null 2>&1
if python3 - "$T/serve.err" "$ID" <<'EOF'
import json, sys
events = {}
for line in open(sys.argv[1]):
    o = json.loads(line)          # every line is one JSON object
    if o.get("session") == sys.argv[2]:
        events.setdefault(o["event"], 0)
        events[o["event"]] += 1
want = {"session.created": 1, "session.publish": 2, "session.unpublish": 1, "session.destroyed": 1}
sys.exit(0 if all(events.get(k, 0) >= v for k, v in want.items()) else 1)
EOF
then ok "--log-format json: one JSON line per session event"; else fail "--log-format json" "$(tail -5 "$T/serve.err")"; fi

# A warning of any layer is a JSON line too, not text among them: here
# --ready-fd on an fd open only for reading, and, where a session's limits cannot be applied
# (a user without cgroup delegation), the once-per-boot "limits not applied"
# of the cgroup code -- said by whichever fluebox of that user meets it first
# since boot (a fresh private directory makes this server the first).
mkdir -m 700 "$T/jdir"; [ "$FB_AS" = root ] || chown "$FB_AS" "$T/jdir"
"${FBCMD[@]:0:${#FBCMD[@]}-1}" env XDG_RUNTIME_DIR="$T/jdir" "$FB" serve --socket="$T/j.sock" --log-format json --ready-fd 7 </dev/null >/dev/null 2>"$T/j.err" 7</dev/null &
JSRV=$!
at_exit 'kill $JSRV 2>/dev/null'
if wait_for 10 grep -q server.listening "$T/j.err" && wait_for 10 grep -q ready-fd "$T/j.err"; then
  run_fb session create --socket "$T/j.sock" --mem 64M --pids 64
  [ "$RC" = 0 ] || fail "--log-format json: a session with limits" "rc=$RC $ERR"
  kill -TERM $JSRV; wait $JSRV
  if python3 - "$T/j.err" <<'EOF'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
objs = [json.loads(l) for l in lines]  # every line is one JSON object
sys.exit(0 if any(o.get("event") == "warning" and "--ready-fd" in o.get("message", "") for o in objs) else 1)
EOF
  then ok "--log-format json: a warning is a JSON line too (event warning)"; else fail "--log-format json: a warning" "$(cat "$T/j.err")"; fi
else
  kill -TERM $JSRV; wait $JSRV
  fail "--log-format json: a warning" "no --ready-fd warning: $(cat "$T/j.err")"
fi

kill -TERM $SRV; wait $SRV
no_leftovers "published ports leave nothing behind"
