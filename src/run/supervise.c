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

int supervise_run(const struct fb_policy *p, struct fb_result *res, struct fb_err *err)
{
    memset(res, 0, sizeof *res);
    res->status_code = -1;
    res->seccomp_denials = -1;
    res->disk_used = -1;
    report_take_cgroup(res, NULL); /* "unknown" until measured */

    /* Block the signals we forward before the child exists, so none is lost. */
    sigset_t set, old;
    sigemptyset(&set);
    for (size_t i = 0; i < FB_ARRAY_LEN(forwarded); i++)
        sigaddset(&set, forwarded[i]);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, &old);
    sigdelset(&set, SIGPIPE);

    struct fb_sandbox sb;
    int spawned = sandbox_spawn(p, &sb, err);
    fb_notes_print(err->notes); /* the warnings of its making, once */
    if (spawned < 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        res->setup_failed = true;
        res->exit_code = err->code ? err->code : FB_EXIT_SETUP;
        snprintf(res->error, sizeof res->error, "%s", err->msg);
        return -1;
    }

    cleanup_close int ep = epoll_create1(EPOLL_CLOEXEC);
    cleanup_close int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    cleanup_close int tfd = -1, dfd = -1;
    cleanup_close int gfd = -1; /* the grace period after an ending signal */
    struct tty_side tty = {.on = false}; /* run -t */
    int got_signal = 0;         /* the first ending signal forwarded */
    bool grace_killing = false;
    struct fb_scn *scn = NULL; /* seccomp notifications (--seccomp-log, learn) */
    if (ep < 0 || sfd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "event loop");
        goto fatal;
    }
    ep_add(ep, sb.pidfd, K_PIDFD);
    ep_add(ep, sb.ctl, K_CTL);
    ep_add(ep, sfd, K_SIG);
    if (sb.egress)
        ep_add(ep, egress_fd(sb.egress), K_EGRESS);
    if (sb.seccomp_fd >= 0) {
        scn = scnotify_new(p, fb_steal_fd(sb.seccomp_fd), err);
        if (!scn)
            goto fatal;
        ep_add(ep, scnotify_fd(scn), K_SECCOMP);
    }
    if (p->limits.timeout_ms > 0) {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        if (tfd < 0) {
            fb_errno(err, FB_EXIT_SETUP, "timerfd");
            goto fatal;
        }
        /* Measured from the start of the spawn: set-up time counts. */
        uint64_t deadline = sb.start_ns + (uint64_t)p->limits.timeout_ms * 1000000ull;
        struct itimerspec its = {.it_value = {(time_t)(deadline / 1000000000ull),
                                              (long)(deadline % 1000000000ull)}};
        timerfd_settime(tfd, TFD_TIMER_ABSTIME, &its, NULL);
        ep_add(ep, tfd, K_TIMER);
    }

    bool disk_killed = false; /* the command was stopped for --disk */
    if (sb.cow && cow_upper_over(sb.cow)) {
        /* Reached --disk already: the command may have run and written
         * before this loop started (a loaded machine). */
        disk_killed = true;
        syscall(SYS_pidfd_send_signal, sb.pidfd, FB_SIG_KILLALL, NULL, 0);
    } else if (sb.cow && sb.cow->persistent && sb.cow->disk > 0) {
        dfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct itimerspec its = {.it_interval = {0, DISK_CHECK_NS}, .it_value = {0, DISK_CHECK_NS}};
        if (dfd < 0 || timerfd_settime(dfd, 0, &its, NULL) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "timerfd");
            goto fatal;
        }
        ep_add(ep, dfd, K_DISK);
    }

    bool have_status = false, init_gone = false;
    int wstatus = 0;
    while (!init_gone) {
        struct epoll_event evs[8];
        int wait_ms = tty_arm(&tty, ep);
        if (wait_ms == 0)
            fb_relay_in(&tty.r); /* stdin a file: read without waiting */
        wait_ms = tty_arm(&tty, ep);
        int n = epoll_wait(ep, evs, 8, wait_ms);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            fb_errno(err, FB_EXIT_SETUP, "epoll_wait");
            goto fatal;
        }
        for (int i = 0; i < n; i++) {
            switch (evs[i].data.u32) {
            case K_PIDFD:
                init_gone = true;
                break;
            case K_CTL: {
                struct fb_msg m;
                int mfd = -1;
                size_t nfd = 1;
                int r = ctl_recv(sb.ctl, &m, &mfd, &nfd);
                if (r <= 0) {
                    epoll_ctl(ep, EPOLL_CTL_DEL, sb.ctl, NULL);
                    break;
                }
                if (m.type == FB_MSG_TTY && nfd == 1 && p->tty && !tty.on) {
                    tty_start(&tty, ep, fb_steal_fd(mfd));
                } else if (m.type == FB_MSG_EXIT) {
                    have_status = true;
                    wstatus = m.status;
                } else if (m.type == FB_MSG_EXEC_ERR) {
                    snprintf(res->error, sizeof res->error, "%s", m.text);
                }
                if (nfd && mfd >= 0)
                    close(mfd);
                break;
            }
            case K_PTM:
                fb_relay_master(&tty.r);
                break;
            case K_TTYIN:
                fb_relay_in(&tty.r);
                break;
            case K_TTYOUT:
                fb_relay_out(&tty.r);
                break;
            case K_SIG: {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si) {
                    int sig = (int)si.ssi_signo;
                    if (sig == SIGWINCH && p->tty) {
                        tty_resize(&tty); /* the terminal inside tells its own */
                        continue;
                    }
                    syscall(SYS_pidfd_send_signal, sb.pidfd, sig, NULL, 0);
                    if (!ending_signal(sig) || grace_killing)
                        continue;
                    if (!got_signal) {
                        got_signal = sig;
                        gfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
                        if (gfd >= 0) {
                            arm_ms(gfd, FB_SIGNAL_GRACE_MS);
                            ep_add(ep, gfd, K_GRACE);
                        }
                    } else if (gfd >= 0) {
                        arm_ms(gfd, 1); /* asked twice: no more waiting */
                    }
                }
                break;
            }
            case K_GRACE: {
                uint64_t ticks;
                if (read(gfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
                    break;
                if (!grace_killing) {
                    /* Like the timeout: init kills and reaps everything, and
                     * is SIGKILLed itself if it has not exited a second later. */
                    grace_killing = true;
                    res->end_signal = got_signal;
                    syscall(SYS_pidfd_send_signal, sb.pidfd, FB_SIG_KILLALL, NULL, 0);
                    arm_ms(gfd, 1000);
                } else {
                    sandbox_kill(&sb);
                    epoll_ctl(ep, EPOLL_CTL_DEL, gfd, NULL);
                }
                break;
            }
            case K_TIMER: {
                uint64_t ticks;
                if (read(tfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
                    break;
                if (!res->timed_out) {
                    /* Ask init to kill and reap everything (so the CPU time
                     * of what it kills is counted); SIGKILL it if it has not
                     * exited a second later. */
                    res->timed_out = true;
                    syscall(SYS_pidfd_send_signal, sb.pidfd, FB_SIG_KILLALL, NULL, 0);
                    struct itimerspec grace = {.it_value = {1, 0}};
                    timerfd_settime(tfd, 0, &grace, NULL);
                } else {
                    sandbox_kill(&sb);
                    epoll_ctl(ep, EPOLL_CTL_DEL, tfd, NULL);
                }
                break;
            }
            case K_DISK: {
                /* --disk on a --cow-upper layer: no file system enforces
                 * it, so past it the command is stopped as a timeout is. */
                uint64_t ticks;
                if (read(dfd, &ticks, sizeof ticks) < 0 && errno == EAGAIN)
                    break;
                if (disk_killed) {
                    sandbox_kill(&sb); /* init did not finish it within a second */
                    epoll_ctl(ep, EPOLL_CTL_DEL, dfd, NULL);
                } else if (cow_upper_over(sb.cow)) {
                    disk_killed = true;
                    syscall(SYS_pidfd_send_signal, sb.pidfd, FB_SIG_KILLALL, NULL, 0);
                    struct itimerspec grace = {.it_value = {1, 0}};
                    timerfd_settime(dfd, 0, &grace, NULL);
                }
                break;
            }
            case K_EGRESS:
                egress_dispatch(sb.egress);
                break;
            case K_SECCOMP:
                scnotify_dispatch(scn);
                break;
            }
        }
    }
    tty_end(&tty);
    /* Drain a final EXIT that raced with init's exit. */
    if (!have_status) {
        struct fb_msg m;
        while (ctl_recv_nonblock(sb.ctl, &m) == 1)
            if (m.type == FB_MSG_EXIT) {
                have_status = true;
                wstatus = m.status;
            }
    }

    siginfo_t si;
    memset(&si, 0, sizeof si);
    while (waitid(P_PIDFD, (id_t)sb.pidfd, &si, WEXITED) < 0 && errno == EINTR)
        ;
    sb.pid = -1;
    struct rusage ru;
    getrusage(RUSAGE_CHILDREN, &ru);
    res->wall_ms = (int64_t)((fb_now_ns() - sb.start_ns) / 1000000ull);
    res->user_ms = tv_ms(ru.ru_utime);
    res->sys_ms = tv_ms(ru.ru_stime);
    res->max_rss_kb = ru.ru_maxrss;
    res->disk_used = sandbox_disk_used(&sb);

    scnotify_finish(scn, &res->seccomp);
    scn = NULL;
    if (res->seccomp.active && !p->seccomp.learn)
        res->seccomp_denials = res->seccomp.denied;
    report_take_cgroup(res, sb.cg);
    res->oom_killed = res->cg.oom_killed;
    if (sb.egress && p->net != FB_NET_HOST) {
        res->has_net = true;
        egress_summary(sb.egress, &res->net);
        char note[1200];
        if (!p->quiet && egress_denial_note(&res->net, note, sizeof note))
            fb_warn("%s", note);
    }

    /* Measured once more: the command may have filled the layer and ended
     * between two checks. */
    bool disk_stop = sb.cow && cow_upper_over(sb.cow);
    if (res->timed_out) {
        res->exit_code = FB_EXIT_TIMEOUT;
        res->signal = SIGKILL;
    } else if (disk_stop) {
        res->exit_code = FB_EXIT_SETUP;
        res->signal = disk_killed ? SIGKILL : 0;
        snprintf(res->error, sizeof res->error,
                 "--disk: the copy-on-write layer in %s reached %lld bytes%s",
                 sb.cow->upper_dir, (long long)sb.cow->disk,
                 disk_killed ? "; the command was stopped" : "");
        fb_warn("%s", res->error);
    } else if (res->end_signal && have_status && WIFEXITED(wstatus)) {
        res->end_signal = 0; /* it exited by itself after all */
        res->status_code = WEXITSTATUS(wstatus);
        res->exit_code = res->status_code;
    } else if (res->end_signal) {
        /* Killed after the grace period: fluebox ends as the signal it was
         * sent asked (130 for SIGINT, 143 for SIGTERM). */
        res->exit_code = 128 + res->end_signal;
        res->signal = SIGKILL;
    } else if (have_status && WIFEXITED(wstatus)) {
        res->status_code = WEXITSTATUS(wstatus);
        res->exit_code = res->status_code;
    } else if (have_status && WIFSIGNALED(wstatus)) {
        res->signal = WTERMSIG(wstatus);
        res->exit_code = 128 + res->signal;
    } else if (res->oom_killed) {
        res->signal = SIGKILL;
        res->exit_code = FB_EXIT_OOM;
    } else {
        /* init itself died without telling us how the command ended. */
        res->signal = si.si_code == CLD_KILLED || si.si_code == CLD_DUMPED ? si.si_status : 0;
        res->exit_code = res->signal ? 128 + res->signal : FB_EXIT_SETUP;
        if (!res->signal)
            snprintf(res->error, sizeof res->error, "the sandbox's init exited unexpectedly");
    }
    if (res->oom_killed && res->signal == SIGKILL)
        res->exit_code = FB_EXIT_OOM;
    say_why(p, res);

    struct fb_cow *cow = fb_steal_ptr(sb.cow);
    sandbox_release(&sb);
    sigprocmask(SIG_SETMASK, &old, NULL);
    if (cow) {
        /* The sandbox is gone, its upper layer complete: report the changes
         * and commit them if asked and the command succeeded (cow.c). */
        bool ok = res->status_code == 0 && !res->timed_out && !disk_stop;
        res->exit_code = cow_run_finish(p, cow, res->exit_code, ok);
        cow_free(cow);
    }
    return 0;

fatal:
    tty_end(&tty);
    scnotify_finish(scn, NULL);
    sandbox_kill(&sb);
    sandbox_release(&sb);
    sigprocmask(SIG_SETMASK, &old, NULL);
    res->setup_failed = true;
    res->exit_code = FB_EXIT_SETUP;
    snprintf(res->error, sizeof res->error, "%s", err->msg);
    return -1;
}
