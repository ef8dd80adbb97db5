# 30-limits.sh — resource limits and the run report (issue 3): memory, pids,
# cpu, timeout, disk, rlimits, every report field, and no cgroup left behind
# (also after fluebox itself is SIGKILLed). As root the cgroup backend is
# exercised; as the unprivileged user (no cgroup delegation here) the rlimit
# fallbacks, the one warning and --require-limits.
. "$ROOT/tests/lib.sh"

command -v python3 >/dev/null || skip_all "missing: python3 (reads the JSON report)"

# jtrue NAME FILE EXPR — the JSON object in FILE (last line), as r, makes the
# Python expression EXPR true.
jtrue() {
  local name=$1 file=$2 expr=$3 why
  why=$(python3 - "$file" "$expr" 2>&1 <<'EOF'
import json, sys
lines = [l for l in open(sys.argv[1]).read().splitlines() if l.startswith("{")]
r = json.loads(lines[-1])
if not eval(sys.argv[2], {"r": r}):
    print(json.dumps(r)[:600])
    sys.exit(1)
EOF
) && ok "$name" || fail "$name" "$expr is false: $why"
}

# The creator pid in fluebox-<pid>-<seq> is dead (or a zombie): a leftover.
creator_gone() {
  local pid=${1##*/fluebox-}; pid=${pid%%-*}
  [ ! -d "/proc/$pid" ] || grep -q '^State:[[:space:]]*[ZX]' "/proc/$pid/status" 2>/dev/null
}
# own_dirs — this shell's own cgroup directory in every mounted hierarchy
# (fluebox, started from here, creates its cgroups under <own>/fluebox).
own_dirs() {
  awk 'NR == FNR { split($0, f, ":"); own[f[2]] = f[3]; next }
       { for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i+1); o = $(i+3) }
         if (t == "cgroup2") k = ""; else if (t == "cgroup") { k = ""; n = split(o, a, ",");
           for (j = 1; j <= n; j++) if (a[j] != "rw" && a[j] != "ro") k = k (k == "" ? "" : ",") a[j] }
         else next
         if (k in own) print $5 (own[k] == "/" ? "" : own[k]) }' /proc/self/cgroup /proc/self/mountinfo
}
# stale_cgroups — fluebox cgroups under our own cgroups whose creator is gone.
# (Live ones may belong to other fluebox runs on this machine.)
stale_cgroups() {
  local o d
  for o in $(own_dirs); do
    for d in "$o"/fluebox/fluebox-*; do
      [ -d "$d" ] && creator_gone "$d" && echo "$d"
    done
  done
}
no_stale() { local s; s=$(stale_cgroups | head -3); [ -z "$s" ] && ok "$1" || fail "$1" "left: $s"; }
# cgroups_of PID — the fluebox cgroups that fluebox process PID created.
cgroups_of() { find /sys/fs/cgroup -maxdepth 7 -type d -name "fluebox-$1-*" 2>/dev/null; }

# own_cg CTRL — fluebox's own cgroup directory in the v1 hierarchy of CTRL
# (the parent of "fluebox/"), from mountinfo and /proc/self/cgroup.
own_cg() {
  local mnt own
  mnt=$(awk -v c="$1" '{ for (i = 7; i <= NF; i++) if ($i == "-") { t = $(i+1); o = $(i+3) }
        if (t == "cgroup" && ("," o ",") ~ ("," c ",")) { print $5; exit } }' /proc/self/mountinfo)
  own=$(awk -F: -v c="$1" '("," $2 ",") ~ ("," c ",") { print $3; exit }' /proc/self/cgroup)
  [ -n "$mnt" ] && [ -n "$own" ] && echo "$mnt${own%/}"
}

# fb_as ARGS... — fluebox as FB_AS, like run_fb, but for use in the background.
fb_as() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then "$FB" "$@"
  else setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB" "$@"; fi
}

# fb_exec ARGS... — the same, exec'd: "fb_exec ... &" makes $! fluebox's own
# pid (a function in the background is a subshell, and a signal to that
# subshell would not reach fluebox).
fb_exec() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then exec "$FB" "$@"
  else exec setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB" "$@"; fi
}

R=$T/report.json
# CG: the cgroup limits can be enforced here (root, or a user with a
# delegated cgroup); otherwise the rlimit fallbacks stand in.
if run_fb run -q --mem 64M --pids 64 --require-limits -- true && [ "$RC" = 0 ]; then CG=1; else CG=; fi
# The ASan build has no RLIMIT_DATA fallback: its shadow memory counts as data.
case "$FB" in *asan*) NODATA=1 ;; *) NODATA= ;; esac

# --- safe by default ------------------------------------------------------------
run_fb run --report "$R" -- true
[ "$RC" = 0 ] && ok "a run with no limit options succeeds" || fail "default run" "rc=$RC $ERR"
jtrue "default memory limit is 1G" "$R" 'r["limits"]["memory_bytes"] == 1 << 30'
jtrue "default pids limit is 512" "$R" 'r["limits"]["pids"] == 512'
jtrue "default scratch space is half the memory limit (512M)" "$R" 'r["limits"]["disk_bytes"] == 1 << 29'
jtrue "default nofile is 1024" "$R" 'r["limits"]["nofile"] == 1024'
jtrue "no timeout, cpu or fsize by default" "$R" 'r["limits"]["timeout_ms"] is None and r["limits"]["cpus"] is None and r["limits"]["fsize_bytes"] is None'
if [ -n "$CG" ]; then
  jtrue "default limits applied through cgroups" "$R" '{"memory", "pids", "disk", "nofile"} <= set(r["limits_applied"]) and r["limits_not_applied"] == [] and r["cgroup"] in ("v1", "v2", "v1+v2")'
  case "$ERR" in *warning*) fail "no warning when the limits apply" "$ERR";; *) ok "no warning when the limits apply";; esac
else
  jtrue "rootless: memory and pids not applied" "$R" 'r["limits_not_applied"] == ["memory", "pids"] and r["cgroup"] == "none"'
  if [ -n "$NODATA" ]; then
    jtrue "rootless: rlimit fallbacks named (ASan: pids only)" "$R" 'r["limits_fallback"] == {"pids": "RLIMIT_NPROC"}'
  else
    jtrue "rootless: rlimit fallbacks named" "$R" 'r["limits_fallback"] == {"memory": "RLIMIT_DATA", "pids": "RLIMIT_NPROC"}'
  fi
  jtrue "rootless: the reason is in limits_note" "$R" '"delegation" in r["limits_note"] or "Permission denied" in r["limits_note"]'
  n=$(printf '%s\n' "$ERR" | grep -c 'warning')
  case "$ERR" in *"limits not applied: memory,pids"*) [ "$n" = 1 ] && ok "rootless: one warning naming the limits" || fail "one warning" "$n: $ERR";;
    *) fail "rootless: one warning naming the limits" "$ERR";; esac
  run_fb run -q -- true
  [ -z "$ERR" ] && ok "-q silences the warning" || fail "-q silences the warning" "$ERR"
  expect_out "rootless: RLIMIT_NPROC stands in for pids" "64" run -q --pids 64 -- sh -c 'cat /proc/self/limits | awk "/Max processes/ {print \$3}"'
  if [ -n "$NODATA" ]; then skip "rootless: RLIMIT_DATA stands in for memory" "the ASan build has no RLIMIT_DATA fallback"
  else expect_out "rootless: RLIMIT_DATA stands in for memory" "67108864" run -q --mem 64M -- sh -c 'cat /proc/self/limits | awk "/Max data size/ {print \$4}"'; fi
fi
if [ -n "$CG" ]; then
  # The same hierarchies found through /proc/self/mountinfo (the fallback).
  FLUEBOX_CGROUP_MOUNTINFO=1 run_fb run --cpus 1 --report "$R" -- true
  jtrue "hierarchies found through mountinfo too" "$R" '{"memory", "pids", "cpu"} <= set(r["limits_applied"])'
fi
run_fb run --mem unlimited --pids unlimited --report "$R" -- true
jtrue "--mem/--pids unlimited relax the defaults" "$R" 'r["limits"]["memory_bytes"] is None and r["limits"]["pids"] is None and not {"memory", "pids"} & set(r["limits_applied"] + r["limits_not_applied"])'
[ -z "$ERR" ] && ok "nothing to warn about without cgroup limits" || fail "no warning without cgroup limits" "$ERR"
run_fb run --profile trusted --report "$R" -- true
jtrue "profile trusted: no memory limit, pids 4096" "$R" 'r["profile"] == "trusted" and r["limits"]["memory_bytes"] is None and r["limits"]["pids"] == 4096'

# --- memory --------------------------------------------------------------------
# dd reads 200M into one buffer: a bounded memory bomb (harmless without limit).
sleep 600 & outside=$!
run_fb run --mem 64M --report "$R" -- dd if=/dev/zero of=/dev/null bs=200M count=1
if [ -n "$CG" ]; then
  [ "$RC" = 137 ] && ok "memory bomb: exit 137" || fail "memory bomb: exit 137" "rc=$RC $ERR"
  jtrue "memory bomb: oom_killed, by SIGKILL" "$R" 'r["oom_killed"] is True and r["oom_kills"] >= 1 and r["signal"] == 9 and r["signal_name"] == "SIGKILL" and r["exit_code"] == 137 and r["status"] is None'
  jtrue "memory bomb: peak memory at the limit" "$R" '32 << 20 < r["memory_peak_bytes"] <= 64 << 20'
elif [ -n "$NODATA" ]; then
  skip "rootless memory bomb stopped (RLIMIT_DATA)" "the ASan build has no RLIMIT_DATA fallback"
else
  [ "$RC" != 0 ] && ok "rootless memory bomb stopped (RLIMIT_DATA)" || fail "rootless memory bomb stopped" "rc=$RC"
  case "$ERR" in *"memory exhausted"*|*"Cannot allocate memory"*) ok "rootless: the allocation fails";; *) fail "rootless: the allocation fails" "$ERR";; esac
  jtrue "rootless memory bomb: not an OOM kill" "$R" 'r["oom_killed"] is False and r["oom_kills"] is None and r["memory_peak_bytes"] is None'
fi
kill -0 "$outside" 2>/dev/null && ok "a process outside the sandbox survives the memory bomb" || fail "outside process survives" "pid $outside gone"
kill "$outside"; wait "$outside" 2>/dev/null
run_fb run --mem 64M --report "$R" -- dd if=/dev/zero of=/dev/null bs=16M count=4
[ "$RC" = 0 ] && ok "work under the memory limit succeeds" || fail "under the memory limit" "rc=$RC $ERR"
jtrue "no OOM reported when there was none" "$R" 'r["oom_killed"] is False'

# --- pids ----------------------------------------------------------------------
# A bomb that holds: every process keeps trying to fork (a shell would exit
# at its first failed fork and the bomb would fall apart). Its processes carry
# this test's mark in their command line: the test waits until 40 of them run
# before it checks the machine still forks, then ends the bomb with SIGTERM
# to fluebox. Nothing here races a clock: python3 can take many seconds to
# start in the user-mode-linux guest under load (a 12 s timeout on the bomb
# itself was not always enough), and here a fast machine is done in a second.
bomb_py() { echo "
import os, time  # $1
while True:
    try:
        os.fork()
    except OSError:
        time.sleep(0.05)"; }
bmark="fbbomb$$"
fb_exec run -q --pids 64 --timeout 600s --report "$T/bomb.json" -- python3 -c "$(bomb_py "$bmark")" >/dev/null 2>&1 &
bomb=$!
bomb_grown() { [ "$(pgrep -cf "$bmark")" -ge 40 ] || ! kill -0 "$bomb" 2>/dev/null; }
if wait_for 300 bomb_grown && kill -0 "$bomb" 2>/dev/null; then
  [ "$(sh -c 'echo alive')" = alive ] && ok "the machine answers during a fork bomb" || fail "machine answers during a fork bomb"
else
  fail "the machine answers during a fork bomb" "the bomb never reached 40 processes ($(pgrep -cf "$bmark"))"
fi
kill -TERM "$bomb"; wait "$bomb"; rc=$?
[ "$rc" = 143 ] && ok "a fork bomb ends when fluebox is told to stop (143)" || fail "fork bomb ends on SIGTERM" "rc=$rc"
bomb_gone() { [ "$(pgrep -cf "$bmark")" = 0 ]; }
wait_for 10 bomb_gone && ok "nothing of the bomb outlives fluebox" || fail "nothing of the bomb outlives fluebox" "$(pgrep -cf "$bmark") left"
if [ -n "$CG" ]; then
  jtrue "fork bomb: pids peak within --pids 64, forks refused" "$T/bomb.json" '0 < r["pids_peak"] <= 64 and r["pids_limit_hits"] > 0'
else
  jtrue "rootless fork bomb: RLIMIT_NPROC stands in" "$T/bomb.json" 'r["limits_fallback"].get("pids") == "RLIMIT_NPROC"'
fi
# The timeout ends a bomb too, wherever it has got to by then.
bmark2="fbbombt$$"
fb_as run -q --pids 64 --timeout 2s -- python3 -c "$(bomb_py "$bmark2")" >/dev/null 2>&1; rc=$?
[ "$rc" = 124 ] && ok "fork bomb ends at the timeout (124)" || fail "fork bomb ends at the timeout" "rc=$rc"
bomb2_gone() { [ "$(pgrep -cf "$bmark2")" = 0 ]; }
wait_for 10 bomb2_gone && ok "nothing of a timed-out bomb is left" || fail "nothing of a timed-out bomb is left" "$(pgrep -cf "$bmark2") left"
# 100 background sleepers under --pids 20: the shell's fork fails ("Cannot
# fork") once the sandbox holds 20 processes, init and the shell included.
run_fb run -q --pids 20 --report "$R" -- sh -c 'i=0; while [ $i -lt 100 ]; do sleep 120 & i=$((i+1)); done'
case "$RC/$ERR" in 2/*"Cannot fork"*) ok "process creation stops at --pids 20";; *) fail "process creation stops at --pids 20" "rc=$RC $ERR";; esac
[ -n "$CG" ] && jtrue "--pids 20: peak at most 20" "$R" '0 < r["pids_peak"] <= 20 and r["pids_limit_hits"] >= 1'

# --- cpu -----------------------------------------------------------------------
# Two busy loops: unthrottled they would take up to 2 CPUs.
run_fb run --cpus 0.5 --timeout 2s --report "$R" -- sh -c 'while :; do :; done & while :; do :; done'
[ "$RC" = 124 ] && ok "busy loop ends at --timeout 2s" || fail "busy loop timeout" "rc=$RC $ERR"
if [ -n "$CG" ]; then
  # At half a CPU, at most ~1000 ms of CPU in 2 s of wall time.
  jtrue "--cpus 0.5: clearly less than 2 s of CPU in 2 s" "$R" '0 < r["user_ms"] + r["sys_ms"] < 1500 and "cpu" in r["limits_applied"]'
  # Throttling happens only once the loops reach their quota: on a machine
  # so busy that they got less than 40% of a CPU, there is none to report.
  cpu=$(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(int(100 * (r["user_ms"] + r["sys_ms"]) / max(r["wall_ms"], 1)))' "$R" 2>/dev/null)
  if [ "${cpu:-0}" -ge 40 ]; then
    jtrue "--cpus 0.5: throttling reported" "$R" 'r["cpu_throttled_ms"] is not None and r["cpu_throttled_ms"] > 0'
  else
    skip "--cpus 0.5: throttling reported" "the machine is too busy: the loops got ${cpu:-?}% of a CPU, under their quota"
  fi
else
  jtrue "rootless: cpu named as not applied" "$R" '"cpu" in r["limits_not_applied"]'
fi
# The CPU time of processes killed at the timeout reaches the report: the
# busy process writes down the CPU time it has used so far (its own
# clock), and the report must count at least the last figure it wrote. No
# threshold of time: on a busy machine it gets less CPU and writes less.
# World-writable: where the file system cannot do idmapped mounts (a
# user-mode-linux guest), the sandbox user writes only by "other".
mkdir -p "$T/cpuws"; chmod 777 "$T/cpuws"
cpu_py='import os
while True:
    t = os.times()
    with open("cpu.tmp", "w") as f:
        f.write(str(int((t.user + t.system) * 1000)))
    os.rename("cpu.tmp", "cpu.txt")
    x = 0
    for i in range(100000):
        x += i'
run_fb run --workspace "$T/cpuws" --timeout 2s --report "$T/cpu.json" -- python3 -c "$cpu_py"
seen=$(cat "$T/cpuws/cpu.txt" 2>/dev/null)
if [ "$RC" = 124 ] && [ -n "$seen" ]; then
  jtrue "CPU time of a process killed at the timeout is counted (it saw ${seen} ms)" "$T/cpu.json" \
    "r['user_ms'] + r['sys_ms'] >= $seen and r['timed_out']"
else
  fail "CPU time of a process killed at the timeout is counted" "rc=$RC, it wrote '${seen}': $ERR"
fi

# --- timeout -------------------------------------------------------------------
mark=47$$$RANDOM
run_fb run --timeout 1s --report "$R" -- sh -c "(setsid sh -c 'sleep $mark & sleep ${mark}1' &); sleep 100"
[ "$RC" = 124 ] && ok "--timeout exits 124" || fail "--timeout exits 124" "rc=$RC $ERR"
jtrue "--timeout: timed_out in the report" "$R" 'r["timed_out"] is True and r["exit_code"] == 124 and r["limits"]["timeout_ms"] == 1000 and "timeout" in r["limits_applied"]'
grandchild_gone() { ! pgrep -f "sleep $mark" >/dev/null; }
wait_for 10 grandchild_gone
if pgrep -f "sleep $mark" >/dev/null; then fail "a double-forked setsid grandchild dies at the timeout" "$(pgrep -af "sleep $mark")"; pkill -f "sleep $mark"
else ok "a double-forked setsid grandchild dies at the timeout"; fi
run_fb run --timeout 500ms --report "$R" -- sleep 30
[ "$RC" = 124 ] && ok "--timeout 500ms" || fail "--timeout 500ms" "rc=$RC"
jtrue "--timeout 500ms ends long before the command would" "$R" 'r["wall_ms"] < 20000 and r["limits"]["timeout_ms"] == 500'
run_fb run --timeout 30s --report "$R" -- true
jtrue "a command that ends in time is not timed out" "$R" 'r["timed_out"] is False and r["exit_code"] == 0'

# --- disk ------------------------------------------------------------------------
for dir in /tmp /workspace; do
  run_fb run --disk 16M -- sh -c "head -c 64M /dev/zero > $dir/fill; echo rc=\$?; wc -c < $dir/fill"
  case "$ERR" in *"No space left on device"*) ok "--disk 16M: $dir fills up with ENOSPC";; *) fail "--disk: ENOSPC in $dir" "$OUT $ERR";; esac
  size=$(echo "$OUT" | tail -1)
  case "$size" in ''|*[!0-9]*) fail "--disk: $dir size" "$OUT";; *) [ "$size" -le $((16 << 20)) ] && ok "--disk 16M: at most 16M written to $dir" || fail "--disk 16M in $dir" "$size bytes";; esac
done

# --- rlimits ----------------------------------------------------------------------
expect_out "--nofile sets RLIMIT_NOFILE" "64" run -q --nofile 64 -- sh -c 'ulimit -n'
expect_out "core dumps are off" "0" run -q -- sh -c 'ulimit -c'
run_fb run -q --fsize 1M -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=4 2>&1; wc -c < /tmp/big'
size=$(echo "$OUT" | tail -1)
case "$size" in ''|*[!0-9]*) fail "--fsize" "$OUT $ERR";; *) [ "$size" -le $((1 << 20)) ] && ok "--fsize 1M stops the file at 1M" || fail "--fsize 1M" "$size bytes";; esac

# --- socket buffers in a v1 memory cgroup ---------------------------------------------
# v1 charges socket memory to a memory cgroup only once it has a TCP limit
# (v2 charges it with the rest): a quarter of --mem, at most 64 MiB.
v1mem=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ {print $2; exit}' /proc/mounts)
if [ -n "$CG" ] && [ -n "$v1mem" ] && [ -e "$v1mem/memory.kmem.tcp.limit_in_bytes" ]; then
  for m in 128M:33554432 1G:67108864; do
    "$FB" run -q --mem "${m%%:*}" -- sh -c "echo started; sleep 5$mark" > "$T/k.out" 2>&1 &
    fbpid=$!
    tcp_started() { grep -q started "$T/k.out" 2>/dev/null; }
    wait_for 20 tcp_started
    d=$(find "$v1mem" -maxdepth 7 -type d -name "fluebox-$fbpid-*" 2>/dev/null | head -n 1)
    got=$(cat "$d/memory.kmem.tcp.limit_in_bytes" 2>/dev/null)
    kill -TERM "$fbpid"; wait "$fbpid" 2>/dev/null
    [ "$got" = "${m#*:}" ] && ok "v1: --mem ${m%%:*} gives the sandbox's sockets memory.kmem.tcp.limit_in_bytes ${m#*:}" ||
      fail "v1: --mem ${m%%:*}: memory.kmem.tcp.limit_in_bytes" "${got:-none} in ${d:-no cgroup}, want ${m#*:}"
    rm -f "$T/k.out"
  done
else
  skip "v1: the sandbox's sockets get memory.kmem.tcp.limit_in_bytes" "no cgroup limits here, or no v1 memory cgroup with TCP accounting (v2 charges socket memory with the rest)"
fi

# --- POSIX message queues: RLIMIT_MSGQUEUE per sandbox -----------------------------
# The kernel charges queue bytes to the user; rootless that is the caller's
# own budget (819,200 bytes by default, 9 queues of the default size), which
# one sandbox took whole: the next sandbox got EMFILE. Each sandbox now gets
# a quarter (two queues), and a second one still gets its own while the
# first holds all it can.
mq_py='
import ctypes, os, sys, time
l = ctypes.CDLL(None, use_errno=True)
n = 0
while n < 50 and l.mq_open(("/q%d" % n).encode(), os.O_CREAT | os.O_RDWR, 0o600, None) >= 0:
    n += 1
print("queues=%d" % n, flush=True)
if len(sys.argv) > 1:
    open(sys.argv[1], "w").close()
    while not os.path.exists(sys.argv[2]):
        time.sleep(0.05)'
if need python3 "RLIMIT_MSGQUEUE per sandbox"; then
  # World-writable, as cpuws above: the guest's file system has no
  # idmapped mounts.
  mkdir -p "$T/mq"; chmod 777 "$T/mq"
  fb_exec run -q --workspace "$T/mq" -- python3 -c "$mq_py" held stop >"$T/mq.a" 2>&1 &
  mqa=$!
  wait_for 60 test -e "$T/mq/held" ||
    fail "the first sandbox holds its queues while the second runs" "it never said so: $(cat "$T/mq.a")"
  expect_out "a sandbox takes at most 2 default-sized POSIX message queues" "queues=2" run -q -- python3 -c "$mq_py"
  expect_out "RLIMIT_MSGQUEUE is 204800 in a sandbox" "204800" run -q -- grep "Max msgqueue size" /proc/self/limits
  touch "$T/mq/stop"
  wait "$mqa"
  grep -qx "queues=2" "$T/mq.a" && ok "the first sandbox, holding its queues, got 2" || fail "the first sandbox's queues" "$(cat "$T/mq.a")"
fi

# --- the report, field by field ------------------------------------------------------
run_fb run --mem 256M --cpus 0.5 --pids 64 --timeout 30s --disk 100M --report "$R" -- sh -c 'exit 3'
[ "$RC" = 3 ] && ok "the issue's example line runs" || fail "the issue's example line" "rc=$RC $ERR"
jtrue "report: every field is there" "$R" 'set(r) == {"report_version", "exit_code", "status", "signal", "signal_name", "timed_out", "killed_after_signal", "oom_killed", "oom_kills", "setup_failed", "error", "wall_ms", "user_ms", "sys_ms", "cpu_ms", "cpu_throttled_ms", "memory_peak_bytes", "max_rss_bytes", "disk_used_bytes", "pids_peak", "pids_limit_hits", "limits", "limits_applied", "limits_not_applied", "limits_fallback", "limits_note", "cgroup", "profile", "overrides", "toolchain", "isolation", "guarantees_not_held", "network", "seccomp_denials"}'
jtrue "report: exit fields of a normal exit" "$R" 'r["report_version"] == 1 and r["exit_code"] == 3 and r["status"] == 3 and r["signal"] is None and r["signal_name"] is None and r["timed_out"] is False and r["oom_killed"] is False and r["setup_failed"] is False and r["error"] is None'
jtrue "report: times are integers" "$R" 'all(isinstance(r[k], int) and r[k] >= 0 for k in ("wall_ms", "user_ms", "sys_ms")) and isinstance(r["max_rss_bytes"], int)'
jtrue "report: the limits as asked" "$R" 'r["limits"] == {"memory_bytes": 256 << 20, "cpus": 0.5, "pids": 64, "disk_bytes": 100 << 20, "timeout_ms": 30000, "nofile": 1024, "fsize_bytes": None}'
jtrue "report: profile and overrides" "$R" 'r["profile"] == "standard" and r["overrides"] == ["--mem 256M", "--cpus 0.5", "--pids 64", "--timeout 30s", "--disk 100M"]'
jtrue "report: applied + not applied cover the limits set" "$R" 'sorted(r["limits_applied"] + r["limits_not_applied"]) == sorted(["memory", "cpu", "pids", "disk", "timeout", "nofile"])'
jtrue "report: network mode none without --allow-net" "$R" 'r["network"]["mode"] == "none" and r["network"]["connections"] == 0'
if [ -n "$CG" ]; then
  jtrue "report: cgroup measurements" "$R" 'r["memory_peak_bytes"] > 0 and r["pids_peak"] >= 1 and r["oom_kills"] == 0 and r["pids_limit_hits"] == 0 and r["cpu_throttled_ms"] is not None and r["limits_note"] is None and r["limits_fallback"] == {}'
else
  jtrue "report: unknown measurements are null" "$R" 'r["memory_peak_bytes"] is None and r["pids_peak"] is None and r["oom_kills"] is None and r["cgroup"] == "none"'
fi
run_fb run --report "$R" -- sh -c 'kill -TERM $$'
jtrue "report: death by a signal" "$R" 'r["exit_code"] == 143 and r["signal"] == 15 and r["signal_name"] == "SIGTERM" and r["status"] is None'
run_fb run -q --report - -- true
case "$ERR" in *'"report_version":1'*) ok "--report - writes to stderr";; *) fail "--report - writes to stderr" "$ERR";; esac
expect_err "an unwritable --report fails before the command runs" 125 "--report /nonexistent-dir/r.json: No such file" run -q --report /nonexistent-dir/r.json -- sh -c 'exit 4'

# --- --require-limits ------------------------------------------------------------------
mkdir -p "$T/rq"; [ "$FB_AS" != root ] && chown "$FB_AS" "$T/rq"
if [ -n "$CG" ]; then
  expect_rc "--require-limits passes when the limits apply" 0 run --require-limits --cpus 1 -- true
  # No cgroups (as without delegation), simulated with FLUEBOX_CGROUP=none.
  FLUEBOX_CGROUP=none run_fb run --report "$R" -- true
  n=$(printf '%s\n' "$ERR" | grep -c 'warning')
  case "$ERR" in *"limits not applied: memory,pids"*) [ "$n" = 1 ] && ok "without cgroups: one warning naming the limits" || fail "one warning" "$ERR";; *) fail "without cgroups: one warning" "$ERR";; esac
  # (The ASan build leaves RLIMIT_DATA out: its shadow memory counts as data.)
  case "$FB" in *asan*) fbk='{"pids": "RLIMIT_NPROC"}';; *) fbk='{"memory": "RLIMIT_DATA", "pids": "RLIMIT_NPROC"}';; esac
  jtrue "without cgroups: fallbacks in the report" "$R" "r['limits_fallback'] == $fbk and r['cgroup'] == 'none' and r['exit_code'] == 0"
  FLUEBOX_CGROUP=none run_fb run --require-limits --workspace "$T/rq" -- touch /workspace/ran
else
  run_fb run --require-limits --workspace "$T/rq" -- touch /workspace/ran
fi
case "$RC/$ERR" in "125/fluebox: --require-limits: cannot apply the memory,pids limits"*) ok "--require-limits: exit 125 naming the limits";; *) fail "--require-limits: exit 125" "rc=$RC $ERR";; esac
[ ! -e "$T/rq/ran" ] && ok "--require-limits: the command never ran" || fail "--require-limits: the command never ran"
if as_root; then
  FLUEBOX_CGROUP=v3 run_fb run -- true
  case "$RC/$ERR" in "125/"*"FLUEBOX_CGROUP=v3"*) ok "a bad FLUEBOX_CGROUP is an error";; *) fail "bad FLUEBOX_CGROUP" "rc=$RC $ERR";; esac
fi

# --- bad input: one line naming the option, 125, nothing created ------------------------
for bad in "--mem 0" "--mem -1" "--mem 12Q" "--mem 1K" "--cpus 0" "--cpus -1" "--cpus abc" "--cpus nan" \
           "--pids 0" "--pids -5" "--pids 1.5" "--timeout 0" "--timeout -1s" "--timeout 10x" "--timeout 0ms" \
           "--disk 0" "--disk -5M" "--disk 1K" "--nofile 0" "--nofile 5" "--fsize 0" "--fsize 1Z"; do
  set -- $bad
  run_fb run "$1" "$2" -- touch /tmp/x
  n=$(printf '%s\n' "$ERR" | grep -c .)
  case "$RC/$ERR" in "125/fluebox: $1 $2"*) [ "$n" = 1 ] && ok "bad input $bad: 125, one line naming it" || fail "bad input $bad: one line" "$ERR";;
    *) fail "bad input $bad: 125 naming the option" "rc=$RC $ERR";; esac
done
run_fb run --mem=0 -- true
case "$RC/$ERR" in "125/fluebox: --mem 0"*) ok "bad input --mem=0 (inline form)";; *) fail "bad input --mem=0" "rc=$RC $ERR";; esac

# --- nothing left behind, even after fluebox is SIGKILLed -----------------------------------
no_stale "no stale cgroup after the limit tests"
if [ -n "$CG" ]; then
  "$FB" run --timeout 60s -- sh -c "echo started; sleep 3$mark" > "$T/k.out" 2>&1 &
  fbpid=$!
  k_started() { grep -q started "$T/k.out" 2>/dev/null; }
  wait_for 20 k_started
  made=$(cgroups_of "$fbpid")
  [ -n "$made" ] && ok "a running sandbox has its cgroups ($(echo $made | wc -w))" || fail "a running sandbox has its cgroups"
  kill -KILL "$fbpid"; wait "$fbpid" 2>/dev/null
  k_gone() { ! pgrep -f "sleep 3$mark" >/dev/null; }
  wait_for 10 k_gone
  if pgrep -f "sleep 3$mark" >/dev/null; then fail "SIGKILLed fluebox: the sandbox dies" "$(pgrep -af "sleep 3$mark")"; pkill -f "sleep 3$mark"
  else ok "SIGKILLed fluebox: the sandbox dies"; fi
  left=$(cgroups_of "$fbpid")
  [ -n "$left" ] && ok "SIGKILLed fluebox leaves its cgroups (to be swept)" || skip "SIGKILLed fluebox left nothing to sweep"
  "$FB" run -- true
  left=$(cgroups_of "$fbpid")
  [ -z "$left" ] && ok "the next run sweeps the stale cgroups" || fail "the next run sweeps the stale cgroups" "$left"

  # Every hierarchy is swept, not only those the next run uses: a
  # SIGKILLed `run --cpus` left its cpu cgroup until a run with --cpus.
  "$FB" run --cpus 0.5 --timeout 60s -- sh -c "echo started; sleep 4$mark" > "$T/k.out" 2>&1 &
  fbpid=$!
  wait_for 20 k_started
  kill -KILL "$fbpid"; wait "$fbpid" 2>/dev/null
  k4_gone() { ! pgrep -f "sleep 4$mark" >/dev/null; }
  wait_for 10 k4_gone
  before=$(cgroups_of "$fbpid")
  "$FB" run -- true
  left=$(cgroups_of "$fbpid")
  if [ -z "$left" ]; then ok "a run without --cpus sweeps a SIGKILLed run --cpus's cgroups, cpu included ($(echo $before | wc -w) before)"
  else fail "a run without --cpus sweeps a SIGKILLed run --cpus's cgroups" "left: $left"; fi

  # A stale directory whose creator is long gone, made by hand.
  own=$(own_cg pids)
  if [ -n "$own" ]; then
    dead=$(sh -c 'echo $$')
    mkdir -p "$own/fluebox/fluebox-$dead-1"
    "$FB" run -- true
    [ ! -d "$own/fluebox/fluebox-$dead-1" ] && ok "a stale empty fluebox-<dead pid> cgroup is swept" || { fail "stale cgroup swept" "$own/fluebox/fluebox-$dead-1"; rmdir "$own/fluebox/fluebox-$dead-1"; }
    # One whose creator is gone but which still holds a live process is
    # kept, and the process is not touched (the pid in a name can be of
    # another pid namespace's fluebox).
    mkdir -p "$own/fluebox/fluebox-$dead-2"
    sleep 120 & sl=$!
    echo "$sl" > "$own/fluebox/fluebox-$dead-2/cgroup.procs"
    "$FB" run -- true
    if [ -d "$own/fluebox/fluebox-$dead-2" ] && kill -0 "$sl" 2>/dev/null; then ok "a stale cgroup holding a live process is kept, the process untouched"
    else fail "stale cgroup with a live process" "dir: $(ls -d "$own/fluebox/fluebox-$dead-2" 2>&1) alive: $(kill -0 "$sl" 2>&1 && echo yes)"; fi
    echo "$sl" > "$own/cgroup.procs"; kill "$sl"; wait "$sl" 2>/dev/null
    rmdir "$own/fluebox/fluebox-$dead-2"
    # ...but not a live one: our own shell's pid is alive.
    mkdir -p "$own/fluebox/fluebox-$$-1"
    "$FB" run -- true
    [ -d "$own/fluebox/fluebox-$$-1" ] && ok "a cgroup whose creator is alive is kept" || fail "live cgroup kept"
    rmdir "$own/fluebox/fluebox-$$-1"; rmdir "$own/fluebox" 2>/dev/null
  fi
fi
no_stale "no stale cgroup at the end"
no_leftovers "nothing left behind after the limit tests"
