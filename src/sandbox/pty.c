/* pty.c — pseudo-terminals (pty.h): the inside end of `exec -t` and
 * `run -t` (a pty of the sandbox's own devpts as a command's controlling
 * terminal) and the byte relay of a cold run between the caller and the
 * master. The caller's own terminal (raw mode, its size) is base/term.c. */
#include "pty.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#ifndef TIOCGPTPEER
#define TIOCGPTPEER 0x5441
#endif

/* ---- the inside ---- */

int fb_pty_open(int rows, int cols, int *pts)
{
    *pts = -1;
    int ptm = open("/dev/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
    int unlock = 0;
    if (ptm < 0 || ioctl(ptm, TIOCSPTLCK, &unlock) < 0)
        goto fail;
    struct winsize ws = {.ws_row = (unsigned short)(rows > 0 ? rows : 24),
                         .ws_col = (unsigned short)(cols > 0 ? cols : 80)};
    ioctl(ptm, TIOCSWINSZ, &ws);
    /* The peer through the master (not by name): it is this master's, even
     * if someone inside replaced /dev/pts entries. */
    *pts = ioctl(ptm, TIOCGPTPEER, O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (*pts < 0)
        goto fail;
    return ptm;
fail:;
    int e = errno;
    if (ptm >= 0)
        close(ptm);
    errno = e;
    return -1;
}

int fb_pty_take(int pts)
{
    /* A session of its own (so also a process group: kill(-pid)), the
     * terminal its controlling one, stdin/stdout/stderr on it. */
    if (setsid() < 0 || ioctl(pts, TIOCSCTTY, 0) < 0 || dup2(pts, 0) < 0 || dup2(pts, 1) < 0 ||
        dup2(pts, 2) < 0)
        return -1;
    if (pts > 2)
        close(pts);
    return 0;
}

/* ---- the relay of run -t ---- */

/* At most this much to the caller's out per write: out stays blocking (it
 * is the caller's), and a pipe or terminal that polled writable takes this
 * much without waiting. */
#define OUT_CHUNK 512

void fb_relay_init(struct fb_pty_relay *r, int in, int out, int ptm)
{
    memset(r, 0, sizeof *r);
    r->in = in;
    r->out = out;
    r->ptm = ptm;
    r->last_in = '\n';
    r->in_tty = in >= 0 && isatty(in);
    r->in_eof = in < 0;
    int fl = fcntl(ptm, F_GETFL);
    if (fl >= 0)
        fcntl(ptm, F_SETFL, fl | O_NONBLOCK);
}

/* End of the caller's input when it is not a terminal: the terminal's
 * end-of-file character (twice after a partial line: the first one ends the
 * line), so that a reader inside sees end-of-file as it would from a pipe. */
static void send_eof(struct fb_pty_relay *r)
{
    struct termios t;
    if (r->in_tty || tcgetattr(r->ptm, &t) < 0 || !(t.c_lflag & ICANON))
        return;
    r->mbuf[0] = r->mbuf[1] = (char)t.c_cc[VEOF];
    r->to_m = r->last_in == '\n' ? 1 : 2;
    r->to_m_off = 0;
}

void fb_relay_in(struct fb_pty_relay *r)
{
    if (r->in_eof || r->to_m)
        return;
    ssize_t n = read(r->in, r->mbuf, sizeof r->mbuf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        r->in_eof = true;
        send_eof(r);
    } else {
        r->to_m = (size_t)n;
        r->to_m_off = 0;
        r->last_in = r->mbuf[n - 1];
    }
    fb_relay_master(r);
}

static void out_write(struct fb_pty_relay *r, size_t max)
{
    while (r->to_o > r->to_o_off) {
        if (r->out_gone) {
            r->to_o_off = r->to_o;
            break;
        }
        size_t len = r->to_o - r->to_o_off;
        if (len > max)
            len = max;
        ssize_t n = write(r->out, r->obuf + r->to_o_off, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) {
            r->out_gone = true; /* EPIPE and the like: the rest is dropped */
            continue;
        }
        r->to_o_off += (size_t)n;
        if (max != SIZE_MAX)
            break;
    }
    if (r->to_o_off >= r->to_o)
        r->to_o = r->to_o_off = 0;
}

void fb_relay_out(struct fb_pty_relay *r)
{
    out_write(r, OUT_CHUNK);
}

void fb_relay_master(struct fb_pty_relay *r)
{
    while (r->to_m > r->to_m_off) {
        ssize_t n = write(r->ptm, r->mbuf + r->to_m_off, r->to_m - r->to_m_off);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            if (errno != EAGAIN)
                r->to_m_off = r->to_m; /* the terminal is gone: dropped */
            break;
        }
        r->to_m_off += (size_t)n;
    }
    if (r->to_m_off >= r->to_m)
        r->to_m = r->to_m_off = 0;
    if (!r->to_o) {
        ssize_t n;
        do
            n = read(r->ptm, r->obuf, sizeof r->obuf);
        while (n < 0 && errno == EINTR);
        if (n > 0) {
            r->to_o = (size_t)n;
            r->to_o_off = 0;
        } else if (n < 0 && errno == EIO) {
            r->m_hup = true;
        }
    }
}

void fb_relay_wants(const struct fb_pty_relay *r, uint32_t *m_events, bool *want_in,
                    bool *want_out, bool *busy)
{
    *m_events = r->m_hup ? 0 : (r->to_o ? 0 : EPOLLIN) | (r->to_m ? EPOLLOUT : 0);
    *want_in = !r->in_eof && !r->to_m;
    *want_out = r->to_o != 0;
    *busy = *want_in && !r->in_pollable;
}

void fb_relay_drain(struct fb_pty_relay *r)
{
    for (;;) {
        out_write(r, SIZE_MAX);
        ssize_t n = read(r->ptm, r->obuf, sizeof r->obuf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break; /* EIO: every end inside is closed; EAGAIN: one still open */
        r->to_o = (size_t)n;
        r->to_o_off = 0;
    }
}
