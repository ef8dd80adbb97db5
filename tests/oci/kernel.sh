# tests/oci/kernel.sh — sourced by the OCI suites: oci_kernel_ok succeeds
# on the kernels the suites are known to pass on (6.6 and later: the
# container's root is an overlay in its user namespace with a tmpfs upper
# layer; before 6.6 fluebox oci puts the upper layer on disk instead, which
# the suites exercise with FLUEBOX_OCI_UPPER=disk but have not been run on
# such a kernel); $OCI_KERNEL_WHY says why not.
oci_kernel_ok() {
    local v maj min
    v=$(uname -r)
    maj=${v%%.*}
    min=${v#*.}
    min=${min%%[!0-9]*}
    OCI_KERNEL_WHY="Linux $v: the OCI suites are known to pass on 6.6 and later only"
    [ "$maj" -gt 6 ] || { [ "$maj" = 6 ] && [ "${min:-0}" -ge 6 ]; }
}
