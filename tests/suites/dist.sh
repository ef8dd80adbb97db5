#!/bin/bash
# tests/suites/dist.sh — the packages of `make dist` install and work outside
# the source tree, with no fluebox on PATH (issue 29):
#   the Debian package: dpkg -i, /usr/bin/fluebox runs a sandbox, the links,
#     man pages and completions are there, dpkg -r removes it all (also when
#     a check fails: at_exit), as root on this throwaway test machine;
#   the npm package: installed alone into an empty directory, its client
#     starts its own binary and runs a session; the Flue example runs with
#     Flue's @flue/runtime from the npm registry (cached in build/);
#   the wheel: pip install --no-index into a fresh venv, the client and the
#     console script run a sandbox; unzipped into a venv without pip too;
#   the source tarball: builds without git and says which commit it is;
#   bad input: a package whose binary is for another machine says so in one
#     line and points at fluebox doctor; make dist without its tools names
#     the missing packages (not root).
# dist/ is what `make check` built (make dist before it); when it is missing
# or older than ./fluebox, this builds it (scripts/dist.sh).
# timeout: 900
set -u
cd "$(dirname "$0")/../.."
ROOT=$(pwd)
: "${FB:=$ROOT/fluebox}"
. tests/lib.sh
version=$(sed -n 1p VERSION)
deb=dist/fluebox_${version}_amd64.deb
tgz=dist/fluebox-$version.tgz
src=dist/fluebox-$version.tar.gz
[ "$(uname -m)" = x86_64 ] || skip_all "the packages carry an x86-64 binary; this is $(uname -m)"
for t in go-md2man lintian dpkg-deb npm git; do need "$t" "make dist" || skip_all "missing: $t"; done
if [ ! -f "$deb" ] || [ ! -f "$tgz" ] || [ fluebox -nt "$deb" ]; then
  sh scripts/dist.sh > "$T/dist.log" 2>&1 || bail "make dist failed: $(tail -n 5 "$T/dist.log" | tr '\n' ' ')"
fi
whl=$(ls dist/fluebox-"$version"-py3-none-*.whl 2>/dev/null | head -n 1)
for f in "$deb" "$tgz" "$src" "$whl"; do
  [ -s "$f" ] && ok "make dist wrote $(basename "$f")" || fail "make dist wrote ${f:-the wheel}"
done
# A PATH without any fluebox: the system's directories only.
CLEAN_PATH=/usr/sbin:/usr/bin:/sbin:/bin
PATH=$CLEAN_PATH command -v fluebox >/dev/null && bail "a fluebox is on the system PATH already: $(PATH=$CLEAN_PATH command -v fluebox)"
W=$(mktemp -d /tmp/fbdist.XXXXXX); chmod 755 "$W"
at_exit "rm -rf '$W'"

# A file with an ELF header for aarch64 (machine 183): a binary of another
# machine, to put where a package's binary is.
other_arch() {
  python3 -c 'import sys; h = bytearray(64); h[0:4] = b"\x7fELF"; h[4] = 2; h[5] = 1; h[6] = 1; h[16] = 2; h[18] = 183
open(sys.argv[1], "wb").write(bytes(h))' "$1" && chmod 755 "$1"
}
one_line_doctor() { # NAME TEXT — TEXT is one line and points at fluebox doctor
  local n; n=$(printf '%s\n' "$2" | grep -c .)
  case "$2" in *"fluebox doctor"*|*" doctor\`"*) [ "$n" = 1 ] && ok "$1" || fail "$1" "$n lines: $2";;
    *) fail "$1" "does not point at fluebox doctor: $2";; esac
}

# --- the version: one place ---------------------------------------------------------
v=$("$FB" --version)
case "$v" in "fluebox $version (commit "*) ok "fluebox --version: VERSION and the commit";; *) fail "fluebox --version" "$v";; esac
[ "$(node -p 'require("./bindings/node/package.json").version')" = "$version" ] &&
  ok "bindings/node/package.json has VERSION's version" || fail "bindings/node/package.json has VERSION's version"

# --- the Debian package ------------------------------------------------------------
deb_checks() {
  if dpkg-query -W -f='${Status}' fluebox 2>/dev/null | grep -q '^install ok installed'; then
    skip "the Debian package" "a fluebox package is installed already; not touching it"; return
  fi
  at_exit "dpkg -P fluebox >/dev/null 2>&1"
  if ! dpkg -i "$deb" > "$W/dpkg.log" 2>&1; then fail "dpkg -i the package" "$(tail -n 3 "$W/dpkg.log")"; return; fi
  ok "dpkg -i the package"
  out=$(cd "$W" && env -i PATH=$CLEAN_PATH fluebox run -- sh -c 'echo sandboxed $(id -u)' 2>&1)
  [ "$out" = "sandboxed 1000" ] && ok "deb: /usr/bin/fluebox runs a sandbox" || fail "deb: /usr/bin/fluebox runs a sandbox" "$out"
  v=$(/usr/bin/fluebox --version)
  case "$v" in "fluebox $version (commit "*) ok "deb: --version";; *) fail "deb: --version" "$v";; esac
  miss=""
  for f in /usr/bin/fluebox-oci /usr/bin/fluebox-oci-strict /usr/bin/fluebox-oci-standard /usr/bin/fluebox-oci-trusted \
           /usr/share/man/man1/fluebox.1.gz /usr/share/man/man5/fluebox-profile.5.gz /usr/share/man/man1/fluebox-oci.1.gz \
           /usr/share/bash-completion/completions/fluebox /usr/share/zsh/vendor-completions/_fluebox \
           /usr/share/fish/vendor_completions.d/fluebox.fish /usr/share/doc/fluebox/copyright \
           /usr/share/doc/fluebox/changelog.gz /usr/share/doc/fluebox/README.md.gz; do
    [ -e "$f" ] || miss="$miss $f"
  done
  [ -z "$miss" ] && ok "deb: links, man pages, completions, docs" || fail "deb: links, man pages, completions, docs" "missing:$miss"
  out=$(/usr/bin/fluebox-oci --help 2>&1 | head -n 1)
  case "$out" in "Usage: fluebox oci"*) ok "deb: fluebox-oci is the OCI runtime";; *) fail "deb: fluebox-oci" "$out";; esac
  if command -v man >/dev/null; then
    out=$(MANWIDTH=80 man fluebox 2>&1 | grep -c -e "--workspace" -e "fluebox session")
    [ "$out" -ge 2 ] && ok "deb: man fluebox" || fail "deb: man fluebox" "$(MANWIDTH=80 man fluebox 2>&1 | head -n 3)"
    out=$(MANWIDTH=80 man 5 fluebox-profile 2>&1 | grep -c "seccomp.rules")
    [ "$out" -ge 1 ] && ok "deb: man 5 fluebox-profile" || fail "deb: man 5 fluebox-profile"
  fi
  if dpkg -P fluebox > "$W/dpkg.log" 2>&1 && [ ! -e /usr/bin/fluebox ] && [ ! -e /usr/bin/fluebox-oci ] &&
     ! dpkg-query -W -f='${Status}' fluebox 2>/dev/null | grep -q "^install ok"; then
    ok "dpkg -P removes it"
  else
    fail "dpkg -P removes it" "$(tail -n 3 "$W/dpkg.log")"
  fi
}
if [ "$(id -u)" = 0 ]; then deb_checks; else skip "the Debian package" "needs root (dpkg -i)"; fi

# --- the npm package ---------------------------------------------------------------
n=$W/npm; mkdir -p "$n"
if (cd "$n" && npm install --offline --no-audit --no-fund --silent "$ROOT/$tgz") > "$W/npm.log" 2>&1; then
  ok "npm install ./fluebox-$version.tgz into an empty directory, offline"
else
  fail "npm install the package" "$(tail -n 3 "$W/npm.log")"
fi
cat > "$n/session.cjs" <<'EOF'
const { Fluebox } = require('fluebox');
(async () => {
  const fb = await Fluebox.connect();
  const s = await fb.createSession({ profile: 'strict' });
  const r = await s.exec(['sh', '-c', 'echo from-npm $(id -u)']);
  process.stdout.write(r.stdout);
  await s.destroy();
  await fb.close();
})().catch((e) => { console.error(e.message); process.exit(1); });
EOF
out=$(cd "$n" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH HOME="$W" FLUEBOX_SOCKET="$W/none.sock" timeout 120 node session.cjs 2>&1)
[ "$out" = "from-npm 1000" ] && ok "npm: the client starts the package's own binary, a session runs" || fail "npm: a session" "$out"
out=$(cd "$n" && env PATH=$CLEAN_PATH ./node_modules/.bin/fluebox run -- echo bin-ok 2>&1)
[ "$out" = bin-ok ] && ok "npm: node_modules/.bin/fluebox runs a sandbox" || fail "npm: .bin/fluebox" "$out"
# Its binary for another machine: one line, pointing at fluebox doctor.
cp -r "$n" "$W/npm-other"
other_arch "$W/npm-other/node_modules/fluebox/vendor/linux-x64/fluebox"
out=$(cd "$W/npm-other" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 60 node session.cjs 2>&1)
one_line_doctor "npm: a bundled binary for another machine is refused in one line" "$out"
# A binary that fails to start a server (a missing kernel feature): one line.
printf '#!/bin/sh\necho "fluebox: cannot create a user namespace" >&2\nexit 125\n' > "$W/broken"; chmod 755 "$W/broken"
out=$(cd "$n" && env FLUEBOX_BIN="$W/broken" PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 60 node session.cjs 2>&1)
one_line_doctor "npm: a binary that cannot start here: one line" "$out"

# The Flue example, as the docs give it: Flue's tools on a fluebox sandbox.
flue_cache=$ROOT/build/flue-runtime
if [ ! -d "$flue_cache/node_modules/@flue/runtime" ]; then
  mkdir -p "$flue_cache"
  (cd "$flue_cache" && npm install --no-audit --no-fund --silent --no-save @flue/runtime@2) > "$W/flue.log" 2>&1 ||
    rm -rf "$flue_cache/node_modules/@flue"
fi
if [ -d "$flue_cache/node_modules/@flue/runtime" ]; then
  mkdir -p "$n/node_modules/@flue"
  ln -s "$flue_cache/node_modules/@flue/runtime" "$n/node_modules/@flue/runtime"
  cp examples/flue/tools.mjs "$n/"
  out=$(cd "$n" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 180 node tools.mjs 2>&1)
  case "$out" in *"every step behaved as expected"*) ok "examples/flue/tools.mjs runs as written (npm package + @flue/runtime)";;
    *) fail "examples/flue/tools.mjs" "$(printf %s "$out" | tail -n 5)";; esac
else
  skip_missing "examples/flue/tools.mjs" "@flue/runtime" "npm install failed: $(tail -n 2 "$W/flue.log" 2>/dev/null | tr '\n' ' ')"
fi

# --- the wheel ----------------------------------------------------------------------
cat > "$W/session.py" <<'EOF'
from fluebox import Fluebox
with Fluebox.connect() as fb, fb.session(profile="strict") as s:
    print(s.exec(["sh", "-c", "echo from-wheel $(id -u)"]).stdout.strip())
EOF
if python3 -m venv "$W/venv" > "$W/venv.log" 2>&1 &&
   "$W/venv/bin/python" -m pip install --no-index --quiet "$ROOT/$whl" > "$W/pip.log" 2>&1; then
  ok "pip install --no-index the wheel into a fresh venv"
  out=$(cd "$W" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 120 "$W/venv/bin/python" session.py 2>&1)
  [ "$out" = "from-wheel 1000" ] && ok "wheel: the client starts the package's own binary, a session runs" || fail "wheel: a session" "$out"
  out=$(env PATH=$CLEAN_PATH "$W/venv/bin/fluebox" run -- echo script-ok 2>&1)
  [ "$out" = script-ok ] && ok "wheel: the fluebox console script runs a sandbox" || fail "wheel: console script" "$out"
  other_arch "$(echo "$W"/venv/lib/python3*/site-packages/fluebox/_bin/fluebox)"
  out=$(cd "$W" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 60 "$W/venv/bin/python" -c \
    'import fluebox
try:
    fluebox.find_binary()
except fluebox.BinaryNotFound as e:
    print(e)' 2>&1)
  one_line_doctor "wheel: a bundled binary for another machine is refused in one line" "$out"
else
  fail "pip install --no-index the wheel" "$(tail -n 3 "$W/venv.log" "$W/pip.log" 2>/dev/null | tr '\n' ' ')"
fi
# Without pip: a venv and unzip, as a wheel is (PEP 427), modes kept.
if need unzip "wheel unzipped into a venv without pip"; then
  python3 -m venv --without-pip "$W/bare" && sp=$(echo "$W"/bare/lib/python3*)/site-packages
  unzip -q "$ROOT/$whl" -d "$sp"
  out=$(cd "$W" && env -u FLUEBOX_BIN PATH=$CLEAN_PATH FLUEBOX_SOCKET="$W/none.sock" timeout 120 "$W/bare/bin/python" session.py 2>&1)
  [ "$out" = "from-wheel 1000" ] && ok "wheel unzipped into a venv without pip: a session runs" || fail "wheel unzipped" "$out"
fi

# --- the source tarball: builds outside git and says which commit it is -------------
mkdir -p "$W/src" && tar -xzf "$src" -C "$W/src"
head=$(gzip -dc "$src" | git get-tar-commit-id | cut -c1-12)
if (cd "$W/src/fluebox-$version" && env PATH=$CLEAN_PATH GIT_DIR=/nonexistent make -j2 fluebox) > "$W/make.log" 2>&1; then
  ok "the source tarball builds outside git"
  v=$("$W/src/fluebox-$version/fluebox" --version)
  case "$v" in "fluebox $version (commit $head, from a source archive)") ok "tarball build: --version names the archive's commit";;
    *) fail "tarball build: --version" "$v (HEAD is $head)";; esac
  out=$(cd "$W" && "$W/src/fluebox-$version/fluebox" run -- echo built-ok 2>&1)
  [ "$out" = built-ok ] && ok "tarball build: runs a sandbox" || fail "tarball build: runs a sandbox" "$out"
else
  fail "the source tarball builds" "$(tail -n 5 "$W/make.log" | tr '\n' ' ')"
fi

# --- make dist without its tools, not root: names the missing packages ---------------
if [ "$(id -u)" = 0 ] && id fbtest >/dev/null 2>&1 && command -v setpriv >/dev/null; then
  mkdir -p "$W/fakebin"
  printf '#!/bin/sh\nexit 1\n' > "$W/fakebin/dpkg-query"; chmod 755 "$W/fakebin/dpkg-query"
  out=$(setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env -- env PATH="$W/fakebin:$CLEAN_PATH" \
        sh scripts/deps.sh dist 2>&1); rc=$?
  case "$rc:$out" in 1:*"missing packages:"*lintian*"run: sudo apt-get install -y"*) ok "make dist's tools missing, not root: named, exit 1";;
    *) fail "make dist's tools missing, not root" "exit $rc: $out";; esac
else
  skip "make dist's tools missing, not root" "needs root and the user fbtest"
fi
