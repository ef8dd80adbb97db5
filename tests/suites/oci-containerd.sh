#!/bin/bash
# timeout: 600
# tests/suites/oci-containerd.sh — fluebox as containerd's runtime.
#
# containerd (Debian's, with its runc shim io.containerd.runc.v2) runs
# privately: its own config, root, state and socket under a scratch
# directory, inside a new mount namespace with a tmpfs on /run (the shim and
# ctr keep their sockets and fifos under /run/containerd: nothing of it
# reaches the host's /run) and a new pid namespace (when the suite ends,
# whatever it started ends with it). An OCI image is built from the host's
# busybox-static (tests/oci/mkimage.py) and imported with ctr. Every
# scenario runs with runc and with fluebox (ctr --runc-binary, a link named
# fluebox-oci) and the outcomes are compared: the exit status passed
# through, a trapped SIGTERM, kill --all, exec, ps, a terminal (under
# script(1)), a missing command's error, a memory limit in the metrics, a
# container's view of its own identity; afterwards nothing of it is left
# (state directories, cgroups, processes). Needs root.
#
# Prints "ok - ..." / "not ok - ..." lines and "# end of suite".
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}

ok() { echo "ok - oci-containerd: $1"; }
fail() { echo "not ok - oci-containerd: $1${2:+: $2}"; }
skip() { echo "ok - oci-containerd: $1 # SKIP $2"; }

if [ "$(id -u)" != 0 ]; then
    skip "containerd scenarios" "needs root"
    echo "# end of suite"
    exit 0
fi
# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
# shellcheck source=../oci/containerd.sh
. "$ROOT/tests/oci/containerd.sh"
if ! oci_kernel_ok; then
    skip "containerd scenarios" "$OCI_KERNEL_WHY"
    echo "# end of suite"
    exit 0
fi
missing=$(ctd_missing containerd ctr runc containerd-shim-runc-v2 busybox script unshare python3)
if [ -n "$missing" ]; then
    skip "containerd scenarios" "missing:$missing"
    echo "# end of suite"
    exit 0
fi

# The inner part runs in the new namespaces (see the end of this file).
if [ "${1:-}" != --inner ]; then
    T=$(mktemp -d /tmp/fboci.XXXXXX)
    trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/bin"
    cp "$FB" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"
    # Everything in one pid namespace whose init is this script: when it
    # ends, the kernel kills what is left (shims, containers, supervisors).
    T="$T" FB="$T/bin/fluebox" ROOT="$ROOT" ctd_private "$0" --inner
    rc=$?
    # Cgroups the scenarios made live under /fboci-<scratch>/ in every
    # hierarchy; after the suite only empty ones may be left (removed here).
    left=""
    for d in /sys/fs/cgroup/*/"fboci-${T##*.}" /sys/fs/cgroup/"fboci-${T##*.}"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/; do
            [ -d "$c" ] && left="$left $c"
        done
        rmdir "$d" 2>/dev/null
    done
    if [ -z "$left" ]; then ok "no container cgroup left after the suite"; else fail "cgroups left" "$left"; rmdir $left 2>/dev/null; fi
    echo "# end of suite"
    exit $rc
fi

# ---- inside: private mounts, pid namespace ----
CG=/fboci-${T##*.}
if ! ctd_start "$T/ctd"; then
    fail "containerd starts" "$CTD_WHY"
    exit 1
fi
C=("${CTD[@]}")
IMG=docker.io/library/fbbusybox:1
if python3 "$ROOT/tests/oci/mkimage.py" "$T/img.tar" "$IMG" && "${C[@]}" images import "$T/img.tar" >/dev/null; then
    ok "an OCI image built from busybox-static imports"
else
    fail "image import"
    exit 1
fi

rtflags() { # runtime -> ctr flags
    [ "$1" = fluebox ] && echo "--runc-binary $T/bin/fluebox-oci"
}

# run_case RT ID ARGS... : ctr run --rm, stdout+stderr in $OUT, status in $RC
run_case() {
    local rt=$1 id=$2
    shift 2
    # shellcheck disable=SC2046 # the flags split on purpose
    OUT=$(timeout 60 "${C[@]}" run --rm --cgroup "$CG/$rt-$id" $(rtflags "$rt") "$IMG" "$rt-$id" "$@" 2>&1)
    RC=$?
}

declare -A R # scenario:runtime -> outcome
for rt in runc fluebox; do
    run_case "$rt" exit5 sh -c 'exit 5'
    R[exit:$rt]=$RC

    # A trapped SIGTERM: the container says "ready" once the trap is set.
    # shellcheck disable=SC2046
    timeout 60 "${C[@]}" run --rm --cgroup "$CG/$rt-term" $(rtflags "$rt") "$IMG" "$rt-term" \
        sh -c 'trap "exit 3" TERM; echo ready; while :; do sleep 0.1; done' >"$T/$rt-term.out" 2>&1 &
    : >>"$T/$rt-term.out"
    p=$!
    for _ in $(seq 300); do grep -q ready "$T/$rt-term.out" && break; sleep 0.1; done
    "${C[@]}" task kill -s SIGTERM "$rt-term" >/dev/null 2>&1
    wait $p
    R[term:$rt]=$?

    # kill --all SIGKILL, with a second process in the container; exec; ps.
    # shellcheck disable=SC2046
    timeout 60 "${C[@]}" run --rm --cgroup "$CG/$rt-all" $(rtflags "$rt") "$IMG" "$rt-all" \
        sh -c 'sleep 1000 & echo ready; wait' >"$T/$rt-all.out" 2>&1 &
    : >>"$T/$rt-all.out"
    p=$!
    for _ in $(seq 300); do grep -q ready "$T/$rt-all.out" && break; sleep 0.1; done
    "${C[@]}" task exec --exec-id e1 "$rt-all" sh -c 'exit 7' >/dev/null 2>&1
    R[exec:$rt]=$?
    R[execout:$rt]=$("${C[@]}" task exec --exec-id e2 "$rt-all" sh -c 'echo exec-$((6*7))' 2>&1)
    R[ps:$rt]=$("${C[@]}" task ps "$rt-all" 2>/dev/null | awk 'NR > 1' | wc -l)
    # script(1) runs its command with $SHELL -c, and GNU timeout puts what it
    # runs in a process group of its own: not the pty's foreground group, so
    # ctr setting the terminal's mode would be stopped (SIGTTOU) and hang —
    # seen where SHELL is unset (sh). --foreground keeps ctr in the
    # foreground group; SHELL is fixed so the same shell runs everywhere.
    SHELL=/bin/sh script -qec "timeout --foreground -k 5 60 ${C[*]} task exec -t --exec-id e3 $rt-all sh -c 'tty; exit 6'" "$T/$rt-etty.out" >/dev/null 2>&1
    R[etty:$rt]="$(grep -c '/dev/pts/' "$T/$rt-etty.out") $(sed -n 's/.*COMMAND_EXIT_CODE="\([0-9]*\)".*/\1/p' "$T/$rt-etty.out")"
    "${C[@]}" task kill -a -s SIGKILL "$rt-all" >/dev/null 2>&1
    wait $p
    R[killall:$rt]=$?

    # A terminal: ctr run -t under script(1), which gives ctr a pty.
    SHELL=/bin/sh script -qec "timeout --foreground -k 5 60 ${C[*]} run --rm -t --cgroup $CG/$rt-tty $(rtflags "$rt") $IMG $rt-tty sh -c 'tty; exit 4'" \
        "$T/$rt-tty.out" >/dev/null 2>&1
    R[tty:$rt]="$(grep -c '/dev/pts/' "$T/$rt-tty.out") $(sed -n 's/.*COMMAND_EXIT_CODE="\([0-9]*\)".*/\1/p' "$T/$rt-tty.out")"

    # A command that is not there: the runtime's error reaches ctr.
    run_case "$rt" nocmd /no/such/command
    R[nocmd:$rt]="$RC $(printf %s "$OUT" | grep -ci 'stat /no/such/command: no such file or directory')"

    # A memory limit, as `ctr task metrics` reads it from the cgroup.
    # shellcheck disable=SC2046
    "${C[@]}" run -d --memory-limit 67108864 --cgroup "$CG/$rt-mem" $(rtflags "$rt") "$IMG" "$rt-mem" sleep 1000 >/dev/null 2>&1
    R[mem:$rt]=$("${C[@]}" task metrics "$rt-mem" 2>/dev/null | awk '$1 ~ /memory.limit_in_bytes|memory.limit$/ {print $2}' | head -n 1)
    "${C[@]}" task kill -s SIGKILL "$rt-mem" >/dev/null 2>&1
    for _ in $(seq 300); do "${C[@]}" task ls 2>/dev/null | grep -q "^$rt-mem .*RUNNING" || break; sleep 0.1; done
    "${C[@]}" task delete "$rt-mem" >/dev/null 2>&1
    "${C[@]}" container delete "$rt-mem" >/dev/null 2>&1

    # What the container's root is on the host: runc's is host root;
    # fluebox's is an unprivileged id, and its user namespace maps no host 0.
    run_case "$rt" ids sh -c 'id -u; cat /proc/self/uid_map'
    R[ids:$rt]=$OUT
done

same() { # NAME KEY WANT
    local name=$1 key=$2 want=$3
    if [ "${R[$key:runc]}" = "$want" ] && [ "${R[$key:fluebox]}" = "$want" ]; then
        ok "$name (runc and fluebox: $want)"
    else
        fail "$name" "want $want; runc: ${R[$key:runc]}; fluebox: ${R[$key:fluebox]}"
    fi
}
same "exit status 5 passed through" exit 5
same "SIGTERM trapped -> 3" term 3
same "kill --all SIGKILL -> 137" killall 137
same "exec with its own exit code" exec 7
same "exec's output" execout exec-42
same "a terminal: tty is a pty, exit 4" tty "1 4"
same "exec with a terminal: a pty, exit 6" etty "1 6"
same "a missing command: ctr fails with the runtime's error" nocmd "1 1"
same "memory limit in ctr task metrics" mem 67108864
if [ "${R[ps:runc]}" -ge 2 ] && [ "${R[ps:fluebox]}" -ge 2 ]; then
    ok "ctr task ps lists the container's processes (runc ${R[ps:runc]}, fluebox ${R[ps:fluebox]}: its own init too)"
else
    fail "ctr task ps" "runc ${R[ps:runc]}, fluebox ${R[ps:fluebox]}"
fi
read -r -a map <<<"$(sed -n 2p <<<"${R[ids:fluebox]}")"
if [ "$(head -n 1 <<<"${R[ids:fluebox]}")" = 0 ] && [ "${map[0]:-}" = 0 ] &&
    [ "${map[1]:-0}" -gt 0 ] && [ "${map[2]:-}" = 65536 ]; then
    ok "fluebox: root inside is host id ${map[1]}, 65536 ids mapped, never host root"
else
    fail "fluebox's identity inside" "${R[ids:fluebox]}"
fi

# Nothing left: no task, no container, no runtime state.
left=$("${C[@]}" task ls -q 2>/dev/null; "${C[@]}" container ls -q 2>/dev/null)
state=$(ls /run/containerd/runc/default 2>/dev/null)
if [ -z "$left" ] && [ -z "$state" ]; then
    ok "no task, container or runtime state left"
else
    fail "left behind" "tasks/containers: $left; state: $state"
fi
# No process left in this pid namespace but containerd and this script:
# no shim, supervisor, init or container process.
procs=""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = $BASHPID ] && continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in containerd | bash | cat) ;; *) procs="$procs $pid:$comm" ;; esac
done
if [ -z "$procs" ]; then ok "no process left (shims, supervisors, containers)"; else fail "processes left" "$procs"; fi
