#!/bin/sh
# deps.sh — install the Debian packages fluebox needs, only those missing.
#   deps.sh build   compiler, libseccomp-dev, libjansson-dev, libssl-dev
#                   (libcrypto: SHA-256 and Ed25519 for --record; libssl: the
#                   relay's TLS for --secret and --allow-http), pkg-config
#   deps.sh test    + everything `make check` runs (tests/README.md says which
#                   suite needs what): curl, openssl, iproute2, python3 and
#                   python3-venv (the Python client's install test), git,
#                   procps, util-linux, strace (31-cgroup-v2), clang and its
#                   libFuzzer runtime (tests/suites/fuzz-*), node 18 or later
#                   and npm (the Node client), user-mode-linux, busybox-static
#                   and e2fsprogs (the Linux 6.1 / cgroup v2 guest, tests/vm),
#                   containerd, runc and golang-go (fluebox oci's suites),
#                   python3-virtualenv, python3-pytest and python3-pip (the venv
#                   and TLS trust tests, 60-toolchains and 61-trust), unzip
#                   (a wheel installed without pip, tests/suites/dist.sh),
#                   podman and docker.io (the engines suites, tests/suites/
#                   engine-*: Podman's and Docker's own paths against fluebox;
#                   neither daemon is started here); and from npm, into
#                   the tests' cache, @grpc/grpc-js and @grpc/proto-loader
#                   (tests/cri/cri.mjs: containerd's CRI plugin driven as the
#                   kubelet drives it)
#   deps.sh dist    + what `make dist` uses: go-md2man (the man pages),
#                   lintian (checks the Debian package), dpkg-dev, git (the
#                   source tarball), node and npm (npm pack), python3
#   deps.sh bench   + bubblewrap (the benchmarks compare against it)
#   deps.sh fuzz    + clang and its libFuzzer runtime (make fuzz)
#   deps.sh all     everything
# As root it runs apt-get; otherwise it prints the command to run and fails.
# node and npm count as there when a node 18 or later and an npm are on PATH
# (another packaging of node, such as nodesource's, is used as it is).
set -e
build="gcc make pkg-config libseccomp-dev libjansson-dev libssl-dev"
test="curl openssl iproute2 python3 python3-venv git procps util-linux strace
  clang libclang-rt-dev user-mode-linux busybox-static e2fsprogs containerd runc golang-go
  python3-virtualenv python3-pytest python3-pip unzip podman docker.io"
dist="go-md2man lintian dpkg-dev git python3 python3-venv"
want=$build; node=""
case "${1:-build}" in
  build) ;;
  test)  want="$build $test $dist"; node=1 ;;
  dist)  want="$build $dist"; node=1 ;;
  bench) want="$build bubblewrap util-linux python3" ;;
  fuzz)  want="$build clang libclang-rt-dev" ;;
  all)   want="$build $test $dist bubblewrap"; node=1 ;;
  *) echo "deps.sh: unknown set '$1'" >&2; exit 2 ;;
esac
missing=""
for p in $want; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
if [ -n "$node" ]; then
  major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
  [ "$major" -ge 18 ] 2>/dev/null || missing="$missing nodejs"
  command -v npm >/dev/null 2>&1 || missing="$missing npm"
fi
# The npm modules of the test set, pinned, into the tests' cache (what
# tests/suites/engine-cri.sh reads; FB_GRPC_DIR overrides it).
npm_modules() {
  [ "${1:-build}" = test ] || [ "${1:-build}" = all ] || return 0
  dir=${FB_GRPC_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/fluebox-tests/grpc-1.14.7}
  [ -f "$dir/node_modules/@grpc/proto-loader/package.json" ] &&
    [ -f "$dir/node_modules/@grpc/grpc-js/package.json" ] && return 0
  mkdir -p "$dir"
  echo "fluebox: installing @grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1 into $dir" >&2
  npm install --prefix "$dir" --no-audit --no-fund --no-save --no-update-notifier \
    @grpc/grpc-js@1.14.7 @grpc/proto-loader@0.8.1 >/dev/null ||
    echo "fluebox: npm install of the gRPC modules failed: engine-cri will say they are missing" >&2
}
if [ -z "$missing" ]; then npm_modules "${1:-build}"; exit 0; fi
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
npm_modules "${1:-build}"
