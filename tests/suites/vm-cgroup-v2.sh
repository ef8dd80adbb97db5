#!/bin/bash
# tests/suites/vm-cgroup-v2.sh — cgroup v2 with real controllers: boots a
# throw-away Linux 6.1 guest (tests/vm/vm.sh, Debian's user-mode-linux) whose
# only cgroup hierarchy is cgroup2 with cpu, io, memory and pids, and runs
# tests/vm/guest-cgroup-v2.sh there: the limits from the root cgroup, from
# delegated cgroups (root and rootless) and from a shared one, then
# 30-limits and 31-cgroup-v2 as root and as the test user. The guest's
# results are this suite's, named "[6.1 v2] ...".
# timeout: 1500
cd "$(dirname "$0")/../.." || exit 1
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
command -v linux.uml >/dev/null 2>&1 || skip_all "missing: user-mode-linux (linux.uml)"
[ -x /bin/busybox ] || skip_all "missing: busybox-static (/bin/busybox)"
sub_suite -p "[6.1 v2] " "the Linux 6.1 guest" 1450 \
  tests/vm/vm.sh -t 1400 -e FB="$FB" -e ROOT="$(pwd)" -- \
  bash -c 'T=$(mktemp -d /tmp/fbvm.XXXXXX) exec bash tests/vm/guest-cgroup-v2.sh'
