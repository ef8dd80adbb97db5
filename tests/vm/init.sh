#!/bin/sh
# tests/vm/init.sh — PID 1 of the guest that tests/vm/vm.sh boots.
#
# The kernel starts it on the host's / (hostfs, read-only). It makes that
# writable for the guest alone (an overlay with a tmpfs upper layer), moves
# into it, mounts what a Debian system has (proc, sys, dev, a cgroup2
# hierarchy holding every controller on /sys/fs/cgroup), runs the command
# vm.sh left in the exchange directory, writes its exit status there and
# powers off. Parameters come from the kernel command line (as environment):
#   fbvm_x        the host path of the exchange directory
#   fbvm_mods     the host path of the guest kernel's modules
#   fbvm_cgroup   optional: run the command in this cgroup, every controller
#                 enabled on the way down (a unit with Delegate=yes)
PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export PATH
bb=/bin/busybox
off() { sync; $bb poweroff -f; }
fatal() { echo "init: $*" >&2; [ -d /.x ] && echo 125 > /.x/rc; off; }

mount -t proc proc /proc
mount -t sysfs sysfs /sys

# A writable root: the host's files below, the guest's writes in a tmpfs.
$bb insmod "$fbvm_mods/kernel/fs/overlayfs/overlay.ko" 2>/dev/null
mount -t tmpfs -o mode=0755 layer /mnt || fatal "tmpfs for the root's upper layer"
mkdir -p /mnt/upper /mnt/work /mnt/root
mount -t overlay root -o lowerdir=/,upperdir=/mnt/upper,workdir=/mnt/work /mnt/root ||
  fatal "the overlay root"
mkdir -p /mnt/root/.host /mnt/root/.x
cd /mnt/root && pivot_root . .host || fatal "pivot_root"
cd /

mount -t proc proc /proc
mount -t sysfs sysfs /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /dev/mqueue
mount -t devpts -o gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t mqueue mqueue /dev/mqueue
ln -sf /proc/self/fd /dev/fd
ln -sf fd/0 /dev/stdin; ln -sf fd/1 /dev/stdout; ln -sf fd/2 /dev/stderr
mount -t tmpfs -o mode=0755 run /run
mkdir -p /run/lock /run/user
# vm.sh -d: an ext4 file system at /scratch.
if [ -b /dev/ubda ]; then
  mkdir -p /scratch && mount -t ext4 /dev/ubda /scratch && chmod 1777 /scratch ||
    fatal "the ext4 disk"
fi
mount -t hostfs -o "$fbvm_x" exchange /.x || fatal "the exchange directory $fbvm_x"
umount -l /.host

# cgroup v2 alone on /sys/fs/cgroup, as systemd mounts it.
mount -t cgroup2 -o nsdelegate cgroup2 /sys/fs/cgroup || fatal "the cgroup2 mount"
if [ -n "${fbvm_cgroup:-}" ]; then
  d=/sys/fs/cgroup
  for part in $(echo "$fbvm_cgroup" | tr / ' '); do
    for c in $(cat "$d/cgroup.controllers"); do echo "+$c" > "$d/cgroup.subtree_control"; done
    d=$d/$part
    mkdir -p "$d" || fatal "cgroup $d"
  done
  echo $$ > "$d/cgroup.procs" || fatal "moving into $d"
fi

# modprobe finds the modules by the running kernel's name.
mkdir -p /lib/modules && ln -sfn "$fbvm_mods" "/lib/modules/$(uname -r)"
$bb hostname fbvm
ip link set lo up 2>/dev/null || $bb ip link set lo up
mkdir -p /root && cd /root

# The command's output goes out on the serial line, the host's stdout
# (raw: no \n -> \r\n).
out=/dev/ttyS0
if [ -c $out ]; then stty -F $out raw -echo 2>/dev/null; else out=/.x/out; fi
env -i PATH="$PATH" HOME=/root TERM=dumb LANG=C.UTF-8 USER=root LOGNAME=root \
  /bin/bash /.x/cmd < /dev/null > $out 2>&1
echo $? > /.x/rc
off
