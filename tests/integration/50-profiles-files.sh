# 50-profiles-files.sh — profile files: every section does what it says in a
# real run, "extends" chains apply in order, a profile's seccomp rules for a
# syscall replace the ones it inherits for that syscall, and command-line
# options win over the profile and are recorded as overrides in the report.
. "$ROOT/tests/lib.sh"

mkdir -p "$T/p/data" "$T/p/sub" "$T/fx"
echo "profile data" > "$T/p/data/file.txt"
cat > "$T/fx/calls.py" <<'EOF'
# Prints NAME RESULT for a few calls whose answer the profiles below change.
import ctypes, errno, os, socket
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def e(r): return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno(), "?")
allow = ctypes.c_uint32(0x7fff0000)
print("seccomp", e(libc.syscall(ctypes.c_long(317), ctypes.c_ulong(2), ctypes.c_ulong(0), ctypes.byref(allow))))
try:
    os.mkdir("/tmp/d"); print("mkdir ok")
except OSError as x:
    print("mkdir", errno.errorcode.get(x.errno))
for proto in (4, 9):
    try:
        socket.socket(socket.AF_NETLINK, socket.SOCK_RAW, proto).close(); print("netlink%d ok" % proto)
    except OSError as x:
        print("netlink%d %s" % (proto, errno.errorcode.get(x.errno)))
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM).close(); print("inet ok")
except OSError as x:
    print("inet", errno.errorcode.get(x.errno))
print("getppid", e(libc.syscall(ctypes.c_long(110))))
print("sysinfo", e(libc.syscall(ctypes.c_long(99), ctypes.create_string_buffer(128))))
print("uname", e(libc.syscall(ctypes.c_long(63), ctypes.create_string_buffer(512))))
EOF
chmod -R a+rX "$T/p" "$T/fx"
if [ "$FB_AS" != root ]; then chown -R "$FB_AS" "$T/p/sub"; fi

mk() { printf '%s\n' "$2" > "$T/p/$1"; chmod a+r "$T/p/$1"; }
calls() { # profile: runs calls.py, result in $OUT
  run_fb run --profile "$1" --ro-bind "$T/fx:/fx" -- python3 /fx/calls.py
}
has() { # test-name substring (in $OUT)
  case "$OUT" in *"$2"*) ok "$1" ;; *) fail "$1" "lacks '$2': $OUT $(printf %s "$ERR" | head -c 300)" ;; esac
}

# --- seccomp: a profile's rules for a syscall replace the inherited ones -----------
mk base.json '{"name": "base", "extends": "strict",
  "seccomp": {"rules": [
    {"name": "seccomp", "action": "allow", "comment": "the base allows it"},
    {"name": "mkdir", "action": "errno(EACCES)"},
    {"name": "mkdirat", "action": "errno", "errno": "EACCES"}]}}'
mk sub/child.json '{"name": "child", "extends": "../base.json",
  "description": "a child of base",
  "seccomp": {"rules": [
    {"name": "seccomp", "action": "errno(ENOSYS)", "comment": "the child takes it back"},
    {"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_NETLINK"}, {"index": 2, "op": "eq", "value": 4}]},
    {"name": "getppid", "action": "log"}]}}'
calls strict
has "strict: seccomp() is denied" "seccomp EPERM"
has "strict: mkdir works" "mkdir ok"
has "strict: sock_diag netlink is denied" "netlink4 EAFNOSUPPORT"
has "strict: other netlink protocols too" "netlink9 EAFNOSUPPORT"
has "strict: inet sockets work" "inet ok"
calls "$T/p/base.json"
has "a rule allows what the extended profile denies" "seccomp ok"
has "a rule denies what the extended profile allows (errno(EACCES))" "mkdir EACCES"
has "syscalls the file has no rules for keep the inherited rules (socket)" "netlink9 EAFNOSUPPORT"
calls "$T/p/sub/child.json"
has "the extending profile's rule replaces the inherited one" "seccomp ENOSYS"
has "rules of the whole chain apply (base's mkdir rule)" "mkdir EACCES"
has "a conditional rule allows exactly its argument class" "netlink4 ok"
has "... and not the neighbouring class (strict's default)" "netlink9 EPERM"
has "strict's other socket rules are replaced too (inet gets the default)" "inet EPERM"
has "a 'log' rule allows the call" "getppid ok"
has "calls no rule mentions keep strict's answer" "sysinfo ok"
mk sub/child2.json '{"extends": "child.json", "seccomp": {"rules": [
    {"name": "socket", "action": "allow", "args": [{"index": 0, "value": ["AF_INET", "AF_UNIX"]}]},
    {"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_NETLINK"}, {"index": 2, "value": [0, 4]}]},
    {"name": "socket", "action": "errno(EAFNOSUPPORT)", "args": [{"index": 0, "value": "AF_NETLINK"}, {"index": 2, "op": "ge", "value": 5}]}]}}'
calls "$T/p/sub/child2.json"
has "rules that repeat what they keep: inet" "inet ok"
has "rules that repeat what they keep: sock_diag" "netlink4 ok"
has "a range on a 32-bit argument (protocol >= 5)" "netlink9 EAFNOSUPPORT"

run_fb profile show "$T/p/sub/child.json"
case "$OUT" in *'"comment": "effective policy, extends '*"base.json < strict"*) ok "show names the extends chain" ;; *) fail "show names the extends chain" "$(printf %s "$OUT" | head -c 400)" ;; esac
case "$OUT" in *'"description": "a child of base"'*) ok "show has the description" ;; *) fail "show has the description" "" ;; esac
expect_out "check names the chain" "base.json < strict" profile check "$T/p/sub/child.json"

mk kill.json '{"extends": "standard", "seccomp": {"rules": [{"name": "getppid", "action": "kill"}]}}'
expect_rc "a 'kill' rule kills the process (SIGSYS, 128+31)" 159 run --profile "$T/p/kill.json" -- python3 -c 'import os; os.getppid()'

mk args.json '{"extends": "standard", "seccomp": {"rules": [
  {"name": "uname", "action": "errno(EDOM)", "args": [{"index": 0, "op": "masked_eq", "value": "0x10", "mask": "0xffff800000000030"}]},
  {"name": "uname", "action": "errno(ERANGE)", "args": [{"index": 0, "op": "ge", "value": "0x800000000000"}]},
  {"name": "kill", "action": "errno(EDOM)", "args": [{"index": 1, "op": "ge", "value": 40}]},
  {"name": "getpriority", "action": "errno(EXDEV)", "args": [{"index": 0, "op": "ne", "value": 0}, {"index": 1, "value": 7}]}]}}'
run_fb run --profile "$T/p/args.json" -- python3 -c '
import ctypes, errno
libc = ctypes.CDLL(None, use_errno=True)
libc.syscall.restype = ctypes.c_long
def t(nr, *v):
    r = libc.syscall(ctypes.c_long(nr), *[ctypes.c_ulong(x) for x in v])
    return "ok" if r >= 0 else errno.errorcode.get(ctypes.get_errno())
buf = ctypes.create_string_buffer(512)
a = ctypes.addressof(buf)
print("plain", t(63, a), "masked", t(63, 0x90), "range", t(63, 0x800000000020), "below", t(63, 0x7fff00000020))
nopid = 0x7ffffff0   # no such process: a signal the filter lets through gets ESRCH
print("sig45", t(62, nopid, 45), "sig45hi", t(62, nopid, (1 << 32) | 45), "sig1hi", t(62, nopid, (1 << 32) | 1))
print("prio_ne", t(140, 1, 7), "prio_eq", t(140, 0, 7), "prio_other", t(140, 1, 8))'
has "masked_eq matches (arg & mask) == value" "masked EDOM"
has "ge on a 64-bit argument" "range ERANGE"
has "below the range the kernel answers" "below EFAULT"
has "a real buffer passes" "plain ok"
has "ge on a 32-bit argument (signal 45)" "sig45 EDOM"
has "a 32-bit argument is compared on its low 32 bits (45 | 1 << 32)" "sig45hi EDOM"
has "... and high garbage does not make a range match (1 | 1 << 32)" "sig1hi ESRCH"
has "ne and eq in one rule: both hold" "prio_ne EXDEV"
has "ne and eq in one rule: ne fails (the kernel answers)" "prio_eq ESRCH"
has "ne and eq in one rule: eq fails (the kernel answers)" "prio_other ESRCH"

# --- filesystem, environment, identity ----------------------------------------------
mk fs.json '{"extends": "standard",
  "filesystem": {"ro_bind": ["data:/data", {"src": "/no/such/path", "dst": "/opt/x", "optional": true}],
                 "bind": [{"src": "sub", "dst": "/rw"}],
                 "tmpfs": ["/scratch:8M"], "hide": ["/etc/passwd", "/data/secret-dir"]},
  "environment": {"set": {"FROM_PROFILE": "yes"}, "pass": ["FB_TEST_PASS"]},
  "hostname": "profbox", "uid": 0, "gid": 0}'
mkdir -p "$T/p/data/secret-dir"; echo hidden > "$T/p/data/secret-dir/x"; chmod -R a+rX "$T/p/data"
run_fb run --profile "$T/p/fs.json" -- sh -c '
  cat /data/file.txt; echo ro=$(touch /data/new 2>/dev/null && echo yes || echo no)
  echo rw=$(echo w > /rw/written && echo yes || echo no)
  echo scratch=$(df -k /scratch | awk "NR==2 {print \$2}")
  echo passwd=$(wc -c < /etc/passwd); echo hidden=$(ls /data/secret-dir | wc -l)
  echo env=$FROM_PROFILE pass=${FB_TEST_PASS:-unset}; echo host=$(hostname); echo id=$(id -u)'
has "filesystem.ro_bind: a source relative to the profile file" "profile data"
has "filesystem.ro_bind is read-only" "ro=no"
has "filesystem.bind is writable" "rw=yes"
[ -f "$T/p/sub/written" ] && ok "filesystem.bind writes reach the host directory" || fail "filesystem.bind writes reach the host directory" "$OUT"
has "filesystem.tmpfs with its size" "scratch=8192"
has "filesystem.hide empties a file" "passwd=0"
has "filesystem.hide empties a directory" "hidden=0"
has "environment.set" "env=yes"
has "environment.pass of an unset variable passes nothing" "pass=unset"
has "hostname" "host=profbox"
has "uid" "id=0"

mk nouts.json '{"extends": "standard", "namespaces": {"uts": false}}'
expect_out "namespaces.uts false shares the host's hostname" "$(hostname)" run --profile "$T/p/nouts.json" -- hostname

# --- limits, and the command line over the profile ----------------------------------
mk lim.json '{"extends": "strict", "limits": {"pids": 40, "nofile": 100, "memory": "300M", "timeout": "20s"}}'
rm -f "$T/rep.json"
run_fb run --profile "$T/p/lim.json" --nofile 200 --report "$T/rep.json" -- sh -c 'ulimit -n'
has "the command line wins over the profile (--nofile 200 over 100)" "200"
python3 - "$T/rep.json" "$T/p/lim.json" <<'EOF' && ok "report: the profile file, its limits, the overrides" || fail "report of a profile file" "$(head -c 600 "$T/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["profile"] == sys.argv[2], r["profile"]
l = r["limits"]
assert l["pids"] == 40 and l["memory_bytes"] == 300 << 20 and l["timeout_ms"] == 20000 and l["nofile"] == 200, l
assert r["overrides"] == ["--nofile 200"], r["overrides"]
EOF
expect_out "limits.nofile from the profile" "100" run --profile "$T/p/lim.json" -- sh -c 'ulimit -n'

mk net.json '{"extends": "trusted", "network": {"mode": "host"}}'
run_fb profile check "$T/p/net.json"
[ "$RC" = 0 ] && ok "network mode host is fine where host_allowed" || fail "network host under trusted" "$ERR"
mk allow.json '{"extends": "standard", "network": {"mode": "allow", "allow": ["*.example.org:443", "pypi.org"]}}'
run_fb profile show "$T/p/allow.json"
has "network.allow in the effective policy" '"*.example.org:443"'
# --- what fluebox's own init calls is not the command's ---------------------------------
# A profile may kill vfork (python and posix_spawn use it): init starts the
# command with fork, so the run works and --seccomp-log counts no denial.
mk novfork.json '{"extends": "standard", "seccomp": {"rules": [{"names": ["vfork"], "action": "kill"}]}}'
run_fb run --profile "$T/p/novfork.json" -- echo started
[ "$RC/$OUT" = "0/started" ] && ok "a profile that kills vfork still starts the command" || fail "profile killing vfork" "rc $RC: $OUT $ERR"
mk novfork2.json '{"extends": "standard", "seccomp": {"rules": [{"names": ["vfork"], "action": "errno(EPERM)"}]}}'
rm -f "$T/rep.json"
run_fb run --profile "$T/p/novfork2.json" --seccomp-log --report "$T/rep.json" -- true
python3 - "$T/rep.json" <<'EOF' && ok "--seccomp-log: no denial of fluebox's own init in the report" || fail "--seccomp-log counts init's calls" "$(head -c 600 "$T/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["exit_code"] == 0 and r["seccomp"]["denied"] == [], r["seccomp"]
EOF
no_leftovers "no leftovers after profile files"
