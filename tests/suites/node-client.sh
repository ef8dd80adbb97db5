#!/bin/bash
# tests/suites/node-client.sh — the Node.js client's tests (bindings/node,
# node's built-in test runner) against a real `fluebox serve` started by each
# test file. Prints "ok - ..." / "not ok - ..." lines for tests/run.sh.
# Environment: FB = the fluebox binary (set by tests/run.sh).
set -u
cd "$(dirname "$0")/../.."
: "${FB:=$(pwd)/fluebox}"
if ! command -v node >/dev/null 2>&1; then
  echo "ok - node client # skip: node is not installed"
  exit 0
fi
major=$(node -p 'process.versions.node.split(".")[0]')
if [ "$major" -lt 18 ]; then
  echo "ok - node client # skip: node $major is older than 18"
  exit 0
fi
cd bindings/node
# Each file starts its own server; run them one at a time (the machine has
# 2 cores and the 50 MB and 20-session tests are heavy enough).
# --test-timeout: a test that hangs (a server bug, for instance) fails after
# 3 minutes instead of holding the whole run.
FB="$FB" timeout 1500 node --test --test-concurrency=1 --test-timeout=180000 --test-reporter=./test/reporter.mjs test/
# Again as an unprivileged user (a rootless server), the core files only.
if [ "$(id -u)" = 0 ] && id fbtest >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  home=$(mktemp -d /tmp/fbnode-home.XXXXXX); chown fbtest "$home"
  setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env -- \
    env PATH="$PATH" HOME="$home" FB="$FB" FLUEBOX_TEST_TAG=fbtest \
    timeout 600 node --test --test-concurrency=1 --test-timeout=180000 --test-reporter=./test/reporter.mjs \
      test/client.test.mjs test/stream.test.mjs test/flue.test.mjs test/cow.test.mjs
  rm -rf "$home"
fi
