# tests/lib.sh — sourced by every integration test (bash), and by the suites
# under tests/suites that run other programs.
#
# Environment (set by tests/run.sh):
#   FB        the fluebox binary under test (absolute path)
#   FB_AS     "root" or the unprivileged user the suite runs as ("fbtest")
#   T         a fresh scratch directory for this test file, readable by FB_AS
#
# The contract with tests/run.sh (tests/tap.sh and tests/README.md say it in
# full): each check prints "ok - NAME", "not ok - NAME: WHY" or a skip, and
# the suite must run to its end. This file makes that hold for a test that
# sources it, with no plan to keep up to date:
#   * on exit it prints the end marker "# end of suite", but only when the
#     file ran off its end (or called skip_all). Dying (an unset variable
#     under set -u, a killed shell) or calling `exit` anywhere leaves it out,
#     and tests/run.sh counts that as a failure of the file. So: never call
#     exit; use skip_all REASON to skip the rest of a file, bail REASON to
#     stop after a failure that makes the rest meaningless.
#   * never set an EXIT trap (it would replace this one): use at_exit CMD.
#   * a skip says why: skip NAME REASON for what this machine lacks and the
#     project cannot install (a kernel feature, root); need TOOL NAME (or
#     skip_missing NAME TOOL) for a program scripts/deps.sh installs — under
#     CI=true such a skip is a failure.
#   * the last command of the file decides its exit status: a file whose last
#     command fails (`[ -n "$x" ] && ok ...`) exits non-zero without printing
#     a failure, which counts as one.
# Rules: a test tries to cross a boundary and checks it fails the way the
# policy says; no timing asserts (wait for conditions: wait_for); network
# only on 127.0.0.1.

set -u
: "${FB:?FB must point at the fluebox binary}"
: "${T:=$(mktemp -d /tmp/fbt.XXXXXX)}"
: "${FB_AS:=root}"
# shellcheck source=tests/tap.sh
. "$(dirname "${BASH_SOURCE[0]}")/tap.sh"

# End of file: the end marker, the at_exit commands. `exit` is wrapped so
# that the trap can tell running off the end from leaving early.
FB_LIB_EXITED=""; FB_LIB_DONE=""; FB_LIB_AT_EXIT=()
exit() {
  local rc=$?
  [ "$BASHPID" = "$$" ] && FB_LIB_EXITED="${BASH_SOURCE[1]##*/}:${BASH_LINENO[0]}"
  builtin exit "${1:-$rc}"
}
fb_lib_on_exit() {
  local rc=$? c
  for c in "${FB_LIB_AT_EXIT[@]+"${FB_LIB_AT_EXIT[@]}"}"; do eval "$c" >/dev/null 2>&1; done
  if [ -n "$FB_LIB_DONE" ] || { [ "$rc" = 0 ] && [ -z "$FB_LIB_EXITED" ]; }; then
    echo "# end of suite"
  elif [ -n "$FB_LIB_EXITED" ]; then
    echo "# exit $rc called at $FB_LIB_EXITED, before the end of the file" >&2
  fi
}
trap fb_lib_on_exit EXIT
# at_exit CMD — runs CMD (a string, eval'd) when the file ends, however it ends.
at_exit() { FB_LIB_AT_EXIT+=("$1"); }
# skip_all REASON — the rest of this file does not run (REASON as for skip;
# "missing: TOOL" when a tool scripts/deps.sh installs is absent).
skip_all() { echo "ok - ${0##*/}: the rest of the file # SKIP $1"; FB_LIB_DONE=1; builtin exit 0; }
# bail REASON — a failure that makes the rest of the file meaningless: one
# more failure, and the file stops.
bail() { echo "not ok - ${0##*/}: gave up: $1"; FB_LIB_DONE=1; builtin exit 0; }

# Each test file has its own private runtime directory, so that what fluebox
# says once per user and boot (src/base/userdir.h) is said again in each file.
mkdir -p "$T/.xdg" && chmod 700 "$T/.xdg"
[ "$FB_AS" != root ] && [ "$(id -u)" = 0 ] && chown "$FB_AS" "$T/.xdg"
export XDG_RUNTIME_DIR=$T/.xdg

ok()   { echo "ok - $1"; }
fail() { echo "not ok - $1${2:+: $2}"; }

# run_fb ARGS... — runs fluebox (as FB_AS), stdout in $OUT, stderr in $ERR, rc in $RC.
run_fb() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then
    "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    # setpriv keeps the current directory and environment, drops to the user.
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp ${XDG_RUNTIME_DIR:+XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR"} $(env | grep '^FLUEBOX_' | tr '\n' ' ') "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  fi
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
  return 0
}

# expect_rc NAME WANT ARGS... — fluebox ARGS exits WANT.
expect_rc() {
  local name=$1 want=$2; shift 2
  run_fb "$@"
  if [ "$RC" = "$want" ]; then ok "$name"; else fail "$name" "exit $RC, want $want; stderr: $(printf %s "$ERR" | head -c 300)"; fi
}

# expect_out NAME SUBSTRING ARGS... — exit 0 and stdout contains SUBSTRING.
expect_out() {
  local name=$1 want=$2; shift 2
  run_fb "$@"
  case "$OUT" in
    *"$want"*) if [ "$RC" = 0 ]; then ok "$name"; else fail "$name" "exit $RC; stderr: $(printf %s "$ERR" | head -c 300)"; fi ;;
    *) fail "$name" "stdout lacks '$want' (exit $RC): $(printf %s "$OUT" | head -c 200) / $(printf %s "$ERR" | head -c 200)" ;;
  esac
}

# expect_fail NAME SUBSTRING ARGS... — a non-zero exit (the command's own
# failure, not fluebox's 125) and stderr contains SUBSTRING.
expect_fail() {
  local name=$1 sub=$2; shift 2
  run_fb "$@"
  if [ "$RC" = 0 ] || [ "$RC" = 125 ]; then fail "$name" "exit $RC; stderr: $(printf %s "$ERR" | head -c 300)"; return; fi
  case "$ERR" in
    *"$sub"*) ok "$name" ;;
    *) fail "$name" "stderr lacks '$sub': $(printf %s "$ERR" | head -c 300)" ;;
  esac
}

# expect_err NAME WANT_RC SUBSTRING ARGS... — exit WANT_RC and stderr contains SUBSTRING
# on one line.
expect_err() {
  local name=$1 want=$2 sub=$3; shift 3
  run_fb "$@"
  if [ "$RC" != "$want" ]; then fail "$name" "exit $RC, want $want; stderr: $(printf %s "$ERR" | head -c 300)"; return; fi
  case "$ERR" in
    *"$sub"*) ok "$name" ;;
    *) fail "$name" "stderr lacks '$sub': $(printf %s "$ERR" | head -c 300)" ;;
  esac
}

# The fluebox-* cgroups under this process's own cgroups (where fluebox run
# from here creates them), on every v1 hierarchy and the unified one.
own_fluebox_cgroups() {
  local line ctrl path mnt
  while IFS= read -r line; do
    ctrl=${line#*:}; path=${ctrl#*:}; ctrl=${ctrl%%:*}
    if [ -z "$ctrl" ]; then
      mnt=$(awk '$3 == "cgroup2" {print $2; exit}' /proc/mounts)
    else
      mnt=$(awk -v c="$ctrl" '$3 == "cgroup" && ("," $4 ",") ~ ("," c ",") {print $2; exit}' /proc/mounts)
    fi
    [ -n "$mnt" ] && [ -d "$mnt$path/fluebox" ] && find "$mnt$path/fluebox" -maxdepth 1 -type d -name 'fluebox-*' 2>/dev/null
  done < /proc/self/cgroup | sort -u
}

# leftovers — sets LEFT to what fluebox left behind (a process, a cgroup whose
# creator is gone, a mount), false when there is something.
leftovers() {
  LEFT=""
  if pgrep -f "^$FB run" >/dev/null 2>&1; then LEFT="process left: $(pgrep -af "^$FB run" | head -3)"; fi
  # A cgroup is named fluebox-<creator pid>-<n>: it is left behind when its
  # creator is gone. Others may run fluebox on this machine: those left
  # before this file began are not its doing.
  local cg="" d pid
  for d in $(own_fluebox_cgroups); do
    case " $FB_CGROUPS0 " in *" $d "*) continue ;; esac
    pid=${d##*/fluebox-}; pid=${pid%%-*}
    case "$pid" in ''|*[!0-9]*) cg="$cg $d"; continue ;; esac
    kill -0 "$pid" 2>/dev/null || cg="$cg $d"
  done
  [ -n "$cg" ] && LEFT="$LEFT cgroup left:$cg"
  local m
  m=$(new_mounts)
  [ -n "$m" ] && LEFT="$LEFT mount left: $m"
  [ -z "$LEFT" ]
}

# no_leftovers NAME — no fluebox process or cgroup remains, no mount appeared
# (a process being reaped gets up to 5 s to go).
no_leftovers() {
  if wait_for 5 leftovers; then ok "$1"; else fail "$1" "$LEFT"; fi
}
# Mounts are told apart by their id (mountinfo's first field): a leftover is
# one that appeared since the file began and is still there. One that went is
# not counted: in a mount namespace copied from the host's (the runner's asan
# lane), a mount on a directory another process removes goes with it.
mount_ids() { awk '{print $1}' /proc/self/mountinfo | sort; }
new_mounts() {
  mount_ids | comm -13 <(printf '%s\n' "$FB_MOUNTS0") - | while read -r id; do
    awk -v id="$id" '$1 == id { print $5; exit }' /proc/self/mountinfo
  done | tr '\n' ' '
}
FB_MOUNTS0=$(mount_ids)
FB_CGROUPS0=$(own_fluebox_cgroups | tr '\n' ' ')

as_root() { [ "$FB_AS" = root ]; }

# sanitizer_logs — from here on, the reports of the ASan/UBSan build go to
# files in a fresh directory (for a suite whose fluebox runs behind another
# program that does not show its stderr, as the clients' servers do);
# no_sanitizer_reports NAME then checks that none was written.
sanitizer_logs() {
  SAN_DIR=$(mktemp -d /tmp/fbsan.XXXXXX); chmod 1777 "$SAN_DIR"
  export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$SAN_DIR/asan"
  export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$SAN_DIR/ubsan"
  at_exit 'rm -rf "$SAN_DIR"'
}
no_sanitizer_reports() {
  local f; f=$(ls "$SAN_DIR" 2>/dev/null | head -n 1)
  if [ -z "$f" ]; then ok "$1"
  else fail "$1" "$(ls "$SAN_DIR" | wc -l) reports, the first: $(grep -m 3 -e ERROR -e 'runtime error' -e SUMMARY "$SAN_DIR/$f" | tr '\n' ' ' | head -c 500)"; fi
}

# cow_needs_upper — true when copy-on-write needs --cow-upper on this kernel:
# tmpfs has no user xattrs before Linux 6.6, so fluebox refuses a tmpfs upper
# layer there. Asked of the kernel itself (a tmpfs in a throwaway user and
# mount namespace), once per file; fluebox's own refusal is tested in
# tests/vm/guest-linux61.sh.
cow_needs_upper() {
  if [ -z "${COW_NEEDS_UPPER:-}" ]; then
    COW_NEEDS_UPPER=no
    local d; d=$(mktemp -d "$T/.cowprobe.XXXXXX")
    # Exit 3 only when the xattr itself is refused (a namespace or mount
    # that cannot be made says nothing: the cow tests then run).
    unshare -rm sh -c 'mount -t tmpfs fluebox-xattr-probe "$1" && : > "$1/f" || exit 0
           python3 -c "import os, sys; os.setxattr(sys.argv[1], \"user.fluebox\", b\"1\")" "$1/f" || exit 3' _ "$d" 2>/dev/null
    [ $? = 3 ] && COW_NEEDS_UPPER=yes
    rmdir "$d" 2>/dev/null
  fi
  [ "$COW_NEEDS_UPPER" = yes ]
}
# skip NAME REASON — NAME did not run because this machine lacks something the
# project cannot install (REASON says what).
skip() { echo "ok - $1 # SKIP ${2:-}"; }
# skip_missing NAME TOOL [WHY] — NAME did not run because TOOL, which
# scripts/deps.sh installs, is missing (a failure under CI=true).
skip_missing() { echo "ok - $1 # SKIP missing: $2${3:+ ($3)}"; }
# need TOOL NAME — true when TOOL is on PATH; otherwise prints NAME's
# missing-tool skip and is false:  if need node "node runs"; then ...; fi
need() { command -v "$1" >/dev/null 2>&1 && return 0; skip_missing "$2" "$1"; return 1; }

# wait_for SECONDS CMD... — polls CMD (every 20 ms) until it succeeds; false
# if SECONDS of wall-clock time pass first (a deadline, not a count of
# polls: where a fork costs 100 ms, as in the user-mode-linux guest, a count
# stretched a 60 s wait past four minutes). For synchronisation on a
# condition, never sleep N. CMD's arguments are expanded once, by the call:
# for a condition like "$(pgrep ...)", wrap it in a function and pass the
# function.
wait_for() {
  local secs=$1 end; shift
  end=$(( ${EPOCHREALTIME/./} + secs * 1000000 ))
  until "$@"; do
    [ "${EPOCHREALTIME/./}" -ge "$end" ] && return 1
    sleep 0.02
  done
}

# sub_suite [-p PREFIX] NAME TIMEOUT CMD... — runs another program that
# speaks the contract (node's tests, the Python client's, an integration file
# in a guest) as one part of this suite: passes its results through (with
# PREFIX put before each result's name), and prints one failure for NAME
# when it died, timed out, exited early or printed fewer results than it
# planned.
sub_suite() {
  local prefix="" name secs out rc line
  if [ "$1" = -p ]; then prefix=$2; shift 2; fi
  name=$1; secs=$2; shift 2
  out=$(mktemp /tmp/fbsub.XXXXXX)
  timeout -k 10 "$secs" "$@" > "$out"; rc=$?
  tap_read "$out" "$rc"
  for line in "${TAP_RESULTS[@]+"${TAP_RESULTS[@]}"}"; do
    case "$line" in
      "not ok - "*) echo "not ok - $prefix${line#not ok - }" ;;
      "ok - "*) echo "ok - $prefix${line#ok - }" ;;
      *) echo "$line" ;;
    esac
  done
  if [ -n "$TAP_BROKEN" ]; then
    echo "not ok - $prefix$name: $TAP_BROKEN; its last lines: $(grep -v -e '^ok' -e '^not ok' "$out" | tail -n 5 | tr '\n' ' ' | head -c 600)"
  fi
  rm -f "$out"
}
