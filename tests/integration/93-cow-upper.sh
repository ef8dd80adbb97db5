#!/bin/bash
# 93-cow-upper.sh — --cow-upper DIR keeps the copy-on-write layer in the
# caller's directory: a later run continues where the last one stopped, a
# commit empties it, and the run after a commit sees no false conflicts.
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

no_leftovers "cow-upper: nothing left behind"
