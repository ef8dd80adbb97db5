/* server_conn.c — client connections (docs/protocol.md sections 1-2):
 * accepting them (with the peer's credentials), cutting the input into
 * request lines, queueing reply lines and writing them without blocking,
 * and flow control: a connection whose queued replies exceed OUT_PAUSE is
 * not read from (nor are its execs' pipes) until they drain below
 * OUT_RESUME. A reply is queued whole and replies go out in the order they
 * were made; nothing is dropped for a slow reader (memory is bounded by the
 * budgets, server.h). Also the memory accounting per connection and uid. */
#include "server.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>

/* ---- output ---- */

static void conn_resume(struct conn *c);

static bool conn_has_line(struct conn *c)
{
    return buf_pending(&c->in) && !c->discard &&
           memchr(buf_head(&c->in), '\n', buf_pending(&c->in)) != NULL;
}

/* Recompute what to wait for on c; close it when it is finished (the
 * client shut down its side and everything it asked for is answered). */
static void conn_update(struct conn *c, bool may_close)
{
    if (c->dead)
        return;
    if (may_close && c->rd_eof && !c->nops && !buf_pending(&c->out) && !conn_has_line(c)) {
        conn_close(c);
        return;
    }
    /* EPOLLHUP is always wanted: it is how a client that closed (rather
     * than only shut down its sending side) is noticed while we do not
     * read from it. */
    uint32_t ev = EPOLLHUP;
    if (!c->rd_eof && !conn_paused(c))
        ev |= EPOLLIN;
    if (buf_pending(&c->out))
        ev |= EPOLLOUT;
    if (w_set(c->srv, &c->w, ev) < 0)
        conn_close(c); /* it could wait for ever: better it learns now */
}

static void conn_flush(struct conn *c)
{
    while (buf_pending(&c->out)) {
        ssize_t n = write(c->fd, buf_head(&c->out), buf_pending(&c->out));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            break;
        if (n <= 0) {
            conn_close(c);
            return;
        }
        buf_consume(&c->out, (size_t)n);
        conn_mem(c, -(int64_t)n);
    }
    if (!buf_pending(&c->out))
        buf_reset(&c->out);
    if (buf_pending(&c->out) < OUT_RESUME)
        conn_resume(c);
    conn_update(c, true);
}

void conn_send(struct conn *c, char *line, size_t len)
{
    if (!c || c->dead) {
        free(line);
        return;
    }
    if (!buf_pending(&c->out)) {
        /* Fast path: write directly; the rest of the line becomes the
         * queue (no copy of a big reply). */
        ssize_t n;
        do
            n = write(c->fd, line, len);
        while (n < 0 && errno == EINTR);
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK) {
            free(line);
            conn_close(c);
            return;
        }
        size_t done = n > 0 ? (size_t)n : 0;
        if (done == len) {
            free(line);
            return;
        }
        buf_free(&c->out);
        c->out = (struct fb_buf){.data = line, .len = len, .off = done, .cap = len};
        conn_mem(c, (int64_t)(len - done));
    } else {
        buf_append(&c->out, line, len);
        conn_mem(c, (int64_t)len);
        free(line);
    }
    conn_update(c, false);
}

/* ---- memory ---- */

void conn_mem(struct conn *c, int64_t delta)
{
    c->mem += delta;
    if (c->ua)
        c->ua->mem += delta;
}

/* What is left of the budgets (negative when past them). */
static int64_t room_signed(struct conn *c)
{
    const struct srv_limits *l = &c->srv->lim;
    int64_t a = l->conn_mem - c->mem, b = c->ua ? l->uid_mem - c->ua->mem : a;
    return a < b ? a : b;
}

int64_t conn_room(struct conn *c)
{
    int64_t r = room_signed(c);
    return r > 0 ? r : 0;
}

bool conn_over(struct conn *c, int64_t more)
{
    return more > room_signed(c);
}

static struct uacct *uacct_get(struct srv *srv, uid_t uid)
{
    for (struct uacct *a = srv->uaccts; a; a = a->next)
        if (a->uid == uid)
            return a;
    struct uacct *a = fb_xcalloc(1, sizeof *a);
    a->uid = uid;
    a->next = srv->uaccts;
    srv->uaccts = a;
    return a;
}

static void uacct_put(struct srv *srv, struct uacct *ua)
{
    if (--ua->conns || ua->mem)
        return;
    for (struct uacct **pp = &srv->uaccts; *pp; pp = &(*pp)->next) {
        if (*pp == ua) {
            *pp = ua->next;
            free(ua);
            return;
        }
    }
}

/* ---- replies with big strings ---- */

static size_t blob_len(const struct blob *b, bool b64)
{
    return b64 ? b64_encoded_len(b->n) : json_text(b->p, b->n, NULL);
}

/* Only answers of at least this much text switch (a few KiB of control
 * characters cost little, and stay text for clients that ignore
 * "encoding"). */
#define TEXT_SWITCH_MIN (1u << 20)

bool blobs_b64_smaller(const struct blob *b, size_t nb)
{
    size_t t = 0, e = 0, n = 0;
    for (size_t i = 0; i < nb; i++) {
        e += b64_encoded_len(b[i].n);
        n += b[i].n;
    }
    if (n + n / 2 < TEXT_SWITCH_MIN / 4)
        return false; /* even all 6-byte escapes stay small */
    for (size_t i = 0; i < nb; i++)
        t += json_text(b[i].p, b[i].n, NULL);
    return t >= TEXT_SWITCH_MIN && e < t;
}

char *result_line_blobs(json_t *id, json_t *small, const struct blob *b, size_t nb, bool b64,
                        size_t *len)
{
    char *idj = json_dumps(id, JSON_COMPACT | JSON_ENCODE_ANY);
    char *sm = json_dumps(small, JSON_COMPACT);
    json_decref(small);
    size_t il = idj ? strlen(idj) : 4, sl = sm ? strlen(sm) : 2;
    size_t total = 32 + il + sl;
    for (size_t i = 0; i < nb; i++)
        total += strlen(b[i].name) + 6 + blob_len(&b[i], b64);
    char *line = fb_xmalloc(total);
    size_t o = (size_t)snprintf(line, total, "{\"id\":%s,\"result\":", idj ? idj : "null");
    /* The small object without its closing brace, then the blobs. */
    memcpy(line + o, sm ? sm : "{}", sl - 1);
    o += sl - 1;
    bool first = sl <= 2;
    for (size_t i = 0; i < nb; i++) {
        o += (size_t)sprintf(line + o, "%s\"%s\":\"", first ? "" : ",", b[i].name);
        first = false;
        o += b64 ? b64_encode(b[i].p, b[i].n, line + o) : json_text(b[i].p, b[i].n, line + o);
        line[o++] = '"';
    }
    memcpy(line + o, "}}\n", 3);
    o += 3;
    free(idj);
    free(sm);
    *len = o;
    return line;
}

void send_result(struct conn *c, json_t *id, json_t *result)
{
    if (!c || c->dead) {
        json_decref(result);
        return;
    }
    size_t len;
    char *line = proto_result_line(id, result, &len);
    conn_send(c, line, len);
}

void send_error(struct conn *c, json_t *id, struct proto_err *e)
{
    if (c && !c->dead) {
        size_t len;
        char *line = proto_error_line(id, e, &len);
        conn_send(c, line, len);
    }
    perr_clear(e);
}

void send_errf(struct conn *c, json_t *id, const char *code, const char *fmt, ...)
{
    struct proto_err e = {0};
    e.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    send_error(c, id, &e);
}

void send_out_of_fds(struct conn *c, json_t *id, const char *what)
{
    int64_t used, lim;
    fds_free(&used, &lim);
    struct proto_err e = {0};
    perr_set(&e, "limit_exceeded",
             "the server is out of file descriptors (%lld open, limit %lld): %s", (long long)used,
             (long long)lim, what);
    snprintf(e.limit, sizeof e.limit, "fileDescriptors");
    send_error(c, id, &e);
}

void send_event(struct conn *c, json_t *id, const char *event, json_t *fields)
{
    if (!c || c->dead) {
        json_decref(fields);
        return;
    }
    size_t len;
    char *line = proto_event_line(id, event, fields, &len);
    conn_send(c, line, len);
}

/* ---- input ---- */

bool conn_busy(struct conn *c)
{
    return c->nops > 0 || buf_pending(&c->out) > 0;
}

bool conn_paused(struct conn *c)
{
    /* A request that waits for memory waits while something of this
     * connection's is in flight (it frees memory when done); then it is
     * looked at again. */
    return buf_pending(&c->out) >= OUT_PAUSE || c->nops >= MAX_INFLIGHT ||
           (c->need && conn_busy(c) && conn_over(c, c->need));
}

static void in_consume(struct conn *c, size_t n)
{
    buf_consume(&c->in, n);
    conn_mem(c, -(int64_t)n);
}

/* Handle complete lines in c->in. */
void conn_process(struct conn *c)
{
    struct srv *srv = c->srv;
    while (!c->dead && !conn_paused(c)) {
        const char *head = buf_head(&c->in);
        size_t pend = buf_pending(&c->in);
        const char *nl = pend > c->scan ? memchr(head + c->scan, '\n', pend - c->scan) : NULL;
        if (!nl) {
            c->scan = pend;
            if (c->discard) {
                in_consume(c, pend);
                c->scan = 0;
            } else if ((int64_t)pend > srv->lim.max_message) {
                json_t *pid = proto_peek_id(head, pend < 512 ? pend : 512);
                send_errf(c, pid, "too_large", "a request line is larger than %lld bytes",
                          (long long)srv->lim.max_message);
                json_decref(pid);
                c->discard = true;
                in_consume(c, pend);
                c->scan = 0;
            }
            break;
        }
        size_t len = (size_t)(nl - head);
        c->scan = 0;
        if (c->discard) {
            c->discard = false;
        } else if ((int64_t)len > srv->lim.max_message) {
            json_t *pid = proto_peek_id(head, len < 512 ? len : 512);
            send_errf(c, pid, "too_large", "a request line is larger than %lld bytes",
                      (long long)srv->lim.max_message);
            json_decref(pid);
        } else {
            size_t l = len;
            if (l && head[l - 1] == '\r')
                l--;
            bool blank = true;
            for (size_t i = 0; i < l && blank; i++)
                blank = head[i] == ' ' || head[i] == '\t';
            c->need = 0;
            if (!blank && handle_line(c, head, l) > 0) {
                /* It waits for memory (c->need): the line stays. */
                c->scan = 0;
                break;
            }
        }
        if (c->dead)
            return;
        in_consume(c, len + 1);
    }
    if (!buf_pending(&c->in))
        buf_reset(&c->in);
}

static void conn_resume(struct conn *c)
{
    if (c->dead)
        return;
    struct op *nx;
    for (struct op *o = c->ops; o; o = nx) {
        nx = o->cnext;
        if (o->kind == OP_EXEC && o->paused && exec_pause(o, false) < 0) {
            /* Its output could never be read again: end it now. */
            exec_kill(o, SIGKILL);
            send_errf(c, o->id, "internal", "cannot watch the command's output: %s",
                      strerror(errno));
            op_finish(o);
        }
    }
}

/* An op of c finished: maybe more requests can be read now (the loop
 * processes buffered lines at the end of the iteration). */
void conn_after_op(struct conn *c)
{
    conn_update(c, true);
}

/* Read what the client sent, keeping the descriptors that came with it
 * (SCM_RIGHTS: a `run` with passFds, the caller's stdin, stdout and
 * stderr) in c->rxfds, oldest first. At most CONN_RXFDS are kept: more are
 * closed (a request that wanted them is then refused for lack of them). */
static ssize_t conn_read(struct conn *c, char *buf, size_t cap)
{
    struct iovec iov = {buf, cap};
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(CONN_RXFDS * sizeof(int))];
    } cm;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                        .msg_controllen = sizeof cm.b};
    ssize_t n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n < 0)
        return n;
    for (struct cmsghdr *h = CMSG_FIRSTHDR(&mh); h; h = CMSG_NXTHDR(&mh, h)) {
        if (h->cmsg_level != SOL_SOCKET || h->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (h->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < k; i++) {
            int fd;
            memcpy(&fd, CMSG_DATA(h) + i * sizeof(int), sizeof fd);
            if (c->nrx < CONN_RXFDS)
                c->rxfds[c->nrx++] = fd;
            else
                close(fd);
        }
    }
    return n;
}

int conn_take_fds(struct conn *c, int *fds, unsigned n)
{
    if (c->nrx < n)
        return -1;
    memcpy(fds, c->rxfds, n * sizeof(int));
    memmove(c->rxfds, c->rxfds + n, (c->nrx - n) * sizeof(int));
    c->nrx -= n;
    return 0;
}

void on_conn(struct conn *c, uint32_t events)
{
    if ((events & (EPOLLHUP | EPOLLERR)) && (c->rd_eof || conn_paused(c))) {
        /* Gone for good: nobody can read what we would answer. */
        conn_close(c);
        return;
    }
    if (events & EPOLLOUT) {
        conn_flush(c);
        if (c->dead)
            return;
    }
    if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR | EPOLLRDHUP)) && !c->rd_eof) {
        size_t budget = 1 << 20;
        while (budget && !conn_paused(c)) {
            char buf[CHUNK];
            ssize_t n = conn_read(c, buf, sizeof buf);
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (n < 0) {
                conn_close(c);
                return;
            }
            if (n == 0) {
                c->rd_eof = true;
                break;
            }
            buf_append(&c->in, buf, (size_t)n);
            /* No copy of a request stays on the stack: session inits are
             * clones of this process, and a line may carry a secret's
             * value (its copy in c->in is wiped once handled). */
            explicit_bzero(buf, (size_t)n);
            conn_mem(c, n);
            /* (a closed client's last requests are still handled: the
             * close is acted on below, once the input is drained) */
            budget = budget > (size_t)n ? budget - (size_t)n : 0;
            conn_process(c);
            if (c->dead)
                return;
        }
        if (c->rd_eof) {
            conn_process(c);
            if (c->dead)
                return;
            if (events & (EPOLLHUP | EPOLLERR)) {
                conn_close(c);
                return;
            }
        }
    }
    conn_update(c, true);
}

void conn_close(struct conn *c)
{
    struct srv *srv = c->srv;
    if (c->dead)
        return;
    c->dead = true;
    w_set(c->srv, &c->w, 0);
    for (unsigned i = 0; i < c->nrx; i++)
        close(c->rxfds[i]);
    c->nrx = 0;
    close(c->fd);
    c->w.fd = c->fd = -1;
    /* Its ops: execs are killed, the rest finish unanswered. */
    while (c->ops) {
        struct op *o = c->ops;
        op_unlink_conn(o);
        if (o->kind == OP_EXEC) {
            exec_kill(o, SIGKILL);
            exec_pause(o, false); /* keep draining so the command is not stuck */
        } else if (o->kind == OP_WS) {
            ws_cancel(o->ws); /* nobody wants its answer */
        }
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        srv->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    srv->nconns--;
    /* What is left is its buffers, freed with it. */
    conn_mem(c, -c->mem);
    uacct_put(srv, c->ua);
    c->ua = NULL;
    bury(c->srv, GRAVE_CONN, c);
}

/* Slots of --max-conns that only the server's own uid may take, so that
 * other uids (when the socket is opened to them) cannot lock it out. */
static int64_t owner_reserve(const struct srv *srv)
{
    int64_t r = srv->lim.max_conns / 4;
    return r < 1 ? 1 : r > 64 ? 64 : r;
}

/* Is a connection from uid over a limit? Fills e. */
static bool refuse_conn(struct srv *srv, uid_t uid, struct proto_err *e)
{
    const struct srv_limits *l = &srv->lim;
    unsigned mine = 0;
    for (struct uacct *a = srv->uaccts; a; a = a->next)
        if (a->uid == uid)
            mine = a->conns;
    bool owner = uid == geteuid();
    if ((int64_t)srv->nconns >= l->max_conns) {
        perr_set(e, "limit_exceeded", "too many connections (%lld)", (long long)l->max_conns);
        snprintf(e->limit, sizeof e->limit, "connections");
        return true;
    }
    if (owner)
        return false;
    if ((int64_t)mine >= l->max_conns_uid) {
        perr_set(e, "limit_exceeded", "too many connections from uid %u (%lld)", (unsigned)uid,
                 (long long)l->max_conns_uid);
        snprintf(e->limit, sizeof e->limit, "connectionsPerUid");
        return true;
    }
    if ((int64_t)srv->nconns >= l->max_conns - owner_reserve(srv)) {
        perr_set(e, "limit_exceeded", "too many connections (the last %lld are kept for uid %u)",
                 (long long)owner_reserve(srv), (unsigned)geteuid());
        snprintf(e->limit, sizeof e->limit, "connections");
        return true;
    }
    return false;
}

void on_accept(struct srv *srv)
{
    for (int k = 0; k < 64; k++) {
        int fd = accept4(srv->wlisten.fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: stop accepting for a moment instead of
                 * spinning on a listening socket that stays readable. */
                w_set(srv, &srv->wlisten, 0);
                srv->listen_paused_until = now_ns() + 100000000ull;
            }
            return;
        }
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        struct proto_err e = {0};
        if (srv->stopping || refuse_conn(srv, cr.uid, &e)) {
            if (srv->stopping)
                perr_set(&e, "shutting_down", "the server is stopping");
            size_t len;
            char *line = proto_error_line(NULL, &e, &len);
            ssize_t w = write(fd, line, len);
            (void)w;
            free(line);
            close(fd);
            continue;
        }
        struct conn *c = fb_xcalloc(1, sizeof *c);
        c->srv = srv;
        c->fd = fd;
        c->uid = cr.uid;
        c->pid = cr.pid;
        c->ua = uacct_get(srv, cr.uid);
        c->ua->conns++;
        w_init(&c->w, W_CONN, 0, c, fd);
        c->next = srv->conns;
        if (srv->conns)
            srv->conns->prev = c;
        srv->conns = c;
        srv->nconns++;
        if (w_set(srv, &c->w, EPOLLIN | EPOLLHUP) < 0)
            conn_close(c);
    }
}
