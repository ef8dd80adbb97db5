#!/bin/bash
# tests/vm/vm.sh — runs one command as root in a throw-away Linux 6.1 guest
# (Debian's user-mode-linux: a kernel that runs as an ordinary process) whose
# cgroup2 hierarchy has the cpu, io, memory and pids controllers, and exits
# with the command's exit status.
#
#   tests/vm/vm.sh [-m MEM] [-t SECONDS] [-d SIZE] [-g CGROUP] [-e NAME=VALUE]...
#                  [-C DIR] -- COMMAND [ARG]...
#
# The guest (tests/vm/init.sh is its PID 1) sees this machine's files through
# hostfs, read-only, under a tmpfs overlay: the checkout, the fluebox under
# test and every tool are there, and whatever the guest writes disappears
# with it. It has no network device, only lo. COMMAND runs in DIR (default:
# the current directory) with stdin /dev/null; its stdout and stderr are this
# script's stdout. The guest kernel's own messages go to a log shown only
# when the guest fails.
#   -m MEM      guest memory (default 1200M; it lives in /dev/shm)
#   -t SECONDS  wall-clock limit of the whole guest (default 1500): exit 124
#   -d SIZE     an empty ext4 file system of SIZE at /scratch in the guest
#               (sparse, in /dev/shm): tmpfs and overlayfs on 6.1 have no
#               user xattrs and no idmapped mounts, ext4 has both
#   -g CGROUP   run COMMAND in this cgroup (e.g. /ci.slice/job.scope), with
#               every controller enabled down to it, as a service manager
#               does for a unit with Delegate=yes; default: the root cgroup
#   -e N=V      set N=V for COMMAND (repeatable)
# Exit: COMMAND's status; 124 at the time limit; 125 when the guest could not
# run it (no user-mode-linux, the guest failed to start).
set -u
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
mem=1200M limit=1500 disk="" cg="" dir=$(pwd) envs=()
while getopts "m:t:d:g:e:C:" o; do
  case $o in
    m) mem=$OPTARG ;; t) limit=$OPTARG ;; d) disk=$OPTARG ;; g) cg=$OPTARG ;;
    e) envs+=("$OPTARG") ;; C) dir=$OPTARG ;;
    *) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 125 ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || { echo "vm.sh: no command" >&2; exit 125; }
kernel=$(command -v linux.uml) || { echo "vm.sh: linux.uml not found (Debian package user-mode-linux; scripts/deps.sh test)" >&2; exit 125; }
[ -x /bin/busybox ] || { echo "vm.sh: /bin/busybox not found (busybox-static; scripts/deps.sh test)" >&2; exit 125; }
modules=$(ls -d /usr/lib/uml/modules/*/ 2>/dev/null | head -n 1)
modules=${modules%/}

# The exchange directory: the guest reads its command here and writes the
# exit status back (a read-write hostfs mount in the guest).
x=$(mktemp -d "${TMPDIR:-/tmp}/fbvm.XXXXXX") || exit 125
shm=${FBVM_SHM:-/dev/shm}
image=""; kpid=""
cleanup() {
  if [ -n "$kpid" ]; then kill -KILL -- "-$kpid" 2>/dev/null; wait "$kpid" 2>/dev/null; fi
  rm -rf "$x"; [ -n "$image" ] && rm -f "$image"
}
trap cleanup EXIT
trap 'exit 124' TERM INT HUP
if [ -n "$disk" ]; then
  image=$(mktemp "$shm/fbvm-disk.XXXXXX") || exit 125
  truncate -s "$disk" "$image" &&
    mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$image" >/dev/null 2>&1 ||
    { echo "vm.sh: cannot make the ext4 image (mkfs.ext4: e2fsprogs)" >&2; exit 125; }
fi
# The guest runs copies: a script edited while a guest reads it stays whole.
cp "$HERE/init.sh" "$x/init" && chmod 755 "$x/init" || exit 125
{
  printf 'cd %q || exit 125\n' "$dir"
  for e in "${envs[@]+"${envs[@]}"}"; do printf 'export %q\n' "$e"; done
  printf 'exec'; printf ' %q' "$@"; printf '\n'
} > "$x/cmd"

# ssl0 (the guest's /dev/ttyS0) writes to our fd 3, which is our stdout: the
# command's output. con0 (the guest console) goes to the log. The kernel's
# memory is a file in TMPDIR that it maps: /dev/shm keeps it off the disk.
# setsid: the kernel's host processes form one group, ended by its id.
TMPDIR=$shm setsid "$kernel" mem="$mem" rootfstype=hostfs rootflags=/ ro \
  init="$x/init" quiet loglevel=1 con=null con0=null,fd:4 ssl=null ssl0=null,fd:3 \
  fbvm_x="$x" fbvm_mods="$modules" ${cg:+fbvm_cgroup="$cg"} ${image:+ubd0="$image"} \
  3>&1 4>>"$x/console" >>"$x/console" 2>&1 < /dev/null &
kpid=$!
# The limit: a timer that holds none of our output open.
( trap 'kill "$s"; exit 0' TERM
  sleep "$limit" & s=$!; wait "$s"
  : > "$x/timeout"; kill -KILL -- "-$kpid" ) < /dev/null > /dev/null 2>&1 &
timer=$!
wait "$kpid" 2>/dev/null; krc=$?
kill "$timer" 2>/dev/null; wait "$timer" 2>/dev/null
kill -KILL -- "-$kpid" 2>/dev/null; kpid=""
if [ -s "$x/rc" ]; then exit "$(cat "$x/rc")"; fi
if [ -e "$x/timeout" ]; then
  echo "vm.sh: the guest was stopped at its ${limit}s limit" >&2; rc=124
else
  echo "vm.sh: the guest ended (exit $krc) without running the command" >&2; rc=125
fi
echo "vm.sh: the guest's console, last lines:" >&2
tail -n 30 "$x/console" >&2
exit "$rc"
