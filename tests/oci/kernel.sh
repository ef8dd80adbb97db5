# tests/oci/kernel.sh — sourced by the OCI suites: oci_kernel_ok [MAJ.MIN]
# succeeds on a kernel at least that new (default 6.6), the oldest each
# suite is known to pass on; $OCI_KERNEL_WHY says why not.
#   5.19  fluebox oci itself (idmapped layers under an overlay made in a user
#         namespace); before 6.6 the root's upper layer is an ext4 on a loop
#         device instead of a tmpfs. tests/suites/oci-run.sh has passed on
#         Debian 12's 6.1 (in a user-mode-linux guest).
#   6.6   the containerd scenarios, the conformance suite and the probes'
#         oci column: run on 6.6+ only so far (in that guest containerd itself
#         fails some scenarios with runc as with fluebox).
# FB_OCI_ANY_KERNEL=1 runs them anyway.
oci_kernel_ok() {
    local want=${1:-6.6} v maj min wmaj wmin
    v=$(uname -r)
    maj=${v%%.*}
    min=${v#*.}
    min=${min%%[!0-9]*}
    wmaj=${want%%.*}
    wmin=${want#*.}
    OCI_KERNEL_WHY="Linux $v: this suite is known to pass on $want and later only"
    [ -n "${FB_OCI_ANY_KERNEL:-}" ] || [ "$maj" -gt "$wmaj" ] ||
        { [ "$maj" = "$wmaj" ] && [ "${min:-0}" -ge "$wmin" ]; }
}
