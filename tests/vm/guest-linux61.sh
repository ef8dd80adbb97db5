# tests/vm/guest-linux61.sh — runs inside the Linux 6.1 guest of tests/vm/vm.sh
# (Debian 12's kernel series; cgroup v2 only): what differs on 6.1, then
# integration files (tests/integration) as tests/run.sh runs them, each a
# part of this suite (sub_suite), named "[USER FILE] ...".
#   * copy-on-write: tmpfs has no user xattrs before 6.6, and the overlay
#     keeps its markers in them: a tmpfs upper layer is refused with a clear
#     error (it used to mount, and `rm -rf` of a directory with
#     subdirectories then failed with EIO), --cow-upper on ext4 works.
# Scratch directories are on the guest's ext4 /scratch (vm.sh -d): on 6.1,
# tmpfs and overlayfs have no idmapped mounts either, which a copy-on-write
# workspace needs as root.
# Environment: FB, ROOT, T; FBVM_FILES (the integration files' names without
# .sh, default every one), FBVM_USERS (default "root fbtest"),
# FBVM_USER_FILES (the files run as the users other than root, default
# FBVM_FILES).
. "$ROOT/tests/lib.sh"
TUSER=fbtest
id "$TUSER" >/dev/null 2>&1 || useradd -M -s /usr/sbin/nologin "$TUSER"
base=/tmp; [ -d /scratch ] && base=/scratch
echo "# $(uname -sr), scratch on $(stat -f -c %T "$base")"

# --- copy-on-write on 6.1 ----------------------------------------------------
for user in ${FBVM_USERS:-root $TUSER}; do
  FB_AS=$user
  W=$(mktemp -d "$base/cow.XXXXXX"); chmod 755 "$W"
  mkdir -p "$W/ws/d/sub/deeper" "$W/up"; echo x > "$W/ws/d/sub/deeper/f"; echo y > "$W/ws/keep"
  [ "$user" != root ] && chown -R "$user:$user" "$W"
  run_fb run -q --cow --workspace "$W/ws" -- rm -rf d
  n=$(printf '%s\n' "$ERR" | grep -c .)
  case "$RC/$n/$ERR" in
    "125/1/fluebox: copy-on-write: tmpfs on this kernel cannot hold user extended attributes"*) ok "6.1 cow ($user): a tmpfs upper layer is refused (125, one line)" ;;
    *) fail "6.1 cow ($user): a tmpfs upper layer is refused (125, one line)" "exit $RC: $ERR" ;;
  esac
  [ -f "$W/ws/d/sub/deeper/f" ] && ok "6.1 cow ($user): the refused run changed nothing" || fail "6.1 cow ($user): the refused run changed nothing"
  no_leftovers "6.1 cow ($user): the refused run leaves nothing behind"
  run_fb run -q --cow-upper "$W/up" --workspace "$W/ws" --changes - -- sh -c 'rm -rf d && mkdir -p e/f && rm -rf e && ls'
  case "$RC/$OUT" in
    0/keep*'"path":"d"'*deleted*) ok "6.1 cow ($user): --cow-upper on ext4: rm -rf of nested directories works" ;;
    *) fail "6.1 cow ($user): --cow-upper on ext4: rm -rf of nested directories works" "exit $RC: $OUT $ERR" ;;
  esac
  [ -f "$W/ws/d/sub/deeper/f" ] && ok "6.1 cow ($user): --cow-upper: the workspace is untouched" || fail "6.1 cow ($user): --cow-upper: the workspace is untouched"
  # (As root the layer in DIR is an idmapped mount, which tmpfs on 6.1
  # cannot do either: that is the error then.)
  shm=$(mktemp -d /dev/shm/fbcow.XXXXXX); [ "$user" != root ] && chown "$user:$user" "$shm"
  run_fb run -q --cow-upper "$shm" --workspace "$W/ws" -- true
  n=$(printf '%s\n' "$ERR" | grep -c .)
  case "$RC/$n/$ERR" in
    "125/1/fluebox: copy-on-write: --cow-upper: its file system cannot hold user extended attributes"*|"125/1/fluebox: $shm: this filesystem cannot do idmapped mounts"*)
      ok "6.1 cow ($user): --cow-upper on tmpfs is refused (125, one line)" ;;
    *) fail "6.1 cow ($user): --cow-upper on tmpfs is refused (125, one line)" "exit $RC: $ERR" ;;
  esac
  [ -z "$(ls -A "$shm")" ] && ok "6.1 cow ($user): the refused --cow-upper DIR is left as it was (empty)" || fail "6.1 cow ($user): the refused --cow-upper DIR is left as it was (empty)" "$(ls -A "$shm")"
  rm -rf "$W" "$shm"
done
FB_AS=root

# --- integration files ---------------------------------------------------------
files=${FBVM_FILES:-$(cd "$ROOT/tests/integration" && ls *.sh | sed 's/\.sh$//')}
for user in ${FBVM_USERS:-root $TUSER}; do
  list=$files; [ "$user" != root ] && list=${FBVM_USER_FILES:-$files}
  for f in $list; do
    t=$(mktemp -d "$base/fbt.XXXXXX"); chmod 755 "$t"; [ "$user" != root ] && chown "$user" "$t"
    s=$(date +%s)
    sub_suite -p "[$user $f] " "$f as $user" 900 env FB="$FB" FB_AS="$user" T="$t" ROOT="$ROOT" \
      bash "$ROOT/tests/integration/$f.sh"
    echo "# $user $f: $(( $(date +%s) - s )) s"
    rm -rf "$t"
  done
done
