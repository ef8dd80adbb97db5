#!/bin/bash
# 75-session-stdin.sh — streaming stdin from the command line: `fluebox exec
# -i` feeds its standard input to the command as it comes, so a REPL inside
# a session answers each line before the next one is written (a coprocess
# drives it through pipes, as an agent would); end-of-file reaches the
# command; a command that stops reading holds the writer up without losing
# bytes.
. "$ROOT/tests/lib.sh"

command -v python3 >/dev/null || skip_all "missing: python3"
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
chmod 755 "$T"
SOCK=$T/fb.sock
"${FBCMD[@]}" serve --socket="$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV 2>/dev/null'
wait_for 10 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"
run_fb session create --socket "$SOCK"
ID=$OUT
case "$ID" in s-*) ;; *) bail "session create: rc=$RC $ERR";; esac

# A python3 REPL driven line by line: each answer is read before the next
# line is written (read -t waits for the line; it is not a sleep).
coproc REPL { "${FBCMD[@]}" exec --socket "$SOCK" -i "$ID" -- python3 -q -u -i 2>/dev/null; }
TO=${REPL[1]} FROM=${REPL[0]} RPID=$REPL_PID
echo 'x = 6 * 7' >&$TO
echo 'print(x)' >&$TO
IFS= read -r -t 30 a <&$FROM
[ "$a" = 42 ] && ok "exec -i: the REPL answers the first lines while it runs" || fail "REPL first answer" "got '$a'"
echo 'print(x + 1)' >&$TO
IFS= read -r -t 30 b <&$FROM
[ "$b" = 43 ] && ok "exec -i: the next line, written after the answer, is answered too" || fail "REPL second answer" "got '$b'"
eval "exec $TO>&-"
IFS= read -r -t 30 c <&$FROM; rc=$?
[ "$rc" != 0 ] && [ -z "$c" ] && ok "exec -i: end of input ends the REPL" || fail "REPL end" "rc=$rc '$c'"
wait "$RPID" 2>/dev/null

# Bytes through a command that reads slowly arrive whole and in order.
head -c 3000000 /dev/urandom > "$T/blob"
want=$(sha256sum < "$T/blob"); want=${want%% *}
got=$("${FBCMD[@]}" exec --socket "$SOCK" -i "$ID" -- sh -c 'sleep 1; sha256sum' < "$T/blob"); got=${got%% *}
[ -n "$want" ] && [ "$want" = "$got" ] && ok "exec -i: 3 MB through a slow reader, same bytes" || fail "exec -i bytes" "want $want got $got"

# A command that never reads: the rest of the input is not forced on it, and
# it still exits normally.
out=$(yes | head -c 1000000 | "${FBCMD[@]}" exec --socket "$SOCK" -i "$ID" -- sh -c 'exec <&-; echo done')
[ "$out" = done ] && ok "exec -i: a command that closes its stdin ends normally" || fail "closed stdin" "$out"

"${FBCMD[@]}" session rm --socket "$SOCK" "$ID" >/dev/null 2>&1
kill -TERM $SRV; wait $SRV
no_leftovers "streaming stdin leaves nothing behind"
