#!/bin/bash
# 93-cow-upper.sh — --cow-upper DIR keeps the copy-on-write layer in the
# caller's directory: a later run continues where the last one stopped, a
# commit empties it, and the run after a commit sees no false conflicts;
# --disk bounds it as it bounds a tmpfs layer. From Linux 6.6 (tmpfs holds
# the overlay's user.* markers) a layer with --disk is staged in the sized
# scratch tmpfs and copied back into DIR after the run: writes past --disk
# fail at once. Before 6.6 the layer stays in DIR and is measured.
. "$(dirname "$0")/../lib.sh"
. "$ROOT/tests/oci/kernel.sh"

own() { [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$@"; }

# The same runs with the layer in DIR (no --disk) and staged (--disk 64M).
for DISK in "" 64M; do
W=$T/u$DISK; mkdir -p $W/ws $W/up; echo a > $W/ws/a; own $W
D=(); [ -n "$DISK" ] && D=(--disk "$DISK")

run_fb run --workspace $W/ws --cow-upper $W/up "${D[@]}" -- sh -c 'echo a2 > a; echo b > b'
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a ] && [ ! -e $W/ws/b ] && [ -f $W/up/upper/b ]; then
  ok "cow-upper${DISK:+ --disk $DISK}: the layer is kept in DIR, the workspace untouched"
else
  fail "cow-upper${DISK:+ --disk $DISK}: the layer is kept in DIR, the workspace untouched" "rc=$RC $ERR"
fi

run_fb run --workspace $W/ws --cow-upper $W/up "${D[@]}" --changes - -- sh -c 'cat b a; echo c > c'
case "$OUT" in
  b*a2*'"path":"a"'*'"path":"b"'*'"path":"c"'*) ok "cow-upper${DISK:+ --disk $DISK}: a second run continues the first one's changes" ;;
  *) fail "cow-upper${DISK:+ --disk $DISK}: a second run continues the first one's changes" "rc=$RC $OUT $ERR" ;;
esac

run_fb run --workspace $W/ws --cow-upper $W/up "${D[@]}" --commit -- true
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a2 ] && [ "$(cat $W/ws/c)" = c ] && [ -z "$(ls -A $W/up/upper)" ]; then
  ok "cow-upper${DISK:+ --disk $DISK}: commit applies everything and empties the layer"
else
  fail "cow-upper${DISK:+ --disk $DISK}: commit applies everything and empties the layer" "rc=$RC $(ls -A $W/up/upper) $ERR"
fi

run_fb run --workspace $W/ws --cow-upper $W/up "${D[@]}" --commit -- sh -c 'echo a3 > a'
if [ "$RC" = 0 ] && [ "$(cat $W/ws/a)" = a3 ]; then
  ok "cow-upper${DISK:+ --disk $DISK}: a file committed by the last run is no conflict"
else
  fail "cow-upper${DISK:+ --disk $DISK}: a file committed by the last run is no conflict" "rc=$RC $ERR"
fi
done

measured_tests() {
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
}

staged_tests() {
# Staged: the layer lives in the scratch tmpfs of --disk size while the
# command runs, so a write past --disk fails with ENOSPC at once, however
# many files write at once; the command goes on (as with a tmpfs layer).
W=$T/s; mkdir -p $W/ws/sub $W/up; echo a > $W/ws/a; echo x > $W/ws/sub/x; own $W
# 40 files of 1 MiB written in parallel: with the layer measured twice a
# second they all landed in DIR (40 MiB); now at most --disk of data does,
# plus the slack of --disk/8 for directory blocks (stated in docs/cow.md).
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c '
  for i in $(seq 40); do head -c 1048576 /dev/zero > f$i 2>/dev/null & done; wait
  n=0; for i in $(seq 40); do [ "$(wc -c < f$i)" = 1048576 ] && n=$((n+1)); done; echo "whole: $n"'
used=$(du -sk $W/up | awk '{print $1}')
data=$(find $W/up/upper -type f -printf '%s\n' | awk '{s+=$1} END {print s+0}')
if [ "$RC" = 0 ] && [ "$used" -le $((8 * 1024 + 1024)) ] && [ "$data" -le $((8 * 1024 * 1024)) ] &&
   [ -n "$(ls $W/up/upper)" ]; then
  ok "cow-upper --disk 8M: 40 files of 1 MiB at once leave $data bytes of data, $used KiB in DIR (at most 8 MiB + 1 MiB slack)"
else
  fail "cow-upper --disk 8M: 40 files of 1 MiB at once stay within --disk" "rc=$RC $OUT, $used KiB, $data bytes in DIR: $ERR"
fi
rm -rf $W/up; mkdir $W/up; own $W/up
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'head -c 23M /dev/zero > big 2>/dev/null; echo "head: $?"; ls -l big'
used=$(du -sk $W/up | awk '{print $1}')
case "$OUT" in
  "head: 1"*) [ "$used" -le $((8 * 1024 + 1024)) ] && ok "cow-upper --disk 8M: a 23 MiB file fails inside, $used KiB in DIR" ||
      fail "cow-upper --disk 8M: a 23 MiB file" "$used KiB in DIR" ;;
  *) fail "cow-upper --disk 8M: a 23 MiB file fails inside" "rc=$RC $OUT $ERR" ;;
esac
# Full: reported so and never committed.
rm -rf $W/up; mkdir $W/up; own $W/up
run_fb run --workspace $W/ws --cow-upper $W/up --disk 1M --commit --changes - -- sh -c 'head -c 2M /dev/zero > big 2>/dev/null; true'
if [ "$RC" = 125 ] && [ ! -e $W/ws/big ] && [[ "$OUT" == *'"upper_full":true'* ]] &&
   printf '%s\n' "$ERR" | grep -q -- "--commit: the copy-on-write layer ran out of space"; then
  ok "cow-upper --disk 1M: a full layer is reported full and not committed"
else
  fail "cow-upper --disk 1M: a full layer is reported full and not committed" "rc=$RC $OUT $ERR"
fi
# What the overlay keeps in markers survives the copy back: a deletion (a
# whiteout), a directory replaced (opaque), one made unreadable.
rm -rf $W/up; mkdir $W/up; own $W/up
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'rm a; rm -r sub; mkdir sub; echo y > sub/y; mkdir locked; echo z > locked/z; chmod 000 locked'
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'ls -A; ls sub; chmod 755 locked; cat locked/z'
if [ "$RC" = 0 ] && [ "$OUT" = "$(printf 'locked\nsub\ny\nz')" ]; then
  ok "cow-upper --disk: a deletion, a replaced directory and an unreadable one persist across runs"
else
  fail "cow-upper --disk: markers persist across runs" "rc=$RC [$OUT] $ERR"
fi
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M --commit -- true
if [ "$RC" = 0 ] && [ ! -e $W/ws/a ] && [ "$(ls $W/ws/sub)" = y ] && [ "$(cat $W/ws/locked/z)" = z ] &&
   [ -z "$(ls -A $W/up/upper)" ]; then
  ok "cow-upper --disk: the staged layer commits and is emptied"
else
  fail "cow-upper --disk: the staged layer commits and is emptied" "rc=$RC $(ls -A $W/ws $W/up/upper) $ERR"
fi
[ "$FB_AS" = root ] || [ "$(stat -c %U $W/up/upper)" = "$(stat -c %U $W/up)" ] && ok "cow-upper --disk: DIR/upper belongs to DIR's owner" ||
  fail "cow-upper --disk: DIR/upper's owner" "$(stat -c %U $W/up/upper $W/up)"
# Hard links are one file in tmpfs but copies in DIR: a layer that would
# take more than --disk and its slack there is not kept; DIR stays as it was.
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'echo keep > kept'
run_fb run --workspace $W/ws --cow-upper $W/up --disk 8M -- sh -c 'head -c 2M /dev/zero > h0; for i in $(seq 20); do ln h0 h$i; done'
used=$(du -sk $W/up | awk '{print $1}')
if [ "$RC" = 125 ] && [[ "$ERR" == *"this run's layer is not kept"* ]] && [ -f $W/up/upper/kept ] &&
   [ ! -e $W/up/upper/h0 ] && [ "$used" -le 1024 ] && [ -z "$(ls -A $W/up | grep -v -e upper -e work -e fluebox-start)" ]; then
  ok "cow-upper --disk 8M: 20 hard links to 2 MiB are not copied back (42 MiB); DIR keeps the layer of before"
else
  fail "cow-upper --disk 8M: hard links past --disk" "rc=$RC $used KiB $(ls -A $W/up $W/up/upper) $ERR"
fi
}

if oci_kernel_ok 6.6; then
  staged_tests
else
  measured_tests
fi

no_leftovers "cow-upper: nothing left behind"
