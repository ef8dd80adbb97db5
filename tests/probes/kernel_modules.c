/* kernel_modules: load or remove a kernel module, the end of any isolation.
 * Empty image, bad fd, a module name that does not exist: the kernel checks
 * CAP_SYS_MODULE first, so anything but EPERM/ENOSYS means it was permitted. */
#include "probe.h"

static void judge(struct probe_res *r, const char *call, long rc)
{
    if (rc == 0 || (errno != EPERM && errno != ENOSYS && errno != EACCES))
        res_escape(r, "%s passed the privilege check (%s)", call, rc ? ename(errno) : "0");
    else
        res_note(r, "%s: %s", call, ename(errno));
}

static void probe_attempt(struct probe_res *r)
{
    judge(r, "init_module", syscall(SYS_init_module, NULL, 0UL, ""));
    judge(r, "finit_module", syscall(SYS_finit_module, -1, "", 0));
    judge(r, "delete_module",
          syscall(SYS_delete_module, "fluebox_probe_no_such_module", O_NONBLOCK));
}

PROBE_MAIN("kernel_modules")
