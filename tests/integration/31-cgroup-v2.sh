# 31-cgroup-v2.sh — the cgroup v2 backend, forced with FLUEBOX_CGROUP=v2, as
# far as the machine allows: create the run's cgroup under the unified
# mount, put the sandbox in it (clone3 CLONE_INTO_CGROUP when nothing else is
# needed), read its counters, remove it, sweep stale ones, and report the
# controllers that the unified hierarchy does not offer as not applied. On
# machines whose cgroup2 mount has memory/pids/cpu, the limits are checked to
# apply there instead. Root only: setpriv --reset-env drops FLUEBOX_CGROUP.
. "$ROOT/tests/lib.sh"

as_root || skip_all "runs as root only"
command -v python3 >/dev/null || skip_all "missing: python3 (reads the JSON report)"

V2=$(awk '{ for (i = 7; i <= NF; i++) if ($i == "-") { if ($(i+1) == "cgroup2") { print $5; exit } } }' /proc/self/mountinfo)
[ -n "$V2" ] || skip_all "no cgroup2 mount"
own=$(awk -F: '$1 == "0" { print $3; exit }' /proc/self/cgroup)
OWN="$V2${own%/}"
offered=$(cat "$OWN/cgroup.controllers" 2>/dev/null)
has() { case " $offered " in *" $1 "*) return 0;; esac; return 1; }

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

R=$T/v2.json
mark=31$$$RANDOM
export FLUEBOX_CGROUP=v2

# --- create and attach: watch the running sandbox from the host ---------------
# The sandbox waits on its stdin, a FIFO this test holds open, so it runs for
# as long as the test looks at it (a fixed sleep could end first).
mkfifo "$T/gate"
"$FB" run -q --report "$R" -- sh -c "echo started; read line; exit 0 # $mark" < "$T/gate" > "$T/run.out" 2>&1 &
fbpid=$!
exec 8> "$T/gate"
started() { grep -q started "$T/run.out" 2>/dev/null; }
wait_for 20 started || fail "v2: the watched sandbox starts" "$(cat "$T/run.out")"
dir=$(ls -d "$OWN/fluebox/fluebox-$fbpid-"* 2>/dev/null | head -1)
if [ -n "$dir" ]; then
  ok "v2: the run's cgroup is $OWN/fluebox/fluebox-$fbpid-N"
  procs=$(cat "$dir/cgroup.procs")
  sleeper=$(pgrep -f "^sh -c echo started; read line; exit 0 # $mark" | head -1)
  case " $(echo $procs) " in *" $sleeper "*) ok "v2: the sandbox's processes are in it";; *) fail "v2: the sandbox's processes are in it" "procs=$procs sandbox sh=$sleeper";; esac
  grep -q '^populated 1' "$dir/cgroup.events" && ok "v2: cgroup.events says populated" || fail "v2: cgroup.events populated" "$(cat "$dir/cgroup.events")"
  case "$(cat /proc/"$fbpid"/cgroup)" in *"0::$own"*) ok "v2: fluebox itself stays outside it";; *) fail "v2: fluebox stays outside" "$(cat /proc/"$fbpid"/cgroup)";; esac
else
  fail "v2: the run's cgroup exists while it runs" "nothing under $OWN/fluebox"
fi
exec 8>&-
wait "$fbpid"; rc=$?
[ "$rc" = 0 ] && ok "v2: the run succeeds" || fail "v2: the run succeeds" "rc=$rc $(cat "$T/run.out")"
[ -z "$(ls -d "$OWN/fluebox/fluebox-$fbpid-"* 2>/dev/null)" ] && ok "v2: the cgroup is removed at the end" || fail "v2: cgroup removed" "$(ls -d "$OWN/fluebox/fluebox-$fbpid-"*)"
[ ! -d "$OWN/fluebox" ] || [ -n "$(ls -d "$OWN"/fluebox/fluebox-* 2>/dev/null)" ] && ok "v2: the empty fluebox/ parent is removed too" || fail "v2: empty parent removed"

jtrue "v2: report names the backend" "$R" 'r["cgroup"] == "v2"'
jtrue "v2: CPU time read from cpu.stat" "$R" 'r["cpu_ms"] is not None and r["cpu_ms"] >= 0'
for c in memory pids; do
  if has "$c"; then jtrue "v2: $c offered here, so applied" "$R" "'$c' in r['limits_applied']"
  else jtrue "v2: $c not offered by $OWN, reported as not applied" "$R" "'$c' in r['limits_not_applied'] and 'cgroup.controllers' in r['limits_note']"; fi
done

# --- CLONE_INTO_CGROUP: no rlimit fallback needed, so clone3 puts init there ---
if command -v strace >/dev/null; then
  # (LeakSanitizer cannot run under ptrace: off for this one run.)
  ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" strace -f -qq -e trace=clone3 -o "$T/clone.trace" "$FB" run -q --mem unlimited --pids unlimited --cpus 1 --report "$R" -- true
  rc=$?
  if grep -q CLONE_INTO_CGROUP "$T/clone.trace"; then ok "v2: clone3 with CLONE_INTO_CGROUP"; else fail "v2: clone3 with CLONE_INTO_CGROUP" "$(grep clone3 "$T/clone.trace" | head -2)"; fi
  [ "$rc" = 0 ] && ok "v2: a sandbox cloned into its cgroup runs" || fail "v2: cloned into its cgroup" "rc=$rc"
  if has cpu; then jtrue "v2: cpu quota applied" "$R" '"cpu" in r["limits_applied"]'
  else jtrue "v2: cpu not offered, not applied" "$R" '"cpu" in r["limits_not_applied"] and r["limits_fallback"] == {}'; fi
else
  skip_missing "v2: clone3 with CLONE_INTO_CGROUP" strace
fi

# --- inside: the cgroup namespace is rooted at the run's cgroup ----------------------
expect_out "v2: inside, /proc/self/cgroup shows the namespace root" "0::/" run -q -- grep '^0::' /proc/self/cgroup
run_fb run -q -- cat /proc/self/cgroup
case "$OUT" in *fluebox*) fail "v2: no host cgroup path visible inside" "$OUT";; *) ok "v2: no host cgroup path visible inside";; esac

# --- events: OOM kill and pids.max where the controllers exist -----------------------
if has memory; then
  run_fb run --mem 64M --report "$R" -- dd if=/dev/zero of=/dev/null bs=200M count=1
  jtrue "v2: memory.events oom_kill read back" "$R" 'r["oom_killed"] is True and r["exit_code"] == 137 and r["memory_peak_bytes"] <= 64 << 20'
else
  skip "v2: memory.events oom_kill" "$OWN offers no memory controller"
fi
if has pids; then
  run_fb run -q --pids 20 --report "$R" -- sh -c 'i=0; while [ $i -lt 100 ]; do sleep 120 & i=$((i+1)); done'
  jtrue "v2: pids.events max and pids.peak read back" "$R" '0 < r["pids_peak"] <= 20 and r["pids_limit_hits"] >= 1'
else
  skip "v2: pids.events / pids.peak" "$OWN offers no pids controller"
fi

# --- require, stale sweep ----------------------------------------------------------------
if ! has memory; then
  run_fb run --require-limits -- true
  case "$RC/$ERR" in "125/fluebox: --require-limits: cannot apply the memory"*) ok "v2: --require-limits refuses missing controllers";; *) fail "v2: --require-limits" "rc=$RC $ERR";; esac
fi
dead=$(sh -c 'echo $$')
mkdir -p "$OWN/fluebox/fluebox-$dead-1"
"$FB" run -q -- true
[ ! -d "$OWN/fluebox/fluebox-$dead-1" ] && ok "v2: a stale cgroup of a dead fluebox is swept" || { fail "v2: stale cgroup swept"; rmdir "$OWN/fluebox/fluebox-$dead-1"; }
rmdir "$OWN/fluebox" 2>/dev/null
unset FLUEBOX_CGROUP
no_leftovers "v2: nothing left behind"
