#!/bin/bash
# tests/suites/node-client.sh — the Node.js client's tests (bindings/node,
# node's built-in test runner) against a real `fluebox serve` started by each
# test file. Prints "ok - ..." / "not ok - ..." lines for tests/run.sh.
# Environment: FB = the fluebox binary (set by tests/run.sh).
# timeout: 2200
set -u
cd "$(dirname "$0")/../.."
: "${FB:=$(pwd)/fluebox}"
. tests/lib.sh
command -v node >/dev/null 2>&1 || skip_all "missing: node"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || skip_all "missing: node 18 or later (this is node $major)"
# Flue's own runtime (@flue/runtime from the npm registry, a pinned version)
# for test/flue-runtime.test.mjs: installed once into a cache outside the
# tree (FLUE_RUNTIME_DIR, when set, names one already there).
FLUE_RT_VERSION=2.1.0
if [ -z "${FLUE_RUNTIME_DIR:-}" ]; then
  rt=${XDG_CACHE_HOME:-${HOME:-/tmp}/.cache}/fluebox-tests/flue-runtime-$FLUE_RT_VERSION
  if [ ! -f "$rt/node_modules/@flue/runtime/package.json" ]; then
    if ! command -v npm >/dev/null 2>&1; then
      echo "# npm is missing: @flue/runtime cannot be installed"
    elif ! { mkdir -p "$rt" && (cd "$rt" && timeout 600 npm install --no-save --no-audit --no-fund \
          --loglevel=error "@flue/runtime@$FLUE_RT_VERSION") >"$rt.log" 2>&1; }; then
      echo "# npm install @flue/runtime@$FLUE_RT_VERSION failed: $(tail -n 3 "$rt.log" | tr '\n' ' ')"
    fi
  fi
  [ -f "$rt/node_modules/@flue/runtime/package.json" ] && export FLUE_RUNTIME_DIR=$rt
fi
cd bindings/node
# Each file starts its own server; run them one at a time (the machine has
# 2 cores and the 50 MB and 20-session tests are heavy enough).
# --test-timeout: a test that hangs (a server bug, for instance) fails after
# 3 minutes instead of holding the whole run.
# The main run's servers are the ASan/UBSan build when there is one; their
# reports go to files, checked at the end.
asan=""
if [ -n "${FB_ASAN:-}" ] && [ -x "$FB_ASAN" ]; then asan=1; sanitizer_logs; fi
export FB
# node 18 (Debian 12's) has neither --test-concurrency (it runs files one at a
# time on 2 CPUs anyway) nor --test-timeout (the outer timeout still holds).
flags=(--test --test-reporter=./test/reporter.mjs)
node --help 2>/dev/null | grep -q -- --test-concurrency && flags+=(--test-concurrency=1)
node --help 2>/dev/null | grep -q -- --test-timeout && flags+=(--test-timeout=180000)
if [ -n "$asan" ]; then
  FB=$FB_ASAN sub_suite "node client tests (ASan/UBSan server)" 1500 node "${flags[@]}" test/
  no_sanitizer_reports "node client tests: no sanitizer report from the servers"
  unset ASAN_OPTIONS UBSAN_OPTIONS
else
  sub_suite "node client tests" 1500 node "${flags[@]}" test/
fi
# Again as an unprivileged user (a rootless server), the core files only.
if [ "$(id -u)" = 0 ] && id fbtest >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  home=$(mktemp -d /tmp/fbnode-home.XXXXXX); chown fbtest "$home"
  sub_suite "node client tests as fbtest" 600 setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env -- \
    env PATH="$PATH" HOME="$home" FB="$FB" FLUEBOX_TEST_TAG=fbtest \
    node "${flags[@]}" \
      test/client.test.mjs test/stream.test.mjs test/flue.test.mjs test/cow.test.mjs
  rm -rf "$home"
elif [ "$(id -u)" = 0 ]; then
  skip_missing "node client tests as fbtest" setpriv
fi
