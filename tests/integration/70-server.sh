#!/bin/bash
# 70-server.sh — `fluebox serve` and its command-line clients (session
# create/ls/info/rm, exec, cp), as root, as an unprivileged user (FB_AS) and
# with the ASan build. The wire protocol itself is covered method by method in
# tests/server/test_server.py (tests/suites/server.sh).
. "$ROOT/tests/lib.sh"

as_user() {
  if [ "$FB_AS" = root ]; then "$@"; else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"
  fi
}
own() { [ "$FB_AS" = root ] || chown -R "$FB_AS" "$@"; }
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi

chmod 755 "$T"
SOCK=$T/fb.sock
mkdir -p "$T/ws" "$T/files"
head -c 3000000 /dev/urandom > "$T/files/blob.bin"
echo "hello from the host" > "$T/files/note.txt"
own "$T/ws" "$T/files"

# The server: its own stdio (it must never hold the runner's pipe), stopped
# by its pid whatever happens.
"${FBCMD[@]}" serve --socket="$SOCK" --pool=1 --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV'
for _ in $(seq 1 200); do grep -q ready "$T/ready" 2>/dev/null && break; sleep 0.05; done
if grep -q ready "$T/ready" && [ -S "$SOCK" ]; then ok "serve listens on --socket (--ready-fd says so)"; else bail "serve listens on --socket: $(cat "$T/serve.err")"; fi
mode=$(stat -c %a "$SOCK")
[ "$mode" = 600 ] && ok "the socket is 0600" || fail "the socket is 0600" "mode $mode"

# --- sessions ------------------------------------------------------------------
run_fb session create --socket "$SOCK"
ID=$OUT
case "$ID" in s-????????????????) ok "session create prints an id";; *) bail "session create prints an id: rc=$RC out=$OUT err=$ERR";; esac
run_fb session ls --socket "$SOCK"
case "$OUT" in *"$ID"*) ok "session ls lists it";; *) fail "session ls lists it" "$OUT";; esac
run_fb session info --socket "$SOCK" "$ID"
case "$OUT" in *"\"session\": \"$ID\""*'"state": "ready"'*) ok "session info prints its JSON";; *) fail "session info" "$OUT $ERR";; esac
expect_err "session create with a bad option: 125 and why" 125 "unknown option --frobnicate" session create --socket "$SOCK" --frobnicate
expect_err "session create with a bad limit: 125 and why" 125 "--mem" session create --socket "$SOCK" --mem lots

# A warning of the session's making (here the policy's: --disk not below
# --mem) goes to the client that asked for the session, once, on its stderr,
# and in --json's "warnings"; never into the server's log.
run_fb session create --socket "$SOCK" --mem 64M --disk 64M
WID=$OUT
case "$RC:$ERR" in
  "0:fluebox: warning: --disk is not below the memory limit"*) ok "a session's warning goes to the client that created it" ;;
  *) fail "a session's warning goes to the client that created it" "rc=$RC err=$ERR" ;;
esac
if grep -q "is not below the memory limit" "$T/serve.err"; then
  fail "a session's warning is not in the server's log" "$(grep -m1 'not below' "$T/serve.err")"
else ok "a session's warning is not in the server's log"; fi
run_fb session create --socket "$SOCK" --json --mem 64M --disk 64M
WID2=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["session"])' 2>/dev/null)
if printf '%s' "$OUT" | python3 -c 'import json,sys; w=json.load(sys.stdin)["warnings"]; sys.exit(not (len(w)==1 and "not below the memory limit" in w[0]))' 2>/dev/null; then
  ok "session create --json: the warnings are in \"warnings\""
else fail "session create --json: the warnings are in \"warnings\"" "$OUT"; fi
run_fb session info --socket "$SOCK" "$WID"
case "$OUT" in *warnings*) fail "the warnings are given once (not in session.info)" "$OUT" ;; *) ok "the warnings are given once (not in session.info)" ;; esac
run_fb session rm --socket "$SOCK" "$WID" $WID2

# --- exec ------------------------------------------------------------------------
expect_out "exec runs a command in the session" "hi from the session" exec --socket "$SOCK" "$ID" -- echo hi from the session
expect_rc "exec exits with the command's status" 7 exec --socket "$SOCK" "$ID" -- sh -c 'exit 7'
expect_rc "exec: death by signal N is 128+N" 143 exec --socket "$SOCK" "$ID" -- sh -c 'kill -TERM $$'
run_fb exec --socket "$SOCK" "$ID" -- sh -c 'echo out; echo err >&2'
[ "$OUT" = out ] && [ "$ERR" = err ] && ok "exec: stdout and stderr stay apart" || fail "exec: stdout/stderr" "out=$OUT err=$ERR"
run_fb exec --socket "$SOCK" "$ID" -- sh -c 'echo state > kept.txt'
expect_out "exec: state persists between execs" "state" exec --socket "$SOCK" "$ID" -- cat kept.txt
expect_out "exec --env and --cwd" "/tmp:bar" exec --socket "$SOCK" --env FOO=bar --cwd /tmp "$ID" -- sh -c 'echo "$(pwd):$FOO"'
expect_err "exec --timeout kills: 124 and a note" 124 "timed out" exec --socket "$SOCK" --timeout 300ms "$ID" -- sleep 30
n=$(printf '%s\n' "$ERR" | grep -c .)
[ "$n" = 1 ] && ok "exec --timeout: the note is one line" || fail "exec --timeout: the note is one line" "$n lines: $ERR"
expect_out "exec --opt=value" "/tmp:v" exec --socket="$SOCK" --env=K=v --cwd=/tmp "$ID" -- sh -c 'echo "$(pwd):$K"'
expect_out "exec -e K=V -i (short options)" "v2" exec --socket "$SOCK" -e K=v2 "$ID" -- sh -c 'echo $K'
run_fb session ls --json "--socket=$SOCK"
case "$OUT" in *"$ID"*) ok "session ls: options after others, --opt=value";; *) fail "session ls --socket=" "$OUT $ERR";; esac
expect_err "exec of a missing command: 127" 127 "command not found" exec --socket "$SOCK" "$ID" -- no-such-command-here
out=$(printf 'line one\nline two\n' | as_user "$FB" exec --socket "$SOCK" -i "$ID" -- wc -l 2>&1)
[ "$(echo $out)" = 2 ] && ok "exec -i passes standard input" || fail "exec -i passes standard input" "$out"
run_fb exec --socket "$SOCK" "$ID" -- sh -c 'id -u; cat /proc/self/status | grep CapEff'
case "$OUT" in "1000"*"0000000000000000"*) ok "exec runs as the sandbox user without capabilities";; *) fail "exec identity" "$OUT";; esac
run_fb exec --socket "$SOCK" "$ID" -- sh -c "cat '$T/files/note.txt' 2>&1; true"
case "$OUT" in *"hello from the host"*) fail "exec cannot read host files" "$OUT";; *) ok "exec cannot read host files";; esac

# --- cp ----------------------------------------------------------------------------
run_fb cp --socket "$SOCK" "$T/files/blob.bin" "$ID:blob.bin"
[ "$RC" = 0 ] && ok "cp into the session" || fail "cp into the session" "$ERR"
expect_out "the copied file is there, same size" "3000000" exec --socket "$SOCK" "$ID" -- stat -c %s blob.bin
rm -f "$T/files/back.bin"
run_fb cp --socket "$SOCK" "$ID:/workspace/blob.bin" "$T/files/back.bin"
if [ "$RC" = 0 ] && cmp -s "$T/files/blob.bin" "$T/files/back.bin"; then ok "cp out of the session: same bytes"; else fail "cp out" "rc=$RC $ERR"; fi
run_fb cp --socket "$SOCK" -p "$T/files/note.txt" "$ID:deep/dir/"
expect_out "cp -p into a new directory keeps the name" "hello from the host" exec --socket "$SOCK" "$ID" -- cat deep/dir/note.txt
run_fb cp --socket "$SOCK" "$ID:deep/dir/note.txt" -
[ "$OUT" = "hello from the host" ] && ok "cp to - writes standard output" || fail "cp to -" "$OUT $ERR"
expect_err "cp of a missing file: 125 with ENOENT" 125 "ENOENT" cp --socket "$SOCK" "$ID:nope.txt" "$T/files/x"
expect_err "cp needs exactly one SESSION:PATH" 125 "exactly one" cp --socket "$SOCK" "$T/files/note.txt" "$T/files/y"

# --- workspace -----------------------------------------------------------------------
run_fb session create --socket "$SOCK" --workspace "$T/ws" --mem 256M
WS=$OUT
if [ "$RC" = 0 ]; then
  run_fb exec --socket "$SOCK" "$WS" -- sh -c 'echo made-inside > out.txt'
  [ "$(cat "$T/ws/out.txt" 2>/dev/null)" = made-inside ] && ok "a host workspace receives the session's files" || fail "workspace files" "rc=$RC $ERR"
  run_fb session rm --socket "$SOCK" "$WS"
  [ -f "$T/ws/out.txt" ] && ok "the workspace keeps its files after session rm" || fail "workspace after rm"
else
  fail "session create --workspace" "$ERR"
fi

# --- secrets and grants (docs/secrets.md) --------------------------------------------
# The CLI reads the value (here from a file: FB_AS's environment is reset) and
# sends it; the sandbox sees a stand-in; the owner grants and revokes.
echo "cli-secret-value-77" > "$T/files/tok"
own "$T/files"
run_fb session create --socket "$SOCK" --allow-net api.test --secret "CLI_TOKEN=@$T/files/tok:api.test"
SID=$OUT
if [ "$RC" = 0 ]; then
  run_fb exec --socket "$SOCK" "$SID" -- sh -c 'echo "$CLI_TOKEN"; env'
  case "$OUT" in
    fluebox-standin-*cli-secret-value-77*) fail "session create --secret: a stand-in inside, the value nowhere" "$OUT" ;;
    fluebox-standin-*) ok "session create --secret: a stand-in inside, the value nowhere" ;;
    *) fail "session create --secret: a stand-in inside" "rc=$RC $OUT $ERR" ;;
  esac
  expect_rc "session grant --ttl allow-net" 0 session grant --socket "$SOCK" --ttl 1m "$SID" allow-net other.test
  expect_out "session grant secret prints its stand-in" fluebox-standin- \
    session grant --socket "$SOCK" "$SID" secret "G_TOKEN=@$T/files/tok:api.test"
  expect_rc "session revoke secret" 0 session revoke --socket "$SOCK" "$SID" secret G_TOKEN
  expect_err "session grant of an unknown kind: 125 and why" 125 "allow-net, allow-http or secret" \
    session grant --socket "$SOCK" "$SID" bogus x
  expect_err "session revoke of what was never granted: 125 and why" 125 "never.test" \
    session revoke --socket "$SOCK" "$SID" allow-net never.test
  run_fb session rm --socket "$SOCK" "$SID"
else
  fail "session create --secret" "rc=$RC $ERR"
fi
expect_err "session create --secret of an unset variable: 125, naming it" 125 "FB_UNSET_VAR_X" \
  session create --socket "$SOCK" --allow-net api.test --secret FB_UNSET_VAR_X:api.test
grep -q "cli-secret-value-77" "$T/serve.err" && fail "the value is not in the server's log" "$(grep -m1 cli-secret "$T/serve.err")" \
  || ok "the value is not in the server's log"

# --- rm ------------------------------------------------------------------------------
run_fb session rm --socket "$SOCK" "$ID"
[ "$RC" = 0 ] && ok "session rm" || fail "session rm" "$ERR"
expect_err "exec in a removed session: 125 not_found" 125 "not_found" exec --socket "$SOCK" "$ID" -- true
expect_err "session rm of an unknown id: 125" 125 "not_found" session rm --socket "$SOCK" s-0000000000000000
expect_err "a client without a server: 125 and why" 125 'no `fluebox serve` is running at' session ls --socket "$T/none.sock"

# --- stop ------------------------------------------------------------------------------
run_fb session create --socket "$SOCK"
inits=$(pgrep -P $SRV | tr '\n' ' ')
kill -TERM $SRV
wait $SRV; rc=$?
[ "$rc" = 0 ] && ok "SIGTERM: serve exits 0" || fail "SIGTERM: serve exits 0" "rc=$rc $(tail -3 "$T/serve.err")"
[ ! -e "$SOCK" ] && ok "SIGTERM: the socket is removed" || fail "SIGTERM: socket removed"
left=""
for p in $inits; do [ -d /proc/$p ] && left="$left $p"; done
[ -z "$left" ] && ok "SIGTERM: no session left running" || fail "SIGTERM: sessions left" "$left"
grep -q "ERROR: \(Address\|Leak\)Sanitizer\|runtime error" "$T/serve.err" && fail "serve: sanitizer report" "$(grep -m3 Sanitizer "$T/serve.err")" || ok "serve: no sanitizer report"
no_leftovers "serve leaves nothing behind"
