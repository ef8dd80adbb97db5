# 13-cli.sh — one command-line grammar for every subcommand: --help
# everywhere, --opt=value everywhere, the same one-line errors (exit 125,
# nothing left behind), values checked before the command runs, and one line
# saying why fluebox ended a command.
. "$ROOT/tests/lib.sh"

one_line() { # NAME — the last run printed exactly one line on stderr, starting "fluebox: "
  local n; n=$(printf '%s\n' "$ERR" | grep -c .)
  case "$ERR" in "fluebox: "*) [ "$n" = 1 ] && ok "$1: one line" || fail "$1: one line" "$n lines: $ERR";; *) fail "$1: starts with fluebox:" "$ERR";; esac
}

# --- --help for every subcommand, on stdout, exit 0 --------------------------------
for cmd in "run" "learn" "session" "session create" "session ls" "session rm" "session info" \
           "exec" "cp" "serve" "profile" "profile list" "profile show" "profile check" "profile bpf"; do
  # shellcheck disable=SC2086
  run_fb $cmd --help
  case "$OUT" in "Usage: fluebox $cmd"*) [ "$RC" = 0 ] && ok "$cmd --help" || fail "$cmd --help" "exit $RC";;
    *) fail "$cmd --help" "exit $RC: $(printf %s "$OUT$ERR" | head -c 200)";; esac
done
run_fb run -h
case "$OUT" in *"--mem SIZE"*"--report FILE"*) ok "run -h lists the options";; *) fail "run -h lists the options" "$OUT";; esac
run_fb session create --help
case "$OUT" in *"--report"*|*"--cow-upper"*|*"--net-log"*) fail "session create --help lists only what a session accepts" "$OUT";;
  *"--workspace DIR"*"--ttl DURATION"*|*"--ttl DURATION"*"--workspace DIR"*) ok "session create --help lists only what a session accepts";;
  *) fail "session create --help lists its options" "$OUT";; esac
run_fb run -- --help
[ "$RC" = 127 ] && ok "run -- --help: --help after -- belongs to the command" || fail "run -- --help" "exit $RC $ERR"

# --- --opt=value and --opt value mean the same ---------------------------------------
expect_out "run --opt=value" "fluebox-eq" run --hostname=fluebox-eq --mem=64M -- hostname
expect_out "run -q and --opt value" "fluebox-sp" run -q --hostname fluebox-sp -- hostname
expect_out "run --cwd /" "/" run --cwd / -- pwd
expect_out "run --cwd=/tmp" "/tmp" run --cwd=/tmp -- pwd

# --- errors: one line, 125, nothing left behind ------------------------------------
for cmd in "run" "learn --out=$T/l.json" "session create" "session ls" "exec" "cp" "serve" "profile show"; do
  # shellcheck disable=SC2086
  expect_err "$cmd: unknown option" 125 "unknown option --frobnicate" $cmd --frobnicate; one_line "$cmd: unknown option"
done
expect_err "a flag given a value" 125 "--cow takes no value" run --cow=yes -- true; one_line "flag with value"
expect_err "an option without its value" 125 "--hostname needs a value" run --hostname; one_line "missing value"
expect_err "an ambiguous abbreviation" 125 "ambiguous option --ne" run --ne x -- true
expect_err "--changes without --cow" 125 "--changes needs --cow" run --changes "$T/changes.json" -- true; one_line "--changes without --cow"
[ -e "$T/changes.json" ] && fail "--changes without --cow writes nothing" || ok "--changes without --cow writes nothing"
expect_err "--allow-net with a URL" 125 "a pattern is a host name, not a URL (e.g. --allow-net example.com)" run --allow-net https://example.com/x -- true
one_line "--allow-net with a URL"
for o in mem disk fsize pids nofile; do
  expect_err "--$o 0 is refused" 125 "--$o 0: 0 is not a limit" run --$o 0 -- true
done
expect_err "a session refuses --report before connecting" 125 "--report is not available for sessions" session create --socket "$T/none.sock" --report "$T/r.json"
expect_err "a session refuses --net-log" 125 "--net-log is not available for sessions" session create --socket "$T/none.sock" --net-log "$T/n.log"
expect_err "a session refuses --cow-upper" 125 "--cow-upper is not available for sessions" session create --socket "$T/none.sock" --cow-upper "$T"

# --report to a path that cannot be written: refused before the command runs.
mkdir -p "$T/ws"; chmod 777 "$T/ws"
expect_err "--report into a missing directory" 125 "--report $T/nodir/r.json: No such file or directory" \
  run --workspace "$T/ws" --report "$T/nodir/r.json" -- touch /workspace/ran
one_line "--report into a missing directory"
[ -e "$T/ws/ran" ] && fail "--report unwritable: the command did not run" "it ran" || ok "--report unwritable: the command did not run"
expect_err "--report to a directory" 125 "Is a directory" run --report "$T" -- true
if ! as_root; then
  mkdir -p "$T/ro"; chmod 555 "$T/ro"
  expect_err "--report into a read-only directory" 125 "Permission denied" run --report "$T/ro/r.json" -- true
  [ -e "$T/ro/r.json" ] && fail "nothing written into the read-only directory" || ok "nothing written into the read-only directory"
fi
no_leftovers "bad options leave nothing behind"

# --- why a run ended -----------------------------------------------------------------
expect_err "timeout: 124" 124 "fluebox: the command timed out after 300 ms" run --timeout 300ms -- sleep 30
one_line "timeout"
run_fb run -q --timeout 300ms -- sleep 30
[ "$RC" = 124 ] && [ -z "$ERR" ] && ok "timeout with -q: no line" || fail "timeout with -q: no line" "exit $RC: $ERR"
if as_root; then
  # tail of /dev/zero (no newline) keeps everything in memory.
  run_fb run --mem 32M -- tail /dev/zero
  case "$RC:$ERR" in "137:fluebox: the command ran out of memory (--mem 32M) and was killed by the OOM killer; exit 137") ok "OOM: 137 and one line";;
    *) fail "OOM: 137 and one line" "exit $RC: $ERR";; esac
fi

# --- a missing cgroup delegation is said once per user and boot --------------------
# (as the test user, who has none here; as root, simulated with FLUEBOX_CGROUP=none)
if as_root; then export FLUEBOX_CGROUP=none; fi
mkdir -p "$T/xdg1" "$T/xdg2"; chmod 700 "$T/xdg1" "$T/xdg2"; as_root || chown "$FB_AS" "$T/xdg1" "$T/xdg2"
export XDG_RUNTIME_DIR=$T/xdg1
run_fb run --mem 64M -- true
case "$ERR" in *"limits not applied"*"once per boot"*) ok "no delegation: warned the first time";; *) fail "no delegation: warned the first time" "$ERR";; esac
run_fb run --mem 64M --report "$T/r2.json" -- true
case "$ERR" in *"limits not applied"*) fail "no delegation: not warned again" "$ERR";; *) ok "no delegation: not warned again";; esac
grep -q '"limits_not_applied":\["memory"' "$T/r2.json" && ok "no delegation: the report still says so" || fail "no delegation: the report still says so" "$(head -c 300 "$T/r2.json")"
XDG_RUNTIME_DIR=$T/xdg2 run_fb run --mem 64M -- true
case "$ERR" in *"limits not applied"*) ok "no delegation: warned again for another user directory";; *) fail "no delegation: warned again for another user directory" "$ERR";; esac
unset FLUEBOX_CGROUP

# --- uid 0 of a user namespace does not take root's directory in the shared /tmp -----
# (the user's directory is named for its uid one namespace up: src/base/userdir.c)
if as_root && id fbtest >/dev/null 2>&1 && command -v unshare >/dev/null; then
  fbt=$(id -u fbtest)
  owner0() { stat -c %u /tmp/fluebox-0 2>/dev/null; }
  if [ "$(owner0)" = "$fbt" ]; then
    skip "uid 0 of an unshare -r namespace keeps out of /tmp/fluebox-0" "a /tmp/fluebox-0 of uid $fbt is already there"
  else
    # serve makes the user's directory for its default socket; it says
    # "ready" (--ready-fd) once it listens there, and is stopped then.
    : > "$T/ns.ready"; chmod 666 "$T/ns.ready"
    setpriv --reuid=fbtest --regid=fbtest --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp FB="$FB" R="$T/ns.ready" unshare -r sh -c '
        "$FB" serve --pool 0 --ready-fd 3 3>>"$R" & p=$!
        i=0; while ! grep -q ready "$R" && kill -0 $p 2>/dev/null && [ $i -lt 600 ]; do sleep 0.05; i=$((i+1)); done
        kill $p; wait $p' >"$T/ns.out" 2>&1
    if [ "$(owner0)" = "$fbt" ]; then
      fail "uid 0 of an unshare -r namespace keeps out of /tmp/fluebox-0" "the test user made /tmp/fluebox-0: $(cat "$T/ns.out")"
    elif [ "$(stat -c %u "/tmp/fluebox-$fbt" 2>/dev/null)" = "$fbt" ]; then
      ok "uid 0 of an unshare -r namespace keeps out of /tmp/fluebox-0"
    else
      fail "uid 0 of an unshare -r namespace keeps out of /tmp/fluebox-0" "no /tmp/fluebox-$fbt either: $(cat "$T/ns.out")"
    fi
  fi
fi

# --- the default socket is only looked for in a private directory ------------------
mkdir -p "$T/xdg-open"; chmod 755 "$T/xdg-open"; as_root || chown "$FB_AS" "$T/xdg-open"
XDG_RUNTIME_DIR=$T/xdg-open run_fb session ls
case "$RC:$ERR" in 125:*"$T/xdg-open"*) fail "an XDG_RUNTIME_DIR others can enter is not used" "$ERR";;
  125:*) ok "an XDG_RUNTIME_DIR others can enter is not used";; *) fail "an XDG_RUNTIME_DIR others can enter is not used" "exit $RC: $ERR";; esac

# --- the CLI talks only to its own user's server (or root's, or FLUEBOX_SERVER_UID's) --
if as_root && id fbtest >/dev/null 2>&1 && [ -x /usr/bin/python3 ]; then
  other=$(id -u fbtest)
  mkdir -p "$T/fake"; chown fbtest "$T/fake"
  # A listener of another user that records what it is sent and hangs up.
  setpriv --reuid=fbtest --regid=fbtest --clear-groups -- /usr/bin/python3 -c '
import socket, sys
s = socket.socket(socket.AF_UNIX); s.bind(sys.argv[1]); s.listen(4)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    d = c.recv(65536)
    if d: open(sys.argv[2], "ab").write(d)
    c.close()' "$T/fake/s.sock" "$T/fake/got" > "$T/fake.ready" &
  FAKE=$!
  at_exit "kill $FAKE 2>/dev/null"
  wait_for 10 grep -q ready "$T/fake.ready"
  expect_err "a server of another uid is refused" 125 "refusing to talk to the server at $T/fake/s.sock: it runs as uid $other" session ls --socket "$T/fake/s.sock"
  one_line "a server of another uid is refused"
  [ -e "$T/fake/got" ] && fail "nothing was sent to it" "$(head -c 200 "$T/fake/got")" || ok "nothing was sent to it"
  FLUEBOX_SERVER_UID=$other run_fb session ls --socket "$T/fake/s.sock"
  case "$ERR" in *refusing*) fail "FLUEBOX_SERVER_UID trusts it" "$ERR";; *) ok "FLUEBOX_SERVER_UID trusts it";; esac
  kill "$FAKE" 2>/dev/null; wait "$FAKE" 2>/dev/null
else
  skip "the CLI refuses a server of another uid" "needs root, the user fbtest and /usr/bin/python3"
fi

# --- the version, every subcommand in --help, completion (issue 29) ---------------
run_fb --version
case "$OUT" in "fluebox $(sed -n 1p "$ROOT/VERSION") (commit "*) ok "--version: VERSION and the commit";;
  *) fail "--version: VERSION and the commit" "$OUT";; esac
run_fb --help
missing=""
for c in run learn profile serve "session create" "session publish" "session diff" "session fork" exec cp mcp "record verify" oci doctor completion; do
  case "$OUT" in *"fluebox $c"*) ;; *) missing="$missing $c";; esac
done
[ -z "$missing" ] && ok "--help lists every subcommand" || fail "--help lists every subcommand" "missing:$missing"
for sh in bash zsh fish; do expect_out "completion $sh" "fluebox" completion "$sh"; done
expect_out "completion: mcp (a layer above cli) with its own options" "--mcp-allow-commit" completion bash
expect_err "completion of an unknown shell" 125 "expected one of bash, zsh or fish" completion tcsh; one_line "completion tcsh"
run_fb completion bash
printf '%s\n' "$OUT" > "$T/comp.bash"
# The bash script completes from the tables: an option, a value, a subcommand.
got=$(bash -c '. "$1"; COMP_WORDS=(fluebox run --worksp); COMP_CWORD=2; _fluebox; echo "${COMPREPLY[*]}";
  COMP_WORDS=(fluebox run --net ""); COMP_CWORD=3; _fluebox; echo "${COMPREPLY[*]}";
  COMP_WORDS=(fluebox ses); COMP_CWORD=1; _fluebox; echo "${COMPREPLY[*]}";
  COMP_WORDS=(fluebox run --profile st); COMP_CWORD=3; _fluebox; echo "${COMPREPLY[*]}"' _ "$T/comp.bash" 2>&1)
[ "$got" = "--workspace
none allow host
session
standard strict" ] && ok "bash completion: options, values, subcommands, profiles" || fail "bash completion" "$got"

# --- docker and podman spellings: the same meaning as fluebox's options ------------
mkdir -p "$T/vol" && echo inside > "$T/vol/f" && chmod -R a+rX "$T/vol"
# HOME alone: copied from fluebox's own environment (whoever runs it has one).
printf '# a comment\nFROM_FILE=1\n\nHOME\n' > "$T/env.list"; chmod a+r "$T/env.list"
run_fb run -e A=a --env-file "$T/env.list" -- sh -c 'echo "$A $FROM_FILE $HOME"'
case "$OUT" in "a 1 /"*) true;; *) false;; esac && [ "$OUT" != "a 1 /home/fluebox" ] && ok "-e and --env-file (K=V, # comments, K alone passes K)" || fail "-e and --env-file" "$OUT $ERR"
run_fb run -v "$T/vol:/data:ro" -w /data -- sh -c 'cat f; pwd; touch x 2>/dev/null && echo writable || echo read-only'
[ "$OUT" = "inside
/data
read-only" ] && ok "-v SRC:DST:ro and -w" || fail "-v SRC:DST:ro and -w" "$OUT $ERR"
expect_out "-u UID:GID" "4242 4343" run -u 4242:4343 -- sh -c 'echo $(id -u) $(id -g)'
expect_out "--network none" "fluebox" run --network none -i -- hostname
expect_err "--network bridge is refused, naming fluebox's own" 125 "--net allow --allow-net" run --network bridge -- true; one_line "--network bridge"
expect_err "-u with a name is refused" 125 "--user bob: expected UID[:GID] as numbers" run -u bob -- true; one_line "-u name"
expect_err "-v without DST is refused" 125 "expected SRC:DST[:ro]" run -v "$T/vol" -- true; one_line "-v SRC"
expect_err "--read-only says what fluebox does instead" 125 "always read-only" run --read-only -- true; one_line "--read-only"
# --- an unknown option or command names the closest known one ----------------------
expect_err "a misspelt option: did you mean" 125 "unknown option --workspce: did you mean --workspace?" run --workspce /tmp -- true; one_line "did you mean"
expect_err "a misspelt session option" 125 "did you mean --socket?" session ls --sockte /x; one_line "session did you mean"
expect_err "nothing close: no guess" 125 "unknown option --zzzzzzzz (see" run --zzzzzzzz -- true
expect_err "a misspelt command: did you mean" 125 "did you mean \"session\"?" sesion ls; one_line "misspelt command"
no_leftovers "nothing left behind"
