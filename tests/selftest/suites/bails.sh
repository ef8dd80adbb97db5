# Gives up after a failure (bail): one failure, the suite itself is fine.
. "$ROOT/tests/lib.sh"
ok "first"
bail "the server did not start"
ok "never"
