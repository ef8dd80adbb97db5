# 50-profiles-workloads.sh — the three built-in profiles against the same
# real workloads: python3 (files, threads, processes, subprocess of sh, ls,
# grep, sed and git, json, sqlite, asyncio), node (fs, worker_threads,
# child_process), sh and coreutils, git, and a C compiler. strict must run
# them all, and without a single denied syscall (the allowlist covers them;
# an EPERM that a program shrugs off would hide a gap). Also the built-in
# profiles' listing, effective policy and validation.
. "$ROOT/tests/lib.sh"

mkdir -p "$T/wl"
cp "$ROOT"/tests/fixtures/profile-work.py "$ROOT"/tests/fixtures/profile-work.js \
   "$ROOT"/tests/fixtures/profile-work.sh "$ROOT"/tests/fixtures/profile-git.sh \
   "$ROOT"/tests/fixtures/profile-cc.sh "$T/wl/"
chmod -R a+rX "$T/wl"

have() { command -v "$1" >/dev/null 2>&1; }

workload() { # profile name marker cmd...
  local prof=$1 name=$2 marker=$3; shift 3
  expect_out "$prof: $name" "$marker" run --profile "$prof" --ro-bind "$T/wl:/wl" -- "$@"
}

for prof in strict standard trusted; do
  workload "$prof" "python3: files, threads, processes, subprocess, sqlite, asyncio" PYOK python3 /wl/profile-work.py
  if have node; then
    workload "$prof" "node: fs, worker_threads, child_process" NODEOK node /wl/profile-work.js
  else
    skip_missing "$prof: node" node
  fi
  workload "$prof" "sh and coreutils" SHOK sh /wl/profile-work.sh
  workload "$prof" "git: init, commit, branch, merge, gc, clone" GITOK sh /wl/profile-git.sh
  if have cc; then
    workload "$prof" "cc: compile, link, run (and make)" CCOK sh /wl/profile-cc.sh
  else
    skip_missing "$prof: cc" cc
  fi
done

# strict: nothing the workloads do is denied.
denials() { # the report's seccomp_denials
  python3 -c "import json; print(json.load(open('$T/rep.json')).get('seccomp_denials'))" 2>/dev/null
}
for w in "python3 /wl/profile-work.py" "sh /wl/profile-work.sh" "sh /wl/profile-git.sh" "sh /wl/profile-cc.sh"; do
  rm -f "$T/rep.json"
  # shellcheck disable=SC2086
  run_fb run --profile strict --seccomp-log --report "$T/rep.json" --ro-bind "$T/wl:/wl" -- $w
  n=$(denials)
  if [ "$RC" = 0 ] && [ "$n" = 0 ]; then ok "strict: '$w' makes no denied syscall"
  else fail "strict: '$w' makes no denied syscall" "exit $RC, denials $n: $(head -c 600 "$T/rep.json" 2>/dev/null)"; fi
done
if have node; then
  rm -f "$T/rep.json"
  run_fb run --profile strict --seccomp-log --report "$T/rep.json" --ro-bind "$T/wl:/wl" -- node /wl/profile-work.js
  n=$(denials)
  if [ "$RC" = 0 ] && [ "$n" = 0 ]; then ok "strict: node makes no denied syscall"
  else fail "strict: node makes no denied syscall" "exit $RC, denials $n: $(head -c 600 "$T/rep.json" 2>/dev/null)"; fi
fi

# A workspace: strict writes there and in /tmp, nowhere else.
mkdir -p "$T/ws"; [ "$FB_AS" != root ] && chown "$FB_AS" "$T/ws"
expect_rc "strict: the workspace is writable" 0 run --profile strict --workspace "$T/ws" -- sh -c 'echo x > /workspace/f && echo y > /tmp/g'
expect_rc "strict: the system is read-only" 1 run --profile strict -- sh -c 'touch /usr/fb-x 2>/dev/null || touch /etc/fb-x 2>/dev/null || touch /fb-x 2>/dev/null || exit 1'

# --- listing, showing, checking ------------------------------------------
run_fb profile list
for prof in strict standard trusted; do
  case "$OUT" in *"$prof "*) ok "profile list names $prof" ;; *) fail "profile list names $prof" "$OUT" ;; esac
done
case "$OUT" in *"standard"*"[default]"*) ok "profile list marks the default" ;; *) fail "profile list marks the default" "$OUT" ;; esac

for prof in strict standard trusted; do
  expect_out "profile check $prof" "$prof: ok" profile check "$prof"
  run_fb profile show "$prof"
  printf '%s\n' "$OUT" > "$T/$prof-shown.json"
  if [ "$RC" = 0 ] && python3 -c "import json,sys; json.load(open(sys.argv[1]))" "$T/$prof-shown.json" 2>/dev/null; then
    ok "profile show $prof prints JSON"
  else
    fail "profile show $prof prints JSON" "exit $RC: $(head -c 300 "$T/$prof-shown.json")"
  fi
  # What show prints is itself a profile that loads into the same policy.
  run_fb profile show "$T/$prof-shown.json"
  printf '%s\n' "$OUT" > "$T/$prof-again.json"
  if [ "$RC" = 0 ] && python3 - "$T/$prof-shown.json" "$T/$prof-again.json" <<'EOF'
import json, sys
a, b = (json.load(open(f)) for f in sys.argv[1:3])
for x in (a, b):
    x.pop("name"); x.pop("comment")
sys.exit(0 if a == b else 1)
EOF
  then ok "profile show $prof: the output loads back into the same policy"
  else fail "profile show $prof: round trip" "exit $RC: $(printf %s "$ERR" | head -c 300)"; fi
done

run_fb profile show strict
python3 - "$OUT" <<'EOF' && ok "strict: default EPERM, memory 512M, pids 128, network none, no --net host" || fail "strict defaults" "$(printf %s "$OUT" | head -c 300)"
import json, sys
p = json.loads(sys.argv[1])
assert p["seccomp"]["default"] == "errno(EPERM)", p["seccomp"]["default"]
assert p["limits"]["memory"] == "512M" and p["limits"]["pids"] == 128
assert p["network"]["mode"] == "none" and p["network"]["host_allowed"] is False
EOF
run_fb profile show standard
python3 - "$OUT" <<'EOF' && ok "standard: default allow, memory 1G, pids 512, scratch space 512M, nofile 1024" || fail "standard defaults" "$(printf %s "$OUT" | head -c 300)"
import json, sys
p = json.loads(sys.argv[1])
assert p["seccomp"]["default"] == "allow"
l = p["limits"]
assert l["memory"] == "1G" and l["pids"] == 512 and l["disk"] == "512M" and l["nofile"] == 1024, l
names = set()
for r in p["seccomp"]["rules"]:
    names.update(r.get("names", [r.get("name")]))
for s in ["mount", "umount2", "pivot_root", "chroot", "setns", "ptrace", "process_vm_readv",
          "process_vm_writev", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
          "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
          "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
          "swapoff", "open_by_handle_at", "name_to_handle_at", "fsopen", "fsmount", "move_mount",
          "open_tree", "mount_setattr"]:
    assert s in names, s
# personality changes are denied by the fixed rules, whatever the profile
assert "personality" not in names
EOF
run_fb profile show trusted
python3 - "$OUT" <<'EOF' && ok "trusted: may share the host network, looser limits" || fail "trusted defaults" "$(printf %s "$OUT" | head -c 300)"
import json, sys
p = json.loads(sys.argv[1])
assert p["network"]["host_allowed"] is True
assert p["limits"]["pids"] == 4096 and p["limits"]["memory"] == "unlimited"
EOF

# --- the run report names the profile and the overrides -------------------
rm -f "$T/rep.json"
run_fb run --profile strict --mem 256M --report "$T/rep.json" -- true
python3 - "$T/rep.json" <<'EOF' && ok "report names the profile and the overrides" || fail "report names the profile and the overrides" "$(head -c 400 "$T/rep.json")"
import json, sys
r = json.load(open(sys.argv[1]))
assert r["profile"] == "strict", r["profile"]
assert "--mem 256M" in r["overrides"], r["overrides"]
EOF
no_leftovers "no leftovers after the workloads"
