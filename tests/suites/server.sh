#!/bin/bash
# tests/suites/server.sh — `fluebox serve` through the wire protocol
# (tests/server/test_server.py, which runs every tests/server/test_*.py
# module in order): every method and its error paths, 50
# sessions x 20 execs, vanishing and slow clients, another uid, symlinks to
# host files, malformed input, SIGTERM/SIGKILL, memory after 10,000 requests
# and the ASan/LSan build under a workload. Prints ok/not ok lines.
# Environment: FB (the fluebox binary), FB_ASAN (the sanitizer build; by
# default fluebox-asan next to FB, or build/fluebox-asan).
# timeout: 1000
cd "$(dirname "$0")/../.." || exit 1
FB=${FB:-$(pwd)/fluebox}
. tests/lib.sh
if [ -z "${FB_ASAN:-}" ]; then
  if [ -x "$(dirname "$FB")/fluebox-asan" ]; then FB_ASAN=$(dirname "$FB")/fluebox-asan
  elif [ -x build/fluebox-asan ]; then FB_ASAN=$(pwd)/build/fluebox-asan
  else FB_ASAN=""; fi
fi
PY=/usr/bin/python3; [ -x "$PY" ] || PY=$(command -v python3)
[ -n "$PY" ] || skip_all "missing: python3"
export FB FB_ASAN
sub_suite "server tests" 900 "$PY" tests/server/test_server.py </dev/null
