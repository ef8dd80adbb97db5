/* userns_nested: create a user namespace inside the sandbox. A nested user
 * namespace hands out a full capability set over new namespaces, which opens
 * most of the kernel's namespace-gated attack surface (a long line of CVEs,
 * e.g. CVE-2022-0185 in the filesystem context code). */
#include "probe.h"
#include <sched.h>

static void probe_attempt(struct probe_res *r)
{
    if (unshare(CLONE_NEWUSER) == 0)
        res_escape(r, "unshare(CLONE_NEWUSER) worked");
    else
        res_note(r, "unshare(CLONE_NEWUSER): %s", ename(errno));
    char buf[32];
    if (read_small("/proc/sys/user/max_user_namespaces", buf, sizeof(buf)) > 0)
        res_note(r, "max_user_namespaces=%ld", strtol(buf, NULL, 10));
}

PROBE_MAIN("userns_nested")
