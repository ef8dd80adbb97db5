#!/bin/bash
# tests/suites/fuzz-profile.sh — a short libFuzzer run of the profile parser
# and the seccomp filters libseccomp makes of it (tests/fuzz/profile_fuzz.c)
# inside make check: loading, every filter's answers against the rules'
# meaning, and the show/load round trip.
# Longer runs: make fuzz (FUZZ_TIME=seconds). Prints ok/not ok lines.
# FUZZ_SECONDS (default 25) sets the length of this run.
cd "$(dirname "$0")/../.." || exit 1
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
secs=${FUZZ_SECONDS:-25}
command -v clang >/dev/null 2>&1 || skip_all "missing: clang (sh scripts/deps.sh test)"
if ! make -s build/fuzz-profile >/tmp/fuzz-build.$$ 2>&1; then
  why=$(tail -3 /tmp/fuzz-build.$$ | tr '\n' ' '); nofuzzer=$(grep -c -e "fuzzer" -e "libclang_rt" /tmp/fuzz-build.$$)
  rm -f /tmp/fuzz-build.$$
  [ "$nofuzzer" = 0 ] || skip_all "missing: libclang-rt-dev (no libFuzzer runtime; sh scripts/deps.sh test)"
  bail "build failed: $why"
fi
rm -f /tmp/fuzz-build.$$
work=$(mktemp -d /tmp/fbfuzz.XXXXXX)
at_exit 'rm -rf "$work"'
# The seeds alone first: each must pass every check.
if build/fuzz-profile tests/fuzz/corpus/* >"$work/seeds.log" 2>&1; then
  echo "ok - fuzz profile parser: every seed passes"
else
  echo "not ok - fuzz profile parser: a seed fails: $(grep -m1 -e 'check failed' -e ERROR "$work/seeds.log")"
fi
mkdir -p "$work/corpus"
if build/fuzz-profile -max_total_time="$secs" -timeout=20 -dict=tests/fuzz/profile.dict \
     -artifact_prefix="$work/crash-" "$work/corpus" tests/fuzz/corpus >"$work/log" 2>&1; then
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log")
  echo "ok - fuzz profile parser: ${runs:-?} inputs in ${secs}s, no crash or mismatch"
else
  crash=$(ls "$work"/crash-* 2>/dev/null | head -1)
  keep=""
  if [ -n "$crash" ]; then keep=/tmp/fuzz-profile-crash.$$; cp "$crash" "$keep"; fi
  echo "not ok - fuzz profile parser: $(grep -m1 -e 'check failed' -e 'ERROR' "$work/log") (input kept in ${keep:-nowhere})"
fi
