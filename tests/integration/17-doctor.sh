# 17-doctor.sh — fluebox doctor tries every layer and is right about this
# machine: what it calls available works in fluebox run, what it calls
# missing fails there; where user namespaces are off (simulated with
# tests/nouserns.py) it names the blocker and its fix and points at
# --isolation landlock; --json is one object tools can read; --fix and
# --apparmor-profile print, never change; nothing is left behind.
. "$ROOT/tests/lib.sh"

run_as() { # CMD... as FB_AS (run_fb for any program)
  if [ "$FB_AS" = root ] || [ "$(id -un)" = "$FB_AS" ]; then
    "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  else
    setpriv --reuid="$FB_AS" --regid="$FB_AS" --init-groups --reset-env -- \
      env PATH="$PATH" HOME=/tmp XDG_RUNTIME_DIR="$XDG_RUNTIME_DIR" "$@" >"$T/.out" 2>"$T/.err" </dev/null; RC=$?
  fi
  OUT=$(cat "$T/.out"); ERR=$(cat "$T/.err")
}
jtrue() { # NAME FILE PYEXPR — r is the object, c the checks by id
  if /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); c={x["id"]: x for x in r["checks"]}; sys.exit(0 if eval(sys.argv[2]) else 1)' "$2" "$3" 2>/dev/null; then
    ok "$1"; else fail "$1" "$(head -c 800 "$2" 2>/dev/null)"; fi
}
status_of() { /usr/bin/python3 -c 'import json,sys; print({x["id"]: x for x in json.load(open(sys.argv[1]))["checks"]}[sys.argv[2]]["status"])' "$1" "$2"; }
scratch0=$(ls -d /tmp/fluebox-doctor.* /var/tmp/fluebox-doctor.* 2>/dev/null | wc -l)

WS=$T/ws; mkdir -p "$WS"; [ "$FB_AS" != root ] && chown "$FB_AS" "$WS"

# ---- this machine ----
run_fb doctor --workspace "$WS"
case "$RC:$OUT" in
  [01]:*"user namespaces:"*"seccomp filters:"*"Landlock"*"verdict:"*) ok "doctor prints every layer and a verdict (exit $RC)" ;;
  *) fail "doctor text" "rc $RC: $(printf %s "$OUT$ERR" | head -c 600)" ;;
esac
run_fb doctor --json --workspace "$WS"
printf '%s' "$OUT" > "$T/d.json"
jtrue "--json: one object with the checks" "$T/d.json" 'set(c) >= {"container", "userns", "namespaces", "procfs", "pivot_root", "seccomp", "seccomp_notify", "idmap", "overlay", "cgroup", "landlock"}'
jtrue "--json: each check says available, what it costs and the fix" "$T/d.json" 'all(set(x) >= {"id", "layer", "status", "available", "detail", "cost", "fix", "errno"} and x["status"] in ("ok", "info", "n/a", "degraded", "missing") and (x["status"] != "missing" or (x["cost"] and x["fix"])) for x in r["checks"])'
jtrue "--json: verdict, exit status and landlock ABI agree" "$T/d.json" '{"full": 0, "landlock": 1, "none": 2}[r["verdict"]] == '"$RC"' and r["landlock_abi"] >= 0'

# What it says is what fluebox run finds.
v=$(status_of "$T/d.json" userns)
run_fb run -q -- true
if [ "$v" = ok ] && [ "$RC" = 0 ]; then ok "doctor: user namespaces available, and fluebox run works"
elif [ "$v" = missing ] && [ "$RC" = 125 ]; then ok "doctor: user namespaces missing, and fluebox run refuses"
else fail "doctor agrees with fluebox run (userns)" "doctor $v, run rc $RC $ERR"; fi
v=$(status_of "$T/d.json" cgroup)
run_fb run -q --mem 64M --pids 64 --cpus 0.5 --require-limits -- true
if { [ "$v" = ok ] && [ "$RC" = 0 ]; } || { [ "$v" != ok ] && [ "$RC" = 125 ]; }; then ok "doctor: cgroups $v, and --require-limits agrees (rc $RC)"
else fail "doctor agrees with --require-limits" "doctor $v, run rc $RC $ERR"; fi
v=$(status_of "$T/d.json" overlay)
run_fb run -q --cow --workspace "$WS" -- true
if { [ "$v" = ok ] && [ "$RC" = 0 ]; } || { [ "$v" = missing ] && [ "$RC" = 125 ]; }; then ok "doctor: overlayfs $v, and --cow agrees (rc $RC)"
else fail "doctor agrees with --cow" "doctor $v, run rc $RC $ERR"; fi
v=$(status_of "$T/d.json" landlock)
run_fb run -q --isolation landlock -- true
if { [ "$v" != missing ] && [ "$RC" = 0 ]; } || { [ "$v" = missing ] && [ "$RC" = 125 ]; }; then ok "doctor: Landlock $v, and --isolation landlock agrees (rc $RC)"
else fail "doctor agrees with --isolation landlock" "doctor $v, run rc $RC $ERR"; fi
if as_root; then
  jtrue "as root: the ordinary users' case is checked too" "$T/d.json" '"userns_unprivileged" in c and c["idmap"]["status"] != "n/a"'
else
  jtrue "rootless: idmapped mounts are not used" "$T/d.json" 'c["idmap"]["status"] == "n/a" and "userns_unprivileged" not in c'
fi

# ---- no user namespaces ----
# A copy the test user can read wherever the checkout is (a 0700 home).
cp "$ROOT/tests/nouserns.py" "$T/nouserns.py"; chmod 644 "$T/nouserns.py"
if /usr/bin/python3 "$T/nouserns.py" true 2>/dev/null; then
  run_as /usr/bin/python3 "$T/nouserns.py" "$FB" doctor --json --workspace "$WS"
  printf '%s' "$OUT" > "$T/n.json"
  [ "$RC" = 1 ] && ok "no user namespaces: doctor exits 1 (only --isolation landlock)" || fail "nouserns doctor rc" "rc $RC $ERR"
  jtrue "no user namespaces: the blocker, its cost and the exact sysctl" "$T/n.json" 'r["verdict"] == "landlock" and c["userns"]["status"] == "missing" and c["userns"]["errno"] == "ENOSPC" and "user.max_user_namespaces" in c["userns"]["fix"] and "--isolation landlock" in c["userns"]["cost"] and r["sysctls"]["user.max_user_namespaces"] == 0'
  jtrue "no user namespaces: what depends on them is not tried, Landlock is" "$T/n.json" 'c["namespaces"]["status"] == "n/a" and c["landlock"]["status"] in ("ok", "degraded")'
  run_as /usr/bin/python3 "$T/nouserns.py" "$FB" doctor --workspace "$WS"
  case "$OUT" in *"verdict: no namespaces here"*"--isolation landlock works instead"*) ok "no user namespaces: the verdict names the fallback" ;; *) fail "nouserns verdict" "$OUT" ;; esac
  run_as /usr/bin/python3 "$T/nouserns.py" "$FB" doctor --fix
  case "$OUT" in *"# user namespaces"*"user.max_user_namespaces"*) ok "--fix prints the fix" ;; *) fail "--fix" "$OUT" ;; esac
else
  skip "no user namespaces (simulated)" "cannot make a user namespace here"
fi

# ---- printouts and bad input ----
run_fb doctor --apparmor-profile /usr/local/bin/fluebox
case "$RC:$OUT" in 0:*"profile fluebox /usr/local/bin/fluebox flags=(unconfined) {"*"  userns,"*"}"*) ok "--apparmor-profile prints a profile granting userns" ;; *) fail "--apparmor-profile" "rc $RC $OUT" ;; esac
expect_err "--apparmor-profile needs an absolute path" 125 "absolute path" doctor --apparmor-profile fluebox
expect_err "unknown option" 125 "unknown option --frob" doctor --frob
expect_err "a missing workspace" 125 "--workspace $T/nope" doctor --workspace "$T/nope"
run_fb doctor --help
case "$RC:$OUT" in 0:*"Usage: fluebox doctor"*"--json"*) ok "doctor --help" ;; *) fail "doctor --help" "$RC $OUT" ;; esac

scratch1=$(ls -d /tmp/fluebox-doctor.* /var/tmp/fluebox-doctor.* 2>/dev/null | wc -l)
[ "$scratch1" -le "$scratch0" ] && ok "no scratch directory left" || fail "scratch left" "$(ls -d /tmp/fluebox-doctor.* 2>/dev/null)"
no_leftovers "nothing left behind (process, cgroup, mount)"
