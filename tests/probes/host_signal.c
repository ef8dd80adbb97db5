/* host_signal: send a signal to a host process (the runner's helper) by its
 * host pid, with kill() and with a pidfd. SIGCONT is harmless to a process that
 * is not stopped. A pid that exists in the sandbox's own pid namespace is not
 * the helper; its cmdline tells them apart. */
#include "probe.h"
#include <sys/syscall.h>

static void probe_attempt(struct probe_res *r)
{
    long hp = parg_long("hostpid", 0);
    if (hp <= 1) {
        res_skip(r, "no hostpid= given");
        return;
    }
    pid_t pid = (pid_t)hp;
    /* If /proc shows this pid and it is not the helper, it is one of ours. */
    if (is_own_process(pid)) {
        res_note(r, "pid %d is a sandbox process, not the helper", (int)pid);
        return;
    }
    if (kill(pid, SIGCONT) == 0)
        res_escape(r, "kill(%d, SIGCONT) delivered", (int)pid);
    else
        res_note(r, "kill: %s", ename(errno));
    int pfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (pfd >= 0) {
        if (syscall(SYS_pidfd_send_signal, pfd, SIGCONT, NULL, 0) == 0)
            res_escape(r, "pidfd_send_signal delivered");
        else
            res_note(r, "pidfd_send_signal: %s", ename(errno));
        close(pfd);
    } else {
        res_note(r, "pidfd_open: %s", ename(errno));
    }
}

PROBE_MAIN("host_signal")
