/* term.c — the caller's terminal (term.h): raw mode while a command inside
 * has a terminal of its own (every key goes to the terminal inside, Ctrl-C
 * included, which the terminal inside turns into SIGINT for its foreground
 * process group), put back as it was on every way out (normal end, error, a
 * signal fluebox handles, exit()), and its size; and every terminal on 0,
 * 1, 2 as it was at the start of a run, put back at its end whatever the
 * command did to it (a run without -t shares the caller's terminal). */
#include "term.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static int saved_fd = -1;

void fb_tty_restore(void)
{
    if (saved_fd < 0)
        return;
    int r;
    do
        r = tcsetattr(saved_fd, TCSADRAIN, &saved);
    while (r < 0 && errno == EINTR);
    saved_fd = -1;
}

int fb_tty_raw(int fd)
{
    if (saved_fd >= 0 || !isatty(fd) || tcgetattr(fd, &saved) < 0)
        return -1;
    struct termios raw = saved;
    cfmakeraw(&raw);
    /* TCSADRAIN, not TCSAFLUSH: what the caller typed ahead (or piped in
     * under script(1)) before the run started stays and goes inside. */
    if (tcsetattr(fd, TCSADRAIN, &raw) < 0)
        return -1;
    saved_fd = fd;
    static bool registered;
    if (!registered) {
        atexit(fb_tty_restore);
        registered = true;
    }
    return 0;
}

/* ---- the caller's terminals as they were (every run, -t or not) ---- */

/* A command without -t shares the caller's terminal: `stty -echo` inside
 * changes it for the caller's shell too. Each terminal on 0, 1, 2 as it was
 * at the start, put back at the end, at exit() and on a fatal signal. */
static struct {
    int fd;
    struct termios t;
} kept[3];
static volatile sig_atomic_t nkept;

static bool same_termios(const struct termios *a, const struct termios *b)
{
    return a->c_iflag == b->c_iflag && a->c_oflag == b->c_oflag && a->c_cflag == b->c_cflag &&
           a->c_lflag == b->c_lflag && !memcmp(a->c_cc, b->c_cc, sizeof a->c_cc);
}

/* Only from the terminal's foreground process group: a fluebox run in the
 * background must not undo what the job in the foreground (an editor, a
 * shell's line editor) set. Only ioctls: async-signal-safe. */
static void put_back(int when)
{
    for (int i = 0; i < nkept; i++) {
        struct termios now;
        if (tcgetpgrp(kept[i].fd) != getpgrp() || tcgetattr(kept[i].fd, &now) < 0 ||
            same_termios(&now, &kept[i].t))
            continue;
        int r;
        do
            r = tcsetattr(kept[i].fd, when, &kept[i].t);
        while (r < 0 && errno == EINTR);
    }
}

void fb_tty_put_back(void)
{
    put_back(TCSADRAIN);
}

static void on_fatal(int sig)
{
    int e = errno;
    put_back(TCSANOW); /* TCSADRAIN could wait on a stopped terminal */
    errno = e;
    raise(sig); /* SA_RESETHAND | SA_NODEFER: the default action, now */
}

void fb_tty_keep(void)
{
    if (nkept)
        return;
    int n = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (isatty(fd) && tcgetattr(fd, &kept[n].t) == 0)
            kept[n++].fd = fd;
    }
    nkept = n;
    if (!n)
        return;
    atexit(fb_tty_put_back);
    /* Signals that end fluebox without it running any code of its own (the
     * ones a run forwards, SIGINT, SIGTERM, SIGHUP, ..., end it through
     * the normal way out). The faults only without a sanitizer, whose
     * report needs its own handlers. */
    static const int fatal[] = {SIGALRM, SIGVTALRM, SIGPROF, SIGXCPU, SIGXFSZ, SIGPWR,
#if !defined(__SANITIZE_ADDRESS__) && !defined(__SANITIZE_UNDEFINED__)
                                SIGABRT, SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGSYS,
#endif
    };
    for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
        struct sigaction old;
        if (sigaction(fatal[i], NULL, &old) < 0 || old.sa_handler != SIG_DFL)
            continue; /* ignored or handled by the caller's choice: left so */
        struct sigaction sa = {.sa_handler = on_fatal, .sa_flags = SA_RESETHAND | SA_NODEFER};
        sigemptyset(&sa.sa_mask);
        sigaction(fatal[i], &sa, NULL);
    }
}

bool fb_tty_size(int *rows, int *cols)
{
    struct winsize ws;
    for (int fd = 0; fd <= 2; fd++) {
        if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
            *rows = ws.ws_row;
            *cols = ws.ws_col;
            return true;
        }
    }
    return false;
}
