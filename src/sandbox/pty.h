/* pty.h — pseudo-terminals, shared by `fluebox exec -t` (client.c, the
 * session init sess_init.c) and `fluebox run -t` (init.c, supervise.c):
 *  - the inside: a pty of the sandbox's own devpts made the controlling
 *    terminal of a command in a session of its own;
 *  - the relay of a cold run between the caller's stdin/stdout and the
 *    master (non-blocking on the master; the caller's fds are never made
 *    non-blocking, they are shared with the caller's shell). */
#ifndef FB_PTY_H
#define FB_PTY_H

#include "fb.h"
#include "term.h"

/* Open /dev/ptmx (the sandbox's devpts), unlock it, set rows x cols, and
 * its peer (*pts, close-on-exec, not a controlling terminal yet).
 * Returns the master (close-on-exec) or -1/errno. */
int fb_pty_open(int rows, int cols, int *pts);
/* In the child, after fork: a new session, pts its
 * controlling terminal and fds 0, 1, 2. Returns 0 or -1/errno. */
int fb_pty_take(int pts);

/* The relay of `run -t`: in (the caller's stdin, -1 for none) -> master ->
 * out (the caller's stdout). The caller polls the fds it is told about. */
struct fb_pty_relay {
    int in, out, ptm;
    bool in_eof, in_pollable, in_tty, out_gone;
    bool m_hup;            /* read EIO: no end inside is open (stop polling it) */
    char last_in;          /* the last byte given to the terminal */
    size_t to_m, to_m_off; /* bytes waiting for the master */
    size_t to_o, to_o_off; /* bytes waiting for out */
    char mbuf[4096], obuf[4096];
};
void fb_relay_init(struct fb_pty_relay *r, int in, int out, int ptm);
/* Move what can be moved without blocking. */
void fb_relay_in(struct fb_pty_relay *r);     /* in is readable */
void fb_relay_master(struct fb_pty_relay *r); /* master readable or writable */
void fb_relay_out(struct fb_pty_relay *r);    /* out is writable */
/* What to wait for: *m_events on the master (EPOLL*), *want_out for out, *want_in
 * for in (when in cannot be polled, *busy: try again without waiting). */
void fb_relay_wants(const struct fb_pty_relay *r, uint32_t *m_events, bool *want_in,
                    bool *want_out, bool *busy);
/* The command is gone: what is left in the terminal goes to out. */
void fb_relay_drain(struct fb_pty_relay *r);

#endif
