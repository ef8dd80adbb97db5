/* childjob.c — work in a short-lived child process (childjob.h). The
 * child is made with clone3(CLONE_INTO_CGROUP) where the sandbox has one
 * cgroup v2 directory: moving a process into a cgroup afterwards waits for
 * an RCU grace period (5-15 ms on a busy machine), being born there costs
 * nothing. */
#include "childjob.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <signal.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* fork() as a raw clone3, into the cgroup directory cgfd when >= 0. */
static pid_t clone_into(int cgfd)
{
    struct clone_args a;
    memset(&a, 0, sizeof a);
    a.flags = cgfd >= 0 ? CLONE_INTO_CGROUP : 0;
    a.exit_signal = SIGCHLD;
    a.cgroup = cgfd >= 0 ? (uint64_t)cgfd : 0;
    return (pid_t)syscall(SYS_clone3, &a, sizeof a);
}

int childjob_run(const struct fb_cgroup *cg, int (*fn)(void *arg, struct fb_err *err), void *arg,
                 struct fb_err *err)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    int cgfd = cg ? cgroup_clone_fd(cg) : -1;
    pid_t pid = clone_into(cgfd);
    if (pid < 0 && cgfd >= 0) {
        cgfd = -1; /* not into that cgroup (a threaded one, ...): move there */
        pid = clone_into(-1);
    }
    if (pid < 0) {
        close(pfd[0]);
        close(pfd[1]);
        return fb_errno(err, FB_EXIT_SETUP, "clone3");
    }
    if (pid == 0) {
        close(pfd[0]);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        signal(SIGPIPE, SIG_DFL);
        struct fb_err e = {0};
        int rc = cg && cgfd < 0 ? cgroup_enter(cg, &e) : 0;
        if (rc == 0)
            rc = fn(arg, &e);
        if (rc < 0) {
            if (!e.msg[0])
                snprintf(e.msg, sizeof e.msg, "failed");
            (void)!write(pfd[1], e.msg, strlen(e.msg));
        }
        _exit(rc < 0 ? 1 : 0);
    }
    close(pfd[1]);
    char msg[sizeof err->msg];
    size_t got = 0;
    for (;;) {
        ssize_t n = read(pfd[0], msg + got, sizeof msg - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0 || (got += (size_t)n) >= sizeof msg - 1)
            break;
    }
    msg[got] = 0;
    close(pfd[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (got)
        return fb_errf(err, FB_EXIT_SETUP, "%s", msg);
    if (WIFSIGNALED(st))
        return fb_errf(err, FB_EXIT_SETUP, "the helper was killed by signal %d%s", WTERMSIG(st),
                       WTERMSIG(st) == SIGKILL ? " (out of memory?)" : "");
    return fb_errf(err, FB_EXIT_SETUP, "the helper failed");
}

/* childjob.h. As root: create files as a sandbox user (its tmpfs belongs to
 * its user namespace, where host root is not mapped: EOVERFLOW), keeping
 * the capabilities that read the original's files whatever their modes. */
int childjob_write_as(uid_t uid, gid_t gid, struct fb_err *err)
{
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "securebits");
    setfsgid(gid);
    setfsuid(uid);
    if ((uid_t)setfsuid((uid_t)-1) != uid || (gid_t)setfsgid((gid_t)-1) != gid)
        return fb_errf(err, FB_EXIT_SETUP, "cannot write as uid %u", (unsigned)uid);
    return 0;
}
