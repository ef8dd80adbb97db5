#!/bin/bash
# relay-bench.sh — relay throughput next to a direct loopback transfer.
#
#   tests/net/relay-bench.sh [FLUEBOX]     (default: ./fluebox)
#   environment: SIZE (bytes per transfer, default 1 GiB), RUNS (default 5)
#
# A server on 127.0.0.1 sends SIZE bytes to each client (tests/net/blast.c).
#   direct: the client on the host connects to 127.0.0.1:PORT
#   relay:  the client in a sandbox connects to blast.test:PORT
#           (--allow-net blast.test:PORT --egress-resolve blast.test=127.0.0.1),
#           i.e. through the sandbox's DNS, a listener in its namespace and
#           the supervisor's relay
# The client times connect-to-EOF itself, so sandbox start-up is not counted.
# Output, one per line (median of RUNS; MB/s = 10^6 bytes per second):
#   direct_loopback_MBps=N
#   relay_MBps=N
#   relay_vs_direct=0.NN
# Loopback only. Needs cc.
set -eu
cd "$(dirname "$0")/../.."
FB=$(readlink -f "${1:-./fluebox}")
SIZE=${SIZE:-1073741824}
RUNS=${RUNS:-5}
W=$(mktemp -d /tmp/fbrelay.XXXXXX)
chmod 755 "$W"
SRV=""
cleanup() { [ -n "$SRV" ] && kill "$SRV" 2>/dev/null; wait 2>/dev/null; rm -rf "$W"; }
trap cleanup EXIT
cc -O2 -o "$W/blast" tests/net/blast.c
"$W/blast" serve "$SIZE" > "$W/port" &
SRV=$!
for _ in $(seq 50); do [ -s "$W/port" ] && break; sleep 0.1; done
PORT=$(cat "$W/port")

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
direct() { "$W/blast" get 127.0.0.1 "$PORT"; }
relay() {
  "$FB" run -q --allow-net "blast.test:$PORT" --egress-resolve blast.test=127.0.0.1 \
    --ro-bind "$W:/blast" -- /blast/blast get blast.test "$PORT"
}
for _ in $(seq "$RUNS"); do
  direct >> "$W/direct"
  relay >> "$W/relay"
done
check() { awk -v s="$SIZE" '$1 != s {bad=1} END {exit bad}' "$1" || { echo "relay-bench: short transfer in $1" >&2; cat "$1" >&2; exit 1; }; }
check "$W/direct"; check "$W/relay"
D=$(awk '{print $3}' "$W/direct" | median)
R=$(awk '{print $3}' "$W/relay" | median)
echo "direct_loopback_MBps=$D"
echo "relay_MBps=$R"
awk -v d="$D" -v r="$R" 'BEGIN {printf "relay_vs_direct=%.2f\n", r / d}'
