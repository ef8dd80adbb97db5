#!/bin/bash
# 93-cow-upper.sh — --cow-upper DIR keeps the copy-on-write layer in the
# caller's directory: a later run continues where the last one stopped, a
# commit empties it, and the run after a commit sees no false conflicts;
# --disk bounds it as it bounds a tmpfs layer.
. "$(dirname "$0")/../lib.sh"

own() { [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$@"; }

W=$T/u; mkdir -p $W/ws $W/up; echo a > $W/ws/a; own $W

run_fb run --workspace $W/ws --cow-upper $W/up -- sh -c 'echo a2 > a; echo b > b'
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a ] && [ ! -e $W/ws/b ] && [ -f $W/up/upper/b ]; then
  ok "cow-upper: the layer is kept in DIR, the workspace untouched"
else
  fail "cow-upper: the layer is kept in DIR, the workspace untouched" "rc=$RC $ERR"
fi

run_fb run --workspace $W/ws --cow-upper $W/up --changes - -- sh -c 'cat b a; echo c > c'
case "$OUT" in
  b*a2*'"path":"a"'*'"path":"b"'*'"path":"c"'*) ok "cow-upper: a second run continues the first one's changes" ;;
  *) fail "cow-upper: a second run continues the first one's changes" "rc=$RC $OUT $ERR" ;;
esac

run_fb run --workspace $W/ws --cow-upper $W/up --commit -- true
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a2 ] && [ "$(cat $W/ws/c)" = c ] && [ -z "$(ls -A $W/up/upper)" ]; then
  ok "cow-upper: commit applies everything and empties the layer"
else
  fail "cow-upper: commit applies everything and empties the layer" "rc=$RC $(ls -A $W/up/upper) $ERR"
fi

run_fb run --workspace $W/ws --cow-upper $W/up --commit -- sh -c 'echo a3 > a'
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a3 ]; then
  ok "cow-upper: a file committed by the last run is no conflict"
else
  fail "cow-upper: a file committed by the last run is no conflict" "rc=$RC $ERR"
fi

# --disk holds for a layer in DIR too. No file system limit enforces it
# there, so fluebox measures the layer: a command that writes past it is
# stopped (it would otherwise sleep for a minute: the test waits for
# fluebox to exit), the layer is reported full and never committed, and the
# next run with the full layer is refused.
W=$T/d; mkdir -p $W/ws $W/up; echo a > $W/ws/a; own $W
run_fb run --workspace $W/ws --cow-upper $W/up --disk 1M --commit -- sh -c 'head -c 4M /dev/zero > big; sleep 60'
if [ "$RC" = 125 ] && [ ! -e $W/ws/big ] &&
   printf '%s\n' "$ERR" | grep -qxF "fluebox: --disk: the copy-on-write layer in $W/up reached 1048576 bytes; the command was stopped" &&
   printf '%s\n' "$ERR" | grep -q "not committing: the copy-on-write layer ran out of space"; then
  ok "cow-upper: a command that writes past --disk is stopped, nothing committed"
else
  fail "cow-upper: a command that writes past --disk is stopped, nothing committed" "rc=$RC $ERR"
fi
run_fb run --workspace $W/ws --cow-upper $W/up --disk 1M -- true
case "$RC:$ERR" in
  "125:"*"--cow-upper $W/up: the layer already takes --disk (1048576 bytes) or more"*) ok "cow-upper: a run on a layer already at --disk is refused" ;;
  *) fail "cow-upper: a run on a layer already at --disk is refused" "rc=$RC $ERR" ;;
esac
rm -rf $W/up; mkdir $W/up; own $W/up
run_fb run --workspace $W/ws --cow-upper $W/up --disk 1M --changes - -- sh -c 'head -c 2M /dev/zero > big'
case "$RC:$OUT" in
  125:*'"upper_full":true'*) ok "cow-upper: a layer past --disk when the command ends is reported full" ;;
  *) fail "cow-upper: a layer past --disk when the command ends is reported full" "rc=$RC $OUT $ERR" ;;
esac

# One file cannot carry the layer past --disk between two measurements:
# 23 MiB written at once (faster than any check) once landed whole in DIR
# with --disk 8M. Now no file there grows past --disk (RLIMIT_FSIZE).
rm -rf $W/up; mkdir $W/up; own $W/up
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'head -c 23M /dev/zero > big; ls -l big'
used=$(du -sk $W/up | awk '{print $1}')
if [ "$RC" = 125 ] && [ "$used" -le $((8 * 1024 + 256)) ]; then
  ok "cow-upper: a 23 MiB file with --disk 8M leaves at most 8 MiB in DIR ($used KiB)"
else
  fail "cow-upper: a 23 MiB file with --disk 8M leaves at most 8 MiB in DIR" "rc=$RC, $used KiB in DIR: $ERR"
fi

no_leftovers "cow-upper: nothing left behind"
