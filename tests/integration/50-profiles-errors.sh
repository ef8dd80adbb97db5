# 50-profiles-errors.sh — every kind of bad profile gets its own clear,
# one-line error that names the file and the JSON path of the bad field:
# malformed JSON (line and column), wrong types, unknown keys, unknown
# syscalls, extends cycles and missing targets, impossible combinations.
# `profile check` exits 1 on an invalid profile; `run` exits 125 and runs
# nothing.
. "$ROOT/tests/lib.sh"

cd "$T" || exit 1
mk() { # name content
  printf '%s\n' "$2" > "$T/$1.json"
  chmod a+r "$T/$1.json"
}

bad() { # test-name file substring: check fails with exit 1 and says substring, on one line
  local name=$1 file=$2 want=$3
  run_fb profile check "$T/$file.json"
  if [ "$RC" != 1 ]; then fail "$name" "exit $RC, want 1; stderr: $ERR"; return; fi
  case "$ERR" in
    *"$want"*) ;;
    *) fail "$name" "stderr lacks '$want': $ERR"; return ;;
  esac
  if [ "$(printf '%s\n' "$ERR" | wc -l)" != 1 ]; then fail "$name" "more than one line: $ERR"; return; fi
  ok "$name"
}

# --- malformed JSON -----------------------------------------------------------
mk broken '{
  "name": "broken",
  "limits": {"memory": "1G",}
}'
bad "malformed JSON: file, line and column" broken "broken.json:3:"
run_fb profile check "$T/broken.json"
case "$ERR" in *"broken.json:3:"[0-9]*": invalid JSON"*) ok "malformed JSON: 'FILE:LINE:COL: invalid JSON'" ;; *) fail "malformed JSON format" "$ERR" ;; esac
mk dupkey '{"name": "a",
 "name": "b"}'
bad "a duplicate key is an error with its line" dupkey "dupkey.json:2:"
mk empty ''
bad "an empty file is invalid JSON" empty "empty.json:"
mk array '[1, 2]'
bad "a profile must be an object" array "a profile is a JSON object, got an array"

# --- types -------------------------------------------------------------------------
mk t1 '{"extends": "standard", "limits": {"memory": [512]}}'
bad "wrong type: limits.memory" t1 "t1.json: limits.memory: expected a size such as"
mk t2 '{"extends": "standard", "limits": {"pids": "many"}}'
bad "wrong type: limits.pids" t2 "t2.json: limits.pids: expected a number or \"unlimited\""
mk t3 '{"extends": "standard", "network": {"host_allowed": "yes"}}'
bad "wrong type: network.host_allowed" t3 "t3.json: network.host_allowed: expected true or false, got a string"
mk t4 '{"extends": "standard", "seccomp": {"rules": {"name": "x"}}}'
bad "wrong type: seccomp.rules" t4 "t4.json: seccomp.rules: expected an array of rules, got an object"
mk t5 '{"extends": "standard", "seccomp": {"rules": [{"name": 42, "action": "allow"}]}}'
bad "wrong type: seccomp.rules[0].name" t5 "t5.json: seccomp.rules[0].name: expected a syscall name, got an integer"
mk t6 '{"extends": "standard", "uid": "root"}'
bad "wrong type: uid" t6 "t6.json: uid: expected a numeric id"
mk t7 '{"extends": "standard", "environment": {"set": {"A": 1}}}'
bad "wrong type: environment.set.A" t7 "t7.json: environment.set.A: expected a string, got an integer"
mk t8 '{"extends": "standard", "filesystem": {"tmpfs": [7]}}'
bad "wrong type: filesystem.tmpfs[0]" t8 "t8.json: filesystem.tmpfs[0]: expected \"DST[:SIZE]\" or an object"

# --- unknown keys ------------------------------------------------------------------
mk k1 '{"extends": "standard", "limtis": {}}'
bad "unknown top-level key" k1 "k1.json: limtis: unknown key (expected one of:"
mk k2 '{"extends": "standard", "limits": {"memroy": "1G"}}'
bad "unknown key in limits" k2 "k2.json: limits.memroy: unknown key"
mk k3 '{"extends": "standard", "seccomp": {"rules": [{"name": "read", "action": "allow", "why": "x"}]}}'
bad "unknown key in a rule" k3 "k3.json: seccomp.rules[0].why: unknown key"
mk k4 '{"extends": "standard", "seccomp": {"rules": [{"name": "ioctl", "action": "allow", "args": [{"index": 1, "value": 1, "cmp": "eq"}]}]}}'
bad "unknown key in a condition" k4 "k4.json: seccomp.rules[0].args[0].cmp: unknown key"
mk k5 '{"extends": "standard", "namespaces": {"user": false}}'
bad "the user namespace cannot be turned off" k5 "k5.json: namespaces.user: the user namespace is always created"

# --- syscalls, actions, conditions -----------------------------------------------
mk my-agent '{"extends": "standard", "seccomp": {"rules": [
  {"name": "read", "action": "allow"},
  {"name": "write", "action": "allow"},
  {"name": "close", "action": "allow"},
  {"name": "opn", "action": "allow"}]}}'
bad "unknown syscall, named by rule index" my-agent 'my-agent.json: seccomp.rules[3].name: unknown syscall "opn"'
mk s2 '{"extends": "standard", "seccomp": {"rules": [{"names": ["read", "wirte"], "action": "allow"}]}}'
bad "unknown syscall in a names list" s2 's2.json: seccomp.rules[0].names[1]: unknown syscall "wirte"'
mk s3 '{"extends": "standard", "seccomp": {"rules": [{"name": "read", "action": "permit"}]}}'
bad "unknown action" s3 's3.json: seccomp.rules[0].action: expected "allow", "errno", "errno(ENAME)", "kill" or "log", got "permit"'
mk s4 '{"extends": "standard", "seccomp": {"rules": [{"name": "read", "action": "errno(EFOO)"}]}}'
bad "unknown errno name" s4 "s4.json: seccomp.rules[0].action: expected"
mk s5 '{"extends": "standard", "seccomp": {"rules": [{"name": "read", "action": "allow", "errno": "EPERM"}]}}'
bad "an errno on a non-errno action" s5 "s5.json: seccomp.rules[0].errno: only the \"errno\" action takes an errno"
mk s6 '{"extends": "standard", "seccomp": {"rules": [{"name": "ioctl", "action": "allow", "args": [{"index": 1, "op": "masked_eq", "value": 1}]}]}}'
bad "masked_eq needs a mask" s6 "s6.json: seccomp.rules[0].args[0].mask: missing"
mk s7 '{"extends": "standard", "seccomp": {"rules": [{"name": "ioctl", "action": "allow", "args": [{"index": 1, "value": "0x100005412"}]}]}}'
bad "a value that does not fit a 32-bit argument" s7 "s7.json: seccomp.rules[0].args[0].value: 0x100005412 does not fit argument 1 of ioctl, which is 32 bits"
mk s8 '{"extends": "standard", "seccomp": {"rules": [{"name": "clone", "action": "allow", "args": [{"index": 7, "value": 1}]}]}}'
bad "an argument index out of range" s8 "s8.json: seccomp.rules[0].args[0].index: expected an argument index from 0 to 5"
mk s9 '{"extends": "standard", "seccomp": {"rules": [{"name": "clone", "action": "allow", "args": [{"index": 0, "op": "contains", "value": 1}]}]}}'
bad "an unknown comparison" s9 "s9.json: seccomp.rules[0].args[0].op: expected one of eq, ne, lt, le, gt, ge, masked_eq"
mk s10 '{"extends": "standard", "seccomp": {"rules": [{"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_NOPE"}]}]}}'
bad "an unknown constant" s10 's10.json: seccomp.rules[0].args[0].value: "AF_NOPE" is not a number or a known constant'
mk s11 '{"extends": "standard", "seccomp": {"rules": [{"name": "mmap", "action": "allow", "args": [{"index": 2, "op": "masked_eq", "value": 6, "mask": 2}]}]}}'
bad "a value with bits outside its mask" s11 "s11.json: seccomp.rules[0].args[0].value: value has bits outside mask"
mk s12 '{"seccomp": {"default": "errno(EPERM)", "rules": [{"name": "exit_group", "action": "allow"}]}}'
bad "a profile that denies what fluebox's init needs" s12 "which fluebox's init needs to run the command"

# --- what libseccomp can express (docs/profiles.md, "Seccomp rules") ----------------
mk r1 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EAFNOSUPPORT)"},
  {"name": "read", "action": "allow"},
  {"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_UNIX"}]}]}}'
bad "a conditional rule after an unconditional one for the same syscall" r1 'r1.json: seccomp.rules[2]: "socket" has an unconditional rule (rules[0]); conditional rules for it would be ignored'
mk r2 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_UNIX"}]},
  {"names": ["bind", "socket"], "action": "errno(EAFNOSUPPORT)"}]}}'
bad "an unconditional rule after conditional ones (names list)" r2 'r2.json: seccomp.rules[1]: "socket" has conditional rules (rules[0]); an unconditional rule for it would replace them'
mk r3 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "getppid", "action": "errno(EPERM)"}, {"name": "getppid", "action": "errno(EACCES)"}]}}'
bad "two unconditional rules with different actions" r3 'r3.json: seccomp.rules[1]: "getppid" already has an unconditional rule with another action (rules[0])'
mk r4 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "ioctl", "action": "allow", "args": [{"index": 1, "op": "masked_eq", "mask": "0xff00", "value": "0x5400"}]},
  {"name": "ioctl", "action": "errno(ENOTTY)", "args": [{"index": 1, "value": ["FIONBIO", "TCGETS"]}]}]}}'
bad "rules with different actions that match the same call" r4 'r4.json: seccomp.rules[1]: "ioctl": this rule (errno(ENOTTY)) and rules[0] (allow) both match ioctl(0, 0x5421); the rules of a syscall must exclude each other'
mk r4b '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "value": "AF_PACKET"}]},
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 1, "op": "masked_eq", "mask": "0xf", "value": "SOCK_RAW"}]}]}}'
bad "rules with the same action that match the same call" r4b 'r4b.json: seccomp.rules[1]: "socket": this rule and rules[0] both match socket(17, 3); the rules of a syscall must exclude each other'
mk r4c '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "value": ["AF_PACKET", "AF_PACKET"]}]}]}}'
run_fb profile check "$T/r4c.json"
[ "$RC" = 0 ] && ok "the same rule twice is fine" || fail "the same rule twice" "$ERR"
mk r5 '{"extends": "strict", "seccomp": {"rules": [
  {"name": "socket", "action": "allow", "args": [{"index": 0, "value": "AF_INET"}]},
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "op": "ne", "value": "AF_INET"}, {"index": 1, "value": 1}]}]}}'
run_fb profile check "$T/r5.json"
[ "$RC" = 0 ] && ok "rules with different actions and exclusive conditions are fine" || fail "exclusive rules" "$ERR"
mk r6 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "mmap", "action": "errno(ENOMEM)", "args": [{"index": 1, "op": "gt", "value": "0x40000000"}, {"index": 1, "op": "lt", "value": "0x80000000"}]}]}}'
bad "two comparisons of one argument in a rule" r6 "r6.json: seccomp.rules[0].args[1].index: argument 1 is already compared by args[0] (a rule compares each argument once)"
mk r7 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "value": [17, 40]}, {"index": 1, "value": [1, 2]}]}]}}'
bad "two lists of values in one rule" r7 "r7.json: seccomp.rules[0].args[1].value: only one condition of a rule may list several values"
mk r8 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "op": "gt", "value": [17, 40]}]}]}}'
bad "a list of values with a range" r8 'r8.json: seccomp.rules[0].args[0].value: a list of values needs "eq" or "masked_eq"'
mk r9 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "mmap", "action": "errno(EPERM)", "args": [{"index": 1, "op": "lt", "value": 0}]}]}}'
bad "a condition that never holds" r9 "r9.json: seccomp.rules[0].args[0].value: the condition could never hold"
mk r10 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "mmap", "action": "errno(EPERM)", "args": [{"index": 0, "op": "ne", "value": 1}, {"index": 1, "op": "ne", "value": 2}]}]}}'
bad "conditions that make too many comparisons" r10 'r10.json: seccomp.rules[0]: "mmap": the conditions make more than 128 comparisons'
mk r11 '{"extends": "standard", "seccomp": {"rules": [
  {"name": "socket", "action": "errno(EPERM)", "args": [{"index": 0, "value": ["AF_INET", "0x100000002"]}]}]}}'
bad "a listed value too large for a 32-bit argument" r11 "r11.json: seccomp.rules[0].args[0].value[1]: 0x100000002 does not fit argument 0 of socket, which is 32 bits"
mk r12 '{"extends": "standard", "seccomp": {"rules": [{"name": "getppid", "action": "allow"}, {"name": "getppid", "action": "allow"}]}}'
run_fb profile check "$T/r12.json"
[ "$RC" = 0 ] && ok "a rule with the profile's default action is accepted (and changes nothing)" || fail "a rule equal to the default" "$ERR"

# --- extends --------------------------------------------------------------------
mk cyc-a '{"extends": "cyc-b.json"}'
mk cyc-b '{"extends": "cyc-a.json"}'
bad "an extends cycle is named" cyc-a "\"extends\" makes a cycle:"
run_fb profile check "$T/cyc-a.json"
case "$ERR" in *"cyc-a.json -> "*"cyc-b.json -> "*"cyc-a.json"*) ok "the cycle message shows the chain" ;; *) fail "the cycle message shows the chain" "$ERR" ;; esac
mk self '{"extends": "./self.json"}'
bad "a profile extending itself" self "\"extends\" makes a cycle"
mk miss '{"extends": "nowhere.json"}'
bad "a missing extends file" miss 'miss.json: extends: "nowhere.json": No such file or directory'
mk missb '{"extends": "strictest"}'
bad "a missing built-in profile" missb 'missb.json: extends: "strictest": no such built-in profile'
mk deep '{"extends": "mid.json", "limits": {"pids": 0}}'
mk mid '{"extends": "strict"}'
bad "errors in an extending file name that file" deep "deep.json: limits.pids: expected a number from 1"
mk deep2 '{"extends": "mid2.json"}'
mk mid2 '{"extends": "strict", "limits": {"nofile": 3}}'
bad "errors in an extended file name the extended file" deep2 "mid2.json: limits.nofile: expected a number from 16"

# --- impossible combinations -------------------------------------------------------
expect_err "strict with --net host is refused" 125 'profile "strict" does not permit sharing the host network' run --profile strict --net host -- true
expect_err "standard with --net host is refused" 125 "does not permit sharing the host network" run --profile standard --net host -- true
mk c1 '{"extends": "strict", "network": {"mode": "host"}}'
bad "network host in a profile without host_allowed" c1 'c1.json: network.mode: "host" needs "host_allowed": true'
mk c2 '{"extends": "standard", "network": {"mode": "none", "allow": ["pypi.org"]}}'
bad "an allowlist with mode none" c2 'c2.json: network.allow: an allowlist needs "mode": "allow"'
mk c3 '{"extends": "trusted", "network": {"mode": "host", "allow": ["pypi.org"]}}'
bad "an allowlist with mode host" c3 "c3.json: network.allow: an allowlist cannot be combined"
mk c4 '{"extends": "standard", "namespaces": {"uts": false}, "hostname": "box"}'
bad "a hostname without the uts namespace" c4 "c4.json: hostname: needs the uts namespace"
mk c5 '{"extends": "standard", "limits": {"memory": "1M"}}'
bad "a memory limit below 4M" c5 "c5.json: limits.memory: too small"
mk c6 '{"extends": "standard", "network": {"mode": "allow", "allow": ["*"]}}'
bad "a bad allowlist pattern" c6 "c6.json: network.allow[0]:"
mk c7 '{"extends": "standard", "filesystem": {"ro_bind": ["/no/such/dir"]}}'
bad "a missing bind source" c7 "c7.json: filesystem.ro_bind[0]: /no/such/dir: No such file or directory"
mk c8 '{"extends": "standard", "filesystem": {"tmpfs": ["/a/../b"]}}'
bad "a sandbox path with .." c8 'c8.json: filesystem.tmpfs[0]: ".." is not allowed'
mk c9 '{"extends": "standard", "environment": {"pass": ["A=B"]}}'
bad "a bad variable name" c9 'c9.json: environment.pass[0]: "A=B" is not a valid variable name'

# --- what run and check do with them -----------------------------------------------
run_fb run --profile "$T/my-agent.json" -- echo SHOULD-NOT-RUN
if [ "$RC" = 125 ] && [ -z "$OUT" ]; then ok "run with an invalid profile exits 125 and runs nothing"; else fail "run with an invalid profile" "exit $RC, out $OUT"; fi
case "$ERR" in *'my-agent.json: seccomp.rules[3].name: unknown syscall "opn"'*) ok "run names the bad field too" ;; *) fail "run names the bad field" "$ERR" ;; esac
expect_err "--profile with a missing file" 125 "nope.json: No such file or directory" run --profile "$T/nope.json" -- true
expect_err "--profile with an unknown name" 125 "strictest: no such built-in profile (built-in:" run --profile strictest -- true
mkdir -p "$T/dir.json"
expect_err "a directory is not a profile" 125 "not a regular file" run --profile "$T/dir.json" -- true
mk good '{"extends": "strict", "limits": {"pids": 64}}'
expect_out "profile check of a valid file" "good.json: ok (extends strict" profile check "$T/good.json"
run_fb profile check "$T/good.json" "$T/my-agent.json"
[ "$RC" = 1 ] && ok "profile check of several files fails when one does" || fail "profile check of several files" "exit $RC"
expect_rc "profile with no subcommand is a usage error" 125 profile
expect_rc "profile frobnicate is a usage error" 125 profile frobnicate
# One convention (docs/profiles.md): 125 when fluebox cannot do what was
# asked, 1 only for check's "no".
expect_err "profile show of a missing profile exits 125, as run --profile does" 125 "no such built-in profile" profile show nosuch
expect_err "profile bpf of a missing profile exits 125" 125 "no such built-in profile" profile bpf nosuch
expect_err "run --profile of a missing profile exits 125" 125 "no such built-in profile" run --profile nosuch -- true
expect_rc "profile show with two operands is a usage error (125)" 125 profile show standard strict
expect_rc "profile check of a missing profile is check's no (1)" 1 profile check nosuch
no_leftovers "no leftovers after bad profiles"
