/* sess_init.c — pid 1 of a session sandbox. init_main() execs a fresh image of
 * fluebox once capabilities are dropped (sess_init_image(): undumpable
 * again, then seccomp loaded), or, where it cannot, calls sess_init_main()
 * once seccomp is loaded; either way this loop then serves the server's
 * records (sess_sandbox.h) on the control socket:
 *
 *   exec     fork; the child takes the pipes the server passed as 0/1/2 and
 *            execs through init_exec_child(): same namespaces, cgroup,
 *            seccomp and uid as everything else in the sandbox. Output never
 *            passes through init: the server reads the pipes itself.
 *   kill     signal an exec's process group.
 *   sock     an IPv4 and an IPv6 TCP socket of the sandbox's network
 *            namespace, passed back to the server, which connects them to
 *            a published port (server_port.c); init does nothing else
 *            with them.
 *   file ops read, write, stat, readdir, mkdir, rm, rename: sess_files.c,
 *            inside the sandbox's mount namespace as the sandbox user; the
 *            bulk transfers and recursive removals they start are moved on
 *            a step per turn of this loop, so code in the session cannot
 *            stop them as it could a helper process.
 *
 * init keeps the network's listening sockets (the resolver's, the allowed
 * ports') and watches them while the server holds none (egress_park): at
 * the first query or connection it hands them over ("net") and watches
 * them no more.
 *
 * init also reaps every orphan. If the server goes away (EOF on the control
 * socket) init exits, which kills everything in the sandbox. */
#include "init.h"

#include "ctl.h"
#include "pty.h"
#include "seccomp.h"
#include "sess_files.h"
#include "sess_sandbox.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

struct job {
    pid_t pid;
    int64_t tag;
};

static struct job *jobs;
static size_t njobs, capjobs;
static int ctl_fd = -1;
static const struct fb_policy *pol;
static char *recbuf;

static void job_add(pid_t pid, int64_t tag)
{
    if (njobs == capjobs) {
        capjobs = capjobs ? capjobs * 2 : 16;
        jobs = fb_xrealloc(jobs, capjobs * sizeof *jobs);
    }
    jobs[njobs++] = (struct job){pid, tag};
}

static struct job *job_by_pid(pid_t pid)
{
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].pid == pid)
            return &jobs[i];
    return NULL;
}

static struct job *exec_by_tag(int64_t tag)
{
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].tag == tag)
            return &jobs[i];
    return NULL;
}

static void job_del(struct job *j)
{
    *j = jobs[--njobs];
}

/* ---- replies ---- */

static void send_rec_fds(json_t *hdr, const void *payload, size_t plen, int *fds, size_t nfds)
{
    size_t len;
    char *rec = srec_encode(hdr, payload, plen, &len);
    if (!rec)
        return;
    /* Blocking: the server reads its control sockets promptly (and a
     * shortage of kernel memory is waited out, ctl.c). A record that cannot
     * be sent is a request never answered: if the server is gone, so is
     * init; otherwise it ends the session rather than leave it hanging. */
    if (srec_send(ctl_fd, rec, len, fds, nfds, 0) < 0)
        _exit(errno == EPIPE || errno == ECONNRESET ? 0 : FB_EXIT_SETUP);
    free(rec);
}

static void send_rec(json_t *hdr, const void *payload, size_t plen)
{
    send_rec_fds(hdr, payload, plen, NULL, 0);
}

void sinit_reply_ok(int64_t tag, json_t *result, const void *payload, size_t plen)
{
    json_t *h = json_pack("{s:s, s:I, s:o}", "op", "reply", "t", (json_int_t)tag, "result",
                          result ? result : json_object());
    send_rec(h, payload, plen);
}

void sinit_reply_errno(int64_t tag, int e)
{
    json_t *h = json_pack("{s:s, s:I, s:i}", "op", "reply", "t", (json_int_t)tag, "errno",
                          e > 0 ? e : EIO);
    send_rec(h, NULL, 0);
}

/* fork() without glibc's fork(): that one takes every malloc arena lock
 * and the stdio list lock first. This init is a clone of one thread of a
 * multi-threaded server (sess_sandbox.c's worker; egress resolver threads may
 * exist too): a lock another server thread held at that instant is held
 * forever in our copy, and glibc's fork() would wait for it. A raw clone
 * takes no lock; the child uses only this thread's own arena. */
static pid_t raw_fork(void)
{
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
}

static char **strv_from_json(json_t *a)
{
    size_t n = json_array_size(a);
    char **v = fb_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        v[i] = (char *)(s ? s : "");
    }
    return v;
}

static void lower_limit(int res, int64_t v)
{
    if (v <= 0)
        return;
    struct rlimit rl;
    if (getrlimit(res, &rl) < 0)
        return;
    rlim_t n = (rlim_t)v;
    if (rl.rlim_max != RLIM_INFINITY && n > rl.rlim_max)
        n = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = n;
    setrlimit(res, &rl);
}

static void op_exec(int64_t tag, json_t *h, int *fds, size_t nfds)
{
    json_t *argv = json_object_get(h, "argv"), *env = json_object_get(h, "env");
    const char *cwd = hstr(h, "cwd");
    if (!json_is_array(argv) || !json_array_size(argv) || !json_is_array(env) || nfds < 2)
        return sinit_reply_errno(tag, EINVAL);
    bool has_stdin = hbool(h, "stdin") && nfds >= 3;
    /* "tty": a pseudo-terminal of the sandbox's own devpts, the command's
     * controlling terminal in a new session; its master goes to the server
     * with the "started" record. */
    json_t *tty = json_object_get(h, "tty");
    int ptm = -1, pts = -1;
    if (json_is_object(tty)) {
        ptm = fb_pty_open((int)hint(tty, "rows", 24), (int)hint(tty, "cols", 80), &pts);
        if (ptm < 0)
            return sinit_reply_errno(tag, errno);
    }
    pid_t pid = raw_fork();
    if (pid < 0) {
        int e = errno;
        if (ptm >= 0) {
            close(ptm);
            close(pts);
        }
        return sinit_reply_errno(tag, e);
    }
    if (pid == 0) {
        if (ptm >= 0) {
            if (fb_pty_take(pts) < 0)
                _exit(FB_EXIT_SETUP);
        } else {
            setpgid(0, 0);
            int in = has_stdin ? fds[2] : open("/dev/null", O_RDONLY | O_CLOEXEC);
            /* fds are >= 3 here (0, 1, 2 are /dev/null in init), so dup2
             * never clobbers one of them before it is used. */
            if (in < 0 || dup2(in, 0) < 0 || dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0)
                _exit(FB_EXIT_SETUP);
        }
        umask(022);
        lower_limit(RLIMIT_NOFILE, hint(h, "nofile", 0));
        lower_limit(RLIMIT_FSIZE, hint(h, "fsize", 0));
        char **av = strv_from_json(argv), **ev = strv_from_json(env);
        init_exec_child(pol, av, ev, cwd, -1);
    }
    if (ptm < 0)
        setpgid(pid, pid); /* both sides, so kill(-pid) works at once */
    job_add(pid, tag);
    send_rec_fds(json_pack("{s:s, s:I, s:i}", "op", "started", "t", (json_int_t)tag, "pid", (int)pid),
                 NULL, 0, ptm >= 0 ? &ptm : NULL, ptm >= 0 ? 1 : 0);
    if (ptm >= 0) {
        close(ptm);
        close(pts);
    }
}

/* Sockets of this network namespace for a published port's connection. */
static void op_sock(int64_t tag)
{
    int fds[2];
    size_t n = 0;
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[0] < 0)
        return sinit_reply_errno(tag, errno);
    n++;
    fds[1] = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[1] >= 0)
        n++;
    size_t len;
    char *rec = srec_encode(json_pack("{s:s, s:I, s:{}}", "op", "reply", "t", (json_int_t)tag, "result"),
                            NULL, 0, &len);
    if (rec)
        srec_send(ctl_fd, rec, len, fds, n, 0);
    free(rec);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

static void op_kill(json_t *h)
{
    int64_t target = hint(h, "target", -1);
    int sig = (int)hint(h, "sig", SIGKILL);
    if (sig <= 0 || sig >= 32)
        return;
    struct job *j = exec_by_tag(target);
    if (j) {
        if (kill(-j->pid, sig) < 0)
            kill(j->pid, sig);
        return;
    }
    /* A file operation whose deadline passed at the server. */
    sfile_cancel(target);
}

static void dispatch(json_t *h, const char *payload, size_t plen, int *fds, size_t nfds)
{
    const char *op = hstr(h, "op");
    int64_t tag = hint(h, "t", -1);
    if (!op)
        return;
    if (!strcmp(op, "exec"))
        op_exec(tag, h, fds, nfds);
    else if (!strcmp(op, "kill"))
        op_kill(h);
    else if (!strcmp(op, "sock"))
        op_sock(tag);
    else if (!sfile_dispatch(op, tag, h, payload, plen, fds, nfds))
        sinit_reply_errno(tag, ENOSYS);
}

static void reap(void)
{
    int status;
    pid_t w;
    while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
        struct job *j = job_by_pid(w);
        if (!j)
            continue; /* an orphan */
        send_rec(json_pack("{s:s, s:I, s:i}", "op", "exit", "t", (json_int_t)j->tag, "status",
                           status),
                 NULL, 0);
        job_del(j);
    }
}

/* The network's listening sockets init keeps while the server holds none
 * (egress_park): watched until the first of them is readable, then handed
 * to the server, which serves them from then on. */
static const int *net_fds;
static size_t nnet_fds;
static bool net_watch;

static void net_hand_over(void)
{
    net_watch = false;
    for (size_t i = 0; i < nnet_fds; i += 8) {
        size_t n = nnet_fds - i < 8 ? nnet_fds - i : 8;
        send_rec_fds(json_pack("{s:s}", "op", "net"), NULL, 0, (int *)net_fds + i, n);
    }
}

/* The loop itself, in whichever image runs it: scratch is the scratch
 * space's descriptor that init keeps (the server takes it back when it
 * needs it), or -1; net, the network's listening sockets it keeps. */
__attribute__((noreturn)) static void init_loop(const struct fb_policy *p, int ctl, int scratch,
                                                const int *net, size_t nnet)
{
    pol = p;
    ctl_fd = ctl;
    net_fds = net;
    nnet_fds = nnet;
    net_watch = nnet > 0;
    /* The server's descriptors came along with the clone (other sessions'
     * pipes and control sockets, client connections): none of them belongs
     * here, and a copy would hold their other ends open. */
    int keep[2 + FB_CTL_MAX_FDS];
    size_t nk = 0;
    keep[nk++] = ctl;
    if (scratch >= 0)
        keep[nk++] = scratch;
    for (size_t i = 0; i < nnet && nk < FB_ARRAY_LEN(keep); i++)
        keep[nk++] = net[i];
    fb_close_except(keep, nk);
    /* A write past RLIMIT_FSIZE must fail with EFBIG, not kill init. */
    signal(SIGXFSZ, SIG_IGN);
    umask(0);
    if (chdir("/") < 0)
        _exit(FB_EXIT_SETUP);
    /* Nothing of the server's stdio stays inside the sandbox. */
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        for (int i = 0; i < 3; i++)
            if (nul != i)
                dup2(nul, i);
        if (nul > 2)
            close(nul);
    }
    /* SIGCHLD is blocked already (init_main); read it from a signalfd. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    recbuf = fb_xmalloc(SREC_MAX);
    /* READY names the scratch root's descriptor here, which the server
     * takes back with pidfd_getfd when it needs it (sandbox_scratch_park). */
    struct fb_msg ready = {.type = FB_MSG_READY,
                           .status = (scratch >= 0 ? FB_READY_SCRATCH : 0) |
                                     (nnet ? FB_READY_NET : 0),
                           .arg = scratch};
    snprintf(ready.text, sizeof ready.text, "ready");
    if (sfd < 0 || ctl_send(ctl, &ready, NULL, 0) < 0)
        _exit(FB_EXIT_SETUP);

    struct pollfd *pf = NULL;
    size_t pfcap = 0;
    for (;;) {
        size_t nw = net_watch ? nnet_fds : 0;
        size_t need = 2 + nw + sfile_npoll();
        if (need > pfcap) {
            pfcap = need * 2;
            pf = fb_xrealloc(pf, pfcap * sizeof *pf);
        }
        pf[0] = (struct pollfd){ctl, POLLIN, 0};
        pf[1] = (struct pollfd){sfd, POLLIN, 0};
        for (size_t i = 0; i < nw; i++)
            pf[2 + i] = (struct pollfd){net_fds[i], POLLIN, 0};
        size_t n = 2 + nw + sfile_pollfds(pf + 2 + nw);
        /* A removal under way: look, do not wait. */
        if (poll(pf, n, sfile_busy() ? 0 : -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(FB_EXIT_SETUP);
        }
        bool net_ready = false;
        for (size_t i = 0; i < nw; i++)
            net_ready |= pf[2 + i].revents != 0;
        if (net_ready)
            net_hand_over();
        sfile_step(n > 2 + nw);
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                ;
            reap();
        }
        if (!pf[0].revents)
            continue;
        for (int k = 0; k < 64; k++) {
            json_t *h;
            const char *payload;
            size_t plen;
            int fds[8];
            size_t nfds = 8;
            int r = srec_recv(ctl, recbuf, MSG_DONTWAIT, &h, &payload, &plen, fds, &nfds);
            if (r == 0)
                _exit(0); /* the server is gone: so is the sandbox */
            if (r < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    break;
                if (errno == EPROTO)
                    continue;
                _exit(FB_EXIT_SETUP);
            }
            dispatch(h, payload, plen, fds, nfds);
            json_decref(h);
            for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        }
        /* Reap between batches too: a fast exec may be done already. */
        reap();
    }
}

void sess_init_main(const struct fb_policy *p, int ctl)
{
    const int *net;
    size_t nnet = sandbox_session_netfds(&net);
    init_loop(p, ctl, sandbox_session_scratch(), net, nnet);
}

/* A descriptor number from the command line: digits only, in range. */
static int arg_fd(const char *a, int min)
{
    char *end;
    errno = 0;
    long v = strtol(a, &end, 10);
    if (errno || end == a || *end || v < min || v > INT_MAX)
        return -2;
    return (int)v;
}

/* "-" or descriptor numbers separated by commas, each a socket. */
static bool arg_fd_list(const char *a, int *fds, size_t *n)
{
    *n = 0;
    if (!strcmp(a, "-"))
        return true;
    char buf[FB_NETFDS_ARG_MAX];
    if (strlen(a) >= sizeof buf)
        return false;
    strcpy(buf, a);
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        struct stat st;
        int fd = arg_fd(t, 3);
        if (fd < 0 || *n >= FB_CTL_MAX_FDS || fstat(fd, &st) < 0 || !S_ISSOCK(st.st_mode))
            return false;
        fds[(*n)++] = fd;
    }
    return *n > 0;
}

int sess_init_image(int argc, char **argv)
{
    /* The exec made this process dumpable again: before anything else, so
     * that nothing of the sandbox's uid can read or trace its memory and
     * descriptors through /proc/1 (init_main did the same in the image
     * before). Nothing else runs in the sandbox yet: the server starts
     * commands only once this loop says ready. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        _exit(FB_EXIT_SETUP);
    int ctl = argc == 6 ? arg_fd(argv[2], 3) : -2;
    int scratch = argc == 6 ? arg_fd(argv[3], -1) : -2;
    static int net[FB_CTL_MAX_FDS];
    size_t nnet = 0;
    bool net_ok = argc == 6 && arg_fd_list(argv[5], net, &nnet);
    struct stat st;
    if (ctl < 0 || scratch < -1 || !net_ok || (argv[4][0] != '0' && argv[4][0] != '1') ||
        argv[4][1] || fstat(ctl, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "fluebox: %s is the image a session's init runs, started by fluebox "
                        "serve inside its sandbox; it is not a command\n", FB_SESSION_IMAGE_CMD);
        return FB_EXIT_SETUP;
    }
    /* What the loop reads of the policy: the command search (harden_exec:
     * no exec_path in a session) and whether filters follow on ctl. */
    static struct fb_policy p;
    p.seccomp.enabled = argv[4][0] == '1';
    struct fb_err err = {0};
    if (seccomp_receive_and_load(&p, ctl, &err) < 0) {
        ctl_sendf(ctl, FB_MSG_ERR, err.code ? err.code : FB_EXIT_SETUP, "%s", err.msg);
        _exit(FB_EXIT_SETUP);
    }
    init_loop(&p, ctl, scratch, net, nnet);
}
