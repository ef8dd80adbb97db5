#!/usr/bin/env bash
# bench/engines.sh — the "engines" row group of `make bench` (bench/run.sh):
# a container's whole life through each engine, `docker run --rm` (Debian's
# dockerd with --add-runtime) and `podman run --rm`, with runc and with
# fluebox as the runtime, interleaved (fbbench time), medians and ratios to
# runc through the same engine.
#
# Usage (from bench/run.sh): engines.sh FBBENCH FLUEBOX REPS JSONL MD
# Runs privately as the engine suites do (tests/suites/engine-*.sh): a new
# mount namespace with a tmpfs on /run and a new pid namespace (the daemons
# it starts end with it), each engine's config, state and socket under a
# scratch directory, --network none, an image built from busybox-static.
# Needs root; prints a reason and exits 0 when an engine is missing.
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
FBBENCH=$1 FLUEBOX=$2 REPS=$3 JSONL=$4 MD=$5
if [ "${6:-}" != --inner ]; then
    T=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-eng.XXXXXX")
    mkdir -p "$T/bin" && cp "$FLUEBOX" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"
    T=$T unshare --mount --pid --fork --mount-proc --propagation private bash "$0" "$@" --inner
    rc=$?
    for d in /sys/fs/cgroup/*/"fbbench-${T##*.}" /sys/fs/cgroup/"fbbench-${T##*.}"; do
        [ -d "$d" ] || continue
        find "$d" -depth -mindepth 1 -type d -exec rmdir {} + 2>/dev/null
        rmdir "$d" 2>/dev/null
    done
    rm -rf "$T"
    exit $rc
fi
mount -t tmpfs -o mode=0755 tmpfs /run || exit 1
CG=/fbbench-${T##*.}
V=()
NOTE="Each round: the engine's CLI runs \`true\` in a new container from a busybox-static image and removes it (--rm), --network none."

# Docker: Debian's dockerd and its own CLI (/usr/bin/docker).
DPID=""
if command -v dockerd >/dev/null && [ -x /usr/bin/docker ]; then
    echo '{}' >"$T/daemon.json"
    dockerd --config-file "$T/daemon.json" --data-root "$T/data" --exec-root "$T/exec" \
        --pidfile "$T/dockerd.pid" -H "unix://$T/docker.sock" --bridge none --iptables=false \
        --ip6tables=false --ip-masq=false --storage-driver overlay2 \
        --exec-opt native.cgroupdriver=cgroupfs --cgroup-parent "$CG/docker" \
        --add-runtime "fluebox=$T/bin/fluebox-oci" >"$T/dockerd.log" 2>&1 &
    DPID=$!
    D=(/usr/bin/docker -H "unix://$T/docker.sock")
    for _ in $(seq 600); do "${D[@]}" version >/dev/null 2>&1 && break; sleep 0.1; done
    if python3 "$ROOT/tests/oci/mkimage.py" --rootfs "$T/rootfs.tar" &&
        "${D[@]}" import -c 'CMD ["/bin/sh"]' "$T/rootfs.tar" fbbusybox:1 >/dev/null 2>&1; then
        for rt in runc fluebox; do
            V+=("@docker-$rt" "${D[@]}" run --rm --network none --runtime "$rt" fbbusybox:1 /bin/true)
        done
    else
        echo "bench: engines: dockerd did not start: $(tail -n 1 "$T/dockerd.log")" >&2
    fi
fi
# Podman (root), its own storage and containers.conf.
if command -v podman >/dev/null; then
    mkdir -p "$T/ptmp"
    printf '[containers]\nnetns = "none"\n[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "none"\nstatic_dir = "%s"\ntmp_dir = "%s"\n[engine.runtimes]\nfluebox = ["%s"]\n' \
        "$T/libpod" "$T/ptmp" "$T/bin/fluebox-oci" >"$T/containers.conf"
    printf '[storage]\ndriver = "overlay"\ngraphroot = "%s"\nrunroot = "%s"\n' "$T/pstore" "$T/prun" >"$T/storage.conf"
    echo '{"default": [{"type": "insecureAcceptAnything"}]}' >"$T/policy.json"
    : >"$T/registries.conf"
    export CONTAINERS_CONF="$T/containers.conf" CONTAINERS_STORAGE_CONF="$T/storage.conf" CONTAINERS_REGISTRIES_CONF="$T/registries.conf"
    P=(podman --root "$T/pstore" --runroot "$T/prun" --tmpdir "$T/ptmp")
    if python3 "$ROOT/tests/oci/mkimage.py" "$T/img.tar" localhost/fbbusybox:1 &&
        "${P[@]}" load --signature-policy "$T/policy.json" -i "$T/img.tar" >/dev/null 2>&1; then
        for rt in runc fluebox; do
            V+=("@podman-$rt" "${P[@]}" run --rm --runtime "$rt" --cgroup-parent "$CG/podman" localhost/fbbusybox:1 /bin/true)
        done
    fi
fi
rc=0
if [ ${#V[@]} -gt 0 ]; then
    "$FBBENCH" time --title "engines: a container's life (run --rm true) through Docker and Podman" \
        --json "$JSONL" --md "$MD" --baseline docker-runc --baseline podman-runc \
        --reps "$REPS" --warmup 2 --note "$NOTE" "${V[@]}" || rc=1
else
    echo "bench: engines: neither Docker nor Podman is here" >&2
    rc=2
fi
[ -n "$DPID" ] && { kill "$DPID"; wait "$DPID" 2>/dev/null; }
exit $rc
