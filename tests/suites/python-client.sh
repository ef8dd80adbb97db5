#!/bin/bash
# tests/suites/python-client.sh — the Python client's tests (bindings/python,
# unittest) against a real `fluebox serve`, the whole suite with each
# interpreter: the python3 on PATH, Debian's /usr/bin/python3 and pyenv's 3.9
# if present, and again as an unprivileged user -- the heavy tests (offline
# pip install into a venv, 20 parallel sessions, the 50 MB round trip) too,
# about a minute per pass (they were skipped as "quick run" in all but the
# first pass). Prints "ok - ..." /
# "not ok - ..." lines for tests/run.sh.
# Environment: FB = the fluebox binary (set by tests/run.sh).
# timeout: 2500
set -u
cd "$(dirname "$0")/../.."
: "${FB:=$(pwd)/fluebox}"
export FB
. tests/lib.sh
pys=()
cands=(python3 /usr/bin/python3)
# The oldest supported Python (3.9) too, when pyenv has one.
if command -v pyenv >/dev/null 2>&1; then
  for d in "$(pyenv root)"/versions/3.9.*/bin/python3; do [ -x "$d" ] && cands+=("$d"); done
fi
for py in "${cands[@]}"; do
  p=$(command -v "$py" 2>/dev/null) || continue
  real=$("$p" -c 'import sys; print(sys.executable)' 2>/dev/null) || continue
  dup=
  for q in "${pys[@]+"${pys[@]}"}"; do [ "$q" = "$real" ] && dup=1; done
  [ -z "$dup" ] && pys+=("$real")
done
[ ${#pys[@]} -gt 0 ] || skip_all "missing: python3"
# The first interpreter's servers are the ASan/UBSan build when there is one.
first=1
for py in "${pys[@]}"; do
  ver=$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
  case "$py" in /usr/bin/*) ver="$ver-system" ;; esac
  if [ -n "$first" ]; then
    # The full run's servers are the ASan/UBSan build when there is one;
    # their reports go to files, checked right after.
    if [ -n "${FB_ASAN:-}" ] && [ -x "$FB_ASAN" ]; then
      sanitizer_logs
      FB=$FB_ASAN sub_suite "python client tests (py$ver, ASan/UBSan server)" 1200 "$py" bindings/python/tests/run.py --tag "py$ver"
      no_sanitizer_reports "python client tests: no sanitizer report from the servers"
      unset ASAN_OPTIONS UBSAN_OPTIONS
    else
      sub_suite "python client tests (py$ver)" 1200 "$py" bindings/python/tests/run.py --tag "py$ver"
    fi
    first=
  else
    sub_suite "python client tests (py$ver)" 1200 "$py" bindings/python/tests/run.py --tag "py$ver"
  fi
done
# Again as an unprivileged user (a rootless server).
if [ "$(id -u)" = 0 ] && id fbtest >/dev/null 2>&1 && command -v setpriv >/dev/null 2>&1; then
  as_user=(setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp FB="$FB")
  for py in "${pys[@]}"; do   # the first interpreter that user can run
    if "${as_user[@]}" "$py" -c 'pass' 2>/dev/null; then
      sub_suite "python client tests as fbtest" 1200 "${as_user[@]}" "$py" bindings/python/tests/run.py --tag "fbtest"
      break
    fi
  done
fi
