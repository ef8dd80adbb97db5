# timeout: 3
# Hangs after two checks until the runner's timeout kills it.
. "$ROOT/tests/lib.sh"
ok "first"
ok "second"
exec sleep 3600
