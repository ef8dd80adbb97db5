# 17-landlock.sh — --isolation landlock, the fallback where no namespace can
# be made: it confines a command's files (a host secret outside the
# workspace unreadable, a write outside refused, /tmp not the host's) and
# network (no socket, a loopback server on the host unreachable; with an
# allowlist only through the CONNECT proxy), kills what the command leaves
# running, and says in the report what does not hold. Without the opt-in,
# where user namespaces are off (simulated: tests/nouserns.py), fluebox
# refuses and names fluebox doctor. Options that need a mount namespace are
# refused with one line.
. "$ROOT/tests/lib.sh"

abi=$(python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null)
if [ -z "$abi" ] || [ "$abi" -lt 4 ] 2>/dev/null; then
  skip_all "this kernel's Landlock ABI is ${abi:-unknown} (needs 4, Linux 6.7)"
fi

# run_as CMD... — like run_fb, for any program (as FB_AS).
run_as() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then
    "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  fi
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}
# jq-less JSON checks: jtrue NAME FILE PYEXPR (r is the object)
jtrue() {
  if /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2>/dev/null; then
    ok "$1"; else fail "$1" "$(head -c 600 "$2" 2>/dev/null)"; fi
}

PY=/usr/bin/python3
LL=(--isolation landlock -q)
# The workspace: the tester's own; as root, a directory of uid 1000, so the
# command runs as 1000 (root never runs a landlocked command as root).
WS=$T/ws; mkdir -p "$WS"
if as_root; then chown 1000:1000 "$WS"; else chown "$FB_AS" "$WS"; fi
echo "FLUEBOX-SECRET-$$" > "$T/secret"
[ "$FB_AS" != root ] && chown "$FB_AS" "$T/secret"
chmod 644 "$T/secret" # readable by every uid: only Landlock stands in the way
mkdir -p "$T/outside"; chmod 777 "$T/outside"
cp "$ROOT/tests/fixtures/confine.py" "$T/probe.py"
chmod 644 "$T/probe.py"

# A loopback server on the host the command must not reach.
/usr/bin/python3 -c '
import socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); __import__("os").rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); c.close()' "$T/port" >/dev/null 2>&1 &
SRV=$!
at_exit 'kill "$SRV"'
wait_for 10 test -s "$T/port" || bail "the loopback server did not start"
PORT=$(cat "$T/port")
# Reachable without a sandbox: the probe can see its escape.
/usr/bin/python3 -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 5)' "$PORT" \
  && ok "the loopback server answers outside any sandbox" || fail "loopback server" "not reachable unsandboxed"

# ---- files and network, one run ----
run_fb run "${LL[@]}" --workspace "$WS" --ro-bind "$T/probe.py" --report "$T/r1.json" -- \
  "$PY" "$T/probe.py" "$T/secret" "$T/outside" "$PORT"
has() { case "$OUT" in *"$1"*) ok "$2" ;; *) fail "$2" "stdout: $OUT / $ERR" ;; esac; }
[ "$RC" = 0 ] && ok "a Python script runs under --isolation landlock" || fail "landlock run" "rc $RC: $ERR"
has "read-secret denied 13" "a host secret outside the workspace is unreadable"
has "write-outside denied 13" "a write outside the workspace fails"
has "write-tmp denied 13" "/tmp is not writable (it is the host's)"
has "write-workspace ALLOWED" "the workspace is writable"
has "write-tmpdir ALLOWED" "TMPDIR is a writable scratch directory"
has "proc-pid1 denied" "other processes' /proc entries are unreadable"
has "list-etc denied" "/etc cannot be listed"
has "usr ALLOWED" "the system trees are readable"
has "tcp-loopback denied 1" "a loopback server on the host is unreachable (no inet socket)"
has "unix-socket denied 1" "no unix socket by path (an ssh-agent, docker.sock)"
has "udp denied 1" "no UDP (no DNS around the proxy)"
has "socketpair ALLOWED" "socketpair still works"
has "socketpair-dgram denied 1" "no datagram socketpair (it could send to any unix socket by path)"
has "home $WS cwd $WS" "HOME and the working directory are the workspace"
if [ -f "$WS/out.txt" ] && [ "$(cat "$WS/out.txt")" = "made inside" ]; then ok "the workspace write reached the host"; else fail "workspace write" "missing"; fi
[ -z "$(ls -A "$T/outside")" ] && ok "nothing appeared in the outside directory" || fail "outside directory" "$(ls -A "$T/outside")"
if as_root; then has "uid 1000" "as root the command runs as the workspace's owner, never root"; fi
jtrue "report: isolation is landlock" "$T/r1.json" 'r["isolation"] == "landlock"'
jtrue "report: the guarantees that do not hold are listed" "$T/r1.json" 'len(r["guarantees_not_held"]) >= 5 and any("pid namespace" in g for g in r["guarantees_not_held"]) and any("network namespace" in g for g in r["guarantees_not_held"])'
# Without a pid namespace, pidfd_open on a host pid (of any user) tells
# whether it exists: not a boundary Landlock keeps, so the report says so.
sleep 300 & LLPID=$!
run_fb run "${LL[@]}" -- "$PY" -c "import os, sys; os.pidfd_open(int(sys.argv[1])); print('exists')" "$LLPID"
kill "$LLPID"; wait "$LLPID" 2>/dev/null
[ "$OUT" = exists ] && ok "landlock: pidfd_open on a host pid tells that it exists" || fail "landlock: pidfd_open on a host pid" "rc $RC: $OUT $ERR"
jtrue "report: the existence of host pids is listed as not held" "$T/r1.json" 'any("pidfd_open" in g for g in r["guarantees_not_held"])'
jtrue "report: --disk is not applied" "$T/r1.json" '"disk" in r["limits_not_applied"] and "disk" not in r["limits_applied"]'
run_fb run -q --report "$T/r0.json" -- true
jtrue "report: a namespaced run says namespaces, nothing lost" "$T/r0.json" 'r["isolation"] == "namespaces" and r["guarantees_not_held"] == []'

# Without --workspace: a scratch workspace, removed afterwards (as root it
# belongs to --host-id).
run_fb run "${LL[@]}" -- /bin/sh -c 'echo x > f && pwd && id -u'
case "$RC:$OUT" in 0:*fluebox-landlock.*/workspace*) ok "without --workspace: a private scratch workspace" ;; *) fail "scratch workspace" "rc $RC $OUT $ERR" ;; esac
d=$(printf '%s\n' "$OUT" | head -n 1)
[ -n "$d" ] && [ ! -e "$d" ] && ok "the scratch directory is removed at the end" || fail "scratch removed" "$d still there"
if as_root; then
  u=$(printf '%s\n' "$OUT" | tail -n 1)
  [ "$u" -ge 65536 ] 2>/dev/null && ok "as root without a workspace: an unprivileged id of its own range ($u)" || fail "host id" "$OUT"
fi

# ---- the allowlist, only through the CONNECT proxy ----
. "$ROOT/tests/net/setup.sh"
LLNET="--allow-net api.test $MAP --ro-bind $T/bin --ro-bind $T/certs"
run_fb run "${LL[@]}" --workspace "$WS" $LLNET -- "$PY" "$T/bin/client.py" get https://api.test/hello "$T/certs/cert.pem"
case "$RC:$OUT" in "0:hello api.test"*) ok "allowlist: https to an allowed name through HTTPS_PROXY" ;; *) fail "allowlist through the proxy" "rc $RC $OUT $ERR" ;; esac
run_fb run "${LL[@]}" --workspace "$WS" $LLNET -- "$PY" "$T/bin/client.py" get https://other.test/hello "$T/certs/cert.pem"
[ "$RC" != 0 ] && ok "allowlist: another name is refused by the proxy" || fail "other name" "$OUT"
run_fb run "${LL[@]}" --workspace "$WS" $LLNET -- "$PY" "$T/bin/client.py" connect 127.0.0.1 "$HTTP"
case "$RC:$OUT" in 1:*) ok "allowlist: a direct connection to the host's loopback is refused (Landlock: the proxy's port only)" ;; *) fail "direct loopback" "rc $RC $OUT" ;; esac

# ---- what the command leaves running is killed ----
run_fb run "${LL[@]}" --workspace "$WS" -- /bin/sh -c 'setsid sleep 300 & echo $!; (sleep 301 &) ; exit 0'
left=$(printf '%s' "$OUT" | head -n 1)
gone() { ! kill -0 "$left" 2>/dev/null; }
if [ -n "$left" ] && wait_for 5 gone; then ok "a daemonised process is killed when the command ends"; else fail "leftover" "pid $left alive"; fi
expect_rc "--timeout kills the command (124)" 124 run "${LL[@]}" --timeout 1s -- /bin/sh -c 'sleep 300'

# ---- refused: what needs a mount namespace ----
expect_err "--tmpfs refused" 125 "needs a mount namespace" run --isolation landlock --tmpfs /x -- true
expect_err "--ro-bind SRC:DST refused" 125 "give the source alone" run --isolation landlock --ro-bind "$T/bin:/x" -- true
expect_err "--cow refused" 125 "needs a mount namespace" run --isolation landlock --cow --workspace "$WS" -- true
expect_err "bad --isolation" 125 "--isolation vm: expected namespaces or landlock" run --isolation vm -- true
cat > "$T/ll.json" <<'EOF'
{"extends": "strict", "isolation": "landlock"}
EOF
chmod 644 "$T/ll.json"
run_fb run -q --profile "$T/ll.json" --report - -- true
case "$ERR" in *'"isolation":"landlock"'*) ok "a profile's \"isolation\": \"landlock\" opts in" ;; *) fail "profile isolation" "$ERR" ;; esac
echo '{"isolation": "chroot"}' > "$T/bad.json"; chmod 644 "$T/bad.json"
expect_err "a bad profile isolation" 1 'isolation: expected "namespaces" or "landlock"' profile check "$T/bad.json"

# ---- no user namespaces: refuse without the opt-in, work with it ----
# A copy the test user can read wherever the checkout is (a 0700 home).
cp "$ROOT/tests/nouserns.py" "$T/nouserns.py"; chmod 644 "$T/nouserns.py"
if /usr/bin/python3 "$T/nouserns.py" true 2>/dev/null; then
  run_as /usr/bin/python3 "$T/nouserns.py" "$FB" run -- true
  case "$RC:$ERR" in 125:*"user namespaces are disabled"*"fluebox doctor"*"--isolation landlock"*) ok "no user namespaces: fluebox refuses and names fluebox doctor" ;;
    # Root of a namespace an ordinary user made trips over the host id
    # allocator's lock directory first (idrange.c): refused all the same.
    125:*"host id ranges"*) as_root && fail "no userns refusal" "rc $RC: $ERR" || ok "no user namespaces: fluebox refuses (the id allocator says why)" ;;
    *) fail "no userns refusal" "rc $RC: $ERR" ;; esac
  run_as /usr/bin/python3 "$T/nouserns.py" "$FB" run "${LL[@]}" --workspace "$WS" --ro-bind "$T/probe.py" -- \
    "$PY" "$T/probe.py" "$T/secret" "$T/outside" "$PORT"
  case "$RC:$OUT" in 0:*"read-secret denied"*"write-outside denied"*"write-workspace ALLOWED"*"tcp-loopback denied"*) ok "no user namespaces: --isolation landlock confines files and network" ;;
    *) fail "no userns landlock" "rc $RC: $OUT $ERR" ;; esac
else
  skip "no user namespaces (simulated)" "cannot make a user namespace here"
fi
no_leftovers "nothing left behind"
