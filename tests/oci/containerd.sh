# shellcheck shell=bash
# tests/oci/containerd.sh — sourced by the suites that run containers under a
# private containerd (Debian's containerd with its runc shim): nothing of it
# reaches the host's containerd, /run or process table.
#
#   ctd_missing TOOL...     prints the tools that are not on PATH
#   ctd_private SCRIPT ARGS runs "bash SCRIPT ARGS" (the suite's inner part)
#                           in a new mount namespace (private propagation, a
#                           fresh /proc) and a new pid namespace whose init it
#                           is: when it ends, the kernel kills what is left
#                           (shims, containers). Returns its status.
#   ctd_start DIR           in there: a tmpfs on /run (the shim and ctr keep
#                           their sockets and fifos under /run/containerd),
#                           containerd with its config, root, state and
#                           socket under DIR (CRI off); waits for the socket.
#                           Sets CTD=(ctr -a SOCKET) and CTD_PID; returns 1
#                           with CTD_WHY (the log's tail) when it did not come up.
#                           With CTD_CRI set (TOML: the CRI plugin's
#                           settings), the CRI plugin is on and CTD_CRI is
#                           added to the config.
#   ctd_stop                stops that containerd (by pid) and waits for it.

ctd_missing() {
    local t out=""
    for t in "$@"; do
        command -v "$t" >/dev/null 2>&1 || out="$out $t"
    done
    printf '%s' "${out# }"
}

ctd_private() {
    unshare --mount --pid --fork --mount-proc --propagation private bash "$@"
}

ctd_start() {
    local dir=$1
    mount -t tmpfs -o mode=0755 tmpfs /run || { CTD_WHY="cannot mount a tmpfs on /run"; return 1; }
    mkdir -p "$dir"
    cat >"$dir/config.toml" <<EOF
version = 2
root = "$dir/root"
state = "$dir/state"
$([ -n "${CTD_CRI:-}" ] || echo 'disabled_plugins = ["io.containerd.grpc.v1.cri"]')
[grpc]
  address = "$dir/c.sock"
[ttrpc]
  address = "$dir/c.sock.ttrpc"
[plugins."io.containerd.internal.v1.opt"]
  path = "$dir/opt"
${CTD_CRI:-}
EOF
    containerd --config "$dir/config.toml" >"$dir/log" 2>&1 &
    CTD_PID=$!
    local _
    for _ in $(seq 300); do
        [ -S "$dir/c.sock" ] && break
        kill -0 "$CTD_PID" 2>/dev/null || break
        sleep 0.1
    done
    if [ ! -S "$dir/c.sock" ]; then
        CTD_WHY=$(tail -n 5 "$dir/log")
        return 1
    fi
    CTD=(ctr -a "$dir/c.sock")
}

ctd_stop() {
    [ -n "${CTD_PID:-}" ] || return 0
    kill "$CTD_PID" 2>/dev/null
    wait "$CTD_PID" 2>/dev/null
    CTD_PID=""
}
