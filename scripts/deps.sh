#!/bin/sh
# deps.sh — install the Debian packages fluebox needs, only those missing.
#   deps.sh build   compiler, libseccomp-dev, libjansson-dev, pkg-config
#   deps.sh test    + what the tests use (curl, openssl, iproute2, python3, nodejs, git)
#   deps.sh bench   + bubblewrap (the benchmarks compare against it)
#   deps.sh fuzz    + clang and its libFuzzer runtime (make fuzz, tests/suites/fuzz-profile.sh)
#   deps.sh all     everything
# As root it runs apt-get; otherwise it prints the command to run and fails.
set -e
want="gcc make pkg-config libseccomp-dev libjansson-dev"
case "${1:-build}" in
  build) ;;
  test)  want="$want curl openssl iproute2 python3 git procps util-linux" ;;
  bench) want="$want bubblewrap util-linux python3" ;;
  fuzz)  want="$want clang libclang-rt-dev" ;;
  all)   want="$want curl openssl iproute2 python3 git procps util-linux bubblewrap clang libclang-rt-dev" ;;
  *) echo "deps.sh: unknown set '$1'" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ]; then
  echo "fluebox: missing packages:$missing — run: sudo apt-get install -y$missing" >&2
  exit 1
fi
echo "fluebox: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get install -y --no-install-recommends $missing >/dev/null 2>&1 || {
  apt-get update >/dev/null 2>&1
  apt-get install -y --no-install-recommends $missing >/dev/null
}
