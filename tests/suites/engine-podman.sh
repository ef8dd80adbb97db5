#!/bin/bash
# timeout: 300
# tests/suites/engine-podman.sh — Podman's own path (root): `podman run
# --runtime fluebox` against `--runtime runc`, scenario by scenario: run
# and its exit code, a missing command (127), -d + exec, stop (SIGTERM to
# pid 1, trapped; clean logs), kill of a stopped container,
# --memory and --pids-limit as the container reads them (an overrun: 137), --read-only, --user, a volume,
# a large annotation, Podman's default sysctl (ping_group_range).
#
# Private: its own containers.conf, storage (overlay) and run directories
# under a scratch directory, in a new mount namespace with a tmpfs on /run
# and a new pid namespace (conmon and whatever else it started end with
# it); network "none" (loopback only). Not -it: under script(1) podman's
# attach loses a short command's output now and then, with runc too (-it is
# in engine-docker); the image is built from
# busybox-static and loaded (no registry); cgroups under /fbpod-<scratch>.
# Runs in the runner's side lane (tests/run.sh). Needs root.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}

# shellcheck source=../oci/engine.sh
. "$ROOT/tests/oci/engine.sh"
engine_suite engine-podman "Podman scenarios"

[ "$(id -u)" = 0 ] || skip_all "needs root"
# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
# shellcheck source=../oci/containerd.sh
. "$ROOT/tests/oci/containerd.sh"
oci_kernel_ok || skip_all "$OCI_KERNEL_WHY"
missing=$(ctd_missing podman conmon runc busybox unshare python3)
[ -z "$missing" ] || skip_all "missing: $missing"

if [ "${1:-}" != --inner ]; then
    T=$(mktemp -d /tmp/fbpod.XXXXXX)
    trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/bin"
    cp "$FB" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"
    T="$T" ROOT="$ROOT" ctd_private "$0" --inner
    rc=$?
    # Overlay mounts of the storage were in the private mount namespace.
    left=""
    for d in /sys/fs/cgroup/*/"fbpod-${T##*.}" /sys/fs/cgroup/"fbpod-${T##*.}"; do
        [ -d "$d" ] || continue
        # Podman's own "conmon" cgroup below the parent (with either
        # runtime) goes once empty; a container's would be left.
        for c in "$d"/*/*/; do
            [ -d "$c" ] || continue
            case "$c" in */conmon/) rmdir "$c" 2>/dev/null || left="$left $c" ;; *) left="$left $c" ;; esac
        done
        for c in "$d"/*/; do rmdir "$c" 2>/dev/null; done
        rmdir "$d" 2>/dev/null
    done
    if [ -z "$left" ]; then ok "no container cgroup left after the suite"; else fail "cgroups left" "$left"; fi
    echo "# end of suite"
    exit $rc
fi

# ---- inside: private mounts, pid namespace ----
mount -t tmpfs -o mode=0755 tmpfs /run || { fail "a private /run"; exit 1; }
CG=/fbpod-${T##*.}
mkdir -p "$T/tmp" "$T/vol"
# A volume the container's ids may write: fluebox's root inside is an
# unprivileged host id (docs/oci.md), so a directory only host root may
# write stays read-only to it, by design.
chmod 1777 "$T/vol"
cat >"$T/containers.conf" <<EOC
[containers]
netns = "none"
[engine]
cgroup_manager = "cgroupfs"
events_logger = "none"
runtime = "runc"
static_dir = "$T/libpod"
volume_path = "$T/volumes"
tmp_dir = "$T/tmp"
[engine.runtimes]
fluebox = ["$T/bin/fluebox-oci"]
EOC
cat >"$T/storage.conf" <<EOC
[storage]
driver = "overlay"
graphroot = "$T/storage"
runroot = "$T/runroot"
EOC
echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$T/policy.json"
export CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf"
export CONTAINERS_REGISTRIES_CONF="$T/registries.conf"
: >"$T/registries.conf"
P=(podman --root "$T/storage" --runroot "$T/runroot" --tmpdir "$T/tmp")
IMG=localhost/fbbusybox:1
if python3 "$ROOT/tests/oci/mkimage.py" "$T/img.tar" "$IMG" &&
    "${P[@]}" load --signature-policy "$T/policy.json" -i "$T/img.tar" >"$T/load.log" 2>&1; then
    ok "an OCI image built from busybox-static loads"
else
    fail "image load" "$(tail -n 3 "$T/load.log")"
    exit 1
fi

declare -A R
BIG=$(head -c 100000 /dev/zero | tr '\0' x)
for rt in runc fluebox; do
    run() { timeout 60 "${P[@]}" run --rm --runtime "$rt" --cgroup-parent "$CG/$rt" "$@" 2>"$T/err"; }
    run "$IMG" sh -c 'echo hi; exit 5' >"$T/out"
    R[exit:$rt]="$? $(cat "$T/out")"
    run "$IMG" /no/such/cmd >/dev/null
    R[nocmd:$rt]=$?
    R[mem:$rt]=$(run --memory 64m "$IMG" sh -c 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max')
    run --memory 32m --memory-swap 32m "$IMG" sh -c 'x=y; while :; do x=$x$x; done' >/dev/null
    R[oom:$rt]=$?
    R[pids:$rt]=$(run --pids-limit 50 "$IMG" sh -c 'cat /sys/fs/cgroup/pids/pids.max 2>/dev/null || cat /sys/fs/cgroup/pids.max')
    run --read-only "$IMG" sh -c 'touch /x' >/dev/null
    R[ro:$rt]="$? $(grep -c 'Read-only file system' "$T/err")"
    R[user:$rt]=$(run --user 1000:1000 "$IMG" sh -c 'id -u; id -g')
    R[user:$rt]=${R[user:$rt]//$'\n'/ }
    rm -f "$T/vol/f"
    R[vol:$rt]="$(run -v "$T/vol:/data" "$IMG" sh -c 'echo from-$((6*7)) > /data/f; cat /data/f') $(cat "$T/vol/f" 2>/dev/null)"
    R[ann:$rt]=$(run --annotation "fbtest.big=$BIG" "$IMG" sh -c 'echo big-ok')
    # The sysctl Docker puts in every spec: runc writes it as given; fluebox
    # cuts it at the last group mapped (docs/oci.md): both create.
    R[ping:$rt]=$(run --sysctl 'net.ipv4.ping_group_range=0 2147483647' "$IMG" cat /proc/sys/net/ipv4/ping_group_range | tr -s ' \t' ' ')
    R[pingrc:$rt]=$?

    # -d, exec, stop (a trapped SIGTERM to pid 1), logs, kill when stopped.
    id=$("${P[@]}" run -d --runtime "$rt" --cgroup-parent "$CG/$rt" --name "$rt-d" "$IMG" \
        sh -c 'trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.1; done' 2>"$T/err")
    for _ in $(seq 300); do "${P[@]}" logs "$rt-d" 2>/dev/null | grep -q ready && break; sleep 0.1; done
    "${P[@]}" exec "$rt-d" sh -c 'exit 7'
    R[exec:$rt]=$?
    R[execout:$rt]=$("${P[@]}" exec "$rt-d" sh -c 'echo exec-$((6*7))' 2>&1)
    "${P[@]}" stop -t 10 "$rt-d" >/dev/null 2>&1
    R[stop:$rt]="$? $("${P[@]}" inspect -f '{{.State.ExitCode}}' "$rt-d" 2>&1)"
    R[logs:$rt]=$("${P[@]}" logs "$rt-d" 2>&1 | tr '\n' ' ')
    "${P[@]}" kill "$rt-d" >/dev/null 2>&1
    R[kill:$rt]=$?
    "${P[@]}" rm -f "$rt-d" >/dev/null 2>&1
    [ -n "$id" ] || R[exec:$rt]="no container: $(cat "$T/err")"
done

same "run: exit status and output" exit "5 hi"
same "a missing command: 127" nocmd 127
same "--memory 64m as the container reads it" mem 67108864
same "--memory 32m overrun: 137" oom 137
same "--pids-limit 50 as the container reads it" pids 50
same "--read-only: a write fails" ro "1 1"
same "--user 1000:1000" user "1000 1000"
same "a volume: written inside, seen on the host" vol "from-42 from-42"
same "a 100 KB annotation" ann big-ok
same "Docker's net.ipv4.ping_group_range=0 2147483647: the container runs" pingrc 0
if [ "${R[ping:runc]}" = "0 2147483647" ] && [ "${R[ping:fluebox]}" = "0 65535" ]; then
    ok "ping_group_range read inside: runc 0 2147483647, fluebox 0 65535 (every mapped group)"
else
    fail "ping_group_range read inside" "runc: ${R[ping:runc]}; fluebox: ${R[ping:fluebox]}"
fi
same "exec's exit status" exec 7
same "exec's output" execout exec-42
same "stop: SIGTERM to pid 1, trapped, exit 0" stop "0 0"
same "logs after stop (no extra line)" logs "ready got-term "
same "kill of a stopped container" kill

left=$("${P[@]}" ps -aq 2>/dev/null)
procs=""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = $BASHPID ] && continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in bash | cat | ls | grep | head) ;; *) procs="$procs $pid:$comm" ;; esac
done
if [ -z "$left" ] && [ -z "$procs" ]; then
    ok "no container or process left (conmon, supervisors)"
else
    fail "left behind" "containers: $left; processes: $procs"
fi
"${P[@]}" rmi -a -f >/dev/null 2>&1
exit 0
