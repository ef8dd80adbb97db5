/* relay.c — moving a connection's bytes both ways once it is connected.
 *
 * Bytes read before relaying (the first request, the proxy's 200) sit in
 * the connection's buffers and go first; after that splice() through a pipe
 * per direction (or the buffers when splice cannot be used, see
 * egress_start). A side is read only while the pipe (or buffer) towards the
 * other side has room, so a peer that stops reading stalls its own
 * connection and nothing else. Half-close is passed on; an error on one side
 * resets the other, so a cut-off transfer never looks complete.
 *
 * What the relay holds in the kernel for a sandbox is bounded: every
 * connection it counts gets an equal share of RELAY_BUDGET (rounded down
 * to a power of two, within SHARE_MIN..SHARE_MAX): an eighth of it for each
 * of its four socket buffers (receive and send on the sandbox's end and on
 * the upstream one), a quarter for each of its two pipes. The share is
 * applied when the connection is accepted (upstream: once connected, so the
 * window scale it offers is not limited) and again whenever the number of
 * connections moves it; the pipes are filled only up to theirs. So the
 * relay never holds more than max(RELAY_BUDGET, connections x SHARE_MIN).
 * The socket queues are measured now and then (the timer, and a connection
 * whose pipe is full at most every MEASURE_MS) for the report's peak. */
#include "egress_int.h"

#include <fcntl.h>
#include <linux/sockios.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <string.h>
#include <sys/epoll.h>

static bool splice_in(struct fb_egress *e, struct conn *c, bool from_in);

/* ---- the buffer budget ---- */

static size_t share_now(const struct fb_egress *e)
{
    size_t n = e->nrelay > 0 ? (size_t)e->nrelay : 1, want = RELAY_BUDGET / n, s = SHARE_MIN;
    while (s * 2 <= want && s * 2 <= SHARE_MAX)
        s *= 2;
    return s;
}

/* Receive and send buffers of fd to bytes each, as the kernel counts them
 * (it doubles what it is given, for its bookkeeping). */
static void set_sockbufs(int fd, size_t bytes)
{
    int v = (int)(bytes / 2);
    setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &v, sizeof v);
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &v, sizeof v);
}

void relay_apply(struct fb_egress *e, struct conn *c)
{
    if (!e->share)
        e->share = share_now(e);
    c->share = e->share;
    if (c->in.fd >= 0)
        set_sockbufs(c->in.fd, c->share / 8);
    if (c->out.fd >= 0 && c->ph != PH_RESOLVE && c->ph != PH_CONNECT)
        set_sockbufs(c->out.fd, c->share / 8);
    if (c->pu[0] >= 0) {
        size_t want = c->share / 4 < PIPE_MAX ? c->share / 4 : PIPE_MAX;
        if (want > c->pipe_size) {
            /* Grow both pipes; the kernel may refuse (per-user limits). */
            int a = fcntl(c->pu[1], F_SETPIPE_SZ, (int)want);
            int b = fcntl(c->pd[1], F_SETPIPE_SZ, (int)want);
            if (a > 0 && b > 0)
                c->pipe_size = (size_t)(a < b ? a : b);
        }
        c->pipe_cap = want < c->pipe_size ? want : c->pipe_size;
    }
}

void relay_rebalance(struct fb_egress *e)
{
    e->rebalance = false;
    size_t s = share_now(e);
    if (s == e->share)
        return;
    e->share = s;
    for (struct conn *c = e->conns; c; c = c->next)
        if (c->counted && !c->dead)
            relay_apply(e, c);
}

static size_t fd_queued(int fd)
{
    int in = 0, out = 0;
    if (fd < 0)
        return 0;
    if (ioctl(fd, SIOCINQ, &in) < 0 || in < 0)
        in = 0;
    if (ioctl(fd, SIOCOUTQ, &out) < 0 || out < 0)
        out = 0;
    return (size_t)in + (size_t)out;
}

static void note_peak(struct fb_egress *e)
{
    int64_t now = e->pipes + e->queued;
    if (now > e->sum.relay_peak)
        e->sum.relay_peak = now;
}

void relay_measure(struct fb_egress *e, struct conn *c)
{
    size_t q = c->dead ? 0 : fd_queued(c->in.fd) + fd_queued(c->out.fd);
    e->queued += (int64_t)q - (int64_t)c->queued;
    c->queued = q;
    c->measured_ns = fb_now_ns();
    note_peak(e);
}

static void fill_add(struct fb_egress *e, size_t *fill, ssize_t n)
{
    *fill = (size_t)((ssize_t)*fill + n);
    e->pipes += n;
    if (n > 0)
        note_peak(e);
}

/* Read from the sandbox's end into up. Returns false if the connection ended. */
bool read_in(struct fb_egress *e, struct conn *c)
{
    if (c->pu[0] >= 0 && !c->walked)
        return splice_in(e, c, true);
    if (c->in_eof || buf_room(&c->up) == 0 || c->wait_upgrade)
        return true;
    buf_compact(&c->up);
    ssize_t n = recv(c->in.fd, c->up.d + c->up.tail, BUF_SIZE - c->up.tail, MSG_DONTWAIT);
    if (n > 0) {
        c->up.tail += (size_t)n;
        c->last_ns = fb_now_ns();
    } else if (n == 0) {
        c->in_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
        conn_end(e, c, c->ph == PH_RELAY ? "allow" : "error", true, "sandbox side: %s",
                 strerror(errno));
        return false;
    }
    return true;
}

bool flush(struct fb_egress *e, struct conn *c, struct side *s, struct buf *b, int64_t *count,
           size_t *ok)
{
    for (;;) {
        size_t want = buf_len(b);
        if (ok && *ok < want)
            want = *ok;
        if (!want)
            break;
        ssize_t n = send(s->fd, b->d + b->head, want, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            b->head += (size_t)n;
            if (ok)
                *ok -= (size_t)n;
            if (count) {
                *count += n;
                if (s == &c->out)
                    e->sum.bytes_out += n;
            }
            c->last_ns = fb_now_ns();
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        conn_end(e, c, c->ph == PH_RELAY ? "allow" : "error", true, "%s side: %s",
                 s == &c->in ? "sandbox" : "upstream", n < 0 ? strerror(errno) : "closed");
        return false;
    }
    buf_compact(b);
    return true;
}

bool walk_up(struct fb_egress *e, struct conn *c)
{
    while (c->walked && !c->wait_upgrade) {
        size_t have = buf_len(&c->up) - c->up_ok, used = 0;
        if (!have && c->walk.st != HW_UPGRADE)
            break; /* (an upgrade request that just ended: wait at once) */
        struct sniff req;
        enum http_walk_result r =
            http_walk(&c->walk, c->up.d + c->up.head + c->up_ok, have, &used, &req);
        c->up_ok += used;
        unsigned nreq = c->walk.requests;
        if (r == HW_REQUEST) {
            if (!strcmp(req.method, "CONNECT")) {
                conn_end(e, c, "deny", true, "CONNECT request sent to %s itself (request %u)",
                         c->name, nreq);
                return false;
            }
            if (strcmp(req.name, c->name)) {
                conn_end(e, c, "deny", true, "HTTP Host %s does not match %s (request %u)",
                         req.name, c->name, nreq);
                return false;
            }
        } else if (r == HW_ERROR) {
            conn_end(e, c, "deny", true, "%s (after request %u)", req.why, nreq);
            return false;
        } else if (r == HW_WAIT) {
            c->wait_upgrade = true;
            c->down_ok = buf_len(&c->down); /* what is there is not the answer (the proxy's 200) */
        } else if (used < have) {
            /* A request head or chunk line not complete yet. */
            if (buf_room(&c->up) == 0 && c->up_ok == 0) {
                conn_end(e, c, "deny", true, "request head larger than %d KiB", BUF_SIZE / 1024);
                return false;
            }
            if (c->in_eof) {
                conn_end(e, c, "deny", true, "client closed in the middle of request %u",
                         nreq + (c->walk.st == HW_HEAD));
                return false;
            }
            break;
        }
    }
    return true;
}

bool answer_upgrade(struct fb_egress *e, struct conn *c)
{
    while (c->wait_upgrade) {
        size_t have = buf_len(&c->down) - c->down_ok;
        struct sniff r;
        int status = 0;
        sniff_response(c->down.d + c->down.head + c->down_ok, have, &r, &status);
        if (r.kind == SNIFF_MORE && !c->out_eof && (buf_room(&c->down) || c->down_ok))
            return true;
        bool switched = false;
        if (r.kind == SNIFF_HTTP) {
            c->down_ok += r.head_len;
            if (status >= 100 && status < 200 && status != 101)
                continue; /* an interim answer; the real one follows */
            switched = status == 101;
        }
        /* Answered (or the server does not speak HTTP, or stopped): the
         * client's requests go on being checked unless it switched. */
        http_walk_answer(&c->walk, switched);
        c->wait_upgrade = false;
    }
    return walk_up(e, c);
}

/* splice() into a socket cannot say MSG_NOSIGNAL: a peer that is gone
 * raises SIGPIPE, which the event loop keeps blocked (checked in
 * egress_start); take it off the pending set so it is never delivered. */
static void drop_sigpipe(void)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
           sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
        ;
}

/* socket -> pipe. Returns false if the connection ended. */
static bool splice_in(struct fb_egress *e, struct conn *c, bool from_in)
{
    struct side *s = from_in ? &c->in : &c->out;
    bool *eof = from_in ? &c->in_eof : &c->out_eof;
    size_t *fill = from_in ? &c->pu_fill : &c->pd_fill;
    int pw = from_in ? c->pu[1] : c->pd[1];
    while (!*eof && *fill < c->pipe_cap) {
        size_t want = c->pipe_cap - *fill;
        ssize_t n = splice(s->fd, NULL, pw, NULL, want, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            fill_add(e, fill, n);
            c->last_ns = fb_now_ns();
            if (!from_in) {
                c->bytes_in += n;
                e->sum.bytes_in += n;
            }
            /* Short: the socket is (most likely) empty. Epoll is level-
             * triggered, so if it is not, the next round reads the rest;
             * asking now would mostly cost a system call that says EAGAIN. */
            if ((size_t)n < want)
                break;
            continue;
        }
        if (n == 0) {
            *eof = true;
            break;
        }
        if (errno == EAGAIN || errno == EINTR)
            break;
        conn_end(e, c, "allow", true, "%s side: %s", from_in ? "sandbox" : "upstream",
                 strerror(errno));
        return false;
    }
    return true;
}

/* pipe -> socket, after what the buffer still holds. */
static bool splice_out(struct fb_egress *e, struct conn *c, bool to_out)
{
    struct side *s = to_out ? &c->out : &c->in;
    size_t *fill = to_out ? &c->pu_fill : &c->pd_fill;
    int pr = to_out ? c->pu[0] : c->pd[0];
    while (*fill) {
        ssize_t n = splice(pr, NULL, s->fd, NULL, *fill, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            fill_add(e, fill, -n);
            c->last_ns = fb_now_ns();
            if (to_out) {
                c->bytes_out += n;
                e->sum.bytes_out += n;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        int er = n < 0 ? errno : EPIPE;
        if (er == EPIPE)
            drop_sigpipe();
        conn_end(e, c, "allow", true, "%s side: %s", to_out ? "upstream" : "sandbox", strerror(er));
        return false;
    }
    return true;
}

void relay_progress(struct fb_egress *e, struct conn *c)
{
    if (!flush(e, c, &c->out, &c->up, &c->bytes_out, up_gate(c)) ||
        !flush(e, c, &c->in, &c->down, NULL, down_gate(c)))
        return;
    if (c->pu[0] >= 0) {
        if ((!buf_len(&c->up) && !splice_out(e, c, true)) ||
            (!buf_len(&c->down) && !splice_out(e, c, false)))
            return;
    }
    if (c->in_eof && !buf_len(&c->up) && !c->pu_fill && !c->up_shut) {
        shutdown(c->out.fd, SHUT_WR);
        c->up_shut = true;
    }
    if (c->out_eof && !buf_len(&c->down) && !c->pd_fill && !c->down_shut) {
        shutdown(c->in.fd, SHUT_WR);
        c->down_shut = true;
    }
    if (c->up_shut && c->down_shut) {
        conn_end(e, c, "allow", false, "closed");
        return;
    }
    /* A full pipe: this connection is where buffers pile up now. */
    if (c->pu[0] >= 0 && (c->pu_fill >= c->pipe_cap || c->pd_fill >= c->pipe_cap) &&
        fb_now_ns() - c->measured_ns > MEASURE_MS * 1000000ull)
        relay_measure(e, c);
    conn_update(e, c);
}

void start_relay(struct fb_egress *e, struct conn *c)
{
    if (c->inspect) {
        inspect_start(e, c); /* inspect.c: its own thread from here */
        return;
    }
    if (e->splice_ok && pipe2(c->pu, O_NONBLOCK | O_CLOEXEC) == 0) {
        if (pipe2(c->pd, O_NONBLOCK | O_CLOEXEC) == 0) {
            int a = fcntl(c->pu[1], F_GETPIPE_SZ), b = fcntl(c->pd[1], F_GETPIPE_SZ);
            c->pipe_size = (size_t)(a < b ? a : b);
        } else {
            close(c->pu[0]);
            close(c->pu[1]);
            c->pu[0] = c->pu[1] = -1;
        }
    }
    c->ph = PH_RELAY;
    c->last_ns = fb_now_ns();
    relay_apply(e, c); /* pipe sizes, and the upstream socket's buffers */
    relay_progress(e, c);
}

bool read_out(struct fb_egress *e, struct conn *c)
{
    if (c->pd[0] >= 0 && !(c->wait_upgrade && !c->pd_fill))
        return splice_in(e, c, false);
    if (c->out_eof || buf_room(&c->down) == 0)
        return true;
    buf_compact(&c->down);
    ssize_t n = recv(c->out.fd, c->down.d + c->down.tail, BUF_SIZE - c->down.tail, MSG_DONTWAIT);
    if (n > 0) {
        c->down.tail += (size_t)n;
        c->bytes_in += n;
        e->sum.bytes_in += n;
        c->last_ns = fb_now_ns();
    } else if (n == 0) {
        c->out_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
        conn_end(e, c, "allow", true, "upstream side: %s", strerror(errno));
        return false;
    }
    return answer_upgrade(e, c);
}

