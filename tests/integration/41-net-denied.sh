#!/bin/bash
# 41-net-denied: denied network fails at once and says so. With no network
# (--net none) and for names not on the allowlist, every lookup gets a
# definite "no such name" (not "try again", which tools retry), the real
# tools fail with that (node ENOTFOUND, python EAI_NONAME, curl 6, git
# "Could not resolve host", npm ENOTFOUND without a minute of retries), and
# fluebox ends with one stderr line naming what was denied and how to allow
# it (not with -q). --net-log works in every mode. Loopback only: the names
# that are allowed are mapped to tests/net/server.py with --egress-resolve.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

# note_ok NAME WANT — the last stderr line is fluebox's note and has WANT.
note_ok() {
  local last; last=$(printf '%s\n' "$ERR" | tail -n 1)
  case "$last" in
    "fluebox: network: "*"$2"*) ok "$1" ;;
    *) fail "$1" "last stderr line: $last" ;;
  esac
}

# ---- --net none: a definite answer at once, from every tool ----
if need node "none: node lookups"; then
  run_fb run -- node -e 'require("dns").lookup("pkg.example.test", e => { console.log(e && e.code); process.exit(3) })'
  case "$RC:$OUT" in 3:ENOTFOUND) ok "none: node lookup is ENOTFOUND (not EAI_AGAIN)" ;;
    *) fail "none: node lookup is ENOTFOUND (not EAI_AGAIN)" "rc $RC $OUT $ERR" ;; esac
  note_ok "none: the note names the name" "1 name denied (pkg.example.test)"
  run_fb run -- node -e 'fetch("https://pkg.example.test/").then(() => process.exit(0), e => { console.log(e.cause && e.cause.code); process.exit(3) })'
  case "$RC:$OUT" in 3:ENOTFOUND) ok "none: node fetch fails with ENOTFOUND" ;;
    *) fail "none: node fetch fails with ENOTFOUND" "rc $RC $OUT $ERR" ;; esac
fi
run_fb run -- $PY -c '
import socket
try:
    socket.getaddrinfo("pkg.example.test", 443)
except socket.gaierror as e:
    print("EAI_NONAME" if e.errno == socket.EAI_NONAME else "errno %d" % e.errno)'
case "$OUT" in EAI_NONAME) ok "none: python getaddrinfo is EAI_NONAME (not EAI_AGAIN)" ;;
  *) fail "none: python getaddrinfo is EAI_NONAME (not EAI_AGAIN)" "rc $RC $OUT $ERR" ;; esac
expect_rc "none: curl cannot resolve (6)" 6 run -- curl -sS -m 30 https://pkg.example.test/
note_ok "none: the note says how to allow it" "the network is off; allow names with --allow-net NAME"
run_fb run -- git ls-remote http://pkg.example.test/repo.git
case "$RC:$ERR" in 128:*"Could not resolve host"*) ok "none: git cannot resolve" ;;
  *) fail "none: git cannot resolve" "rc $RC $ERR" ;; esac
expect_rc "none: a literal address fails at once (no route)" 7 run -- curl -sS -m 30 "http://127.0.0.1:$HTTP/hello"

# Several names, -q.
run_fb run -- /bin/sh -c 'for n in a b c d a; do getent hosts $n.test; done; exit 0'
note_ok "none: distinct names counted, three shown" "4 names denied (a.test, b.test, c.test, ...)"
run_fb run -q -- /bin/sh -c 'getent hosts a.test; exit 0'
case "$ERR" in *"network:"*) fail "-q: no note" "$ERR" ;; *) ok "-q: no note" ;; esac
run_fb run -- true
case "$ERR" in *"network:"*) fail "nothing denied: no note" "$ERR" ;; *) ok "nothing denied: no note" ;; esac

# npm: a local registry stand-in (api.test, the file server) holds one
# package. Without network npm must fail at once with ENOTFOUND: --timeout
# is only the bound that turns npm's retries (a minute and more) into 124.
if need npm "npm install without network"; then
  mkdir -p "$T/pkg/package" "$T/npmwork"
  printf '{"name":"fbpkg","version":"1.0.0","main":"index.js"}\n' > "$T/pkg/package/package.json"
  printf 'module.exports = "fbpkg works";\n' > "$T/pkg/package/index.js"
  tar -C "$T/pkg" -czf "$T/www/fbpkg-1.0.0.tgz" package
  SHA1=$(sha1sum < "$T/www/fbpkg-1.0.0.tgz" | cut -d' ' -f1)
  INTEGRITY="sha512-$(openssl dgst -sha512 -binary < "$T/www/fbpkg-1.0.0.tgz" | base64 -w0)"
  cat > "$T/www/fbpkg" <<EOF
{"name":"fbpkg","dist-tags":{"latest":"1.0.0"},"versions":{"1.0.0":{"name":"fbpkg","version":"1.0.0","main":"index.js","dist":{"tarball":"http://api.test/fbpkg-1.0.0.tgz","shasum":"$SHA1","integrity":"$INTEGRITY"}}}}
EOF
  chmod -R a+rX "$T/www"; chmod 777 "$T/npmwork"
  NPM="cd /w && npm install --no-audit --no-fund --no-update-notifier --registry http://api.test/ fbpkg"
  run_fb run --timeout 45s --bind "$T/npmwork:/w" -- /bin/sh -c "$NPM"
  case "$RC:$ERR" in 1:*ENOTFOUND*) ok "none: npm install fails at once with ENOTFOUND" ;;
    *) fail "none: npm install fails at once with ENOTFOUND" "rc $RC $(printf %s "$ERR" | tail -c 400)" ;; esac
  note_ok "none: npm: the note names the registry" "1 name denied (api.test)"
  expect_out "allow: npm install from the registry mapped to loopback" "fbpkg works" \
    run --timeout 120s $NET --bind "$T/npmwork:/w" -- /bin/sh -c "$NPM >/dev/null && node -e 'console.log(require(\"/w/node_modules/fbpkg\"))'"
fi

# ---- allow: names not on the allowlist ----
run_fb run $NET -- /bin/sh -c "curl -sS -m 30 http://api.test/hello && curl -sS -m 30 http://other.test/hello"
case "$RC:$OUT" in 6:"hello api.test") ok "allow: the allowed name works, the other cannot resolve" ;;
  *) fail "allow: the allowed name works, the other cannot resolve" "rc $RC $OUT $ERR" ;; esac
note_ok "allow: the note names the name and the option" "1 name denied (other.test): allow with --allow-net NAME"
if need node "allow: node lookup of another name"; then
  run_fb run $NET -- node -e 'require("dns").lookup("other.test", e => { console.log(e && e.code); process.exit(3) })'
  case "$RC:$OUT" in 3:ENOTFOUND) ok "allow: node lookup of another name is ENOTFOUND" ;;
    *) fail "allow: node lookup of another name is ENOTFOUND" "rc $RC $OUT $ERR" ;; esac
fi
run_fb run $NET -- git ls-remote http://other.test/repo.git
case "$RC:$ERR" in 128:*"Could not resolve host"*) ok "allow: git: another name cannot resolve" ;;
  *) fail "allow: git: another name cannot resolve" "rc $RC $ERR" ;; esac
# A port the name is not allowed on (another name is): refused, and said.
run_fb run --allow-net "api.test:$BANNER" --allow-net "b.test:$HTTP" --egress-resolve api.test=127.0.0.1 \
  $BINDS -- $CL connect api.test "$HTTP"
case "$RC:$OUT" in 1:refused*) ok "allow: a port not allowed for the name is refused" ;;
  *) fail "allow: a port not allowed for the name is refused" "rc $RC $OUT $ERR" ;; esac
note_ok "allow: the note names name:port" "1 connection refused (api.test:$HTTP): allow with --allow-net NAME[:PORT]"

# ---- --net-log in every mode ----
fresh_log
run_fb run --net-log "$LOG" -- /bin/sh -c 'getent hosts gone.test; exit 0'
log_has "none: --net-log: start line" "$LOG" 'e["event"]=="start" and e["mode"]=="none"'
log_has "none: --net-log: the denied lookup" "$LOG" 'e["event"]=="dns" and e["name"]=="gone.test" and e["verdict"]=="deny" and "--net none" in e["reason"]'
fresh_log
expect_rc "host: --net-log accepted" 0 run --profile trusted --net host --net-log "$LOG" -- true
log_has "host: --net-log says nothing is audited" "$LOG" 'e["event"]=="start" and e["mode"]=="host" and "nothing" in e["note"]'

# ---- the report ----
run_fb run --report "$T/report.json" -- /bin/sh -c 'getent hosts gone.test; exit 0'
if /usr/bin/python3 -c '
import json, sys
n = json.load(open(sys.argv[1]))["network"]
assert n["mode"] == "none" and n["names_denied"] == 1 and n["dns_denied"] >= 1, n
' "$T/report.json" 2>"$T/rep.err"; then ok "report: network in none mode"; else fail "report: network in none mode" "$(cat "$T/rep.err")"; fi

no_leftovers "no leftovers"
