#!/bin/bash
# tests/suites/fuzz-net.sh — a short libFuzzer run of the parsers of what a
# sandbox sends the supervisor: TLS/HTTP first bytes, every request of a
# plain-HTTP connection, DNS (tests/fuzz/net_fuzz.c), inside make check.
# Longer runs: make fuzz-net (FUZZ_TIME=seconds). Prints ok/not ok lines.
# FUZZ_SECONDS (default 20) sets the length of this run.
cd "$(dirname "$0")/../.." || exit 1
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
secs=${FUZZ_SECONDS:-20}
command -v clang >/dev/null 2>&1 || skip_all "missing: clang (sh scripts/deps.sh test)"
log=$(mktemp /tmp/fbfuzzn.XXXXXX)
if ! make -s build/fuzz-net >"$log" 2>&1; then
  why=$(tail -3 "$log" | tr '\n' ' '); nofuzzer=$(grep -c -e "fuzzer" -e "libclang_rt" "$log")
  rm -f "$log"
  [ "$nofuzzer" = 0 ] || skip_all "missing: libclang-rt-dev (no libFuzzer runtime; sh scripts/deps.sh test)"
  bail "build failed: $why"
fi
rm -f "$log"
work=$(mktemp -d /tmp/fbfuzzn.XXXXXX)
at_exit 'rm -rf "$work"'
if build/fuzz-net tests/fuzz/corpus-net/* >"$work/seeds.log" 2>&1; then
  echo "ok - fuzz network parsers: every seed passes"
else
  echo "not ok - fuzz network parsers: a seed fails: $(grep -m1 -e 'check failed' -e ERROR "$work/seeds.log")"
fi
mkdir -p "$work/corpus"
if build/fuzz-net -max_total_time="$secs" -timeout=10 -dict=tests/fuzz/net.dict \
     -artifact_prefix="$work/crash-" "$work/corpus" tests/fuzz/corpus-net >"$work/log" 2>&1; then
  runs=$(sed -n 's/^Done \([0-9]*\) runs.*/\1/p' "$work/log")
  echo "ok - fuzz network parsers: ${runs:-?} inputs in ${secs}s, no crash or failed check"
else
  crash=$(ls "$work"/crash-* 2>/dev/null | head -1)
  keep=""
  if [ -n "$crash" ]; then keep=/tmp/fuzz-net-crash.$$; cp "$crash" "$keep"; fi
  echo "not ok - fuzz network parsers: $(grep -m1 -e 'check failed' -e 'ERROR' "$work/log") (input kept in ${keep:-nowhere})"
fi
