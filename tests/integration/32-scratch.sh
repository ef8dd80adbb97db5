# 32-scratch.sh — the scratch space (issue 19 §7) and the home (issue 14 §3):
# everything a sandbox may write that is not a host bind — /tmp, /dev/shm, the
# home, a tmpfs /workspace, the copy-on-write layer, --tmpfs without a size —
# is one tmpfs of --disk bytes with bounded inodes, so filling it gives ENOSPC
# (not an OOM kill: by default it is half the memory limit), and the report
# says how much was used. The sandbox user has a home of its own, so what
# tools keep there never lands in the workspace.
. "$ROOT/tests/lib.sh"

R=$T/report.json
jtrue() { # jtrue NAME FILE PYTHON-EXPR (r = the report)
  if python3 -c "import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if ($3) else 1)" "$2" 2>/dev/null; then
    ok "$1"; else fail "$1" "$3 is false: $(head -c 600 "$2" 2>/dev/null)"; fi
}
mkdir -p "$T/ws"
echo base > "$T/ws/base.txt"
[ "$FB_AS" != root ] && chown -R "$FB_AS" "$T/ws"

# --- ENOSPC, not the OOM killer ------------------------------------------------
run_fb run --report "$R" -- sh -c 'dd if=/dev/zero of=/tmp/big bs=1M count=2000 2>&1; echo dd=$?'
case "$OUT" in
  *"No space left on device"*dd=1*) ok "filling /tmp with the default profile gives ENOSPC" ;;
  *) fail "filling /tmp gives ENOSPC" "rc=$RC $OUT" ;;
esac
jtrue "... not an OOM kill, and the report says how much was used" "$R" \
  'r["exit_code"] == 0 and not r["oom_killed"] and r["limits"]["disk_bytes"] == 512 << 20 and r["disk_used_bytes"] >= 500 << 20'

# One budget for all of it.
run_fb run --disk 16M -- sh -c '
  dd if=/dev/zero of=/tmp/a bs=1M count=6 2>/dev/null || echo tmp-full
  dd if=/dev/zero of=/dev/shm/b bs=1M count=6 2>/dev/null || echo shm-full
  dd if=/dev/zero of=$HOME/c bs=1M count=6 2>/dev/null && echo home-fit || echo home-full
  dd if=/dev/zero of=/workspace/d bs=1M count=6 2>/dev/null && echo ws-fit || echo ws-full'
case "$OUT" in
  *home-full*ws-full*) case "$OUT" in *tmp-full*|*shm-full*) fail "one budget" "$OUT" ;; *) ok "/tmp, /dev/shm, the home and a tmpfs /workspace share one --disk budget" ;; esac ;;
  *) fail "one budget for /tmp, /dev/shm, the home, /workspace" "$OUT" ;;
esac
run_fb run --disk 16M --tmpfs /scratch --tmpfs /sized:32M -- sh -c '
  dd if=/dev/zero of=/tmp/a bs=1M count=10 2>/dev/null
  dd if=/dev/zero of=/scratch/b bs=1M count=10 2>/dev/null && echo unsized-fit || echo unsized-full
  dd if=/dev/zero of=/sized/c bs=1M count=10 2>/dev/null && echo sized-fit || echo sized-full'
case "$OUT" in
  *unsized-full*sized-fit*) ok "--tmpfs without a size is part of the budget, with a size its own" ;;
  *) fail "--tmpfs and the budget" "$OUT" ;;
esac
if [ "$FB_AS" != root ] || grep -qw overlay /proc/filesystems; then
  run_fb run --disk 8M --workspace "$T/ws" --cow -- sh -c 'dd if=/dev/zero of=/workspace/big bs=1M count=20 2>&1; echo dd=$?'
  case "$OUT" in *"No space left"*dd=1*) ok "the copy-on-write layer counts against --disk" ;; *) fail "cow layer in the budget" "rc=$RC $OUT $ERR" ;; esac
fi

# Inodes are bounded too (8M: 1,024 of them).
run_fb run --disk 8M -- sh -c 'i=0; while [ $i -lt 5000 ]; do i=$((i+1)); touch /tmp/f$i 2>/dev/null || break; done; echo made=$i; df -i /tmp | tail -1'
made=$(echo "$OUT" | sed -n 's/^made=//p')
[ -n "$made" ] && [ "$made" -lt 5000 ] && ok "inodes are bounded ($made files in an 8M scratch space)" ||
  fail "inodes are bounded" "$OUT"

# Defaults leave the memory limit room; --disk wins; a --disk not below
# the memory limit is warned about.
run_fb run --mem 256M --report "$R" -- true
jtrue "--mem 256M: the scratch space defaults to 128M" "$R" 'r["limits"]["disk_bytes"] == 128 << 20'
run_fb run --mem 256M --disk 200M --report "$R" -- true
jtrue "--disk given: used as it is" "$R" 'r["limits"]["disk_bytes"] == 200 << 20'
expect_err "--disk not below --mem: a warning" 0 "--disk is not below the memory limit" run --mem 64M --disk 64M -- true
expect_rc "-q: no warning" 0 run -q --mem 64M --disk 64M -- true
[ -z "$ERR" ] && ok "-q silences it" || fail "-q silences the --disk warning" "$ERR"

# --- the home -------------------------------------------------------------------
expect_out "a writable home with the XDG directories" "ok /home/fluebox" run -- sh -c \
  'cd && test -d .config -a -d .cache -a -d .local/share -a -d .local/state && touch .probe && test "$XDG_CONFIG_HOME" = "$HOME/.config" && echo ok $HOME'
if need git "home files stay out of --changes"; then
  run_fb run --workspace "$T/ws" --cow --changes - -- sh -c '
    git config --global user.name agent && mkdir -p ~/.npm/_logs ~/.cache/pip && echo log > ~/.npm/_logs/x.log &&
    echo made > new.txt'
  if [ "$RC" = 0 ] && echo "$OUT" | grep -q '"new.txt"' && ! echo "$OUT" | grep -qE 'gitconfig|\.npm|\.cache'; then
    ok "what tools keep in the home (.gitconfig, .npm, .cache) never shows in --changes"
  else fail "home files stay out of --changes" "rc=$RC $OUT $ERR"; fi
  [ ! -e "$T/ws/.gitconfig" ] && [ ! -e "$T/ws/new.txt" ] && ok "... nor in the workspace" || fail "home files stay out of the workspace" "$(ls -A "$T/ws")"
fi

# Sessions keep their home across execs.
SOCK=$T/fb.sock
if [ "$FB_AS" = root ]; then
  "$FB" serve --socket "$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>&1 3>"$T/ready" &
else
  setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- env PATH="$PATH" HOME=/tmp \
    "$FB" serve --socket "$SOCK" --ready-fd 3 </dev/null >"$T/serve.out" 2>&1 3>"$T/ready" &
fi
SRV=$!
wait_for 10 grep -q ready "$T/ready"
run_fb session create --socket "$SOCK"; S=$OUT
run_fb exec --socket "$SOCK" "$S" -- sh -c 'echo kept > ~/.state && pwd'
run_fb exec --socket "$SOCK" "$S" -- sh -c 'cat ~/.state; echo $HOME'
case "$OUT" in *kept*/home/fluebox*) ok "a session keeps its home across execs" ;; *) fail "session home kept" "$OUT $ERR" ;; esac
run_fb exec --socket "$SOCK" "$S" -- sh -c 'head -c 1048576 /dev/zero > /tmp/mb'
run_fb session info --socket "$SOCK" "$S"
used=$(printf '%s' "$OUT" | python3 -c 'import json,sys; print(json.load(sys.stdin)["usage"]["diskUsedBytes"])' 2>/dev/null)
[ -n "$used" ] && [ "$used" -ge 1048576 ] && ok "session info: diskUsedBytes ($used)" || fail "session info: diskUsedBytes" "$OUT"
kill -TERM "$SRV"
wait "$SRV" 2>/dev/null

no_leftovers "scratch: nothing left behind"
