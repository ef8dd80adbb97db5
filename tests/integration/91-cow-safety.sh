#!/bin/bash
# 91-cow-safety.sh — commit runs on the host with fluebox's privileges on
# content the sandbox wrote. Each check here tries to make it do harm:
# follow a symlink or a hard link out of the workspace, keep a setuid bit,
# overwrite a file the host changed meanwhile, leave a truncated file when
# killed half way, or commit a layer that ran out of space.
. "$(dirname "$0")/../lib.sh"
cow_needs_upper && skip_all "tmpfs on this kernel has no user xattrs (Linux < 6.6): --cow needs --cow-upper here (93-cow-upper, tests/vm)"

as_user() {
  if [ "$FB_AS" = root ]; then "$@"; else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$@"
  fi
}
own() { [ "$FB_AS" = root ] || chown -R "$FB_AS:$FB_AS" "$@"; }
# The fluebox command line as FB_AS, for runs in the background whose pid
# must be fluebox's own (setpriv and env exec, keeping the pid).
if [ "$FB_AS" = root ]; then FBCMD=("$FB"); else
  FBCMD=(setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp "$FB")
fi

# 1. Symlinks planted in the workspace (by an earlier commit, say) that point
# at host files and directories outside it. The sandbox replaces them with a
# file and a directory of the same names; commit must replace the links, not
# write through them.
W=$T/sym; mkdir -p $W/ws $W/outdir
echo orig > $W/outside.txt; echo orig2 > $W/outside2.txt
ln -s $W/outside.txt $W/ws/esc
ln -s $W/outdir $W/ws/escdir
ln -s ../outside.txt $W/ws/rel
ln $W/outside2.txt $W/ws/hl 2>/dev/null || cp $W/outside2.txt $W/ws/hl  # a hard link out
echo m > $W/ws/main
own $W
run_fb run --workspace $W/ws --cow --commit -- sh -c '
  rm esc && echo pwned > esc
  rm escdir && mkdir escdir && echo pwned > escdir/f
  echo pwned >> rel 2>/dev/null
  echo pwned > hl
  ln -s main plink
  ln main hard2; chmod 755 main; true'
if [ "$RC" = 0 ] && [ "$(cat $W/outside.txt)" = orig ] && [ ! -e $W/outdir/f ] &&
   [ "$(cat $W/outside2.txt)" = orig2 ] && [ -f $W/ws/esc ] && [ ! -L $W/ws/esc ] &&
   [ "$(cat $W/ws/esc)" = pwned ] && [ -d $W/ws/escdir ] && [ ! -L $W/ws/escdir ] &&
   [ "$(cat $W/ws/escdir/f)" = pwned ] && [ "$(cat $W/ws/hl)" = pwned ]; then
  ok "cow safety: commit replaces planted symlinks and hard links, never writes through them"
else
  fail "cow safety: commit replaces planted symlinks and hard links, never writes through them" \
    "rc=$RC outside=$(cat $W/outside.txt) outside2=$(cat $W/outside2.txt) outdir=$(ls $W/outdir) $ERR"
fi
if [ "$(readlink $W/ws/plink)" = main ] && [ "$(stat -c %h $W/ws/hard2)" = 1 ] &&
   [ "$(stat -c %h $W/ws/main)" = 1 ] && [ "$(stat -c %a $W/ws/main)" = 755 ]; then
  ok "cow safety: symlinks are committed as symlinks, hard links as copies"
else
  fail "cow safety: symlinks are committed as symlinks, hard links as copies" "$(ls -la $W/ws)"
fi

# 1b. Set-id bits never reach the host. The profiles' seccomp rules already
# refuse them inside; here a layer that has them anyway (planted in a
# --cow-upper directory) is committed.
W=$T/suid; mkdir -p $W/ws $W/up/upper/sd; echo s > $W/ws/s; echo t > $W/up/upper/t
echo s2 > $W/up/upper/s; echo u > $W/up/upper/sd/u
own $W  # before the chmod: chown clears set-id bits
chmod 4755 $W/up/upper/t; chmod 6755 $W/up/upper/s; chmod 3775 $W/up/upper/sd
run_fb run --workspace $W/ws --cow-upper $W/up --commit -- true
modes=$(stat -c '%n %a' $W/ws/t $W/ws/s $W/ws/sd | sed "s|$W/ws/||" | tr '\n' ' ')
if [ "$RC" = 0 ] && [ "$modes" = "t 755 s 755 sd 775 " ]; then
  ok "cow safety: commit drops setuid, setgid and sticky bits"
else
  fail "cow safety: commit drops setuid, setgid and sticky bits" "rc=$RC modes=$modes $ERR"
fi

# 1c. A mode-only change to a workspace file that is a hard link to a file
# outside the workspace (a pnpm store, a `cp -al` tree, a local clone):
# commit must give the workspace path a new inode, never chmod the shared
# one, or the file outside changes too.
W=$T/hlmode; mkdir -p $W/ws $W/store
echo shared > $W/store/pkg.sh; chmod 644 $W/store/pkg.sh; ln $W/store/pkg.sh $W/ws/pkg.sh
own $W
run_fb run --workspace $W/ws --cow --commit -- chmod 755 pkg.sh
if [ "$RC" = 0 ] && [ "$(stat -c %a $W/store/pkg.sh)" = 644 ] && [ "$(stat -c %h $W/store/pkg.sh)" = 1 ] &&
   [ "$(stat -c %a $W/ws/pkg.sh)" = 755 ] && [ "$(cat $W/ws/pkg.sh)" = shared ]; then
  ok "cow safety: a mode-only change to a hard-linked file leaves the file outside the workspace alone"
else
  fail "cow safety: a mode-only change to a hard-linked file leaves the file outside the workspace alone" \
    "rc=$RC outside=$(stat -c '%a %h' $W/store/pkg.sh) inside=$(stat -c %a $W/ws/pkg.sh) $ERR"
fi

# 2. A host directory that becomes a symlink while the sandbox runs: the
# commit must not follow it (the sandbox's file lands nowhere outside).
W=$T/race; mkdir -p $W/ws/sub $W/target; echo a > $W/ws/sub/a; own $W
mkfifo $T/go1
( as_user "$FB" run --workspace $W/ws --cow --commit -- sh -c 'echo new > sub/a; echo n > sub/b; echo ready; read x' \
    <$T/go1 >$T/race.out 2>$T/race.err; echo $? >$T/race.rc ) &
exec 3>$T/go1
for i in $(seq 1 300); do grep -q ready $T/race.out 2>/dev/null && break; sleep 0.05; done
mv $W/ws/sub $W/ws/sub.moved; ln -s $W/target $W/ws/sub
echo >&3; exec 3>&-; wait
if [ "$(cat $T/race.rc)" = 125 ] && [ -z "$(ls $W/target)" ] && [ "$(cat $W/ws/sub.moved/a)" = a ]; then
  ok "cow safety: a parent turned into a symlink on the host is a conflict, nothing written through it"
else
  fail "cow safety: a parent turned into a symlink on the host is a conflict, nothing written through it" \
    "rc=$(cat $T/race.rc) target=$(ls $W/target) $(cat $T/race.err)"
fi

# 3. Conflict: the host changes a file the sandbox also changed. Nothing is
# committed (not even the sandbox's other changes), the conflict is named.
W=$T/conf; mkdir -p $W/ws; echo base > $W/ws/f; echo g > $W/ws/g; own $W
mkfifo $T/go2
( as_user "$FB" run --workspace $W/ws --cow --commit --changes $T/conf.json -- \
    sh -c 'echo sandbox > f; echo sandbox > g; echo new > n; echo ready; read x' \
    <$T/go2 >$T/conf.out 2>$T/conf.err; echo $? >$T/conf.rc ) &
exec 3>$T/go2
for i in $(seq 1 300); do grep -q ready $T/conf.out 2>/dev/null && break; sleep 0.05; done
echo host > $W/ws/f
echo >&3; exec 3>&-; wait
if [ "$(cat $T/conf.rc)" = 125 ] && grep -q "conflict: f: changed on the host" $T/conf.err &&
   [ "$(cat $W/ws/f)" = host ] && [ "$(cat $W/ws/g)" = g ] && [ ! -e $W/ws/n ] &&
   python3 -c 'import json,sys; j=json.load(open(sys.argv[1])); c=j["commit"]; sys.exit(not (c["committed"] is False and [x["path"] for x in c["conflicts"]]==["f"]))' $T/conf.json; then
  ok "cow safety: a file changed on the host meanwhile is a conflict and nothing is committed"
else
  fail "cow safety: a file changed on the host meanwhile is a conflict and nothing is committed" \
    "rc=$(cat $T/conf.rc) f=$(cat $W/ws/f) $(cat $T/conf.err) $(head -c 300 $T/conf.json)"
fi

# 4. Killed half way through a commit: every file is old or new, whole.
# The kill must land during the commit, which this proves afterwards: some
# file is already new and some still old (or the commit's temporary file was
# there and nothing is new yet). A kill that came too late proves nothing:
# the attempt is repeated with a commit twice as long, up to 5 times.
head -c 262144 /dev/zero | tr '\0' A > $T/old.bin
head -c 262144 /dev/zero | tr '\0' B > $T/new.bin
hold=$(md5sum <$T/old.bin); hnew=$(md5sum <$T/new.bin)
n=60 landed=no
for attempt in 1 2 3 4 5; do
  n=$((n * 2)); W=$T/kill$attempt; mkdir -p $W/ws
  for i in $(seq 1 $n); do cp $T/old.bin $W/ws/f$i; done
  own $W
  "${FBCMD[@]}" run --workspace $W/ws --cow --commit -- \
    sh -c "head -c 262144 /dev/zero | tr '\\0' B > /tmp/new; for i in \$(seq 1 $n); do cp /tmp/new f\$i; done" \
    >/dev/null 2>$T/kill.err &
  pid=$!
  killed=no tmp=no
  committing() {
    if ls $W/ws/.fluebox-commit-* >/dev/null 2>&1; then tmp=yes; return 0; fi
    cmp -s -n 1 $T/new.bin $W/ws/f1 && return 0
    ! kill -0 $pid 2>/dev/null
  }
  wait_for 60 committing && kill -9 $pid 2>/dev/null && killed=yes
  wait $pid 2>/dev/null
  bad=0 newc=0
  for i in $(seq 1 $n); do
    h=$(md5sum <$W/ws/f$i 2>/dev/null)  # read once: old, new or neither
    if [ "$h" = "$hnew" ]; then newc=$((newc+1)); elif [ "$h" != "$hold" ]; then bad=$((bad+1)); fi
  done
  if [ $killed = yes ] && [ $newc -lt $n ] && { [ $newc -gt 0 ] || [ $tmp = yes ]; }; then landed=yes; break; fi
  [ $bad = 0 ] || break
done
if [ $landed = yes ] && [ $bad = 0 ]; then
  ok "cow safety: a commit killed half way leaves each file old or new ($newc of $n new when killed)"
elif [ $bad != 0 ]; then
  fail "cow safety: a commit killed half way leaves each file old or new" "$bad of $n files neither old nor new ($newc new) $(head -c 300 $T/kill.err)"
else
  fail "cow safety: a commit killed half way leaves each file old or new" "no kill landed during a commit in 5 attempts (last: $n files, $newc new, killed=$killed)"
fi

# 5. --disk bounds the upper layer: the sandbox gets ENOSPC, and a command
# that ignores it is not committed.
W=$T/disk; mkdir -p $W/ws; echo a > $W/ws/a; own $W
run_fb run --workspace $W/ws --cow --disk 4M --commit -- sh -c \
  'echo changed > a; dd if=/dev/zero of=big bs=1M count=8 2>/dev/null; echo "dd=$?"; exit 0'
if [ "$RC" = 125 ] && case "$OUT" in *"dd=1"*) true ;; *) false ;; esac &&
   [ ! -e $W/ws/big ] && [ "$(cat $W/ws/a)" = a ] && case "$ERR" in *"ran out of space"*) true ;; *) false ;; esac; then
  ok "cow safety: a full upper layer gives ENOSPC inside and is never committed"
else
  fail "cow safety: a full upper layer gives ENOSPC inside and is never committed" "rc=$RC out=$OUT err=$ERR"
fi

# 6. As root, committed files belong to the workspace's owner, not root.
if as_root && id fbtest >/dev/null 2>&1; then
  W=$T/owner; mkdir -p $W/ws/d; echo a > $W/ws/a; chown -R fbtest:fbtest $W/ws
  run_fb run --workspace $W/ws --cow --commit -- sh -c 'echo b > a; echo n > new; mkdir -p nd/x; echo y > nd/x/y; echo z > d/z'
  owners=$(find $W/ws -printf '%u:%g\n' | sort -u)
  if [ "$RC" = 0 ] && [ "$owners" = "fbtest:fbtest" ]; then
    ok "cow safety: as root, commit writes as the workspace owner"
  else
    fail "cow safety: as root, commit writes as the workspace owner" "rc=$RC owners=$owners $ERR"
  fi
else
  skip "cow safety: as root, commit writes as the workspace owner" "root only"
fi

# 7. A profile that makes the workspace read-only allows a copy-on-write
# view but never a commit.
W=$T/ro; mkdir -p $W/ws; echo a > $W/ws/a; own $W
printf '{"extends": "standard", "filesystem": {"workspace_readonly": true}}\n' > $W/ro.json
run_fb run --profile $W/ro.json --workspace $W/ws --cow --commit -- sh -c 'echo b > a'
rc1=$RC; err1=$ERR
run_fb run --profile $W/ro.json --workspace $W/ws --cow -- sh -c 'echo b > a && cat a'
if [ "$rc1" = 125 ] && case "$err1" in *"read-only"*) true ;; *) false ;; esac &&
   [ "$RC" = 0 ] && [ "$OUT" = b ] && [ "$(cat $W/ws/a)" = a ]; then
  ok "cow safety: a read-only workspace profile refuses --commit, allows the view"
else
  fail "cow safety: a read-only workspace profile refuses --commit, allows the view" "rc1=$rc1 $err1 / rc=$RC $OUT $ERR"
fi

no_leftovers "cow safety: nothing left behind"
