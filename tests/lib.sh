# tests/lib.sh — sourced by every integration test (bash).
#
# Environment (set by tests/run.sh):
#   FB        the fluebox binary under test (absolute path)
#   FB_AS     "root" or the unprivileged user the suite runs as ("fbtest")
#   T         a fresh scratch directory for this test file, readable by FB_AS
# Each check prints "ok - NAME" or "not ok - NAME: WHY"; tests/run.sh counts them.
# Rules: a test tries to cross a boundary and checks it fails the way the
# policy says; no timing asserts; network only on 127.0.0.1.

set -u
: "${FB:?FB must point at the fluebox binary}"
: "${T:=$(mktemp -d /tmp/fbt.XXXXXX)}"
: "${FB_AS:=root}"

ok()   { echo "ok - $1"; }
fail() { echo "not ok - $1${2:+: $2}"; }

# run_fb ARGS... — runs fluebox (as FB_AS), stdout in $OUT, stderr in $ERR, rc in $RC.
run_fb() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then
    "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    # setpriv keeps the current directory and environment, drops to the user.
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp $(env | grep '^FLUEBOX_' | tr '\n' ' ') "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
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

# no_leftovers NAME — no fluebox process or cgroup remains, no mount appeared.
no_leftovers() {
  local name=$1 bad=""
  sleep 0.05
  if pgrep -f "^$FB run" >/dev/null 2>&1; then bad="process left: $(pgrep -af "^$FB run" | head -3)"; fi
  # A cgroup is named fluebox-<creator pid>-<n>: it is left behind when its
  # creator is gone (others may be running fluebox on this machine).
  local cg d pid
  cg=""
  for d in $(own_fluebox_cgroups); do
    pid=${d##*/fluebox-}; pid=${pid%%-*}
    case "$pid" in ''|*[!0-9]*) cg="$cg $d"; continue ;; esac
    kill -0 "$pid" 2>/dev/null || cg="$cg $d"
  done
  [ -n "$cg" ] && bad="$bad cgroup left:$cg"
  if [ "$(wc -l < /proc/self/mountinfo)" != "${FB_MOUNTS0:-$(wc -l < /proc/self/mountinfo)}" ]; then bad="$bad mount count changed"; fi
  if [ -z "$bad" ]; then ok "$name"; else fail "$name" "$bad"; fi
}
FB_MOUNTS0=$(wc -l < /proc/self/mountinfo)

as_root() { [ "$FB_AS" = root ]; }
skip() { echo "ok - $1 # SKIP ${2:-}"; }
