/* relay.c — moving a connection's bytes both ways once it is connected.
 *
 * Bytes read before relaying (the first request, the proxy's 200) sit in
 * the connection's buffers and go first; after that splice() through a pipe
 * per direction (or the buffers when splice cannot be used, see
 * egress_start). A side is read only while the pipe (or buffer) towards the
 * other side has room, so a peer that stops reading stalls its own
 * connection and nothing else. Half-close is passed on; an error on one side
 * resets the other, so a cut-off transfer never looks complete. */
#include "egress_int.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>

static bool splice_in(struct fb_egress *e, struct conn *c, bool from_in);

/* Read from the sandbox's end into up. Returns false if the connection ended. */
bool read_in(struct fb_egress *e, struct conn *c)
{
    if (c->pu[0] >= 0)
        return splice_in(e, c, true);
    if (c->in_eof || buf_room(&c->up) == 0)
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

bool flush(struct fb_egress *e, struct conn *c, struct side *s, struct buf *b,
                  int64_t *count)
{
    while (buf_len(b)) {
        ssize_t n = send(s->fd, b->d + b->head, buf_len(b), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            b->head += (size_t)n;
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
        ssize_t n = splice(s->fd, NULL, pw, NULL, c->pipe_cap - *fill,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            *fill += (size_t)n;
            c->last_ns = fb_now_ns();
            if (!from_in) {
                c->bytes_in += n;
                e->sum.bytes_in += n;
            }
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
            *fill -= (size_t)n;
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
    if (!flush(e, c, &c->out, &c->up, &c->bytes_out) || !flush(e, c, &c->in, &c->down, NULL))
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
    conn_update(e, c);
}

void start_relay(struct fb_egress *e, struct conn *c)
{
    if (e->splice_ok && pipe2(c->pu, O_NONBLOCK | O_CLOEXEC) == 0) {
        if (pipe2(c->pd, O_NONBLOCK | O_CLOEXEC) == 0) {
            /* Larger pipes move more per system call; the kernel may refuse
             * (per-user pipe limits), then the default size it is. */
            fcntl(c->pu[1], F_SETPIPE_SZ, PIPE_SIZE);
            fcntl(c->pd[1], F_SETPIPE_SZ, PIPE_SIZE);
            int a = fcntl(c->pu[1], F_GETPIPE_SZ), b = fcntl(c->pd[1], F_GETPIPE_SZ);
            c->pipe_cap = (size_t)(a < b ? a : b);
        } else {
            close(c->pu[0]);
            close(c->pu[1]);
            c->pu[0] = c->pu[1] = -1;
        }
    }
    c->ph = PH_RELAY;
    c->last_ns = fb_now_ns();
    relay_progress(e, c);
}

bool read_out(struct fb_egress *e, struct conn *c)
{
    if (c->pd[0] >= 0)
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
    return true;
}

