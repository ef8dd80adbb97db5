# 50-profiles-learn.sh — `fluebox learn` and --seccomp-log.
# A program that needs calls strict denies fails under strict; learn runs it
# permissively, writes a profile extending strict with exactly those calls
# (argument classes kept where strict's rules use them), and the program then
# succeeds under the learned profile while everything else strict denies
# stays denied. --seccomp-log lists denials (name, count, errno, process) in
# the run report without changing what the program sees.
. "$ROOT/tests/lib.sh"

mkdir -p "$T/fx" "$T/out"
[ "$FB_AS" != root ] && chown "$FB_AS" "$T/out"
cat > "$T/fx/needs.py" <<'EOF'
# Needs four things strict does not allow; exits 0 only if all of them work.
import ctypes, errno, os, socket, sys
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
bad = []
def err(): return errno.errorcode.get(ctypes.get_errno(), "?")
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 4).close()   # NETLINK_SOCK_DIAG
except OSError as e:
    bad.append("sock_diag:" + errno.errorcode.get(e.errno, "?"))
allow = ctypes.c_uint32(0x7fff0000)
if libc.syscall(ctypes.c_long(317), ctypes.c_ulong(2), ctypes.c_ulong(0), ctypes.byref(allow)) < 0:
    bad.append("seccomp:" + err())                                   # SECCOMP_GET_ACTION_AVAIL
ctx = ctypes.c_ulong(0)
if libc.syscall(ctypes.c_long(206), ctypes.c_ulong(1), ctypes.byref(ctx)) < 0:
    bad.append("io_setup:" + err())
else:
    libc.syscall(ctypes.c_long(207), ctx)                             # io_destroy
tsc = ctypes.c_int(0)
if libc.prctl(25, ctypes.byref(tsc), 0, 0, 0) < 0:                   # PR_GET_TSC
    bad.append("prctl:" + err())
print("bad:", " ".join(bad) or "none")
sys.exit(1 if bad else 0)
EOF
cat > "$T/fx/extra.py" <<'EOF'
# Only under the learned profile: things the learned rules must not cover.
import ctypes, errno, socket
libc = ctypes.CDLL(None, use_errno=True)
r = libc.prctl(26, 1, 0, 0, 0)                                        # PR_SET_TSC
print("set_tsc", "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
r = libc.ptrace(0, 0, 0, 0)
print("ptrace", "ok" if r == 0 else errno.errorcode.get(ctypes.get_errno(), "?"))
try:
    socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, 9).close()    # NETLINK_AUDIT
    print("audit-socket ok")
except OSError as e:
    print("audit-socket", errno.errorcode.get(e.errno, "?"))
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close()
    print("inet ok")
except OSError as e:
    print("inet", errno.errorcode.get(e.errno, "?"))
EOF
chmod -R a+rX "$T/fx"

# --- strict refuses, learn learns -------------------------------------------------
run_fb run --profile strict --ro-bind "$T/fx:/fx" -- python3 /fx/needs.py
case "$OUT" in *"bad: sock_diag:EAFNOSUPPORT seccomp:EPERM io_setup:EPERM prctl:EPERM"*)
  ok "strict denies what the program needs" ;; *) fail "strict denies what the program needs" "exit $RC: $OUT $ERR" ;; esac

run_fb learn --out "$T/out/needs.json" --ro-bind "$T/fx:/fx" -- python3 /fx/needs.py
if [ "$RC" = 0 ] && [ -s "$T/out/needs.json" ]; then ok "learn runs the program to success and writes the profile"
else fail "learn runs the program to success" "exit $RC: $OUT / $ERR"; fi
case "$ERR" in *"rules beyond strict written to"*) ok "learn says what it wrote" ;; *) fail "learn says what it wrote" "$ERR" ;; esac

python3 - "$T/out/needs.json" <<'EOF' && ok "the learned profile extends strict with exactly the calls used, commented" || fail "learned profile content" "$(cat "$T/out/needs.json")"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["extends"] == "strict", p["extends"]
rules = p["seccomp"]["rules"]
got, kept = {}, {}
for r in rules:
    c = r.get("comment", "")
    names = r.get("names", [r.get("name")])
    if c.startswith("from strict"):
        # strict's other rules for a learned syscall, repeated: a profile's
        # rules for a syscall replace the inherited ones
        for n in names:
            kept.setdefault(n, []).append(r)
        continue
    assert r["action"] == "allow", r
    assert c.startswith("used by the command"), r
    for n in names:
        got.setdefault(n, []).append(r.get("args", []))
assert set(got) == {"socket", "seccomp", "io_setup", "io_destroy", "prctl"}, sorted(got)
# argument classes: strict decides socket by family and protocol, prctl by option
(sock,) = got["socket"]
assert {(a["index"], a["value"]) for a in sock} == {(0, "AF_NETLINK"), (2, 4)}, sock
(pr,) = got["prctl"]
assert [(a["index"], a["value"]) for a in pr] == [(0, "PR_GET_TSC")], pr
assert got["seccomp"] == [[]] and got["io_setup"] == [[]] and got["io_destroy"] == [[]]
# only socket and prctl have conditional rules in strict, and they are kept
# but for the one that denied the learned call (netlink protocol 4)
assert set(kept) == {"socket", "prctl"}, sorted(kept)
protos = [a["value"] for r in kept["socket"] for a in r.get("args", []) if a["index"] == 2 and a["op"] == "eq"]
flat = [v for x in protos for v in (x if isinstance(x, list) else [x])]
assert 4 not in flat and 9 in flat and 0 in flat, protos  # 0: NETLINK_ROUTE
EOF

expect_out "profile check accepts the learned profile" "needs.json: ok (extends strict" profile check "$T/out/needs.json"
run_fb run --profile "$T/out/needs.json" --ro-bind "$T/fx:/fx" -- python3 /fx/needs.py
case "$OUT" in *"bad: none"*) [ "$RC" = 0 ] && ok "the program succeeds under the learned profile" || fail "under the learned profile" "exit $RC" ;;
  *) fail "the program succeeds under the learned profile" "exit $RC: $OUT $ERR" ;; esac
run_fb run --profile "$T/out/needs.json" --ro-bind "$T/fx:/fx" -- python3 /fx/extra.py
case "$OUT" in *"set_tsc EPERM"*"ptrace EPERM"*) ok "learned: other prctl options and syscalls stay denied" ;; *) fail "learned: others stay denied" "$OUT $ERR" ;; esac
case "$OUT" in *"inet ok"*) ok "learned: what strict allowed of a learned syscall still works (inet sockets)" ;; *) fail "learned: inet sockets" "$OUT" ;; esac
case "$OUT" in *"audit-socket EAFNOSUPPORT"*) ok "learned: other netlink protocols stay denied" ;; *) fail "learned: other netlink protocols stay denied" "$OUT" ;; esac

# --- fixed rules stay while learning -------------------------------------------------
run_fb learn --out "$T/out/unshare.json" -- sh -c 'unshare -U true; echo "unshare=$?"'
case "$OUT" in *"unshare=1"*) ok "learn: namespace creation is still refused" ;; *) fail "learn: namespace creation is still refused" "$OUT $ERR" ;; esac
if python3 -c "import json,sys; sys.exit(0 if json.load(open(sys.argv[1]))['seccomp']['rules'] == [] else 1)" "$T/out/unshare.json" 2>/dev/null; then ok "learn: fixed denials are not learned"
else fail "learn: fixed denials are not learned" "$(cat "$T/out/unshare.json" 2>/dev/null)"; fi

# --- a base other than strict, and nothing to learn --------------------------------
run_fb learn --profile standard --out "$T/out/std.json" --ro-bind "$T/fx:/fx" -- python3 /fx/needs.py
python3 - "$T/out/std.json" <<'EOF' && ok "learn --profile standard extends standard" || fail "learn --profile standard" "$(cat "$T/out/std.json" 2>/dev/null)"
import json, sys
p = json.load(open(sys.argv[1]))
assert p["extends"] == "standard"
names = {n for r in p["seccomp"]["rules"] for n in r.get("names", [r.get("name")])}
assert names == {"io_setup", "io_destroy"}, names   # standard allows the rest already
EOF
run_fb learn --out "$T/out/none.json" -- sh -c 'echo hi; ls / >/dev/null'
python3 -c "import json,sys; p=json.load(open(sys.argv[1])); sys.exit(0 if p['seccomp']['rules'] == [] else 1)" "$T/out/none.json" 2>/dev/null \
  && ok "learn: a command strict already allows learns nothing" || fail "learn: nothing to learn" "$(cat "$T/out/none.json" 2>/dev/null)"
expect_out "learn passes the command's output through" "hi" learn --out "$T/out/none2.json" -- echo hi
expect_rc "learn exits with the command's status" 3 learn --out "$T/out/three.json" -- sh -c 'exit 3'
expect_err "learn without --out is a usage error" 125 "--out FILE is required" learn -- true
expect_err "learn without a command" 125 "missing \"--\" before the command" learn --out "$T/out/x.json"

# --- --seccomp-log --------------------------------------------------------------------
rm -f "$T/rep.json"
run_fb run --profile strict --seccomp-log --report "$T/rep.json" --ro-bind "$T/fx:/fx" -- python3 /fx/needs.py
case "$OUT" in *"bad: sock_diag:EAFNOSUPPORT seccomp:EPERM io_setup:EPERM prctl:EPERM"*)
  ok "--seccomp-log: the program sees the same errors" ;; *) fail "--seccomp-log: same errors" "$OUT" ;; esac
python3 - "$T/rep.json" <<'EOF' && ok "--seccomp-log: the report lists each denial with count, errno and process" || fail "--seccomp-log report" "$(head -c 800 "$T/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
s = r["seccomp"]
assert s["mode"] == "log"
d = {x["syscall"]: x for x in s["denied"]}
assert d["seccomp"]["errno"] == "EPERM" and d["io_setup"]["errno"] == "EPERM", d
assert d["prctl"]["errno"] == "EPERM" and d["socket"]["errno"] == "EAFNOSUPPORT", d
assert all(x["count"] >= 1 and x["first_comm"] for x in s["denied"])
assert r["seccomp_denials"] == s["notified"] >= 4, (r["seccomp_denials"], s["notified"])
EOF
rm -f "$T/rep.json"
run_fb run --profile strict --report "$T/rep.json" -- true
python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r['seccomp_denials'] is None and 'seccomp' not in r else 1)" "$T/rep.json" \
  && ok "without --seccomp-log denials are not counted (null)" || fail "without --seccomp-log" "$(head -c 300 "$T/rep.json")"
rm -f "$T/rep.json"
run_fb run --profile standard --seccomp-log --report "$T/rep.json" -- sh -c 'for i in 1 2 3; do unshare -U true 2>/dev/null; done; true'
python3 - "$T/rep.json" <<'EOF' && ok "--seccomp-log counts repeated denials, fixed rules included" || fail "--seccomp-log counts" "$(head -c 600 "$T/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
d = {x["syscall"]: x for x in r["seccomp"]["denied"]}
assert d["unshare"]["count"] == 3 and d["unshare"]["first_comm"] == "unshare", d
EOF
no_leftovers "no leftovers after learn"
