#!/bin/bash
# 73-session-fork.sh — session fork, snapshot and restore from the command
# line: a fork starts with the original's workspace layer, home and /tmp,
# then the two diverge while both keep working; running processes are not
# copied; a copy-on-write session is snapshotted, changed, restored, and
# forked; what cannot be forked says why.
. "$ROOT/tests/lib.sh"

if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
chmod 755 "$T"
SOCK=$T/fb.sock
mkdir -p "$T/ws"
echo "host version" > "$T/ws/a.txt"
[ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T/ws"

"${FBCMD[@]}" serve --socket="$SOCK" --log-format json --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV 2>/dev/null'
wait_for 10 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"
x() { run_fb exec --socket "$SOCK" "$@"; }

# --- a session with a tmpfs workspace -------------------------------------------------
run_fb session create --socket "$SOCK"
A=$OUT
x "$A" -- sh -c 'mkdir -p src && echo "int main;" > src/main.c && ln -s /etc/passwd src/link &&
  echo secret > ~/.token && chmod 600 ~/.token && echo scratch > /tmp/t.txt &&
  (sleep 300 </dev/null >/dev/null 2>&1 &) && echo started'
run_fb session fork --socket "$SOCK" "$A"
B=$OUT
case "$B" in s-????????????????) ok "session fork prints the new session's id";; *) bail "session fork: rc=$RC $OUT $ERR";; esac
[ "$B" != "$A" ] && ok "the fork is another session" || fail "the fork is another session"
expect_out "the fork has the workspace" "int main;" exec --socket "$SOCK" "$B" -- cat src/main.c
expect_out "the fork has the home, modes kept" "600 secret" exec --socket "$SOCK" "$B" -- sh -c 'printf "%s " $(stat -c %a ~/.token); cat ~/.token'
expect_out "the fork has /tmp" "scratch" exec --socket "$SOCK" "$B" -- cat /tmp/t.txt
expect_out "a symlink stays a symlink" "/etc/passwd" exec --socket "$SOCK" "$B" -- readlink src/link
x "$B" -- sh -c 'ps -eo args | grep -c "^sleep 300" || true'
[ "$OUT" = 0 ] && ok "running processes are not copied" || fail "running processes are not copied" "$OUT"
x "$A" -- sh -c 'ps -eo args | grep -c "^sleep 300" || true'
[ "$OUT" = 1 ] && ok "the original keeps its processes" || fail "the original keeps its processes" "$OUT"
# The original's later writes to files the fork has too stay the original's
# (nothing is shared: not the workspace, the home or /tmp).
x "$A" -- sh -c 'echo "int later;" > src/main.c; echo changed > ~/.token; echo changed > /tmp/t.txt'
expect_out "the fork does not see the original's later writes" "int main; secret scratch" \
  exec --socket "$SOCK" "$B" -- sh -c 'echo $(cat src/main.c ~/.token /tmp/t.txt)'
# They diverge, and both keep working.
x "$A" -- sh -c 'echo "from A" > src/main.c; echo a-only > a.txt'
x "$B" -- sh -c 'echo "from B" > src/main.c; echo b-only > b.txt'
expect_out "the original sees its own change" "from A" exec --socket "$SOCK" "$A" -- cat src/main.c
expect_out "the fork sees its own change" "from B" exec --socket "$SOCK" "$B" -- cat src/main.c
x "$A" -- sh -c 'ls'
case "$OUT" in *b.txt*) fail "the fork's new file is not in the original" "$OUT";; *) ok "the fork's new file is not in the original";; esac
x "$B" -- sh -c 'ls'
case "$OUT" in *a.txt*) fail "the original's new file is not in the fork" "$OUT";; *) ok "the original's new file is not in the fork";; esac
run_fb session info --socket "$SOCK" "$B"
case "$OUT" in *"\"forkedFrom\": \"$A\""*) ok "session info says forkedFrom";; *) fail "forkedFrom" "$OUT";; esac
# A fork of a fork; the original destroyed while its fork lives on.
run_fb session fork --socket "$SOCK" "$B"
C=$OUT
run_fb session rm --socket "$SOCK" "$A" "$B"
expect_out "a fork of a fork outlives both" "from B" exec --socket "$SOCK" "$C" -- cat src/main.c

# --- a copy-on-write session: snapshot, restore, fork ----------------------------------
run_fb session create --socket "$SOCK" --workspace "$T/ws" --cow
W=$OUT
x "$W" -- sh -c 'echo "try 1" > a.txt && echo one > one.txt'
run_fb session snapshot --socket "$SOCK" "$W" first
[ "$RC" = 0 ] && ok "session snapshot" || fail "session snapshot" "$ERR"
x "$W" -- sh -c 'echo "try 2" > a.txt && rm one.txt && mkdir d && echo two > d/two.txt'
run_fb session snapshot --socket "$SOCK" "$W" second
run_fb session restore --socket "$SOCK" "$W" first
[ "$RC" = 0 ] && ok "session restore" || fail "session restore" "$ERR"
expect_out "restore: the files are as at the snapshot" "try 1 one" exec --socket "$SOCK" "$W" -- sh -c 'echo $(cat a.txt one.txt)'
expect_out "restore: what came later is gone" "no d" exec --socket "$SOCK" "$W" -- sh -c '[ -e d ] && echo d || echo no d'
run_fb session restore --socket "$SOCK" "$W" second
expect_out "restore the later snapshot: its deletion too" "try 2 gone two" exec --socket "$SOCK" "$W" -- sh -c 'echo $(cat a.txt) $([ -e one.txt ] || echo gone) $(cat d/two.txt)'
[ "$(cat "$T/ws/a.txt")" = "host version" ] && ok "snapshots and restores never touch the host workspace" || fail "host workspace touched"
run_fb session info --socket "$SOCK" "$W"
case "$OUT" in *'"snapshots": ['*'"first"'*'"second"'*) ok "session info lists the snapshots";; *) fail "snapshots in info" "$OUT";; esac
expect_err "restore of an unknown snapshot: 125, not_found" 125 "not_found" session restore --socket "$SOCK" "$W" third
expect_err "a bad snapshot name is refused" 125 "name must be" session snapshot --socket "$SOCK" "$W" ../up
run_fb session fork --socket "$SOCK" "$W"
F=$OUT
expect_out "the fork of a cow session has its layer" "try 2" exec --socket "$SOCK" "$F" -- cat a.txt
expect_out "... its deletions too" "gone" exec --socket "$SOCK" "$F" -- sh -c '[ -e one.txt ] || echo gone'
x "$F" -- sh -c 'echo "fork" > a.txt'
run_fb session diff --socket "$SOCK" "$F"
case "$OUT" in *"+fork"*) ok "the fork's diff is against the host workspace";; *) fail "fork diff" "$OUT $ERR";; esac
expect_out "the original is untouched by its fork" "try 2" exec --socket "$SOCK" "$W" -- cat a.txt

# --- what cannot be forked -------------------------------------------------------------
run_fb session create --socket "$SOCK" --workspace "$T/ws"
H=$OUT
expect_err "fork of a session on a host directory: 125, not_supported" 125 "not_supported" session fork --socket "$SOCK" "$H"
expect_err "snapshot of a session without cow: 125, not_supported" 125 "not_supported" session snapshot --socket "$SOCK" "$H" s1
expect_err "fork of an unknown session: 125, not_found" 125 "not_found" session fork --socket "$SOCK" s-0000000000000000

# --- a fork is bounded by its own limits --------------------------------------------------
run_fb session create --socket "$SOCK" --disk 64M
BIG=$OUT
x "$BIG" -- sh -c 'head -c 40000000 /dev/zero > /tmp/fill.bin && echo filled'
run_fb session create --socket "$SOCK" --disk 16M
run_fb session fork --socket "$SOCK" "$BIG"
[ "$RC" = 0 ] && ok "a fork gets the original's --disk, and the copy fits" || fail "fork of a 64M scratch" "$ERR"
[ "$RC" = 0 ] && "${FBCMD[@]}" session rm --socket "$SOCK" "$OUT" >/dev/null 2>&1

if python3 - "$T/serve.err" <<'EOF'
import json, sys
ev = [json.loads(l) for l in open(sys.argv[1])]
forked = [e for e in ev if e["event"] == "session.forked"]
snaps = [e for e in ev if e["event"] in ("session.snapshot", "session.restore")]
sys.exit(0 if len(forked) >= 4 and all("from" in e for e in forked) and len(snaps) >= 4 else 1)
EOF
then ok "the log has the forks and snapshots"; else fail "log of forks" "$(tail -5 "$T/serve.err")"; fi
kill -TERM $SRV; wait $SRV
no_leftovers "forks leave nothing behind"
