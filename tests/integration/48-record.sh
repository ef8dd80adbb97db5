#!/bin/bash
# 48-record: the flight record (--record, docs/record.md). A signed record of
# a run verifies; every way of tampering with it (an edited field, a dropped,
# swapped, duplicated or appended line, the end line cut, a wrong key) is
# named by `fluebox record verify` with its own exit status; a SIGKILLed
# supervisor leaves a prefix that verifies as cut short; a flood of denied
# DNS names is aggregated and the events after it are still recorded; no
# private key and no environment value ends up in the record; bad input
# (an existing record, a missing directory, an unreadable or non-Ed25519 key,
# a garbage file) gets one line and a distinct status. Loopback only.
. "$ROOT/tests/lib.sh"
. "$ROOT/tests/net/setup.sh"

need openssl "record: test keys" || skip_all "missing: openssl"
# Keys, readable by the user fluebox runs as.
openssl genpkey -algorithm ed25519 -out "$T/key.pem" 2>/dev/null &&
  openssl pkey -in "$T/key.pem" -pubout -out "$T/key.pub" 2>/dev/null &&
  openssl genpkey -algorithm ed25519 -out "$T/other.pem" 2>/dev/null &&
  openssl pkey -in "$T/other.pem" -pubout -out "$T/other.pub" 2>/dev/null &&
  openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$T/ec.pem" 2>/dev/null ||
  bail "setup: openssl cannot make keys"
[ "$FB_AS" != root ] && chown "$FB_AS" "$T"/*.pem
chmod 600 "$T"/*.pem

# verify_is NAME WANT_RC SUBSTRING FILE [ARGS...] — record verify FILE exits
# WANT_RC and says SUBSTRING (stdout or stderr).
verify_is() {
  local name=$1 want=$2 sub=$3; shift 3
  run_fb record verify "$@"
  if [ "$RC" != "$want" ]; then fail "$name" "exit $RC, want $want: $OUT $ERR"; return; fi
  case "$OUT$ERR" in
    *"$sub"*) ok "$name" ;;
    *) fail "$name" "lacks '$sub': $OUT $ERR" ;;
  esac
}
# rec_has NAME FILE PYEXPR — some line e of the record satisfies PYEXPR.
rec_has() { log_has "$@"; }

# --- a signed run ---------------------------------------------------------------
R=$T/run.jsonl
run_fb run --record "$R" --record-key "$T/key.pem" --env SECRET_TOKEN=canary-value-4711 -- \
  sh -c 'echo out; exit 3'
if [ "$RC" = 3 ] && [ "$OUT" = out ]; then ok "a recorded run runs as usual (exit 3)"; else fail "a recorded run runs as usual" "rc $RC $OUT $ERR"; fi
json_lines "$R" >/dev/null && ok "every record line is JSON" || fail "every record line is JSON" "$(json_lines "$R")"
rec_has "the record has the start with the policy" "$R" 'e["event"]=="start" and e["policy"]["profile"]=="standard" and "limits" in e["policy"]'
rec_has "the record has the command" "$R" 'e["event"]=="exec" and e["argv"][0]=="sh" and e["cwd"]=="/workspace"'
rec_has "the record has how it ended" "$R" 'e["event"]=="exit" and e["status"]==3 and e["exit_code"]==3'
rec_has "the record names the environment variable, not its value" "$R" 'e["event"]=="start" and "--env SECRET_TOKEN=(value not recorded)" in e["policy"]["overrides"]'
rec_has "the record names the environment variable" "$R" 'e["event"]=="start" and "SECRET_TOKEN" in e["policy"]["env_names"]'
if grep -q canary-value-4711 "$R"; then fail "no environment value in the record" "$(grep -o '.\{40\}canary.\{20\}' "$R")"; else ok "no environment value in the record"; fi
# The private key: neither its PEM body nor its raw bytes.
body=$(grep -v -- ----- "$T/key.pem" | tr -d '\n')
priv=$(openssl pkey -in "$T/key.pem" -outform DER 2>/dev/null | tail -c 32 | od -An -tx1 | tr -d ' \n')
if [ -n "$body" ] && [ ${#priv} = 64 ] && ! grep -q -F "$body" "$R" && ! grep -q -i "$priv" "$R"; then
  ok "no private key in the record"
else
  fail "no private key in the record" "body ${#body} priv ${#priv}"
fi
verify_is "verify --key: intact, complete, signed (0)" 0 "intact, complete and signed" "$R" --key "$T/key.pub"
verify_is "verify --key with the private key file works too" 0 "intact, complete" "$R" --key "$T/key.pem"
verify_is "verify without --key: not trusted (2)" 2 "give --key" "$R"
verify_is "verify with another key (2)" 2 "signed by another key" "$R" --key "$T/other.pub"

# --- tampering --------------------------------------------------------------------
# tamper HOW OUT — a copy of $R changed by HOW (python over the list of lines).
tamper() {
  /usr/bin/python3 - "$R" "$2" "$1" <<'EOF'
import json, sys
src, dst, how = sys.argv[1:4]
L = open(src, "rb").read().split(b"\n")[:-1]
if how == "edit":      # a field of the command line
    L[2] = L[2].replace(b'"sh"', b'"zz"', 1)
elif how == "drop":    L.pop(2)
elif how == "swap":    L[2], L[3] = L[3], L[2]
elif how == "dup":     L.insert(3, L[2])
elif how == "append":  L.append(L[-1])
elif how == "cut":     L.pop()
elif how == "cutmid":  L[-1] = L[-1][:40]
elif how == "editend": L[-1] = L[-1].replace(b'"exit_code":3', b'"exit_code":0', 1)
elif how == "first":   L.pop(0)
out = b"\n".join(L) + (b"" if how == "cutmid" else b"\n")
open(dst, "wb").write(out)
EOF
  [ "$FB_AS" != root ] && chown "$FB_AS" "$2"
}
for how in edit drop swap dup append cut cutmid editend first; do tamper $how "$T/$how.jsonl"; done
verify_is "an edited field: tampered (1), the line after it named" 1 "line 4: its prev is not the SHA-256 of line 3" "$T/edit.jsonl" --key "$T/key.pub"
verify_is "a dropped line: tampered (1), named" 1 "line 3: its seq is 4" "$T/drop.jsonl" --key "$T/key.pub"
verify_is "two lines swapped: tampered (1), named" 1 "line 3: its seq is 4" "$T/swap.jsonl" --key "$T/key.pub"
verify_is "a duplicated line: tampered (1), named" 1 "line 4: its seq is 3: a line was duplicated" "$T/dup.jsonl" --key "$T/key.pub"
n=$(wc -l < "$R")
verify_is "a line appended after the end: tampered (1)" 1 "line $((n + 1)): after the end line" "$T/append.jsonl" --key "$T/key.pub"
verify_is "the end line cut: cut short (3)" 3 "cut short: lines 1-$((n - 1)) are intact" "$T/cut.jsonl" --key "$T/key.pub"
verify_is "the end line cut mid-line: cut short (3)" 3 "cut short in the middle of line $n" "$T/cutmid.jsonl" --key "$T/key.pub"
verify_is "the signed end line edited: tampered (1)" 1 "line $n: its signature does not match" "$T/editend.jsonl" --key "$T/key.pub"
verify_is "the first line removed: tampered (1)" 1 "line 1: a start line (seq 2), not the record's first" "$T/first.jsonl" --key "$T/key.pub"

# --- an unsigned record -------------------------------------------------------------
U=$T/unsigned.jsonl
run_fb run --record "$U" -- true
verify_is "an unsigned record verifies as intact but unsigned (2)" 2 "unsigned" "$U"
verify_is "an unsigned record with --key: unsigned (2)" 2 "unsigned" "$U" --key "$T/key.pub"
tamper_u() { /usr/bin/python3 -c '
import sys; L = open(sys.argv[1], "rb").read().split(b"\n"); L[1] = L[1].replace(b"standard", b"trusted", 1)
open(sys.argv[2], "wb").write(b"\n".join(L))' "$U" "$T/u-edit.jsonl"; }
tamper_u
verify_is "an edit in an unsigned record is still caught (1)" 1 "line 3: its prev is not the SHA-256 of line 2" "$T/u-edit.jsonl"

# --- bad input ----------------------------------------------------------------------
run_fb run --record "$R" -- true
if [ "$RC" = 125 ] && case "$ERR" in *"$R: the file exists"*) true ;; *) false ;; esac &&
   [ "$(wc -l < "$R")" = "$n" ]; then ok "an existing record file is refused (125), untouched"; else fail "an existing record file is refused (125), untouched" "rc $RC $ERR"; fi
expect_err "a record in a missing directory (125)" 125 "--record $T/nodir/r.jsonl" run --record "$T/nodir/r.jsonl" -- true
expect_err "an unreadable key (125)" 125 "--record-key $T/nokey.pem" run --record "$T/k1.jsonl" --record-key "$T/nokey.pem" -- true
[ -e "$T/k1.jsonl" ] && fail "an unreadable key leaves no record" || ok "an unreadable key leaves no record"
expect_err "a non-Ed25519 key (125)" 125 "not an Ed25519 key" run --record "$T/k2.jsonl" --record-key "$T/ec.pem" -- true
[ -e "$T/k2.jsonl" ] && fail "a non-Ed25519 key leaves no record" || ok "a non-Ed25519 key leaves no record"
expect_err "a public key as --record-key (125)" 125 "not a PEM private key" run --record "$T/k3.jsonl" --record-key "$T/key.pub" -- true
mkdir -p "$T/wsr" && chmod 777 "$T/wsr"
expect_err "a record inside the writable workspace is refused (125)" 125 "which the sandbox can write" run --workspace "$T/wsr" --record "$T/wsr/r.jsonl" -- true
[ -e "$T/wsr/r.jsonl" ] && fail "a refused record leaves no file" || ok "a refused record leaves no file"
expect_err "--record-key without --record (125)" 125 "needs --record" run --record-key "$T/key.pem" -- true
printf 'hello\nworld\n' > "$T/garbage.txt"
verify_is "a garbage file: not a record (4)" 4 "not a fluebox record" "$T/garbage.txt"
verify_is "a missing file (4)" 4 "No such file" "$T/missing.jsonl"
verify_is "verify with a key that is not one (4)" 4 "not a PEM public key" "$R" --key "$T/garbage.txt"
verify_is "verify with no file (4)" 4 "which FILE" --key "$T/key.pub"
: > "$T/empty.jsonl"
verify_is "an empty file: cut short (3)" 3 "empty" "$T/empty.jsonl"

# --- SIGKILL mid-run: a valid prefix --------------------------------------------------
K=$T/killed.jsonl
fb_exec() {
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then exec "$FB" "$@"
  else exec setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB" "$@"; fi
}
(fb_exec run --record "$K" --record-key "$T/key.pem" -- sleep 600 >/dev/null 2>&1) &
pid=$!
if wait_for 20 grep -qs '"event":"exec"' "$K"; then
  kill -KILL "$pid"; wait "$pid" 2>/dev/null
  verify_is "a SIGKILLed supervisor's record: cut short (3)" 3 "cut short: lines 1-3 are intact" "$K" --key "$T/key.pub"
else
  kill -KILL "$pid"; wait "$pid" 2>/dev/null
  fail "a SIGKILLed supervisor's record: cut short (3)" "no exec line: $(cat "$K" 2>/dev/null | head -c 300)"
fi

# --- limits, seccomp, changes -----------------------------------------------------------
L=$T/limit.jsonl
run_fb run --record "$L" --timeout 1s -- sleep 30
[ "$RC" = 124 ] && ok "timeout with a record: 124" || fail "timeout with a record: 124" "rc $RC $ERR"
rec_has "the timeout is recorded as a limit" "$L" 'e["event"]=="limit" and e["limit"]=="timeout"'
rec_has "the end says 124" "$L" 'e["event"]=="end" and e["exit_code"]==124'
S=$T/seccomp.jsonl
run_fb run --record "$S" --profile strict -- python3 -c 'import ctypes; print(ctypes.CDLL(None).mount(b"none", b"/tmp", b"tmpfs", 0, None))'
rec_has "a seccomp denial is recorded (mount)" "$S" 'e["event"]=="seccomp" and any(c["syscall"]=="mount" for c in e["calls"])'
if ! cow_needs_upper; then
  mkdir -p "$T/ws" && echo old > "$T/ws/a.txt" && chmod -R a+rwX "$T/ws"
  [ "$FB_AS" != root ] && chown -R "$FB_AS:" "$T/ws"
  C=$T/cow.jsonl
  run_fb run --record "$C" --workspace "$T/ws" --cow -- sh -c 'echo new > a.txt; echo b > b.txt'
  rec_has "--cow: the change list is recorded" "$C" 'e["event"]=="changes" and e["counts"]["added"]==1 and e["counts"]["modified"]==1 and {c["path"] for c in e["changes"]}=={"a.txt","b.txt"}'
else
  skip "--cow: the change list is recorded" "tmpfs without user xattrs (Linux < 6.6)"
fi

# --- a flood of denied DNS names, then more events ----------------------------------------
F=$T/flood.jsonl
run_fb run $NET --record "$F" --record-key "$T/key.pem" -- /bin/sh -c "
  $CL dnsflood 5000 flood.test && curl -sS -m 30 http://api.test/hello"
case "$OUT" in *"flood 5000 sent"*"hello api.test"*) ok "flood ran, then the allowed request went through" ;;
  *) fail "flood ran, then the allowed request went through" "rc $RC $OUT $ERR" ;; esac
verify_is "the flooded record verifies (0)" 0 "intact, complete and signed" "$F" --key "$T/key.pub"
/usr/bin/python3 - "$F" > "$T/flood.out" 2>&1 <<'EOF'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
ev = [e["event"] for e in L]
single = sum(1 for e in L if e["event"] == "dns" and e["verdict"] == "deny")
agg = sum(e["count"] for e in L if e["event"] == "dns_aggregate" and e.get("verdict", "deny") == "deny")
assert agg > 0, "no aggregate"
assert single + agg >= 5000, (single, agg)
last_agg = max(i for i, e in enumerate(L) if e["event"] == "dns_aggregate")
conn = [i for i, e in enumerate(L) if e["event"] == "connect" and e.get("name") == "api.test" and e["verdict"] == "allow"]
assert conn, "no connect line for api.test"
assert max(conn) > last_agg or any(e["event"] == "dns_aggregate" for e in L[max(conn):]), "connect line lost"
assert ev[-1] == "end" and "exit" in ev and "net_end" in ev, ev[-5:]
assert any(e["event"] == "checkpoint" for e in L), "no checkpoint in %d lines" % len(L)
assert len(L) < 4000, len(L)
print("flood-ok", len(L), single, agg)
EOF
if grep -q '^flood-ok' "$T/flood.out"; then ok "the flood is aggregated, checkpointed, and the later events recorded ($(cat "$T/flood.out"))"; else fail "the flood is aggregated and the later events recorded" "$(tail -c 600 "$T/flood.out")"; fi

# --- show -----------------------------------------------------------------------------------
run_fb record show "$F"
case "$OUT" in *"Record $F: intact"*"Ran:"*"Talked to: api.test:80"*"Refused DNS:"*flood.test*) ok "record show: what ran, where it talked, what was refused" ;;
  *) fail "record show: what ran, where it talked, what was refused" "rc $RC $OUT $ERR" ;; esac
run_fb record show "$F" --json
if [ "$RC" = 0 ] && printf %s "$OUT" | /usr/bin/python3 -c 'import json,sys; o=json.load(sys.stdin); assert o["refused"]["dns"] and o["talked_to"] and o["commands"][0]["argv"][0]=="/bin/sh"'; then
  ok "record show --json"; else fail "record show --json" "rc $RC $(printf %s "$OUT" | head -c 300) $ERR"; fi
run_fb record show "$T/garbage.txt"
[ "$RC" = 4 ] && ok "record show of a garbage file: 4" || fail "record show of a garbage file: 4" "rc $RC $ERR"
# --- a session: each exec recorded, the end by session rm; a SIGKILLed server -------------
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
SOCK=$T/fb.sock
"${FBCMD[@]}" serve --socket="$SOCK" --pool=1 --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV'
wait_for 20 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"
SR=$T/session.jsonl
run_fb session create --socket "$SOCK" --record "$SR" --record-key "$T/key.pem"
SID=$OUT
if [ "$RC" = 0 ] && [ -n "$SID" ]; then ok "session create --record"; else fail "session create --record" "rc $RC $ERR"; fi
run_fb exec --socket "$SOCK" "$SID" -- sh -c 'echo one; echo two >&2'
run_fb exec --socket "$SOCK" "$SID" -- sh -c 'exit 4'
run_fb exec --socket "$SOCK" "$SID" -- sh -c 'printf 12345'
# A fork has no record of its own (and does not trip over the existing file).
run_fb session fork --socket "$SOCK" "$SID"
FID=$OUT
if [ "$RC" = 0 ] && [ -n "$FID" ]; then ok "a recorded session forks"; else fail "a recorded session forks" "rc $RC $ERR"; fi
run_fb exec --socket "$SOCK" "$FID" -- true
run_fb session rm --socket "$SOCK" "$FID"
run_fb session rm --socket "$SOCK" "$SID"
wait_for 20 grep -qs '"event":"end"' "$SR"
verify_is "a session's record verifies (0)" 0 "intact, complete and signed" "$SR" --key "$T/key.pub"
/usr/bin/python3 - "$SR" > "$T/sess.out" 2>&1 <<'EOF2'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
start = [e for e in L if e["event"] == "start"]
assert start and start[0]["command"] == "session", start
ex = [e for e in L if e["event"] == "exec"]
end = {e["exec_id"]: e for e in L if e["event"] == "exec_end"}
assert [e["argv"][2] for e in ex] == ["echo one; echo two >&2", "exit 4", "printf 12345"], ex
got = [(end[e["exec_id"]]["exit_code"], end[e["exec_id"]]["stdout_bytes"], end[e["exec_id"]]["stderr_bytes"]) for e in ex]
assert got == [(0, 4, 4), (4, 0, 0), (0, 5, 0)], got
assert L[-1]["event"] == "end" and L[-1]["execs"] == 3, L[-1]
print("session-ok")
EOF2
if grep -q '^session-ok' "$T/sess.out"; then ok "a session's record: start, each exec and its end (exit, output bytes), end"; else fail "a session's record: each exec" "$(tail -c 600 "$T/sess.out")"; fi
expect_err "session create with an existing record: 125" 125 "the file exists" session create --socket "$SOCK" --record "$SR"
expect_err "session create with a non-Ed25519 key: 125" 125 "not an Ed25519 key" session create --socket "$SOCK" --record "$T/s2.jsonl" --record-key "$T/ec.pem"
[ -e "$T/s2.jsonl" ] && fail "a refused session record leaves no file" || ok "a refused session record leaves no file"
expect_err "a session's record in its writable workspace: 125" 125 "which the sandbox can write" session create --socket "$SOCK" --workspace "$T/wsr" --record "$T/wsr/s3.jsonl"
# A copy-on-write session: what workspace.commit and workspace.reset did is
# recorded (they change the host or the layer); as root, an exec the OOM
# killer hit is a "limit" line.
mkdir -p "$T/wsc"; echo old > "$T/wsc/f"; [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T/wsc"
SC=$T/session-cow.jsonl
MEM=(); [ "$FB_AS" = root ] && MEM=(--mem 64M)
run_fb session create --socket "$SOCK" --workspace "$T/wsc" --cow "${MEM[@]}" --record "$SC"
CID=$OUT; CERR=$ERR
run_fb exec --socket "$SOCK" "$CID" -- sh -c 'echo new > f; echo added > g'
CERR="$CERR exec: $RC $ERR"
run_fb session commit --socket "$SOCK" "$CID" f
run_fb exec --socket "$SOCK" "$CID" -- sh -c 'echo again > h'
run_fb session reset --socket "$SOCK" "$CID"
OOM=no
if [ "$FB_AS" = root ]; then
  run_fb exec --socket "$SOCK" "$CID" -- awk 'BEGIN { s = "x"; while (1) s = s s }'
  OOM=yes
fi
run_fb session rm --socket "$SOCK" "$CID"
wait_for 20 grep -qs '"event":"end"' "$SC"
if /usr/bin/python3 - "$SC" "$OOM" > "$T/cow.out" 2>&1 <<'EOF2'
import json, sys
L = [json.loads(l) for l in open(sys.argv[1])]
ws = [e for e in L if e["event"] == "workspace"]
assert [e["method"] for e in ws] == ["workspace.commit", "workspace.reset"], ws
c = ws[0]
assert c["paths"] == ["f"] and c["committed"] is True and c["applied"] == 1 and c["conflicts"] == 0 and c["force"] is False, c
if sys.argv[2] == "yes":
    lim = [e for e in L if e["event"] == "limit"]
    assert lim and lim[0]["limit"] == "memory" and lim[0]["exec_id"], L[-4:]
EOF2
then ok "a cow session's record: workspace.commit (paths, applied) and reset$([ $OOM = yes ] && echo ', an OOM-killed exec as a memory limit')"
else fail "a cow session's record: workspace events" "$(tail -c 300 "$T/cow.out" | tr '\n' ' ') create: $CERR"; fi
[ "$(cat "$T/wsc/f")" = new ] && [ ! -e "$T/wsc/g" ] || fail "the recorded commit applied f only" "$(ls "$T/wsc")"
SK=$T/session-killed.jsonl
run_fb session create --socket "$SOCK" --record "$SK"
SID=$OUT
run_fb exec --socket "$SOCK" "$SID" -- true
kill -KILL "$SRV"; wait "$SRV" 2>/dev/null
verify_is "a SIGKILLed server's session record: cut short (3)" 3 "cut short: lines 1-4 are intact" "$SK"
# The next run sweeps the cgroups the SIGKILLed server could not remove.
run_fb run -- true

no_leftovers "no leftovers"
