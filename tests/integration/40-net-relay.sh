#!/bin/bash
# 40-net-relay: the relay under load: 100 MB each way and 50 parallel
# connections arrive intact (sha256), a peer that stops reading stalls only
# its own connection, idle timeout, connection limit. Loopback only.
. "$ROOT/tests/lib.sh"
NET_FILES="big.bin:100M f1m.bin:1M"
. "$ROOT/tests/net/setup.sh"
BIG=$(sha256sum < "$T/www/big.bin" | cut -d' ' -f1)
F1M=$(sha256sum < "$T/www/f1m.bin" | cut -d' ' -f1)
DATA="--ro-bind $T/www:/data"

# ---- 100 MB each way ----
fresh_log
expect_out "100 MB download over https arrives intact" "$BIG" run $NET --net-log "$LOG" -- \
  /bin/sh -c 'curl -sS -m 300 --cacert /certs/cert.pem https://api.test/big.bin | sha256sum'
log_has "log: 100 MB counted" "$LOG" 'e["event"]=="connect" and e["verdict"]=="allow" and e["bytes_in"] > 100*1024*1024'
expect_out "100 MB download over http arrives intact" "$BIG" run $NET -- \
  /bin/sh -c 'curl -sS -m 300 http://api.test/big.bin | sha256sum'
expect_out "100 MB upload over http arrives intact" "$BIG" run $NET $DATA -- \
  curl -sS -m 300 --data-binary @/data/big.bin -H 'Content-Type: application/octet-stream' http://api.test/upload
expect_out "100 MB upload over https arrives intact" "$BIG" run $NET $DATA -- \
  curl -sS -m 300 --cacert /certs/cert.pem --data-binary @/data/big.bin https://api.test/upload

# ---- 50 parallel connections ----
expect_out "50 parallel https downloads intact" "parallel 50/50 intact" run $NET -- \
  $CL parallel https://api.test/f1m.bin 50 "$F1M" /certs/cert.pem
expect_out "50 parallel http downloads intact" "parallel 50/50 intact" run $NET -- \
  $CL parallel http://api.test/f1m.bin 50 "$F1M"
expect_out "50 parallel through the proxy intact" "parallel 50/50 intact" run $NET --proxy-env -- \
  $CL parallel https://api.test/f1m.bin 50 "$F1M" /certs/cert.pem

# ---- a peer that stops reading ----
expect_out "a stalled download does not block others" "ok: 5 fetches" run $NET -- \
  $CL stall api.test 80 /big.bin http://api.test/hello
expect_out "a stalled https download does not block others" "ok: 5 fetches" run $NET -- \
  $CL stall api.test 443 /big.bin https://api.test/hello /certs/cert.pem
expect_out "a server that never reads does not block others" "ok: send blocked" \
  run --allow-net "api.test:$SINK" --allow-net api.test:80 --egress-resolve "api.test:$SINK=127.0.0.1" \
  --egress-resolve "api.test:80=127.0.0.1:$HTTP" $BINDS -- $CL upload-stall api.test "$SINK" http://api.test/hello

# ---- idle timeout and connection limit ----
fresh_log
run_fb run --allow-net "api.test:$BANNER" --egress-resolve api.test=127.0.0.1 --net-idle 1s --net-log "$LOG" $BINDS -- \
  $PY -c '
import socket
s = socket.create_connection(("api.test", '"$BANNER"'), timeout=60)
s.recv(100)
print("closed" if s.recv(100) == b"" else "data")'
case "$OUT" in closed) ok "idle connection closed by --net-idle" ;; *) fail "idle connection closed by --net-idle" "rc $RC $OUT $ERR" ;; esac
log_has "log: idle reason" "$LOG" 'e["event"]=="connect" and "idle" in e["reason"]'
fresh_log
run_fb run --allow-net "api.test:$BANNER" --egress-resolve api.test=127.0.0.1 --net-max-conns 2 --net-log "$LOG" $BINDS -- \
  $PY -c '
import socket
held = [socket.create_connection(("api.test", '"$BANNER"'), timeout=30) for _ in range(2)]
for h in held:
    h.recv(100)
try:
    # the reset can even beat connect() home on loopback
    s = socket.create_connection(("api.test", '"$BANNER"'), timeout=30)
    print("refused" if s.recv(100) == b"" else "served")
except ConnectionResetError:
    print("refused")
held[0].close()
import time
for _ in range(100):
    try:
        t = socket.create_connection(("api.test", '"$BANNER"'), timeout=30)
        if t.recv(100).startswith(b"220"):
            print("served after one closed"); break
    except ConnectionResetError:
        pass
    time.sleep(0.1)'
case "$OUT" in "refused"*"served after one closed") ok "connection limit" ;; *) fail "connection limit" "rc $RC $OUT $ERR" ;; esac
log_has "log: connection limit" "$LOG" 'e["event"]=="connect" and "connection limit" in e["reason"]'

no_leftovers "no leftovers"
