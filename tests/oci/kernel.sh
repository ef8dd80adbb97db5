# tests/oci/kernel.sh — sourced by the OCI suites: oci_kernel_ok succeeds
# when this kernel can build a container's root (overlayfs in a user
# namespace with a tmpfs upper layer needs user xattrs on tmpfs: Linux 6.6);
# $OCI_KERNEL_WHY says why not.
oci_kernel_ok() {
    local v maj min
    v=$(uname -r)
    maj=${v%%.*}
    min=${v#*.}
    min=${min%%[!0-9]*}
    OCI_KERNEL_WHY="Linux $v: fluebox oci needs 6.6 (overlayfs in a user namespace with a tmpfs upper layer)"
    [ "$maj" -gt 6 ] || { [ "$maj" = 6 ] && [ "${min:-0}" -ge 6 ]; }
}
