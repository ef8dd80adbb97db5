# tests/selftest/run.sh — the runner's self-test: tests/run.sh must count a
# broken suite as a failure. Each file in tests/selftest/suites breaks the
# contract one way (exits early, dies on an unset variable, exits non-zero,
# is killed by its timeout or a signal, prints fewer results than planned,
# skips for a missing tool under CI=true, replaces lib.sh's EXIT trap, a
# sub-program that dies) or keeps it (good.sh, bails.sh); this runs them
# through tests/run.sh --suites and checks every verdict, the last line and
# the exit status.
. "$ROOT/tests/lib.sh"
S=$ROOT/tests/selftest/suites

# verdict NAME PASSED FAILED SKIPPED [WHY] — the runner's line for suite NAME
# in $T/out says these counts (and a failure line of NAME says WHY).
verdict() {
  local name=$1 want="$2 passed $3 failed $4 skipped" why=${5:-} line
  line=$(grep -E "^  $name +[0-9]+ passed" "$T/out" | head -n 1 | sed -E 's/ +/ /g; s/^ //; s/ [0-9.]+ s$//')
  if [ "$line" != "$name $want" ]; then fail "runner: $name: $want" "got '$line'"; return; fi
  if [ -n "$why" ] && ! grep -q "^  \[$name\] .*$why" "$T/out"; then
    fail "runner: $name: $want" "no failure line of $name saying '$why'"; return
  fi
  ok "runner: $name: $want${why:+ ($why)}"
}

CI=true bash "$ROOT/tests/run.sh" --suites "$S"/*.sh > "$T/out" 2>&1; rc=$?
verdict good 2 0 1
verdict bails 1 1 0 "gave up"
verdict exits-early 2 1 0 "ended before its end"
verdict dies 2 1 0 "ended before its end"
verdict exit-status 2 1 0 "exit status 3, yet no check failed"
verdict times-out 2 1 0 "killed by its timeout"
verdict killed 2 1 0 "killed by signal 9"
verdict short-plan 3 1 0 "planned 5 results, printed 3"
verdict missing-tool 1 1 0 "missing: fluebox-no-such-tool"
verdict own-trap 1 1 0 "ended before its end"
verdict sub-dies 1 1 0 "inner program: killed by signal 15"
last=$(tail -n 1 "$T/out")
if [ "$last" = "19 passed, 10 failed, 1 skipped" ] && [ "$rc" != 0 ]; then ok "runner: broken suites: the last line counts them, exit non-zero"
else fail "runner: broken suites: the last line counts them, exit non-zero" "last line '$last', exit $rc"; fi
if grep -q "^    err| .*no_such_variable: unbound variable" "$T/out"; then ok "runner: a suite that died is shown with the tail of its output"
else fail "runner: a suite that died is shown with the tail of its output" "$(grep -A3 '\[dies\]' "$T/out" | head -5)"; fi

# The good suite alone passes; without CI a missing tool is a skip.
CI= bash "$ROOT/tests/run.sh" --suites "$S/good.sh" "$S/missing-tool.sh" > "$T/out2" 2>&1; rc=$?
last=$(tail -n 1 "$T/out2")
if [ "$last" = "3 passed, 0 failed, 2 skipped" ] && [ "$rc" = 0 ]; then ok "runner: kept contract passes; a missing tool outside CI is a skip"
else fail "runner: kept contract passes; a missing tool outside CI is a skip" "last line '$last', exit $rc"; fi
