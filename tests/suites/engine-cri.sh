#!/bin/bash
# timeout: 300
# tests/suites/engine-cri.sh — Kubernetes' path: containerd's CRI plugin
# driven as the kubelet drives it (tests/cri/cri.mjs over the CRI API
# definition, ../shared/cri/api.proto beside the checkout, read at test
# time), with the runtime handlers "runc" and "fluebox" (the runc shim with
# BinaryName a fluebox-oci link), scenario by scenario compared; and a pod
# annotated run.fluebox.allow-net, whose containers reach the allowed name
# (a server on the host's loopback) and nothing else.
#
# Private, as oci-containerd: containerd with its CRI plugin runs with its own
# config, root, state and socket under a scratch directory, in a new mount
# namespace with a tmpfs on /run (the pods' network namespaces, the shims'
# sockets) and a new pid namespace (what it started ends with it); the pod
# network is a fake CNI plugin (tests/cri/fbcni: a dummy interface inside the
# pod, nothing on the host); the images are built from busybox-static and
# imported (no registry); the pods' cgroups live under /fbcri-<scratch>.
# Runs in the runner's side lane (tests/run.sh). Needs root.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}

# shellcheck source=../oci/engine.sh
. "$ROOT/tests/oci/engine.sh"
engine_suite engine-cri "CRI scenarios"

[ "$(id -u)" = 0 ] || skip_all "needs root"
# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
# shellcheck source=../oci/containerd.sh
. "$ROOT/tests/oci/containerd.sh"
oci_kernel_ok || skip_all "$OCI_KERNEL_WHY"
missing=$(ctd_missing containerd ctr containerd-shim-runc-v2 runc busybox unshare nsenter ip python3 node)
[ -z "$missing" ] || skip_all "missing: $missing"
# The CRI API definition: the shared directory beside the checkout (or
# beside the directory holding it), as tests/oci/conformance.sh finds
# ../shared/oci.
PROTO=${CRI_PROTO:-}
if [ -z "$PROTO" ]; then
    for d in "$ROOT/../shared/cri" "$ROOT/../../shared/cri"; do
        [ -f "$d/api.proto" ] && { PROTO=$(cd "$d" && pwd)/api.proto; break; }
    done
fi
[ -n "$PROTO" ] || skip_all "the CRI API definition (shared/cri/api.proto) is not beside the checkout (set CRI_PROTO)"
GRPC=${FB_GRPC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fluebox-tests/grpc-1.14.7}
[ -f "$GRPC/node_modules/@grpc/grpc-js/package.json" ] && [ -f "$GRPC/node_modules/@grpc/proto-loader/package.json" ] ||
    skip_all "missing: @grpc/grpc-js and @grpc/proto-loader in $GRPC (scripts/deps.sh test)"

if [ "${1:-}" != --inner ]; then
    T=$(mktemp -d /tmp/fbcri.XXXXXX)
    trap 'rm -rf "$T"' EXIT
    mkdir -p "$T/bin" "$T/cni/bin" "$T/cni/conf"
    cp "$FB" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"
    cp "$ROOT/tests/cri/fbcni" "$T/cni/bin/fbcni" && ln -s fbcni "$T/cni/bin/loopback"
    T="$T" ROOT="$ROOT" PROTO="$PROTO" GRPC="$GRPC" ctd_private "$0" --inner
    rc=$?
    left=""
    for d in /sys/fs/cgroup/*/"fbcri-${T##*.}" /sys/fs/cgroup/"fbcri-${T##*.}"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/*/; do [ -d "$c" ] && left="$left $c"; done
        for c in "$d"/*/; do rmdir "$c" 2>/dev/null; done
        rmdir "$d" 2>/dev/null
    done
    if [ -z "$left" ]; then ok "no container cgroup left after the suite"; else fail "cgroups left" "$left"; fi
    echo "# end of suite"
    exit $rc
fi

# ---- inside: private mounts, pid namespace ----
CG=/fbcri-${T##*.}
IMG=docker.io/library/fbbusybox:1
PAUSE=docker.io/library/fbpause:1
cat >"$T/cni/conf/10-fbnet.conflist" <<JSON
{"cniVersion": "0.4.0", "name": "fbnet", "plugins": [{"type": "fbcni"}]}
JSON
export CTD_CRI="
[plugins.\"io.containerd.grpc.v1.cri\"]
  sandbox_image = \"$PAUSE\"
  stream_server_address = \"127.0.0.1\"
  stream_server_port = \"0\"
  enable_selinux = false
  restrict_oom_score_adj = true
  [plugins.\"io.containerd.grpc.v1.cri\".cni]
    bin_dir = \"$T/cni/bin\"
    conf_dir = \"$T/cni/conf\"
  [plugins.\"io.containerd.grpc.v1.cri\".containerd]
    default_runtime_name = \"runc\"
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.runc]
      runtime_type = \"io.containerd.runc.v2\"
      pod_annotations = [\"fbtest.*\"]
    [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.fluebox]
      runtime_type = \"io.containerd.runc.v2\"
      pod_annotations = [\"run.fluebox.*\", \"fbtest.*\"]
      [plugins.\"io.containerd.grpc.v1.cri\".containerd.runtimes.fluebox.options]
        BinaryName = \"$T/bin/fluebox-oci\"
        SystemdCgroup = false
"
if ! ctd_start "$T/ctd"; then
    fail "containerd with its CRI plugin starts" "$CTD_WHY"
    exit 1
fi
C=("${CTD[@]}" -n k8s.io)
if python3 "$ROOT/tests/oci/mkimage.py" "$T/img.tar" "$IMG" &&
    python3 "$ROOT/tests/oci/mkimage.py" "$T/pause.tar" "$PAUSE" '["/bin/sleep", "2147483647"]' &&
    "${C[@]}" images import "$T/img.tar" >/dev/null && "${C[@]}" images import "$T/pause.tar" >/dev/null; then
    ok "images built from busybox-static import (a pause image too)"
else
    fail "image import"
    exit 1
fi

CRI_SOCK="$T/ctd/c.sock" CRI_PROTO="$PROTO" GRPC_DIR="$GRPC" CRI_IMAGE="$IMG" CRI_CGROUP="$CG" \
    CRI_LOGS="$T/logs" timeout 240 node "$ROOT/tests/cri/cri.mjs"
rc=$?
[ $rc = 0 ] || { echo "# containerd's log:"; tail -n 20 "$T/ctd/log" | sed 's/^/#   /'; }

# Nothing left: no pod, container, runtime state or process.
state=$(ls /run/containerd/runc/k8s.io 2>/dev/null)
left=$("${C[@]}" task ls -q 2>/dev/null; "${C[@]}" container ls -q 2>/dev/null)
if [ -z "$left" ] && [ -z "$state" ]; then
    ok "no task, container or runtime state left"
else
    fail "left behind" "tasks/containers: $left; state: $state"
fi
procs=""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = $BASHPID ] && continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in containerd | bash | cat) ;; *) procs="$procs $pid:$comm" ;; esac
done
if [ -z "$procs" ]; then ok "no process left (shims, supervisors, relays, containers)"; else fail "processes left" "$procs"; fi
ctd_stop
exit $rc
