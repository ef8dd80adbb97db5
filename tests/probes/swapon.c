/* swapon/swapoff: on a file that does not exist. The kernel checks
 * CAP_SYS_ADMIN first, so ENOENT means the call was permitted. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    const char *f = "/fluebox-probe-no-such-swapfile";
    long rc = syscall(SYS_swapon, f, 0);
    if (rc == 0 || errno == ENOENT || errno == EINVAL)
        res_escape(r, "swapon passed the privilege check (%s)", rc ? ename(errno) : "0");
    else
        res_note(r, "swapon: %s", ename(errno));
    rc = syscall(SYS_swapoff, f);
    if (rc == 0 || errno == ENOENT || errno == EINVAL)
        res_escape(r, "swapoff passed the privilege check (%s)", rc ? ename(errno) : "0");
    else
        res_note(r, "swapoff: %s", ename(errno));
}

PROBE_MAIN("swapon")
