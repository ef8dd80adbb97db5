#!/bin/bash
# 74-session-cp.sh — fluebox cp -r: directories into and out of a session as
# a tar stream; symlinks stay symlinks and are never followed; a hostile
# stream from the session (the session's own "tar" on its PATH) cannot write
# outside the destination or through a link on the host.
. "$ROOT/tests/lib.sh"

command -v python3 >/dev/null || skip_all "missing: python3"
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi
as_user() {
  if [ "$FB_AS" = root ]; then "$@"; else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"
  fi
}
chmod 755 "$T"
SOCK=$T/fb.sock
"${FBCMD[@]}" serve --socket="$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>"$T/serve.err" 3>"$T/ready" &
SRV=$!
at_exit 'kill $SRV 2>/dev/null'
wait_for 10 grep -q ready "$T/ready" || bail "serve did not start: $(cat "$T/serve.err")"

# A tree with what trips copies up: nested and empty directories, a
# restrictive mode, a long name, symlinks out of the tree and within it, a
# fifo.
L=$T/tree
long=$(printf 'n%.0s' $(seq 150))
mkdir -p "$L/src/pkg/empty" "$L/src/$long"
echo hello > "$L/src/a.txt"
head -c 300000 /dev/urandom > "$L/src/pkg/blob.bin"
echo deep > "$L/src/$long/$long.txt"
ln -s /etc/shadow "$L/src/out-link"
ln -s a.txt "$L/src/in-link"
chmod 700 "$L/src/pkg"
chmod 751 "$L/src/$long"
mkfifo "$L/src/fifo"
[ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T"

run_fb session create --socket "$SOCK"
ID=$OUT
expect_err "cp of a directory without -r: 125 and why" 125 "use cp -r" cp --socket "$SOCK" "$L/src" "$ID:src"
run_fb cp --socket "$SOCK" -r "$L/src" "$ID:src"
[ "$RC" = 0 ] && ok "cp -r into the session" || fail "cp -r into the session" "$ERR"
case "$ERR" in *"fifo: not a file, directory or symlink: skipped"*) ok "cp -r says what it skipped";; *) fail "cp -r names the fifo" "$ERR";; esac
x() { run_fb exec --socket "$SOCK" "$ID" -- sh -c "$1"; }
x 'cat src/a.txt src/'"$long/$long"'.txt; readlink src/out-link src/in-link; stat -c %a src/pkg src/'"$long"'; [ -d src/pkg/empty ] && echo empty; sha256sum < src/pkg/blob.bin'
want="hello
deep
/etc/shadow
a.txt
700
751
empty
$(sha256sum < "$L/src/pkg/blob.bin")"
[ "$OUT" = "$want" ] && ok "cp -r in: contents, long names, symlinks as symlinks, modes, empty dirs" || fail "cp -r in" "$OUT"
x 'cat src/out-link 2>&1 || true'
case "$OUT" in *root:*) fail "the copied symlink does not reach a host file" "$OUT";; *) ok "the copied symlink does not reach a host file";; esac
run_fb cp --socket "$SOCK" -r "$L/src" "$ID:src"
x '[ -f src/src/a.txt ] && echo nested'
[ "$OUT" = nested ] && ok "cp -r into an existing directory puts it under its own name" || fail "cp -r into an existing dir" "$OUT"

# Out again, and compare.
run_fb cp --socket "$SOCK" -r "$ID:src" "$T/back"
[ "$RC" = 0 ] && ok "cp -r out of the session" || fail "cp -r out" "$ERR"
rm -rf "$T/back/src"
rm -f "$L/src/fifo"
if diff -r --no-dereference "$L/src" "$T/back" >/dev/null 2>&1; then ok "cp -r out: the same tree (symlinks compared as links)"; else
  fail "cp -r out: the same tree" "$(diff -r --no-dereference "$L/src" "$T/back" 2>&1 | head -5)"; fi
[ "$(readlink "$T/back/out-link")" = /etc/shadow ] && [ -L "$T/back/out-link" ] && ok "cp -r out: a symlink stays a symlink" || fail "symlink out" "$(ls -la "$T/back")"
[ "$(stat -c %a "$T/back/pkg")" = 700 ] && ok "cp -r out: directory modes" || fail "dir modes out" "$(stat -c %a "$T/back/pkg")"
mkdir -p "$T/into"
[ "$FB_AS" = root ] || chown "$FB_AS" "$T/into"
run_fb cp --socket "$SOCK" -r "$ID:src" "$T/into"
[ -f "$T/into/src/a.txt" ] && ok "cp -r out into an existing directory: under its own name" || fail "cp -r out into dir" "$(ls -R "$T/into" | head)"

# A hostile session: its PATH finds its own "tar", which writes a stream
# that tries every way out of the destination.
echo "host secret" > "$T/victim.txt"
mkdir -p "$T/victim-dir" "$T/dest"
ln -s "$T/victim-dir" "$T/dest/pre"
[ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$T/victim-dir" "$T/dest" "$T/victim.txt"
run_fb session create --socket "$SOCK" --env PATH=/workspace/bin:/usr/bin:/bin
EV=$OUT
run_fb exec --socket "$SOCK" "$EV" -- sh -c 'mkdir -p bin a1 a2 a3 a4 && cat > bin/tar <<EOF
#!/usr/bin/python3
import io, sys, tarfile
t = tarfile.open(fileobj=sys.stdout.buffer, mode="w|")
def add(name, data=b"pwned\n", **kw):
    i = tarfile.TarInfo(name)
    for k, v in kw.items(): setattr(i, k, v)
    if i.type == tarfile.REGTYPE:
        i.size = len(data); t.addfile(i, io.BytesIO(data))
    else:
        t.addfile(i)
attack = sys.argv[-1]
add(attack + "/ok.txt", b"fine\n")
if attack == "a1":   # a symlink of the stream, then a file through it
    add(attack + "/link", type=tarfile.SYMTYPE, linkname="'"$T"'/victim-dir")
    add(attack + "/link/pwned.txt")
elif attack == "a2": # through a symlink that was in the destination already
    add("pre/pwned.txt")
elif attack == "a3": # up and out
    add(attack + "/../../escape.txt")
else:                # an absolute path lands inside the destination
    add("'"$T"'/victim.txt")
t.close()
EOF
chmod +x bin/tar'
for a in a1 a2 a3; do
  run_fb cp --socket "$SOCK" -r "$EV:$a" "$T/dest"
  [ "$RC" = 125 ] && ok "a hostile stream ($a): cp -r fails (125)" || fail "hostile stream ($a) rc" "rc=$RC $ERR"
done
run_fb cp --socket "$SOCK" -r "$EV:a1" "$T/dest"
case "$ERR" in *"refusing to go through a symlink"*) ok "a hostile stream: going through a symlink is refused, and said";; *) fail "hostile: the reason" "$ERR";; esac
run_fb cp --socket "$SOCK" -r "$EV:a3" "$T/dest"
case "$ERR" in *'refusing a path with ".."'*) ok "a hostile stream: .. is refused, and said";; *) fail "hostile: the .. reason" "$ERR";; esac
run_fb cp --socket "$SOCK" -r "$EV:a4" "$T/dest"
[ "$RC" = 0 ] && [ -f "$T/dest/${T#/}/victim.txt" ] && ok "an absolute path in the stream lands inside the destination" || fail "absolute member" "rc=$RC $ERR"
left=$(ls -A "$T/victim-dir"; cat "$T/victim.txt")
[ "$left" = "host secret" ] && ok "a hostile stream writes nothing through a link, nothing to an absolute path" || fail "hostile: written outside" "$left"
[ ! -e "$T/escape.txt" ] && ok "a hostile stream writes nothing outside the destination" || fail "hostile: .. escape"
[ -L "$T/dest/pre" ] && [ "$(readlink "$T/dest/pre")" = "$T/victim-dir" ] && ok "a symlink already in the destination is left alone" || fail "pre-existing link"

"${FBCMD[@]}" session rm --socket "$SOCK" "$ID" "$EV" >/dev/null 2>&1
kill -TERM $SRV; wait $SRV
no_leftovers "cp -r leaves nothing behind"
