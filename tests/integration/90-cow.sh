#!/bin/bash
# 90-cow.sh — copy-on-write workspaces: the host directory is untouched, the
# changes come out as JSON and as a git patch, and every kind of change
# round-trips: committing gives the tree the same commands give when run
# directly, and the patch applied with `git apply` to a fresh copy gives it
# too (minus empty directories, which a patch cannot carry).
. "$(dirname "$0")/../lib.sh"
cow_needs_upper && skip_all "tmpfs on this kernel has no user xattrs (Linux < 6.6): --cow needs --cow-upper here (93-cow-upper, tests/vm)"

# As FB_AS, for commands run outside run_fb.
as_user() {
  if [ "$FB_AS" = root ]; then "$@"; else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"
  fi
}
own() { [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$@"; }

# A small repository with one of everything.
mkrepo() {
  mkdir -p "$1"/d/sub "$1"/gone/deep "$1"/tf "$1"/opq
  (cd "$1" && {
    printf 'foo\nline2\nline3\n' > main.c; echo old > old.txt; echo k > d/k; chmod +x d/k
    printf 'a\0b' > bin; echo x > d/sub/x; echo g > gone/deep/g; echo g2 > gone/g2
    echo t > tf/t; echo o > opq/o1; echo o2 > opq/o2; ln -s main.c sl; ln -s nowhere sl2
    echo "moved content" > mvme.txt; printf 'no newline' > nonl; echo tc > tcfile
    echo same > same; echo m > modeonly; seq 1 200 > long.txt
  })
  own "$1"
}

# Every kind of change: text edit, add, delete, binary edit, rename, mode,
# symlink retarget and removal, new and deleted directories, file <->
# directory, an opaque directory (rm -r then mkdir), a touch that changes
# nothing, names with a space and non-ASCII bytes.
S='set -e
sed -i s/foo/bar/ main.c; rm old.txt; echo new > n.txt; chmod -x d/k; mkdir -p e/f; echo z > e/f/z
mkdir emptydir; printf "x\0y\0z" > bin; mv mvme.txt moved.txt; rm -rf gone; rm -rf tf; echo nowfile > tf
rm -rf opq; mkdir opq; echo o3 > opq/o3; rm sl; ln -s n.txt sl; rm sl2; printf "no newline2" > nonl
rm tcfile; mkdir tcfile; echo in > tcfile/in; touch same; chmod 600 modeonly
echo "sp ace" > "a b.txt"; echo uni > "$(printf "\303\251").txt"; chmod 755 n.txt
sed -i "s/^100$/hundred/; s/^7$/seven/" long.txt'

listing() { (cd "$1" && find . -printf '%p %y %m %l %s\n' | LC_ALL=C sort); }

W=$T/w; mkdir -p $W
mkrepo $W/direct; mkrepo $W/commit; mkrepo $W/plain; mkrepo $W/patched; mkrepo $W/pfresh
before=$(listing $W/plain; cat $W/plain/main.c)
(cd $W/direct && as_user bash -c "$S") || fail "setup: the script fails when run directly"

# 1. Without --commit the host directory does not change at all.
run_fb run --workspace $W/plain --cow --changes $T/plain.json -- bash -c "$S"
if [ "$RC" = 0 ] && [ "$before" = "$(listing $W/plain; cat $W/plain/main.c)" ]; then
  ok "cow: the workspace is untouched"
else
  fail "cow: the workspace is untouched" "rc=$RC $ERR"
fi

# 2. The JSON names every change with its status.
if python3 - "$T/plain.json" <<'EOF'
import json, sys
j = json.load(open(sys.argv[1]))
ch = {c["path"]: c for c in j["changes"]}
want = {"main.c": "modified", "old.txt": "deleted", "n.txt": "added", "bin": "modified",
        "moved.txt": "renamed", "d/k": "modified", "gone/deep/g": "deleted", "gone": "deleted",
        "emptydir": "added", "sl": "modified", "sl2": "deleted", "modeonly": "modified",
        "tcfile/in": "added", "opq/o1": "deleted", "opq/o3": "added", "a b.txt": "added"}
bad = [f"{p}: {ch.get(p, {}).get('status')} != {s}" for p, s in want.items() if ch.get(p, {}).get("status") != s]
c = ch.get("main.c", {})
if "-foo\n+bar\n" not in c.get("diff", ""): bad.append("main.c diff: %r" % c.get("diff"))
if ch.get("bin", {}).get("binary") is not True: bad.append("bin not binary")
if ch.get("moved.txt", {}).get("from") != "mvme.txt": bad.append("rename source")
if ch.get("d/k", {}).get("old_mode") != "0755" or ch["d/k"].get("mode") != "0644": bad.append("d/k modes")
if ch.get("d/k", {}).get("content_changed") is not False: bad.append("d/k content")
if ch.get("sl", {}).get("target") != "n.txt": bad.append("sl target")
if "same" in ch: bad.append("touch reported as a change")
if j["counts"]["renamed"] != 1: bad.append("counts")
if bad: print("; ".join(bad)); sys.exit(1)
EOF
then ok "cow: --changes JSON lists every change"; else fail "cow: --changes JSON lists every change" "$(cat $T/plain.json | head -c 300)"; fi

# 3. Commit gives what running the commands directly gives (modes included).
run_fb run --workspace $W/commit --cow --commit -- bash -c "$S"
d=""
if [ "$RC" = 0 ] && d=$(diff <(listing $W/direct) <(listing $W/commit)) && diff -r $W/direct $W/commit >/dev/null; then
  ok "cow: --commit reproduces every change"
else
  fail "cow: --commit reproduces every change" "rc=$RC $ERR $d"
fi

# 4. The patch applies with git apply to a fresh copy and gives the same files.
run_fb run --workspace $W/patched --cow --changes $T/ch.patch -- bash -c "$S"
rmdir $W/direct/emptydir
if [ "$RC" = 0 ] && (cd $W/pfresh && git apply "$T/ch.patch") 2>$T/apply.err &&
   diff -r --no-dereference $W/direct $W/pfresh >$T/pdiff 2>&1; then
  ok "cow: the --changes patch applies with git apply and yields the same tree"
else
  fail "cow: the --changes patch applies with git apply and yields the same tree" "rc=$RC $(cat $T/apply.err $T/pdiff | head -c 300)"
fi
# git agrees it is a valid patch with the expected files.
if git apply --numstat "$T/ch.patch" 2>/dev/null | grep -q "main.c" &&
   grep -q "^rename from mvme.txt" "$T/ch.patch" && grep -q "^GIT binary patch" "$T/ch.patch"; then
  ok "cow: the patch carries renames and binary files"
else
  fail "cow: the patch carries renames and binary files"
fi

# 5. A failing command is not committed; --commit needs --cow, --cow needs --workspace.
mkrepo $W/fails
run_fb run --workspace $W/fails --cow --commit -- sh -c 'echo x > new.txt; exit 3'
if [ "$RC" = 3 ] && [ ! -e $W/fails/new.txt ]; then ok "cow: a failing command is not committed"
else fail "cow: a failing command is not committed" "rc=$RC"; fi
expect_err "cow: --commit needs --cow" 125 "--commit needs --cow" run --workspace $W/fails --commit -- true
expect_err "cow: --cow needs --workspace" 125 "--cow needs --workspace" run --cow -- true

# 5b. A symlink pointing outside the workspace (an absolute target, /proc/1/root,
# more ".." than it has directories above it) is a conflict: nothing is
# committed. Links inside the workspace, "../" ones included, are not.
mkrepo $W/links
run_fb run --workspace $W/links --cow --commit -- sh -c 'ln -s /etc/shadow secret; echo x > new.txt'
if [ "$RC" = 125 ] && [ ! -e $W/links/secret ] && [ ! -L $W/links/secret ] && [ ! -e $W/links/new.txt ] &&
   [[ $ERR == *"secret: a symlink pointing outside the workspace (/etc/shadow)"* ]]; then
  ok "cow: an absolute symlink is a conflict, nothing committed"
else
  fail "cow: an absolute symlink is a conflict, nothing committed" "rc=$RC $ERR $(ls -l $W/links/secret 2>&1)"
fi
for target in /proc/1/root/etc ../outside d/../../outside d/sub/../../../x; do
  run_fb run --workspace $W/links --cow --commit -- ln -s "$target" lnk
  if [ "$RC" = 125 ] && [ ! -L $W/links/lnk ] && [[ $ERR == *"pointing outside the workspace"* ]]; then
    ok "cow: a symlink to $target is not committed"
  else
    fail "cow: a symlink to $target is not committed" "rc=$RC $ERR"
  fi
done
run_fb run --workspace $W/links --cow --commit -- sh -c 'ln -s ../main.c d/up; ln -s sub/./x d/in; ln -s main.c here'
if [ "$RC" = 0 ] && [ "$(readlink $W/links/d/up)" = ../main.c ] && [ -L $W/links/d/in ] && [ -L $W/links/here ]; then
  ok "cow: symlinks inside the workspace are committed"
else
  fail "cow: symlinks inside the workspace are committed" "rc=$RC $ERR"
fi

# 6. Nothing to report: an empty change list, exit code passes through.
run_fb run --workspace $W/fails --cow --changes - -- cat main.c
case "$OUT" in *'"changes":[]'*) ok "cow: no changes, empty list" ;; *) fail "cow: no changes, empty list" "$OUT" ;; esac

no_leftovers "cow: nothing left behind"
