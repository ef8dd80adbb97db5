#!/bin/bash
# timeout: 900
# tests/suites/containers.sh — fluebox inside a container, where agents run.
#
# Debian's containerd and runc, started privately (tests/oci/containerd.sh:
# own config, root, state and socket, a private mount namespace and a pid
# namespace that ends with the suite). The container's root is a tree the
# suite builds (the host's /usr bound read-only, so python3 is there), with
# fluebox, the test files, a host secret (/secret), a writable host
# directory outside the workspace (/outside) and the workspace (/work) bound
# in; it shares the host's network namespace, so that a loopback server on
# the host is reachable from the container itself. Nothing of fluebox runs on
# the host.
#
#   1. runc's default seccomp profile (ctr run --seccomp), which refuses new
#      namespaces: without fluebox the container reads the secret, writes
#      outside and reaches the host's loopback server; fluebox doctor names
#      the blocker (exit 1, only --isolation landlock); fluebox run refuses
#      and names fluebox doctor; fluebox run --isolation landlock confines a
#      Python script's files and network; the escape probes pass under it
#      (tests/probes/run.sh, the landlock column, in the container).
#   2. namespaces allowed (no seccomp profile, /proc not masked: Docker's
#      seccomp=unconfined and systempaths=unconfined): as root without
#      CAP_SYS_ADMIN fluebox doctor says root cannot prepare the mounts and
#      fluebox run refuses; as an ordinary user in the container the doctor's
#      verdict is full isolation and fluebox run isolates nested (own
#      network: the host's loopback server unreachable; the secret absent).
# Afterwards: no container, task, process or cgroup left. Needs root.
set -u
HERE=$(cd "$(dirname "$0")/.." && pwd)
ROOT=${ROOT:-$(cd "$HERE/.." && pwd)}
FB=${FB:-$ROOT/fluebox}

ok() { echo "ok - containers: $1"; }
fail() { echo "not ok - containers: $1${2:+: $2}"; }
skip() { echo "ok - containers: $1 # SKIP $2"; }
end() { echo "# end of suite"; exit "${1:-0}"; }

# shellcheck source=../oci/containerd.sh
. "$ROOT/tests/oci/containerd.sh"

if [ "${1:-}" != --inner ]; then
    [ "$(id -u)" = 0 ] || { skip "containers" "needs root"; end; }
    missing=$(ctd_missing containerd ctr runc containerd-shim-runc-v2 unshare python3 setpriv make)
    [ -z "$missing" ] || { skip "containers" "missing: $missing"; end; }
    abi=$(python3 -c 'import ctypes; print(ctypes.CDLL(None, use_errno=True).syscall(444, None, 0, 1))' 2>/dev/null)
    if [ -z "$abi" ] || [ "$abi" -lt 4 ] 2>/dev/null; then
        skip "containers" "Landlock ABI ${abi:-unknown} (--isolation landlock needs 4, Linux 6.7)"
        end
    fi
    make -s -C "$ROOT" -f tests/probes/probes.mk probes >/dev/null 2>&1 ||
        { fail "building the escape probes"; end 1; }
    T=$(mktemp -d /tmp/fbctr.XXXXXX)
    chmod 755 "$T"
    trap 'rm -rf "$T"' EXIT
    CG=/fbctr-${T##*.}
    ctd_private "$0" --inner "$T" "$CG" "$FB" "$ROOT"
    rc=$?
    left=""
    for d in /sys/fs/cgroup/*"$CG" /sys/fs/cgroup/*/*"$CG"; do
        [ -d "$d" ] || continue
        for c in "$d"/*/; do [ -d "$c" ] && left="$left $c"; done
        rmdir "$d"/*/ 2>/dev/null
        rmdir "$d" 2>/dev/null
    done
    if [ -z "$left" ]; then ok "no container cgroup left"; else fail "cgroups left" "$left"; fi
    end "$rc"
fi

# ---- inside: a private mount namespace, a pid namespace of our own ----
T=$2 CG=$3 FB=$4 ROOT=$5
ctd_start "$T/ctd" || { fail "containerd starts" "$CTD_WHY"; end 1; }

R=$T/rootfs
mkdir -p "$R"/{usr,proc,sys,dev,tmp,var/tmp,etc,run,fb,src,work,outside,root}
chmod 1777 "$R/tmp" "$R/var/tmp"
for l in bin lib lib64 sbin; do [ -L "/$l" ] && ln -s "$(readlink "/$l")" "$R/$l"; done
printf 'root:x:0:0:root:/root:/bin/sh\nagent:x:1000:1000:agent:/work:/bin/sh\n' >"$R/etc/passwd"
printf 'root:x:0:\nagent:x:1000:\n' >"$R/etc/group"
mkdir -p "$T/fb" "$T/work" "$T/outside"
cp "$FB" "$T/fb/fluebox"
cp "$ROOT/tests/fixtures/confine.py" "$T/fb/confine.py"
chmod -R a+rX "$T/fb"
chown 1000:1000 "$T/work"
chmod 777 "$T/outside"
echo "FLUEBOX-SECRET-$$" >"$T/secret"
chmod 644 "$T/secret"

# A loopback server on the host (this network namespace is the host's).
python3 -c '
import os, socket, sys
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(16)
open(sys.argv[1] + ".tmp", "w").write(str(s.getsockname()[1])); os.rename(sys.argv[1] + ".tmp", sys.argv[1])
while True:
    c, _ = s.accept(); c.close()' "$T/port" >/dev/null 2>&1 &
SRV=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.05; done
PORT=$(cat "$T/port")

BINDS=(--mount "type=bind,src=/usr,dst=/usr,options=rbind:ro"
    --mount "type=bind,src=$T/fb,dst=/fb,options=rbind:ro"
    --mount "type=bind,src=$ROOT,dst=/src,options=rbind:ro"
    --mount "type=bind,src=$T/secret,dst=/secret,options=rbind:ro"
    --mount "type=bind,src=$T/outside,dst=/outside,options=rbind:rw"
    --mount "type=bind,src=$T/work,dst=/work,options=rbind:rw")
N=0
# in_default CMD...: runs CMD in a fresh container under runc's default
# seccomp profile (ctr run --seccomp), host network; OUT (stdout+stderr), RC.
in_default() {
    N=$((N + 1))
    OUT=$(timeout 300 "${CTD[@]}" run --rm --seccomp --net-host --cgroup "$CG/d$N" \
        --cwd /work "${BINDS[@]}" --rootfs "$R" "d$N" "$@" 2>&1)
    RC=$?
}
has() { # NAME WORD... : every WORD is in OUT
    local name=$1 w
    shift
    for w in "$@"; do
        case "$OUT" in *"$w"*) ;; *) fail "$name" "lacks '$w' (rc $RC): $(printf %s "$OUT" | head -c 700)"; return ;; esac
    done
    ok "$name"
}
jtrue() { # NAME PYEXPR: OUT is a JSON object r (c: its checks by id)
    if printf '%s' "$OUT" | python3 -c 'import json,sys; r=json.load(sys.stdin); c={x["id"]: x for x in r["checks"]}; sys.exit(0 if eval(sys.argv[1]) else 1)' "$2" 2>/dev/null; then
        ok "$1"; else fail "$1" "rc $RC: $(printf %s "$OUT" | head -c 900)"; fi
}
CONFINE=(/usr/bin/python3 /fb/confine.py /secret /outside "$PORT")

# ---- 1. runc's default seccomp profile ----
in_default "${CONFINE[@]}"
has "default container, no fluebox: the script reads the secret, writes outside, reaches the host's loopback" \
    "read-secret ALLOWED" "write-outside ALLOWED" "tcp-loopback ALLOWED"
rm -f "$T/outside"/* "$T/work/out.txt"

in_default /fb/fluebox doctor --json --workspace /work
[ "$RC" = 1 ] && ok "default container: fluebox doctor exits 1 (only --isolation landlock)" || fail "doctor rc" "rc $RC"
jtrue "default container: doctor sees the container and its seccomp filter" \
    'r["container"]["inside"] and r["container"]["seccomp_filters"] >= 1 and r["container"]["clone3"] == "Function not implemented"'
jtrue "default container: doctor names the blocker (user namespaces: EPERM) and the container flags" \
    'r["verdict"] == "landlock" and c["userns"]["status"] == "missing" and c["userns"]["errno"] == "EPERM" and "seccomp=unconfined" in c["userns"]["fix"] and "systempaths=unconfined" in c["userns"]["fix"]'
jtrue "default container: doctor finds Landlock usable" 'c["landlock"]["status"] in ("ok", "degraded") and r["landlock_abi"] >= 4'

in_default /fb/fluebox run -q -- true
case "$RC:$OUT" in 125:*"fluebox doctor"*) ok "default container: fluebox run refuses and names fluebox doctor" ;;
    *) fail "default container: refusal" "rc $RC: $OUT" ;; esac

in_default /fb/fluebox run --isolation landlock --workspace /work --ro-bind /fb -- "${CONFINE[@]}"
has "default container: --isolation landlock runs the script" "socketpair ALLOWED"
has "default container, landlock: the host secret is unreadable" "read-secret denied 13"
has "default container, landlock: a write outside the workspace fails" "write-outside denied 13"
has "default container, landlock: the host's loopback server is unreachable" "tcp-loopback denied"
has "default container, landlock: the workspace is writable (as the workspace's owner, uid 1000)" \
    "write-workspace ALLOWED" "uid 1000"
[ -z "$(ls -A "$T/outside")" ] && ok "default container, landlock: nothing appeared outside" ||
    fail "outside" "$(ls -A "$T/outside")"

# The escape probes, landlock column, run in a default container (the
# runner's "host" side, its helper, runs in the container too).
in_default /usr/bin/env PATH=/usr/sbin:/usr/bin TMPDIR=/tmp FBPROBE_COMMIT=container bash /src/tests/probes/run.sh --fluebox /fb/fluebox \
    --profiles landlock --no-oci --no-user --no-build --none-informational --tap
printf '%s\n' "$OUT" | grep -E '^(ok|not ok) - ' | sed 's/^\(not \)\{0,1\}ok - /&containers: default container: /'
printf '%s\n' "$OUT" | grep -qE '^ok - probes as root: .* under landlock' ||
    fail "default container: the escape probes ran" "rc $RC: $(printf %s "$OUT" | tail -n 15)"

# ---- 2. namespaces allowed: no seccomp profile, /proc not masked ----
"${CTD[@]}" oci spec >"$T/spec0.json"
# in_open USER CMD...: a container with the default spec minus seccomp and
# the masked and read-only /proc paths, host network, as USER (0 or 1000).
in_open() {
    local user=$1
    shift
    N=$((N + 1))
    python3 - "$T/spec0.json" "$T/spec$N.json" "$R" "$CG/o$N" "$user" "$T" "$ROOT" "$@" <<'EOF'
import json, sys
src, dst, rootfs, cg, user, t, root = sys.argv[1:8]
s = json.load(open(src))
lx = s["linux"]
for k in ("seccomp", "maskedPaths", "readonlyPaths"):
    lx.pop(k, None)
lx["namespaces"] = [n for n in lx["namespaces"] if n["type"] != "network"]
lx["cgroupsPath"] = cg
s["root"] = {"path": rootfs, "readonly": False}
s["hostname"] = "fbctr"
binds = [("/usr", "/usr", "ro"), (t + "/fb", "/fb", "ro"), (root, "/src", "ro"),
         (t + "/secret", "/secret", "ro"), (t + "/outside", "/outside", "rw"),
         (t + "/work", "/work", "rw")]
for a, b, o in binds:
    s["mounts"].append({"destination": b, "type": "bind", "source": a, "options": ["rbind", o]})
p = s["process"]
p["args"] = sys.argv[8:]
p["terminal"] = False
p["cwd"] = "/work"
p["user"] = {"uid": int(user), "gid": int(user)}
if int(user):
    p["env"] = [e for e in p.get("env", []) if not e.startswith("HOME=")] + ["HOME=/work"]
    for k in p["capabilities"]:
        p["capabilities"][k] = []
json.dump(s, open(dst, "w"))
EOF
    OUT=$(timeout 300 "${CTD[@]}" run --rm --config "$T/spec$N.json" "o$N" 2>&1)
    RC=$?
}

in_open 0 /fb/fluebox doctor --json --workspace /work
jtrue "namespaces allowed, root without CAP_SYS_ADMIN: doctor says root cannot prepare the mounts" \
    'r["verdict"] == "landlock" and c["userns"]["status"] == "ok" and c["root_mounts"]["status"] == "missing" and "--user" in c["root_mounts"]["fix"]'
in_open 0 /fb/fluebox run -q -- true
case "$RC:$OUT" in 125:*"fluebox doctor"*) ok "namespaces allowed, root without CAP_SYS_ADMIN: fluebox run refuses and names fluebox doctor" ;;
    *) fail "root without CAP_SYS_ADMIN" "rc $RC: $OUT" ;; esac

in_open 1000 /fb/fluebox doctor --json --workspace /work
[ "$RC" = 0 ] && ok "namespaces allowed, as an ordinary user: fluebox doctor exits 0" || fail "doctor as uid 1000" "rc $RC"
jtrue "namespaces allowed, as an ordinary user: the verdict is full isolation" \
    'r["verdict"] == "full" and all(c[k]["status"] == "ok" for k in ("userns", "namespaces", "procfs", "pivot_root", "seccomp"))'
in_open 1000 /fb/fluebox run -q --workspace /work --ro-bind /fb -- "${CONFINE[@]}"
has "namespaces allowed: full isolation works nested (the secret is not there, nothing outside, no host loopback)" \
    "read-secret denied 2" "write-outside denied" "tcp-loopback denied 111" "write-workspace ALLOWED"
[ -z "$(ls -A "$T/outside")" ] && ok "namespaces allowed: nothing appeared outside" || fail "outside (nested)" "$(ls -A "$T/outside")"

# ---- nothing left ----
kill "$SRV" 2>/dev/null
wait "$SRV" 2>/dev/null
left=$("${CTD[@]}" task ls -q 2>/dev/null; "${CTD[@]}" container ls -q 2>/dev/null)
[ -z "$left" ] && ok "no task or container left" || fail "left behind" "$left"
procs=""
for p in /proc/[0-9]*; do
    pid=${p#/proc/}
    { [ "$pid" = 1 ] || [ "$pid" = $$ ] || [ "$pid" = "$BASHPID" ] || [ "$pid" = "$CTD_PID" ]; } && continue
    comm=$(cat "$p/comm" 2>/dev/null) || continue
    case "$comm" in bash | cat) ;; *) procs="$procs $pid:$comm" ;; esac
done
[ -z "$procs" ] && ok "no process left (shims, containers, sandboxes)" || fail "processes left" "$procs"
ctd_stop
exit 0
