/* i386_int80: a 64-bit process can still enter the kernel through the 32-bit
 * "int 0x80" gate, where system-call numbers mean different calls. A seccomp
 * filter written for x86_64 numbers only is bypassed that way unless it
 * checks the architecture (the reason libseccomp kills foreign ABIs). Tries
 * getpid (i386 nr 20) and unshare(CLONE_NEWUSER) (i386 nr 310), each in a
 * throw-away child. */
#include "probe.h"
#include <sched.h>

static long int80(long nr, long a1)
{
    long ret;
    __asm__ volatile("int $0x80" : "=a"(ret) : "a"(nr), "b"(a1) : "memory", "cc", "r8", "r9", "r10", "r11");
    return ret;
}

static void do_getpid(struct probe_res *r, void *arg)
{
    (void)arg;
    long pid = int80(20, 0);
    if (pid == (long)getpid())
        res_escape(r, "i386 getpid via int 0x80 = %ld", pid);
    else
        res_note(r, "i386 getpid returned %ld (%s)", pid, pid < 0 ? ename((int)-pid) : "?");
}

static void do_unshare(struct probe_res *r, void *arg)
{
    (void)arg;
    long rc = int80(310, CLONE_NEWUSER);
    if (rc == 0)
        res_escape(r, "i386 unshare(CLONE_NEWUSER) worked");
    else
        res_note(r, "i386 unshare returned %ld (%s)", rc, rc < 0 ? ename((int)-rc) : "?");
}

static void judge(struct probe_res *r, const char *what, int st)
{
    if (WIFSIGNALED(st)) {
        int sig = WTERMSIG(st);
        /* SIGSYS: the seccomp filter killed it. SIGSEGV: the kernel has no
         * 32-bit entry (ia32_emulation off). Both mean blocked. */
        if (sig == SIGSYS || sig == SIGSEGV)
            res_note(r, "%s: killed by %s", what, sigabbrev_np(sig));
        else
            res_error(r, "%s: died of signal %d", what, sig);
    }
}

static void probe_attempt(struct probe_res *r)
{
    int st;
    probe_fork(do_getpid, NULL, r, 5, &st);
    judge(r, "getpid", st);
    probe_fork(do_unshare, NULL, r, 5, &st);
    judge(r, "unshare", st);
}

PROBE_MAIN("i386_int80")
