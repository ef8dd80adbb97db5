# Skips because a tool scripts/deps.sh installs is missing.
. "$ROOT/tests/lib.sh"
ok "first"
if need fluebox-no-such-tool "uses the tool"; then ok "uses the tool"; fi
