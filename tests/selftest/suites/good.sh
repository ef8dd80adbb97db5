# A suite that keeps the contract: two passes, one skip, runs to its end.
. "$ROOT/tests/lib.sh"
ok "first"
ok "second"
skip "third" "this machine lacks it"
