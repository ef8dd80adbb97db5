# 50-profiles-escapes.sh — the same escape attempts under strict, standard and
# trusted (tests/fixtures/profile-escapes.py): strict blocks every one,
# standard and trusted relax exactly what docs/profiles.md says they do.
# Each attempt is a real system call; the table says what each profile must
# answer ("ok" = the call worked). The escape probes (tests/probes) cover the
# same ground from outside; this checks the profiles' documented differences.
. "$ROOT/tests/lib.sh"

mkdir -p "$T/fx"
cp "$ROOT/tests/fixtures/profile-escapes.py" "$T/fx/"
chmod -R a+rX "$T/fx"

#  attempt                      strict        standard      trusted
expected="
ptrace_traceme                  EPERM         EPERM         ok
unshare_user                    EPERM         EPERM         EPERM
clone3                          ENOSYS        ENOSYS        ENOSYS
tiocsti_highbit                 EPERM         EPERM         EPERM
personality_query               ok            ok            ok
personality_no_aslr             EPERM         EPERM         EPERM
personality_no_aslr_highbit     EPERM         EPERM         EPERM
keyctl                          EPERM         EPERM         EPERM
add_key                         EPERM         EPERM         EPERM
userfaultfd_user_mode           EPERM         EPERM         EPERM
io_uring_setup                  EPERM         EPERM         EPERM
perf_event_open                 EPERM         EPERM         EPERM
process_vm_readv_self           EPERM         EPERM         ok
kcmp_self                       EPERM         EPERM         ok
io_setup                        EPERM         EPERM         ok
name_to_handle_at               EPERM         EPERM         EPERM
mount_tmpfs                     EPERM         EPERM         EPERM
bpf                             EPERM         EPERM         EPERM
seccomp_get_action_avail        EPERM         ok            ok
tiocsetd_highbit                ENOTTY        EPERM         ENOTTY
x32_getpid                      SIGSYS        SIGSYS        SIGSYS
socket_inet                     ok            ok            ok
socket_unix                     ok            ok            ok
socket_netlink_route            ok            ok            ok
socket_netlink_diag             EAFNOSUPPORT  ok            ok
socket_netlink_audit            EAFNOSUPPORT  EAFNOSUPPORT  ok
socket_vsock                    EAFNOSUPPORT  EAFNOSUPPORT  EAFNOSUPPORT
pidfd_open_self                 ok            ok            ok
"

col=0
for prof in strict standard trusted; do
  col=$((col + 1))
  run_fb run --profile "$prof" --ro-bind "$T/fx:/fx" -- python3 /fx/profile-escapes.py
  case "$OUT" in
    *ESCAPES-DONE*) ;;
    *) fail "$prof: escape attempts ran" "exit $RC: $(printf %s "$ERR" | tail -3 | tr '\n' ' ')"; continue ;;
  esac
  echo "$expected" | while read -r name s1 s2 s3; do
    [ -n "$name" ] || continue
    case $col in 1) want=$s1 ;; 2) want=$s2 ;; 3) want=$s3 ;; esac
    got=$(printf '%s\n' "$OUT" | awk -v n="$name" '$1 == n {print $2}')
    if [ "$got" = "$want" ]; then
      ok "$prof: $name -> $want"
    else
      fail "$prof: $name" "got '${got:-nothing}', want $want"
    fi
  done
done

# AF_PACKET needs CAP_NET_RAW, which no profile has: the filter answers in
# strict and standard, the kernel in trusted; never "ok".
for prof in strict standard trusted; do
  run_fb run --profile "$prof" --ro-bind "$T/fx:/fx" -- python3 /fx/profile-escapes.py
  got=$(printf '%s\n' "$OUT" | awk '$1 == "socket_packet" {print $2}')
  case "$got" in
    ok|"") fail "$prof: no packet sockets" "got '${got:-nothing}'" ;;
    *) ok "$prof: no packet sockets ($got)" ;;
  esac
done

# --seccomp-log shows that the filter, not the kernel, said no: the denials
# are listed by name in the report.
run_fb run --profile strict --seccomp-log --report "$T/rep.json" --ro-bind "$T/fx:/fx" -- python3 /fx/profile-escapes.py
for sc in mount keyctl ptrace io_uring_setup perf_event_open bpf; do
  if python3 -c "import json,sys; r=json.load(open('$T/rep.json')); sys.exit(0 if any(d['syscall']=='$sc' for d in r['seccomp']['denied']) else 1)" 2>/dev/null; then
    ok "strict --seccomp-log: the report lists $sc"
  else
    fail "strict --seccomp-log: the report lists $sc" "$(head -c 400 "$T/rep.json" 2>/dev/null)"
  fi
done
no_leftovers "no leftovers after the escape attempts"
