#!/bin/bash
# tests/run.sh — runs every test suite and ends with "N passed, N failed".
#
# Suites: unit tests (C, tests/unit), integration tests (tests/integration/*.sh)
# as root and as an unprivileged user, again with the ASan/UBSan build, the
# escape probes (tests/probes), and the client bindings' tests. A suite is a
# program that prints "ok - ..." / "not ok - ..." lines.
# Options (environment): FB_NO_ASAN=1 skips the sanitizer pass; FB_ONLY=glob
# runs only matching integration files.
set -u
cd "$(dirname "$0")/.."
ROOT=$(pwd)
PASS=0; FAIL=0; FAILED=()
LOG=$(mktemp /tmp/fbtest-log.XXXXXX)

count() { # label, then reads suite output on stdin
  local label=$1 line
  while IFS= read -r line; do
    case "$line" in
      "ok "*)     PASS=$((PASS+1)); [ -n "${VERBOSE:-}" ] && echo "  [$label] $line" ;;
      "not ok "*) FAIL=$((FAIL+1)); FAILED+=("[$label] $line"); echo "  [$label] $line" ;;
      *) echo "$line" >> "$LOG" ;;
    esac
  done
}

# The unprivileged user the suites also run as.
TUSER=fbtest
if [ "$(id -u)" = 0 ] && ! id "$TUSER" >/dev/null 2>&1; then
  useradd -M -s /usr/sbin/nologin "$TUSER" 2>/dev/null || true
fi

# Binaries are copied where the unprivileged user can reach them.
BIN=$(mktemp -d /tmp/fbbin.XXXXXX); chmod 755 "$BIN"
cp fluebox "$BIN/fluebox"
[ -z "${FB_NO_ASAN:-}" ] && [ -x build/fluebox-asan ] && cp build/fluebox-asan "$BIN/fluebox-asan"
chmod 755 "$BIN"/*
trap 'rm -rf "$BIN" "$LOG"' EXIT

run_integration() { # binary user label
  local fb=$1 user=$2 label=$3 f
  for f in tests/integration/*.sh; do
    [ -e "$f" ] || continue
    case "$(basename "$f")" in ${FB_ONLY:-*}) ;; *) continue ;; esac
    local t; t=$(mktemp -d /tmp/fbt.XXXXXX); chmod 755 "$t"
    [ "$user" != root ] && chown "$user" "$t"
    echo "== $label $(basename "$f")" >> "$LOG"
    count "$label $(basename "$f" .sh)" < <(FB=$fb FB_AS=$user T=$t ROOT=$ROOT timeout 600 bash "$f" 2>>"$LOG")
    rm -rf "$t"
  done
}

echo "fluebox tests: $(./fluebox --version)"
if [ -d tests/unit ] && ls tests/unit/*.c >/dev/null 2>&1; then
  echo "-- unit"
  if make -s build/unit-tests >>"$LOG" 2>&1; then count unit < <(build/unit-tests); else FAIL=$((FAIL+1)); FAILED+=("[unit] build failed"); fi
fi
echo "-- integration (root)"
run_integration "$BIN/fluebox" root root
if [ "$(id -u)" = 0 ] && id "$TUSER" >/dev/null 2>&1; then
  echo "-- integration ($TUSER)"
  run_integration "$BIN/fluebox" "$TUSER" user
fi
if [ -x "$BIN/fluebox-asan" ]; then
  echo "-- integration (ASan/UBSan, root)"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99 UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 \
    run_integration "$BIN/fluebox-asan" root asan
fi
for extra in tests/probes/run.sh tests/suites/*.sh; do
  [ -x "$extra" ] || continue
  echo "-- $extra"
  count "$(basename "$(dirname "$extra")")/$(basename "$extra" .sh)" < <(FB="$BIN/fluebox" ROOT=$ROOT "$extra" 2>>"$LOG")
done

echo
if [ "$FAIL" -gt 0 ]; then
  echo "failures:"; printf '  %s\n' "${FAILED[@]}"
  echo "(other output of the suites: tail of the log)"; tail -n 40 "$LOG"
fi
echo "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
