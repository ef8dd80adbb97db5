#!/bin/bash
# 60-toolchains: which host trees a sandbox gets for the programs it runs
# (src/policy/toolchain.c). A program found on the caller's PATH, or named by path,
# gets the smallest tree that runs it: a venv and its base interpreter, a
# version manager's version directory, or the file alone; never a home
# directory or a directory directly in one, where configuration and
# credentials live. Every layout sits in a fake home next to canary secrets
# (~/.cargo/credentials.toml, ~/.ssh/id_rsa, ~/.npmrc, ...) that the program
# then tries to read. Real tools: the system Python and its venv and
# virtualenv, pytest, node, a pyenv Python when the machine has one.
#
# Fake homes live under /var/tmp, not /tmp: fluebox before this change never
# bound anything under /tmp, so a home there could not show the leak.
. "$ROOT/tests/lib.sh"

H=$(mktemp -d /var/tmp/fbhome.XXXXXX) || bail "mktemp under /var/tmp"
at_exit "rm -rf '$H'"
cd "$T" || bail "cd $T"
chmod 755 "$H"

# fbe VAR=VALUE... -- ARGS: fluebox ARGS (as FB_AS) with exactly these
# variables, from the current directory; $OUT, $ERR, $RC as run_fb.
fbe() {
  local envs=("LANG=C.UTF-8")
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  if [ "$FB_AS" = root ]; then
    env -i "${envs[@]}" "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env -i "${envs[@]}" "$FB" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  fi
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}

# no_canary NAME: the run worked (exit 0, "ran" in its output) and no canary
# came out.
no_canary() {
  case "$OUT$ERR" in
    *CANARY*) fail "$1" "a secret was readable: $(printf %s "$OUT" | grep CANARY | head -3)" ;;
    *ran*) if [ "$RC" = 0 ]; then ok "$1"; else fail "$1" "exit $RC: $(printf %s "$ERR" | head -c 300)"; fi ;;
    *) fail "$1" "the program did not run (exit $RC): $(printf %s "$OUT $ERR" | head -c 300)" ;;
  esac
}

SYS=/usr/bin:/bin
# A shell script that tries every canary, then says it ran (busybox's cat
# would be an ELF; this exercises the script rule).
SECRETS="$H/.cargo/credentials.toml $H/.ssh/id_rsa $H/.npmrc $H/.local/share/keyring $H/.config/gh/hosts.yml $H/.pyenv/canary $H/.nvm/canary $H/.asdf/canary $H/.volta/canary $H/.rustup/canary"
mkdir -p "$H/.cargo/bin" "$H/.local/bin" "$H/.local/share" "$H/bin" "$H/.ssh" "$H/.config/gh" \
  "$H/.pyenv" "$H/.nvm" "$H/.asdf" "$H/.volta" "$H/.rustup" "$H/proj"
for f in $SECRETS; do echo "CANARY-$(basename "$f")" > "$f"; done
TRY="for f in $SECRETS; do cat \$f 2>/dev/null; done; echo ran"

# ---- issue 19.1: what the old prefix bind exposed ----
if need busybox "static programs in ~/.cargo/bin, ~/.local/bin, ~/bin"; then
  BUSYBOX=$(readlink -f "$(command -v busybox)")
  # A static program (as `cargo install` makes, busybox here) is bound alone.
  cp "$BUSYBOX" "$H/.cargo/bin/sh"; cp "$BUSYBOX" "$H/.local/bin/sh"; cp "$BUSYBOX" "$H/bin/sh"
  fbe HOME="$H" PATH="$SYS" -- run -- "$H/.cargo/bin/sh" -c "$TRY"
  no_canary "~/.cargo/bin/tool by path: ~/.cargo (credentials.toml) not bound"
  fbe HOME="$H" PATH="$H/.cargo/bin:$SYS" -- run -- sh -c "$TRY"
  no_canary "~/.cargo/bin/tool by name: ~/.cargo not bound"
  fbe HOME="$H" PATH="$H/.local/bin:$SYS" -- run -- sh -c "$TRY"
  no_canary "~/.local/bin/tool: ~/.local not bound"
  fbe PATH="$H/bin:$SYS" -- run -- sh -c "$TRY"
  no_canary "HOME unset, ~/bin/tool: the home not bound"
  fbe HOME="$H/" PATH="$H/bin:$SYS" -- run -- sh -c "$TRY"
  no_canary "HOME ending in /, ~/bin/tool: the home not bound"
  fbe HOME="$H/" PATH="$H/bin:$SYS" -- run --print-path -- sh
  case "$OUT" in *"ro-bind $H/bin/sh	"*"a single program"*) ok "--print-path: the file alone, and why" ;;
    *) fail "--print-path: the file alone, and why" "$OUT" ;; esac
  case "$OUT" in *"PATH=$H/bin:"*) ok "inside PATH keeps ~/bin (only the program is there)" ;;
    *) fail "inside PATH keeps ~/bin (only the program is there)" "$OUT" ;; esac
  rm -f "$H/.cargo/bin/sh" "$H/.local/bin/sh" "$H/bin/sh"
fi

# A script in ~/bin: the file alone, then its interpreter.
printf '#!/bin/sh\n%s\n' "$TRY" > "$H/bin/tryall"; chmod 755 "$H/bin/tryall"
fbe HOME="$H" PATH="$H/bin:$SYS" -- run -- tryall
no_canary "a script in ~/bin: the script alone"
# A link from ~/.local/bin into a tree fluebox does not know: it binds
# nothing and says so in one line naming --ro-bind.
mkdir -p "$H/apps/thing/bin"; cp "$H/bin/tryall" "$H/apps/thing/bin/thing"
ln -s "$H/apps/thing/bin/thing" "$H/.local/bin/thing"
fbe HOME="$H" PATH="$H/.local/bin:$SYS" -- run -- thing
case "$RC:$ERR" in 125:*--ro-bind*) ok "a link into an unknown tree: 125 naming --ro-bind" ;;
  *) fail "a link into an unknown tree: 125 naming --ro-bind" "rc $RC $ERR" ;; esac
[ "$(printf %s "$ERR" | wc -l)" -le 1 ] && ok "... in one line" || fail "... in one line" "$ERR"
no_leftovers "a refused command leaves nothing behind"

# An ELF program with its own library path: cannot tell, refused.
if command -v cc >/dev/null; then
  mkdir -p "$H/opt/rp/bin"
  printf 'int main(void){return 0;}\n' > "$T/rp.c"
  if cc -o "$H/opt/rp/bin/rp" "$T/rp.c" -Wl,-rpath,'$ORIGIN/../lib' 2>/dev/null; then
    fbe HOME="$H" PATH="$H/opt/rp/bin:$SYS" -- run -- rp
    case "$RC:$ERR" in 125:*RUNPATH*--ro-bind*|125:*RPATH*--ro-bind*) ok "ELF with a RUNPATH: refused, naming --ro-bind" ;;
      *) fail "ELF with a RUNPATH: refused, naming --ro-bind" "rc $RC $ERR" ;; esac
    fbe HOME="$H" PATH="$SYS" -- run --ro-bind "$H/opt/rp" -- "$H/opt/rp/bin/rp"
    [ "$RC" = 0 ] && ok "... runs once its tree is bound with --ro-bind" || fail "... runs once its tree is bound with --ro-bind" "rc $RC $ERR"
  fi
fi

# pip --user: its modules are in ~/.local/lib; refused, not half-bound.
mkdir -p "$H/.local/lib/python3.11/site-packages"
printf '#!/usr/bin/python3\nimport sys\nfrom usertool import main\n' > "$H/.local/bin/usertool"
chmod 755 "$H/.local/bin/usertool"
fbe HOME="$H" PATH="$H/.local/bin:$SYS" -- run -- usertool
case "$RC:$ERR" in 125:*"outside a venv"*--ro-bind*) ok "pip --user program: refused, naming --ro-bind" ;;
  *) fail "pip --user program: refused, naming --ro-bind" "rc $RC $ERR" ;; esac

# ---- version managers' layouts ----
PY311=$(readlink -f /usr/bin/python3)

# pyenv: a root with shims, its version file, a version directory (a real
# Python: the system's binary, which finds its standard library itself).
mkdir -p "$H/.pyenv/shims" "$H/.pyenv/libexec" "$H/.pyenv/versions/3.99.1/bin"
: > "$H/.pyenv/libexec/pyenv"
echo 3.99.1 > "$H/.pyenv/version"
cp "$PY311" "$H/.pyenv/versions/3.99.1/bin/python3.99"
ln -s python3.99 "$H/.pyenv/versions/3.99.1/bin/python3"
printf '#!/bin/sh\necho "shim ran: never"\n' > "$H/.pyenv/shims/python3"; chmod 755 "$H/.pyenv/shims/python3"
PYTRY="import sys
for f in '$SECRETS'.split():
    try: print(open(f).read())
    except OSError: pass
print('ran', sys.executable)"
fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- run -- python3 -c "$PYTRY"
no_canary "pyenv: the version directory only"
case "$OUT" in *"ran $H/.pyenv/versions/3.99.1/bin/python3"*) ok "pyenv: the shim resolved to the version set" ;;
  *) fail "pyenv: the shim resolved to the version set" "$OUT $ERR" ;; esac
fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- run -- sh -c 'command -v python3; echo "$PATH"'
case "$OUT" in "$H/.pyenv/versions/3.99.1/bin/python3"*"$H/.pyenv/versions/3.99.1/bin:"*) ok "pyenv: sh -c finds the same python3 (shims dir mapped in PATH)" ;;
  *) fail "pyenv: sh -c finds the same python3 (shims dir mapped in PATH)" "$OUT $ERR" ;; esac
echo 3.99.1 > "$H/proj/.python-version"; echo system > "$H/.pyenv/version"
cd "$H/proj" && fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- run -- python3 -c 'import sys; print(sys.executable)'; cd "$T"
case "$OUT" in "$H/.pyenv/versions/3.99.1/bin/python3") ok "pyenv: .python-version of the caller's directory" ;;
  *) fail "pyenv: .python-version of the caller's directory" "$OUT $ERR" ;; esac
fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- run -- python3 -c 'import sys; print(sys.executable)'
case "$OUT" in /usr/bin/python3) ok "pyenv: \"system\" falls through to the system's python3" ;;
  *) fail "pyenv: \"system\" falls through to the system's python3" "$OUT $ERR" ;; esac
echo 3.99.1 > "$H/.pyenv/version"; rm -f "$H/proj/.python-version"

# nvm: NVM_DIR/versions/node/V, npm a link to a script run by "env node".
if need node "nvm, asdf and volta layouts"; then
  NODE=$(command -v node)
  NV=$H/.nvm/versions/node/v99.0.0
  mkdir -p "$NV/bin" "$NV/lib/node_modules/npm/bin"
  : > "$H/.nvm/nvm.sh"
  cp "$(readlink -f "$NODE")" "$NV/bin/node"
  printf '#!/usr/bin/env node\nconsole.log("npm ran", process.execPath)\n' > "$NV/lib/node_modules/npm/bin/npm-cli.js"
  chmod 755 "$NV/lib/node_modules/npm/bin/npm-cli.js"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$NV/bin/npm"
  JSTRY="const fs=require('fs'); for (const f of '$SECRETS'.split(' ')) { try { console.log(fs.readFileSync(f,'utf8')) } catch (e) {} } console.log('ran', process.execPath)"
  fbe HOME="$H" PATH="$NV/bin:$SYS" -- run -- node -e "$JSTRY"
  no_canary "nvm: the version directory only (not ~/.nvm, not ~/.npmrc)"
  fbe HOME="$H" PATH="$NV/bin:$SYS" -- run -- sh -c 'npm; node -e "console.log(process.execPath)"'
  case "$OUT" in "npm ran $NV/bin/node"*"$NV/bin/node") ok "nvm: npm (#!/usr/bin/env node) and sh -c node run the caller's node" ;;
    *) fail "nvm: npm (#!/usr/bin/env node) and sh -c node run the caller's node" "$OUT $ERR" ;; esac

  # asdf: a shim naming its plugin versions, .tool-versions in the home.
  mkdir -p "$H/.asdf/shims" "$H/.asdf/installs/nodejs/99.0.1/bin"
  cp "$NV/bin/node" "$H/.asdf/installs/nodejs/99.0.1/bin/node"
  printf '#!/usr/bin/env bash\n# asdf-plugin: nodejs 99.0.1\nexec asdf exec "node" "$@"\n' > "$H/.asdf/shims/node"
  chmod 755 "$H/.asdf/shims/node"
  echo "nodejs 99.0.1" > "$H/.tool-versions"
  fbe HOME="$H" PATH="$H/.asdf/shims:$SYS" -- run -- node -e "$JSTRY"
  no_canary "asdf: the install directory only"
  case "$OUT" in *"ran $H/.asdf/installs/nodejs/99.0.1/bin/node"*) ok "asdf: the shim resolved by .tool-versions" ;;
    *) fail "asdf: the shim resolved by .tool-versions" "$OUT $ERR" ;; esac
  echo "nodejs 98.0.0" > "$H/.tool-versions"
  fbe HOME="$H" PATH="$H/.asdf/shims:$SYS" -- run -- node -e 1
  case "$RC:$ERR" in 125:*asdf*--ro-bind*) ok "asdf: a version that is not installed: 125 naming --ro-bind" ;;
    *) fail "asdf: a version that is not installed: 125 naming --ro-bind" "rc $RC $ERR" ;; esac

  # volta: every shim is a link to volta-shim; the default platform.
  mkdir -p "$H/.volta/bin" "$H/.volta/tools/user" "$H/.volta/tools/image/node/99.0.2/bin"
  cp "$NV/bin/node" "$H/.volta/tools/image/node/99.0.2/bin/node"
  printf '#!/bin/sh\nexit 99\n' > "$H/.volta/bin/volta-shim"; chmod 755 "$H/.volta/bin/volta-shim"
  ln -s volta-shim "$H/.volta/bin/node"
  echo '{"node":{"runtime":"99.0.2","npm":null}}' > "$H/.volta/tools/user/platform.json"
  fbe HOME="$H" PATH="$H/.volta/bin:$SYS" -- run -- node -e "$JSTRY"
  no_canary "volta: the image directory only"
  case "$OUT" in *"ran $H/.volta/tools/image/node/99.0.2/bin/node"*) ok "volta: the shim resolved by platform.json" ;;
    *) fail "volta: the shim resolved by platform.json" "$OUT $ERR" ;; esac
fi

# rustup: ~/.cargo/bin/cargo is a link to rustup; the toolchain it picks.
for tc in stable-x86_64-unknown-linux-gnu nightly-x86_64-unknown-linux-gnu; do
  mkdir -p "$H/.rustup/toolchains/$tc/bin"
  printf '#!/bin/sh\n%s %s\n' "$TRY" "$tc" > "$H/.rustup/toolchains/$tc/bin/cargo"
  chmod 755 "$H/.rustup/toolchains/$tc/bin/cargo"
done
printf '#!/bin/sh\nexit 99\n' > "$H/.cargo/bin/rustup"; chmod 755 "$H/.cargo/bin/rustup"
ln -s rustup "$H/.cargo/bin/cargo"
printf 'version = "12"\ndefault_toolchain = "stable-x86_64-unknown-linux-gnu"\n' > "$H/.rustup/settings.toml"
fbe HOME="$H" PATH="$H/.cargo/bin:$SYS" -- run -- cargo
no_canary "rustup: the toolchain only (not ~/.cargo, not ~/.rustup)"
case "$OUT" in *"ran stable-"*) ok "rustup: the default toolchain" ;; *) fail "rustup: the default toolchain" "$OUT $ERR" ;; esac
printf '[toolchain]\nchannel = "nightly"\n' > "$H/proj/rust-toolchain.toml"
cd "$H/proj" && fbe HOME="$H" PATH="$H/.cargo/bin:$SYS" -- run -- cargo; cd "$T"
case "$OUT" in *"ran nightly-"*) ok "rustup: rust-toolchain.toml of the caller's directory" ;; *) fail "rustup: rust-toolchain.toml of the caller's directory" "$OUT $ERR" ;; esac
rm -f "$H/proj/rust-toolchain.toml"

# uv: a uv-managed Python and a venv in uv's layout (uv itself is not
# packaged for Debian: its pyvenv.cfg and links are reproduced).
UVPY=$H/.local/share/uv/python/cpython-3.99.2-linux-x86_64-gnu
mkdir -p "$UVPY/bin" "$H/proj/.venv/bin"
cp "$PY311" "$UVPY/bin/python3.99"; ln -s python3.99 "$UVPY/bin/python3"
printf 'home = %s/bin\nimplementation = CPython\nuv = 0.4.0\nversion_info = 3.99.2\ninclude-system-site-packages = false\n' "$UVPY" > "$H/proj/.venv/pyvenv.cfg"
ln -s "$UVPY/bin/python3" "$H/proj/.venv/bin/python"; ln -s python "$H/proj/.venv/bin/python3"
fbe HOME="$H" PATH="$SYS" -- run -- "$H/proj/.venv/bin/python" -c "$PYTRY
print('prefix', sys.prefix)"
no_canary "uv venv: the venv and the uv-managed Python only (not ~/.local)"
case "$OUT" in *"prefix $H/proj/.venv"*) ok "uv venv: python runs in its venv" ;; *) fail "uv venv: python runs in its venv" "$OUT $ERR" ;; esac

# A tool installed by uv tool / pipx: ~/.local/bin/T links into its venv.
TV=$H/.local/share/uv/tools/mytool
/usr/bin/python3 -m venv --without-pip "$TV" 2>/dev/null || { fail "setup: python3 -m venv"; }
printf '#!%s/bin/python\n%s\n' "$TV" "$PYTRY" > "$TV/bin/mytool"; chmod 755 "$TV/bin/mytool"
ln -s "$TV/bin/mytool" "$H/.local/bin/mytool"
fbe HOME="$H" PATH="$H/.local/bin:$SYS" -- run -- mytool
no_canary "uv tool / pipx: the tool's venv only"
case "$OUT" in *"ran $TV/bin/python"*) ok "uv tool / pipx: runs with its venv's python" ;; *) fail "uv tool / pipx: runs with its venv's python" "$OUT $ERR" ;; esac

# ---- issue 14.1: Python virtual environments ----
cd "$T" || bail "cd $T"
/usr/bin/python3 -m venv "$H/sysvenv" && /usr/bin/python3 -m venv --system-site-packages "$H/sitevenv" &&
  /usr/bin/python3 -m virtualenv -q "$H/vvenv" >/dev/null 2>&1
for v in sysvenv sitevenv vvenv; do
  [ -x "$H/$v/bin/python" ] || { fail "setup: $v"; continue; }
  fbe HOME="$H" PATH="$SYS" -- run -- "$H/$v/bin/python" -c 'import sys; print(sys.prefix)'
  [ "$OUT" = "$H/$v" ] && ok "$v: /path/venv/bin/python runs in its venv" || fail "$v: /path/venv/bin/python runs in its venv" "rc $RC $OUT $ERR"
done
# Activated (PATH and VIRTUAL_ENV): python, sh -c python, pytest.
V=$H/sitevenv
mkdir -p "$T/pt"; printf 'import sys\ndef test_venv():\n    assert sys.prefix == %s\n' "'$V'" > "$T/pt/test_v.py"; chmod -R a+rX "$T/pt"
fbe HOME="$H" PATH="$V/bin:$SYS" VIRTUAL_ENV="$V" -- run --ro-bind "$T/pt:/workspace/pt" -- \
  sh -c 'python -c "import sys; print(sys.prefix)"; echo "$VIRTUAL_ENV"; cd /workspace/pt && python3 -m pytest -q -p no:cacheprovider test_v.py'
case "$OUT" in "$V"*"$V"*"1 passed"*) ok "activated venv: python, VIRTUAL_ENV and pytest inside sh -c" ;;
  *) fail "activated venv: python, VIRTUAL_ENV and pytest inside sh -c" "rc $RC $OUT $ERR" ;; esac
fbe HOME="$H" PATH="$V/bin:$SYS" VIRTUAL_ENV="$V" -- run --ro-bind "$T/pt:/workspace/pt" --cwd /workspace/pt -- python -m pytest -q -p no:cacheprovider test_v.py
case "$OUT" in *"1 passed"*) ok "activated venv: run -- python -m pytest" ;; *) fail "activated venv: run -- python -m pytest" "rc $RC $OUT $ERR" ;; esac
# With the venv also bound by the user: still the venv's python, not the base.
fbe HOME="$H" PATH="$H/sysvenv/bin:$SYS" VIRTUAL_ENV="$H/sysvenv" -- run --ro-bind "$H/sysvenv" -- sh -c 'python -c "import sys; print(sys.prefix)"'
[ "$OUT" = "$H/sysvenv" ] && ok "activated venv with --ro-bind: never the base interpreter" || fail "activated venv with --ro-bind: never the base interpreter" "$OUT $ERR"

# A venv made inside the workspace works in that run and in later ones.
mkdir -p "$T/ws"; chmod 777 "$T/ws"
fbe HOME="$H" PATH="$SYS" -- run --workspace "$T/ws" -- sh -c 'python3 -m venv /workspace/v && /workspace/v/bin/python -c "import sys; print(sys.prefix)"'
[ "$OUT" = /workspace/v ] && ok "venv made in the workspace (system python): same run" || fail "venv made in the workspace (system python): same run" "rc $RC $OUT $ERR"
fbe HOME="$H" PATH="$SYS" -- run --workspace "$T/ws" -- /workspace/v/bin/python -c 'import sys; print(sys.prefix)'
[ "$OUT" = /workspace/v ] && ok "... and a later run" || fail "... and a later run" "rc $RC $OUT $ERR"
# Made with a pyenv-style Python (a version directory on the caller's PATH).
fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- run --workspace "$T/ws" -- sh -c 'python3 -m venv --without-pip /workspace/pv && /workspace/pv/bin/python -c "import sys; print(sys.base_prefix != sys.prefix)"'
[ "$OUT" = True ] && ok "venv made in the workspace by a pyenv python: same run" || fail "venv made in the workspace by a pyenv python: same run" "rc $RC $OUT $ERR"
fbe HOME="$H" PATH="$SYS" -- run --workspace "$T/ws" -- /workspace/pv/bin/python -c 'import sys; print(sys.executable, sys.prefix)'
[ "$OUT" = "/workspace/pv/bin/python /workspace/pv" ] && ok "... a later run binds its base from pyvenv.cfg" || fail "... a later run binds its base from pyvenv.cfg" "rc $RC $OUT $ERR"

# What the sandbox wrote (a script in the workspace, a venv's link) never
# gets a host script bound: a shebang naming one is refused.
printf '#!/bin/sh\necho CANARY-script\n' > "$H/bin/deploy"; chmod 755 "$H/bin/deploy"
printf '#!%s/bin/deploy\n' "$H" > "$T/ws/x.sh"; chmod 755 "$T/ws/x.sh"
fbe HOME="$H" PATH="$SYS" -- run --workspace "$T/ws" -- /workspace/x.sh
case "$RC:$OUT:$ERR" in 125::*"named by a file in the workspace"*--ro-bind*) ok "a workspace script's #! naming a host script: refused" ;;
  *) fail "a workspace script's #! naming a host script: refused" "rc $RC $OUT $ERR" ;; esac
mkdir -p "$T/ws/evil/bin"; printf 'home = %s/bin\n' "$H" > "$T/ws/evil/pyvenv.cfg"; ln -s "$H/bin/deploy" "$T/ws/evil/bin/python"
fbe HOME="$H" PATH="$SYS" -- run --workspace "$T/ws" -- /workspace/evil/bin/python
case "$RC:$OUT" in 125:) ok "a workspace venv linking to a host script: refused" ;;
  *) fail "a workspace venv linking to a host script: refused" "rc $RC $OUT $ERR" ;; esac

# The machine's pyenv, when there is one this user can read.
PYENV_ROOT=${PYENV_ROOT:-$(command -v pyenv >/dev/null && pyenv root 2>/dev/null)}
REALPY=""
if [ -n "$PYENV_ROOT" ] && [ -d "$PYENV_ROOT/versions" ]; then
  for d in "$PYENV_ROOT"/versions/3.*; do [ -x "$d/bin/python3" ] && REALPY=$d/bin/python3; done
fi
if [ -n "$REALPY" ] && { as_root || setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups test -x "$REALPY"; }; then
  "$REALPY" -m venv --without-pip "$H/pyenvvenv"
  fbe HOME="$H" PATH="$SYS" -- run -- "$H/pyenvvenv/bin/python" -c 'import sys; print(sys.prefix, sys.base_prefix)'
  base=$("$REALPY" -c 'import sys; print(sys.base_prefix)')
  [ "$OUT" = "$H/pyenvvenv $base" ] && ok "venv of the machine's pyenv python: venv and base bound" || fail "venv of the machine's pyenv python: venv and base bound" "rc $RC $OUT $ERR"
  fbe HOME="$H" PATH="$(dirname "$REALPY"):$SYS" -- run -- sh -c 'python3 -c "import sys; print(sys.executable)"'
  [ "$OUT" = "$(dirname "$REALPY")/python3" ] && ok "the machine's pyenv python at every level (sh -c)" || fail "the machine's pyenv python at every level (sh -c)" "rc $RC $OUT $ERR"
else
  skip "the machine's pyenv Python" "no pyenv Python readable by $FB_AS (PYENV_ROOT or pyenv on PATH)"
fi

# ---- issue 14.2: sessions take the creating client's programs ----
SOCK=$T/fb.sock
if [ "$FB_AS" = root ]; then SRVCMD=("$FB"); else
  SRVCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$SYS" HOME=/tmp "$FB")
  chown "$FB_AS" "$T"
fi
# The server's own PATH has none of the caller's programs.
"${SRVCMD[@]}" serve --socket "$SOCK" --pool 0 --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit "kill $SRV 2>/dev/null; wait $SRV 2>/dev/null"
ready() { grep -q ready "$T/ready" 2>/dev/null; }
if wait_for 10 ready; then
  fbe HOME="$H" PATH="$H/.pyenv/shims:$SYS" -- session create --socket "$SOCK"
  ID=$OUT
  fbe HOME="$H" PATH="$SYS" -- exec --socket "$SOCK" "$ID" -- sh -c "python3 -c 'import sys; print(sys.executable)'; $TRY"
  case "$OUT" in "$H/.pyenv/versions/3.99.1/bin/python3"*ran) ok "session: exec's sh -c python3 is the creating client's (pyenv)" ;;
    *) fail "session: exec's sh -c python3 is the creating client's (pyenv)" "rc $RC $OUT $ERR" ;; esac
  case "$OUT" in *CANARY*) fail "session: no canary readable" "$OUT" ;; *) ok "session: no canary readable" ;; esac
  fbe HOME="$H" PATH="$SYS" -- session info --socket "$SOCK" "$ID"
  case "$OUT" in *'"toolchain"'*"pyenv version 3.99.1"*) ok "session info says what was bound and why" ;;
    *) fail "session info says what was bound and why" "$OUT" ;; esac
  fbe HOME="$H" PATH="$SYS" -- session rm --socket "$SOCK" "$ID"
  fbe HOME="$H" PATH="$V/bin:$SYS" VIRTUAL_ENV="$V" -- session create --socket "$SOCK"
  ID=$OUT
  fbe PATH="$SYS" -- exec --socket "$SOCK" "$ID" -- sh -c 'python -c "import sys; print(sys.prefix)"; echo "$VIRTUAL_ENV"'
  [ "$OUT" = "$V"$'\n'"$V" ] && ok "session: the creating client's activated venv" || fail "session: the creating client's activated venv" "rc $RC $OUT $ERR"
  fbe PATH="$SYS" -- session rm --socket "$SOCK" "$ID"
else
  fail "session tests: serve did not start" "$(cat "$T/serve.err")"
fi
