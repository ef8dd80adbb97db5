#!/bin/bash
# tests/suites/vm-linux61.sh — Linux 6.1, Debian 12's kernel series: boots a
# throw-away 6.1 guest (tests/vm/vm.sh, Debian's user-mode-linux; cgroup v2
# only, an ext4 /scratch) and runs tests/vm/guest-linux61.sh there: what
# differs on 6.1 (copy-on-write without user xattrs on tmpfs), then the
# integration files that touch the kernel most, as root and as the test
# user (the whole integration suite takes about 25 minutes there; the limit
# tests run in vm-cgroup-v2). The guest's results are this suite's, named
# "[6.1] ...".
# timeout: 1500
cd "$(dirname "$0")/../.." || exit 1
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
command -v linux.uml >/dev/null 2>&1 || skip_all "missing: user-mode-linux (linux.uml)"
[ -x /bin/busybox ] || skip_all "missing: busybox-static (/bin/busybox)"
command -v mkfs.ext4 >/dev/null 2>&1 || skip_all "missing: e2fsprogs (mkfs.ext4)"
root_files="10-core 12-badinput 40-net-bad 50-profiles-escapes 50-profiles-files 70-server 90-cow 91-cow-safety 92-cow-session 93-cow-upper"
user_files="10-core 50-profiles-escapes 70-server 93-cow-upper"
limit=1400
# FBVM_FULL=1 (make check-kernels): every integration file, as both users.
if [ -n "${FBVM_FULL:-}" ]; then root_files=""; user_files=""; limit=5000; fi
sub_suite -p "[6.1] " "the Linux 6.1 guest" $((limit + 50)) \
  tests/vm/vm.sh -t "$limit" -d 4G -e FB="$FB" -e ROOT="$(pwd)" \
    -e FBVM_FILES="$root_files" -e FBVM_USER_FILES="$user_files" -- \
  bash -c 'T=$(mktemp -d /tmp/fbvm.XXXXXX) exec bash tests/vm/guest-linux61.sh'
