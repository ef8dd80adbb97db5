/* host_ptrace: attach to a host process (the runner's helper, which allows
 * ptrace from any process of its uid) with PTRACE_SEIZE, which does not stop
 * it; the attachment ends when this process exits. */
#include "probe.h"
#include <sys/ptrace.h>

static void probe_attempt(struct probe_res *r)
{
    long hp = parg_long("hostpid", 0);
    if (hp <= 1) {
        res_skip(r, "no hostpid= given");
        return;
    }
    pid_t pid = (pid_t)hp;
    if (is_own_process(pid)) {
        res_note(r, "pid %d is a sandbox process, not the helper", (int)pid);
        return;
    }
    if (ptrace(PTRACE_SEIZE, pid, NULL, NULL) == 0)
        res_escape(r, "PTRACE_SEIZE on host pid %d worked", (int)pid);
    else
        res_note(r, "PTRACE_SEIZE: %s", ename(errno));
}

PROBE_MAIN("host_ptrace")
