# 12-badinput.sh — bad input gets one clear line, exit 125 (or 126/127 for the
# command), and leaves nothing behind.
. "$ROOT/tests/lib.sh"

echo "not a dir" > "$T/file"

one_line() { # NAME — the last run printed exactly one line on stderr, starting "fluebox: "
  local n; n=$(printf '%s\n' "$ERR" | grep -c .)
  case "$ERR" in "fluebox: "*) [ "$n" = 1 ] && ok "$1: one line" || fail "$1: one line" "$n lines: $ERR";; *) fail "$1: starts with fluebox:" "$ERR";; esac
}

expect_err "unknown option" 125 "unknown option --frobnicate" run --frobnicate -- true; one_line "unknown option"
expect_err "missing --" 125 'missing "--" before the command' run --mem 64M; one_line "missing --"
expect_err "command without --" 125 'put the command after "--"' run true; one_line "command without --"
expect_err "empty command" 125 'no command after "--"' run --; one_line "empty command"
expect_err "empty argv[0]" 125 'no command after "--"' run -- ""
expect_err "unknown subcommand" 125 'unknown command "rnu"' rnu -- true
expect_err "missing workspace" 125 "fluebox: --workspace $T/nope: No such file or directory" run --workspace "$T/nope" -- true; one_line "missing workspace"
expect_err "workspace is a file" 125 "--workspace $T/file: Not a directory" run --workspace "$T/file" -- true
expect_err "missing bind source" 125 "--ro-bind $T/missing: No such file or directory" run --ro-bind "$T/missing:/x" -- true
expect_err "relative bind destination" 125 "must be absolute" run --ro-bind "$T/file:rel" -- true
expect_err "dotdot bind destination" 125 '".." is not allowed' run --ro-bind "$T/file:/a/../etc/x" -- true
expect_err "tmpfs size does not parse" 125 '--tmpfs /x:12Q: bad size "12Q"' run --tmpfs /x:12Q -- true
expect_err "option without value" 125 "--mem needs a value" run --mem -- true
expect_err "flag with a value" 125 "--cow takes no value" run --cow=1 -- true
expect_err "bad uid" 125 "--uid abc: expected a numeric id" run --uid abc -- true
expect_err "host id 0 refused" 125 "never maps host root" run --host-id 0 -- true
expect_err "bad env" 125 "--env NOEQUALS: expected K=V" run --env NOEQUALS -- true
expect_err "bad net mode" 125 "--net wifi: expected none, allow or host" run --net wifi -- true
expect_err "command not found inside" 127 "command not found" run -- /no/such/program
expect_err "directory is not executable" 126 "Permission denied" run -- /usr

# No user namespaces: simulated inside a user namespace whose limit is 0
# (user.max_user_namespaces is per user namespace, so the host is untouched).
if as_root && command -v unshare >/dev/null; then
  out=$(unshare -Ur sh -c "echo 0 > /proc/sys/user/max_user_namespaces && '$FB' run -- true" 2>&1); rc=$?
  case "$out" in *"user namespaces are disabled"*) [ $rc = 125 ] && ok "no user namespaces: clear error, 125" || fail "no userns rc" "$rc";; *) fail "no user namespaces: clear error" "$rc $out";; esac
fi
no_leftovers "bad input leaves nothing behind"
