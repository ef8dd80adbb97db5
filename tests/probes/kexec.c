/* kexec: load a new kernel. Called only with invalid flags, so nothing can be
 * loaded: the kernel checks CAP_SYS_BOOT first, so EINVAL/EBADF means the call
 * was permitted (escape) and EPERM/ENOSYS means blocked. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    long rc = syscall(SYS_kexec_load, 0UL, 0UL, NULL, 0x8000UL /* no such flag */);
    if (rc == 0 || errno == EINVAL || errno == EBADF)
        res_escape(r, "kexec_load passed the privilege check (%s)", rc ? ename(errno) : "0");
    else
        res_note(r, "kexec_load: %s", ename(errno));
    rc = syscall(SYS_kexec_file_load, -1, -1, 0UL, "", 0x8000UL);
    if (rc == 0 || errno == EINVAL || errno == EBADF)
        res_escape(r, "kexec_file_load passed the privilege check (%s)",
                   rc ? ename(errno) : "0");
    else
        res_note(r, "kexec_file_load: %s", ename(errno));
}

PROBE_MAIN("kexec")
