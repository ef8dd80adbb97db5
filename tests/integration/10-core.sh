# 10-core.sh — `fluebox run` basics and the boundaries of issue 2, each proven
# by trying to cross it. Runs as root and as an unprivileged user (FB_AS).
. "$ROOT/tests/lib.sh"

cp "$ROOT"/tests/fixtures/workload.* "$T"/
mkdir -p "$T/ws" "$T/data"
echo "host data" > "$T/data/file.txt"
echo "TOPSECRET-$$" > "$T/secret.txt"
[ "$FB_AS" != root ] && chown -R "$FB_AS" "$T/ws"

# --- running things -------------------------------------------------------
expect_out "echo runs and output passes through" "hello sandbox" run -- echo hello sandbox
expect_rc  "exit status passes through" 3 run -- sh -c 'exit 3'
expect_rc  "death by signal N exits 128+N" 143 run -- sh -c 'kill -TERM $$'
run_fb run -- sh -c 'exit 0'
[ "$RC" = 0 ] && ok "exit 0" || fail "exit 0" "rc=$RC"

out=$(echo "piped input" | "$FB" run -- cat 2>&1)
[ "$out" = "piped input" ] && ok "stdin pipe reaches the command" || fail "stdin pipe" "$out"

expect_rc  "--help exits 0" 0 --help
expect_out "--version prints the version" "fluebox " --version
expect_err "command not found exits 127 with a message" 127 "nosuchcmd-xyz: command not found" run -- nosuchcmd-xyz
expect_err "a non-executable file exits 126" 126 "Permission denied" run -- /etc/hostname
expect_rc  "cwd is /workspace" 0 run -- sh -c 'test "$(pwd)" = /workspace'

# --- identity ---------------------------------------------------------------
expect_out "runs as uid 1000 named fluebox" "uid=1000(fluebox) gid=1000(fluebox)" run -- id
expect_out "--uid 0 is root inside" "uid=0(root)" run --uid 0 --gid 0 -- id
expect_out "--uid 0 has no capabilities" "CapEff:	0000000000000000" run --uid 0 --gid 0 -- grep CapEff /proc/self/status
expect_out "no capabilities in the bounding set" "CapBnd:	0000000000000000" run -- grep CapBnd /proc/self/status
expect_out "no_new_privs is set" "NoNewPrivs:	1" run -- grep NoNewPrivs /proc/self/status
# No line of the map may name host id 0 (the second column).
run_fb run -- cat /proc/self/uid_map
if [ -z "$OUT" ] || echo "$OUT" | awk '$2 == 0 {bad = 1} END {exit !bad}'; then fail "host root is never mapped" "uid_map: $OUT"; else ok "host root is never mapped (inside 0 maps to $(echo "$OUT" | awk 'NR == 1 {print $2}'))"; fi
run_fb run --uid 0 --gid 0 -- cat /proc/self/uid_map
if [ -z "$OUT" ] || echo "$OUT" | awk '$2 == 0 {bad = 1} END {exit !bad}'; then fail "--uid 0 does not map host root" "$OUT"; else ok "--uid 0 does not map host root"; fi

# --- hostname ----------------------------------------------------------------
host_name=$(hostname)
expect_out "hostname is fluebox" "fluebox" run -- hostname
run_fb run --uid 0 -- sh -c 'hostname evil 2>&1; cat /proc/sys/kernel/hostname'
[ "$(hostname)" = "$host_name" ] && ok "host hostname unchanged" || fail "host hostname unchanged" "now $(hostname)"

# --- filesystem -----------------------------------------------------------------
run_fb run -- cat "$T/secret.txt"
case "$OUT" in *TOPSECRET*) fail "host secret outside the binds is unreadable" "read it";; *) ok "host secret outside the binds is unreadable";; esac
run_fb run --uid 0 -- sh -c "cat /proc/1/root$T/secret.txt; ls /proc/1/root/; cat /root/.bash_history /etc/shadow"
case "$OUT" in *TOPSECRET*) fail "no path to the host secret through /proc/1/root" ;; *) ok "no path to the host secret through /proc/1/root";; esac
expect_out "--ro-bind shows the data" "host data" run --ro-bind "$T/data:/data" -- cat /data/file.txt
expect_fail "writing a --ro-bind fails with EROFS" "Read-only file system" run --ro-bind "$T/data:/data" -- sh -c 'echo x > /data/file.txt'
[ "$(cat "$T/data/file.txt")" = "host data" ] && ok "the ro-bound host file is unchanged" || fail "ro-bound host file unchanged"
expect_fail "the system is read-only (/usr)" "Read-only file system" run --uid 0 -- sh -c 'echo x > /usr/fluebox-test'
expect_fail "the root is read-only" "Read-only file system" run --uid 0 -- sh -c 'echo x > /fluebox-test'
expect_fail "/etc is read-only" "Read-only file system" run --uid 0 -- sh -c 'echo x >> /etc/passwd'
expect_rc "/tmp is writable" 0 run -- sh -c 'echo x > /tmp/a && test -s /tmp/a'
expect_out "--tmpfs DST:SIZE mounts a sized tmpfs" "65536" run --tmpfs /scratch:64M -- sh -c 'df -k /scratch | tail -1 | awk "{print \$2}"'

run_fb run --workspace "$T/ws" -- sh -c 'echo from-sandbox > made.txt && mkdir -p d/e && echo deep > d/e/f'
if [ "$RC" = 0 ] && [ "$(cat "$T/ws/made.txt" 2>/dev/null)" = from-sandbox ] && [ -f "$T/ws/d/e/f" ]; then
  ok "--workspace is writable and changes land on the host"
else fail "--workspace writable" "rc=$RC $ERR"; fi
owner=$(stat -c %U "$T/ws/made.txt" 2>/dev/null)
want=$( [ "$FB_AS" = root ] && echo root || echo "$FB_AS")
[ "$owner" = "$want" ] && ok "files the sandbox creates belong to the workspace owner ($want)" || fail "workspace file owner" "$owner, want $want"
expect_err "a missing --workspace is an error" 125 "--workspace $T/nope: No such file or directory" run --workspace "$T/nope" -- true

expect_out "/dev has only the minimal nodes" "fd full null ptmx pts random shm stderr stdin stdout tty urandom zero" \
  run -- sh -c 'echo $(ls /dev)'
expect_rc "there is no /sys" 1 run -- test -e /sys
expect_fail "/proc/sys is read-only" "Read-only file system" run --uid 0 -- sh -c 'echo "|/tmp/x" > /proc/sys/kernel/core_pattern'
if [ -e /proc/sysrq-trigger ]; then
  expect_fail "/proc/sysrq-trigger is read-only" "Read-only file system" run --uid 0 -- sh -c 'echo h > /proc/sysrq-trigger'
else skip "/proc/sysrq-trigger is read-only" "this kernel has no sysrq"; fi
run_fb run -- sh -c 'for f in kcore keys timer_list kallsyms; do test -s /proc/$f && echo VISIBLE $f; done; true'
case "$OUT" in *VISIBLE*) fail "kcore keys timer_list kallsyms are hidden" "$OUT" ;; *) ok "kcore keys timer_list kallsyms are hidden";; esac
expect_fail "/dev is read-only" "Read-only file system" run -- sh -c 'touch /dev/x'
# /proc/acpi and /proc/scsi: covered by an empty read-only directory (a bind
# of one made and removed in the root, no superblock of its own).
for d in acpi scsi; do
  if [ -d "/proc/$d" ]; then
    run_fb run -- sh -c "ls -A /proc/$d; grep -c ' /proc/$d ' /proc/self/mountinfo; mkdir /proc/$d/x 2>/dev/null && echo MADE; ls -A /"
    case "$OUT" in
      1$'\n'*fluebox-empty*|*MADE*) fail "/proc/$d is covered by an empty read-only directory" "$OUT" ;;
      1$'\n'bin*) ok "/proc/$d is covered by an empty read-only directory" ;;
      *) fail "/proc/$d is covered by an empty read-only directory" "$OUT / $ERR" ;;
    esac
  else skip "/proc/$d is covered by an empty read-only directory" "this kernel has no /proc/$d"; fi
done
run_fb run -- sh -c 'grep -E " / | /usr | /workspace | /tmp " /proc/self/mountinfo'
if echo "$OUT" | grep -E " /usr " | grep -q nosuid && echo "$OUT" | grep -E " /usr " | grep -q nodev; then
  ok "system binds are nosuid,nodev"; else fail "system binds are nosuid,nodev" "$OUT"; fi

# --- processes ----------------------------------------------------------------
sleep 60 & hostpid=$!
run_fb run -- sh -c "kill -0 $hostpid 2>&1 && echo SIGNALLED; ls /proc | grep -c '^[0-9]'"
case "$OUT" in *SIGNALLED*) fail "a host process cannot be signalled" ;; *) ok "a host process cannot be signalled";; esac
n=$(echo "$OUT" | tail -1)
[ "${n:-99}" -le 4 ] && ok "only the sandbox's processes are visible ($n)" || fail "only sandbox processes visible" "$n pids"
kill -0 "$hostpid" 2>/dev/null && ok "the host process is still alive" || fail "host process alive"
kill "$hostpid"; wait "$hostpid" 2>/dev/null
expect_out "the command is not pid 1 (init is)" "2" run -- sh -c 'echo $$'

# --- namespaces and forbidden calls -----------------------------------------------
expect_err "unshare(CLONE_NEWUSER) fails" 1 "Operation not permitted" run -- unshare -U true
expect_err "mount fails" 32 "" run --uid 0 -- mount -t tmpfs none /tmp
run_fb run -- python3 -c 'import ctypes; l=ctypes.CDLL(None, use_errno=True); r=l.ptrace(0,0,0,0); print("ptrace", r, ctypes.get_errno())'
case "$OUT" in "ptrace -1 1") ok "ptrace fails with EPERM";; *) fail "ptrace fails with EPERM" "$OUT $ERR";; esac

# --- network ---------------------------------------------------------------------
python3 -c '
import socket, sys, time
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(5)
print(s.getsockname()[1], flush=True)
time.sleep(60)' > "$T/port" & lpid=$!
wait_for 20 test -s "$T/port"
port=$(cat "$T/port")
run_fb run -- python3 -c "
import socket
s = socket.socket(); s.settimeout(2)
try:
    s.connect(('127.0.0.1', $port)); print('CONNECTED')
except OSError as e:
    print('refused', e.errno)"
case "$OUT" in *CONNECTED*) fail "the host's loopback listener is unreachable" ;; refused*) ok "the host's loopback listener is unreachable";; *) fail "host loopback" "$OUT $ERR";; esac
kill "$lpid" 2>/dev/null; wait "$lpid" 2>/dev/null
expect_out "only loopback exists" "lo" run -- sh -c 'ls /proc/sys/net/ipv4/conf | grep -v -e all -e default'

# --- file descriptors and environment ---------------------------------------------
exec 7>"$T/fd7"
run_fb run -- sh -c 'ls /proc/self/fd'
exec 7>&-
case "$(echo $OUT)" in "0 1 2 3") ok "inherited fds beyond 0-2 are closed";; *) fail "inherited fds closed" "$OUT";; esac
export FLUEBOX_LEAK_CANARY=leaked
run_fb run -- env
case "$OUT" in *FLUEBOX_LEAK_CANARY*) fail "the caller's environment does not leak";; *) ok "the caller's environment does not leak";; esac
expect_out "--env sets a variable" "A=1" run --env A=1 -- env
expect_out "--env-pass copies a variable" "FLUEBOX_LEAK_CANARY=leaked" run --env-pass FLUEBOX_LEAK_CANARY -- env
expect_out "HOME is a home of its own, not the workspace" "HOME=/home/fluebox" run -- env
expect_out "the home is in /etc/passwd" "fluebox:x:1000:1000:fluebox sandbox:/home/fluebox:/bin/sh" run -- grep ^fluebox: /etc/passwd
expect_out "--uid 0: HOME is /root" "HOME=/root" run --uid 0 -- env
unset FLUEBOX_LEAK_CANARY

# --- real workloads -------------------------------------------------------------------
expect_out "python3 on PATH runs a real script" "PYOK 3" run --ro-bind "$T:/src" -- python3 /src/workload.py
if [ -x /usr/bin/python3 ]; then
  expect_out "Debian's /usr/bin/python3 runs a real script" "PYOK 3" run --ro-bind "$T:/src" -- /usr/bin/python3 /src/workload.py
fi
if need node "node runs a real script"; then
  expect_out "node runs a real script" 'NODEOK {"v":42,"sub":"sub","len":5}' run --ro-bind "$T:/src" -- node /src/workload.js
fi
expect_out "sh runs a real script" "SHOK 5050 bg 100 100" run --ro-bind "$T:/src" -- sh /src/workload.sh

# --- lifetime -----------------------------------------------------------------------
if [ "$FB_AS" = root ]; then
  "$FB" run -- sh -c 'trap "echo got-term; exit 7" TERM; echo started; sleep 30 & wait' > "$T/sig.out" 2>&1 &
  fbpid=$!
  sig_started() { grep -q started "$T/sig.out" 2>/dev/null; }
  wait_for 20 sig_started
  kill -TERM "$fbpid"; wait "$fbpid"; rc=$?
  if [ "$rc" = 7 ] && grep -q got-term "$T/sig.out"; then ok "SIGTERM to fluebox reaches the command"; else fail "SIGTERM forwarded" "rc=$rc $(cat "$T/sig.out")"; fi

  # A process tree that stopped itself never sees a forwarded SIGTERM or
  # SIGINT: after the grace period (2 s) the sandbox is killed, and fluebox
  # exits as the signal asked (143, 130), the report says why.
  # stopped_cmd: the command (fluebox's grandchild) is stopped.
  stopped_cmd() {
    local init c
    init=$(pgrep -P "$fbpid" | head -1)
    [ -n "$init" ] || return 1
    for c in $(pgrep -P "$init"); do
      grep -q '^State:.*T' "/proc/$c/status" 2>/dev/null && stopped=$c && return 0
    done
    return 1
  }
  for sig in TERM INT; do
    "$FB" run --report "$T/stop-$sig.json" -- sh -c 'kill -STOP $$' >/dev/null 2>&1 &
    fbpid=$!
    stopped=""
    wait_for 10 stopped_cmd
    kill -$sig "$fbpid"; wait "$fbpid"; rc=$?
    want=$([ $sig = TERM ] && echo 143 || echo 130)
    if [ -n "$stopped" ] && [ "$rc" = "$want" ] && python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))
assert r["killed_after_signal"] == "SIG" + sys.argv[2] and r["signal_name"] == "SIGKILL" and r["status"] is None, r' "$T/stop-$sig.json" $sig; then
      ok "a stopped sandbox ends on SIG$sig after the grace period (exit $want, killed_after_signal)"
    else fail "a stopped sandbox ends on SIG$sig" "stopped=$stopped rc=$rc $(cat "$T/stop-$sig.json" 2>/dev/null)"; fi
  done
  # A second signal does not wait for the grace period (no timing assert:
  # the point is that the run ends, with the same code).
  "$FB" run -- sh -c 'trap "" TERM; echo started; while :; do sleep 1; done' > "$T/twice.out" 2>&1 &
  fbpid=$!
  wait_for 10 grep -q started "$T/twice.out"
  kill -TERM "$fbpid"; kill -TERM "$fbpid"; wait "$fbpid"; rc=$?
  [ "$rc" = 143 ] && ok "a command that ignores SIGTERM is killed (exit 143)" || fail "ignored SIGTERM" "rc=$rc"
  expect_err "a command's own death by SIGTERM is not a kill after the grace period" 143 '"killed_after_signal":null' \
    run --report - -- sh -c 'kill -TERM $$'

  mark="300.$$"   # a sleep only this test starts
  "$FB" run -- sh -c "echo started; sleep $mark" > "$T/kill.out" 2>&1 &
  fbpid=$!
  kill_started() { grep -q started "$T/kill.out" 2>/dev/null; }
  wait_for 20 kill_started
  kill -KILL "$fbpid"; wait "$fbpid" 2>/dev/null
  # The next run, started at once while the sandbox is still dying, sweeps
  # what the SIGKILLed fluebox could not remove (its cgroups). Without
  # waiting for the sandbox's tasks to leave, 6 of 30 such runs left them.
  "$FB" run -- true
  left=$(own_fluebox_cgroups | grep "/fluebox-$fbpid-" | tr '\n' ' ')
  [ -z "$left" ] && ok "the next run removes a SIGKILLed fluebox's cgroups, even while its sandbox is dying" \
    || fail "cgroups of a SIGKILLed fluebox" "left after the next run: $left"
  # The sandbox dies with its supervisor: give it the time to go.
  sandbox_gone() { ! pgrep -f "sleep $mark" >/dev/null; }
  wait_for 10 sandbox_gone
  if pgrep -f "sleep $mark" >/dev/null; then fail "killing fluebox kills the sandbox" "$(pgrep -af "sleep $mark")"; else ok "killing fluebox kills the sandbox"; fi
fi
no_leftovers "nothing left behind after the core tests"
