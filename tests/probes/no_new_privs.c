/* no_new_privs: without PR_SET_NO_NEW_PRIVS a setuid-root or file-capability
 * binary reachable in the sandbox would raise privileges at execve. */
#include "probe.h"
#include <sys/prctl.h>

static void probe_attempt(struct probe_res *r)
{
    int v = prctl(PR_GET_NO_NEW_PRIVS, 0, 0, 0, 0);
    if (v == 1)
        res_note(r, "no_new_privs is set");
    else if (v == 0)
        res_escape(r, "no_new_privs is not set: setuid binaries would work");
    else
        res_error(r, "PR_GET_NO_NEW_PRIVS: %s", ename(errno));
}

PROBE_MAIN("no_new_privs")
