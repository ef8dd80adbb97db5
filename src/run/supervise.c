/* supervise.c — `fluebox run`: spawn the sandbox, then one epoll loop until
 * it ends: init's pidfd, messages from init, forwarded signals, the
 * wall-clock timeout and the egress relay. Builds the result (exit code,
 * times, cgroup usage) and the report. */
#include "supervise.h"

#include "ctl.h"
#include "init.h"
#include "pty.h"
#include "report.h"
#include "run_cow.h"
#include "run_record.h"
#include "scnotify.h"
#include "spawn.h"

#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/wait.h>

static const int forwarded[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2, SIGWINCH};

enum {
    K_PIDFD = 1, K_CTL, K_SIG, K_TIMER, K_EGRESS, K_SECCOMP, K_GRACE, K_DISK,
    K_PTM, K_TTYIN, K_TTYOUT
};

/* How often a --cow-upper layer is measured against --disk (cow.c). */
#define DISK_CHECK_NS 500000000L

/* Signals that ask the run to end: after forwarding one, the sandbox gets
 * FB_SIGNAL_GRACE_MS to do so. */
static bool ending_signal(int sig)
{
    return sig == SIGTERM || sig == SIGINT || sig == SIGHUP;
}

static void arm_ms(int tfd, int64_t ms)
{
    struct itimerspec its = {.it_value = {(time_t)(ms / 1000), (long)(ms % 1000) * 1000000}};
    timerfd_settime(tfd, 0, &its, NULL);
}

static int ep_add(int ep, int fd, uint32_t key)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = key};
    return epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

/* run -t: the terminal inside. */
struct tty_side {
    struct fb_pty_relay r;
    bool on;
    bool out_pollable;
};

/* The caller's terminal size onto the master (the kernel sends SIGWINCH to
 * the terminal's foreground process group when it changes). */
static void tty_resize(struct tty_side *t)
{
    int rows, cols;
    if (t->on && fb_tty_size(&rows, &cols)) {
        struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
        ioctl(t->r.ptm, TIOCSWINSZ, &ws);
    }
}

/* The master from init: relay it to the caller's stdin and stdout; the
 * caller's terminal (stdin) in raw mode until the run ends. fds the
 * caller gave that epoll cannot watch (a file, /dev/null) are always
 * ready: they are read or written without waiting. */
static void tty_start(struct tty_side *t, int ep, int ptm)
{
    fb_relay_init(&t->r, 0, 1, ptm);
    t->on = true;
    struct epoll_event ev = {.events = 0, .data.u32 = K_PTM};
    epoll_ctl(ep, EPOLL_CTL_ADD, ptm, &ev);
    ev.data.u32 = K_TTYIN;
    t->r.in_pollable = epoll_ctl(ep, EPOLL_CTL_ADD, 0, &ev) == 0;
    ev.data.u32 = K_TTYOUT;
    t->out_pollable = epoll_ctl(ep, EPOLL_CTL_ADD, 1, &ev) == 0;
    fb_tty_raw(0);
    tty_resize(t);
}

/* What to wait for next; returns the epoll timeout (0 when stdin cannot
 * be polled and has something to give). */
static int tty_arm(struct tty_side *t, int ep)
{
    if (!t->on)
        return -1;
    uint32_t mev;
    bool want_in, want_out, busy;
    fb_relay_wants(&t->r, &mev, &want_in, &want_out, &busy);
    while (want_out && !t->out_pollable) {
        fb_relay_out(&t->r); /* a file: written at once (dropped if it fails) */
        fb_relay_wants(&t->r, &mev, &want_in, &want_out, &busy);
    }
    struct epoll_event ev = {.events = mev, .data.u32 = K_PTM};
    if (t->r.m_hup)
        epoll_ctl(ep, EPOLL_CTL_DEL, t->r.ptm, NULL);
    else
        epoll_ctl(ep, EPOLL_CTL_MOD, t->r.ptm, &ev);
    if (t->r.in_pollable) {
        ev = (struct epoll_event){.events = want_in ? EPOLLIN : 0, .data.u32 = K_TTYIN};
        if (t->r.in_eof)
            epoll_ctl(ep, EPOLL_CTL_DEL, 0, NULL);
        else
            epoll_ctl(ep, EPOLL_CTL_MOD, 0, &ev);
    }
    if (t->out_pollable) {
        ev = (struct epoll_event){.events = want_out ? EPOLLOUT : 0, .data.u32 = K_TTYOUT};
        if (t->r.out_gone)
            epoll_ctl(ep, EPOLL_CTL_DEL, 1, NULL);
        else
            epoll_ctl(ep, EPOLL_CTL_MOD, 1, &ev);
    }
    return busy ? 0 : -1;
}

/* The run is over: what the terminal still holds goes out, the caller's
 * terminal is put back. */
static void tty_end(struct tty_side *t)
{
    if (!t->on)
        return;
    fb_relay_drain(&t->r);
    fb_tty_restore();
    close(t->r.ptm);
    t->on = false;
}

static int64_t tv_ms(struct timeval tv)
{
    return (int64_t)tv.tv_sec * 1000 + tv.tv_usec / 1000;
}

/* "64M", "1.5G": a size as the options take it. */
static void size_text(int64_t v, char *buf, size_t cap)
{
    static const char units[] = "KMGT";
    double d = (double)v;
    int u = -1;
    while (d >= 1024 && u < 3) {
        d /= 1024;
        u++;
    }
    if (u < 0)
        snprintf(buf, cap, "%lld bytes", (long long)v);
    else
        snprintf(buf, cap, d == (double)(int64_t)d ? "%.0f%c" : "%.1f%c", d, units[u]);
}

/* One line on stderr when fluebox ended the command: the timeout (124) or
 * the OOM killer (137). The report has the details; this is for everyone
 * who did not ask for one. */
static void say_why(const struct fb_policy *p, const struct fb_result *res)
{
    if (p->quiet)
        return;
    if (res->timed_out) {
        fb_warn("the command timed out after %lld ms (--timeout) and was killed; exit %d",
                (long long)p->limits.timeout_ms, res->exit_code);
    } else if (res->oom_killed && res->exit_code == FB_EXIT_OOM) {
        char mem[32] = "";
        if (p->limits.mem > 0)
            size_text(p->limits.mem, mem, sizeof mem);
        fb_warn("the command ran out of memory%s%s%s and was killed by the OOM killer; exit %d",
                mem[0] ? " (--mem " : "", mem, mem[0] ? ")" : "", res->exit_code);
    }
}

/* One run's supervisor: the sandbox and what its loop waits on. */
struct run {
    const struct fb_policy *p;
    struct fb_result *res;
    struct fb_sandbox sb;
    int ep, sfd, tfd, dfd, gfd; /* epoll, signals, --timeout, --disk, grace */
    struct tty_side tty;        /* run -t */
    struct fb_scn *scn;         /* seccomp notifications (--seccomp-log, learn) */
    int got_signal;             /* the first ending signal forwarded */
    bool grace_killing;         /* the grace period after it is over */
    bool disk_killed;           /* the command was stopped for --disk */
    bool have_status, init_gone;
    int wstatus;                /* the command's, from FB_MSG_EXIT */
    struct fb_record *rec;      /* --record, or NULL (run_record.h) */
};

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

/* Ask init to kill and reap everything (so the CPU time of what it kills is
 * counted), and arm tfd to SIGKILL it if it has not exited a second later. */
static void kill_all(struct run *r, int tfd)
{
    syscall(SYS_pidfd_send_signal, r->sb.pidfd, FB_SIG_KILLALL, NULL, 0);
    struct itimerspec grace = {.it_value = {1, 0}};
    timerfd_settime(tfd, 0, &grace, NULL);
}

/* The event loop's descriptors: init's pidfd and control socket, the
 * forwarded signals, the relay, seccomp notifications, --timeout (counted
 * from the start of the spawn: set-up time counts) and the --disk check of a
 * --cow-upper layer. */
static int loop_open(struct run *r, const sigset_t *set, struct fb_err *err)
{
    const struct fb_policy *p = r->p;
    r->ep = epoll_create1(EPOLL_CLOEXEC);
    r->sfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (r->ep < 0 || r->sfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "event loop");
    ep_add(r->ep, r->sb.pidfd, K_PIDFD);
    ep_add(r->ep, r->sb.ctl, K_CTL);
    ep_add(r->ep, r->sfd, K_SIG);
    if (r->sb.egress)
        ep_add(r->ep, egress_fd(r->sb.egress), K_EGRESS);
    if (r->sb.seccomp_fd >= 0) {
        r->scn = scnotify_new(p, fb_steal_fd(r->sb.seccomp_fd), err);
        if (!r->scn)
            return -1;
        ep_add(r->ep, scnotify_fd(r->scn), K_SECCOMP);
    }
    if (p->limits.timeout_ms > 0) {
        r->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (r->tfd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "timerfd");
        uint64_t deadline = r->sb.start_ns + (uint64_t)p->limits.timeout_ms * 1000000ull;
        struct itimerspec its = {.it_value = {(time_t)(deadline / 1000000000ull),
                                              (long)(deadline % 1000000000ull)}};
        timerfd_settime(r->tfd, TFD_TIMER_ABSTIME, &its, NULL);
        ep_add(r->ep, r->tfd, K_TIMER);
    }
    if (r->sb.cow && cow_upper_over(r->sb.cow)) {
        /* Reached --disk already: the command may have run and written
         * before this loop started (a loaded machine). */
        r->disk_killed = true;
        run_record_limit(r->rec, "disk", "the copy-on-write layer reached --disk");
        syscall(SYS_pidfd_send_signal, r->sb.pidfd, FB_SIG_KILLALL, NULL, 0);
    } else if (r->sb.cow && r->sb.cow->persistent && !r->sb.cow->staged && r->sb.cow->disk > 0) {
        r->dfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct itimerspec its = {.it_interval = {0, DISK_CHECK_NS}, .it_value = {0, DISK_CHECK_NS}};
        if (r->dfd < 0 || timerfd_settime(r->dfd, 0, &its, NULL) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "timerfd");
        ep_add(r->ep, r->dfd, K_DISK);
    }
    return 0;
}

/* A message from init: the terminal's master (run -t), the command's
 * status, or why it could not be started. */
static void on_ctl(struct run *r)
{
    struct fb_msg m;
    int mfd = -1;
    size_t nfd = 1;
    if (ctl_recv(r->sb.ctl, &m, &mfd, &nfd) <= 0) {
        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->sb.ctl, NULL);
        return;
    }
    if (m.type == FB_MSG_TTY && nfd == 1 && r->p->tty && !r->tty.on) {
        tty_start(&r->tty, r->ep, fb_steal_fd(mfd));
    } else if (m.type == FB_MSG_EXIT) {
        r->have_status = true;
        r->wstatus = m.status;
    } else if (m.type == FB_MSG_EXEC_ERR) {
        snprintf(r->res->error, sizeof r->res->error, "%s", m.text);
    }
    if (nfd && mfd >= 0)
        close(mfd);
}

/* Signals to forward: an ending one starts the grace period (a second one
 * ends it at once); the terminal's size goes to the terminal inside. */
static void on_signal(struct run *r)
{
    struct signalfd_siginfo si;
    while (read(r->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
        int sig = (int)si.ssi_signo;
        if (sig == SIGWINCH && r->p->tty) {
            tty_resize(&r->tty); /* the terminal inside tells its own */
            continue;
        }
        syscall(SYS_pidfd_send_signal, r->sb.pidfd, sig, NULL, 0);
        if (!ending_signal(sig) || r->grace_killing)
            continue;
        if (!r->got_signal) {
            r->got_signal = sig;
            r->gfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
            if (r->gfd >= 0) {
                arm_ms(r->gfd, FB_SIGNAL_GRACE_MS);
                ep_add(r->ep, r->gfd, K_GRACE);
            }
        } else if (r->gfd >= 0) {
            arm_ms(r->gfd, 1); /* asked twice: no more waiting */
        }
    }
}

/* The grace period is over: like the timeout, init kills and reaps
 * everything, and is SIGKILLed itself if it has not exited a second later. */
static void on_grace(struct run *r)
{
    uint64_t ticks;
    if (read(r->gfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
        return;
    if (!r->grace_killing) {
        r->grace_killing = true;
        r->res->end_signal = r->got_signal;
        syscall(SYS_pidfd_send_signal, r->sb.pidfd, FB_SIG_KILLALL, NULL, 0);
        arm_ms(r->gfd, 1000);
    } else {
        sandbox_kill(&r->sb);
        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->gfd, NULL);
    }
}

static void on_timeout(struct run *r)
{
    uint64_t ticks;
    if (read(r->tfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
        return;
    if (!r->res->timed_out) {
        r->res->timed_out = true;
        run_record_limit(r->rec, "timeout", "--timeout expired: the command is killed");
        kill_all(r, r->tfd);
    } else {
        sandbox_kill(&r->sb);
        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->tfd, NULL);
    }
}

/* --disk on a --cow-upper layer: no file system enforces it, so past it the
 * command is stopped as a timeout is. */
static void on_disk(struct run *r)
{
    uint64_t ticks;
    if (read(r->dfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
        return;
    if (r->disk_killed) {
        sandbox_kill(&r->sb); /* init did not finish it within a second */
        epoll_ctl(r->ep, EPOLL_CTL_DEL, r->dfd, NULL);
    } else if (cow_upper_over(r->sb.cow)) {
        r->disk_killed = true;
        run_record_limit(r->rec, "disk", "the copy-on-write layer reached --disk");
        kill_all(r, r->dfd);
    }
}

/* Until init is gone. */
static int loop_run(struct run *r, struct fb_err *err)
{
    while (!r->init_gone) {
        struct epoll_event evs[8];
        int wait_ms = tty_arm(&r->tty, r->ep);
        if (wait_ms == 0)
            fb_relay_in(&r->tty.r); /* stdin a file: read without waiting */
        wait_ms = tty_arm(&r->tty, r->ep);
        int n = epoll_wait(r->ep, evs, 8, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return fb_errno(err, FB_EXIT_SETUP, "epoll_wait");
        }
        for (int i = 0; i < n; i++) {
            switch (evs[i].data.u32) {
            case K_PIDFD: r->init_gone = true; break;
            case K_CTL: on_ctl(r); break;
            case K_PTM: fb_relay_master(&r->tty.r); break;
            case K_TTYIN: fb_relay_in(&r->tty.r); break;
            case K_TTYOUT: fb_relay_out(&r->tty.r); break;
            case K_SIG: on_signal(r); break;
            case K_GRACE: on_grace(r); break;
            case K_TIMER: on_timeout(r); break;
            case K_DISK: on_disk(r); break;
            case K_EGRESS: egress_dispatch(r->sb.egress); break;
            case K_SECCOMP: scnotify_dispatch(r->scn); break;
            }
        }
    }
    return 0;
}

/* Init is gone: its status, the times, what the cgroup, the relay and the
 * seccomp listener counted. *si: how init itself ended. */
static void collect(struct run *r, siginfo_t *si)
{
    const struct fb_policy *p = r->p;
    struct fb_result *res = r->res;
    /* Drain a final EXIT that raced with init's exit. */
    if (!r->have_status) {
        struct fb_msg m;
        while (ctl_recv_nonblock(r->sb.ctl, &m) == 1)
            if (m.type == FB_MSG_EXIT) {
                r->have_status = true;
                r->wstatus = m.status;
            }
    }
    memset(si, 0, sizeof *si);
    while (waitid(P_PIDFD, (id_t)r->sb.pidfd, si, WEXITED) < 0 && errno == EINTR)
        ;
    r->sb.pid = -1;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    res->wall_ms = (int64_t)((fb_now_ns() - r->sb.start_ns) / 1000000ull);
    res->user_ms = tv_ms(ru.ru_utime);
    res->sys_ms = tv_ms(ru.ru_stime);
    res->max_rss_kb = ru.ru_maxrss;
    res->disk_used = sandbox_disk_used(&r->sb);

    scnotify_finish(r->scn, &res->seccomp);
    r->scn = NULL;
    if (res->seccomp.active && !p->seccomp.learn)
        res->seccomp_denials = res->seccomp.denied;
    report_take_cgroup(res, r->sb.cg);
    res->oom_killed = res->cg.oom_killed;
    if (r->sb.egress && p->net != FB_NET_HOST) {
        res->has_net = true;
        egress_summary(r->sb.egress, &res->net);
        char note[1200];
        if (!p->quiet && egress_denial_note(&res->net, note, sizeof note))
            fb_warn("%s", note);
    }
}

/* fluebox's exit code and the command's status from how the run ended;
 * disk_stop: the --cow-upper layer reached --disk. */
static void decide_exit(struct run *r, const siginfo_t *si, bool disk_stop)
{
    struct fb_result *res = r->res;
    int ws = r->wstatus;
    if (res->timed_out) {
        res->exit_code = FB_EXIT_TIMEOUT;
        res->signal = SIGKILL;
    } else if (disk_stop) {
        res->exit_code = FB_EXIT_SETUP;
        res->signal = r->disk_killed ? SIGKILL : 0;
        snprintf(res->error, sizeof res->error,
                 "--disk: the copy-on-write layer in %s reached %lld bytes%s",
                 r->sb.cow->upper_dir, (long long)r->sb.cow->disk,
                 r->disk_killed ? "; the command was stopped" : "");
        fb_warn("%s", res->error);
    } else if (res->end_signal && r->have_status && WIFEXITED(ws)) {
        res->end_signal = 0; /* it exited by itself after all */
        res->status_code = WEXITSTATUS(ws);
        res->exit_code = res->status_code;
    } else if (res->end_signal) {
        /* Killed after the grace period: fluebox ends as the signal it was
         * sent asked (130 for SIGINT, 143 for SIGTERM). */
        res->exit_code = 128 + res->end_signal;
        res->signal = SIGKILL;
    } else if (r->have_status && WIFEXITED(ws)) {
        res->status_code = WEXITSTATUS(ws);
        res->exit_code = res->status_code;
    } else if (r->have_status && WIFSIGNALED(ws)) {
        res->signal = WTERMSIG(ws);
        res->exit_code = 128 + res->signal;
    } else if (res->oom_killed) {
        res->signal = SIGKILL;
        res->exit_code = FB_EXIT_OOM;
    } else {
        /* init itself died without telling us how the command ended. */
        res->signal = si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED ? si->si_status : 0;
        res->exit_code = res->signal ? 128 + res->signal : FB_EXIT_SETUP;
        if (!res->signal)
            snprintf(res->error, sizeof res->error, "the sandbox's init exited unexpectedly");
    }
    if (res->oom_killed && res->signal == SIGKILL)
        res->exit_code = FB_EXIT_OOM;
}

static void loop_close(struct run *r)
{
    close_fd(&r->ep);
    close_fd(&r->sfd);
    close_fd(&r->tfd);
    close_fd(&r->dfd);
    close_fd(&r->gfd);
}

/* --cow-upper DIR with --disk: the layer, staged in the scratch space while
 * the sandbox ran, goes back into DIR (cow_persist). Not kept: said, and
 * the run fails as an unwritten --changes does. */
static void keep_layer(struct fb_cow *c, struct fb_result *res)
{
    struct fb_err e = {0};
    if (cow_persist(c, &e) < 0) {
        fb_warn("%s", e.msg);
        res->exit_code = FB_EXIT_SETUP;
    }
}

/* The record's last lines: the result when p is given (set-up failed before
 * the usual place), then the signed end. A record that could not be
 * completed fails the run, as a missing report does. */
static void record_end(struct fb_record *rec, const struct fb_policy *p, struct fb_result *res)
{
    struct fb_err rerr = {0};
    if (p)
        run_record_result(rec, p, res);
    if (run_record_close(rec, res->exit_code, &rerr) < 0) {
        fb_warn("%s", rerr.msg);
        res->exit_code = FB_EXIT_SETUP;
    }
}

int supervise_run(const struct fb_policy *p, struct fb_result *res, struct fb_err *err)
{
    memset(res, 0, sizeof *res);
    res->status_code = -1;
    res->seccomp_denials = -1;
    res->disk_used = -1;
    report_take_cgroup(res, NULL); /* "unknown" until measured */
    struct fb_record *rec = NULL;
    if (run_record_open(p, &rec, err) < 0) {
        res->setup_failed = true;
        res->exit_code = FB_EXIT_SETUP;
        snprintf(res->error, sizeof res->error, "%s", err->msg);
        return -1;
    }
    fb_tty_keep(); /* the caller's terminal, put back however the command left it */

    /* Block the signals we forward before the child exists, so none is lost. */
    sigset_t set, old;
    sigemptyset(&set);
    for (size_t i = 0; i < FB_ARRAY_LEN(forwarded); i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, &old);
    sigdelset(&set, SIGPIPE);

    struct run r = {.p = p, .res = res, .ep = -1, .sfd = -1, .tfd = -1, .dfd = -1, .gfd = -1,
                    .rec = rec};
    int spawned = sandbox_spawn(p, &r.sb, err);
    fb_notes_print(err->notes); /* the warnings of its making, once */
    if (spawned < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        res->setup_failed = true;
        res->exit_code = err->code ? err->code : FB_EXIT_SETUP;
        snprintf(res->error, sizeof res->error, "%s", err->msg);
        record_end(rec, p, res);
        return -1;
    }
    egress_set_record(r.sb.egress, rec);
    run_record_exec(rec, p);
    if (loop_open(&r, &set, err) < 0 || loop_run(&r, err) < 0)
        goto fatal;
    tty_end(&r.tty);
    fb_tty_put_back();
    siginfo_t si;
    collect(&r, &si);
    /* Measured once more: the command may have filled the layer and ended
     * between two checks. */
    bool disk_stop = r.sb.cow && cow_upper_over(r.sb.cow);
    decide_exit(&r, &si, disk_stop);
    say_why(p, res);
    run_record_result(rec, p, res);
    loop_close(&r);

    struct fb_cow *cow = fb_steal_ptr(r.sb.cow);
    sandbox_release(&r.sb);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (cow) {
        /* The sandbox is gone, its upper layer complete: report the changes
         * and commit them if asked and the command succeeded (run_cow.c). */
        bool ok = res->status_code == 0 && !res->timed_out && !disk_stop;
        run_record_changes(rec, cow);
        res->exit_code = cow_run_finish(p, cow, res->exit_code, ok);
        keep_layer(cow, res);
        cow_free(cow);
    }
    record_end(rec, NULL, res);
    return 0;

fatal:
    tty_end(&r.tty);
    fb_tty_put_back();
    scnotify_finish(r.scn, NULL);
    loop_close(&r);
    sandbox_kill(&r.sb);
    if (r.sb.cow) {
        struct fb_cow *c = fb_steal_ptr(r.sb.cow);
        sandbox_release(&r.sb);
        keep_layer(c, res);
        cow_free(c);
    } else {
        sandbox_release(&r.sb);
    }
    sigprocmask(SIG_SETMASK, &old, NULL);
    res->setup_failed = true;
    res->exit_code = FB_EXIT_SETUP;
    snprintf(res->error, sizeof res->error, "%s", err->msg);
    record_end(rec, p, res);
    return -1;
}
