# tests/vm/guest-cgroup-v2.sh — runs inside the Linux 6.1 guest of
# tests/vm/vm.sh (root, cgroup2 with cpu, io, memory and pids on
# /sys/fs/cgroup, no v1): fluebox's cgroup v2 backend with real controllers.
#   1. the limits from the root cgroup;
#   2. the limits from a delegated cgroup fluebox is alone in (what
#      `systemd-run --scope -p Delegate=yes` and a service with Delegate=yes
#      give), as root and as the test user (its own delegated subtree); the
#      cgroup is left as fluebox found it (no controller left enabled, no
#      fluebox/ or fluebox-PID-self directory behind);
#   3. a cgroup fluebox shares with another process: the limits are reported
#      as not applied, and the cgroup is not changed (a write of
#      cgroup.subtree_control there would make it a thread root and its
#      children unusable);
#   4. tests/integration/30-limits.sh and 31-cgroup-v2.sh as root and
#      30-limits.sh as the test user (rootless, no delegation).
# Environment: FB (the fluebox under test), ROOT, T; FBVM_QUICK=1 leaves out 4.
. "$ROOT/tests/lib.sh"
G=/sys/fs/cgroup
TUSER=fbtest
echo "# $(uname -sr); the root cgroup offers: $(cat $G/cgroup.controllers)"
[ -n "$(cat $G/cgroup.controllers)" ] || bail "no controller in the guest's cgroup2 hierarchy"
id "$TUSER" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$TUSER"
chmod 1777 "$T"   # the test user writes its reports here too

# json NAME FILE EXPR — the fluebox report in FILE, as r, makes EXPR true.
json() {
  local why
  [ -s "$2" ] || { fail "$1" "no report (fluebox did not run?)"; return; }
  if why=$(python3 - "$2" "$3" 2>&1 <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
if not eval(sys.argv[2], {"r": r}):
    print(json.dumps(r)[:700])
    sys.exit(1)
EOF
  ); then ok "$1"; else fail "$1" "$3 is false: $why"; fi
}

# mkcg PATH [USER] — the cgroup G/PATH, every controller enabled on the way
# down to it (not in it); with USER, delegated to USER the way systemd does
# it: the directory and its cgroup.procs, cgroup.subtree_control and
# cgroup.threads belong to USER.
mkcg() {
  local path=$1 user=${2:-} d=$G part c
  for part in $(echo "$path" | tr / ' '); do
    for c in $(cat "$d/cgroup.controllers"); do echo "+$c" > "$d/cgroup.subtree_control"; done
    d=$d/$part; mkdir -p "$d"
  done
  [ -n "$user" ] && chown "$user" "$d" "$d/cgroup.procs" "$d/cgroup.subtree_control" "$d/cgroup.threads"
  return 0
}

# in_cg PATH [USER] -- CMD... — CMD in the cgroup G/PATH (as USER).
in_cg() {
  local d=$G/$1 user=""; shift
  [ "$1" != -- ] && { user=$1; shift; }
  shift
  if [ -n "$user" ]; then
    sh -c 'echo $$ > "$1/cgroup.procs" && shift 2 && exec setpriv --reuid="$0" --regid="$0" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"' "$user" "$d" -- "$@"
  else
    sh -c 'echo $$ > "$0/cgroup.procs" && exec "$@"' "$d" "$@"
  fi
}

# state PATH — what fluebox must leave as it found it in G/PATH.
state() {
  local d=$G/$1
  echo "subtree_control=[$(cat "$d/cgroup.subtree_control")] type=$(cat "$d/cgroup.type") children=[$(cd "$d" && find . -mindepth 1 -maxdepth 1 -type d | sort | tr '\n' ' ')]"
}

# limits LABEL PATH [USER] — the limits from the cgroup G/PATH ("" for the
# root cgroup), fluebox alone there.
limits() {
  local label=$1 path=$2 user=${3:-} run before after r=$T/r.json
  if [ -n "$path" ]; then run=(in_cg "$path" $user --); before=$(state "$path"); else run=(); fi
  rm -f "$r"; "${run[@]}" "$FB" run -q --mem 64M --report "$r" -- python3 -c 'b = bytearray(512 << 20)' > /dev/null 2>&1
  json "$label: --mem 64M: the bomb is OOM-killed (137), v2" "$r" 'r["exit_code"] == 137 and r["oom_killed"] and r["cgroup"] == "v2" and r["memory_peak_bytes"] <= 64 << 20'
  rm -f "$r"; "${run[@]}" "$FB" run -q --pids 16 --report "$r" -- sh -c 'for i in $(seq 40); do sleep 2 & done; wait' > /dev/null 2> "$T/p.err"
  json "$label: --pids 16: forks refused at 16" "$r" 'r["pids_peak"] == 16 and r["pids_limit_hits"] >= 1 and "pids" in r["limits_applied"]'
  rm -f "$r"; "${run[@]}" "$FB" run -q --cpus 0.5 --timeout 2s --report "$r" -- sh -c 'while :; do :; done & while :; do :; done' > /dev/null 2>&1
  json "$label: --cpus 0.5: throttled at about half a CPU" "$r" '"cpu" in r["limits_applied"] and r["cpu_throttled_ms"] > 0 and r["user_ms"] + r["sys_ms"] < 0.7 * r["wall_ms"]'
  # Only controllers that may be enabled in a cgroup holding processes
  # (pids and cpu are threaded-capable): the case that broke the caller's
  # cgroup.
  rm -f "$r"; "${run[@]}" "$FB" run -q --mem unlimited --pids 16 --report "$r" -- sh -c 'for i in $(seq 40); do sleep 2 & done; wait' > /dev/null 2>&1
  json "$label: --mem unlimited --pids 16: pids applied, forks refused at 16" "$r" '"pids" in r["limits_applied"] and r["pids_peak"] == 16 and r["limits_not_applied"] == []'
  rm -f "$r"; "${run[@]}" "$FB" run -q --mem unlimited --pids unlimited --cpus 0.5 --report "$r" -- true > /dev/null 2>&1
  json "$label: --cpus 0.5 alone: cpu applied" "$r" '"cpu" in r["limits_applied"] and r["limits_not_applied"] == []'
  if [ -n "$path" ]; then
    after=$(state "$path")
    [ "$after" = "$before" ] && ok "$label: the cgroup is left as fluebox found it" ||
      fail "$label: the cgroup is left as fluebox found it" "before: $before; after: $after"
  fi
}

# 1, 2: alone in the root cgroup, then in delegated cgroups.
limits "root cgroup" ""
mkcg ci.slice/job1.scope
limits "delegated scope (root)" ci.slice/job1.scope
mkcg user.slice/user-fbtest.slice/user@fbtest.service/app.slice/job2.scope "$TUSER"
limits "delegated scope (rootless)" user.slice/user-fbtest.slice/user@fbtest.service/app.slice/job2.scope "$TUSER"

# 3: a cgroup shared with another process.
mkcg shared.slice/shared.scope
S=shared.slice/shared.scope
in_cg "$S" -- sleep 600 & other=$!
at_exit "kill $other"
before=$(state "$S")
in_cg "$S" -- "$FB" run --mem unlimited --pids 16 --report "$T/s.json" -- true > /dev/null 2> "$T/s.err"; rc=$?
[ "$rc" = 0 ] && ok "shared cgroup: the run still runs" || fail "shared cgroup: the run still runs" "exit $rc: $(cat "$T/s.err")"
json "shared cgroup: pids reported as not applied" "$T/s.json" '"pids" in r["limits_not_applied"] and "other processes" in r["limits_note"]'
grep -q "limits not applied: pids" "$T/s.err" && ok "shared cgroup: one warning says so" || fail "shared cgroup: one warning says so" "$(cat "$T/s.err")"
in_cg "$S" -- "$FB" run --cpus 0.5 --mem unlimited --pids unlimited --require-limits -- true > /dev/null 2> "$T/s.err"; rc=$?
[ "$rc" = 125 ] && ok "shared cgroup: --require-limits refuses (125)" || fail "shared cgroup: --require-limits refuses (125)" "exit $rc: $(cat "$T/s.err")"
after=$(state "$S")
[ "$after" = "$before" ] && ok "shared cgroup: left unchanged" || fail "shared cgroup: left unchanged" "before: $before; after: $after"
mkdir "$G/$S/child"
if sh -c 'echo $$ > "$1/cgroup.procs"' sh "$G/$S/child" 2> "$T/c.err"; then ok "shared cgroup: a new child cgroup can still hold processes"
else fail "shared cgroup: a new child cgroup can still hold processes" "$(cat "$T/c.err") (type $(cat "$G/$S/child/cgroup.type"))"; fi
rmdir "$G/$S/child" 2>/dev/null

# 4: the project's limit tests, as tests/run.sh runs them.
if [ -z "${FBVM_QUICK:-}" ]; then
  for user in root "$TUSER"; do
    for f in 30-limits 31-cgroup-v2; do
      t=$(mktemp -d /tmp/fbt.XXXXXX); chmod 755 "$t"; [ "$user" != root ] && chown "$user" "$t"
      sub_suite -p "[$user $f] " "$f as $user" 900 env FB="$FB" FB_AS="$user" T="$t" ROOT="$ROOT" bash "$ROOT/tests/integration/$f.sh"
      rm -rf "$t"
    done
  done
fi
