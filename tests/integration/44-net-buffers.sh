#!/bin/bash
# 44-net-buffers: relayed connections cannot pile up host memory. The
# sandbox opens 32 connections to a server that sends without end, raises
# their receive buffers and never reads, and 32 to a server that never reads
# while it sends without end. The supervisor's sockets and pipes for them
# must stay within the relay's buffer budget (docs/network.md: 32 MiB): the
# queues of the supervisor's sockets are read from /proc/net/tcp on both
# sides (its upstream sockets in the host's namespace, its ends of the
# sandbox's connections in the sandbox's), once every server socket shows a
# zero window (nothing more can move), and the report's peak agrees.
# Loopback only.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

N=32
BUDGET=$((32 << 20))
S=$T/sync; mkdir -p "$S"; chmod 777 "$S"

# host_queues — "relay=B zero=K": queue bytes of the relay's upstream sockets
# (remote port FLOOD or SINK) in this namespace, and how many of the
# connections have stalled on a zero window (the flood server's sockets, and
# the relay's sockets towards the sink, in zero-window probing).
host_queues() {
  /usr/bin/python3 - "$FLOOD" "$SINK" <<'PY'
import sys
flood, sink = int(sys.argv[1]), int(sys.argv[2])
relay = zero = 0
for f in ("/proc/net/tcp", "/proc/net/tcp6"):
    try:
        lines = open(f).read().splitlines()[1:]
    except OSError:
        continue
    for line in lines:
        v = line.split()
        lport = int(v[1].rsplit(":", 1)[1], 16)
        rport = int(v[2].rsplit(":", 1)[1], 16)
        tx, rx = (int(x, 16) for x in v[4].split(":"))
        probing = v[5].split(":")[0] == "04"
        if rport in (flood, sink):
            relay += tx + rx
            zero += rport == sink and probing
        elif lport == flood:
            zero += probing
print("relay=%d zero=%d" % (relay, zero))
PY
}

run_fb_bg() { # like run_fb, in the background; its pid in BGPID
  if [ "$FB_AS" = root ]; then
    "$FB" "$@" >"$T/.bgout" 2>"$T/.bgerr" </dev/null &
  else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp "$FB" "$@" >"$T/.bgout" 2>"$T/.bgerr" </dev/null &
  fi
  BGPID=$!
}

run_fb_bg run --allow-net "api.test:$FLOOD" --allow-net "api.test:$SINK" --egress-resolve api.test=127.0.0.1 \
  --bind "$S:/sync" --report "$T/report.json" $BINDS -- $CL hold api.test "$FLOOD" "$SINK" "$N" /sync
opened() { [ -e "$S/opened" ] || ! kill -0 "$BGPID" 2>/dev/null; }
wait_for 120 opened
# Until the bound is already broken (stop at once: without a bound this
# would pile up gigabytes), or all 2N connections have stalled.
peak_host=0; state=""; relay=0; zero=0
settled() {
  state=$(host_queues)
  relay=${state#relay=}; relay=${relay%% *}; zero=${state##*zero=}
  [ "$relay" -gt "$peak_host" ] && peak_host=$relay
  [ "$relay" -gt "$BUDGET" ] || [ "$zero" -ge $((2 * N)) ] || ! kill -0 "$BGPID" 2>/dev/null
}
wait_for 250 settled
touch "$S/measure"
wait "$BGPID"; RC=$?
inside=$(cat "$S/inside" 2>/dev/null)
relay_in=${inside#relay_in=}; relay_in=${relay_in%% *}
echo "# host side: $state (peak $peak_host); inside: $inside; fluebox rc $RC: $(head -c 300 "$T/.bgerr")"
case "$(cat "$T/.bgout")" in "held $((2 * N)) connections") ok "$((2 * N)) connections held open" ;;
  *) fail "$((2 * N)) connections held open" "rc $RC $(cat "$T/.bgout" "$T/.bgerr" | head -c 300)" ;; esac
if [ "${zero:-0}" -ge $((2 * N)) ]; then ok "every connection stalled (zero window)"; else fail "every connection stalled (zero window)" "$state"; fi
total=$(( ${peak_host:-0} + ${relay_in:-0} ))
if [ -n "$relay_in" ] && [ "$total" -le "$BUDGET" ]; then
  ok "the relay's socket queues stay within the budget ($((total >> 10)) KiB of $((BUDGET >> 10)) KiB)"
else
  fail "the relay's socket queues stay within the budget" "host $peak_host + sandbox side ${relay_in:-?} > $BUDGET"
fi
# The sandbox's own sockets (its 32 receive buffers raised to 64 MiB) are
# charged to its memory cgroup: on v1 with TCP accounting that is at most
# 64 MiB (memory.kmem.tcp.limit_in_bytes); they held ~290 MiB before.
own=${inside##*own=}; own=${own%% *}
v1mem=$(awk '$3 == "cgroup" && $4 ~ /(^|,)memory(,|$)/ {print $2; exit}' /proc/mounts)
if [ "$FB_AS" = root ] && [ -n "$v1mem" ] && [ -e "$v1mem/memory.kmem.tcp.limit_in_bytes" ]; then
  if [ -n "$own" ] && [ "$own" -le $(( (64 + 4) << 20 )) ]; then
    ok "v1: the sandbox's own socket queues stay within memory.kmem.tcp's 64 MiB ($((own >> 10)) KiB)"
  else
    fail "v1: the sandbox's own socket queues stay within memory.kmem.tcp's 64 MiB" "${own:-?} bytes"
  fi
else
  skip "v1: the sandbox's own socket queues stay within memory.kmem.tcp's 64 MiB" "not root on a v1 memory cgroup with TCP accounting"
fi
if /usr/bin/python3 -c '
import json, sys
n = json.load(open(sys.argv[1]))["network"]
p, b = n["relay_buffer_peak_bytes"], n["relay_buffer_budget_bytes"]
assert b == int(sys.argv[2]) and int(sys.argv[3]) // 2 <= p <= b, (p, b)
' "$T/report.json" "$BUDGET" "$total" 2>"$T/rep.err"; then ok "the report's peak is within the budget and sees the queues"
else fail "the report's peak is within the budget and sees the queues" "$(tail -c 300 "$T/rep.err")"; fi
# The sandbox's own sockets: TCP autotuning in its network namespace stops at
# 1 MiB per queue (the host's maximum can be 32 MiB, which 32 unread
# connections multiplied, outside --mem on cgroup v1).
for mode in "--net none" "--allow-net api.test:$FLOOD --egress-resolve api.test=127.0.0.1"; do
  # shellcheck disable=SC2086
  run_fb run -q $mode -- sh -c 'cat /proc/sys/net/ipv4/tcp_rmem /proc/sys/net/ipv4/tcp_wmem'
  maxes=$(printf '%s\n' "$OUT" | awk '{print $3}' | tr '\n' ' ')
  if [ "$RC" = 0 ] && [ "$(printf '%s\n' "$OUT" | awk 'NF == 3 && $3 <= 1048576' | wc -l)" = 2 ]; then
    ok "${mode%% *}: tcp_rmem and tcp_wmem stop at 1 MiB in the sandbox ($maxes)"
  else
    fail "${mode%% *}: tcp_rmem and tcp_wmem stop at 1 MiB in the sandbox" "rc $RC: $OUT $ERR"
  fi
done
no_leftovers "no leftovers"
