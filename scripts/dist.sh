#!/bin/sh
# dist.sh — `make dist`: the packages of one version (VERSION) into dist/:
#   fluebox_VERSION_amd64.deb   Debian package (dpkg-deb, checked by lintian)
#   fluebox-VERSION.tgz         npm package (bindings/node + the binary)
#   fluebox-VERSION-py3-none-manylinux_2_17_x86_64.musllinux_1_1_x86_64.whl
#                               Python wheel (bindings/python + the binary)
#   fluebox-VERSION.tar.gz      source tarball (git archive of HEAD)
# Each carries the static ./fluebox (built by make first), stripped.
# The tools come from scripts/deps.sh's "dist" set: as root they are
# installed, otherwise it names the missing packages and this fails.
# Usage: scripts/dist.sh   (from the top of the tree, after make)
set -eu
cd "$(dirname "$0")/.."
sh scripts/deps.sh dist
version=$(sed -n '1{s/[[:space:]]//g;p}' VERSION)
[ -x fluebox ] || { echo "dist.sh: ./fluebox is missing: run make first" >&2; exit 1; }
case "$(uname -m)" in
  x86_64) ;;
  *) echo "dist.sh: the packages carry an x86-64 binary; this is $(uname -m)" >&2; exit 1 ;;
esac
file_type=$(od -An -tx1 -j4 -N2 fluebox | tr -d ' ')
[ "$file_type" = 0201 ] || { echo "dist.sh: ./fluebox is not a 64-bit little-endian ELF file" >&2; exit 1; }
if ! ./fluebox --version | grep -q "^fluebox $version "; then
  echo "dist.sh: ./fluebox says \"$(./fluebox --version)\", VERSION says $version: run make" >&2
  exit 1
fi
# A dynamically linked build (no static libraries) would not run on a machine
# without libseccomp and libjansson: the packages need the static one.
if readelf -l fluebox | grep -q "program interpreter"; then
  echo "dist.sh: ./fluebox is linked dynamically (STATIC= or no static libraries): the packages need the static build" >&2
  exit 1
fi
node_version=$(node -p 'require("./bindings/node/package.json").version')
[ "$node_version" = "$version" ] || {
  echo "dist.sh: bindings/node/package.json says $node_version, VERSION says $version: make them agree" >&2
  exit 1
}

py_version=$(sed -n 's/^version = "\(.*\)"$/\1/p' bindings/python/pyproject.toml)
[ "$py_version" = "$version" ] || {
  echo "dist.sh: bindings/python/pyproject.toml says $py_version, VERSION says $version: make them agree" >&2
  exit 1
}

B=build/dist
rm -rf "$B" dist
mkdir -p "$B" dist
strip --remove-section=.comment --remove-section=.note -o "$B/fluebox" fluebox
chmod 0755 "$B/fluebox"

python3 scripts/man.py "$B/man" ./fluebox
sh scripts/dist-deb.sh "$version" "$B" dist
sh scripts/dist-npm.sh "$version" "$B" dist
python3 -c 'import sys; sys.path.insert(0, "bindings/python/_build"); import fluebox_build as b; print(b.build_binary_wheel(sys.argv[1], sys.argv[2]))' \
  dist "$B/fluebox" >/dev/null
# The source tarball: the committed tree (not the uncommitted changes);
# scripts/commit.txt gets the commit (export-subst) so its build knows it.
if ! git diff --quiet HEAD -- 2>/dev/null; then
  echo "dist.sh: note: the source tarball holds HEAD; uncommitted changes are not in it" >&2
fi
git archive --format=tar.gz --prefix="fluebox-$version/" -o "dist/fluebox-$version.tar.gz" HEAD
ls -1 dist
