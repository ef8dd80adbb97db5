/* clone3_ns: clone3(2) passes its flags in a struct in memory, where a
 * seccomp filter cannot read them; a sandbox must refuse clone3 outright
 * (ENOSYS, so libc falls back to clone) or namespaces could be created
 * through it. Tries a new user namespace and a new mount namespace. */
#include "probe.h"
#include <linux/sched.h>
#include <sched.h>

static void try_clone3(struct probe_res *r, unsigned long long flags, const char *name)
{
    struct clone_args a;
    memset(&a, 0, sizeof(a));
    a.flags = flags;
    a.exit_signal = SIGCHLD;
    long pid = syscall(SYS_clone3, &a, sizeof(a));
    if (pid == 0)
        syscall(SYS_exit, 0);
    if (pid > 0) {
        waitpid((pid_t)pid, NULL, 0);
        res_escape(r, "clone3(%s) worked", name);
    } else {
        res_note(r, "clone3(%s): %s", name, ename(errno));
    }
}

static void probe_attempt(struct probe_res *r)
{
    try_clone3(r, CLONE_NEWUSER, "NEWUSER");
    try_clone3(r, CLONE_NEWNS, "NEWNS");
    try_clone3(r, CLONE_NEWNET, "NEWNET");
}

PROBE_MAIN("clone3_ns")
