# 14-hostids.sh — host ids of sandboxes (issue 19 §2): as root every sandbox
# gets a range of 65,536 host ids of its own, claimed atomically and given
# back when it ends or its supervisor dies, and its user namespace belongs
# to that range's first id; inside, ids 0..65535 are mapped so setuid() and
# chown() to another id fail with EPERM, not EINVAL; the namespace's own
# limits are set. Rootless, the rest of the range comes from /etc/subuid.
# The cross-sandbox denial of service these prevent is shown by the escape
# probes dos_inotify, dos_pipe_pages and dos_scm_inflight (tests/probes).
. "$ROOT/tests/lib.sh"

POOL_LO=1879048192   # 0x70000000
POOL_HI=2147352576   # 0x7ffe0000 (exclusive)

mkdir -p "$T/a" "$T/b"
[ "$FB_AS" != root ] && chown "$FB_AS" "$T/a" "$T/b"

# --- EPERM, not EINVAL ------------------------------------------------------
setid_py='
import os
out = []
for name, f in (("setuid0", lambda: os.setuid(0)), ("setuid1001", lambda: os.setuid(1001)),
                ("setgid0", lambda: os.setgid(0)), ("chown", lambda: os.chown("/tmp/x", 0, 0))):
    try:
        f(); out.append(name + ":ok")
    except OSError as e:
        out.append("%s:%s" % (name, "EPERM" if e.errno == 1 else "errno%d" % e.errno))
print(" ".join(out))'
subid_ok=1
if [ "$FB_AS" != root ]; then
  grep -qE "^($FB_AS|$(id -u "$FB_AS")):" /etc/subuid 2>/dev/null && grep -qE "^($FB_AS|$(id -u "$FB_AS")):" /etc/subgid 2>/dev/null &&
    [ -x /usr/bin/newuidmap ] || subid_ok=0
fi
if [ "$subid_ok" = 1 ]; then
  expect_out "setuid/setgid/chown to another id fail with EPERM (ids 0-65535 are mapped)" \
    "setuid0:EPERM setuid1001:EPERM setgid0:EPERM chown:EPERM" run -- sh -c "touch /tmp/x && python3 -c '$setid_py'"
  run_fb run -- sh -c 'cat /proc/self/uid_map'
  total=$(echo "$OUT" | awk '{n += $3} END {print n}')
  [ "$total" = 65536 ] && ok "65,536 ids are mapped" || fail "65,536 ids are mapped" "$OUT"
else
  skip "setuid/chown fail with EPERM" "$FB_AS has no /etc/subuid range or no newuidmap: one id only"
fi
expect_out "the inside user has no capabilities, whatever is mapped" "CapEff:	0000000000000000" \
  run -- grep CapEff /proc/self/status

# --- the user namespace's own limits -----------------------------------------
host_inotify=$(cat /proc/sys/fs/inotify/max_user_instances)
run_fb run -- sh -c 'cd /proc/sys/user && echo $(cat max_user_namespaces max_inotify_instances)'
want="0 $((host_inotify / 4))"
[ "$OUT" = "$want" ] && ok "the sandbox's namespace limits: no nested user namespaces, a quarter of the inotify instances" ||
  fail "namespace limits" "got '$OUT', want '$want' ($ERR)"
expect_fail "the sandbox cannot raise its namespace's limits" "Read-only file system" \
  run --uid 0 -- sh -c 'echo 1000 > /proc/sys/user/max_inotify_instances'

if [ "$FB_AS" != root ]; then
  run_fb run -- cat /proc/self/uid_map
  me=$(id -u "$FB_AS")
  if echo "$OUT" | grep -qE "^ *1000 +$me +1$"; then ok "rootless: the sandbox user is the caller's own uid"
  else fail "rootless: the sandbox user is the caller's own uid" "$OUT"; fi
  no_leftovers "host ids: nothing left behind"
  skip_all "the rest needs root (ranges of host ids)"
fi

# --- root: a range of its own ------------------------------------------------
run_fb run -- cat /proc/self/uid_map /proc/self/gid_map
read -r in0 base count <<<"$(echo "$OUT" | head -1)"
gbase=$(echo "$OUT" | sed -n 2p | awk '{print $2}')
if [ "$in0" = 0 ] && [ "$count" = 65536 ] && [ "$base" -ge $POOL_LO ] && [ "$base" -lt $POOL_HI ] &&
  [ $(((base - POOL_LO) % 65536)) = 0 ] && [ "$gbase" = "$base" ]; then
  ok "inside 0-65535 map to a pool range of 65,536 host ids ($base)"
else
  fail "inside 0-65535 map to a pool range" "$OUT"
fi

# Two sandboxes at once: disjoint ranges; processes run as the range's ids;
# the namespace belongs to the range's first id.
"$FB" run --workspace "$T/a" -- sh -c 'cat /proc/self/uid_map > a.map; while [ ! -e stop ]; do sleep 0.05; done' \
  >"$T/a.out" 2>&1 &
A=$!
wait_for 20 test -s "$T/a/a.map"
run_fb run -- cat /proc/self/uid_map
a_base=$(awk '{print $2}' "$T/a/a.map" 2>/dev/null)
b_base=$(echo "$OUT" | awk '{print $2}')
if [ -n "$a_base" ] && [ -n "$b_base" ] && [ $((a_base > b_base ? a_base - b_base : b_base - a_base)) -ge 65536 ]; then
  ok "two sandboxes at once get disjoint ranges ($a_base, $b_base)"
else
  fail "two sandboxes at once get disjoint ranges" "a=$a_base b=$b_base $(cat "$T/a.out")"
fi
init=$(pgrep -P "$A" | head -1)
uid=$(awk '/^Uid:/ {print $2}' "/proc/$init/status" 2>/dev/null)
[ -n "$a_base" ] && [ "$uid" = $((a_base + 1000)) ] && ok "the sandbox's processes run as host id base+1000 ($uid)" ||
  fail "the sandbox's processes run as base+1000" "init $init uid $uid base $a_base"
owner=$(python3 -c '
import fcntl, os, sys
fd = os.open(sys.argv[1], os.O_RDONLY)
b = fcntl.ioctl(fd, 0xb704, b"\0\0\0\0")   # NS_GET_OWNER_UID
print(int.from_bytes(b, "little"))' "/proc/$init/ns/user" 2>&1)
[ -n "$a_base" ] && [ "$owner" = "$a_base" ] && ok "its user namespace belongs to the range's first id, not to root" ||
  fail "the user namespace belongs to the range's first id" "owner $owner base $a_base"
touch "$T/a/stop"
wait "$A"

# Many at once (separate fluebox processes, claiming at the same moment):
# every range distinct.
mkdir -p "$T/many"
for i in 1 2 3 4 5 6 7 8 9 10 11 12; do
  "$FB" run -q -- sh -c 'cat /proc/self/uid_map' >"$T/many/$i" 2>&1 &
done
wait
bases=$(cat "$T/many"/* | awk '{print $2}' | sort)
if [ "$(echo "$bases" | grep -c .)" = 12 ] && [ "$(echo "$bases" | sort -u | grep -c .)" = 12 ]; then
  ok "12 sandboxes started at once get 12 different ranges"
else
  fail "12 sandboxes at once get 12 different ranges" "$(cat "$T/many"/* | head -c 400)"
fi

# Pinned ranges: claimed exclusively, overlaps refused, given back at the end
# and when the supervisor is SIGKILLed.
PIN=$((POOL_LO - 8 * 65536))
"$FB" run --host-id $PIN --workspace "$T/b" -- sh -c 'touch up; while [ ! -e stop ]; do sleep 0.05; done' \
  >"$T/b.out" 2>&1 &
B=$!
wait_for 20 test -e "$T/b/up"
expect_err "a range in use is refused (--host-id)" 125 "in use by another sandbox" run --host-id $PIN -- true
expect_err "an overlapping range is refused" 125 "in use by another sandbox" run --host-id $((PIN + 100)) -- true
expect_rc "the next range is free" 0 run --host-id $((PIN + 65536)) -- true
touch "$T/b/stop"
wait "$B"
expect_rc "the range is free again once the sandbox ended" 0 run --host-id $PIN -- true
rm -f "$T/b/up" "$T/b/stop"
# (No cgroup limits for this one: a SIGKILLed fluebox leaves its cgroup for
# the next run to sweep, which is another test's business.)
"$FB" run --host-id $PIN --mem unlimited --pids unlimited --workspace "$T/b" -- sh -c 'touch up; sleep 600' >/dev/null 2>&1 &
B=$!
wait_for 20 test -e "$T/b/up"
kill -KILL "$B"
wait "$B" 2>/dev/null
expect_rc "a SIGKILLed supervisor's range is free at once" 0 run --host-id $PIN -- true
expect_err "a range past the last id is refused" 125 "ends past 4294967294" run --host-id 4294960000 -- true
# A pinned range is clear of what the pool avoids: the host's accounts (a
# range at nobody's id made the sandbox's root nobody, whose processes could
# read its /proc/PID/environ) and the users' /etc/subuid, /etc/subgid ranges.
NOBODY=$(awk -F: '$1 == "nobody" {print $3}' /etc/passwd)
if [ -n "$NOBODY" ] && [ "$NOBODY" != 0 ]; then
  expect_err "a range holding nobody's id is refused" 125 "is the account \"nobody\" of /etc/passwd" \
    run --host-id "$NOBODY" -- true
  expect_err "a range starting below nobody's id is refused" 125 "is the account" \
    run --host-id $((NOBODY > 1000 ? NOBODY - 1000 : 1)) -- true
else
  skip "a range holding nobody's id is refused" "no nobody in /etc/passwd"
fi
SUB=$(awk -F: 'NF == 3 && $2 > 0 {print $2; exit}' /etc/subuid 2>/dev/null)
if [ -n "$SUB" ]; then
  expect_err "a range overlapping /etc/subuid is refused" 125 "overlap a range of /etc/subuid" \
    run --host-id $((SUB + 7)) -- true
else
  skip "a range overlapping /etc/subuid is refused" "no range in /etc/subuid"
fi

# Sessions: each its own range.
SOCK=$T/fb.sock
"$FB" serve --socket "$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>&1 3>"$T/ready" &
SRV=$!
wait_for 10 grep -q ready "$T/ready"
run_fb session create --socket "$SOCK"; S1=$OUT
run_fb session create --socket "$SOCK"; S2=$OUT
run_fb exec --socket "$SOCK" "$S1" -- cat /proc/self/uid_map; m1=$(echo "$OUT" | awk '{print $2}')
run_fb exec --socket "$SOCK" "$S2" -- cat /proc/self/uid_map; m2=$(echo "$OUT" | awk '{print $2}')
if [ -n "$m1" ] && [ -n "$m2" ] && [ "$m1" != "$m2" ] && [ "$m1" -ge $POOL_LO ] && [ "$m2" -ge $POOL_LO ]; then
  ok "two sessions of one server get different ranges ($m1, $m2)"
else
  fail "two sessions get different ranges" "$m1 / $m2"
fi
kill -TERM "$SRV"
wait "$SRV" 2>/dev/null

no_leftovers "host ids: nothing left behind"
