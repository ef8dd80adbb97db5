#!/bin/bash
# timeout: 480
# tests/suites/oci-run.sh — `fluebox oci` on its own (no containerd): bad
# input fails with one clear line and leaves nothing behind; the lifecycle
# and its states; exec, ps, pause and resume; the egress allowlist and the
# report from annotations; the boundary a container keeps. Needs root.
# Bundles use the host's /usr read-only (python3 for the network check).
#
# Prints "ok - ..." / "not ok - ..." lines and "# end of suite".
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}

ok() { echo "ok - oci-run: $1"; }
fail() { echo "not ok - oci-run: $1${2:+: $2}"; }
if [ "$(id -u)" != 0 ]; then
    echo "ok - oci-run: fluebox oci # SKIP needs root"
    echo "# end of suite"
    exit 0
fi

# shellcheck source=../oci/kernel.sh
. "$ROOT/tests/oci/kernel.sh"
if ! oci_kernel_ok 5.19; then
    echo "ok - oci-run: fluebox oci # SKIP $OCI_KERNEL_WHY"
    echo "# end of suite"
    exit 0
fi
if [ ! -e /dev/loop-control ] && ! oci_kernel_ok 6.6; then
    echo "ok - oci-run: fluebox oci # SKIP Linux $(uname -r) before 6.6: fluebox oci needs a loop device (docs/oci.md), and this machine has none"
    echo "# end of suite"
    exit 0
fi
T=$(mktemp -d /tmp/fbocirun.XXXXXX)
HTTP_PID=""
cleanup() {
    [ -n "$HTTP_PID" ] && kill "$HTTP_PID" 2>/dev/null && wait "$HTTP_PID" 2>/dev/null
    mountpoint -q "$T/podns" 2>/dev/null && umount "$T/podns"
    rm -rf "$T"
}
trap cleanup EXIT
export FLUEBOX_OCI_ROOT=$T/state
CG=/fbocirun-${T##*.}
O=("$FB" oci --log "$T/log.json" --log-format json)

# bundle DIR ARGS...: a bundle whose rootfs is an empty tree with the host's
# /usr (and its merged-/usr links) bound read-only.
bundle() {
    local b=$1
    shift
    mkdir -p "$b/rootfs"
    for d in proc dev sys tmp etc; do mkdir -p "$b/rootfs/$d"; done
    python3 - "$b" "$CG/$(basename "$b")" "$@" <<'EOF'
import json, os, sys
b, cg, args = sys.argv[1], sys.argv[2], sys.argv[3:]
mounts = [
    {"destination": "/proc", "type": "proc", "source": "proc"},
    {"destination": "/dev", "type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "mode=755"]},
    {"destination": "/dev/pts", "type": "devpts", "source": "devpts", "options": ["newinstance", "ptmxmode=0666"]},
    {"destination": "/tmp", "type": "tmpfs", "source": "tmpfs"},
    {"destination": "/usr", "type": "bind", "source": "/usr", "options": ["rbind", "ro"]},
]
for l in ("bin", "sbin", "lib", "lib64"):
    p = "/" + l
    if os.path.islink(p):
        os.symlink(os.readlink(p), b + "/rootfs" + p)
    elif os.path.isdir(p):
        mounts.append({"destination": p, "type": "bind", "source": p, "options": ["rbind", "ro"]})
for f in ("/etc/nsswitch.conf", "/etc/ld.so.cache"):
    if os.path.exists(f):
        mounts.append({"destination": f, "type": "bind", "source": f, "options": ["bind", "ro"]})
caps = ["CAP_CHOWN", "CAP_KILL", "CAP_SETUID", "CAP_SETGID", "CAP_NET_BIND_SERVICE"]
spec = {"ociVersion": "1.0.2",
        "process": {"args": args, "cwd": "/", "env": ["PATH=/usr/bin:/bin"],
                    "user": {"uid": 0, "gid": 0},
                    "capabilities": {"bounding": caps, "effective": caps, "permitted": caps}},
        "root": {"path": "rootfs"}, "hostname": "oci-run", "mounts": mounts,
        "annotations": {},
        "linux": {"namespaces": [{"type": t} for t in ("pid", "ipc", "uts", "mount", "network")],
                  "cgroupsPath": cg}}
json.dump(spec, open(b + "/config.json", "w"), indent=1)
EOF
}
# edit DIR PYTHON: change the bundle's config (c is the spec)
edit() {
    python3 - "$1/config.json" "$2" <<'EOF'
import json, sys
p = sys.argv[1]
c = json.load(open(p))
exec(sys.argv[2])
json.dump(c, open(p, "w"), indent=1)
EOF
}
lasterr() { python3 -c 'import json,sys
e=[json.loads(l) for l in open(sys.argv[1]) if l.strip()]
e=[x for x in e if x.get("level")=="error"]
print(e[-1]["msg"] if e else "")' "$T/log.json" 2>/dev/null; }
nothing_left() { # NAME ID: no state, no cgroup
    local st cg=""
    st=$(ls -A "$FLUEBOX_OCI_ROOT" 2>/dev/null)
    for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup/*/*"$CG"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/; do [ -d "$c" ] && cg="$cg $c"; done
    done
    if [ -z "$st" ] && [ -z "$cg" ]; then ok "$1: nothing left"; else fail "$1: left behind" "state: $st; cgroups: $cg"; fi
}

# wait_until TENTHS CMD...: until CMD succeeds, at most TENTHS tenths of a
# second of wall-clock time (a deadline, not a count of polls).
wait_until() {
    local end=$(( ${EPOCHREALTIME/./} + $1 * 100000 ))
    shift
    until "$@"; do
        [ "${EPOCHREALTIME/./}" -ge "$end" ] && { "$@"; return; }
        sleep 0.1
    done
}
st_field() { # ID KEY: a field of the container's state.json
    python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' \
        "$FLUEBOX_OCI_ROOT/$1/state.json" "$2" 2>/dev/null
}

# ---- bad input: one line in --log, exit 1, nothing left ----
bundle "$T/good" /bin/true
badcase() { # NAME WANT-SUBSTRING EDIT
    local name=$1 want=$2 code=$3
    rm -rf "$T/bad"
    cp -r "$T/good" "$T/bad"
    edit "$T/bad" "$code"
    : >"$T/log.json"
    "${O[@]}" create --bundle "$T/bad" bad >/dev/null 2>&1
    local rc=$? msg
    msg=$(lasterr)
    if [ "$rc" = 1 ] && [[ $msg == *"$want"* ]]; then ok "$name: exit 1, \"$msg\""; else fail "$name" "exit $rc, log: $msg"; fi
    nothing_left "$name"
}
badcase "a capability beyond the default set" "does not grant CAP_SYS_ADMIN" \
    'c["process"]["capabilities"]["bounding"].append("CAP_SYS_ADMIN")'
badcase "an unknown capability" 'unknown capability "CAP_TEST"' \
    'c["process"]["capabilities"]["bounding"].append("CAP_TEST")'
badcase "a mapping of host root" "never maps host root" \
    'c["linux"]["namespaces"].append({"type":"user"}); c["linux"]["uidMappings"]=[{"containerID":0,"hostID":0,"size":65536}]; c["linux"]["gidMappings"]=[{"containerID":0,"hostID":0,"size":65536}]'
badcase "an unknown fluebox annotation" "run.fluebox.bogus: unknown" \
    'c["annotations"]["run.fluebox.bogus"]="1"'
badcase "the host's network under the default profile" "does not permit it" \
    'c["linux"]["namespaces"]=[n for n in c["linux"]["namespaces"] if n["type"]!="network"]'
# Joining a namespace by path: never the host's own (the runtime's, reached
# through any host process's /proc/PID/ns), except the network where the
# profile permits host network. Another namespace (a pod's) is joined.
for t in network ipc uts pid cgroup; do
    f=$t
    [ "$t" = network ] && f=net
    want="is the host's $f namespace; a container never shares it"
    [ "$t" = network ] && want="is the host's network namespace; profile standard does not permit sharing it"
    badcase "joining the host's $t namespace by /proc/$$/ns/$f" "$want" \
        "c['annotations']['run.fluebox.profile']='standard'; c['linux']['namespaces']=[n for n in c['linux']['namespaces'] if n['type']!='$t']+[{'type':'$t','path':'/proc/$$/ns/$f'}]"
done
sleep 1000 &
HOSTPID=$!
badcase "joining the host's network namespace by another host process's /proc/PID/ns/net under strict" \
    "profile strict does not permit sharing it" \
    "c['annotations']['run.fluebox.profile']='strict'; c['linux']['namespaces']=[n for n in c['linux']['namespaces'] if n['type']!='network']+[{'type':'network','path':'/proc/$HOSTPID/ns/net'}]"
kill "$HOSTPID"
wait "$HOSTPID" 2>/dev/null
joinrun() { # NAME PROFILE NSPATH: run a container joining NSPATH, print its net namespace
    bundle "$T/$1" sh -c 'readlink /proc/self/ns/net'
    # (nofile lowered to what any machine's hard limit allows: trusted asks 65536)
    edit "$T/$1" "c['process']['rlimits']=[{'type':'RLIMIT_NOFILE','hard':1024,'soft':1024}]; c['annotations']['run.fluebox.profile']='$2'; c['linux']['namespaces']=[n for n in c['linux']['namespaces'] if n['type']!='network']+[{'type':'network','path':'$3'}]"
    : >"$T/log.json"
    "${O[@]}" run --bundle "$T/$1" "$1" 2>&1
}
got=$(joinrun joinhost trusted "/proc/$$/ns/net")
rc=$?
if [ "$rc" = 0 ] && [ "$got" = "$(readlink /proc/self/ns/net)" ]; then
    ok "the host's network namespace by path where the profile permits host network (trusted)"
else
    fail "the host's network by path under trusted" "exit $rc, $got: $(lasterr)"
fi
nothing_left "the joined host network"
unshare --net sleep 1000 &
NSPID=$!
wait_until 50 test "$(readlink /proc/$NSPID/ns/net)" != "$(readlink /proc/self/ns/net)"
got=$(joinrun joinpod standard "/proc/$NSPID/ns/net")
rc=$?
if [ "$rc" = 0 ] && [ "$got" = "$(readlink /proc/$NSPID/ns/net)" ]; then
    ok "another network namespace (a pod's) is joined by its /proc/PID/ns path under standard"
else
    fail "joining a pod's network namespace" "exit $rc, $got: $(lasterr)"
fi
kill "$NSPID"
wait "$NSPID" 2>/dev/null
nothing_left "the joined pod network"
# run.fluebox.host-id: never a host account's id, and a pod's author pins
# only inside the allocator's pool.
badcase "run.fluebox.host-id at nobody's id" "a container may pin only a range inside fluebox's pool" \
    "c['annotations']['run.fluebox.host-id']='65534'"
badcase "run.fluebox.host-id below the pool" "a container may pin only a range inside fluebox's pool" \
    "c['annotations']['run.fluebox.host-id']='$((1879048192 - 65536))'"
badcase "a host device" "no host devices" \
    'c["linux"]["devices"]=[{"path":"/dev/sda","type":"b","major":8,"minor":0}]'
badcase "a bind source that is not there" "/no/such/dir" \
    'c["mounts"].append({"destination":"/x","type":"bind","source":"/no/such/dir","options":["rbind"]})'
# runc's exact text: dockerd maps "no such file or directory" to exit 127.
badcase "a missing command" 'exec: "/no/such/cmd": stat /no/such/cmd: no such file or directory' \
    'c["process"]["args"]=["/no/such/cmd"]'
badcase "a command not in PATH" 'exec: "nosuchcmd": executable file not found in $PATH' \
    'c["process"]["args"]=["nosuchcmd"]'
# Strict JSON types, as runc's typed decoding: the field named by its path.
badcase "a memory limit that is a string" 'linux.resources.memory.limit: expected an integer, not a string' \
    'c["linux"]["resources"]={"memory":{"limit":"lots"}}'
badcase "terminal: \"yes\"" 'process.terminal: expected true or false, not a string' \
    'c["process"]["terminal"]="yes"'
badcase "a newline in cwd" 'process.cwd: a control character' \
    'c["process"]["cwd"]="/tmp\nx"'
badcase "a fractional pids limit" 'linux.resources.pids.limit: expected an integer, not a fraction' \
    'c["linux"]["resources"]={"pids":{"limit":1e30}}'
badcase "a uid mapping size beyond 32 bits" 'linux.uidMappings[0].size: expected an integer of 0 to 4294967295' \
    'c["linux"]["uidMappings"]=[{"containerID":0,"hostID":0,"size":1<<40}]'
badcase "mounts that are not an array" 'mounts: expected an array, not an object' \
    'c["mounts"]={"x":1}'
badcase "an annotation that is a number" 'annotations.a: expected a string, not an integer' \
    'c["annotations"]["a"]=1'
badcase "a 50 MB annotation" 'more than the 1024 KiB fluebox keeps' \
    'c["annotations"]["big"]="x"*(50<<20)'
rawcase() { # NAME WANT SHELL: config.json written by SHELL (in the bundle dir)
    local name=$1 want=$2
    rm -rf "$T/bad"
    cp -r "$T/good" "$T/bad"
    (cd "$T/bad" && eval "$3")
    : >"$T/log.json"
    "${O[@]}" create --bundle "$T/bad" bad >/dev/null 2>&1
    local rc=$? msg
    msg=$(lasterr)
    if [ "$rc" = 1 ] && [[ $msg == *"$want"* ]]; then ok "$name: exit 1, \"$msg\""; else fail "$name" "exit $rc, log: $msg"; fi
    nothing_left "$name"
}
rawcase "a truncated config.json" "config.json:" 'head -c 300 config.json > c2 && mv c2 config.json'
cat >"$T/deep.py" <<'EOF2'
t = open("config.json").read().rstrip()
open("config.json", "w").write(t[:-1] + ', "x": ' + "[" * 5000 + "]" * 5000 + "}")
EOF2
rawcase "deep nesting" "maximum parsing depth" 'python3 "$T/deep.py"'
rawcase "a config.json that is an array" "config.json: expected an object, not an array" 'echo "[]" > config.json'
: >"$T/log.json"
"${O[@]}" create --bundle "$T/nobundle" nb >/dev/null 2>&1
rc=$?
if [ "$rc" = 1 ] && [[ $(lasterr) == *"nobundle"* ]]; then ok "a missing bundle: $(lasterr)"; else fail "a missing bundle" "exit $rc: $(lasterr)"; fi

# ---- lifecycle, states, exec, ps, pause ----
bundle "$T/life" sh -c 'echo started > /tmp/mark; sleep 1000'
"${O[@]}" create --bundle "$T/life" life >/dev/null 2>&1
s1=$("$FB" oci state life 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')
"${O[@]}" create --bundle "$T/life" life >/dev/null 2>&1
dup=$?
"${O[@]}" start life
s2=$("$FB" oci state life | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')
"${O[@]}" exec life sh -c 'cat /tmp/mark; exit 3' >"$T/exec.out" 2>&1
erc=$?
pids=$("$FB" oci ps --format json life | python3 -c 'import json,sys;print(len(json.load(sys.stdin)))')
printf '{"memory":{"limit":100663296},"pids":{"limit":77}}' | "${O[@]}" update --resources - life
mem=$(cat /sys/fs/cgroup/memory"$CG"/life/memory.limit_in_bytes /sys/fs/cgroup"$CG"/life/memory.max 2>/dev/null | head -n 1)
pidsmax=$(cat /sys/fs/cgroup/pids"$CG"/life/pids.max /sys/fs/cgroup"$CG"/life/pids.max 2>/dev/null | head -n 1)
"${O[@]}" pause life
s3=$("$FB" oci state life | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')
"${O[@]}" resume life
"${O[@]}" delete life >/dev/null 2>&1
nodel=$?
"${O[@]}" kill life KILL
for _ in $(seq 100); do
    [ "$("$FB" oci state life | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')" = stopped ] && break
    sleep 0.1
done
"${O[@]}" delete life
[ "$s1/$s2/$s3" = created/running/paused ] && ok "states: created, running, paused" || fail "states" "$s1/$s2/$s3"
[ "$dup" = 1 ] && ok "a second create with the same id fails" || fail "duplicate id" "exit $dup"
[ "$erc" = 3 ] && grep -q started "$T/exec.out" && ok "exec sees the container's files and has its own exit code" ||
    fail "exec" "exit $erc: $(cat "$T/exec.out")"
[ "$pids" -ge 2 ] && ok "ps lists $pids processes" || fail "ps" "$pids"
[ "$mem/$pidsmax" = 100663296/77 ] && ok "update --resources - changes the cgroup's limits" || fail "update" "$mem/$pidsmax"
[ "$nodel" = 1 ] && ok "delete of a running container without --force fails" || fail "delete while running" "exit $nodel"
"${O[@]}" delete --force life && ok "delete --force of a container already gone exits 0" || fail "delete --force of a gone id"
nothing_left "the lifecycle"

# ---- kill of a stopped container: runc's outcome, which engines match on ----
bundle "$T/gone" true
"${O[@]}" create --bundle "$T/gone" gone >/dev/null 2>&1
"${O[@]}" start gone
stopped() { [ "$("$FB" oci state gone 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')" = stopped ]; }
wait_until 100 stopped
"${O[@]}" kill --all gone KILL
kall=$?
: >"$T/log.json"
"${O[@]}" kill gone KILL
kone=$?
if [ "$kall" = 0 ] && [ "$kone" = 1 ] && [ "$(lasterr)" = "container not running" ]; then
    ok "kill of a stopped container: --all exits 0, without it exit 1 and \"container not running\" (runc's)"
else
    fail "kill of a stopped container" "--all: exit $kall; without: exit $kone, $(lasterr)"
fi
"${O[@]}" delete gone
nothing_left "the kill of a stopped container"

# ---- signals go to the process (the container's pid 1 in runc), not its group ----
# The child (a sleep in the background) is in the process's group: after
# kill ID TERM the shell's trap reads its state, S while it lives.
bundle "$T/sig" sh -c 'sleep 1000 & c=$!; trap "echo child-state=\$(cut -d\" \" -f3 /proc/\$c/stat); exit 0" TERM; echo child-ready; while :; do sleep 0.05; done'
"${O[@]}" create --bundle "$T/sig" sig >"$T/sig.out" 2>&1
"${O[@]}" start sig
wait_until 100 grep -q child-ready "$T/sig.out"
"${O[@]}" kill sig TERM
wait_until 100 grep -q child-state "$T/sig.out"
sigstopped() { [ "$("$FB" oci state sig 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')" = stopped ]; }
wait_until 100 sigstopped
if grep -q "child-state=S" "$T/sig.out"; then
    ok "kill ID TERM reaches the process alone, not its process group"
else
    fail "kill's signal" "$(cat "$T/sig.out")"
fi
"${O[@]}" delete --force sig
nothing_left "the signal run"

# ---- --preserve-fds: the caller's descriptor 3 reaches the process, and
# only the process holds it (the reader sees its end when the process closes it) ----
bundle "$T/pfd" sh -c 'echo through-fd-3 >&3; exec 3>&-; sleep 1000'
mkfifo "$T/pfifo"
("${O[@]}" run --detach --preserve-fds 1 --bundle "$T/pfd" pfd 3>"$T/pfifo" >/dev/null 2>&1 &)
got=$(timeout 60 cat "$T/pfifo")
grc=$?
if [ "$grc" = 0 ] && [ "$got" = through-fd-3 ]; then
    ok "--preserve-fds 1: descriptor 3 reaches the process, and its end reaches the reader"
else
    fail "--preserve-fds" "cat exit $grc, read \"$got\""
fi
"${O[@]}" delete --force pfd
: >"$T/log.json"
"${O[@]}" run --preserve-fds 40 --bundle "$T/pfd" pfd2 >/dev/null 2>&1
prc=$?
if [ "$prc" = 1 ] && [[ $(lasterr) == *"descriptor"*"is not open"* ]]; then
    ok "--preserve-fds beyond the open descriptors: exit 1, $(lasterr)"
else
    fail "--preserve-fds beyond the open descriptors" "exit $prc: $(lasterr)"
fi
nothing_left "the preserve-fds runs"

# ---- Docker's default sysctl: every group may ping ----
bundle "$T/ping" cat /proc/sys/net/ipv4/ping_group_range
edit "$T/ping" 'c["linux"]["sysctl"]={"net.ipv4.ping_group_range":"0 2147483647"}'
: >"$T/log.json"
"$FB" oci --log "$T/log.json" --log-format json run --bundle "$T/ping" ping >"$T/ping.out" 2>&1
prc=$?
if [ "$prc" = 0 ] && [ "$(tr -s '\t ' ' ' <"$T/ping.out")" = "0 65535" ]; then
    ok "net.ipv4.ping_group_range=0 2147483647 (Docker's default) runs: every group of the 65536 mapped"
else
    fail "ping_group_range" "exit $prc: $(cat "$T/ping.out") $(lasterr)"
fi
nothing_left "the ping_group_range run"

# ---- annotations beyond 64 KiB (Kubernetes allows 256 KiB): state of any size ----
bundle "$T/ann" sleep 1000
edit "$T/ann" 'c["annotations"].update({"k%d" % i: "v" * 1000 for i in range(300)})'
"${O[@]}" create --bundle "$T/ann" ann >/dev/null 2>&1
ast=$("$FB" oci state ann 2>/dev/null | python3 -c 'import json,sys;d=json.load(sys.stdin);print(d["status"], len(d["annotations"]))')
"${O[@]}" start ann
"${O[@]}" kill ann KILL
annstopped() { [ "$("$FB" oci state ann 2>/dev/null | python3 -c 'import json,sys;print(json.load(sys.stdin)["status"])')" = stopped ]; }
wait_until 100 annstopped
"${O[@]}" delete ann
adel=$?
if [ "$ast" = "created 300" ] && [ "$adel" = 0 ]; then
    ok "300 KiB of annotations: state, start, kill and delete work"
else
    fail "300 KiB of annotations" "state: $ast; delete: exit $adel"
fi
nothing_left "the annotated container"

# ---- exec's rlimits: the profile's bounds, which process.json can only lower ----
bundle "$T/rl" sleep 1000
"${O[@]}" run --detach --bundle "$T/rl" rl >/dev/null 2>&1
procjson() { # FILE RLIMITS-PYTHON: a process.json printing its limits
    python3 - "$1" "$2" <<'EOF2'
import json, sys
p = {"args": ["sh", "-c", "echo n=$(ulimit -n) c=$(ulimit -c) s=$(ulimit -s)"], "cwd": "/",
     "env": ["PATH=/usr/bin:/bin"], "user": {"uid": 0, "gid": 0}, "rlimits": eval(sys.argv[2])}
json.dump(p, open(sys.argv[1], "w"))
EOF2
}
G=1073741824
procjson "$T/rl1.json" "[{'type':'RLIMIT_NOFILE','hard':4096,'soft':4096},{'type':'RLIMIT_CORE','hard':$G,'soft':$G},{'type':'RLIMIT_STACK','hard':16777216,'soft':4194304}]"
procjson "$T/rl2.json" "[{'type':'RLIMIT_NOFILE','hard':512,'soft':256}]"
procjson "$T/rl3.json" "[]"
r1=$("${O[@]}" exec --process "$T/rl1.json" rl 2>&1)
r2=$("${O[@]}" exec --process "$T/rl2.json" rl 2>&1)
r3=$("${O[@]}" exec --process "$T/rl3.json" rl 2>&1)
# The default profile (standard): nofile 1024, no core files.
if [ "$r1" = "n=1024 c=0 s=4096" ] && [ "$r2" = "n=256 c=0 s=8192" ] && [ "$r3" = "n=1024 c=0 s=8192" ]; then
    ok "exec: the profile's rlimits (nofile 1024, core 0); process.json lowers them (nofile 256) but cannot raise them (4096, 1G), and sets the others (stack)"
else
    fail "exec's rlimits" "raise: $r1; lower: $r2; none: $r3"
fi
"${O[@]}" delete --force rl
nothing_left "the exec rlimits"

# ---- the boundary inside ----
bundle "$T/in" sh -c 'cat /proc/self/uid_map; grep -E "^Seccomp:" /proc/self/status; echo "cgroupfiles=$(ls -A /sys/fs/cgroup | wc -l) kernelfiles=$(ls -A /sys/kernel | wc -l) sysfiles=$(ls -A /sys | wc -l)"; touch /usr/x 2>&1'
edit "$T/in" 'c["mounts"] += [{"destination":"/sys","type":"sysfs","source":"sysfs","options":["ro"]}, {"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup","options":["ro"]}]'
"$FB" oci run --bundle "$T/in" in >"$T/in.out" 2>&1
read -r _ host size <<<"$(head -n 1 "$T/in.out")"
[ "$host" -ge 1879048192 ] && [ "$size" = 65536 ] && ok "root inside is host id $host (the allocator's pool), 65536 ids mapped" || fail "id map" "$(head -n 1 "$T/in.out")"
grep -q "^Seccomp:.*2" "$T/in.out" && ok "seccomp filter mode on" || fail "seccomp" "$(cat "$T/in.out")"
grep -q "cgroupfiles=[1-9][0-9]* kernelfiles=0 sysfiles=[1-9]" "$T/in.out" && ok "sysfs is there, read-only, with /sys/kernel empty and the container's cgroup at /sys/fs/cgroup" ||
    fail "sysfs" "$(cat "$T/in.out")"
grep -q "Read-only file system" "$T/in.out" && ok "the host's /usr bound read-only stays read-only" || fail "ro bind" "$(cat "$T/in.out")"
nothing_left "a run"

# ---- /sys/fs/cgroup: the container's own cgroup, read-only ----
# What a JVM or Node reads to size itself; as Docker and CRI mount it, also
# in a network namespace the container does not own (a pod's, made by CNI),
# where sysfs itself cannot be mounted.
cgview() { # NAME ID: run the cgview bundle as ID, check what it printed
    "$FB" oci --log "$T/log.json" --log-format json run --bundle "$T/cgv" "$2" >"$T/cgv.out" 2>&1
    local rc=$?
    if [ "$rc" = 0 ] && grep -qx "limit=100663296" "$T/cgv.out" && grep -qx "write=refused" "$T/cgv.out" &&
        grep -qx "self=/" "$T/cgv.out"; then
        ok "$1: /sys/fs/cgroup shows the container's memory limit (96 MiB), read-only, its cgroup as /"
    else
        fail "$1" "exit $rc: $(tr '\n' ' ' <"$T/cgv.out") $(lasterr)"
    fi
}
bundle "$T/cgv" sh -c 'echo limit=$(cat /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max 2>/dev/null | head -n 1)
for f in /sys/fs/cgroup/memory/memory.limit_in_bytes /sys/fs/cgroup/memory.max; do [ -e $f ] && { echo 1 2>/dev/null >$f && echo write=done || echo write=refused; }; done
echo self=$(sed -n "s/^[0-9]*:[^:]*memory[^:]*://p; s/^0:://p" /proc/self/cgroup | head -n 1)'
edit "$T/cgv" 'c["mounts"] += [{"destination":"/sys","type":"sysfs","source":"sysfs","options":["ro","nosuid","nodev","noexec"]}, {"destination":"/sys/fs/cgroup","type":"cgroup","source":"cgroup","options":["ro","nosuid","nodev","noexec","relatime"]}]; c["linux"]["resources"]={"memory":{"limit":100663296}}'
cgview "cgroup view, own network namespace" cgv1
touch "$T/podnet"
unshare --net="$T/podnet" true
edit "$T/cgv" "[n.update({'path': '$T/podnet'}) for n in c['linux']['namespaces'] if n['type'] == 'network']"
cgview "cgroup view, a pod's network namespace joined by path" cgv2
umount "$T/podnet" 2>/dev/null
nothing_left "the cgroup views"

# ---- host ids: a range of each container's own (as `fluebox run`) ----
POOL_LO=1879048192 # 0x70000000, the allocator's pool (README: host id ranges)
bundle "$T/ida" sleep 1000
bundle "$T/idb" sleep 1000
"${O[@]}" run --detach --bundle "$T/ida" ida >/dev/null 2>&1
"${O[@]}" run --detach --bundle "$T/idb" idb >/dev/null 2>&1
ia=$(st_field ida pid)
ib=$(st_field idb pid)
a_base=$(awk '{print $2}' "/proc/$ia/uid_map" 2>/dev/null)
b_base=$(awk '{print $2}' "/proc/$ib/uid_map" 2>/dev/null)
if [ -n "$a_base" ] && [ -n "$b_base" ] && [ "$a_base" -ge $POOL_LO ] && [ "$b_base" -ge $POOL_LO ] &&
    [ $((a_base > b_base ? a_base - b_base : b_base - a_base)) -ge 65536 ]; then
    ok "two containers at once get disjoint ranges of the pool ($a_base, $b_base)"
else
    fail "two containers at once get disjoint ranges" "a=${a_base:-?} b=${b_base:-?}"
fi
owner=$(python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
print(int.from_bytes(fcntl.ioctl(fd, 0xb704, b"\0\0\0\0"), "little"))  # NS_GET_OWNER_UID' "/proc/$ia/ns/user" 2>&1)
[ -n "$a_base" ] && [ "$owner" = "$a_base" ] && ok "its user namespace belongs to the range's first id, not to host root" ||
    fail "the user namespace's owner" "owner $owner, base ${a_base:-?}"
"$FB" run -q --host-id "$a_base" -- true >/dev/null 2>&1
inuse=$?
"${O[@]}" kill ida KILL
wait_until 100 sh -c "! kill -0 $ia 2>/dev/null"
"${O[@]}" delete ida
if [ "$inuse" = 125 ] && "$FB" run -q --host-id "$a_base" -- true; then
    ok "the range is claimed while the container runs, free again after delete"
else
    fail "the range's claim" "run --host-id while it ran: exit $inuse; after delete: $?"
fi
# run.fluebox.host-id pins it: a second container on the same range is
# refused with one line, and leaves nothing.
PIN=$((POOL_LO + 4000 * 65536))
bundle "$T/pin" sleep 1000
edit "$T/pin" "c['annotations']['run.fluebox.host-id']='$PIN'"
"${O[@]}" run --detach --bundle "$T/pin" pin1 >/dev/null 2>&1
: >"$T/log.json"
"${O[@]}" run --detach --bundle "$T/pin" pin2 >/dev/null 2>&1
rc=$?
pinned=$(awk '{print $2}' "/proc/$(st_field pin1 pid)/uid_map" 2>/dev/null)
if [ "$pinned" = "$PIN" ] && [ "$rc" = 1 ] && [[ $(lasterr) == *"in use"* ]] && [ ! -e "$FLUEBOX_OCI_ROOT/pin2" ]; then
    ok "run.fluebox.host-id pins the range; a second container on it fails: $(lasterr)"
else
    fail "a pinned range" "pinned ${pinned:-?}, second: exit $rc, $(lasterr)"
fi
"${O[@]}" delete --force pin1
"${O[@]}" delete --force idb
nothing_left "the host id runs"

# ---- the allowlist and the report from annotations ----
PORT=$((20000 + RANDOM % 20000))
mkdir -p "$T/www" && echo hello-from-the-host >"$T/www/index.html"
(cd "$T/www" && exec python3 -m http.server "$PORT" --bind 127.0.0.1) >"$T/http.log" 2>&1 &
HTTP_PID=$!
for _ in $(seq 100); do python3 -c "import socket;socket.create_connection(('127.0.0.1',$PORT),1)" 2>/dev/null && break; sleep 0.1; done
bundle "$T/net" python3 -c "
import urllib.request
print(urllib.request.urlopen('http://api.test:$PORT/').read().decode().strip())
try:
    urllib.request.urlopen('http://other.test:$PORT/', timeout=5); print('other: reached')
except Exception as e:
    print('other: refused')
try:
    urllib.request.urlopen('http://127.0.0.1:$PORT/', timeout=5); print('loopback: reached')
except Exception as e:
    print('loopback: refused')"
edit "$T/net" "c['annotations'].update({'run.fluebox.allow-net':'api.test:$PORT','run.fluebox.egress-resolve':'api.test:$PORT=127.0.0.1:$PORT,other.test:$PORT=127.0.0.1:$PORT','run.fluebox.report':'$T/report.json'})"
"$FB" oci run --bundle "$T/net" net >"$T/net.out" 2>&1
if grep -q hello-from-the-host "$T/net.out" && grep -q "other: refused" "$T/net.out" &&
    grep -q "loopback: refused" "$T/net.out"; then
    ok "allowlist: the allowed name is reached, another name and the host's loopback are not"
else
    fail "allowlist" "$(cat "$T/net.out")"
fi
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); n=d['network']; sys.exit(not (d['exit_code']==0 and n['connections_allowed']>=1 and n['dns_denied']>=1))" "$T/report.json" 2>/dev/null; then
    ok "the report (run.fluebox.report): exit 0, the connection and the denied name counted"
else
    fail "report" "$(cat "$T/report.json" 2>&1 | head -c 300)"
fi
# CPU times and the root's writes: init is the shim's child, not the
# supervisor's, so they come from the container's cgroup and upper layer.
bundle "$T/cpu" sh -c 'i=0; while [ $i -lt 200000 ]; do i=$((i+1)); done; head -c 2097152 /dev/zero > /written'
edit "$T/cpu" "c['annotations']['run.fluebox.report']='$T/cpu.json'"
"$FB" oci run --bundle "$T/cpu" cpu >/dev/null 2>&1
if python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(not (d['user_ms'] > 0 and d['sys_ms'] is not None and d['cpu_ms'] > 0 and d['disk_used_bytes'] >= 2097152))" "$T/cpu.json" 2>/dev/null; then
    ok "the report's CPU times (user_ms, sys_ms) and disk_used_bytes (the root's writes)"
else
    fail "the report's CPU times" "$(cat "$T/cpu.json" 2>&1 | head -c 400)"
fi
nothing_left "the allowlist run"

# ---- the allowlist in a pod whose network namespace a CNI plugin made ----
# The "CNI" namespace: an interface up with an address and a default route.
touch "$T/podns"
unshare --net="$T/podns" sh -c 'ip link add eth0 type veth peer name eth0p && ip addr add 10.254.0.2/24 dev eth0 &&
    ip link set eth0 up && ip link set eth0p up && ip route add default via 10.254.0.1' 2>"$T/podns.err"
podspec() { # DIR ROLE [SANDBOX-ID] [ALLOW]: a container joining the pod's namespace
    edit "$1" "c['linux']['namespaces']=[n for n in c['linux']['namespaces'] if n['type']!='network']+[{'type':'network','path':'$T/podns'}]
c['annotations'].update({'run.fluebox.allow-net':'${4:-api.test:$PORT}','run.fluebox.egress-resolve':'api.test:$PORT=127.0.0.1:$PORT','io.kubernetes.cri.container-type':'$2'})
if '${3:-}': c['annotations']['io.kubernetes.cri.sandbox-id']='${3:-}'"
}
bundle "$T/pause" sleep 1000
podspec "$T/pause" sandbox
: >"$T/log.json"
"${O[@]}" create --bundle "$T/pause" pause >/dev/null 2>&1
pc=$?
links=$(nsenter --net="$T/podns" ip -o link show up 2>&1 | awk -F': ' '{print $2}' | tr '\n' ' ')
routes=$(nsenter --net="$T/podns" ip route 2>&1)
if [ "$pc" = 0 ] && [ "$links" = "lo " ] && [ -z "$routes" ]; then
    ok "a pod's sandbox container with the allowlist takes the CNI-made namespace: only lo up, no route"
else
    fail "the pod's sandbox container" "create $pc ($(lasterr)); up: $links; routes: $routes; $(cat "$T/podns.err")"
fi
bundle "$T/pause2" sleep 1000
podspec "$T/pause2" sandbox
: >"$T/log.json"
"${O[@]}" create --bundle "$T/pause2" pause2 >/dev/null 2>&1
if [ $? = 1 ] && [[ $(lasterr) == *"already has fluebox's relay"* ]]; then
    ok "a second sandbox container on the same namespace is refused: $(lasterr)"
else
    fail "a second owner" "$(lasterr)"
    "${O[@]}" delete --force pause2 2>/dev/null
fi
bundle "$T/member" python3 -c "
import urllib.request
print(urllib.request.urlopen('http://api.test:$PORT/').read().decode().strip())
for u in ('http://other.test:$PORT/', 'http://10.254.0.1:$PORT/', 'http://127.0.0.1:$PORT/'):
    try:
        urllib.request.urlopen(u, timeout=3); print('reached', u)
    except Exception as e:
        print('refused')"
podspec "$T/member" container pause
: >"$T/log.json"
"${O[@]}" run --bundle "$T/member" member >"$T/member.out" 2>&1
if grep -q hello-from-the-host "$T/member.out" && [ "$(grep -c refused "$T/member.out")" = 3 ]; then
    ok "a container of the pod reaches the allowed name through the sandbox container's relay, nothing else"
else
    fail "a pod member" "$(cat "$T/member.out") $(lasterr)"
fi
for c in "nothing|container|the allowlist in a pod needs its sandbox container|only in a pod" \
    "nosuch|container nosuch|no fluebox sandbox container|is not a fluebox container here" \
    "differs|container pause other.test:$PORT|another allowlist than the sandbox container's|differs from the pod's sandbox"; do
    IFS='|' read -r name args what want <<<"$c"
    bundle "$T/m-$name" true
    # shellcheck disable=SC2086
    podspec "$T/m-$name" $args
    : >"$T/log.json"
    "${O[@]}" create --bundle "$T/m-$name" "m-$name" >/dev/null 2>&1
    rc=$?
    if [ "$rc" = 1 ] && [[ $(lasterr) == *"$want"* ]] && [ ! -e "$FLUEBOX_OCI_ROOT/m-$name" ]; then
        ok "refused: $what: $(lasterr)"
    else
        fail "$what" "exit $rc: $(lasterr)"
        "${O[@]}" delete --force "m-$name" 2>/dev/null
    fi
done
"${O[@]}" delete --force pause
umount "$T/podns" && rm -f "$T/podns"
nothing_left "the pod network"

# ---- the flight record from annotations (issue 28) ----
mkdir -p "$T/rec"
openssl genpkey -algorithm ed25519 -out "$T/rec.key" 2>/dev/null && openssl pkey -in "$T/rec.key" -pubout -out "$T/rec.pub" 2>/dev/null
bundle "$T/recb" python3 -c "
import urllib.request
print(urllib.request.urlopen('http://api.test:$PORT/').read().decode().strip())
try:
    urllib.request.urlopen('http://denied.test:$PORT/', timeout=5)
except Exception:
    pass"
edit "$T/recb" "c['annotations'].update({'run.fluebox.allow-net':'api.test:$PORT','run.fluebox.egress-resolve':'api.test:$PORT=127.0.0.1:$PORT','run.fluebox.record':'$T/rec/c1.jsonl','run.fluebox.record-key':'$T/rec.key'})"
"$FB" oci run --bundle "$T/recb" recb >"$T/recb.out" 2>&1
"$FB" record verify "$T/rec/c1.jsonl" --key "$T/rec.pub" >"$T/recv.out" 2>&1
vrc=$?
if [ "$vrc" = 0 ] && grep -q hello-from-the-host "$T/recb.out"; then
    ok "run.fluebox.record: the container's record verifies, signed (record verify --key: 0)"
else
    fail "run.fluebox.record verifies" "verify $vrc: $(cat "$T/recv.out" "$T/recb.out" | head -c 400)"
fi
if "$FB" record show --json "$T/rec/c1.jsonl" 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
ok = (d["exit_code"] == 0 and d["commands"] and d["commands"][0]["argv"][0] == "python3"
      and any("api.test" in t["name"] for t in d["talked_to"])
      and any(x["name"] == "denied.test" for x in d["refused"]["dns"]))
sys.exit(not ok)'; then
    ok "run.fluebox.record: the record has the process, where it talked to, the refused name, exit 0"
else
    fail "run.fluebox.record: what it holds" "$("$FB" record show --json "$T/rec/c1.jsonl" 2>&1 | head -c 600)"
fi
events=$(python3 -c 'import json,sys; print(" ".join(json.loads(l)["event"] for l in open(sys.argv[1])))' "$T/rec/c1.jsonl" 2>&1)
case "$events" in
    "record start "*"exec "*"exit end") ok "run.fluebox.record: record, start, exec, ..., exit, end" ;;
    *) fail "run.fluebox.record: the events" "$events" ;;
esac
if ! grep -q "PRIVATE" "$T/rec/c1.jsonl"; then ok "run.fluebox.record: no private key in the record"; else fail "the private key is in the record"; fi
nothing_left "the recorded run"
# A timeout is recorded as the limit that ended the container.
bundle "$T/rect" sleep 600
edit "$T/rect" "c['annotations'].update({'run.fluebox.timeout':'1s','run.fluebox.record':'$T/rec/t.jsonl'})"
"$FB" oci run --bundle "$T/rect" rect >/dev/null 2>&1
if python3 -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
lim = [x for x in e if x["event"] == "limit"]
ex = [x for x in e if x["event"] == "exit"]
sys.exit(not (lim and lim[0]["limit"] == "timeout" and ex and ex[0]["timed_out"] and e[-1]["event"] == "end"))' "$T/rec/t.jsonl" 2>/dev/null; then
    ok "run.fluebox.record: a timeout is recorded (limit, exit timed_out, end)"
else
    fail "run.fluebox.record: a timeout" "$(cat "$T/rec/t.jsonl" 2>&1 | tail -3)"
fi
nothing_left "the timed-out recorded run"
# `oci exec` in a recorded container: each process is recorded before it
# runs (exec) and when it ends (exec_end), a failed one with its error.
bundle "$T/reck" sleep 600
edit "$T/reck" "c['annotations'].update({'run.fluebox.record':'$T/rec/k.jsonl'})"
"${O[@]}" create --bundle "$T/reck" reck >/dev/null 2>&1
"${O[@]}" start reck
"${O[@]}" exec reck sh -c 'echo in-exec; exit 3' >"$T/reck-exec.out" 2>&1
erc=$?
"${O[@]}" exec reck /no/such/cmd >/dev/null 2>&1
if [ "$erc" = 3 ] && grep -q in-exec "$T/reck-exec.out" && python3 -c '
import json, sys
e = [json.loads(l) for l in open(sys.argv[1])]
ex = [x for x in e if x["event"] == "exec" and "exec_id" in x]
end = {x["exec_id"]: x for x in e if x["event"] == "exec_end"}
ok = (len(ex) == 2 and ex[0]["argv"] == ["sh", "-c", "echo in-exec; exit 3"]
      and end[ex[0]["exec_id"]]["exit_code"] == 3
      and end[ex[1]["exec_id"]]["exit_code"] is None and "/no/such/cmd" in end[ex[1]["exec_id"]]["error"])
sys.exit(not ok)' "$T/rec/k.jsonl"; then
    ok "run.fluebox.record: oci exec is recorded (exec with argv, exec_end with exit 3; a failed exec with its error)"
else
    fail "run.fluebox.record: oci exec is recorded" "exec $erc $(cat "$T/reck-exec.out"); $(grep exec "$T/rec/k.jsonl" | cut -c 1-300)"
fi
# The supervisor SIGKILLed while the container runs: the record verifies as
# cut short (a valid prefix without its end), and an exec that could not be
# recorded does not run.
sup=$(st_field reck sup_pid)
if [ -n "$sup" ] && grep -q '"event":"exec"' "$T/rec/k.jsonl"; then
    kill -KILL "$sup"
    wait_until 50 sh -c "! kill -0 $sup 2>/dev/null"
    "$FB" record verify "$T/rec/k.jsonl" >"$T/reck.out" 2>&1
    vrc=$?
    [ "$vrc" = 3 ] && ok "run.fluebox.record: a SIGKILLed supervisor leaves a prefix that verifies as cut short (3)" ||
        fail "SIGKILLed supervisor: cut short" "verify $vrc: $(cat "$T/reck.out")"
    : >"$T/log.json"
    "${O[@]}" exec reck sh -c 'echo unrecorded' >"$T/reck-exec2.out" 2>&1
    erc=$?
    if [ "$erc" != 0 ] && ! grep -q unrecorded "$T/reck-exec2.out"; then
        ok "run.fluebox.record: without its supervisor no exec runs unrecorded ($(lasterr))"
    else
        fail "an unrecordable exec is refused" "exit $erc: $(cat "$T/reck-exec2.out") $(lasterr)"
    fi
else
    fail "SIGKILLed supervisor: cut short" "no supervisor or no exec line: $(cat "$T/rec/k.jsonl" 2>&1 | tail -2)"
fi
"${O[@]}" delete --force reck >/dev/null 2>&1
nothing_left "the record of a killed supervisor"
# Bad records: one line, exit 1, nothing left (no record file either).
mkdir -p "$T/rec/rw"
echo old >"$T/rec/exists.jsonl"
badcase "run.fluebox.record in a missing directory" "$T/rec/none/r.jsonl: No such file or directory" \
    "c['annotations']['run.fluebox.record']='$T/rec/none/r.jsonl'"
badcase "run.fluebox.record: an existing file" "the file exists" \
    "c['annotations']['run.fluebox.record']='$T/rec/exists.jsonl'"
badcase "run.fluebox.record: a relative path" "needs an absolute path" \
    "c['annotations']['run.fluebox.record']='r.jsonl'"
badcase "run.fluebox.record in the rootfs" "which the container can write" \
    "c['annotations']['run.fluebox.record']='$T/bad/rootfs/tmp/r.jsonl'"
badcase "run.fluebox.record under a writable bind" "which the container can write" \
    "c['mounts'].append({'destination':'/data','type':'bind','source':'$T/rec/rw','options':['rbind','rw']}); c['annotations']['run.fluebox.record']='$T/rec/rw/r.jsonl'"
badcase "run.fluebox.record-key: not an Ed25519 key" "record-key" \
    "c['annotations'].update({'run.fluebox.record':'$T/rec/badkey.jsonl','run.fluebox.record-key':'$T/rec/exists.jsonl'})"
if [ "$(cat "$T/rec/exists.jsonl")" = old ] && [ ! -e "$T/rec/badkey.jsonl" ] && [ -z "$(ls -A "$T/rec/rw")" ]; then
    ok "bad records: the existing file is untouched, no record file is left"
else
    fail "bad records leave nothing" "$(ls -l "$T/rec" "$T/rec/rw")"
fi

# ---- the upper layer on disk (what kernels before 6.6 get) ----
# An ext4 of run.fluebox.disk bytes on a loop device whose backing file in
# /var/lib/fluebox-oci has no name: filling it gives ENOSPC, and it goes with
# the container whoever ends it.
our_loops() { # the backing files of loop devices that are fluebox oci's
    cat /sys/block/loop*/loop/backing_file 2>/dev/null | grep '^/var/lib/fluebox-oci/' | sort
}
new_loop() { # BEFORE: the one backing file that is not in BEFORE
    comm -13 <(echo "$1") <(our_loops) | head -n 1
}
loop_gone() { ! our_loops | grep -qxF "$1"; }
bundle "$T/disk" sh -c 'echo written > /newfile && cat /newfile &&
    dd if=/dev/zero of=/big bs=1M count=64 2>&1 | grep -o "No space left on device"; sleep 1000'
edit "$T/disk" "c['annotations']['run.fluebox.disk']='16M'"
before=$(our_loops)
FLUEBOX_OCI_UPPER=disk "${O[@]}" create --bundle "$T/disk" disk >"$T/disk.out" 2>&1
"${O[@]}" start disk
wait_until 100 grep -q "No space" "$T/disk.out"
backing=$(new_loop "$before")
size=$(for d in /sys/block/loop*; do [ "$(cat "$d/loop/backing_file" 2>/dev/null)" = "$backing" ] && echo $(($(cat "$d/size") * 512)); done)
if grep -q written "$T/disk.out" && grep -q "No space left on device" "$T/disk.out" && [ "$size" = 16777216 ]; then
    ok "FLUEBOX_OCI_UPPER=disk: the root is writable, its upper layer a 16M loop device (${backing:-?}), and filling it gives ENOSPC"
else
    fail "the upper layer on disk" "backing ${backing:-none} of ${size:-?} bytes: $(cat "$T/disk.out")"
fi
"${O[@]}" delete --force disk
if [ -n "$backing" ] && wait_until 100 loop_gone "$backing" && [ -z "$(ls -A /var/lib/fluebox-oci 2>/dev/null)" ]; then
    ok "after delete --force its loop device and file are gone, nothing in /var/lib/fluebox-oci"
else
    fail "the disk upper after delete" "$(our_loops) $(ls -A /var/lib/fluebox-oci 2>&1)"
fi
nothing_left "the disk upper run"

# A SIGKILLed supervisor: init kills the container, and with its mounts go
# the loop device, the file and the range of host ids.
bundle "$T/disk2" sh -c 'echo written > /newfile && sleep 1000'
before=$(our_loops)
FLUEBOX_OCI_UPPER=disk "${O[@]}" create --bundle "$T/disk2" disk2 >/dev/null 2>&1
"${O[@]}" start disk2
backing=$(new_loop "$before")
sup=$(st_field disk2 sup_pid)
init=$(st_field disk2 pid)
base=$(awk '{print $2}' "/proc/$init/uid_map" 2>/dev/null)
[ -n "$sup" ] && kill -KILL "$sup"
if [ -n "$backing" ] && [ -n "$base" ] && wait_until 100 loop_gone "$backing" &&
    wait_until 100 sh -c "! kill -0 $init 2>/dev/null" && "$FB" run -q --host-id "$base" -- true; then
    ok "a SIGKILLed supervisor: the container ends, its loop device goes, its host ids ($base) are free"
else
    fail "a SIGKILLed supervisor" "backing ${backing:-none}, base ${base:-?}, loops: $(our_loops)"
fi
"${O[@]}" delete disk2 && [ -z "$(ls -A /var/lib/fluebox-oci 2>/dev/null)" ] &&
    ok "delete after that exits 0, nothing in /var/lib/fluebox-oci" || fail "delete after a SIGKILLed supervisor"
nothing_left "the SIGKILLed supervisor"

# ---- a runtime named for its profile (one RuntimeClass per profile) ----
ln -s "$FB" "$T/fluebox-oci-strict"
bundle "$T/prof" true
edit "$T/prof" "c['annotations']['run.fluebox.report']='$T/strict.json'"
"$T/fluebox-oci-strict" run --bundle "$T/prof" prof >/dev/null 2>&1
prof=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["profile"])' "$T/strict.json" 2>/dev/null)
edit "$T/prof" "c['annotations']['run.fluebox.profile']='trusted'"
: >"$T/log.json"
"$T/fluebox-oci-strict" --log "$T/log.json" --log-format json run --bundle "$T/prof" prof2 >/dev/null 2>&1
rc=$?
if [ "$prof" = strict ] && [ "$rc" = 1 ] && [[ $(lasterr) == *"runs profile strict"* ]]; then
    ok "fluebox-oci-strict runs strict, and an annotation cannot pick another profile"
else
    fail "a runtime named for its profile" "profile $prof, exit $rc: $(lasterr)"
fi
nothing_left "the profile runs"
for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup/*/*"$CG"; do [ -d "$d" ] && rmdir "$d" 2>/dev/null; done
echo "# end of suite"
