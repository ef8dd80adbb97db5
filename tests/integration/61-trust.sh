#!/bin/bash
# 61-trust: the caller's TLS trust settings (NODE_EXTRA_CA_CERTS,
# SSL_CERT_FILE, SSL_CERT_DIR, REQUESTS_CA_BUNDLE, CURL_CA_BUNDLE, PIP_CERT,
# GIT_SSL_CAINFO) pass into the sandbox with the files they name bound
# read-only, as behind a TLS-intercepting proxy. A private CA signs the
# certificate of a local HTTPS server on 127.0.0.1, reached as tls.test
# through --allow-net and --egress-resolve; node's fetch, python, curl, git
# and pip trust it only through the settings.
. "$ROOT/tests/lib.sh"
cd "$T" || bail "cd $T"

mkdir -p "$T/ca" "$T/cadir" "$T/www" "$T/pip"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout "$T/ca/ca.key" -out "$T/ca/ca.pem" -subj "/CN=fluebox test CA" \
  -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign \
  >/dev/null 2>&1 || bail "openssl: the CA"
openssl req -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -keyout "$T/ca/leaf.key" \
  -out "$T/ca/leaf.csr" -subj /CN=tls.test >/dev/null 2>&1 || bail "openssl: the CSR"
printf 'subjectAltName=DNS:tls.test\nbasicConstraints=CA:FALSE\nextendedKeyUsage=serverAuth\n' > "$T/ca/ext"
openssl x509 -req -in "$T/ca/leaf.csr" -CA "$T/ca/ca.pem" -CAkey "$T/ca/ca.key" -CAcreateserial \
  -days 2 -extfile "$T/ca/ext" -out "$T/ca/leaf.pem" >/dev/null 2>&1 || bail "openssl: the leaf certificate"
cp "$T/ca/ca.pem" "$T/cadir/" && openssl rehash "$T/cadir" >/dev/null 2>&1
echo hello > "$T/www/hello.txt"
chmod -R a+rX "$T/ca" "$T/cadir" "$T/www"
chmod 600 "$T/ca/ca.key" "$T/ca/leaf.key"
# A private key that a setting could name by mistake: readable by the
# sandbox's id, so only fluebox's refusal keeps it out.
openssl genpkey -algorithm ec -pkeyopt ec_paramgen_curve:prime256v1 -out "$T/ca/other.key" 2>/dev/null
chmod 644 "$T/ca/other.key"

/usr/bin/python3 "$ROOT/tests/net/server.py" "$T/www" "$T/ca/leaf.pem" "$T/ca/leaf.key" \
  "$T/ports.json" >"$T/server.log" 2>&1 &
SERVER=$!
at_exit "kill $SERVER 2>/dev/null; wait $SERVER 2>/dev/null"
wait_for 20 test -s "$T/ports.json" || bail "the HTTPS server did not start: $(cat "$T/server.log")"
HTTPS=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["https"])' "$T/ports.json")
NET=(--allow-net tls.test --egress-resolve "tls.test:443=127.0.0.1:$HTTPS")
SYS=/usr/bin:/bin
CA=$T/ca/ca.pem

# fbe VAR=VALUE... -- ARGS: fluebox ARGS (as FB_AS) with exactly these
# variables; $OUT, $ERR, $RC as run_fb.
fbe() {
  local envs=("LANG=C.UTF-8" "PATH=$SYS")
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  if [ "$FB_AS" = root ]; then
    env -i "${envs[@]}" "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env -i "${envs[@]}" "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  fi
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}
want_hello() { # NAME
  case "$RC:$OUT" in 0:*"hello tls.test"*) ok "$1" ;; *) fail "$1" "rc $RC $OUT $(printf %s "$ERR" | tail -c 300)" ;; esac
}

if need node "node fetch"; then
  FETCH='fetch("https://tls.test/hello").then(r => r.text()).then(t => process.stdout.write(t), e => { console.error(String(e.cause && e.cause.code || e)); process.exit(3) })'
  fbe NODE_EXTRA_CA_CERTS="$CA" -- run "${NET[@]}" -- node -e "$FETCH"
  want_hello "node fetch trusts the private CA through NODE_EXTRA_CA_CERTS"
  fbe -- run "${NET[@]}" -- node -e "$FETCH"
  case "$RC:$ERR" in 3:*CERT*|3:*SIGNATURE*|3:*ISSUER*) ok "node fetch without it: a certificate error" ;;
    *) fail "node fetch without it: a certificate error" "rc $RC $OUT $ERR" ;; esac
fi

PYGET='import urllib.request; print(urllib.request.urlopen("https://tls.test/hello", timeout=30).read().decode())'
fbe SSL_CERT_FILE="$CA" -- run "${NET[@]}" -- python3 -c "$PYGET"
want_hello "python urllib trusts it through SSL_CERT_FILE"
fbe SSL_CERT_DIR="$T/cadir" -- run "${NET[@]}" -- python3 -c "$PYGET"
want_hello "python urllib trusts it through SSL_CERT_DIR (hashed directory)"
fbe -- run "${NET[@]}" -- python3 -c "$PYGET"
case "$RC:$ERR" in 1:*CERTIFICATE_VERIFY_FAILED*) ok "python without it: CERTIFICATE_VERIFY_FAILED" ;;
  *) fail "python without it: CERTIFICATE_VERIFY_FAILED" "rc $RC $ERR" ;; esac

fbe CURL_CA_BUNDLE="$CA" -- run "${NET[@]}" -- curl -sS -m 30 https://tls.test/hello
want_hello "curl trusts it through CURL_CA_BUNDLE"
fbe -- run "${NET[@]}" -- curl -sS -m 30 https://tls.test/hello
[ "$RC" = 60 ] && ok "curl without it: exit 60 (certificate)" || fail "curl without it: exit 60 (certificate)" "rc $RC $ERR"

# git's smart HTTP: the server is no git server, so a 404 (not a TLS error)
# means the certificate was trusted.
fbe GIT_SSL_CAINFO="$CA" -- run "${NET[@]}" -- git ls-remote https://tls.test/repo.git
case "$ERR" in *"not found"*|*404*) ok "git trusts it through GIT_SSL_CAINFO" ;; *) fail "git trusts it through GIT_SSL_CAINFO" "rc $RC $ERR" ;; esac
fbe -- run "${NET[@]}" -- git ls-remote https://tls.test/repo.git
case "$ERR" in *certificate*|*SSL*) ok "git without it: a certificate error" ;; *) fail "git without it: a certificate error" "rc $RC $ERR" ;; esac

# pip (its vendored requests): an index that answers 404 is trusted.
if ! /usr/bin/python3 -m pip --version >/dev/null 2>&1; then
  skip_missing "pip" python3-pip
else
  PIPDL=(python3 -m pip download --no-deps --disable-pip-version-check --no-input -d /tmp/dl
    --index-url https://tls.test/simple/ fluebox-no-such-package)
  fbe PIP_CERT="$CA" -- run "${NET[@]}" -- "${PIPDL[@]}"
  case "$OUT$ERR" in *CERTIFICATE_VERIFY_FAILED*|*SSLError*) fail "pip trusts it through PIP_CERT" "$ERR" ;;
    *"No matching distribution"*|*"Could not find"*) ok "pip trusts it through PIP_CERT" ;;
    *) fail "pip trusts it through PIP_CERT" "rc $RC $OUT $ERR" ;; esac
  fbe REQUESTS_CA_BUNDLE="$CA" -- run "${NET[@]}" -- "${PIPDL[@]}"
  case "$OUT$ERR" in *CERTIFICATE_VERIFY_FAILED*|*SSLError*) fail "pip trusts it through REQUESTS_CA_BUNDLE" "$ERR" ;;
    *"No matching distribution"*|*"Could not find"*) ok "pip trusts it through REQUESTS_CA_BUNDLE" ;;
    *) fail "pip trusts it through REQUESTS_CA_BUNDLE" "rc $RC $OUT $ERR" ;; esac
  fbe -- run "${NET[@]}" -- "${PIPDL[@]}"
  case "$OUT$ERR" in *CERTIFICATE_VERIFY_FAILED*|*SSLError*|*"SSL:"*) ok "pip without them: a certificate error" ;;
    *) fail "pip without them: a certificate error" "rc $RC $OUT $ERR" ;; esac
fi

# Every setting: passed, its file there and read-only.
fbe NODE_EXTRA_CA_CERTS="$CA" SSL_CERT_FILE="$CA" SSL_CERT_DIR="$T/cadir" REQUESTS_CA_BUNDLE="$CA" \
  CURL_CA_BUNDLE="$CA" PIP_CERT="$CA" GIT_SSL_CAINFO="$CA" -- run -- sh -c \
  'for v in NODE_EXTRA_CA_CERTS SSL_CERT_FILE SSL_CERT_DIR REQUESTS_CA_BUNDLE CURL_CA_BUNDLE PIP_CERT GIT_SSL_CAINFO; do eval "echo \$v=\$$v"; done; grep -c BEGIN "$SSL_CERT_FILE"; ls "$SSL_CERT_DIR" | grep -c "\.0$"; echo x >> "$SSL_CERT_FILE" 2>/dev/null && echo WRITABLE; true'
n=$(printf '%s\n' "$OUT" | grep -c "=$T/")
case "$n:$OUT" in 7:*$'\n1\n1') ok "all seven settings passed, files bound, read-only" ;; *) fail "all seven settings passed, files bound, read-only" "rc $RC $OUT $ERR" ;; esac

# A relative value is made absolute (the sandbox's directory is another).
(cd "$T/ca" && fbe SSL_CERT_FILE=ca.pem -- run -- sh -c 'echo "$SSL_CERT_FILE"; head -1 "$SSL_CERT_FILE"' && printf '%s\n' "$OUT" > "$T/rel.out")
case "$(cat "$T/rel.out" 2>/dev/null)" in "$CA"$'\n'"-----BEGIN CERTIFICATE-----") ok "a relative setting is made absolute" ;;
  *) fail "a relative setting is made absolute" "$(cat "$T/rel.out" 2>/dev/null)" ;; esac

# A setting that names a private key is not passed, and the key not bound.
fbe SSL_CERT_FILE="$T/ca/other.key" -- run -- sh -c 'echo "[$SSL_CERT_FILE]"; cat '"$T/ca/other.key"' 2>/dev/null | head -1'
case "$OUT:$ERR" in "[]:"*"SSL_CERT_FILE is not passed"*"not a PEM certificate bundle"*) ok "a setting naming a private key: not passed, not bound, said" ;;
  *) fail "a setting naming a private key: not passed, not bound, said" "$OUT / $ERR" ;; esac
# --env wins over the caller's value.
fbe SSL_CERT_FILE="$CA" -- run --env SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt -- sh -c 'echo "$SSL_CERT_FILE"'
if [ "$OUT" = /etc/ssl/certs/ca-certificates.crt ]; then ok "--env overrides a passed setting"; else fail "--env overrides a passed setting" "$OUT"; fi
