# 15-idmap-ro.sh — read-only binds are idmapped as the read-write ones are
# (issue 14 §4): as root, the owner of a --ro-bind's files appears as the
# sandbox user, so git works in a read-only bound repository instead of
# stopping at "dubious ownership"; where the filesystem cannot do idmapped
# mounts, fluebox says so in one line and binds it as it is. Rootless, the
# caller's own files are the sandbox user's anyway (one uid); someone else's
# show as nobody (unprivileged users cannot make idmapped mounts).
. "$ROOT/tests/lib.sh"

need git "git in a read-only bound repository" || skip_all "missing: git"

mkrepo() { # mkrepo DIR OWNER
  mkdir -p "$1" && git -C "$1" init -q && echo hello > "$1/a.txt" &&
    git -C "$1" add a.txt && git -C "$1" -c user.name=t -c user.email=t@example.com commit -qm first &&
    chown -R "$2" "$1"
}
if [ "$FB_AS" = root ]; then
  mkrepo "$T/repo-root" root
  mkrepo "$T/repo-other" 4242:4242
  for r in repo-root repo-other; do
    run_fb run --ro-bind "$T/$r:/repo" -- sh -c 'git -C /repo status --short && git -C /repo log --format=%s && stat -c %u /repo/a.txt'
    if [ "$RC" = 0 ] && [ "$(echo "$OUT" | tr '\n' ' ')" = "first 1000 " ]; then
      ok "git works in a read-only bound repository owned by $( [ $r = repo-root ] && echo root || echo uid 4242) (its files are the sandbox user's inside)"
    else fail "git in a read-only bound repository ($r)" "rc=$RC $OUT $ERR"; fi
  done
  expect_fail "the idmapped read-only bind is still read-only" "Read-only file system" \
    run --ro-bind "$T/repo-root:/repo" -- sh -c 'echo x > /repo/a.txt'
  [ "$(cat "$T/repo-root/a.txt")" = hello ] && [ "$(stat -c %u "$T/repo-other/a.txt")" = 4242 ] &&
    ok "the host repositories are unchanged" || fail "host repositories unchanged"
  # A filesystem that cannot do idmapped mounts (sysfs): one warning line,
  # the plain bind, the command runs.
  if [ -d /sys/kernel/mm ]; then
    run_fb run --ro-bind /sys/kernel/mm:/mm -- stat -c %u /mm
    n=$(printf '%s\n' "$ERR" | grep -c "cannot do idmapped mounts.*bound without an id mapping")
    if [ "$RC" = 0 ] && [ "$n" = 1 ] && [ "$OUT" = 65534 ]; then
      ok "a filesystem without idmapped mounts: one warning, bound as it is (owner nobody)"
    else fail "no idmapped mounts: warning and plain bind" "rc=$RC out=$OUT err=$ERR"; fi
    run_fb run -q --ro-bind /sys/kernel/mm:/mm -- true
    [ -z "$ERR" ] && ok "... and -q silences it" || fail "-q silences the idmap warning" "$ERR"
  fi
else
  mkrepo "$T/repo-own" "$FB_AS"
  run_fb run --ro-bind "$T/repo-own:/repo" -- git -C /repo log --format=%s
  [ "$RC" = 0 ] && [ "$OUT" = first ] && ok "rootless: git works in the caller's own read-only bound repository" ||
    fail "rootless: git in the caller's repository" "rc=$RC $OUT $ERR"
fi
no_leftovers "idmapped read-only binds: nothing left behind"
