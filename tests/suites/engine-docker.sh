#!/bin/bash
# timeout: 300
# tests/suites/engine-docker.sh — Docker's own path: Debian's dockerd with
# `--add-runtime fluebox=<a fluebox-oci link>` and its docker CLI (the
# package's /usr/bin/docker, whatever else is on PATH), `docker run
# --runtime fluebox` against `--runtime runc`, scenario by scenario: run and
# its exit code, a missing command (127), -d + exec, -it (a pty), stop
# (SIGTERM to pid 1, trapped; clean logs), kill of a stopped container,
# --memory (a limit read inside; an overrun is 137), --pids-limit,
# --read-only, --user, a volume, and the sysctl
# Docker puts in every spec (net.ipv4.ping_group_range). (Docker 20.10's
# run has no --annotation: engine-podman and engine-cri carry large ones.)
#
# Private: dockerd (and the containerd it starts) with their own config
# file, data root, exec root and socket under a scratch directory, in a new
# mount namespace with a tmpfs on /run and a new pid namespace; no bridge,
# no iptables (every container runs with --network none: loopback only);
# the image is imported from a busybox-static root (no registry); cgroups
# under /fbdock-<scratch>. dockerd is stopped at the end (by its pid).
# Runs in the runner's side lane (tests/run.sh). Needs root.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}
DOCKER=${FB_DOCKER_CLI:-/usr/bin/docker}

# shellcheck source=../oci/engine.sh
. "$ROOT/tests/oci/engine.sh"
engine_suite engine-docker "Docker scenarios"

[ "$(id -u)" = 0 ] || skip_all "needs root"
# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
# shellcheck source=../oci/containerd.sh
. "$ROOT/tests/oci/containerd.sh"
oci_kernel_ok || skip_all "$OCI_KERNEL_WHY"
missing=$(ctd_missing dockerd containerd runc busybox unshare script python3)
[ -x "$DOCKER" ] || missing="$missing docker.io's docker ($DOCKER)"
[ -z "$missing" ] || skip_all "missing: $missing"

if [ "${1:-}" != --inner ]; then
    T=$(mktemp -d /tmp/fbdock.XXXXXX)
    trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/bin"
    cp "$FB" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"
    T="$T" ROOT="$ROOT" ctd_private "$0" --inner
    rc=$?
    left=""
    for d in /sys/fs/cgroup/*/"fbdock-${T##*.}" /sys/fs/cgroup/"fbdock-${T##*.}"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/; do [ -d "$c" ] && left="$left $c"; done
        rmdir "$d" 2>/dev/null
    done
    if [ -z "$left" ]; then ok "no container cgroup left after the suite"; else fail "cgroups left" "$left"; fi
    echo "# end of suite"
    exit $rc
fi

# ---- inside: private mounts, pid namespace ----
mount -t tmpfs -o mode=0755 tmpfs /run || { fail "a private /run"; exit 1; }
CG=/fbdock-${T##*.}
mkdir -p "$T/vol" && chmod 1777 "$T/vol" # see engine-podman: a volume the container's ids may write
echo '{}' >"$T/daemon.json"
dockerd --config-file "$T/daemon.json" --data-root "$T/data" --exec-root "$T/exec" \
    --pidfile "$T/dockerd.pid" -H "unix://$T/docker.sock" --bridge none --iptables=false \
    --ip6tables=false --ip-masq=false --userland-proxy=false --storage-driver overlay2 \
    --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "$CG" \
    --add-runtime "fluebox=$T/bin/fluebox-oci" >"$T/dockerd.log" 2>&1 &
DPID=$!
D=("$DOCKER" -H "unix://$T/docker.sock")
for _ in $(seq 600); do
    "${D[@]}" version >/dev/null 2>&1 && break
    kill -0 "$DPID" 2>/dev/null || break
    sleep 0.1
done
stop_dockerd() {
    kill "$DPID" 2>/dev/null
    wait "$DPID" 2>/dev/null
}
if ! "${D[@]}" version >/dev/null 2>&1; then
    fail "dockerd starts" "$(tail -n 5 "$T/dockerd.log")"
    stop_dockerd
    exit 1
fi
IMG=fbbusybox:1
if python3 "$ROOT/tests/oci/mkimage.py" --rootfs "$T/rootfs.tar" &&
    "${D[@]}" import -c 'CMD ["/bin/sh"]' -c 'ENV PATH=/usr/sbin:/usr/bin:/sbin:/bin' "$T/rootfs.tar" "$IMG" >/dev/null 2>"$T/err"; then
    ok "an image imported from a busybox-static root"
else
    fail "image import" "$(cat "$T/err")"
    stop_dockerd
    exit 1
fi

declare -A R
for rt in runc fluebox; do
    run() { timeout 60 "${D[@]}" run --rm --network none --runtime "$rt" "$@" 2>"$T/err"; }
    run "$IMG" sh -c 'echo hi; exit 5' >"$T/out"
    R[exit:$rt]="$? $(cat "$T/out")"
    run "$IMG" /no/such/cmd >/dev/null
    R[nocmd:$rt]=$?
    R[mem:$rt]=$(run --memory 64m "$IMG" sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max')
    # An overrun: the kernel's OOM killer, 137.
    run --memory 32m --memory-swap 32m "$IMG" sh -c 'x=y; while :; do x=$x$x; done' >/dev/null
    R[oom:$rt]=$?
    R[pids:$rt]=$(run --pids-limit 50 "$IMG" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max')
    run --read-only "$IMG" sh -c 'touch /x' >/dev/null
    R[ro:$rt]="$? $(grep -c 'Read-only file system' "$T/err")"
    R[user:$rt]=$(run --user 1000:1000 "$IMG" sh -c 'id -u; id -g' | tr '\n' ' ')
    rm -f "$T/vol/f"
    R[vol:$rt]="$(run -v "$T/vol:/data" "$IMG" sh -c 'echo from-$((6*7)) > /data/f; cat /data/f') $(cat "$T/vol/f" 2>/dev/null)"
    # Docker puts net.ipv4.ping_group_range=0 2147483647 in every spec.
    R[ping:$rt]=$(run "$IMG" cat /proc/sys/net/ipv4/ping_group_range | tr -s ' \t' ' ')
    # -it: a pty (script(1) gives the CLI a terminal).
    SHELL=/bin/sh script -qec "timeout --foreground -k 5 60 ${D[*]} run --rm -it --network none --runtime $rt $IMG sh -c 'tty; exit 4'" "$T/$rt-tty.out" >/dev/null 2>&1
    R[tty:$rt]="$(grep -c '/dev/pts/' "$T/$rt-tty.out") $(sed -n 's/.*COMMAND_EXIT_CODE="\([0-9]*\)".*/\1/p' "$T/$rt-tty.out")"

    # -d, exec, stop (a trapped SIGTERM to pid 1), logs, kill when stopped.
    "${D[@]}" run -d --network none --runtime "$rt" --name "$rt-d" "$IMG" \
        sh -c 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.1; done' >/dev/null 2>"$T/err"
    for _ in $(seq 300); do "${D[@]}" logs "$rt-d" 2>/dev/null | grep -q ready && break; sleep 0.1; done
    "${D[@]}" exec "$rt-d" sh -c 'exit 7'
    R[exec:$rt]=$?
    R[execout:$rt]=$("${D[@]}" exec "$rt-d" sh -c 'echo exec-$((6*7))' 2>&1)
    "${D[@]}" stop -t 10 "$rt-d" >/dev/null 2>&1
    R[stop:$rt]="$? $("${D[@]}" inspect -f '{{.State.ExitCode}}' "$rt-d" 2>&1)"
    R[logs:$rt]=$("${D[@]}" logs "$rt-d" 2>&1 | tr '\n' ' ')
    "${D[@]}" kill "$rt-d" >/dev/null 2>&1
    R[kill:$rt]=$?
    "${D[@]}" rm -f "$rt-d" >/dev/null 2>&1
done

same "run: exit status and output" exit "5 hi"
same "a missing command: 127" nocmd 127
same "--memory 64m as the container reads it" mem 67108864
same "--memory 32m overrun: 137" oom 137
same "--pids-limit 50 as the container reads it" pids 50
same "--read-only: a write fails" ro "1 1"
same "--user 1000:1000" user "1000 1000 "
same "a volume: written inside, seen on the host" vol "from-42 from-42"
same "-it: a pty, exit 4" tty "1 4"
same "exec's exit status" exec 7
same "exec's output" execout exec-42
same "stop: SIGTERM to pid 1, trapped, exit 0" stop "0 0"
same "logs after stop (no extra line)" logs "ready got-term "
same "kill of a stopped container" kill
if [ "${R[ping:runc]}" = "0 2147483647" ] && [ "${R[ping:fluebox]}" = "0 65535" ]; then
    ok "Docker's ping_group_range: runc 0 2147483647, fluebox 0 65535 (every mapped group; docs/oci.md)"
else
    fail "Docker's ping_group_range" "runc: ${R[ping:runc]}; fluebox: ${R[ping:fluebox]}"
fi

left=$("${D[@]}" ps -aq 2>/dev/null)
stop_dockerd
procs=""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = $BASHPID ] && continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in bash | cat) ;; *) procs="$procs $pid:$comm" ;; esac
done
if [ -z "$left" ] && [ -z "$procs" ]; then
    ok "no container or process left once dockerd stopped (containerd, shims, supervisors)"
else
    fail "left behind" "containers: $left; processes: $procs"
fi
exit 0
