# shellcheck shell=bash disable=SC2034
# tests/net/setup.sh — sourced by tests/integration/40-net*.sh after lib.sh.
#
# Makes a self-signed certificate for api.test (and other.test, *.wild.test,
# so a refusal is always the relay's doing, never the certificate's), starts
# tests/net/server.py on 127.0.0.1 (random ports) and sets:
#   HTTP HTTPS BANNER SINK FLOOD   the server's ports
#   NET                      fluebox options: allow api.test (80 and 443),
#                            mapped to the local servers, helpers bound
#   PY                       python inside the sandbox
#   CL                       "$PY /fbnet/client.py" (tests/net/client.py)
# The server is killed (by pid) when the test exits. Loopback only.
# Optional: NET_FILES="name:size ..." creates random files in the web root.

NETDIR=$ROOT/tests/net
mkdir -p "$T/certs" "$T/www" "$T/bin"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
  -keyout "$T/certs/key.pem" -out "$T/certs/cert.pem" -subj /CN=api.test \
  -addext "subjectAltName=DNS:api.test,DNS:other.test,DNS:*.wild.test,DNS:wild.test" \
  >/dev/null 2>&1 || bail "setup: openssl cannot make a certificate"
chmod 644 "$T/certs/cert.pem"
cp "$NETDIR/client.py" "$T/bin/client.py"
echo hello > "$T/www/hello.txt"
for f in ${NET_FILES:-}; do
  head -c "${f#*:}" /dev/urandom > "$T/www/${f%%:*}"
done
chmod -R a+rX "$T/certs" "$T/www" "$T/bin"
chmod 600 "$T/certs/key.pem"

/usr/bin/python3 "$NETDIR/server.py" "$T/www" "$T/certs/cert.pem" "$T/certs/key.pem" \
  "$T/ports.json" >"$T/server.log" 2>&1 &
NET_SERVER_PID=$!
at_exit 'kill "$NET_SERVER_PID"; wait "$NET_SERVER_PID"'
wait_for 10 test -s "$T/ports.json" || bail "setup: test server did not start: $(cat "$T/server.log")"
port_of() { /usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$T/ports.json" "$1"; }
HTTP=$(port_of http); HTTPS=$(port_of https); BANNER=$(port_of banner); SINK=$(port_of sink)
FLOOD=$(port_of flood)

PY=/usr/bin/python3
CL="$PY /fbnet/client.py"
MAP="--egress-resolve api.test:443=127.0.0.1:$HTTPS --egress-resolve api.test:80=127.0.0.1:$HTTP"
BINDS="--ro-bind $T/bin:/fbnet --ro-bind $T/certs:/certs"
NET="--allow-net api.test $MAP $BINDS"

# json_lines FILE — every line is a JSON object (prints the bad one).
json_lines() {
  /usr/bin/python3 -c '
import json, sys
for i, l in enumerate(open(sys.argv[1]), 1):
    try:
        assert isinstance(json.loads(l), dict)
    except Exception:
        print("line %d: %r" % (i, l[:200])); sys.exit(1)
' "$1"
}

# log_has NAME FILE PYEXPR — ok if some log line e (a dict) satisfies PYEXPR.
log_has() {
  local name=$1 file=$2 expr=$3
  if [ -f "$file" ] && /usr/bin/python3 -c '
import json, sys
sys.exit(0 if any(eval(sys.argv[2], {}, {"e": json.loads(l)}) for l in open(sys.argv[1])) else 1)
' "$file" "$expr"; then ok "$name"; else fail "$name" "no log line with $expr in: $(tail -c 600 "$file" 2>/dev/null)"; fi
}

# fresh_log — a new log path, writable by the user fluebox runs as.
fresh_log() { LOGN=$(( ${LOGN:-0} + 1 )); LOG=$T/net$LOGN.jsonl; rm -f "$LOG"; }
