/* seccomp_job.c — passing the filters to the sandbox and loading them
 * (seccomp.h): the supervisor's job that looks the filters up or compiles
 * them in a helper process while the sandbox is created, sends them over
 * the control socket, and the sandbox's side that receives and loads them
 * and passes the listener back. */
#include "seccomp_int.h"

#include "ctl.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ---- passing and loading ---- */

static void job_init(struct fb_sc_job *job)
{
    memset(job, 0, sizeof *job);
    job->pr.fd[0] = job->pr.fd[1] = -1;
    job->helper = -1;
    job->errfd = -1;
}

/* Is this process one thread? ("Threads:" in /proc/self/status; when it
 * cannot be read, assume not.) */
static bool single_threaded(void)
{
    char buf[2048];
    if (fb_read_file("/proc/self/status", buf, sizeof buf) < 0)
        return false;
    const char *t = strstr(buf, "\nThreads:");
    return t && strtol(t + 9, NULL, 10) == 1;
}

int seccomp_job_start(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_job *job,
                      struct fb_err *err)
{
    job_init(job);
    if (!p->seccomp.enabled)
        return 0;
    job->active = true;
    uint64_t key = seccomp_policy_key(p);
    static const bool order_fixed[2] = {true, false}; /* load order: header comment */
    bool need[2] = {false, false};
    for (size_t i = 0; i < 2; i++) {
        int fd = new_memfd(err);
        if (fd < 0) {
            seccomp_job_cancel(job);
            return -1;
        }
        job->pr.fd[i] = fd;
        job->pr.n = i + 1;
        unsigned flags = 0;
        if (mode == FB_SCM_AUDIT)
            flags |= SECCOMP_FILTER_FLAG_LOG;
        if (!order_fixed[i] && profile_notifies(p, mode))
            flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
        job->pr.flags[i] = flags;
        const struct fb_sc_precompiled *e =
            precompiled(order_fixed[i], key, prog_mode(order_fixed[i], mode));
        if (!e) {
            need[i] = true;
            continue;
        }
        if (!order_fixed[i])
            job->pr.precompiled = true;
        if (fb_write_all(fd, e->prog, (size_t)e->len * sizeof *e->prog) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "seccomp: writing the filter");
            seccomp_job_cancel(job);
            return -1;
        }
    }
    if (!need[0] && !need[1])
        return 0;
    /* libseccomp takes milliseconds: a helper process compiles while this
     * one creates the sandbox and the sandbox builds its root. Only from a
     * single-threaded process (`run`): forked from the server, whose other
     * threads may hold an allocator lock at that instant, the helper could
     * wait on that lock forever; there the spawn thread compiles itself. */
    int pfd[2];
    bool piped = single_threaded() && pipe2(pfd, O_CLOEXEC) == 0;
    pid_t pid = piped ? fork() : -1;
    if (pid == 0) {
        close(pfd[0]);
        struct fb_err e2 = {0};
        for (size_t i = 0; i < 2; i++) {
            scmp_filter_ctx ctx;
            if (!need[i])
                continue;
            if (build_ctx(p, order_fixed[i], mode, &ctx, &e2) < 0)
                break;
            int rc = export_into(ctx, job->pr.fd[i], &e2);
            seccomp_release(ctx);
            if (rc < 0)
                break;
        }
        if (e2.msg[0])
            fb_write_all(pfd[1], e2.msg, strlen(e2.msg));
        _exit(e2.msg[0] ? 1 : 0);
    }
    if (pid > 0) {
        close(pfd[1]);
        job->helper = pid;
        job->errfd = pfd[0];
        return 0;
    }
    /* No helper: compile here. */
    if (piped) {
        close(pfd[0]);
        close(pfd[1]);
    }
    for (size_t i = 0; i < 2; i++) {
        scmp_filter_ctx ctx;
        if (!need[i])
            continue;
        int rc = build_ctx(p, order_fixed[i], mode, &ctx, err);
        if (rc == 0) {
            rc = export_into(ctx, job->pr.fd[i], err);
            seccomp_release(ctx);
        }
        if (rc < 0) {
            seccomp_job_cancel(job);
            return -1;
        }
    }
    return 0;
}

/* Wait for the helper; its error text, if any, goes to err. */
static int job_wait(struct fb_sc_job *job, struct fb_err *err)
{
    if (job->helper < 0)
        return 0;
    char msg[sizeof err->msg];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(job->errfd, msg + n, sizeof msg - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof msg - 1)
            break;
    }
    msg[n] = 0;
    close(job->errfd);
    job->errfd = -1;
    int st = 0;
    while (waitpid(job->helper, &st, 0) < 0 && errno == EINTR)
        ;
    job->helper = -1;
    if (n)
        return fb_errf(err, FB_EXIT_SETUP, "%s", msg);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: generating the filters failed");
    return 0;
}

int seccomp_job_send(struct fb_sc_job *job, int ctl, struct fb_err *err)
{
    if (!job->active)
        return 0;
    if (job_wait(job, err) < 0) {
        seccomp_job_cancel(job);
        return -1;
    }
    struct fb_msg m = {.type = FB_MSG_SECCOMP_PROG, .code = (int32_t)job->pr.n};
    m.arg = (int64_t)(job->pr.flags[0] | (uint64_t)job->pr.flags[1] << 16);
    /* If this fails the child is gone: it said why (FB_MSG_ERR) before it
     * went, and the caller's next read says so better than EPIPE here. */
    ctl_send(ctl, &m, job->pr.fd, job->pr.n);
    seccomp_job_cancel(job);
    return 0;
}

void seccomp_job_close(struct fb_sc_job *job)
{
    seccomp_programs_close(&job->pr);
    if (job->errfd >= 0)
        close(job->errfd);
    job->errfd = -1;
    job->helper = -1;
}

void seccomp_job_cancel(struct fb_sc_job *job)
{
    if (job->helper > 0) {
        kill(job->helper, SIGKILL);
        while (waitpid(job->helper, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    seccomp_job_close(job);
    job->active = false;
}

int seccomp_send(const struct fb_policy *p, enum fb_sc_mode mode, int ctl, struct fb_err *err)
{
    struct fb_sc_job job;
    if (seccomp_job_start(p, mode, &job, err) < 0)
        return -1;
    return seccomp_job_send(&job, ctl, err);
}

/* Load the program in memfd fd. Returns the listener fd, 0 without one, -1. */
static int load_fd(int fd, unsigned flags, struct fb_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
        st.st_size % (off_t)sizeof(struct sock_filter) ||
        st.st_size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: a filter of %lld bytes",
                       (long long)st.st_size);
    void *ins = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (ins == MAP_FAILED)
        return fb_errno(err, FB_EXIT_SETUP, "seccomp: mapping the filter");
    struct sock_fprog fprog = {.len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter)),
                               .filter = ins};
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
    int e = errno;
    munmap(ins, (size_t)st.st_size);
    if (r < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "loading the seccomp filter");
    }
    return (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? (int)r : 0;
}

int seccomp_receive(const struct fb_policy *p, int ctl, struct fb_sc_progs *out,
                    struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!p->seccomp.enabled)
        return 0;
    struct fb_msg m;
    int fds[FB_CTL_MAX_FDS];
    size_t nfds = FB_CTL_MAX_FDS;
    int r = ctl_recv(ctl, &m, fds, &nfds);
    if (r <= 0 || m.type != FB_MSG_SECCOMP_PROG || m.code < 1 || m.code > FB_SC_NPROG ||
        nfds != (size_t)m.code) {
        for (size_t i = 0; r > 0 && i < nfds; i++)
            close(fds[i]);
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: no filter from the supervisor");
    }
    out->n = nfds;
    for (size_t i = 0; i < nfds; i++) {
        out->fd[i] = fds[i];
        out->flags[i] = (unsigned)((uint64_t)m.arg >> (16 * i)) & 0xffffu;
    }
    return 0;
}

int seccomp_load_progs(const struct fb_sc_progs *pr, int ctl, struct fb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < pr->n; i++) {
        int lfd = rc < 0 ? -1 : load_fd(pr->fd[i], pr->flags[i], err);
        if (lfd < 0) {
            rc = -1;
            continue;
        }
        if (lfd == 0)
            continue;
        /* The listener goes to the supervisor. Until it has it, a notifying
         * syscall here would wait forever: the profile allows sendmsg and
         * close (seccomp_validate checks what init needs). */
        struct fb_msg lm = {.type = FB_MSG_SECCOMP_FD};
        int s = ctl_send(ctl, &lm, &lfd, 1);
        int e = errno;
        close(lfd);
        if (s < 0) {
            errno = e;
            rc = fb_errno(err, FB_EXIT_SETUP, "passing the seccomp listener");
        }
    }
    return rc;
}

int seccomp_receive_and_load(const struct fb_policy *p, int ctl, struct fb_err *err)
{
    struct fb_sc_progs pr;
    if (seccomp_receive(p, ctl, &pr, err) < 0)
        return -1;
    int rc = seccomp_load_progs(&pr, ctl, err);
    for (size_t i = 0; i < pr.n; i++)
        close(pr.fd[i]);
    return rc;
}
