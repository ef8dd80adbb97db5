/* reboot: with wrong magic numbers, so it can never act. The kernel checks
 * CAP_SYS_BOOT before the magic, so EINVAL means the call was permitted. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    long rc = syscall(SYS_reboot, 0x12345678UL, 0x9abcdef0UL, 0UL, NULL);
    if (rc == 0 || errno == EINVAL)
        res_escape(r, "reboot passed the privilege check (%s)", rc ? ename(errno) : "0");
    else
        res_note(r, "reboot: %s", ename(errno));
}

PROBE_MAIN("reboot")
