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
# Control characters: refused in a host name and a variable's name (a
# value may hold a newline), and an error quoting a value is always one line.
expect_err "a host name with a newline" 125 "--hostname a\\nb: control characters" run --hostname $'a\nb' -- true
expect_err "a host name with a tab" 125 "control characters" run --hostname $'a\tb' -- true
expect_err "a variable name with a control character" 125 "--env A\\x01: control characters are not allowed in a variable name" run --env $'A\x01=1' -- true
expect_err "a variable name with a newline (--env-pass)" 125 "--env-pass A\\nB: expected a variable name" run --env-pass $'A\nB' -- true
expect_out "a value may hold a newline" "multi|line" run -q --env $'A=multi\nline' -- sh -c 'printf %s "$A" | tr "\n" "|"'
for bad in "--mem" "--timeout" "--cpus" "--allow-net" "--bind" "--net" "--profile" "--workspace"; do
  run_fb run "$bad" $'x\ny' -- true
  if [ "$RC" = 125 ] && [ "$(printf '%s\n' "$ERR" | wc -l)" = 1 ] && [[ $ERR == *'x\ny'* ]]; then
    ok "$bad with a newline in its value: one line, the newline shown as \\n"
  else
    fail "$bad with a newline in its value: one line" "rc=$RC, $(printf '%s\n' "$ERR" | wc -l) lines: $ERR"
  fi
done
expect_err "command not found inside" 127 "command not found" run -- /no/such/program
expect_err "directory is not executable" 126 "Permission denied" run -- /usr

# No user namespaces: simulated inside a user namespace whose limit is 0
# (user.max_user_namespaces is per user namespace, so the host is untouched).
if as_root && command -v unshare >/dev/null; then
  out=$(unshare -Ur sh -c "echo 0 > /proc/sys/user/max_user_namespaces && '$FB' run -- true" 2>&1); rc=$?
  case "$out" in *"user namespaces are disabled"*) [ $rc = 125 ] && ok "no user namespaces: clear error, 125" || fail "no userns rc" "$rc";; *) fail "no user namespaces: clear error" "$rc $out";; esac
fi
# A full disk: --report and --changes are written whole or not at all, and
# a file that could not be written fails the run (125) with one clear line.
# The disk is a 64 KiB tmpfs, filled up, mounted on a fresh directory of
# this test in a throwaway mount namespace (never over a host path).
AS=(); [ "$FB_AS" = root ] || AS=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp)
mkdir -p "$T/full" "$T/fullws"; seq 1 100 > "$T/fullws/big"; [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T/fullws"
full_run() { # fluebox ARGS as FB_AS, with $T/full full; sets RC, ERR, LS (what is in it), KEEP
  unshare -m --propagation private bash -c '
    d=$1; shift
    mount -t tmpfs -o size=64k,mode=1777 fluebox-test-full "$d" || exit 99
    echo old > "$d/keep.json"; chmod 666 "$d/keep.json"
    head -c 1000000 /dev/zero > "$d/fill" 2>/dev/null
    "$@" >"$d.out" 2>"$d.err" </dev/null; echo $? > "$d.rc"
    ls -A "$d" | tr "\n" " " > "$d.ls"; cat "$d/keep.json" > "$d.keep"' _ "$T/full" "${AS[@]}" "$FB" "$@"
  RC=$(cat "$T/full.rc" 2>/dev/null); ERR=$(cat "$T/full.err" 2>/dev/null)
  LS=$(cat "$T/full.ls" 2>/dev/null); KEEP=$(cat "$T/full.keep" 2>/dev/null)
}
full_check() { # NAME WHAT(--report/--changes) FILE — the outcome of the last full_run
  if [ "$RC" = 125 ] && [ "$(printf '%s\n' "$ERR" | tail -n 1)" = "fluebox: $2 $T/full/$3: No space left on device" ] &&
     [ "$LS" = "fill keep.json " ] && [ "$KEEP" = old ]; then ok "$1"
  else fail "$1" "rc=$RC files=[$LS] keep=[$(printf %s "$KEEP" | head -c 60)] stderr: $ERR"; fi
}
if command -v unshare >/dev/null; then
  full_run run --report "$T/full/keep.json" -- true
  full_check "full disk: --report fails (125), the old report is intact" --report keep.json
  full_run run --report "$T/full/new.json" -- true
  full_check "full disk: --report fails (125), no empty or partial file" --report new.json
  if cow_needs_upper; then
    skip "full disk: --changes is written whole or not at all" "tmpfs on this kernel has no user xattrs (Linux < 6.6): --cow needs --cow-upper here (93-cow-upper, tests/vm)"
  else
    full_run run --workspace "$T/fullws" --cow --changes "$T/full/keep.json" -- sh -c 'seq 1 20000 > big'
    full_check "full disk: --changes fails (125), the old file is intact" --changes keep.json
    full_run run --workspace "$T/fullws" --cow --changes "$T/full/c.patch" -- sh -c 'seq 1 20000 > big'
    full_check "full disk: --changes (a patch) fails (125), no partial file" --changes c.patch
    [ "$(cat "$T/fullws/big" | wc -l)" = 100 ] && ok "full disk: the workspace is untouched" || fail "full disk: the workspace is untouched"
  fi
fi

no_leftovers "bad input leaves nothing behind"
