#!/bin/bash
# tests/run.sh — runs every test suite; its last line is
# "N passed, N failed, N skipped", and it exits non-zero on any failure.
#
# The contract (tests/tap.sh, tests/README.md): a suite is a program that
# prints "ok - NAME" / "not ok - NAME: WHY" / "ok - NAME # SKIP REASON" lines
# and either the end marker "# end of suite" (tests/lib.sh prints it when a
# file runs to its end) or a TAP plan "1..N". A suite that exits non-zero
# without a failing check, is killed (by a signal or its timeout), ends
# without its end marker, or prints fewer results than planned is a failure
# named after it, shown with the tail of its output. Skips are counted apart;
# under CI=true a skip "missing: TOOL" (a tool scripts/deps.sh installs) is a
# failure. A suite's timeout is 600 s unless its file says "# timeout: N" in
# its first 30 lines.
#
# Suites, in order: the runner's own self-test (tests/selftest), the C unit
# tests (normal and ASan/UBSan), tests/integration/*.sh as root and as an
# unprivileged user (fbtest) with the normal build and again with the
# ASan/UBSan build, the escape probes (tests/probes/run.sh), tests/suites/*.sh
# (server, clients, fuzzers), and the kernel suites (tests/vm: cgroup v2 with
# real controllers and Linux 6.1 in a user-mode-linux guest).
#
# Environment: FB_ONLY=GLOB runs only the suites whose name matches (an
#   integration file "30-limits.sh", "server", "unit", "selftest", "vm-*";
#   extended globs: FB_ONLY='@(unit|30-*)');
#   FB_NO_ASAN=1 skips the sanitizer passes; VERBOSE=1 prints every result;
#   CI=true turns missing-tool skips into failures; FB_SUITE_TIMEOUT=SECONDS
#   replaces every suite's timeout (make check-kernels); FB_SERIAL=1 runs the
#   lanes (the guest-kernel and engine suites, tests/suites/vm-* and
#   engine-*, and the ASan/UBSan
#   passes of the integration files, which otherwise run in the background
#   beside the rest) in line.
# Usage: tests/run.sh [--suites FILE...]   (--suites: only these programs, run
#   as suites with FB set — what the self-test uses)
set -u
shopt -s extglob
cd "$(dirname "$0")/.."
ROOT=$(pwd)
# shellcheck source=tests/tap.sh
. tests/tap.sh
PASS=0; FAIL=0; SKIP=0; FAILED=(); SKIPPED=(); TIMES=()
W=$(mktemp -d /tmp/fbrun.XXXXXX); chmod 755 "$W"
NSUITE=0
CI_STRICT=""; case "${CI:-}" in true|1|yes) CI_STRICT=1 ;; esac
# Scratch space is /tmp whatever the caller's TMPDIR says: the suites' own
# temporary directories (Python's tempfile, node's os.tmpdir, mktemp -t) must
# be reachable by the unprivileged user they also run as.
export TMPDIR=/tmp

# selected NAME — FB_ONLY says NAME runs.
selected() { case "$1" in ${FB_ONLY:-*}) return 0 ;; esac; return 1; }

# suite_timeout FILE DEFAULT — the "# timeout: N" of FILE's header, or DEFAULT.
suite_timeout() {
  [ -n "${FB_SUITE_TIMEOUT:-}" ] && { echo "$FB_SUITE_TIMEOUT"; return; }
  local t
  t=$(head -n 30 "$1" 2>/dev/null | sed -n 's/^# timeout: *\([0-9][0-9]*\).*/\1/p' | head -n 1)
  echo "${t:-$2}"
}

# suite_exec OUT ERR TIMEOUT CMD... — runs one suite to its files; prints
# "RC MS" (its exit status, its time).
suite_exec() {
  local out=$1 err=$2 secs=$3 rc t0 t1; shift 3
  t0=$(date +%s%N)
  timeout -k 10 "$secs" "$@" > "$out" 2> "$err" < /dev/null; rc=$?
  t1=$(date +%s%N)
  # timeout exits 137 when its TERM was not enough and it sent KILL.
  [ "$rc" = 137 ] && [ $(( (t1 - t0) / 1000000000 )) -ge "$secs" ] && rc=124
  echo "$rc $(( (t1 - t0) / 1000000 ))"
}

# account LABEL OUT ERR RC MS — reads a suite's results (tap_read) and adds
# them up.
account() {
  local label=$1 out=$2 err=$3 rc=$4 ms=$5 line
  tap_read "$out" "$rc"
  local fail=$TAP_FAIL
  for line in "${TAP_FAILED[@]+"${TAP_FAILED[@]}"}"; do
    FAILED+=("[$label] $line"); echo "  [$label] $line"
  done
  for line in "${TAP_SKIPPED[@]+"${TAP_SKIPPED[@]}"}"; do SKIPPED+=("[$label] $line"); done
  if [ -n "$CI_STRICT" ]; then
    for line in "${TAP_MISSING[@]+"${TAP_MISSING[@]}"}"; do
      fail=$((fail + 1)); TAP_SKIP=$((TAP_SKIP - 1))
      FAILED+=("[$label] $line — under CI=true a tool scripts/deps.sh installs must be there")
      echo "  [$label] missing tool: $line"
    done
  fi
  if [ -n "$TAP_BROKEN" ]; then
    fail=$((fail + 1))
    FAILED+=("[$label] the suite failed: $TAP_BROKEN")
    echo "  [$label] the suite failed: $TAP_BROKEN; the tail of its output:"
    grep -v -e '^ok' -e '^not ok' "$out" | tail -n 15 | sed 's/^/    out| /'
    tail -n 15 "$err" | sed 's/^/    err| /'
  fi
  [ -n "${VERBOSE:-}" ] && for line in "${TAP_RESULTS[@]+"${TAP_RESULTS[@]}"}"; do echo "  [$label] $line"; done
  PASS=$((PASS + TAP_PASS)); FAIL=$((FAIL + fail)); SKIP=$((SKIP + TAP_SKIP))
  printf '  %-34s %4d passed %3d failed %3d skipped %7.1f s\n' "$label" "$TAP_PASS" "$fail" "$TAP_SKIP" "$((ms / 100))e-1"
  TIMES+=("$ms $label")
  return 0
}

# run_suite LABEL TIMEOUT CMD... — runs one suite now and adds up its results.
run_suite() {
  local label=$1 secs=$2 r; shift 2
  NSUITE=$((NSUITE + 1))
  local out=$W/$NSUITE.out err=$W/$NSUITE.err
  r=$(suite_exec "$out" "$err" "$secs" "$@")
  account "$label" "$out" "$err" ${r% *} ${r#* }
}

# Lanes: suites that run in the background beside the main line, one after
# another within their lane, and are accounted at the end, lane by lane.
#   side  the guest-kernel suites (tests/suites/vm-*): a kernel of their own,
#         and the engine suites (tests/suites/engine-*): container engines
#         with their own daemons, state and namespaces;
#         they share nothing with the rest;
#   asan  the integration files under the ASan/UBSan build (root, then the
#         unprivileged user). Each runs in a mount namespace of its own
#         (private propagation) and the lane in cgroups of its own
#         (fbrun-PID-asan, beside the run's), so the main line's checks for
#         leftover mounts and cgroups never count this lane's, nor its the
#         main line's. Processes are told apart by binary (fluebox-asan).
# FB_SERIAL=1 runs everything in line.
LANES=(side asan); declare -A LANE_PID=()
Q_side=(); Q_asan=()
lane_suite() { # LANE LABEL TIMEOUT CMD... (queued; started by lane_start)
  local -n q=Q_$1
  NSUITE=$((NSUITE + 1))
  q+=("$NSUITE" "$2" "$3" "$(printf '%q ' "${@:4}")")
}
side_suite() { lane_suite side "$@"; }
lane_start() { # LANE
  local -n q=Q_$1
  [ ${#q[@]} -gt 0 ] || return 0
  (
    local i
    [ "$1" = asan ] && enter_lane_cgroup asan
    for ((i = 0; i < ${#q[@]}; i += 4)); do
      local n=${q[i]}
      eval "suite_exec '$W/$n.out' '$W/$n.err' '${q[i+2]}' ${q[i+3]}" > "$W/$n.rc"
    done
  ) &
  LANE_PID[$1]=$!
}
lanes_collect() {
  local lane i n r
  for lane in "${LANES[@]}"; do
    [ -n "${LANE_PID[$lane]:-}" ] || continue
    local -n q=Q_$lane
    echo "-- the $lane lane (run beside the others)"
    wait "${LANE_PID[$lane]}"
    for ((i = 0; i < ${#q[@]}; i += 4)); do
      n=${q[i]}
      r=$(cat "$W/$n.rc" 2>/dev/null); [ -n "$r" ] || r="125 0"
      account "${q[i+1]}" "$W/$n.out" "$W/$n.err" ${r% *} ${r#* }
    done
    unset -n q
  done
}
is_side() { [ -z "${FB_SERIAL:-}" ] && case "$1" in vm-* | engine-*) return 0 ;; esac; return 1; }

finish() {
  echo
  if [ "$NSUITE" = 0 ]; then FAIL=$((FAIL + 1)); FAILED+=("no suite ran (FB_ONLY='${FB_ONLY:-}' matches none?)"); fi
  # Skips first, failures last: a log read from its tail (as CI shows it)
  # names every failure right above the count. Each failure is one line.
  if [ "$SKIP" -gt 0 ]; then echo "skipped:"; printf '  %s\n' "${SKIPPED[@]}"; fi
  if [ "$FAIL" -gt 0 ]; then
    echo "failures:"
    local f
    for f in "${FAILED[@]}"; do printf '  %s\n' "$(printf '%s' "$f" | tr '\n' ' ' | cut -c1-400)"; done
  fi
  echo "$PASS passed, $FAIL failed, $SKIP skipped"
  [ "$FAIL" = 0 ]
}

# --suites FILE...: just these programs (the self-test's broken suites).
if [ "${1:-}" = --suites ]; then
  trap 'rm -rf "$W"' EXIT
  shift
  : "${FB:=$ROOT/fluebox}"
  for f in "$@"; do
    t=$(mktemp -d "$W/t.XXXXXX")
    run_suite "$(basename "$f" .sh)" "$(suite_timeout "$f" 600)" env FB="$FB" FB_AS=root T="$t" ROOT="$ROOT" bash "$f"
  done
  finish; exit
fi

# The unprivileged user the suites also run as.
TUSER=fbtest
if [ "$(id -u)" = 0 ] && ! id "$TUSER" >/dev/null 2>&1; then
  useradd -M -s /usr/sbin/nologin "$TUSER" 2>/dev/null || true
fi

# Binaries are copied where the unprivileged user can reach them (others may
# rebuild ./fluebox while the suites run).
BIN=$W/bin; mkdir -p "$BIN"
cp fluebox "$BIN/fluebox"
ASAN=""
if [ -z "${FB_NO_ASAN:-}" ] && [ -x build/fluebox-asan ]; then cp build/fluebox-asan "$BIN/fluebox-asan"; ASAN=$BIN/fluebox-asan; fi
chmod 755 "$BIN"/*
# A cgroup of this run's own, on every hierarchy fluebox uses: the fluebox
# processes of this run create their cgroups below it, so the suites'
# leftover checks see this run's cgroups only, never those of another run on
# the same machine at the same time (whose killed fluebox may have left one for
# its own next run to sweep). Undone at exit; as root only.
RUN_CGROUPS=()
own_run_cgroup() {
  local line ctrl path mnt dir cgs
  [ "$(id -u)" = 0 ] || return 0
  # Read whole first: /proc/self/cgroup changes as this shell moves.
  cgs=$(cat /proc/self/cgroup)
  while IFS= read -r line; do
    ctrl=${line#*:}; path=${ctrl#*:}; ctrl=${ctrl%%:*}
    case "$ctrl" in name=*) continue ;; esac
    if [ -z "$ctrl" ]; then
      mnt=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
    else
      mnt=$(awk -v c="$ctrl" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") {print $2; exit}' /proc/mounts)
    fi
    [ -n "$mnt" ] || continue
    path=${path%/}
    dir="$mnt$path/fbrun-$$"
    mkdir "$dir" 2>/dev/null || continue
    if echo $$ > "$dir/cgroup.procs" 2>/dev/null; then
      RUN_CGROUPS+=("$mnt$path")
    else
      rmdir "$dir" 2>/dev/null
    fi
  done <<< "$cgs"
}
# enter_lane_cgroup NAME — this (sub)shell moves to fbrun-PID-NAME beside the
# run's cgroup on every hierarchy the run has one on.
enter_lane_cgroup() {
  local parent dir
  for parent in "${RUN_CGROUPS[@]+"${RUN_CGROUPS[@]}"}"; do
    dir="$parent/fbrun-$$-$1"
    mkdir -p "$dir" 2>/dev/null && echo "$BASHPID" > "$dir/cgroup.procs" 2>/dev/null
  done
}
leave_run_cgroup() {
  local parent pid dir
  for parent in "${RUN_CGROUPS[@]+"${RUN_CGROUPS[@]}"}"; do
    # This shell and whatever of the run is still ending (a pipe's other
    # side, a child on its way out) go back, so the directories can go.
    echo $$ > "$parent/cgroup.procs" 2>/dev/null
    for dir in "$parent/fbrun-$$" "$parent/fbrun-$$"-*; do
      [ -d "$dir" ] || continue
      while read -r pid; do
        echo "$pid" > "$parent/cgroup.procs" 2>/dev/null
      done < <(cat "$dir/cgroup.procs" 2>/dev/null)
      find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
    done
  done
}
own_run_cgroup
# Lanes still running when the runner ends early (killed, or an error) are
# stopped first: their suite's timeout passes the TERM on to the suite.
lanes_stop() {
  local pid
  for pid in "${LANE_PID[@]}"; do
    kill -0 "$pid" 2>/dev/null || continue
    pkill -TERM -P "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
  done
}
trap 'lanes_stop; leave_run_cgroup; rm -rf "$W"' EXIT
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=0:exitcode=99
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
export ROOT

# scratch USER — a fresh directory USER can use.
scratch() {
  local t; t=$(mktemp -d "$W/t.XXXXXX"); chmod 755 "$t"
  [ "$1" != root ] && chown "$1" "$t"
  echo "$t"
}

run_integration() { # binary user label
  local fb=$1 user=$2 label=$3 f
  for f in tests/integration/*.sh; do
    [ -e "$f" ] || continue
    selected "$(basename "$f")" || continue
    run_suite "$label $(basename "$f" .sh)" "$(suite_timeout "$f" 600)" \
      env FB="$fb" FB_AS="$user" T="$(scratch "$user")" bash "$f"
  done
}

echo "fluebox tests: $(./fluebox --version) on $(uname -sr)${CI_STRICT:+ (CI: missing tools fail)}"
for extra in tests/suites/engine-*.sh tests/suites/vm-*.sh; do
  [ -x "$extra" ] || continue
  name=$(basename "$extra" .sh)
  selected "$name" && is_side "$name" || continue
  side_suite "$name" "$(suite_timeout "$extra" 900)" \
    env FB="$BIN/fluebox" ${ASAN:+FB_ASAN="$ASAN"} FB_AS=root T="$(scratch root)" "$extra"
done
lane_start side
# The sanitizer passes of the integration files, in their lane (or in line).
asan_integration() { # user label
  local f
  for f in tests/integration/*.sh; do
    [ -e "$f" ] || continue
    selected "$(basename "$f")" || continue
    if [ -n "${FB_SERIAL:-}" ]; then
      run_suite "$2 $(basename "$f" .sh)" "$(suite_timeout "$f" 600)" \
        env FB="$ASAN" FB_AS="$1" T="$(scratch "$1")" bash "$f"
    else
      lane_suite asan "$2 $(basename "$f" .sh)" "$(suite_timeout "$f" 600)" \
        unshare --mount --propagation private \
        env FB="$ASAN" FB_AS="$1" T="$(scratch "$1")" bash "$f"
    fi
  done
}
if [ -n "$ASAN" ]; then
  [ -n "${FB_SERIAL:-}" ] || echo "-- integration (ASan/UBSan, root and $TUSER): in the asan lane"
  asan_integration root asan
  if [ "$(id -u)" = 0 ] && id "$TUSER" >/dev/null 2>&1; then asan_integration "$TUSER" asan-user; fi
  [ -n "${FB_SERIAL:-}" ] || lane_start asan
fi
if selected selftest; then
  echo "-- the runner's self-test"
  run_suite selftest 300 env FB="$BIN/fluebox" T="$(scratch root)" bash tests/selftest/run.sh
fi
if selected unit; then
  echo "-- unit"
  for v in unit-tests ${ASAN:+unit-tests-asan}; do
    if make -s "build/$v" > "$W/build.log" 2>&1; then
      run_suite "${v%-tests*}${v#unit-tests}" 300 "build/$v"
    else
      FAIL=$((FAIL + 1)); FAILED+=("[$v] build failed: $(tail -n 5 "$W/build.log" | tr '\n' ' ')")
      echo "  [$v] build failed"; tail -n 15 "$W/build.log" | sed 's/^/    /'
    fi
  done
fi
echo "-- integration (root)"
run_integration "$BIN/fluebox" root root
if [ "$(id -u)" = 0 ] && id "$TUSER" >/dev/null 2>&1; then
  echo "-- integration ($TUSER)"
  run_integration "$BIN/fluebox" "$TUSER" user
fi
for extra in tests/probes/run.sh tests/suites/*.sh; do
  [ -e "$extra" ] || continue
  name=$(basename "$extra" .sh); [ "$name" = run ] && name=probes
  selected "$name" || continue
  is_side "$name" && continue
  if [ ! -x "$extra" ]; then   # a suite that would silently never run
    NSUITE=$((NSUITE + 1)); FAIL=$((FAIL + 1)); FAILED+=("[$name] $extra is not executable (chmod +x)")
    echo "  [$name] $extra is not executable (chmod +x)"; continue
  fi
  echo "-- $extra"
  run_suite "$name" "$(suite_timeout "$extra" 900)" \
    env FB="$BIN/fluebox" ${ASAN:+FB_ASAN="$ASAN"} FB_AS=root T="$(scratch root)" "$extra"
done

lanes_collect
echo
[ ${#TIMES[@]} -gt 0 ] && echo "the slowest suites (s):"
printf '%s\n' "${TIMES[@]+"${TIMES[@]}"}" | sort -rn | head -n 12 | awk '{ ms = $1; $1 = ""; printf "  %7.1f %s\n", ms / 1000, $0 }'
finish
