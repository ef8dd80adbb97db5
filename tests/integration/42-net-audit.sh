#!/bin/bash
# 42-net-audit: the audit log cannot be blinded. A flood of DNS queries
# (205,000, each for a new name, as for exfiltration through the labels) and
# of refused connections is rate-limited and aggregated — counted in
# *_aggregate lines, said in the "end" line and the report — and the allowed
# connection that follows still gets its own line. Loopback only.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

N=205000
fresh_log
run_fb run $NET --net-log "$LOG" --report "$T/report.json" -- /bin/sh -c "
  $CL dnsflood $N flood.test &&
  $CL refusals 3000 198.18.7.7 443 &&
  curl -sS -m 30 http://api.test/hello?secret=exfil-canary"
case "$OUT" in *"flood $N sent"*"refused 3000"*"hello api.test"*) ok "flood ran, then the allowed request went through" ;;
  *) fail "flood ran, then the allowed request went through" "rc $RC $OUT $ERR" ;; esac
log_has "the connection after the flood is logged" "$LOG" \
  'e["event"]=="connect" and e["name"]=="api.test" and e["verdict"]=="allow" and e["bytes_out"]>0'
/usr/bin/python3 - "$LOG" "$T/report.json" > "$T/audit.out" 2>&1 <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
rep = json.load(open(sys.argv[2]))["network"]
end = [e for e in lines if e["event"] == "end"]
assert len(end) == 1 and lines[-1]["event"] == "end", "one end line, last"
end = end[0]
dns_single = sum(1 for e in lines if e["event"] == "dns")
dns_agg = sum(e["count"] for e in lines if e["event"] == "dns_aggregate")
conn_single = sum(1 for e in lines if e["event"] == "connect" and e["verdict"] == "deny")
conn_agg = sum(e["count"] for e in lines if e["event"] == "connect_aggregate")
print("lines", len(lines), "dns", dns_single, "+", dns_agg, "conn", conn_single, "+", conn_agg)
# Every query is accounted for, one way or the other.
assert dns_single + dns_agg == end["dns_queries"] == rep["dns_queries"], (dns_single, dns_agg, end, rep)
assert dns_agg == end["dns_aggregated"] == rep["dns_aggregated"] > 0
assert conn_single + conn_agg >= 3000 and conn_agg == end["connections_aggregated"] == rep["connections_aggregated"] > 0
# Aggregate lines say what they stand for.
for e in lines:
    if e["event"].endswith("_aggregate"):
        assert e["count"] > 0 and e["first"] <= e["last"], e
# The flood did not turn into a flood of lines.
assert len(lines) < 20000, len(lines)
print("accounted")
EOF
if grep -q '^accounted' "$T/audit.out"; then ok "every query and refusal accounted for, in few lines"; else fail "every query and refusal accounted for, in few lines" "$(tail -c 600 "$T/audit.out")"; fi

# The same query over and over: one line, then counted.
fresh_log
run_fb run $NET --net-log "$LOG" -- /bin/sh -c 'for i in $(seq 50); do getent hosts api.test >/dev/null; done'
/usr/bin/python3 - "$LOG" > "$T/rep.out" 2>&1 <<'EOF'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
single = [e for e in lines if e["event"] == "dns" and e["name"] == "api.test" and e["type"] == "A"]
agg = [e for e in lines if e["event"] == "dns_aggregate" and e["name"] == "api.test" and e["type"] == "A"]
assert len(single) == 1 and sum(e["count"] for e in agg) == 49, (single, agg)
assert agg[0]["verdict"] == "allow" and agg[0]["answer"] == single[0]["answer"]
print("repeats")
EOF
if grep -q '^repeats' "$T/rep.out"; then ok "a repeated query: one line and an aggregate"; else fail "a repeated query: one line and an aggregate" "$(tail -c 600 "$T/rep.out")"; fi

json_lines "$LOG" >/dev/null && ok "every log line is JSON" || fail "every log line is JSON" "$(json_lines "$LOG")"
no_leftovers "no leftovers"
