# tests/tap.sh — the result format every test suite speaks, and its one
# reader (sourced by tests/run.sh and tests/lib.sh; bash). tests/README.md
# says the same for people writing tests.
#
# A suite is a program. On stdout it prints one line per result:
#   ok - NAME                          a check that passed
#   not ok - NAME: WHY                 a check that failed
#   ok - NAME # SKIP REASON            not run: this machine lacks something
#                                      the project cannot install (no cgroup2
#                                      mount, not root, a kernel feature)
#   ok - NAME # SKIP missing: TOOL ... not run: TOOL, which scripts/deps.sh
#                                      installs, is missing. Under CI=true
#                                      this is a failure.
# ("# skip" in any case is read the same.) Other lines are ignored, except:
#   1..N                               the plan: exactly N results (at the
#                                      start or the end, once)
#   1..0 # SKIP REASON                 the whole suite did not run (REASON as
#                                      above, "missing: TOOL" included)
#   # end of suite                     the end marker: the suite ran to its
#                                      end (tests/lib.sh prints it)
#   Bail out! REASON                   the suite gave up: a failure
# A suite passes when it exits 0 (or non-zero having printed a failure), was
# not killed, and printed its end marker or a plan its results match. Anything
# else — it died, was killed by its timeout, exited early, printed fewer
# results than planned — is one more failure, named after the suite.

# tap_read FILE STATUS — reads a suite's stdout (FILE) and exit status.
# Sets TAP_PASS, TAP_FAIL, TAP_SKIP (counts of result lines), the arrays
# TAP_FAILED (the "not ok" lines), TAP_SKIPPED (the skip lines),
# TAP_MISSING (the "missing: TOOL" skips), TAP_RESULTS (every result line,
# in order) and TAP_BROKEN: why the suite as a whole failed, or "".
tap_read() {
  local file=$1 status=$2 line plan="" plans=0 marker="" bail="" whole="" lc
  TAP_PASS=0; TAP_FAIL=0; TAP_SKIP=0; TAP_BROKEN=""
  TAP_FAILED=(); TAP_SKIPPED=(); TAP_MISSING=(); TAP_RESULTS=()
  while IFS= read -r line || [ -n "$line" ]; do
    line=${line%$'\r'}
    case "$line" in
      "not ok"|"not ok "*)
        TAP_FAIL=$((TAP_FAIL + 1)); TAP_FAILED+=("$line"); TAP_RESULTS+=("$line") ;;
      "ok"|"ok "*)
        TAP_RESULTS+=("$line")
        lc=${line,,}
        case "$lc" in
          *" # skip"*)
            TAP_SKIP=$((TAP_SKIP + 1)); TAP_SKIPPED+=("$line")
            case "${lc#*" # skip"}" in " missing:"*) TAP_MISSING+=("$line") ;; esac ;;
          *) TAP_PASS=$((TAP_PASS + 1)) ;;
        esac ;;
      1..[0-9]*)
        plans=$((plans + 1)); plan=${line#1..}; plan=${plan%%[!0-9]*}
        lc=${line,,}
        case "$plan/$lc" in
          0/*"# skip"*) whole="ok - the whole suite # SKIP${line#*\# [Ss][Kk][Ii][Pp]}" ;;
        esac ;;
      "# end of suite"*) marker=1 ;;
      "Bail out!"*) bail=$line ;;
    esac
  done < "$file"
  local n=$((TAP_PASS + TAP_FAIL + TAP_SKIP))
  if [ -n "$whole" ]; then
    TAP_SKIP=$((TAP_SKIP + 1)); TAP_SKIPPED+=("$whole"); TAP_RESULTS+=("$whole")
    case "${whole,,}" in *"# skip missing:"*) TAP_MISSING+=("$whole") ;; esac
  fi
  if [ "$status" = 124 ]; then
    TAP_BROKEN="killed by its timeout after $n results"
  elif [ "$status" -gt 128 ] 2>/dev/null; then
    TAP_BROKEN="killed by signal $((status - 128)) after $n results"
  elif [ -n "$bail" ]; then
    TAP_BROKEN="gave up: $bail"
  elif [ "$plans" -gt 1 ]; then
    TAP_BROKEN="printed $plans plans"
  elif [ -n "$plan" ] && [ "$plan" != "$n" ]; then
    TAP_BROKEN="planned $plan results, printed $n (exit $status)"
  elif [ -z "$plan" ] && [ -z "$marker" ]; then
    TAP_BROKEN="ended before its end (no end marker or plan; exit $status) after $n results"
  elif [ "$status" != 0 ] && [ "$TAP_FAIL" = 0 ]; then
    TAP_BROKEN="exit status $status, yet no check failed"
  fi
  return 0
}
