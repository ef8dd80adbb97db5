# Dies on an unset variable under set -u after two checks.
. "$ROOT/tests/lib.sh"
ok "first"
ok "second"
echo "$no_such_variable"
ok "third"
