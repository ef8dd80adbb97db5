/* x32_abi: the x32 ABI shares the x86_64 audit architecture but numbers its
 * calls with bit 30 set; a filter that compares plain numbers misses them.
 * Tries x32 getpid (39) and unshare(CLONE_NEWUSER) (272). Kernels without
 * CONFIG_X86_X32_ABI answer ENOSYS, which is blocked too. */
#include "probe.h"
#include <sched.h>

#define X32_BIT 0x40000000L

static void do_getpid(struct probe_res *r, void *arg)
{
    (void)arg;
    long pid = syscall(X32_BIT | 39);
    if (pid == (long)getpid())
        res_escape(r, "x32 getpid = %ld", pid);
    else
        res_note(r, "x32 getpid: %s", ename(errno));
}

static void do_unshare(struct probe_res *r, void *arg)
{
    (void)arg;
    if (syscall(X32_BIT | 272, CLONE_NEWUSER) == 0)
        res_escape(r, "x32 unshare(CLONE_NEWUSER) worked");
    else
        res_note(r, "x32 unshare: %s", ename(errno));
}

static void probe_attempt(struct probe_res *r)
{
    int st;
    probe_fork(do_getpid, NULL, r, 5, &st);
    if (WIFSIGNALED(st))
        res_note(r, "getpid: killed by %s", sigabbrev_np(WTERMSIG(st)));
    probe_fork(do_unshare, NULL, r, 5, &st);
    if (WIFSIGNALED(st))
        res_note(r, "unshare: killed by %s", sigabbrev_np(WTERMSIG(st)));
}

PROBE_MAIN("x32_abi")
