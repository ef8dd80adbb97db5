#!/bin/bash
# 40-net-bad: bad network options are clear errors (exit 125); malformed DNS
# from inside the sandbox is refused and logged, never a crash; the DNS and
# TLS/HTTP parsers survive random and crafted input (ASan build).
. "$ROOT/tests/lib.sh"

for pat in '*.' 'foo..com' 'api.test:0' 'api.test:70000' '*' '*.*.test' 'a*.test' '1.2.3.4' \
           '*.0.1' '' 'api.test:' 'api.test:80:90' '-a.test' 'a b.test' '*.com:x'; do
  expect_err "--allow-net '$pat' rejected" 125 "--allow-net" run --allow-net "$pat" -- true
done
expect_err "--allow-net with --net none" 125 "cannot be combined with --net none" run --net none --allow-net api.test -- true
expect_err "--net none after --allow-net" 125 "cannot be combined with --net none" run --allow-net api.test --net none -- true
expect_err "--allow-net with --net host" 125 "--net host" run --profile trusted --net host --allow-net api.test -- true
expect_err "--net bogus" 125 "expected none, allow or host" run --net bogus -- true
for r in 'api.test' 'api.test=' '=127.0.0.1' 'api.test=notanip' 'api.test=127.0.0.1:0' 'api.test:99999=127.0.0.1' \
         'bad..name=127.0.0.1' 'api.test=[::1' 'api.test=1.2.3.4:5:6'; do
  expect_err "--egress-resolve '$r' rejected" 125 "--egress-resolve" run --egress-resolve "$r" -- true
done
expect_err "--proxy-env without an allowlist" 125 "--proxy-env" run --proxy-env -- true
expect_err "an allowed port that is the proxy's" 125 "proxy" run --proxy-env --allow-net api.test:3128 -- true
many=""; for p in $(seq 1001 1030); do many="$many --allow-net p$p.test:$p"; done
expect_err "too many distinct ports" 125 "different ports" run $many -- true
expect_err "--net-max-conns 0" 125 "--net-max-conns" run --allow-net api.test --net-max-conns 0 -- true
expect_err "--net-idle bogus" 125 "--net-idle" run --allow-net api.test --net-idle soon -- true
expect_rc "--net allow without patterns: everything NXDOMAIN" 0 run --net allow -- /bin/sh -c '! getent hosts api.test'

# ---- malformed DNS from inside ----
mkdir -p "$T/bin"; cp "$ROOT/tests/net/client.py" "$T/bin/"; chmod -R a+rX "$T/bin"
LOG=$T/fuzz.jsonl
expect_out "resolver survives malformed queries" "resolver answers" \
  run --allow-net api.test --net-log "$LOG" --ro-bind "$T/bin:/fbnet" -- /usr/bin/python3 /fbnet/client.py dnsfuzz 300 7
if grep -q '"reason":"malformed query' "$LOG" 2>/dev/null; then ok "malformed queries logged"; else fail "malformed queries logged" "$(head -c 300 "$LOG" 2>/dev/null)"; fi

# ---- the parsers on their own, under ASan/UBSan ----
if command -v cc >/dev/null; then
  if cc -D_GNU_SOURCE -iquote "$ROOT/src/base" -iquote "$ROOT/src/egress" -O1 -g -fsanitize=address,undefined -fno-sanitize-recover=all \
       -o "$T/parsers" "$ROOT/tests/net/parsers_test.c" "$ROOT/src/egress/dns_wire.c" "$ROOT/src/egress/sniff.c" 2>"$T/cc.err"; then
    /usr/bin/python3 "$ROOT/tests/net/clienthello.py" > "$T/hello.bin" 2>"$T/ch.err" || rm -f "$T/hello.bin"
    "$T/parsers" "$T/hello.bin" 2>&1
  else
    fail "parsers test builds" "$(head -c 300 "$T/cc.err")"
  fi
fi
no_leftovers "no leftovers"
