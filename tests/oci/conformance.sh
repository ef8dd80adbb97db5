#!/bin/bash
# tests/oci/conformance.sh — the OCI runtime conformance suite
# (opencontainers/runtime-tools) against runc and fluebox, in the same run.
#
#   tests/oci/conformance.sh [--all] [--table FILE] [TEST ...]
#
# The suite's source is test data, never part of the repository: the
# tarball named by $OCI_RUNTIME_TOOLS, else runtime-tools-*.tar.gz in
# ../shared/oci next to the repository (or next to the directory holding
# it). It is extracted to a scratch directory and built offline with
# Debian's Go (GOFLAGS=-mod=vendor GOPROXY=off; the build cache is kept in
# build/oci-gocache). Each test runs as RUNTIME=runc and as
# RUNTIME=fluebox-oci (a link to fluebox, its state under a scratch root);
# their TAP assertions are counted (the tests that run a checker inside the
# container exit 0 when it cannot start, so exit codes say nothing).
#
# By default the tests make check needs: the lifecycle (create, start,
# state, kill, delete), default, mounts, process, root_readonly_true,
# hostname, linux_seccomp, linux_masked_paths, linux_readonly_paths and a
# few more; --all runs all of them. A test passes when every assertion runc
# passes passes under fluebox too, except the differences DIFF lists with
# their reasons (fluebox's boundary, on purpose). --table FILE writes the
# counts as a markdown table (for the README).
#
# Prints "ok - ..." / "not ok - ..." per test and "# end of suite".
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
ROOT=${ROOT:-$(cd "$HERE/../.." && pwd)}
FB=${FB:-$ROOT/fluebox}
ALL=0
TABLE=""
ONLY=()
while [ $# -gt 0 ]; do
    case "$1" in
    --all) ALL=1 ;;
    --table) TABLE=$2; shift ;;
    *) ONLY+=("$1") ;;
    esac
    shift
done

DEFAULT_TESTS="create start state kill delete default mounts process root_readonly_true hostname
  linux_seccomp linux_masked_paths linux_readonly_paths linux_sysctl linux_uid_mappings
  process_user process_rlimits linux_ns_path linux_cgroups_pids"

# Assertions runc passes that fluebox fails on purpose: "TEST:NUMBER".
declare -A DIFF=(
    # The container's writes to its root land in an upper layer of its own
    # (oci_mount.c): they never reach the bundle, so a test that looks for
    # a file the container wrote in rootfs/ on the host does not find it.
    [start:4]="the container's writes to its root stay in the container (the test reads them from the host)"
    [start:6]="the container's writes to its root stay in the container (the test reads them from the host)"
    [killsig:1]="the container's writes to its root stay in the container (the test reads them from the host)"
    [killsig:2]="the container's writes to its root stay in the container (the test reads them from the host)"
    [killsig:3]="the container's writes to its root stay in the container (the test reads them from the host)"
    # Namespaces the spec leaves out are created anyway; a mount namespace
    # cannot be joined.
    [linux_ns_itype:1]="every container gets its own namespaces (a spec without them is not the host's)"
    [linux_ns_path:2]="a container's mount namespace is always its own"
    # linux.devices: no host devices beyond the defaults.
    [linux_devices:*]="fluebox gives containers no host devices beyond the default ones"
    # Capabilities beyond the runtimes' default set are refused.
    [process_capabilities:*]="capabilities beyond the default set (CAP_SYS_ADMIN ...) are refused"
    [process_capabilities_fail:*]="an unknown capability is an error (the spec says it MUST be)"
    [linux_rootfs_propagation:*]="the test needs CAP_SYS_ADMIN, which fluebox does not grant"
    # kill of a container whose process has exited is an error (as the spec
    # says); runc's test passes only while `true` has not exited yet.
    [pidfile:1]="kill after the process exited is an error, as the spec says (a race in the test)"
)

say() { printf '%s\n' "$*"; }
ok() { echo "ok - oci-conformance: $1"; }
fail() { echo "not ok - oci-conformance: $1${2:+: $2}"; }
end() { echo "# end of suite"; exit 0; }

if [ "$(id -u)" != 0 ]; then
    echo "ok - oci-conformance: runtime-tools # SKIP needs root"
    end
fi
# shellcheck source=kernel.sh
. "$HERE/kernel.sh"
if ! oci_kernel_ok; then
    echo "ok - oci-conformance: runtime-tools # SKIP $OCI_KERNEL_WHY"
    end
fi
TARBALL=${OCI_RUNTIME_TOOLS:-}
if [ -z "$TARBALL" ]; then
    for d in "$ROOT/../shared/oci" "$ROOT/../../shared/oci"; do
        for f in "$d"/runtime-tools-*.tar.gz; do
            [ -f "$f" ] && TARBALL=$f
        done
    done
fi
if [ -z "$TARBALL" ] || [ ! -f "$TARBALL" ]; then
    echo "ok - oci-conformance: runtime-tools # SKIP its source is not here (set OCI_RUNTIME_TOOLS)"
    end
fi
for t in go runc make tar; do
    if ! command -v $t >/dev/null; then
        echo "ok - oci-conformance: runtime-tools # SKIP missing: $t"
        end
    fi
done

# The cgroup tests use fixed paths (/cgrouptest, testdir/ below the
# runtime's own cgroup); runc leaves such parents behind. Those that did not
# exist before are removed at the end when empty.
fixed_cgroups() {
    local h own
    for h in /sys/fs/cgroup/*/ /sys/fs/cgroup/; do
        [ -d "$h" ] || continue
        echo "${h%/}/cgrouptest"
        own=$(awk -F: -v h="$(basename "$h")" '$2 == h || ($2 ~ "(^|,)"h"(,|$)") {print $3}' /proc/self/cgroup | head -n 1)
        echo "${h%/}${own%/}/testdir"
    done
}
PRE_CG=$(for d in $(fixed_cgroups); do [ -d "$d" ] && echo "$d"; done)
T=$(mktemp -d /tmp/fbocirt.XXXXXX)
cleanup() { rm -rf "$T"; }
trap cleanup EXIT
SRC=$T/src
mkdir -p "$SRC" "$T/bin" "$T/state"
tar -xzf "$TARBALL" -C "$SRC" || { fail "extracting $TARBALL"; end; }
cp "$FB" "$T/bin/fluebox" && ln -s fluebox "$T/bin/fluebox-oci"

if [ "$ALL" = 1 ]; then
    TESTS=$(cd "$SRC/validation" && for d in */; do [ -f "$d${d%/}.go" ] && echo "${d%/}"; done)
elif [ ${#ONLY[@]} -gt 0 ]; then
    TESTS=${ONLY[*]}
else
    TESTS=$DEFAULT_TESTS
fi

export GOFLAGS=-mod=vendor GOPROXY=off GOTOOLCHAIN=local GO111MODULE=on
export GOCACHE=${GOCACHE:-$ROOT/build/oci-gocache}
mkdir -p "$GOCACHE"
(
    cd "$SRC" || exit 1
    make runtimetest >/dev/null || exit 1
    for t in $TESTS; do
        go build -o "validation/$t/$t.t" "./validation/$t/$t.go" || exit 1
    done
) >"$T/build.log" 2>&1 || { fail "building runtime-tools" "$(tail -n 5 "$T/build.log")"; end; }
ok "runtime-tools built offline ($(echo $TESTS | wc -w) tests)"

# run RUNTIME TEST: TAP in $T/out/RUNTIME/TEST.tap
mkdir -p "$T/out/runc" "$T/out/fluebox"
run() {
    local rt=$1 t=$2 bin
    bin=runc
    [ "$rt" = fluebox ] && bin=$T/bin/fluebox-oci
    (cd "$SRC" && FLUEBOX_OCI_ROOT=$T/state RUNTIME=$bin timeout 300 "validation/$t/$t.t") \
        >"$T/out/$rt/$t.tap" 2>"$T/out/$rt/$t.err"
}
# count FILE -> "ok not-ok skip" (ok counts the skips too, as TAP does)
count() {
    awk '/^ok / {p++} /^ok .*# SKIP/ {s++} /^not ok / {f++}
         END {printf "%d %d %d\n", p, f, s}' "$1"
}
# The failing assertions' numbers, and the passed ones (skips aside).
failing() { sed -n 's/^not ok \([0-9]*\).*/\1/p' "$1"; }
passing() { grep -v '# SKIP' "$1" | sed -n 's/^ok \([0-9]*\).*/\1/p'; }

# runc and fluebox side by side (the tests mostly wait: they poll the
# state once a second), runc's state on a private /run (runtime-tools
# passes no --root: runc would use the host's /run/runc).
# Tests that use fixed host paths (the cgroup tests' /cgrouptest, a cgroup
# of pids) run one runtime after the other.
serial() { case "$1" in linux_cgroups_* | delete_only_create_resources) return 0 ;; esac; return 1; }
runall() {
    local rt=$1 t
    for t in $TESTS; do serial "$t" || run "$rt" "$t"; done
}
# runc's containers a test left behind (its state is on the private /run,
# gone with it): delete them before leaving.
runc_sweep() {
    local id
    for id in $(runc list -q 2>/dev/null); do runc delete --force "$id" >/dev/null 2>&1; done
}
export -f run runall serial runc_sweep
export T SRC TESTS
unshare --mount --propagation private bash -c 'mount -t tmpfs -o mode=0755 tmpfs /run && runall runc; runc_sweep' &
p=$!
runall fluebox
wait $p
for t in $TESTS; do
    serial "$t" || continue
    unshare --mount --propagation private bash -c 'mount -t tmpfs -o mode=0755 tmpfs /run && run runc "$0"; runc_sweep' "$t"
    run fluebox "$t"
done
# A test runc itself could not run (no assertion at all, under load) runs
# again once: the comparison needs its result.
for t in $TESTS; do
    grep -q '^\(not \)\{0,1\}ok ' "$T/out/runc/$t.tap" && continue
    grep -q '^1\.\.0' "$T/out/runc/$t.tap" && continue
    unshare --mount --propagation private bash -c 'mount -t tmpfs -o mode=0755 tmpfs /run && run runc "$0"; runc_sweep' "$t"
done

declare -A SUM
for k in rp rf rs fp ff fs; do SUM[$k]=0; done
ROWS=()
for t in $TESTS; do
    read -r rp rf rs <<<"$(count "$T/out/runc/$t.tap")"
    read -r fp ff fs <<<"$(count "$T/out/fluebox/$t.tap")"
    SUM[rp]=$((SUM[rp] + rp)); SUM[rf]=$((SUM[rf] + rf)); SUM[rs]=$((SUM[rs] + rs))
    SUM[fp]=$((SUM[fp] + fp)); SUM[ff]=$((SUM[ff] + ff)); SUM[fs]=$((SUM[fs] + fs))
    # Assertions fluebox fails that runc passes: each must be a listed
    # difference.
    bad="" why=""
    runc_passes=" $(passing "$T/out/runc/$t.tap" | tr '\n' ' ') "
    for n in $(failing "$T/out/fluebox/$t.tap"); do
        [[ $runc_passes == *" $n "* ]] || continue
        if [ -n "${DIFF[$t:$n]:-}" ]; then
            why="${DIFF[$t:$n]}"
        elif [ -n "${DIFF[$t:*]:-}" ]; then
            why="${DIFF[$t:*]}"
        else
            bad="$bad $(grep -m1 "^not ok $n " "$T/out/fluebox/$t.tap")"
        fi
    done
    # A test whose checker ran for runc must also have run for fluebox
    # (fewer assertions is a failure too), unless listed.
    if [ -z "$bad" ] && [ $((fp - fs + ff)) -lt $((rp - rs + rf)) ] && [ -z "${DIFF[$t:*]:-}" ] &&
        ! grep -q "^$t:" <(printf '%s\n' "${!DIFF[@]}"); then
        bad=" fewer assertions ran ($((fp - fs + ff)) vs runc's $((rp - rs + rf))): $(tail -n 2 "$T/out/fluebox/$t.err" | tr '\n' ' ')"
    fi
    line="$t: fluebox $fp ok, $ff not ok, $fs skipped; runc $rp, $rf, $rs"
    if [ -n "$bad" ]; then
        fail "$line" "${bad:0:400}"
    else
        ok "$line${why:+ (differs on purpose: $why)}"
    fi
    ROWS+=("| $t | $fp | $ff | $fs | $rp | $rf | $rs |")
done
say "# total: fluebox ${SUM[fp]} ok, ${SUM[ff]} not ok, ${SUM[fs]} skipped; runc ${SUM[rp]}, ${SUM[rf]}, ${SUM[rs]}"
if [ -n "$TABLE" ]; then
    {
        echo "| test | fluebox ok | fluebox not ok | fluebox skip | runc ok | runc not ok | runc skip |"
        echo "|---|---:|---:|---:|---:|---:|---:|"
        printf '%s\n' "${ROWS[@]}"
        echo "| **total** | **${SUM[fp]}** | **${SUM[ff]}** | **${SUM[fs]}** | **${SUM[rp]}** | **${SUM[rf]}** | **${SUM[rs]}** |"
    } >"$TABLE"
fi
left=$(ls "$T/state" 2>/dev/null)
if [ -z "$left" ]; then ok "no container state left"; else fail "container state left" "$left"; fi
for d in $(fixed_cgroups); do
    [ -d "$d" ] || continue
    grep -qxF -- "$d" <<<"$PRE_CG" && continue
    find "$d" -depth -type d -exec rmdir {} + 2>/dev/null
done
end
