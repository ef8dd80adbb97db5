#!/usr/bin/env bash
# bench/run.sh — `make bench`: fluebox side by side with plain fork+exec,
# unshare(1) and bubblewrap, measured by bench/fbbench in one run, variants
# interleaved, medians with p90/p99 and ratios to the baselines of the same run.
#
# Writes bench/results/latest.md (tables, the command, the machine) and
# bench/results/latest.json (the same numbers, machine-readable), and prints
# the tables. Never asserts anything: the targets are reported, not enforced.
#
# Usage: bench/run.sh [--quick] [--only "cold python node throughput rss sessions fork mcp egress engines tls density"]
#                     [--fluebox PATH] [--out DIR]
#   --quick   fewer repetitions (a smoke run; numbers are noisier)
#   DENSITY_SIZES=100,1000,10000 (environment, or make bench DENSITY_SIZES=...):
#             the numbers of idle sessions of the density group (default
#             100,1000; 10,000 takes minutes and about 10 GB, and as root
#             needs the 4,094 host id ranges fluebox has: see docs/bench.md)
#
# Adding a row group: write a group_NAME function that either calls
# `measure MODE TITLE BASELINES...` after filling V with variants (add NAME
# CMD...), or calls `skip NAME REASON`; then list it in BENCH_GROUPS.
set -u -o pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
FLUEBOX=${FLUEBOX:-$ROOT/fluebox}
OUT=$HERE/results
FBBENCH=$HERE/build/fbbench
QUICK=0
BENCH_GROUPS="cold cold_idle python node throughput rss sessions fork mcp egress engines tls density"

while [ $# -gt 0 ]; do
    case "$1" in
    --quick) QUICK=1 ;;
    --only) BENCH_GROUPS=$2; shift ;;
    --fluebox) FLUEBOX=$2; shift ;;
    --out) OUT=$2; shift ;;
    -h | --help) sed -n '2,/^set -u/p' "$0" | sed 's/^# \{0,1\}//; /^set -u/d'; exit 0 ;;
    *) echo "bench: unknown option $1" >&2; exit 2 ;;
    esac
    shift
done

die() { echo "bench: $*" >&2; exit 1; }
[ -x "$FBBENCH" ] || die "harness not built (make -f bench/bench.mk bench-build)"
[ -x "$FLUEBOX" ] || die "no fluebox binary at $FLUEBOX (run make first)"
FLUEBOX=$(cd "$(dirname "$FLUEBOX")" && pwd)/$(basename "$FLUEBOX")

# Repetitions: enough for a stable median and a meaningful p99 on a noisy
# 2-core machine; --quick divides them.
R_COLD=300 R_IDLE=40 R_PY=60 R_NODE=40 SECONDS_TP=5 R_RSS=5 R_SESS=30 R_EGRESS=15 R_FORK=20 R_MCP=300 R_ENG=20
R_TLS=15
if [ "$QUICK" = 1 ]; then
    R_COLD=40 R_IDLE=8 R_PY=10 R_NODE=8 SECONDS_TP=2 R_RSS=2 R_SESS=6 R_EGRESS=4 R_FORK=4 R_MCP=40 R_ENG=5
    R_TLS=3
fi

# ---- setup ---------------------------------------------------------------
# bubblewrap comes from Debian's package; install it when missing (root only).
if ! command -v bwrap >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        echo "bench: installing bubblewrap (apt-get install -y bubblewrap)"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null ||
            { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap >/dev/null; }
    fi
fi
HAVE_BWRAP=0
command -v bwrap >/dev/null && HAVE_BWRAP=1
PYTHON=/usr/bin/python3
NODE=$(command -v node || true)
[ -x "$PYTHON" ] || PYTHON=$(command -v python3 || true)

mkdir -p "$OUT"
MD=$OUT/latest.md
JSONL=$(mktemp "${TMPDIR:-/tmp}/fbbench.XXXXXX")
SKIPS=()
trap 'rm -f "$JSONL"' EXIT

# Without cgroup limits: the profile's own, explicitly relaxed when fluebox
# accepts "unlimited"; with: typical per-call limits.
NOLIMITS=()
for try in "--mem unlimited --pids unlimited --cpus unlimited" "--mem unlimited --pids unlimited"; do
    # shellcheck disable=SC2086 # word splitting intended
    if "$FLUEBOX" run --profile strict $try -- /bin/true >/dev/null 2>&1; then
        read -r -a NOLIMITS <<<"$try"
        break
    fi
done
LIMITS=(--mem 256M --pids 128 --cpus 1)

# ---- variants ---------------------------------------------------------------
V=()
add() { V+=("@$1"); shift; V+=("$@"); }

unshare_cmd() { # the same namespaces fluebox creates, nothing else
    echo unshare --user --map-root-user --pid --fork --mount --net --ipc --uts --cgroup
}

# bubblewrap with a layout comparable to fluebox's strict default: tmpfs
# root, read-only /usr and the merged links, ld.so cache and certificates,
# /proc, minimal /dev, tmpfs /tmp and /workspace, new session, every
# namespace, uid 1000, clean environment, die-with-parent.
BWRAP=()
if [ "$HAVE_BWRAP" = 1 ]; then
    BWRAP=(bwrap --unshare-all --unshare-user --uid 1000 --gid 1000 --die-with-parent
        --new-session --cap-drop ALL --hostname fluebox --tmpfs / --ro-bind /usr /usr)
    for l in bin lib lib32 lib64 sbin; do
        if [ -L "/$l" ]; then
            BWRAP+=(--symlink "$(readlink "/$l")" "/$l")
        elif [ -d "/$l" ]; then
            BWRAP+=(--ro-bind "/$l" "/$l")
        fi
    done
    BWRAP+=(--ro-bind-try /etc/ld.so.cache /etc/ld.so.cache
        --ro-bind-try /etc/ssl/certs /etc/ssl/certs
        --proc /proc --dev /dev --tmpfs /tmp --tmpfs /workspace --chdir /workspace
        --clearenv --setenv PATH /usr/local/bin:/usr/bin:/bin --setenv HOME /workspace
        --remount-ro /)
fi

# standard_set PAYLOAD...: plain, unshare, bwrap and fluebox's three profiles.
standard_set() {
    add plain "$@"
    # shellcheck disable=SC2046
    add unshare $(unshare_cmd) "$@"
    [ "$HAVE_BWRAP" = 1 ] && add bwrap "${BWRAP[@]}" -- "$@"
    for p in strict standard trusted; do
        add "fluebox-$p" "$FLUEBOX" run --profile "$p" "${NOLIMITS[@]}" -- "$@"
    done
}

measure() { # measure MODE TITLE [BASELINE...] — runs fbbench on V
    local mode=$1 title=$2
    shift 2
    local args=(--title "$title" --json "$JSONL" --md "$MD")
    for b in "$@"; do args+=(--baseline "$b"); done
    case "$mode" in
    time) args+=(--reps "$REPS" --warmup 5 --gap-ms "${GAP_MS:-0}") ;;
    throughput) args+=(--workers 2 --seconds "$SECONDS_TP") ;;
    rss) args+=(--reps "$R_RSS") ;;
    esac
    [ -n "${NOTE:-}" ] && args+=(--note "$NOTE")
    # Every variant, plain ones included, starts from the same small clean
    # environment, the one fluebox gives its commands: the caller's can change
    # what a payload does (NODE_EXTRA_CA_CERTS alone adds 25 ms to node).
    env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp LANG=C.UTF-8 TERM=dumb \
        "$FBBENCH" "$mode" "${args[@]}" "${V[@]}" || echo "bench: group \"$title\" failed" >&2
    V=()
    NOTE=""
    GAP_MS=0
}

skip() { # skip GROUP REASON
    SKIPS+=("$1"$'\t'"$2")
    printf '\n### %s\n\nskipped: %s\n' "$1" "$2" | tee -a "$MD"
}

# A private `fluebox serve --pool 2` for the fluebox-server rows (the warm
# path, `fluebox run --server`): SERVE_SOCK is its socket, empty when this
# build has no `run --server` or the server did not start.
SERVE_DIR="" SERVE_PID="" SERVE_SOCK=""
serve_start() {
    SERVE_SOCK=""
    "$FLUEBOX" run --help 2>/dev/null | grep -q -- '--server' || return 0
    SERVE_DIR=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-warm.XXXXXX")
    "$FLUEBOX" serve --socket "$SERVE_DIR/sock" --pool 2 --ready-fd 3 </dev/null >"$SERVE_DIR/log" 2>&1 3>"$SERVE_DIR/ready" &
    SERVE_PID=$!
    for _ in $(seq 200); do
        grep -q ready "$SERVE_DIR/ready" 2>/dev/null && break
        sleep 0.05
    done
    if grep -q ready "$SERVE_DIR/ready" 2>/dev/null; then SERVE_SOCK=$SERVE_DIR/sock
    else echo "bench: fluebox serve did not start: $(tail -n 1 "$SERVE_DIR/log")" >&2; fi
}
serve_stop() {
    [ -n "$SERVE_PID" ] && { kill -TERM "$SERVE_PID" 2>/dev/null; wait "$SERVE_PID" 2>/dev/null; }
    [ -n "$SERVE_DIR" ] && rm -rf "$SERVE_DIR"
    SERVE_DIR="" SERVE_PID="" SERVE_SOCK=""
}
WARM_NOTE=" fluebox-server: \`fluebox run --server SOCKET -- /bin/true\`, served by a private \`fluebox serve --pool 2\` (session create from the pool, one exec, destroy)."

# ---- row groups -------------------------------------------------------------
group_cold() {
    standard_set /bin/true
    add fluebox-default "$FLUEBOX" run -- /bin/true
    serve_start
    [ -n "$SERVE_SOCK" ] && add fluebox-server "$FLUEBOX" run --server "$SERVE_SOCK" -- /bin/true
    for p in strict standard trusted; do
        add "fluebox-$p+limits" "$FLUEBOX" run --profile "$p" "${LIMITS[@]}" -- /bin/true
    done
    REPS=$R_COLD
    NOTE="fluebox-default: a plain \`fluebox run -- /bin/true\` (the default profile, standard, with its own limits: 1 GiB memory, 512 pids, on a cgroup). +limits: ${LIMITS[*]} (cgroup set-up and removal included)."
    [ ${#NOLIMITS[@]} -gt 0 ] && NOTE="$NOTE Without: ${NOLIMITS[*]}."
    [ -n "$SERVE_SOCK" ] && NOTE="$NOTE$WARM_NOTE"
    measure time "cold start: /bin/true" plain unshare bwrap
    serve_stop
}

# The same start, but one at a time on an idle machine, as an agent's tool
# calls arrive: state the kernel keeps warm between back-to-back runs (an RCU
# grace period, for instance) has cooled down before each run.
group_cold_idle() {
    add plain /bin/true
    # shellcheck disable=SC2046
    add unshare $(unshare_cmd) /bin/true
    [ "$HAVE_BWRAP" = 1 ] && add bwrap "${BWRAP[@]}" -- /bin/true
    add fluebox-strict "$FLUEBOX" run --profile strict "${NOLIMITS[@]}" -- /bin/true
    add fluebox-default "$FLUEBOX" run -- /bin/true
    add fluebox-strict-default "$FLUEBOX" run --profile strict -- /bin/true
    add fluebox-strict+limits "$FLUEBOX" run --profile strict "${LIMITS[@]}" -- /bin/true
    serve_start
    [ -n "$SERVE_SOCK" ] && add fluebox-server "$FLUEBOX" run --server "$SERVE_SOCK" -- /bin/true
    REPS=$R_IDLE
    GAP_MS=200
    NOTE="fluebox-default: a plain \`fluebox run -- /bin/true\` (standard, its own limits). fluebox-strict-default: the strict profile's own limits, as a plain \`fluebox run --profile strict\` applies them."
    [ -n "$SERVE_SOCK" ] && NOTE="$NOTE$WARM_NOTE"
    measure time "cold start, one at a time: /bin/true after 200 ms idle" plain unshare bwrap
    serve_stop
}

group_python() {
    [ -n "$PYTHON" ] || { skip "python3 -c pass" "no python3"; return; }
    standard_set "$PYTHON" -c pass
    REPS=$R_PY
    measure time "real payload: $PYTHON -c pass" plain unshare bwrap
}

group_node() {
    [ -n "$NODE" ] || { skip "node -e 0" "no node"; return; }
    standard_set "$NODE" -e 0
    REPS=$R_NODE
    measure time "real payload: $NODE -e 0" plain unshare bwrap
}

group_throughput() {
    add plain /bin/true
    # shellcheck disable=SC2046
    add unshare $(unshare_cmd) /bin/true
    [ "$HAVE_BWRAP" = 1 ] && add bwrap "${BWRAP[@]}" -- /bin/true
    add fluebox-strict "$FLUEBOX" run --profile strict "${NOLIMITS[@]}" -- /bin/true
    add fluebox-strict+limits "$FLUEBOX" run --profile strict "${LIMITS[@]}" -- /bin/true
    add fluebox-default "$FLUEBOX" run -- /bin/true
    measure throughput "throughput: sandboxes per second, /bin/true, 2 parallel workers" \
        plain unshare bwrap
}

group_rss() {
    # shellcheck disable=SC2046
    add unshare $(unshare_cmd) /bin/sleep 1
    [ "$HAVE_BWRAP" = 1 ] && add bwrap "${BWRAP[@]}" -- /bin/sleep 1
    for p in strict standard trusted; do
        add "fluebox-$p" "$FLUEBOX" run --profile "$p" "${NOLIMITS[@]}" -- /bin/sleep 1
    done
    add fluebox-strict+limits "$FLUEBOX" run --profile strict "${LIMITS[@]}" -- /bin/sleep 1
    add fluebox-default "$FLUEBOX" run -- /bin/sleep 1
    NOTE="Sampled 300-700 ms into a run whose payload sleeps 1 s. \"Own\": the process the harness launched (fluebox's supervisor, bwrap's outer process); \"all its processes\": that one plus its descendants running the same binary (fluebox's pid-1 init, bwrap's inner pid 1). RssAnon: the launched process's private anonymous memory, what one more running copy costs; the rest of its RSS is file pages of its binary and libraries, shared by every copy through the page cache."
    measure rss "memory: peak RSS of the sandbox process itself" bwrap unshare
}

# Sessions: round trips through `fluebox serve` on a private socket, with a
# warm pool of 2. Skipped (with the reason) when the build has no server.
group_sessions() {
    local title="sessions: round trips through fluebox serve"
    if ! "$FLUEBOX" serve --help >/dev/null 2>&1; then
        skip "$title" "fluebox serve is not available in this build"
        return
    fi
    local dir pid
    dir=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-serve.XXXXXX")
    "$FLUEBOX" serve --socket "$dir/sock" --pool 2 </dev/null >"$dir/log" 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        [ -S "$dir/sock" ] && break
        sleep 0.05
    done
    if [ -S "$dir/sock" ]; then
        env -i PATH=/usr/bin:/bin "$FBBENCH" session --socket "$dir/sock" --reps "$R_SESS" \
            --warmup 3 --title "$title" --json "$JSONL" --md "$MD" ||
            echo "bench: group \"$title\" failed" >&2
    else
        skip "$title" "fluebox serve did not start: $(tail -n 1 "$dir/log")"
    fi
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$dir"
}

# Fork: session.fork (and snapshot/restore) against a fresh session.create,
# time and the new session's memory, with a typical repository (bench/fork.py).
group_fork() {
    local title="session fork: time against a fresh create"
    if ! "$FLUEBOX" session fork --help >/dev/null 2>&1; then
        skip "$title" "this build has no session fork"
        return
    fi
    if [ -z "$PYTHON" ]; then
        skip "$title" "no python3"
        return
    fi
    "$PYTHON" "$HERE/fork.py" --fluebox "$FLUEBOX" --reps "$R_FORK" --json "$JSONL" --md "$MD" ||
        echo "bench: group \"$title\" failed" >&2
}

# MCP: the round trip of a tool call (exec of /bin/true) through `fluebox
# mcp` on its stdio, beside ping and the same exec on the wire protocol
# (bench/mcp.py).
group_mcp() {
    local title="mcp: a tool call's round trip through fluebox mcp"
    if ! "$FLUEBOX" mcp --help >/dev/null 2>&1; then
        skip "$title" "this build has no fluebox mcp"
        return
    fi
    if [ -z "$PYTHON" ]; then
        skip "$title" "no python3"
        return
    fi
    "$PYTHON" "$HERE/mcp.py" --fluebox "$FLUEBOX" --reps "$R_MCP" --json "$JSONL" --md "$MD" ||
        echo "bench: group \"$title\" failed" >&2
}

# Engines: `docker run --rm` and `podman run --rm` of /bin/true with runc
# and with fluebox as the runtime, interleaved (bench/engines.sh: private
# daemons, as the engine test suites run them).
group_engines() {
    local title="engines: a container's life (run --rm true) through Docker and Podman"
    if [ "$(id -u)" != 0 ]; then
        skip "$title" "needs root (the engines run as root)"
        return
    fi
    if ! command -v dockerd >/dev/null && ! command -v podman >/dev/null; then
        skip "$title" "neither Docker (docker.io) nor Podman is installed (scripts/deps.sh test)"
        return
    fi
    bash "$HERE/engines.sh" "$FBBENCH" "$FLUEBOX" "$R_ENG" "$JSONL" "$MD" ||
        echo "bench: group \"$title\" failed" >&2
}

# Egress: 256 MB over HTTP from a server on the host's loopback, fetched
# directly and through fluebox's allowlist relay (--allow-net with
# --egress-resolve pointing the name at the local server). The 0-byte fetch
# through the relay is the fixed cost (sandbox start, DNS, connect) that the
# throughput figure under the targets subtracts.
group_egress() {
    local title="egress: 256 MB over HTTP from a host loopback server"
    if ! "$FLUEBOX" --help 2>&1 | grep -q -- --egress-resolve; then
        skip "$title" "this build has no egress relay (--egress-resolve)"
        return
    fi
    local dir pid port size=268435456
    dir=$(mktemp -d "${TMPDIR:-/tmp}/fbbench-egress.XXXXXX")
    "$FBBENCH" http-source "$dir/port" </dev/null >/dev/null 2>&1 &
    pid=$!
    for _ in $(seq 100); do
        [ -s "$dir/port" ] && break
        sleep 0.05
    done
    port=$(cat "$dir/port" 2>/dev/null)
    if [ -z "$port" ]; then
        skip "$title" "the loopback HTTP source did not start"
    else
        local relay=("$FLUEBOX" run --profile standard --allow-net "bench.test:$port"
            --egress-resolve "bench.test:$port=127.0.0.1:$port"
            --ro-bind "$(dirname "$FBBENCH"):/bench" -- /bench/fbbench http-fetch bench.test "$port")
        add direct "$FBBENCH" http-fetch 127.0.0.1 "$port" "$size"
        add fluebox-relay "${relay[@]}" "$size"
        add fluebox-relay-0B "${relay[@]}" 0
        REPS=$R_EGRESS
        NOTE="direct: the same client on the host. fluebox-relay-0B: a 0-byte body through the relay, the fixed cost of a run (sandbox, DNS, connect)."
        measure time "$title" direct
    fi
    kill -TERM "$pid" 2>/dev/null
    wait "$pid" 2>/dev/null
    rm -rf "$dir"
}

# The relay with interception (issue 24): requests/s and MB/s through an
# inspected HTTPS host (a --secret for it) against direct TLS to the same
# local server and against the relay passing TLS end to end (bench/tls.py,
# with bench/tls_source.c as the server).
group_tls() {
    local title="relay with interception: HTTPS requests/s and MB/s"
    if ! "$FLUEBOX" run --help 2>&1 | grep -q -- --secret; then
        skip "$title" "this build has no --secret"
        return
    fi
    if [ -z "$PYTHON" ] || ! command -v curl >/dev/null || ! command -v openssl >/dev/null ||
        [ ! -x "$HERE/build/fbtls-source" ]; then
        skip "$title" "needs python3, curl, openssl and bench/build/fbtls-source"
        return
    fi
    "$PYTHON" "$HERE/tls.py" --fluebox "$FLUEBOX" --source "$HERE/build/fbtls-source" --reps "$R_TLS" \
        --json "$JSONL" --md "$MD" || echo "bench: group \"$title\" failed" >&2
}

# Density: idle sessions in one `fluebox serve` (bench/density.py): memory,
# descriptors, creates/s, server.info and exec latencies with them live,
# and the fair queue between two clients.
group_density() {
    local title="density: idle sessions in one fluebox serve"
    if ! "$FLUEBOX" serve --help >/dev/null 2>&1; then
        skip "$title" "fluebox serve is not available in this build"
        return
    fi
    if [ -z "$PYTHON" ]; then
        skip "$title" "no python3"
        return
    fi
    local sizes=${DENSITY_SIZES:-100,1000} reps=50
    [ "$QUICK" = 1 ] && { sizes=${DENSITY_SIZES:-100}; reps=10; }
    "$PYTHON" "$HERE/density.py" --fluebox "$FLUEBOX" --sizes "$sizes" --reps "$reps" \
        --json "$JSONL" --md "$MD" 2>/dev/null || echo "bench: group \"$title\" failed" >&2
}

# ---- run ------------------------------------------------------------------
LOAD_START=$(cut -d' ' -f1-3 /proc/loadavg)
cpu=$(grep -m1 'model name' /proc/cpuinfo | sed 's/.*: //')
mem=$(awk '/MemTotal/ {printf "%.1f GB", $2 / 1048576}' /proc/meminfo)
# shellcheck disable=SC1091
os=$(. /etc/os-release 2>/dev/null && echo "${PRETTY_NAME:-unknown}")
fbver=$("$FLUEBOX" --version 2>/dev/null | head -n 1)
bwver=$([ "$HAVE_BWRAP" = 1 ] && bwrap --version 2>/dev/null | head -n 1 || echo "not installed")
unver=$(unshare --version 2>/dev/null | head -n 1)
rev=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
when=$(date -u +%Y-%m-%dT%H:%M:%SZ)
cmdline="make bench"
[ "$QUICK" = 1 ] && cmdline="make bench-quick"
{
    echo "# fluebox benchmarks"
    echo
    echo "Produced by \`$cmdline\` (bench/run.sh) at $when, commit $rev, as $(id -un)."
    echo
    echo "Machine: $cpu, $(nproc) CPUs, $mem RAM, $os, Linux $(uname -r)."
    echo "Versions: $fbver; $bwver; $unver."
    echo "Load average when it started: $LOAD_START (interleaving spreads"
    echo "other work on the machine over every variant alike; absolute times still move with it)."
} >"$MD"
cat "$MD"

for g in $BENCH_GROUPS; do
    if declare -F "group_$g" >/dev/null; then
        "group_$g"
    else
        echo "bench: no group $g" >&2
    fi
done

printf '\nLoad average when it ended: %s.\n' "$(cut -d' ' -f1-3 /proc/loadavg)" | tee -a "$MD"

# Targets from issue 18, reported (never asserted): each row met or not met.
if [ -n "$PYTHON" ] && [ -s "$JSONL" ]; then
    targets=$("$PYTHON" - "$JSONL" <<'EOF'
import json, sys
groups = [json.loads(l) for l in open(sys.argv[1]) if l.strip()]
def get(title_start, name):
    for g in groups:
        if g["title"].startswith(title_start):
            for v in g["variants"]:
                if v["name"] == name:
                    return v
    return None
out = ["", "### targets of issue 18 (reported, not asserted)", ""]
# Why a target is not met: what bench/README.md measured ("Where fluebox's
# start-up time goes"), said under each row that is not met.
WHY = {
    "cold": "a cold start is spread over many small steps, none above about 15% of a run "
            "(bench/README.md, \"The cold path, phase by phase\"): the supervisor up to the clone "
            "0.6 ms, clone3 with the namespaces 0.9, the root, /dev and /proc 0.7, pivot_root 0.35, "
            "init and its seccomp filters 1.1, the command's fork and exec, the namespaces' teardown "
            "0.7. Most of it is kernel work bubblewrap does too; unshare builds no root, loads no "
            "filter and makes no cgroup.",
    "throughput": "each sandbox is the same kernel work as a cold start, now on both CPUs at once.",
    "warm": "a run through the server still starts the client (exec of a static binary, about "
            "0.6 ms on a quiet machine), makes a session.create (the caller's PATH resolved: "
            "0.5-2 ms), an exec inside the session (server, its init, fork and exec: about 1 ms) "
            "and a destroy that waits until the session's init is gone (0.7 ms): 0.2x of bwrap is "
            "about what the client's own exec costs.",
    "egress": "relayed bytes cross loopback twice, through a third process (the relay, splice "
              "through a pipe) that shares the two CPUs with the client and the server.",
    "rss": "the peak counts the pages of fluebox's static binary the kernel maps around each "
           "page touched (fault-around, 64 KB at a time): most of the text, shared by every "
           "running copy through the page cache; what one more copy costs is the private part.",
    "exec": "a session exec crosses the server's socket, the session's init and a fork and exec "
            "inside, four hand-offs a plain fork+exec does not make; on a quiet machine it is "
            "about 1.3x, under load more.",
}
said = set()
def line(what, value, target, ok, why=None):
    mark = "not measured" if ok is None else ("met" if ok else "not met")
    out.append(f"- {what}: {value} (target {target}): {mark}")
    if ok is False and why:
        out.append(f"  - why: {'as above' if why in said else WHY[why]}")
        said.add(why)
def ratio(what, a, b, key, target, limit, cmp, why=None):
    if a and b and a.get(key) and b.get(key):
        r = a[key] / b[key]
        line(what, f"{r:.2f}x", target, cmp(r, limit), why)
    else:
        line(what, "-", target, None)
le = lambda r, l: r <= l
ge = lambda r, l: r >= l
for title, label in (("cold start: /bin/true", "back to back"),
                     ("cold start, one at a time", "one at a time")):
    fb, bw, un = (get(title, n) for n in ("fluebox-default", "bwrap", "unshare"))
    ratio(f"cold start {label}, `fluebox run` (default profile and limits) / bwrap, medians",
          fb, bw, "median_ms", "<= 0.6x", 0.6, le, "cold")
    ratio(f"cold start {label}, `fluebox run` / unshare, medians", fb, un, "median_ms",
          "<= 1.3x", 1.3, le, "cold")
    ratio(f"cold start {label}, `fluebox run` / bwrap, p99", fb, bw, "p99_ms", "<= 0.7x", 0.7, le,
          "cold")
title = "throughput"
ratio("sandboxes per second with 2 workers, `fluebox run` / bwrap",
      get(title, "fluebox-default"), get(title, "bwrap"), "per_sec", ">= 1.5x", 1.5, ge,
      "throughput")
for title, label in (("cold start: /bin/true", "back to back"),
                     ("cold start, one at a time", "one at a time")):
    ratio(f"warm path {label}: `fluebox run --server` (a `fluebox serve --pool 2`) / bwrap, medians",
          get(title, "fluebox-server"), get(title, "bwrap"), "median_ms", "<= 0.2x", 0.2, le,
          "warm")
d, r, r0 = (get("egress", n) for n in ("direct", "fluebox-relay", "fluebox-relay-0B"))
if d and r and r0 and d["median_ms"] and r["median_ms"] and r0["median_ms"] is not None:
    mb = 256.0
    direct = mb / (d["median_ms"] / 1000)
    relay = mb / (max(r["median_ms"] - r0["median_ms"], 0.001) / 1000)
    line("egress relay throughput / direct loopback",
         f"{relay:.0f} MB/s / {direct:.0f} MB/s = {relay / direct:.2f}x", ">= 0.8x",
         relay / direct >= 0.8, "egress")
else:
    line("egress relay throughput / direct loopback", "-", ">= 0.8x", None)
fc, cc, ft = (get("session fork: time", n) for n in ("fork-cow", "create-cow", "fork-tmpfs"))
if fc and cc and cc["median_ms"]:
    line("session.fork of a copy-on-write session / session.create of one (medians)",
         f"{fc['median_ms']:.1f} ms / {cc['median_ms']:.1f} ms = {fc['median_ms'] / cc['median_ms']:.2f}x",
         "milliseconds; the copy is of the changed files only", fc["median_ms"] < 100)
if ft:
    line("session.fork copying a typical repository in a tmpfs workspace (median)",
         f"{ft['median_ms']:.1f} ms", "milliseconds", ft["median_ms"] < 1000)
m = get("memory", "fluebox-default")
if m and m.get("self_hwm_kb"):
    kb = m["self_hwm_kb"]
    anon = m.get("self_anon_kb")
    extra = f"; of it private (RssAnon) {anon / 1024:.2f} MB, the rest pages of the binary shared through the page cache" if anon else ""
    line("supervisor's own peak RSS, `fluebox run`", f"{kb / 1024:.2f} MB{extra}", "<= 1.2 MB",
         kb <= 1229, "rss")
else:
    line("supervisor's own peak RSS, `fluebox run`", "-", "<= 1.2 MB", None)
e, p = get("sessions", "exec /bin/true"), get("cold start: /bin/true", "plain")
if e and p and e.get("median_ms") and p.get("median_ms"):
    r = e["median_ms"] / p["median_ms"]
    line("session exec round trip / plain fork+exec of /bin/true, medians",
         f"{e['median_ms']:.2f} ms / {p['median_ms']:.2f} ms = {r:.2f}x", "<= 1.5x", r <= 1.5,
         "exec")
else:
    line("session exec round trip / plain fork+exec, medians", "-", "<= 1.5x", None)
# Issue 30: density, creation, the warm run.
WHY30 = {
    "mem": "measured step by step in docs/bench.md (\"Where an idle session's memory goes\"): "
           "nearly all of it is the kernel's, for the isolation itself: a network namespace "
           "(about 200 KiB of slab: its loopback, sysctl and proc tables), the v1 memory and pids "
           "cgroups (about 150 KiB, plus the memory cgroup's shrinker table, which grows with the "
           "most superblocks the machine has ever had mounted at once: one 520-byte unit per 64, in "
           "every memory cgroup), the mount namespace with its tmpfs, proc and devpts (about 100 "
           "KiB); then the page tables of the session's init (about 60 KiB) and its kernel stack "
           "(16 KiB). The server's own share is about 10 KiB.",
    "fds": "an idle session holds its control socket (init's only channel); its network's "
           "listening sockets are held by its init until the first query or connection (then "
           "2 more without an allowlist); "
           "a --cow session also holds its scratch space; pidfd, cgroup directories, host id "
           "lock, relay epoll and timer are gone (docs/bench.md).",
    "creates": "every create is a full sandbox build (clone3 with new namespaces, the root, "
               "/proc, a cgroup, seccomp, init's exec of a fresh image) on 2 CPUs; the kernel's "
               "work per build is the cold start's, and grows with the sessions already live: the "
               "clone copies the server's page tables and descriptor table (1 per session) and the "
               "child closes the descriptors again, pivot_root walks every task of the machine, a "
               "memory cgroup's shrinker table grows with the machine's superblocks (perf, step by "
               "step: docs/bench.md). The server's own walks of every session per create and per "
               "turn of its loop are gone.",
    "info": "server.info counts the caller's sessions (a walk of all of them, about 1 ms at "
            "10,000); a loaded machine moves its p99.",
    "exec": "an exec crosses the server, the session's init and a fork and exec inside; on a "
            "loaded machine more.",
    "fair": "a create that waits behind others still waits for a worker: the round robin "
            "gives it the next free one, which is as far as a build takes.",
    "warm": "two process starts are its floor: the client's own exec (a static binary) and the "
            "command's fork and exec inside, each about a plain fork+exec, so about 2x a plain "
            "fork+exec (about 0.3x bwrap) before any sandbox work; then one request that takes a "
            "pool sandbox, the hop from the server to the session's init and back, and the "
            "destroy after the answer (measured step by step in docs/bench.md). A client "
            "library's `run` call skips the client's exec.",
}
said30 = set()
def line30(what, value, target, ok, why):
    mark = "not measured" if ok is None else ("met" if ok else "not met")
    out.append(f"- {what}: {value} (target {target}): {mark}")
    if ok is False:
        out.append(f"  - why: {'as above' if why in said30 else WHY30[why]}")
        said30.add(why)
out += ["", "### targets of issue 30 (reported, not asserted)", ""]
dens = [g for g in groups if g["title"].startswith("density")]
for g in dens:
    for v in g["variants"]:
        n = v["sessions"]
        line30(f"{n} idle sessions: memory per session (MemAvailable drop / N; slab "
               f"{v['slab_per_session_kib']:.0f} KiB, page tables {v['pagetables_per_session_kib']:.0f} KiB of it)",
               f"{v['mem_per_session_kib']:.0f} KiB", "<= 512 KiB", v["mem_per_session_kib"] <= 512, "mem")
        line30(f"{n} idle sessions: server descriptors per session", f"{v['fds_per_session']:.2f}",
               "<= 3", v["fds_per_session"] <= 3, "fds")
        line30(f"{n} sessions: creates per second", f"{v['creates_per_s']:.0f}", ">= 150",
               v["creates_per_s"] >= 150, "creates")
        if v.get("info_p99_ms") is not None:
            line30(f"{n} sessions live: server.info p99", f"{v['info_p99_ms']:.2f} ms", "< 10 ms",
                   v["info_p99_ms"] < 10, "info")
        if v.get("exec_p50_ms") is not None:
            line30(f"{n} sessions live: exec /bin/true p50", f"{v['exec_p50_ms']:.2f} ms", "< 5 ms",
                   v["exec_p50_ms"] < 5, "exec")
        f = v.get("fair")
        if f and f.get("b_p99_ms") is not None:
            line30(f"{n} sessions: one client's single create while another has {f['burst']} in flight, p99",
                   f"{f['b_p99_ms']:.1f} ms ({f['b_creates_during_burst']} answered during the burst)",
                   "< 50 ms", f["b_p99_ms"] < 50, "fair")
if not dens:
    out.append("- density: not measured")
for title, label in (("cold start: /bin/true", "back to back"),
                     ("cold start, one at a time", "one at a time")):
    w, bw, pl = (get(title, n) for n in ("fluebox-server", "bwrap", "plain"))
    if w and bw and w.get("median_ms") and bw.get("median_ms"):
        r = w["median_ms"] / bw["median_ms"]
        line30(f"warm run {label}, `fluebox run --server` / bwrap, medians", f"{r:.2f}x", "<= 0.25x",
               r <= 0.25, "warm")
    if w and pl and w.get("median_ms") and pl.get("median_ms"):
        r = w["median_ms"] / pl["median_ms"]
        line30(f"warm run {label}, `fluebox run --server` / plain fork+exec, medians", f"{r:.2f}x",
               "<= 1.6x", r <= 1.6, "warm")
print("\n".join(out))
EOF
    )
    printf '%s\n' "$targets" | tee -a "$MD"
fi

{
    printf '{"generated":"%s","command":"%s","commit":"%s","user":"%s",' "$when" "$cmdline" "$rev" "$(id -un)"
    printf '"machine":{"cpu":"%s","cpus":%s,"memory":"%s","os":"%s","kernel":"%s","loadavg_start":"%s","loadavg_end":"%s"},' \
        "$cpu" "$(nproc)" "$mem" "$os" "$(uname -r)" "$LOAD_START" "$(cut -d' ' -f1-3 /proc/loadavg)"
    printf '"versions":{"fluebox":"%s","bwrap":"%s","unshare":"%s"},' "$fbver" "$bwver" "$unver"
    printf '"groups":['
    sep=""
    while IFS= read -r l; do
        printf '%s%s' "$sep" "$l"
        sep=","
    done <"$JSONL"
    printf '],"skipped":['
    sep=""
    for s in "${SKIPS[@]}"; do
        printf '%s{"group":"%s","reason":"%s"}' "$sep" "${s%%$'\t'*}" "${s#*$'\t'}"
        sep=","
    done
    printf ']}\n'
} >"$OUT/latest.json"
# No machine paths in what gets committed: the binary becomes ./fluebox and
# paths inside the repository become relative to it.
for f in "$MD" "$OUT/latest.json"; do
    sed -i -e "s#$FLUEBOX#./fluebox#g" -e "s#$ROOT/##g" "$f"
done
echo
echo "bench: wrote ${OUT#"$ROOT"/}/latest.md and ${OUT#"$ROOT"/}/latest.json"
