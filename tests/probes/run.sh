#!/usr/bin/env bash
# tests/probes/run.sh — run every escape probe under `fluebox run` with each
# built-in profile, and once with no sandbox at all, then print a table and a
# last line "N passed, N failed". Exit status 0 only when nothing failed.
#
# Modes (columns): none (no sandbox), strict, standard, trusted (each profile
# as it comes), trusted+hostnet (trusted with --net host, which that profile
# permits), landlock (strict under --isolation landlock, the fallback where
# no namespace can be made: the probe at its host path, the binds at theirs;
# on kernels with Landlock ABI 4 or newer), warm (the standard profile
# through `fluebox run --server` of a private `fluebox serve --pool 2`: the
# warm one-shot run, a session sandbox given the caller's own stdin, stdout
# and stderr; its sessions are built when asked, as the probes' binds do not
# fit the pool, the same spawn as a pool's), as root oci (the probe as a container under `fluebox oci`, with
# the spec containerd gives a container by default: tests/probes/oci-bundle.py),
# and with --bwrap an informational bubblewrap column.
#
# What passes:
#   * strict: every probe BLOCKED.
#   * standard, trusted, trusted+hostnet: BLOCKED, or ESCAPED where ALLOWED
#     below says that mode allows it on purpose (and why).
#   * no sandbox: the probes in MUST_ESCAPE* report ESCAPED and at least
#     MIN_ESCAPE_PCT percent of all probes do: a probe that cannot detect its
#     escape when nothing stands in the way proves nothing under a sandbox.
#   * afterwards the host is as it was: hostname, no file in the "outside"
#     directory, the host helper alive, no process of ours left, no mount and
#     no fluebox cgroup left behind.
# Run as root it then repeats the whole suite as the unprivileged user
# $PROBE_USER (default fbtest) when that user exists, and adds both results.
#
# Usage: tests/probes/run.sh [--fluebox PATH] [--profiles "strict standard"]
#          [--only "probe ..."] [--bwrap] [--no-oci] [--no-user] [--user NAME]
#          [--no-build] [--keep] [--verbose]
#   --bwrap    adds an informational column: the same probes under bubblewrap
#              with a layout like fluebox's strict one (never pass/fail).
#   --verbose  prints every verdict line, not only those of failures.
#   --markdown FILE  also writes the table as markdown (for docs/threat-model.md), with
#              the machine, the user and the verdict details of escapes.
#   --none-informational  the no-sandbox column is shown, not judged: for a
#              run inside a container whose own profile stops some attacks
#              (tests/suites/containers.sh).
#   --tap      also prints "ok - ..." / "not ok - ..." for every check, the
#              format tests/run.sh (make check) counts. Implied when the
#              environment names the binary as FB=PATH, as tests/run.sh does.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
FLUEBOX=${FLUEBOX:-${FB:-$ROOT/fluebox}}
BUILD=$HERE/build
PROFILES="strict standard trusted trusted+hostnet landlock warm"
ONLY=""
WITH_BWRAP=0
WITH_OCI=1
RUN_USER=1
PROBE_USER=${PROBE_USER:-fbtest}
BUILD_FIRST=1
KEEP=0
VERBOSE=0
MD_OUT=""
MD_APPEND=0
TAP=0
NONE_INFO=0
IS_SUB=0
[ -n "${FB:-}" ] && TAP=1

# Limits every sandboxed probe runs under, and the caps the resource probes
# stop at by themselves (comfortably above the limits, so hitting a cap means
# the limit did not hold; small enough to be harmless without a sandbox).
MEM=64M
PIDS=64
DISK=32M
SANDBOX_TIMEOUT=60s
OUTER_TIMEOUT=90
CAPS=(pids_cap=256 mem_cap=256 fill_cap=128 timeout=20)

# Escapes a profile allows on purpose. Key "probe:profile", value the reason,
# printed under the table. Keep this short: everything else must be blocked
# under every profile. docs/threat-model.md says the same.
declare -A ALLOWED=(
    # trusted with --net host runs in the host's network namespace, which that
    # profile permits: host loopback services, the host's abstract unix
    # sockets and the host's resolver are then reachable by design. Plain
    # trusted (network none) must block them like the others.
    [host_loopback:trusted+hostnet]="--net host shares the host network namespace"
    # A container (mode oci) is root of its own image with the capabilities
    # its spec grants, inside its user namespace only; these follow.
    [caps_left:oci]="the spec grants the runtimes' default capabilities, inside the container's user namespace only (host root is never mapped)"
    [no_new_privs:oci]="no_new_privs follows the spec (containerd's default: off); every mount of a container is nosuid, so set-id and file-capability programs gain nothing"
    [write_outside:oci]="/usr, /bin and /lib are the container's own image, writable into an upper layer that stays in the container (the outside directory stays untouched: checked below)"
    [sysfs:oci]="the spec mounts sysfs: the container's own, read-only, with /sys/firmware, /sys/kernel and /sys/fs/cgroup covered (uevent_helper and cgroup files stay unreadable)"
    [setuid_workspace:oci]="set-id modes stay refused; CAP_SETFCAP (the runtimes' default) writes only a namespaced file capability on the (not idmapped) workspace: its root id is the container's own host id, which host root's processes ignore, and every mount of a container is nosuid"
    [af_packet:oci]="the spec grants CAP_NET_RAW (the runtimes' default): a raw IP socket in the container's own network namespace, which has only loopback (AF_PACKET stays refused)"
    [abstract_unix:trusted+hostnet]="--net host shares the host network namespace (abstract sockets belong to it)"
    # --isolation landlock has no user namespace: an ordinary user's process
    # holds no capability but cannot empty its bounding set (that needs
    # CAP_SETPCAP); no_new_privs, which is set, makes execve grant nothing
    # from it. As root the set is emptied before the switch to --host-id.
    [caps_left:landlock]="an ordinary user cannot empty the bounding set without a user namespace; no_new_privs makes it grant nothing"
    [dns_external:trusted+hostnet]="--net host shares the host network namespace (host resolver reachable)"
)

# With no sandbox these must report ESCAPED whoever runs them: they need no
# privilege and no optional kernel feature.
MUST_ESCAPE_ANY="host_secret write_outside robind_write bind_traversal proc_pid_root
  host_proc_see host_signal host_vm_readv host_loopback abstract_unix dns_external ipc_host
  env_leak inherited_fds fork_bomb mem_bomb tmp_fill caps_left no_new_privs home_secrets
  seccomp_on personality proc_self_exe sysfs init_tamper session_files setuid_workspace
  rare_sockets"
# ... and these too when root runs them (they need capabilities).
MUST_ESCAPE_ROOT="mount umount pivot_root chroot clone_ns unshare_ns setns
  userns_nested mknod af_packet netlink_route proc_sys_write reboot swapon
  tiocsti open_by_handle dos_inotify dos_pipe_pages dos_scm_inflight"
# Minimum share of probes that must escape with no sandbox. The rest need a
# privilege the caller lacks or a kernel feature this machine may not have
# (kexec, modules and x32 are often compiled out).
MIN_ESCAPE_PCT_ROOT=80
MIN_ESCAPE_PCT_USER=40

# Cross-sandbox denial of service (dos.h): run in pairs through `fbhost pair`,
# an attacker sandbox holding a per-user kernel resource while a victim
# sandbox of the same mode, and the host user, try to use it. With no
# sandbox (root only) attacker and victim run as one throwaway uid, so that
# nobody else's quota is touched.
DOS_PROBES=" dos_inotify dos_pipe_pages dos_scm_inflight "
DOS_UID=1879048191
# Rootless, the sandbox user is the caller's own uid (so the caller's files
# stay theirs; unprivileged users cannot make idmapped mounts): counters kept
# per host uid are shared with the caller's other processes by design. These
# are documented in docs/threat-model.md and not run rootless (running
# them would take the quota of every process of this user on the machine).
DOS_SHARED_UID=" dos_pipe_pages dos_scm_inflight "

# Probes whose attack is exhausting a limit: when the sandbox is killed by
# that limit before the probe can print (fluebox exits 137, 128+SIGKILL),
# that is the limit working.
RESOURCE_PROBES=" fork_bomb mem_bomb tmp_fill "

while [ $# -gt 0 ]; do
    case "$1" in
    --fluebox) FLUEBOX=$2; shift ;;
    --profiles) PROFILES=$2; shift ;;
    --only) ONLY=$2; shift ;;
    --bwrap) WITH_BWRAP=1 ;;
    --no-oci) WITH_OCI=0 ;;
    --no-user) RUN_USER=0 ;;
    --user) PROBE_USER=$2; shift ;;
    --no-build) BUILD_FIRST=0 ;;
    --keep) KEEP=1 ;;
    --markdown) MD_OUT=$2; shift ;;
    --md-append) MD_APPEND=1 ;;
    --verbose) VERBOSE=1 ;;
    --tap) TAP=1 ;;
    --none-informational) NONE_INFO=1 ;;
    --sub) RUN_USER=0; BUILD_FIRST=0; IS_SUB=1 ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "run.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

say() { printf '%s\n' "$*"; }
die() { printf 'run.sh: %s\n' "$*" >&2; exit 2; }

if [ "$BUILD_FIRST" = 1 ]; then
    make -s -C "$ROOT" -f tests/probes/probes.mk probes || die "building the probes failed"
fi
[ -x "$BUILD/helper/fbhost" ] || die "probes not built (make probes)"

# session_files is not a program run in a sandbox: the runner's helper does it
# from the host, through the session API of `fluebox serve` (see
# helper/fbhost.c). It joins the table when the binary has a server.
PROBES=()
if [ -n "$ONLY" ]; then
    for p in $ONLY; do
        [ "$p" = session_files ] || [ -x "$BUILD/$p" ] || die "no such probe: $p"
        PROBES+=("$p")
    done
else
    for f in "$HERE"/*.c; do
        PROBES+=("$(basename "$f" .c)")
    done
    PROBES+=(session_files)
fi

if [ -n "$PROFILES" ] && [ ! -x "$FLUEBOX" ]; then
    die "no fluebox binary at $FLUEBOX (build it first, or --fluebox PATH)"
fi
# The landlock column needs Landlock ABI 4 (Linux 6.7).
if [[ " $PROFILES " == *" landlock "* ]] && [ -n "$PROFILES" ] &&
    ! "$FLUEBOX" run -q --isolation landlock -- /bin/true >/dev/null 2>&1; then
    PROFILES=$(printf '%s\n' $PROFILES | grep -vx landlock | tr '\n' ' ')
fi
MODES="none $PROFILES"
# The oci column needs root (fluebox oci runs as root, as runc does).
# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
if [ "$WITH_OCI" = 1 ] && [ -n "$PROFILES" ] && [ "$(id -u)" = 0 ] && command -v python3 >/dev/null &&
    oci_kernel_ok; then
    MODES="$MODES oci"
fi
[ "$WITH_BWRAP" = 1 ] && MODES="$MODES bwrap"
if [ "$WITH_BWRAP" = 1 ] && ! command -v bwrap >/dev/null; then
    die "--bwrap: bwrap is not installed"
fi

ME=$(id -un)
# The sub-run as another user may not be allowed to ask git (repository owned
# by root): the parent passes the commit down.
COMMIT=${FBPROBE_COMMIT:-$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)}
IS_ROOT=0
[ "$(id -u)" = 0 ] && IS_ROOT=1

# ---- host context -------------------------------------------------------
TMP=$(mktemp -d "${TMPDIR:-/tmp}/fbprobe.XXXXXX") || die "mktemp failed"
chmod 755 "$TMP" # the sandbox's bind sources live here
HELPER_PID=""
FAKEHOME=""
cleanup() {
    if [ -n "${SERVE_PID:-}" ]; then
        kill -TERM "$SERVE_PID" 2>/dev/null
        wait "$SERVE_PID" 2>/dev/null
    fi
    if [ -n "$HELPER_PID" ]; then
        kill "$HELPER_PID" 2>/dev/null
        wait "$HELPER_PID" 2>/dev/null
    fi
    if [ "$KEEP" = 1 ]; then
        say "kept $TMP $FAKEHOME"
    else
        rm -rf "$TMP" "$FAKEHOME"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

# Work on a snapshot of the binary: others may rebuild ./fluebox while the
# suite runs. Root's copy stays root-owned (like an installed binary) and is
# the one the unprivileged run uses too. A user running the suite directly
# tests the binary they point at, where it is.
if [ -n "$PROFILES" ] && [ "$IS_ROOT" = 1 ]; then
    for _ in 1 2 3 4 5; do
        cp "$FLUEBOX" "$TMP/fluebox" 2>/dev/null && "$TMP/fluebox" --version >/dev/null 2>&1 && break
        sleep 1
    done
    "$TMP/fluebox" --version >/dev/null 2>&1 || die "cannot snapshot $FLUEBOX"
    FLUEBOX=$TMP/fluebox
fi

# Without cgroup delegation (an unprivileged user on a machine that gives it
# none) --mem cannot bound the sandbox as a whole: fluebox warns and falls back
# to a per-process RLIMIT_DATA, which a memory bomb spread over processes
# gets past. That is a documented limit of rootless mode, not an escape of a
# profile; --require-limits refuses to run instead. Detect it here.
NO_MEMCG=""
if [ -n "$PROFILES" ] && ! "$FLUEBOX" run -q --mem "$MEM" --require-limits -- true >/dev/null 2>&1; then
    NO_MEMCG=1
fi

# Under --isolation landlock, --pids has no stand-in without a pids cgroup
# (RLIMIT_NPROC would count the user's other processes): a documented
# guarantee that mode does not hold (its report lists it).
NO_PIDSCG_LL=""
if [[ " $PROFILES " == *" landlock "* ]] &&
    ! "$FLUEBOX" run -q --isolation landlock --pids "$PIDS" --require-limits -- /bin/true >/dev/null 2>&1; then
    NO_PIDSCG_LL=1
fi

MARKER=$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')
printf 'FLUEBOX-SECRET-%s\n' "$MARKER" >"$TMP/secret"
chmod 600 "$TMP/secret"
mkdir -p "$TMP/outside" "$TMP/bindsrc" "$TMP/bin/helper" "$TMP/out"
printf 'read-only data\n' >"$TMP/bindsrc/data.txt"
ln -s ../secret "$TMP/bindsrc/up"
ln -s "$TMP/secret" "$TMP/bindsrc/abs"
for p in "${PROBES[@]}"; do
    [ "$p" = session_files ] || cp "$BUILD/$p" "$TMP/bin/"
done
cp "$BUILD/helper/fbhost" "$TMP/bin/helper/"

# home_secrets runs from a fake home's ~/.cargo/bin, with the secret beside
# it in the places credentials live; copies in ~/bin and ~/.local/bin are
# the caller's node and python3. Outside /tmp, which older fluebox never
# bound.
FAKEHOME=$(mktemp -d /var/tmp/fbprobe-home.XXXXXX) || die "mktemp under /var/tmp failed"
chmod 755 "$FAKEHOME"
mkdir -p "$FAKEHOME/.cargo/bin" "$FAKEHOME/.local/bin" "$FAKEHOME/.local/share" "$FAKEHOME/bin" "$FAKEHOME/.ssh"
for f in .cargo/credentials.toml .local/share/keyring .ssh/id_rsa .npmrc; do
    cp "$TMP/secret" "$FAKEHOME/$f"
    chmod 644 "$FAKEHOME/$f" # as ~/.npmrc often is: readable by the sandbox's id when bound
done
if [ -x "$BUILD/home_secrets" ]; then
    cp "$BUILD/home_secrets" "$FAKEHOME/.cargo/bin/home_secrets"
    cp "$BUILD/home_secrets" "$FAKEHOME/.local/bin/python3"
    cp "$BUILD/home_secrets" "$FAKEHOME/bin/node"
fi

# The helper runs from $TMP (its cwd is a way to the secret for proc_pid_root)
# with a tag in its argv that only it carries.
(cd "$TMP" && exec "$TMP/bin/helper/fbhost" serve "$TMP/helper.info" "fluebox-host-sleeper-$MARKER") \
    </dev/null >"$TMP/helper.log" 2>&1 &
HELPER_PID=$!
for _ in $(seq 100); do
    [ -s "$TMP/helper.info" ] && break
    sleep 0.05
done
[ -s "$TMP/helper.info" ] || die "host helper did not start: $(cat "$TMP/helper.log")"
declare -A H
while IFS='=' read -r k v; do H[$k]=$v; done <"$TMP/helper.info"

# The session server for session_files and the warm column, as this user,
# on a private socket.
SERVE_PID=""
if [[ " $PROFILES " == *" warm "* ]] && ! "$FLUEBOX" run --help 2>/dev/null | grep -q -- --server; then
    PROFILES=$(printf '%s\n' $PROFILES | grep -vx warm | tr '\n' ' ')
    MODES=$(printf '%s\n' $MODES | grep -vx warm | tr '\n' ' ')
fi
if [[ " ${PROBES[*]} " == *" session_files "* || " $PROFILES " == *" warm "* ]] && [ -n "$PROFILES" ] &&
    "$FLUEBOX" serve --help >/dev/null 2>&1; then
    "$FLUEBOX" serve --socket "$TMP/serve.sock" --pool 2 </dev/null >"$TMP/serve.log" 2>&1 &
    SERVE_PID=$!
    for _ in $(seq 100); do
        [ -S "$TMP/serve.sock" ] && break
        sleep 0.05
    done
    [ -S "$TMP/serve.sock" ] || die "fluebox serve did not start: $(tail -n 2 "$TMP/serve.log")"
fi

# The oci column: a minimal rootfs (busybox), containers' cgroups under one
# parent of this run's, checked and removed at the end.
OCI_CG=/fbprobe-${TMP##*.}
OCI_HOST_ID=2146435072 # where the containers' ids 0..65535 start on the host (a slot of
# fluebox's pool: run.fluebox.host-id pins only there)
if [[ " $MODES " == *" oci "* ]]; then
    mkdir -p "$TMP/ocirootfs/bin" "$TMP/ocistate"
    for d in etc proc sys dev tmp workspace probes data; do mkdir -p "$TMP/ocirootfs/$d"; done
    bb=$(command -v busybox || true)
    if [ -n "$bb" ]; then
        cp "$bb" "$TMP/ocirootfs/bin/busybox"
        ln -s busybox "$TMP/ocirootfs/bin/sh"
    fi
    printf 'root:x:0:0:root:/root:/bin/sh\n' >"$TMP/ocirootfs/etc/passwd"
fi
oci_cgroups_left() {
    local d c
    for d in /sys/fs/cgroup/*"$OCI_CG" /sys/fs/cgroup/*/*"$OCI_CG"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/; do [ -d "$c" ] && echo "$c"; done
    done
}

HOST_HOSTNAME=$(hostname)
UTSNS=$(stat -L -c %i /proc/self/ns/uts)
NETNS=$(stat -L -c %i /proc/self/ns/net)
# fluebox names its cgroups fluebox-<its pid>-<seq>; every fluebox this run
# starts records its pid here, so that leftovers are told apart from the
# cgroups of other fluebox users on the machine.
FBPIDS=$TMP/fluebox.pids
: >"$FBPIDS"
[ -n "$SERVE_PID" ] && echo "$SERVE_PID" >>"$FBPIDS"
# fluebox-* cgroups there before this run: pids are reused (pid_max is often
# 32768), so one left long ago by a killed fluebox can carry the pid of one
# of this run's; it is not this run's doing.
all_fluebox_cgroups() {
    find /sys/fs/cgroup -mindepth 1 -maxdepth 10 -type d -name 'fluebox-*' 2>/dev/null
}
CG_BEFORE=$TMP/cgroups.before
all_fluebox_cgroups | sort >"$CG_BEFORE"
cgroups_left() {
    local d pid
    all_fluebox_cgroups | sort | comm -23 - "$CG_BEFORE" |
        while IFS= read -r d; do
            pid=${d##*/fluebox-}
            pid=${pid%%-*}
            grep -qx -- "$pid" "$FBPIDS" && echo "$d"
        done
}

CTX=("secret=$TMP/secret" "outside=$TMP/outside" "marker=$MARKER"
    "hostpid=${H[pid]}" "memaddr=${H[memaddr]}" "memlen=${H[memlen]}"
    "port=${H[port]}" "dnsport=${H[dnsport]}" "abstract=${H[abstract]}"
    "shmkey=${H[shmkey]}" "shmname=${H[shmname]}"
    "fds=7,8" "utsns=$UTSNS" "netns=$NETNS" "name=example.com" "${CAPS[@]}")

# bubblewrap with a layout close to fluebox's strict one (informational).
bwrap_cmd() {
    local ws=$1
    BWRAP=(bwrap --unshare-all --unshare-user --uid 1000 --gid 1000 --die-with-parent
        --new-session --cap-drop ALL --hostname fluebox --tmpfs / --ro-bind /usr /usr)
    local l
    for l in bin lib lib64 sbin; do
        if [ -L "/$l" ]; then
            BWRAP+=(--symlink "$(readlink "/$l")" "/$l")
        elif [ -d "/$l" ]; then
            BWRAP+=(--ro-bind "/$l" "/$l")
        fi
    done
    BWRAP+=(--proc /proc --dev /dev --tmpfs /tmp --bind "$ws" /workspace --chdir /workspace
        --ro-bind "$TMP/bin" /probes --ro-bind "$TMP/bindsrc" /data
        --clearenv --setenv PATH /usr/bin:/bin --setenv HOME /workspace --remount-ro /)
}

# sandbox_cmd MODE WS PROBE ARGS...: the command that runs PROBE (or $SBX_PROG) ARGS under
# fluebox in MODE, in $SBX. sh records the pid fluebox will have, then
# becomes fluebox.
sandbox_cmd() {
    local mode=$1 ws=$2 p=$3
    shift 3
    local profile=${mode%%+*} extra=()
    case "$mode" in
    *+hostnet) extra=(--net host) ;;
    warm)
        profile=standard
        extra=(--server "$TMP/serve.sock")
        ;;
    landlock)
        # No mount namespace: the probe and the binds at their host paths.
        # As root the command runs as an id of its own range, never root:
        # the (root-owned) workspace is made writable for it.
        [ "$IS_ROOT" = 1 ] && chmod 0777 "$ws"
        # shellcheck disable=SC2016 # expanded by that sh, not here
        SBX=(sh -c 'echo $$ >>"$0"; exec "$@"' "$FBPIDS"
            "$FLUEBOX" run --profile strict --isolation landlock --mem "$MEM" --pids "$PIDS"
            --disk "$DISK" --timeout "$SANDBOX_TIMEOUT" --workspace "$ws"
            --ro-bind "$TMP/bin" --ro-bind "$TMP/bindsrc"
            -- "$TMP/bin/$p" "$@")
        for a in "${!SBX[@]}"; do
            [ "${SBX[$a]}" = data=/data ] && SBX[$a]=data=$TMP/bindsrc
        done
        return
        ;;
    esac
    # shellcheck disable=SC2016 # expanded by that sh, not here
    SBX=(sh -c 'echo $$ >>"$0"; exec "$@"' "$FBPIDS"
        "$FLUEBOX" run --profile "$profile" "${extra[@]}" --mem "$MEM" --pids "$PIDS" --disk "$DISK"
        --timeout "$SANDBOX_TIMEOUT" --workspace "$ws"
        --ro-bind "$TMP/bin:/probes" --ro-bind "$TMP/bindsrc:/data"
        -- "${SBX_PROG:-/probes/$p}" "$@")
}

# dos_cmd PROBE MODE WS OUT: the `fbhost pair` command of a cross-sandbox
# probe in $DOS (attacker, then a victim in the same mode and one on the
# host as this user); returns 1 after writing a verdict when it is not run.
dos_cmd() {
    local p=$1 mode=$2 ws=$3 out=$4
    local pair=("$TMP/bin/helper/fbhost" pair "$p")
    case "$mode" in
    none)
        if [ "$IS_ROOT" != 1 ]; then
            printf 'SKIP\t0\twith no sandbox the attack would take the quota of every process of %s; root runs it as a throwaway uid\n' \
                "$ME" >"$out.v"
            return 1
        fi
        DOS=("${pair[@]}" --uid "$DOS_UID" -- "$TMP/bin/$p" role=hold "${CTX[@]}"
            --- "$TMP/bin/$p" role=victim "${CTX[@]}")
        ;;
    bwrap)
        # bubblewrap's sandboxes run as, and their namespaces belong to, the
        # caller's own ids: the attack would take this user's (or root's)
        # quota on the whole machine.
        printf 'SKIP\t0\tnot run: bubblewrap sandboxes share the caller'"'"'s ids, the attack would take its quota\n' >"$out.v"
        return 1
        ;;
    oci)
        # Two containers, each with a range of host ids of its own from the
        # allocator (no run.fluebox.host-id here: the holder takes only its
        # own quota, never host root's), and the host user.
        local b=$TMP/oci-$p r
        for r in hold victim; do
            mkdir -p "$b-$r"
            python3 "$HERE/oci-bundle.py" "$b-$r" "$TMP/ocirootfs" "$TMP/bin" "$TMP/bindsrc" "$ws" \
                "$OCI_CG/$p-$r" "$((64 * 1024 * 1024))" "$PIDS" "$DISK" "$SANDBOX_TIMEOUT" - -- \
                "/probes/$p" role=$r "${CTX[@]}"
        done
        local oci=("$FLUEBOX" oci --root "$TMP/ocistate" run --bundle)
        DOS=("${pair[@]}" -- "${oci[@]}" "$b-hold" "probe-$p-hold" --- "${oci[@]}" "$b-victim" "probe-$p-victim"
            --- "$TMP/bin/$p" role=victim "${CTX[@]}")
        ;;
    *)
        if [ "$IS_ROOT" != 1 ] && [[ $DOS_SHARED_UID == *" $p "* ]]; then
            printf 'SHARED\t0\trootless: the sandbox runs as %s, whose per-uid counters it shares by design (not run)\n' \
                "$ME" >"$out.v"
            return 1
        fi
        if [ "$IS_ROOT" != 1 ] && [ "$mode" = landlock ]; then
            printf 'SHARED\t0\trootless --isolation landlock has no user namespace: the sandbox runs as %s, whose per-uid counters and limits it shares (not run)\n' \
                "$ME" >"$out.v"
            return 1
        fi
        sandbox_cmd "$mode" "$ws" "$p" role=hold "${CTX[@]}"
        local attacker=("${SBX[@]}")
        sandbox_cmd "$mode" "$ws" "$p" role=victim "${CTX[@]}"
        DOS=("${pair[@]}" -- "${attacker[@]}" --- "${SBX[@]}" --- "$TMP/bin/$p" role=victim "${CTX[@]}")
        ;;
    esac
}

# run_one PROBE MODE: runs it, leaves "VERDICT<TAB>detail" in $TMP/out/P.M.v
run_one() {
    local p=$1 mode=$2
    local ws=$TMP/ws-$p-$mode out=$TMP/out/$p.$mode
    mkdir -p "$ws" "$TMP/fill-$p"
    ln -s ../secret "$ws/up"
    ln -s "$TMP/secret" "$ws/abs"
    local cmd=() prog="/probes/$p"
    [ "$p" = tiocsti ] && cmd+=("$TMP/bin/helper/fbhost" pty --)
    if [ "$p" = home_secrets ] && [ "$mode" = warm ]; then
        # The probe is a program in the caller's home named by its path; a
        # cold run binds that program, a session binds what the caller's
        # PATH finds (docs/server.md): under --server it is not found.
        printf 'NA\t0\trun --server binds the programs of the caller'"'"'s PATH, not a command named by its host path\n' >"$out.v"
        return
    fi
    if [ "$p" = home_secrets ]; then
        cmd+=(env "HOME=$FAKEHOME/" "PATH=$FAKEHOME/bin:$FAKEHOME/.local/bin:$PATH")
        # bwrap and oci start it from their own /probes (no program lookup).
        case "$mode" in bwrap | oci) ;; *) prog=$FAKEHOME/.cargo/bin/home_secrets ;; esac
        CTX_EXTRA=("home=$FAKEHOME")
    else
        CTX_EXTRA=()
    fi
    if [ "$p" = session_files ]; then
        case "$mode" in
        none) cmd+=("$TMP/bin/helper/fbhost" session-files none none) ;;
        bwrap) printf 'SKIP\t0\tno session server in bubblewrap\n' >"$out.v"; return ;;
        oci) printf 'NA\t0\tsessions are fluebox serve'"'"'s, not a container'"'"'s\n' >"$out.v"; return ;;
        landlock) printf 'NA\t0\tsessions need namespaces; --isolation landlock runs one command\n' >"$out.v"; return ;;
        warm) printf 'NA\t0\tthe session API itself: the profiles'"'"' columns\n' >"$out.v"; return ;;
        *)
            if [ -z "$SERVE_PID" ]; then
                printf 'SKIP\t0\tfluebox serve is not available\n' >"$out.v"
                return
            fi
            cmd+=("$TMP/bin/helper/fbhost" session-files "$TMP/serve.sock" "$mode")
            ;;
        esac
        cmd+=("$ws" "$TMP/secret" "$TMP/outside")
        mode=session
    fi
    if [[ $DOS_PROBES == *" $p "* ]]; then
        dos_cmd "$p" "$mode" "$ws" "$out" || return
        cmd+=("${DOS[@]}")
        mode=session
    fi
    case "$mode" in
    session) ;;
    none)
        [ "$p" = home_secrets ] || prog=$TMP/bin/$p
        cmd+=("$prog" "${CTX[@]}" "${CTX_EXTRA[@]}" "data=$TMP/bindsrc" "fill=$TMP/fill-$p")
        ;;
    bwrap)
        bwrap_cmd "$ws"
        cmd+=("${BWRAP[@]}" -- "/probes/$p" "${CTX[@]}" "${CTX_EXTRA[@]}" data=/data fill=/tmp)
        ;;
    oci)
        local b=$TMP/oci-$p
        mkdir -p "$b"
        # A read-write bind is not idmapped (docs/oci.md): the workspace
        # belongs to the container's host ids, as a volume of a rootless
        # container does.
        chown "$OCI_HOST_ID:$OCI_HOST_ID" "$ws"
        python3 "$HERE/oci-bundle.py" "$b" "$TMP/ocirootfs" "$TMP/bin" "$TMP/bindsrc" "$ws" \
            "$OCI_CG/$p" "$((64 * 1024 * 1024))" "$PIDS" "$DISK" "$SANDBOX_TIMEOUT" "$OCI_HOST_ID" -- \
            "/probes/$p" "${CTX[@]}" "${CTX_EXTRA[@]}" data=/data fill=/tmp
        cmd+=("$FLUEBOX" oci --root "$TMP/ocistate" run --bundle "$b" "probe-$p")
        ;;
    *)
        SBX_PROG=$prog sandbox_cmd "$mode" "$ws" "$p" "${CTX[@]}" "${CTX_EXTRA[@]}" data=/data fill=/tmp
        cmd+=("${SBX[@]}")
        ;;
    esac
    local rc
    (cd "$ws" && exec env FLUEBOX_PROBE_ENV="$MARKER" timeout -k 5 "$OUTER_TIMEOUT" "${cmd[@]}") \
        </dev/null >"$out.stdout" 2>"$out.stderr" 7<"$TMP/secret" 8<"$TMP"
    rc=$?
    local line verdict detail
    line=$(grep -m1 -E "^(BLOCKED|ESCAPED|SKIP|ERROR) $p: " "$out.stdout")
    if [ -n "$line" ]; then
        verdict=${line%% *}
        detail=${line#*: }
    elif [ "$mode" != none ] && [ "$rc" = 137 ] && [[ $RESOURCE_PROBES == *" $p "* ]]; then
        verdict=BLOCKED
        detail="sandbox killed by its limit before the probe could report (exit 137)"
    else
        verdict=ERROR
        detail="no verdict, exit $rc: $(tail -n 3 "$out.stderr" | tr '\n' ' ')"
    fi
    printf '%s\t%s\t%s\n' "$verdict" "$rc" "$detail" >"$out.v"
}

PASS=0
FAIL=0
FAILURES=()
pass() {
    PASS=$((PASS + 1))
    [ "$TAP" = 1 ] && TAPLINES+=("ok - probes as $ME: $*")
    return 0
}
fail() {
    FAIL=$((FAIL + 1))
    FAILURES+=("$*")
    [ "$TAP" = 1 ] && TAPLINES+=("not ok - probes as $ME: $*")
    return 0
}
TAPLINES=()

say "fluebox escape probes as $ME: ${#PROBES[@]} probes x modes: $MODES"
say "limits: --mem $MEM --pids $PIDS --disk $DISK; $(uname -sr)"
for p in "${PROBES[@]}"; do
    for m in $MODES; do
        run_one "$p" "$m"
    done
done

# ---- table and verdicts ---------------------------------------------------
declare -A CELL
escapes_none=0
declare -A W
for m in $MODES; do
    W[$m]=9
    [ ${#m} -gt 9 ] && W[$m]=${#m}
done
printf '\n%-16s' probe
for m in $MODES; do printf ' %-*s' "${W[$m]}" "$m"; done
printf '\n'
MD_ROWS=()
for p in "${PROBES[@]}"; do
    printf '%-16s' "$p"
    md_row="| $p |"
    for m in $MODES; do
        IFS=$'\t' read -r v rc detail <"$TMP/out/$p.$m.v"
        cell=$v
        case "$m" in
        none)
            [ "$v" = ESCAPED ] && { escapes_none=$((escapes_none + 1)); cell=escaped; }
            [ "$v" = BLOCKED ] && cell=blocked
            [ "$v" = SKIP ] && cell=skip
            ;;
        bwrap)
            [ "$v" = BLOCKED ] && cell=blocked
            [ "$v" = ESCAPED ] && cell=escaped
            ;;
        *)
            if [ "$v" = NA ]; then
                cell=n/a
                pass "$p under $m: not applicable ($detail)"
            elif [ "$v" = BLOCKED ]; then
                cell=blocked
                pass "$p under $m: blocked"
            elif [ "$v" = ESCAPED ] && [ -n "${ALLOWED[$p:$m]:-}" ] && [ "$m" != strict ]; then
                cell=allowed
                pass "$p under $m: escaped, allowed (${ALLOWED[$p:$m]})"
            elif [ "$v" = SHARED ]; then
                cell=shared-uid
                pass "$p under $m: not run: $detail (docs/threat-model.md)"
            elif [ "$v" = ESCAPED ] && [ "$p" = fork_bomb ] && [ "$m" = landlock ] && [ -n "$NO_PIDSCG_LL" ]; then
                cell=no-cgroup
                pass "$p under $m: not bounded: $ME has no pids cgroup here and --isolation landlock has no per-user stand-in (its report says so; --require-limits refuses)"
            elif [ "$v" = ESCAPED ] && [ "$p" = mem_bomb ] && [ -n "$NO_MEMCG" ]; then
                cell=no-cgroup
                pass "$p under $m: not bounded: $ME has no cgroup delegation here (fluebox warns; --require-limits refuses)"
            else
                [ "$v" = ESCAPED ] && cell=ESCAPED!
                [ "$v" = SKIP ] && cell=SKIP!
                [ "$v" = ERROR ] && cell=ERROR!
                fail "$p under $m: $v: $detail"
            fi
            ;;
        esac
        CELL[$p:$m]=$v
        printf ' %-*s' "${W[$m]}" "$cell"
        md_row="$md_row $cell |"
    done
    printf '\n'
    MD_ROWS+=("$md_row")
done

# No sandbox: the probes must be able to see an escape (unless that column
# is informational: inside a container, its own profile stops some).
must=$MUST_ESCAPE_ANY
[ "$IS_ROOT" = 1 ] && must="$must $MUST_ESCAPE_ROOT"
[ "$NONE_INFO" = 1 ] && must=""
for p in $must; do
    [ -n "${CELL[$p:none]:-}" ] || continue
    if [ "${CELL[$p:none]}" = ESCAPED ]; then
        pass "$p with no sandbox: escaped (the probe sees its escape)"
    else
        IFS=$'\t' read -r v rc detail <"$TMP/out/$p.none.v"
        fail "$p with no sandbox: expected ESCAPED, got $v: $detail"
    fi
done
min_pct=$MIN_ESCAPE_PCT_USER
[ "$IS_ROOT" = 1 ] && min_pct=$MIN_ESCAPE_PCT_ROOT
need=$(((${#PROBES[@]} * min_pct + 99) / 100))
if [ "$NONE_INFO" = 1 ]; then
    :
elif [ "$escapes_none" -ge "$need" ]; then
    pass "$escapes_none of ${#PROBES[@]} probes escaped with no sandbox (need $need)"
else
    fail "only $escapes_none of ${#PROBES[@]} probes escaped with no sandbox (need $need, $min_pct%)"
fi

# The host is as it was.
check() { # check DESCRIPTION COMMAND...
    local what=$1
    shift
    if "$@"; then pass "host check: $what"; else fail "host check: $what"; fi
}
check "hostname unchanged ($HOST_HOSTNAME)" test "$(hostname)" = "$HOST_HOSTNAME"
check "nothing written to the outside directory" test -z "$(ls -A "$TMP/outside")"
check "host helper still alive" kill -0 "$HELPER_PID"
leftovers=()
for d in /proc/[0-9]*; do
    pid=${d#/proc/}
    [ "$pid" = "$$" ] || [ "$pid" = "$HELPER_PID" ] && continue
    if grep -qaF -- "marker=$MARKER" "$d/cmdline" 2>/dev/null; then
        leftovers+=("$pid")
    fi
done
check "no probe or sandbox process left (${leftovers[*]:-none})" test ${#leftovers[@]} = 0
for pid in "${leftovers[@]}"; do kill -KILL "$pid" 2>/dev/null; done
check "no mount of the run's files left on the host" test -z "$(grep -F -- "$TMP" /proc/self/mountinfo)"
left=$(cgroups_left; oci_cgroups_left)
check "no cgroup of the run's fluebox processes left behind${left:+: $left}" test -z "$left"
for d in /sys/fs/cgroup/*"$OCI_CG" /sys/fs/cgroup/*/*"$OCI_CG"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
if [[ " $MODES " == *" oci "* ]]; then
    check "no container state left (fluebox oci)" test -z "$(ls -A "$TMP/ocistate" 2>/dev/null)"
fi

say ""
say "blocked: every attempt failed; allowed: escaped where the profile permits it"
say "(reasons below); ESCAPED!/ERROR!/SKIP!: failures. 'none' is the same probe"
say "with no sandbox: escaped there shows the probe can see its escape."
[ -n "$NO_MEMCG" ] && say "no-cgroup: $ME cannot create cgroups here, so --mem is a per-process RLIMIT_DATA only (rootless limit; see docs/run.md)"
[ "$IS_ROOT" != 1 ] && say "shared-uid: rootless sandboxes run as $ME, so counters the kernel keeps per host uid (pipe pages, fds in flight, epoll watches) are shared with $ME's processes (rootless limit; see docs/run.md); not run"
[ -n "$NO_PIDSCG_LL" ] && say "no-cgroup (fork_bomb, landlock): without a pids cgroup --isolation landlock does not bound processes (see docs/where-it-runs.md)"
say "no sandbox: $escapes_none of ${#PROBES[@]} probes escaped (need $need)"
shown=""
for k in "${!ALLOWED[@]}"; do
    if [[ $MODES == *" ${k#*:}"* ]] && [ "${CELL[$k]:-}" = ESCAPED ]; then
        shown="$shown\n  allowed ${k%%:*} under ${k#*:}: ${ALLOWED[$k]}"
    fi
done
[ -n "$shown" ] && printf 'allowed escapes:%b\n' "$shown"
if [ "$VERBOSE" = 1 ]; then
    say ""
    for p in "${PROBES[@]}"; do
        for m in $MODES; do
            IFS=$'\t' read -r v rc detail <"$TMP/out/$p.$m.v"
            printf '  %-8s %-8s %s: %s\n' "$m" "$v" "$p" "$detail"
        done
    done
fi
if [ "$TAP" = 1 ]; then
    printf '%s\n' "${TAPLINES[@]}"
fi
if [ ${#FAILURES[@]} -gt 0 ]; then
    say ""
    say "failures ($ME):"
    for f in "${FAILURES[@]}"; do say "  $f"; done
fi

if [ -n "$MD_OUT" ]; then
    # shellcheck disable=SC2016 # backquotes are markdown here
    {
        [ "$MD_APPEND" = 1 ] || printf '# Escape probes: latest run\n\n'
        printf '## As %s\n\n' "$ME"
        printf 'Produced by `tests/probes/run.sh%s` at %s on %s, commit %s.\n' \
            "$([ "$WITH_BWRAP" = 1 ] && echo ' --bwrap')" "$(date -u +%Y-%m-%dT%H:%M:%SZ)" \
            "$(uname -sr), $(nproc) CPUs" "$COMMIT"
        printf 'Sandboxed runs: `--mem %s --pids %s --disk %s`.\n\n' "$MEM" "$PIDS" "$DISK"
        printf '| probe |'
        for m in $MODES; do printf ' %s |' "$m"; done
        printf '\n|---|'
        for m in $MODES; do printf -- '---|'; done
        printf '\n'
        printf '%s\n' "${MD_ROWS[@]}"
        printf '\n%s passed, %s failed (this user).' "$PASS" "$FAIL"
        printf ' No sandbox: %s of %s probes escaped.\n' "$escapes_none" "${#PROBES[@]}"
        if [ ${#FAILURES[@]} -gt 0 ]; then
            printf '\nFailures:\n\n'
            for f in "${FAILURES[@]}"; do printf -- '- %s\n' "$f"; done
        fi
        printf '\n'
    } >"$TMP/md.part"
    if [ "$MD_APPEND" = 1 ]; then cat "$TMP/md.part" >>"$MD_OUT"; else cp "$TMP/md.part" "$MD_OUT"; fi
fi

# ---- the same as an unprivileged user -------------------------------------
if [ "$IS_ROOT" = 1 ] && [ "$RUN_USER" = 1 ] && id "$PROBE_USER" >/dev/null 2>&1; then
    say ""
    say "---- again as $PROBE_USER ----"
    args=(--sub --fluebox "$FLUEBOX" --profiles "$PROFILES")
    [ -n "$ONLY" ] && args+=(--only "$ONLY")
    [ "$WITH_BWRAP" = 1 ] && args+=(--bwrap)
    [ "$VERBOSE" = 1 ] && args+=(--verbose)
    [ "$TAP" = 1 ] && args+=(--tap)
    if [ -n "$MD_OUT" ]; then
        # The unprivileged run appends its table to a copy it can write.
        cp "$MD_OUT" "$TMP/sub.md" && chmod 666 "$TMP/sub.md"
        args+=(--markdown "$TMP/sub.md" --md-append)
    fi
    subout=$TMP/sub.out
    runuser -u "$PROBE_USER" -- env -i PATH="$PATH" HOME="$TMP" LANG=C.UTF-8 TMPDIR=/tmp \
        FBPROBE_COMMIT="$COMMIT" \
        bash "$HERE/run.sh" "${args[@]}" </dev/null 2>&1 | tee "$subout"
    [ -n "$MD_OUT" ] && [ -s "$TMP/sub.md" ] && cp "$TMP/sub.md" "$MD_OUT"
    last=$(tail -n 1 "$subout")
    if [[ $last =~ ^([0-9]+)\ passed,\ ([0-9]+)\ failed$ ]]; then
        PASS=$((PASS + BASH_REMATCH[1]))
        FAIL=$((FAIL + BASH_REMATCH[2]))
    else
        fail "the run as $PROBE_USER did not finish: $last"
        [ "$TAP" = 1 ] && say "not ok - probes: the run as $PROBE_USER did not finish"
        say "run as $PROBE_USER did not finish"
    fi
    say ""
fi

# The end marker of tests/tap.sh: the whole run got here.
[ "$TAP" = 1 ] && [ "$IS_SUB" = 0 ] && say "# end of suite"
say "$PASS passed, $FAIL failed"
[ "$FAIL" = 0 ]
