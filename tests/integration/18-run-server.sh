#!/bin/bash
# 18-run-server.sh — `fluebox run --server [SOCKET]` (and FLUEBOX_SERVER): a
# one-shot run served by a running `fluebox serve`. Each check runs the same
# command cold and through the server and compares what a user sees: exit
# codes, stdout and stderr, stdin, the boundaries (a host file, the network),
# a forwarded SIGTERM, the workspace, stdin streamed; an option a session cannot honour is
# refused (125, one line); no session is left behind. As root and as FB_AS.
. "$ROOT/tests/lib.sh"

if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" "$FB")
fi
own() { [ "$FB_AS" = root ] || chown -R "$FB_AS" "$@"; }

chmod 755 "$T"
SOCK=$T/s.sock
mkdir -p "$T/ws"
own "$T/ws"
echo "TOPSECRET-$$" > "$T/secret.txt"
chmod 644 "$T/secret.txt"

# A private server, on its own stdio, stopped by its pid whatever happens.
"${FBCMD[@]}" serve --socket "$SOCK" --pool 1 --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV'
if wait_for 30 grep -q ready "$T/ready" && [ -S "$SOCK" ]; then ok "a private fluebox serve is ready"
else bail "fluebox serve did not start: $(tail -3 "$T/serve.err")"; fi

# both NAME ARGS... — runs `fluebox run ARGS` cold, then `fluebox run
# --server SOCK ARGS`: rc, stdout and stderr in C_RC/C_OUT/C_ERR and RC/OUT/ERR.
both() {
  run_fb run "$@"; C_RC=$RC; C_OUT=$OUT; C_ERR=$ERR
  run_fb run --server "$SOCK" "$@"
}
# same NAME WANT_RC ARGS... — both ways exit WANT_RC with the same stdout.
same() {
  local name=$1 want=$2; shift 2
  both "$@"
  if [ "$C_RC" = "$want" ] && [ "$RC" = "$want" ] && [ "$C_OUT" = "$OUT" ]; then ok "$name (cold and --server)"
  else fail "$name" "cold rc=$C_RC out=$(head -c 100 <<<"$C_OUT") err=$(head -c 200 <<<"$C_ERR"); server rc=$RC out=$(head -c 100 <<<"$OUT") err=$(head -c 200 <<<"$ERR")"; fi
}

# --- exit codes and output ---------------------------------------------------------
same "echo: output passes through" 0 -- echo hello sandbox
[ "$OUT" = "hello sandbox" ] && ok "--server: stdout is the command's" || fail "--server: stdout" "$OUT"
same "exit status 5 passes through" 5 -- sh -c 'exit 5'
same "death by signal N is 128+N" 143 -- sh -c 'kill -TERM $$'
same "stdout and stderr stay apart" 0 -- sh -c 'echo out; echo err >&2'
[ "$C_ERR" = err ] && [ "$ERR" = err ] && ok "stderr is the command's both ways" || fail "stderr" "cold '$C_ERR' server '$ERR'"
same "--timeout kills: 124" 124 --timeout 300ms -- sleep 30
case "$C_ERR|$ERR" in *"timed out"*"|"*"timed out"*) ok "--timeout says so on stderr both ways";; *) fail "--timeout note" "cold '$C_ERR' server '$ERR'";; esac
same "command not found: 127" 127 -- nosuchcmd-xyz
case "$ERR" in *"nosuchcmd-xyz: command not found"*) ok "--server: 127 says why";; *) fail "--server: 127 says why" "$ERR";; esac
same "not executable: 126" 126 -- /etc/hostname
same "--env reaches the command" 0 --env K=v1 -- sh -c 'echo "$K"'
same "--nofile is the command's RLIMIT_NOFILE" 0 --nofile 64 -- sh -c 'ulimit -n'
[ "$OUT" = 64 ] && ok "--server: --nofile 64 applied" || fail "--server: --nofile" "$OUT"
same "cwd is /workspace" 0 -- pwd
# A bounded memory bomb (dd reads 200M into one buffer): the same ending both
# ways (137, the OOM killer, with a cgroup; the failed allocation with
# RLIMIT_DATA; none in the ASan build without a cgroup, 30-limits says why).
both --mem 64M -- dd if=/dev/zero of=/dev/null bs=200M count=1
if [ "$C_RC" = "$RC" ] && [ "$RC" != 125 ]; then ok "--mem 64M stops a memory bomb the same way both ways (exit $RC)"
else fail "--mem: memory bomb" "cold rc=$C_RC $(head -c 200 <<<"$C_ERR"); server rc=$RC $(head -c 200 <<<"$ERR")"; fi
if [ "$RC" = 137 ]; then
  case "$C_ERR|$ERR" in *"out of memory"*"|"*"out of memory"*) ok "an OOM kill is said on stderr both ways";; *) fail "OOM said" "cold '$C_ERR' server '$ERR'";; esac
fi

# --- standard input -----------------------------------------------------------------
head -c 200000 /dev/urandom > "$T/in.bin"; chmod 644 "$T/in.bin"
want=$(sha256sum < "$T/in.bin")
got_c=$("${FBCMD[@]}" run -- sha256sum < "$T/in.bin" 2>&1)
got_s=$("${FBCMD[@]}" run --server "$SOCK" -- sha256sum < "$T/in.bin" 2>&1)
[ "$got_c" = "$want" ] && [ "$got_s" = "$want" ] && ok "binary stdin reaches the command whole (cold and --server)" || fail "stdin" "want $want cold $got_c server $got_s"
got=$(echo "piped input" | "${FBCMD[@]}" run --server "$SOCK" -- cat 2>&1)
[ "$got" = "piped input" ] && ok "--server: a stdin pipe reaches the command" || fail "--server: stdin pipe" "$got"
same "empty stdin is end-of-file" 0 -- sh -c 'wc -c'
# Streamed, not read to the end first: each line is answered before the
# next is written (a run that waited for end-of-file would never answer).
for m in cold server; do
  opt=(); [ $m = server ] && opt=(--server "$SOCK")
  coproc RS { "${FBCMD[@]}" run "${opt[@]}" -- sh -c 'while read -r l; do echo "got $l"; done; echo eof' 2>"$T/co.err"; }
  a=; b=; c=
  echo one >&"${RS[1]}"; read -r -t 30 a <&"${RS[0]}"
  echo two >&"${RS[1]}"; read -r -t 30 b <&"${RS[0]}"
  eval "exec ${RS[1]}>&-"; read -r -t 30 c <&"${RS[0]}"
  wait "$RS_PID"; rc=$?
  if [ "$a|$b|$c|$rc" = "got one|got two|eof|0" ]; then ok "$m: stdin is streamed line by line, then end-of-file"
  else fail "$m: streamed stdin" "'$a' '$b' '$c' rc=$rc $(cat "$T/co.err")"; fi
done

# --- boundaries ----------------------------------------------------------------------
both -- cat "$T/secret.txt"
case "$C_OUT$OUT" in *TOPSECRET*) fail "a host file outside the binds is unreadable" "read it";;
  *) [ "$C_RC" != 0 ] && [ "$RC" != 0 ] && ok "a host file outside the binds is unreadable (cold and --server)" || fail "host file" "rc $C_RC/$RC";; esac
same "only loopback exists (network off)" 0 -- sh -c 'ls /proc/sys/net/ipv4/conf | grep -v -e all -e default'
[ "$OUT" = lo ] && ok "--server: the network is loopback only" || fail "--server: network" "$OUT"
same "the sandbox runs as uid 1000" 0 -- id -u

# --- the workspace ----------------------------------------------------------------------
for m in cold server; do
  if [ $m = cold ]; then run_fb run --workspace "$T/ws" -- sh -c "echo from-$m > made-$m.txt"
  else run_fb run --server="$SOCK" --workspace "$T/ws" -- sh -c "echo from-$m > made-$m.txt"; fi
  if [ "$RC" = 0 ] && [ "$(cat "$T/ws/made-$m.txt" 2>/dev/null)" = "from-$m" ]; then ok "$m: --workspace is written on the host"
  else fail "$m: --workspace written" "rc=$RC $ERR"; fi
done
[ "$(stat -c %U "$T/ws/made-server.txt" 2>/dev/null)" = "$(stat -c %U "$T/ws/made-cold.txt" 2>/dev/null)" ] \
  && ok "the workspace file has the same owner both ways" || fail "workspace owner" "$(ls -l "$T/ws")"

# --- a forwarded SIGTERM -------------------------------------------------------------------
for m in cold server; do
  opt=(); [ $m = server ] && opt=(--server "$SOCK")
  rm -f "$T/sig.out"
  "${FBCMD[@]}" run "${opt[@]}" -- sh -c 'trap "echo got-term; exit 3" TERM; echo ready; while :; do sleep 0.1; done' </dev/null >"$T/sig.out" 2>"$T/sig.err" &
  p=$!
  if wait_for 30 grep -q ready "$T/sig.out"; then
    kill -TERM "$p"; wait "$p"; rc=$?
    if [ "$rc" = 3 ] && grep -q got-term "$T/sig.out"; then ok "$m: SIGTERM reaches the command (its exit 3)"
    else fail "$m: SIGTERM forwarded" "rc=$rc $(cat "$T/sig.out" "$T/sig.err")"; fi
  else kill -KILL "$p"; wait "$p"; fail "$m: SIGTERM forwarded" "never ready: $(cat "$T/sig.err")"; fi
done

# --- FLUEBOX_SERVER ----------------------------------------------------------------------------
FLUEBOX_SERVER=$SOCK run_fb run -- sh -c 'cat /proc/1/cmdline | tr "\0" " "'
c_init=$OUT
run_fb run -- sh -c 'cat /proc/1/cmdline | tr "\0" " "'
if [ "$RC" = 0 ] && [ -n "$c_init" ] && [ "$c_init" != "$OUT" ]; then ok "FLUEBOX_SERVER=SOCKET serves the run (a session's init, not run's)"
else fail "FLUEBOX_SERVER" "server init '$c_init' cold init '$OUT'"; fi
FLUEBOX_SERVER=0 run_fb run -- sh -c 'cat /proc/1/cmdline | tr "\0" " "'
[ "$OUT" != "$c_init" ] && ok "FLUEBOX_SERVER=0 runs cold" || fail "FLUEBOX_SERVER=0" "$OUT"

# --- the pool takes the shape of the caller's programs --------------------------------------
# A caller whose python3 is a venv's needs the venv bound when the sandbox is
# made: its first run is served cold; the pool then carries that venv, and
# the next run is taken from it, with the caller's python3 inside. A caller
# with other programs is served cold again, and right.
pool_ready() { # pool_ready — prints server.info's pool.ready
  local py=(/usr/bin/python3 -c 'import socket,sys,json
s=socket.socket(socket.AF_UNIX); s.connect(sys.argv[1]); s.sendall(b"{\"id\":1,\"method\":\"server.info\"}\n")
b=b""
while not b.endswith(b"\n"):
    d=s.recv(65536)
    if not d: break
    b+=d
print(json.loads(b)["result"]["pool"]["ready"])' "$SOCK")
  if [ "$FB_AS" = root ]; then "${py[@]}"; else setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups -- "${py[@]}"; fi
}
# (A function, not `wait_for 30 pool_has_one`: that expands the
# count once and waits on a constant.)
pool_has_one() { [ "$(pool_ready)" = 1 ]; }
pooled_runs() { grep -c 'label=fluebox-run.*pooled=true\|pooled=true.*fluebox-run' "$T/serve.err"; }
created() { grep -c 'session.created' "$T/serve.err"; }
if /usr/bin/python3 -m venv --without-pip "$T/venv" >/dev/null 2>&1; then
  chmod -R a+rX "$T/venv"
  wait_for 30 pool_has_one || fail "the pool refills" "ready=$(pool_ready)"
  c0=$(created)
  PATH="$T/venv/bin:$PATH" run_fb run --server "$SOCK" -- python3 -c 'import sys; print(sys.prefix)'
  l1=$(grep 'session.created' "$T/serve.err" | tail -n 1)
  [ "$RC" = 0 ] && [ "$OUT" = "$T/venv" ] && ok "a venv caller's first --server run has the venv's python3" || fail "venv caller, first run" "rc=$RC out=$OUT err=$ERR"
  case "$l1" in *pooled=false*) ok "  ... served cold (the pool had no venv)";; *) fail "venv caller, first run cold" "$l1";; esac
  wait_for 30 pool_has_one || fail "the pool refills in the venv's shape" "ready=$(pool_ready)"
  PATH="$T/venv/bin:$PATH" run_fb run --server "$SOCK" -- python3 -c 'import sys; print(sys.prefix)'
  l2=$(grep 'session.created' "$T/serve.err" | tail -n 1)
  [ "$RC" = 0 ] && [ "$OUT" = "$T/venv" ] && ok "  ... its second run has the venv's python3 too" || fail "venv caller, second run" "rc=$RC out=$OUT err=$ERR"
  case "$l2" in *pooled=true*) ok "  ... and is taken from the pool, which took the venv's shape";; *) fail "venv caller, second run pooled" "$l2";; esac
  wait_for 30 pool_has_one || fail "the pool refills" "ready=$(pool_ready)"
  run_fb run --server "$SOCK" -- python3 -c 'import sys; print(sys.prefix)'
  l3=$(grep 'session.created' "$T/serve.err" | tail -n 1)
  [ "$RC" = 0 ] && [ "$OUT" != "$T/venv" ] && ok "a caller without the venv does not get it from the pool" || fail "plain caller after the venv" "rc=$RC out=$OUT err=$ERR"
  case "$l3" in *pooled=false*) ok "  ... it is served cold";; *) fail "plain caller after the venv: cold" "$l3";; esac
  [ "$(( $(created) - c0 ))" = 3 ] || fail "three sessions made" "$(( $(created) - c0 ))"
else
  skip "the pool's shape" "python3 -m venv is not available (python3-venv, scripts/deps.sh test)"
fi

# --- bad input ----------------------------------------------------------------------------------
one_line() { [ "$(printf '%s\n' "$ERR" | grep -c .)" = 1 ]; }
expect_err "--server with an unknown option: 125 and why" 125 "unknown option --frobnicate" run --server "$SOCK" --frobnicate -- true
one_line && ok "  ... on one line" || fail "unknown option: one line" "$ERR"
expect_err "--server --report: refused, 125" 125 "--report is not available with --server" run --server "$SOCK" --report - -- true
one_line && ok "  ... on one line" || fail "--report: one line" "$ERR"
expect_err "--server --print-path: refused, 125" 125 "--print-path is not available with --server" run --server "$SOCK" --print-path -- true
expect_err "--server with a bad limit: 125" 125 "--mem" run --server "$SOCK" --mem lots -- true
expect_err "--server without \"--\": 125" 125 'missing "--"' run --server "$SOCK"
# No server there: one line that names the socket, says no `fluebox serve`
# runs there and how to start one (not a bare "No such file or directory").
no_server() { # NAME ARGS...
  local name=$1; shift
  expect_err "$name: 125, no fluebox serve is running there" 125 "no \`fluebox serve\` is running at $T/none.sock: start one with \`fluebox serve &\`" "$@"
  one_line || fail "$name: one line" "$ERR"
}
no_server "run --server with no server there" run --server "$T/none.sock" -- true
no_server "exec with no server there" exec --socket "$T/none.sock" s1 -- true
no_server "session create with no server there" session create --socket "$T/none.sock"
no_server "session ls with no server there" session ls --socket "$T/none.sock"
FLUEBOX_SOCKET=$T/none.sock no_server "FLUEBOX_SOCKET with no server there" session ls
# A socket file nobody listens on (a server that was SIGKILLed): the same.
python3 -c 'import socket, sys; socket.socket(socket.AF_UNIX).bind(sys.argv[1])' "$T/stale.sock"
chmod 777 "$T/stale.sock"
expect_err "a socket nobody listens on: no fluebox serve is running there" 125 "no \`fluebox serve\` is running at $T/stale.sock" session ls --socket "$T/stale.sock"
rm -f "$T/stale.sock"
# The default socket of a user whose private directory does not exist yet
# (root becomes a uid nobody has, with no /tmp/fluebox-UID).
if as_root; then
  NOBODY_UID=$(( 3000000 + $$ % 100000 ))
  UDIR=/tmp/fluebox-$NOBODY_UID
  if [ ! -e "$UDIR" ] && [ ! -e "/run/user/$NOBODY_UID" ]; then
    ERR=$(cd / && setpriv --reuid=$NOBODY_UID --regid=$NOBODY_UID --clear-groups -- env -u XDG_RUNTIME_DIR -u FLUEBOX_SOCKET "$FB" session ls 2>&1 >/dev/null); RC=$?
    case "$RC $ERR" in
      "125 fluebox: no \`fluebox serve\` is running at $UDIR/fluebox.sock: start one with"*) ok "the default socket with no directory yet: 125, no fluebox serve is running there" ;;
      *) fail "the default socket with no directory yet" "rc=$RC $ERR" ;;
    esac
    one_line || fail "the default socket with no directory yet: one line" "$ERR"
    [ ! -e "$UDIR" ] && ok "  ... and no directory is made for it" || { fail "the default socket: a directory was made" "$UDIR"; rm -rf "$UDIR"; }
  else
    skip "the default socket with no directory yet" "$UDIR exists"
  fi
fi

# --- nothing left behind -------------------------------------------------------------------------
run_fb session ls --json --socket "$SOCK"
[ "$RC" = 0 ] && [ "$(tr -d ' \n' <<<"$OUT")" = "[]" ] && ok "no session is left on the server" || fail "sessions left" "rc=$RC $OUT"
kill "$SRV"; wait "$SRV"
no_leftovers "nothing is left behind after the server stops"
