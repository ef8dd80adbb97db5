/* pivot_root: called with two paths that do not exist. The kernel checks the
 * privilege before it looks at the paths, so ENOENT means the call was
 * allowed (escape) and EPERM/ENOSYS means blocked; nothing moves either way. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    long rc = syscall(SYS_pivot_root, "no-such-new-root-fbprobe", "no-such-put-old-fbprobe");
    if (rc == 0)
        res_escape(r, "pivot_root succeeded?");
    else if (errno == ENOENT || errno == EINVAL || errno == ENOTDIR)
        res_escape(r, "pivot_root reached path lookup (%s): privileged", ename(errno));
    else
        res_note(r, "pivot_root: %s", ename(errno));
}

PROBE_MAIN("pivot_root")
