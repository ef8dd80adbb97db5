/* init.c — the sandbox's pid 1: last hardening steps, then run the command
 * (or hand over to the session loop), forward signals, reap orphans.
 *
 * Why a separate pid 1 instead of exec'ing the command as pid 1: the kernel
 * gives pid 1 special treatment (signals without a handler are ignored, it
 * must reap every orphan). A Python script as pid 1 would ignore the SIGTERM
 * we forward and leave zombies. When this init exits, the kernel kills
 * everything left in the pid namespace: daemonised grandchildren included. */
#include "init.h"

#include "ctl.h"
#include "harden.h"
#include "pty.h"
#include "seccomp.h"

#include <fcntl.h>
#include <linux/close_range.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Signals the supervisor forwards to the command. */
static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

void init_exec_child(const struct fb_policy *p, char **argv, char **env, const char *cwd,
                     int report_fd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    setpgid(0, 0);
    if (cwd && chdir(cwd) < 0) {
        int e = errno;
        dprintf(2, "fluebox: cannot enter %s: %s\n", cwd, strerror(e));
        if (report_fd >= 0)
            ctl_sendf(report_fd, FB_MSG_EXEC_ERR, FB_EXIT_NOTFOUND, "cannot enter %s: %s", cwd,
                      strerror(e));
        _exit(FB_EXIT_SETUP);
    }
    /* Every inherited descriptor but 0, 1, 2 is gone at exec; report_fd stays
     * usable until then. */
    syscall(SYS_close_range, 3, ~0U, CLOSE_RANGE_CLOEXEC);
    int code = FB_EXIT_NOTFOUND;
    harden_exec(p, argv, env, &code);
    int e = errno;
    const char *why = code == FB_EXIT_NOTFOUND && e == ENOENT ? "command not found" : strerror(e);
    dprintf(2, "fluebox: %s: %s\n", argv[0], why);
    if (report_fd >= 0)
        ctl_sendf(report_fd, FB_MSG_EXEC_ERR, code, "%s: %s", argv[0], why);
    _exit(code);
}

/* Kill every other process of the sandbox and reap them all, so that their
 * CPU time reaches init's rusage (and from there the supervisor's). Each
 * round reaps at least one process; a process forked while we signal is
 * caught by the next round. kill(-1) fails with ESRCH once none is left. */
static void kill_and_reap_all(void)
{
    /* kill(-1) means "the whole sandbox" only as pid 1 of a pid namespace;
     * without one (a profile may turn it off) it would reach every process
     * of our host uid. */
    if (getpid() != 1)
        return;
    for (;;) {
        if (kill(-1, SIGKILL) < 0 && errno != EINTR)
            break;
        pid_t w = waitpid(-1, NULL, 0);
        if (w < 0 && errno == ECHILD)
            break;
        while (waitpid(-1, NULL, WNOHANG) > 0)
            ;
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

__attribute__((noreturn)) static void fail(int ctl, struct fb_err *err)
{
    ctl_sendf(ctl, FB_MSG_ERR, err->code ? err->code : FB_EXIT_SETUP, "%s", err->msg);
    _exit(FB_EXIT_SETUP);
}

/* A session's loop in a fresh image of fluebox (spawn.h, image_fd): the
 * control socket, the scratch's descriptor and the network's listening
 * sockets go across the exec, nothing else (the environment is empty; every
 * other descriptor is close-on-exec or closed by the loop). Capabilities
 * are gone and no_new_privs is set, so the exec gains nothing. Returns only
 * if the exec failed, with the descriptors as they were: the caller goes
 * on in this image. */
static void session_reexec(const struct fb_policy *p, int ctl, int image)
{
    int keep[2 + FB_CTL_MAX_FDS], flags[2 + FB_CTL_MAX_FDS];
    size_t nk = 0;
    int scratch = sandbox_session_scratch();
    keep[nk++] = ctl;
    if (scratch >= 0)
        keep[nk++] = scratch;
    const int *net;
    size_t nnet = sandbox_session_netfds(&net);
    char a_ctl[16], a_scr[16], a_net[FB_NETFDS_ARG_MAX];
    size_t len = 0;
    a_net[0] = 0;
    for (size_t i = 0; i < nnet; i++) {
        keep[nk++] = net[i];
        int w = snprintf(a_net + len, sizeof a_net - len, "%s%d", i ? "," : "", net[i]);
        if (w < 0 || (size_t)w >= sizeof a_net - len)
            return; /* (cannot be: descriptor numbers are short) */
        len += (size_t)w;
    }
    if (!nnet)
        snprintf(a_net, sizeof a_net, "-");
    for (size_t i = 0; i < nk; i++)
        if ((flags[i] = fcntl(keep[i], F_GETFD)) < 0)
            return;
    snprintf(a_ctl, sizeof a_ctl, "%d", ctl);
    snprintf(a_scr, sizeof a_scr, "%d", scratch);
    char *argv[] = {"fluebox", FB_SESSION_IMAGE_CMD, a_ctl, a_scr,
                    p->seccomp.enabled ? "1" : "0", a_net, NULL};
    char *envp[] = {NULL};
    for (size_t i = 0; i < nk; i++)
        fcntl(keep[i], F_SETFD, flags[i] & ~FD_CLOEXEC);
    syscall(SYS_execveat, image, "", argv, envp, AT_EMPTY_PATH);
    for (size_t i = 0; i < nk; i++)
        fcntl(keep[i], F_SETFD, flags[i]);
}

void init_main(const struct fb_policy *p, enum fb_mode mode, int ctl, bool nproc_fallback,
               const struct fb_session_hooks *h)
{
    struct fb_err err = {0};
    /* A new session: nothing in the sandbox has a controlling terminal, so
     * nothing can push input into the caller's (TIOCSTI). */
    if (setsid() < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "setsid");
        fail(ctl, &err);
    }
    /* Not dumpable: processes of the same uid inside cannot read our memory
     * or fds through /proc/1. Reset by execve for the command. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    if (harden_rlimits(p, nproc_fallback, &err) < 0 || harden_drop_caps(&err) < 0)
        fail(ctl, &err);

    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    for (size_t i = 0; i < FB_ARRAY_LEN(forwarded); i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, FB_SIG_KILLALL);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigdelset(&set, SIGPIPE);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    if (sfd < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "signalfd");
        fail(ctl, &err);
    }
    if (mode == FB_MODE_SESSION) {
        close(sfd);
        if (!h || !h->main) {
            ctl_sendf(ctl, FB_MSG_ERR, FB_EXIT_SETUP, "a session sandbox without its init's loop");
            _exit(FB_EXIT_SETUP);
        }
        /* The fresh image loads the filters itself (the same records on
         * ctl) before it serves anything. */
        if (h->image_fd > 2)
            session_reexec(p, ctl, h->image_fd);
    }
    /* The filters come from the supervisor (generated while we built the
     * root); with --seccomp-log or learn the listener goes back to it. */
    if (seccomp_receive_and_load(p, ctl, &err) < 0)
        fail(ctl, &err);
    if (mode == FB_MODE_SESSION)
        h->main(p, ctl);

    /* run -t: a terminal of the sandbox's own devpts for the command; the
     * master goes to the supervisor, which relays it to the caller's. */
    int ptm = -1, pts = -1;
    if (p->tty) {
        ptm = fb_pty_open(p->tty_rows, p->tty_cols, &pts);
        if (ptm < 0) {
            fb_errno(&err, FB_EXIT_SETUP, "opening a terminal (/dev/ptmx)");
            fail(ctl, &err);
        }
    }
    char **env = harden_build_env(p);
    if (ctl_sendf(ctl, FB_MSG_READY, 0, "ready") < 0)
        _exit(FB_EXIT_SETUP);
    /* fork, not vfork: the filters are loaded, and a profile may deny vfork
     * (even with "kill"), which --seccomp-log would also count against the
     * command. */
    pid_t cmd = fork();
    if (cmd < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "fork");
        fail(ctl, &err);
    }
    if (cmd == 0) {
        /* On the terminal: a session of its own, which init_exec_child's
         * setpgid leaves as it is (a session leader's group is its own). */
        if (ptm >= 0 && fb_pty_take(pts) < 0) {
            ctl_sendf(ctl, FB_MSG_EXEC_ERR, FB_EXIT_SETUP, "the terminal: %s", strerror(errno));
            _exit(FB_EXIT_SETUP);
        }
        init_exec_child(p, p->argv, env, p->cwd, ctl);
    }
    harden_free_env(env);
    if (ptm >= 0) {
        struct fb_msg m = {.type = FB_MSG_TTY};
        ctl_send(ctl, &m, &ptm, 1);
        close(ptm);
        close(pts);
    }

    for (;;) {
        struct signalfd_siginfo si;
        ssize_t n = read(sfd, &si, sizeof si);
        if (n < 0 && errno == EINTR)
            continue;
        if (n != (ssize_t)sizeof si)
            _exit(FB_EXIT_SETUP);
        if ((int)si.ssi_signo == FB_SIG_KILLALL) {
            /* The command's death comes back as SIGCHLD below. Without a
             * pid namespace, only the command's process group. */
            if (getpid() != 1 || kill(-1, SIGKILL) < 0)
                kill(-cmd, SIGKILL);
            continue;
        }
        if (si.ssi_signo != SIGCHLD) {
            /* To the command's process group, so `sh -c` pipelines get it too. */
            if (kill(-cmd, (int)si.ssi_signo) < 0)
                kill(cmd, (int)si.ssi_signo);
            continue;
        }
        int status;
        pid_t w;
        while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
            if (w != cmd)
                continue; /* an orphan: reaped, nothing more to do */
            struct fb_msg m = {.type = FB_MSG_EXIT, .status = status};
            ctl_send(ctl, &m, NULL, 0);
            /* What is left (daemons, orphans) would die with us anyway. */
            kill_and_reap_all();
            _exit(0);
        }
    }
}
