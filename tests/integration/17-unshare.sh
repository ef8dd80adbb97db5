# 17-unshare.sh — fluebox started as uid 0 of a user namespace that maps one
# id (`unshare -r`, as root and as the unprivileged user; what a rootless
# container's root is): being uid 0 there is not being root of the host, so
# fluebox maps only that id, as rootless (no "writing uid_map: Operation not
# permitted", no "/run/fluebox must belong to root"). Inside that namespace
# fluebox run and fluebox serve isolate as anywhere else — each boundary is
# first shown open without fluebox in the same namespace, then closed by it:
# a host file outside the workspace, a write outside it, a loopback server
# of the host, a host process, the host's sysctls. fluebox doctor says what
# it found (the namespace, the id it is outside, rootless here). As root,
# namespaces that map more ids (tests/mapns.py): 65,536 ids without the
# pool (rootless), id 100000 without the pool (that one id), the pool
# (a range per sandbox, once fluebox has a mount namespace of its own).
. "$ROOT/tests/lib.sh"

# ns CMD... — CMD as FB_AS in a new user namespace mapping only FB_AS's uid
# to 0 (unshare -r), stdout in $OUT, stderr in $ERR, rc in $RC.
if [ "$FB_AS" = root ]; then ASU=(); else
  ASU=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR")
fi
ns() {
  "${ASU[@]+"${ASU[@]}"}" unshare -r "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}
ns true
[ "$RC" = 0 ] || skip_all "cannot make a user namespace here (unshare -r: $ERR)"
command -v python3 >/dev/null || skip_all "missing: python3"
ns sh -c 'id -u; cat /proc/self/uid_map'
case "$OUT" in "0"*"0 "*" 1") ok "unshare -r: uid 0 in a namespace that maps one id" ;; *) bail "unshare -r maps one id: $OUT" ;; esac
me=$(id -u "$FB_AS")

chmod 755 "$T"
WS=$T/ws; OUTSIDE=$T/outside
mkdir -p "$WS" "$OUTSIDE"
echo "FLUEBOX-SECRET-$$" > "$T/secret"; chmod 644 "$T/secret"
chmod 777 "$OUTSIDE"
[ "$FB_AS" != root ] && chown "$FB_AS" "$WS"

# A loopback server of the host, and a host process of FB_AS's.
python3 -c '
import os, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); c.close()' "$T/port" </dev/null >/dev/null 2>&1 &
SRVPY=$!
at_exit 'kill $SRVPY'
"${ASU[@]+"${ASU[@]}"}" sleep 3600 </dev/null >/dev/null 2>&1 & # (setpriv and env exec: the same pid)
SLEEPER=$!
at_exit 'kill $SLEEPER'
port_file() { [ -s "$T/port" ]; }
wait_for 10 port_file || bail "the loopback server did not start"
PORT=$(cat "$T/port")
CONNECT="import socket, sys
try:
    socket.create_connection(('127.0.0.1', $PORT), timeout=5).close(); print('connected')
except OSError as e:
    print('refused', e.errno)"
CORE='p = "/proc/sys/kernel/core_pattern"
v = open(p).read()
try:
    open(p, "w").write(v); print("wrote")
except OSError as e:
    print("denied", e.errno)'

# ---- the boundaries are open in the namespace itself ----
ns cat "$T/secret"
[ "$OUT" = "FLUEBOX-SECRET-$$" ] && ok "without fluebox: the namespace reads the host secret" || fail "control: secret" "$OUT $ERR"
ns python3 -c "$CONNECT"
[ "$OUT" = connected ] && ok "without fluebox: the namespace reaches the host's loopback server" || fail "control: loopback" "$OUT $ERR"
ns kill -0 "$SLEEPER"
[ "$RC" = 0 ] && ok "without fluebox: the namespace can signal a host process" || fail "control: signal" "$ERR"

# ---- fluebox run ----
ns "$FB" run -- true
[ "$RC" = 0 ] && ok "unshare -r fluebox run -- true works" || fail "unshare -r fluebox run" "rc $RC: $ERR"
case "$ERR" in *uid_map*|*"/run/fluebox"*) fail "no id-range or uid_map error" "$ERR" ;; *) ok "no id-range or uid_map error" ;; esac
ns "$FB" run -q --workspace "$WS" -- sh -c 'echo made-inside > /workspace/out; id -u; cat /proc/self/uid_map'
set -- $OUT
if [ "$RC" = 0 ] && [ "${1:-}" = 1000 ] && [ "${2:-}" = 1000 ] && [ "${3:-}" = 0 ] && [ "${4:-}" = 1 ] && [ "$#" = 4 ]; then
  ok "the sandbox user is the namespace's one id (inside 1000, nothing else mapped)"
else fail "the sandbox's map" "rc $RC: $OUT $ERR"; fi
owner=$(stat -c %u "$WS/out" 2>/dev/null)
[ "$(cat "$WS/out" 2>/dev/null)" = made-inside ] && [ "$owner" = "$me" ] && ok "the workspace is writable, its files the caller's (uid $me)" || fail "workspace write" "owner ${owner:-none} $(ls -la "$WS")"

ns "$FB" run -q --workspace "$WS" -- cat "$T/secret"
case "$OUT" in *FLUEBOX-SECRET*) fail "a host file outside the workspace is unreadable" "ESCAPED: read it" ;; *) ok "a host file outside the workspace is unreadable (rc $RC)" ;; esac
ns "$FB" run -q --workspace "$WS" -- sh -c "echo x > '$OUTSIDE/written'"
[ ! -e "$OUTSIDE/written" ] && [ "$RC" != 0 ] && ok "a write outside the workspace fails" || fail "write outside" "ESCAPED: rc $RC $(ls "$OUTSIDE")"
ns "$FB" run -q -- python3 -c "$CONNECT"
case "$OUT" in refused*) ok "network off: the host's loopback server is unreachable ($OUT)" ;; *) fail "network off" "ESCAPED: $OUT $ERR" ;; esac
ns "$FB" run -q -- sh -c "kill -0 $SLEEPER 2>/dev/null && echo signalled || echo no"
[ "$OUT" = no ] && ok "a host process cannot be signalled" || fail "host process" "ESCAPED: $OUT $ERR"
ns "$FB" run -q -- python3 -c "$CORE"
case "$OUT" in denied*) ok "the host's sysctls are read-only (core_pattern: $OUT)" ;; *) fail "core_pattern" "ESCAPED: $OUT $ERR" ;; esac
ns "$FB" run -q -- sh -c 'grep CapEff /proc/self/status'
case "$OUT" in *0000000000000000) ok "the command has no capabilities" ;; *) fail "capabilities" "$OUT $ERR" ;; esac

# ---- --isolation landlock there too ----
ns "$FB" run -q --isolation landlock --workspace "$WS" -- sh -c "cat '$T/secret'; echo x > '$OUTSIDE/ll'; id -u"
case "$RC:$OUT" in
  *FLUEBOX-SECRET*) fail "--isolation landlock in the namespace" "ESCAPED: read the secret" ;;
  *:0) [ ! -e "$OUTSIDE/ll" ] && ok "--isolation landlock: keeps uid 0 of the namespace, the secret and outside refused" || fail "landlock write outside" "ESCAPED" ;;
  *) fail "--isolation landlock in the namespace" "rc $RC: $OUT $ERR" ;;
esac

# ---- fluebox doctor ----
ns "$FB" doctor --json --workspace "$WS"
printf '%s' "$OUT" > "$T/d.json"
if /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1])); c = {x["id"]: x for x in r["checks"]}
u = r["user_namespace"]
ok = (u["initial"] is False and u["mapped_uids"] == 1 and u["outer_uid"] == int(sys.argv[2]) and
      u["ids"] == "own" and r["root"] is False and c["ids"]["status"] == "info" and
      "rootless here" in c["ids"]["detail"] and "userns_unprivileged" not in c and
      c["idmap"]["status"] == "n/a" and r["verdict"] == "full")
sys.exit(0 if ok else 1)' "$T/d.json" "$me"; then
  ok "doctor: a namespace mapping one id (uid $me outside), rootless here, full isolation"
else fail "doctor in the namespace" "rc $RC $(head -c 900 "$T/d.json") $ERR"; fi
if as_root; then
  grep -q "host root's uid 0" "$T/d.json" && ok "doctor (as root): says the one id is host root's" || fail "doctor: host root's id" "$(head -c 600 "$T/d.json")"
fi

# ---- as root: user namespaces that map more than one id (tests/mapns.py) ----
# Which ids a sandbox gets follows from what the namespace maps.
mapped() { # MAP CMD... — CMD as uid 0 of a user namespace mapping MAP
  /usr/bin/python3 "$ROOT/tests/mapns.py" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}
djson() { # NAME MAP PYEXPR — doctor --json in MAP's namespace; r the object, c the checks
  mapped "$2" "$FB" doctor --json --workspace "$WS"
  if printf '%s' "$OUT" | /usr/bin/python3 -c 'import json,sys; r=json.load(sys.stdin); c={x["id"]: x for x in r["checks"]}; sys.exit(0 if eval(sys.argv[1]) else 1)' "$3" 2>/dev/null; then
    ok "$1"; else fail "$1" "rc $RC $(printf %s "$OUT" | head -c 700) $ERR"; fi
}
SBMAP='cat /proc/self/uid_map'
if as_root; then
  # 65,536 ids from 200000 (a rootless container's): none of the pool, not
  # id 100000 either: rootless, the sandbox user is the namespace's uid 0.
  mapped 0:200000:65536 "$FB" run -q -- sh -c "$SBMAP"
  [ "$RC" = 0 ] && [ "$(echo $OUT)" = "1000 0 1" ] && ok "a namespace of 65,536 ids without the pool: rootless (its uid 0)" || fail "65,536 ids: the sandbox's map" "rc $RC: $OUT $ERR"
  djson "doctor there: ids own, uid 0 is 200000 outside" 0:200000:65536 'r["user_namespace"]["ids"] == "own" and r["user_namespace"]["outer_uid"] == 200000 and r["user_namespace"]["mapped_uids"] == 65536 and not r["root"] and r["verdict"] == "full"'
  # 200,000 ids: id 100000 among them, none of the pool: that one id.
  mapped 0:200000:200000 "$FB" run -q -- sh -c "$SBMAP"
  [ "$RC" = 0 ] && [ "$(echo $OUT)" = "1000 100000 1" ] && ok "a namespace that maps id 100000 but not the pool: the sandbox runs as 100000" || fail "200,000 ids: the sandbox's map" "rc $RC: $OUT $ERR"
  djson "doctor there: ids legacy, with its cost" 0:200000:200000 'r["user_namespace"]["ids"] == "legacy" and r["root"] and c["ids"]["cost"] and "root_mounts" not in c'
  # The pool mapped, in the parent's mount namespace: root here cannot
  # clone its mounts; doctor says so, with the fix, and the fix works.
  mapped 0:0:4000000000 "$FB" run -q -- true
  case "$RC:$ERR" in 125:*"fluebox doctor"*) ok "the pool mapped, an older mount namespace: run refuses and names doctor" ;; *) fail "pool mapped, parent's mount namespace" "rc $RC: $ERR" ;; esac
  djson "doctor there: a range per sandbox, but root cannot prepare the mounts (fix: unshare -m)" 0:0:4000000000 'r["user_namespace"]["ids"] == "range" and c["root_mounts"]["status"] == "missing" and "unshare -m" in c["root_mounts"]["fix"] and r["verdict"] != "full"'
  mapped 0:0:4000000000 unshare -m "$FB" run -q -- sh -c "$SBMAP"
  set -- $OUT
  if [ "$RC" = 0 ] && [ "${1:-}" = 0 ] && [ "${2:-0}" -ge 1879048192 ] && [ "${3:-}" = 65536 ]; then
    ok "with a mount namespace of its own: a range of 65,536 ids from the pool ($2)"
  else fail "pool mapped, unshare -m: the sandbox's map" "rc $RC: $OUT $ERR"; fi
fi

# ---- fluebox serve ----
SOCK=$T/fb.sock
"${ASU[@]+"${ASU[@]}"}" unshare -r "$FB" serve --socket="$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV'
ready() { grep -q ready "$T/ready" 2>/dev/null; }
if wait_for 20 ready && [ -S "$SOCK" ]; then ok "unshare -r fluebox serve listens"; else bail "serve in the namespace: $(cat "$T/serve.err")"; fi
run_fb session create --socket "$SOCK" --workspace "$WS"
ID=$OUT
case "$ID" in s-????????????????) ok "a session is created" ;; *) bail "session create: rc $RC $OUT $ERR" ;; esac
run_fb exec --socket "$SOCK" "$ID" -- sh -c "cat '$T/secret' 2>/dev/null; echo x > '$OUTSIDE/srv' 2>/dev/null; python3 -c \"$CONNECT\"; echo in-session > /workspace/srv"
case "$OUT" in
  *FLUEBOX-SECRET*) fail "serve: the session is isolated" "ESCAPED: read the secret" ;;
  *refused*) if [ ! -e "$OUTSIDE/srv" ] && [ "$(cat "$WS/srv" 2>/dev/null)" = in-session ]; then
               ok "serve: the session writes its workspace, not outside; no secret; network off"
             else fail "serve: the session" "outside: $(ls "$OUTSIDE") ws: $(ls "$WS")"; fi ;;
  *) fail "serve: the session is isolated" "rc $RC $OUT $ERR" ;;
esac
run_fb session rm --socket "$SOCK" "$ID"
[ "$RC" = 0 ] && ok "session rm" || fail "session rm" "$ERR"
kill -TERM $SRV
wait $SRV; rc=$?
[ "$rc" = 0 ] && ok "serve exits 0 on SIGTERM" || fail "serve exit" "rc $rc $(tail -3 "$T/serve.err")"
no_leftovers "nothing left behind"
