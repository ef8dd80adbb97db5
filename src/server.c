/* server.c — `fluebox serve`: one epoll event loop with non-blocking I/O
 * that owns the listening socket, client connections, sessions' control
 * sockets, exec pipes and timers (docs/protocol.md).
 *
 * Objects: a conn per client connection; a sess (server state of one
 * fb_session, session.c) per session; an op per request that cannot be
 * answered at once (session.create/destroy, exec, file operations). An op is
 * linked to its conn (NULL once the client is gone) and to its session.
 * Everything referenced from epoll is freed only at the end of a loop
 * iteration (the graveyard), so a handler never sees freed memory.
 *
 * Flow control: a connection whose queued responses exceed 4 MiB is not
 * read from, and its streaming execs' pipes are not read from either (the
 * command blocks on write); above 64 MiB queued it is dropped. Requests in
 * flight per connection are bounded the same way. Init's control socket is
 * written without blocking, with a queue. */
#include "commands.h"

#include "cgroup.h"
#include "ctl.h"
#include "profile.h"
#include "proto.h"
#include "session.h"

#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

/* ---- limits (docs/protocol.md section 5) ---- */

static struct {
    int64_t max_message;
    int64_t max_sessions;
    int64_t max_execs;
    int64_t max_output;
    int64_t max_conns;
    int64_t pool;
} lim = {16 << 20, 100, 32, 16 << 20, 1024, 0};

#define OUT_PAUSE (4u << 20)
#define OUT_RESUME (1u << 20)
#define OUT_DROP (64u << 20)
#define MAX_INFLIGHT 256
#define EXEC_SPEC_MAX (128 * 1024)
#define GRACE_NS (100 * 1000000ull)
#define CHUNK 65536

/* ---- objects ---- */

enum wkind { W_LISTEN = 1, W_SIG, W_WORKER, W_CONN, W_CTL, W_PIDFD, W_EGRESS, W_PIPE };

struct watch {
    enum wkind kind;
    int sub;   /* W_PIPE: 0 stdout, 1 stderr, 2 stdin, 3 bulk */
    void *ptr;
    int fd;
    uint32_t ev; /* current epoll events; 0 = not registered */
};

struct op;

struct conn {
    struct watch w;
    int fd;
    uid_t uid;
    pid_t pid;
    struct fb_buf in, out;
    size_t scan;     /* bytes of `in` already searched for a newline */
    bool discard;    /* dropping the rest of an oversized line */
    bool rd_eof;     /* client shut down its side: finish and close */
    bool dead;
    struct op *ops;  /* in flight */
    unsigned nops;
    struct conn *next, *prev;
};

struct outrec {
    char *rec;
    size_t len;
    int fds[4];
    size_t nfds;
    struct outrec *next;
};

struct sess {
    struct fb_session *s;
    struct watch wctl, wpid, wegress;
    struct op *ops;  /* waiting on init, or on this session */
    struct outrec *qhead, *qtail;
    uint64_t next_tag;
    uint64_t total_execs;
    unsigned running_execs;
    bool dying;      /* destroy requested / expired */
    bool in_pool;
    bool dead;       /* freed at the end of the iteration */
    struct sess *next, *prev;
};

enum opkind { OP_CREATE, OP_DESTROY, OP_EXEC, OP_FILE };
enum fop { F_READ, F_WRITE, F_STAT, F_EXISTS, F_READDIR, F_MKDIR, F_RM, F_RENAME };

struct xstream {
    struct watch w;
    struct fb_buf buf;  /* collect mode */
    unsigned char carry[4];
    size_t ncarry;
    bool eof, truncated;
};

struct op {
    enum opkind kind;
    json_t *id;
    struct conn *c;
    struct op *cnext, *cprev;
    struct sess *ss;
    struct op *snext, *sprev;
    uint64_t tag;
    bool dead;
    bool replied; /* init answered (file ops) */
    /* file ops */
    enum fop fop;
    char *path;
    struct watch wbulk;
    struct fb_buf data;   /* read: collected; write: to send (data.off = sent) */
    int64_t expect;       /* bulk bytes announced, -1 = until EOF */
    bool bulk_done;
    json_t *result;       /* init's reply, waiting for bulk data */
    bool base64;
    int64_t offset, max;
    /* exec */
    char exec_id[72];
    pid_t pid;
    bool started, exited, timed_out, stream, paused;
    int status;
    struct xstream xs[2];
    struct watch win;
    struct fb_buf inbuf;
    int64_t max_out;
    uint64_t start_ns, end_ns, deadline_ns, grace_ns;
    /* create */
    struct fb_session *pending; /* being spawned */
};

static int ep = -1;
static struct conn *conns;
static size_t nconns;
static struct sess *sesss;
static int pool_ready, pool_pending;
static uint64_t pool_retry_ns;
static bool stopping;
static char sock_path[108];
static char *recbuf;

/* The graveyard: freed at the end of each loop iteration. */
struct grave {
    int kind; /* 0 conn, 1 sess, 2 op */
    void *p;
    struct grave *next;
};
static struct grave *graves;

static void bury(int kind, void *p)
{
    struct grave *g = fb_xmalloc(sizeof *g);
    g->kind = kind;
    g->p = p;
    g->next = graves;
    graves = g;
}

/* ---- epoll helpers ---- */

static void w_set(struct watch *w, uint32_t ev)
{
    if (w->fd < 0 || w->ev == ev)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = w};
    if (!w->ev)
        epoll_ctl(ep, EPOLL_CTL_ADD, w->fd, &e);
    else if (!ev)
        epoll_ctl(ep, EPOLL_CTL_DEL, w->fd, NULL);
    else
        epoll_ctl(ep, EPOLL_CTL_MOD, w->fd, &e);
    w->ev = ev;
}

static void w_init(struct watch *w, enum wkind kind, int sub, void *ptr, int fd)
{
    w->kind = kind;
    w->sub = sub;
    w->ptr = ptr;
    w->fd = fd;
    w->ev = 0;
}

static void w_close(struct watch *w)
{
    if (w->fd < 0)
        return;
    w_set(w, 0);
    close(w->fd);
    w->fd = -1;
}

static uint64_t now_ns(void)
{
    return fb_now_ns();
}

/* ---- connections: output ---- */

static void conn_close(struct conn *c);
static void conn_resume(struct conn *c);

static bool conn_paused(struct conn *c);
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
    w_set(&c->w, ev);
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
    }
    if (!buf_pending(&c->out))
        buf_reset(&c->out);
    if (buf_pending(&c->out) < OUT_RESUME)
        conn_resume(c);
    conn_update(c, true);
}

/* Queue a line (takes ownership of line). */
static void conn_send(struct conn *c, char *line, size_t len)
{
    if (!c || c->dead) {
        free(line);
        return;
    }
    if (buf_pending(&c->out) > OUT_DROP) {
        free(line);
        conn_close(c);
        return;
    }
    if (!buf_pending(&c->out)) {
        /* Fast path: write directly, queue the rest. */
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
        if (done < len)
            buf_append(&c->out, line + done, len - done);
    } else {
        buf_append(&c->out, line, len);
    }
    free(line);
    if (buf_pending(&c->out))
        conn_update(c, false);
}

static void send_result(struct conn *c, json_t *id, json_t *result)
{
    if (!c || c->dead) {
        json_decref(result);
        return;
    }
    size_t len;
    char *line = proto_result_line(id, result, &len);
    conn_send(c, line, len);
}

static void send_error(struct conn *c, json_t *id, struct proto_err *e)
{
    if (c && !c->dead) {
        size_t len;
        char *line = proto_error_line(id, e, &len);
        conn_send(c, line, len);
    }
    perr_clear(e);
}

static void send_errf(struct conn *c, json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void send_errf(struct conn *c, json_t *id, const char *code, const char *fmt, ...)
{
    struct proto_err e = {0};
    e.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e.message, sizeof e.message, fmt, ap);
    va_end(ap);
    send_error(c, id, &e);
}

static void send_event(struct conn *c, json_t *id, const char *event, json_t *fields)
{
    if (!c || c->dead) {
        json_decref(fields);
        return;
    }
    size_t len;
    char *line = proto_event_line(id, event, fields, &len);
    conn_send(c, line, len);
}

/* ---- ops ---- */

static struct op *op_new(enum opkind kind, struct conn *c, json_t *id, struct sess *ss)
{
    struct op *o = fb_xcalloc(1, sizeof *o);
    o->kind = kind;
    o->id = json_incref(id);
    o->c = c;
    if (c) {
        o->cnext = c->ops;
        if (c->ops)
            c->ops->cprev = o;
        c->ops = o;
        c->nops++;
    }
    o->ss = ss;
    if (ss) {
        o->snext = ss->ops;
        if (ss->ops)
            ss->ops->sprev = o;
        ss->ops = o;
        o->tag = ++ss->next_tag;
    }
    w_init(&o->wbulk, W_PIPE, 3, o, -1);
    w_init(&o->win, W_PIPE, 2, o, -1);
    for (int i = 0; i < 2; i++)
        w_init(&o->xs[i].w, W_PIPE, i, o, -1);
    o->expect = -1;
    return o;
}

static void op_unlink_conn(struct op *o)
{
    struct conn *c = o->c;
    if (!c)
        return;
    if (o->cprev)
        o->cprev->cnext = o->cnext;
    else
        c->ops = o->cnext;
    if (o->cnext)
        o->cnext->cprev = o->cprev;
    o->cnext = o->cprev = NULL;
    o->c = NULL;
    c->nops--;
}

static void op_unlink_sess(struct op *o)
{
    struct sess *ss = o->ss;
    if (!ss)
        return;
    if (o->sprev)
        o->sprev->snext = o->snext;
    else
        ss->ops = o->snext;
    if (o->snext)
        o->snext->sprev = o->sprev;
    o->snext = o->sprev = NULL;
    o->ss = NULL;
}

static void conn_after_op(struct conn *c);

/* The op is answered or abandoned: close its fds and bury it. */
static void op_finish(struct op *o)
{
    if (o->dead)
        return;
    o->dead = true;
    struct conn *c = o->c;
    if (o->kind == OP_EXEC && o->ss && o->ss->running_execs > 0)
        o->ss->running_execs--;
    op_unlink_conn(o);
    op_unlink_sess(o);
    w_close(&o->wbulk);
    w_close(&o->win);
    for (int i = 0; i < 2; i++)
        w_close(&o->xs[i].w);
    bury(2, o);
    if (c)
        conn_after_op(c);
}

static void op_free(struct op *o)
{
    json_decref(o->id);
    json_decref(o->result);
    free(o->path);
    buf_free(&o->data);
    buf_free(&o->inbuf);
    for (int i = 0; i < 2; i++)
        buf_free(&o->xs[i].buf);
    free(o);
}

static struct op *op_by_tag(struct sess *ss, uint64_t tag)
{
    for (struct op *o = ss->ops; o; o = o->snext)
        if (o->tag == tag && !o->dead)
            return o;
    return NULL;
}

/* ---- sessions ---- */

static struct sess *sess_new(struct fb_session *s)
{
    struct sess *ss = fb_xcalloc(1, sizeof *ss);
    ss->s = s;
    s->srv = ss;
    w_init(&ss->wctl, W_CTL, 0, ss, -1);
    w_init(&ss->wpid, W_PIDFD, 0, ss, -1);
    w_init(&ss->wegress, W_EGRESS, 0, ss, -1);
    ss->next = sesss;
    if (sesss)
        sesss->prev = ss;
    sesss = ss;
    return ss;
}

static void sess_unlink(struct sess *ss)
{
    if (ss->prev)
        ss->prev->next = ss->next;
    else
        sesss = ss->next;
    if (ss->next)
        ss->next->prev = ss->prev;
    ss->next = ss->prev = NULL;
}

/* Start watching a freshly spawned sandbox. */
static void sess_watch(struct sess *ss)
{
    struct fb_sandbox *sb = &ss->s->sb;
    int fl = fcntl(sb->ctl, F_GETFL);
    fcntl(sb->ctl, F_SETFL, fl | O_NONBLOCK);
    int sz = 1 << 20;
    setsockopt(sb->ctl, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    /* The fds belong to the sandbox struct: watches never close them. */
    ss->wctl.fd = sb->ctl;
    ss->wpid.fd = sb->pidfd;
    w_set(&ss->wctl, EPOLLIN);
    w_set(&ss->wpid, EPOLLIN);
    if (sb->egress) {
        ss->wegress.fd = egress_fd(sb->egress);
        w_set(&ss->wegress, EPOLLIN);
    }
}

static void sess_unwatch(struct sess *ss)
{
    w_set(&ss->wctl, 0);
    w_set(&ss->wpid, 0);
    w_set(&ss->wegress, 0);
    ss->wctl.fd = ss->wpid.fd = ss->wegress.fd = -1;
}

static void outq_free(struct sess *ss)
{
    while (ss->qhead) {
        struct outrec *r = ss->qhead;
        ss->qhead = r->next;
        for (size_t i = 0; i < r->nfds; i++)
            close(r->fds[i]);
        free(r->rec);
        free(r);
    }
    ss->qtail = NULL;
}

static void outq_flush(struct sess *ss)
{
    while (ss->qhead) {
        struct outrec *r = ss->qhead;
        if (srec_send(ss->s->sb.ctl, r->rec, r->len, r->fds, r->nfds, MSG_DONTWAIT) < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK) {
                w_set(&ss->wctl, EPOLLIN | EPOLLOUT);
                return;
            }
            /* init is gone: the pidfd will say so */
            outq_free(ss);
            break;
        }
        ss->qhead = r->next;
        for (size_t i = 0; i < r->nfds; i++)
            close(r->fds[i]);
        free(r->rec);
        free(r);
    }
    ss->qtail = NULL;
    if (ss->wctl.fd >= 0)
        w_set(&ss->wctl, EPOLLIN);
}

/* Send a record to init; takes the fds (closed once sent). Returns -1 when
 * the record is too large, -2 when the session is not running (fds closed). */
static int sess_send(struct sess *ss, json_t *hdr, const void *payload, size_t plen, int *fds,
                     size_t nfds)
{
    size_t len;
    char *rec = srec_encode(hdr, payload, plen, &len);
    if (!rec) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        return -1;
    }
    if (ss->s->state != SESS_READY || ss->wctl.fd < 0) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        free(rec);
        return -2;
    }
    if (!ss->qhead && srec_send(ss->s->sb.ctl, rec, len, fds, nfds, MSG_DONTWAIT) == 0) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        free(rec);
        return 0;
    }
    if (!ss->qhead && errno != EAGAIN && errno != EWOULDBLOCK) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        free(rec);
        return 0;
    }
    struct outrec *r = fb_xcalloc(1, sizeof *r);
    r->rec = rec;
    r->len = len;
    memcpy(r->fds, fds, nfds * sizeof(int));
    r->nfds = nfds;
    if (ss->qtail)
        ss->qtail->next = r;
    else
        ss->qhead = r;
    ss->qtail = r;
    w_set(&ss->wctl, EPOLLIN | EPOLLOUT);
    return 0;
}

static unsigned sessions_of(uid_t uid)
{
    unsigned n = 0;
    for (struct sess *ss = sesss; ss; ss = ss->next)
        if (!ss->in_pool && ss->s->uid == uid && !ss->dead)
            n++;
    return n;
}

static struct sess *sess_find(uid_t uid, const char *id)
{
    for (struct sess *ss = sesss; ss; ss = ss->next)
        if (!ss->in_pool && !ss->dead && ss->s->uid == uid && ss->s->state != SESS_STARTING &&
            !strcmp(ss->s->id, id))
            return ss;
    return NULL;
}

static void exec_kill(struct op *o, int sig);

/* Fail every op waiting on the session (it died or is being destroyed). */
static void sess_fail_ops(struct sess *ss, const char *code, const char *why)
{
    struct op *o = ss->ops;
    while (o) {
        struct op *nx = o->snext;
        if (o->kind == OP_EXEC || o->kind == OP_FILE) {
            send_errf(o->c, o->id, code, "%s", why);
            op_finish(o);
        }
        o = nx;
    }
}

static void release_done(struct fb_session *s);

static void sess_release(struct sess *ss)
{
    if (ss->s->releasing)
        return;
    outq_free(ss);
    sess_unwatch(ss);
    if (!ss->s->spawned) {
        release_done(ss->s); /* nothing to release */
        return;
    }
    ss->s->releasing = true;
    worker_submit(ss->s, WJ_RELEASE);
}

static void sess_free(struct sess *ss)
{
    if (ss->dead)
        return;
    ss->dead = true;
    sess_unlink(ss);
    bury(1, ss);
}

static void pool_refill(void);

/* Destroy: kill now; answered (and freed) once the worker released it. */
static void sess_destroy(struct sess *ss)
{
    ss->dying = true;
    sess_fail_ops(ss, "session_dead", "the session was destroyed");
    if (ss->s->spawned && ss->s->state != SESS_DEAD)
        sandbox_kill(&ss->s->sb);
    if (ss->s->state != SESS_DEAD && ss->s->spawned) {
        ss->s->state = SESS_DEAD;
        snprintf(ss->s->death, sizeof ss->s->death, "destroyed");
        sess_release(ss);
    } else if (!ss->s->releasing) {
        ss->s->state = SESS_DEAD;
        /* Released already: answer destroy ops now. */
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            if (o->kind == OP_DESTROY) {
                send_result(o->c, o->id, json_object());
                op_finish(o);
            }
            o = nx;
        }
        sess_free(ss);
    }
}

/* Init's pidfd became readable: the sandbox is gone. */
static void sess_gone(struct sess *ss)
{
    struct fb_session *s = ss->s;
    if (s->state == SESS_DEAD) {
        sess_unwatch(ss);
        return;
    }
    if (!ss->dying) {
        struct fb_cg_usage u = {0};
        u.mem_peak = u.mem_current = u.pids_peak = u.cpu_usage_us = u.oom_kills = -1;
        if (s->sb.cg)
            cgroup_usage(s->sb.cg, &u);
        snprintf(s->death, sizeof s->death, "%s",
                 u.oom_killed ? "the session's init was killed by the OOM killer"
                              : "the session's init exited");
    }
    s->state = SESS_DEAD;
    sess_fail_ops(ss, "session_dead", s->death[0] ? s->death : "the session is gone");
    if (ss->in_pool) {
        /* A pool sandbox died: drop it and refill. */
        ss->dying = true;
        pool_ready--;
        ss->in_pool = false;
        ss->s->uid = (uid_t)-1;
    }
    sess_release(ss);
}

/* ---- exec ---- */

static json_t *chunk_json(struct xstream *x, const char *data, size_t n, bool final, bool base64)
{
    if (base64) {
        if (!n)
            return NULL;
        char *b = fb_xmalloc(b64_encoded_len(n) + 1);
        size_t l = b64_encode((const unsigned char *)data, n, b);
        json_t *s = json_stringn_nocheck(b, l);
        free(b);
        return s;
    }
    /* utf8: prepend the carried partial sequence. */
    size_t tot = x->ncarry + n;
    if (!tot)
        return NULL;
    unsigned char *in = fb_xmalloc(tot);
    memcpy(in, x->carry, x->ncarry);
    if (n)
        memcpy(in + x->ncarry, data, n);
    char *out = fb_xmalloc(3 * tot + 1);
    size_t used;
    size_t ol = utf8_repair(in, tot, out, final, &used);
    x->ncarry = tot - used;
    if (x->ncarry > sizeof x->carry) {
        /* Cannot happen: an incomplete sequence is at most 3 bytes. */
        x->ncarry = 0;
    }
    memcpy(x->carry, in + used, x->ncarry);
    free(in);
    json_t *s = ol ? json_stringn_nocheck(out, ol) : NULL;
    free(out);
    return s;
}

static void exec_pause(struct op *o, bool pause)
{
    if (o->paused == pause)
        return;
    o->paused = pause;
    for (int i = 0; i < 2; i++)
        if (o->xs[i].w.fd >= 0)
            w_set(&o->xs[i].w, pause ? 0 : EPOLLIN);
}

static const char *stream_name[2] = {"stdout", "stderr"};

static void exec_deliver(struct op *o, int i, const char *data, size_t n)
{
    struct xstream *x = &o->xs[i];
    if (!o->c)
        return; /* nobody listens */
    if (o->stream) {
        json_t *d = chunk_json(x, data, n, false, o->base64);
        if (d)
            send_event(o->c, o->id, stream_name[i], json_pack("{s:o}", "data", d));
        if (o->c && buf_pending(&o->c->out) >= OUT_PAUSE)
            exec_pause(o, true);
        return;
    }
    size_t room = buf_pending(&x->buf) < (size_t)o->max_out ? (size_t)o->max_out - buf_pending(&x->buf) : 0;
    if (n > room) {
        x->truncated = true;
        n = room;
    }
    buf_append(&x->buf, data, n);
}

static json_t *exec_result(struct op *o)
{
    json_t *r = json_object();
    json_object_set_new(r, "execId", json_string(o->exec_id));
    int code;
    const char *sig = NULL;
    bool timed = false;
    if (WIFSIGNALED(o->status)) {
        code = 128 + WTERMSIG(o->status);
        sig = proto_signal_name(WTERMSIG(o->status));
        if (o->timed_out) {
            code = FB_EXIT_TIMEOUT;
            timed = true;
        }
    } else if (WIFEXITED(o->status)) {
        code = WEXITSTATUS(o->status);
    } else {
        code = FB_EXIT_SETUP;
    }
    json_object_set_new(r, "exitCode", json_integer(code));
    json_object_set_new(r, "signal", sig ? json_string(sig) : json_null());
    json_object_set_new(r, "timedOut", json_boolean(timed));
    json_object_set_new(r, "durationMs",
                        json_integer((json_int_t)((o->end_ns - o->start_ns) / 1000000ull)));
    if (!o->stream) {
        for (int i = 0; i < 2; i++) {
            struct xstream *x = &o->xs[i];
            x->ncarry = 0;
            json_t *d = chunk_json(x, buf_head(&x->buf), buf_pending(&x->buf), true, o->base64);
            json_object_set_new(r, stream_name[i], d ? d : json_string(""));
            char k[32];
            snprintf(k, sizeof k, "%sTruncated", stream_name[i]);
            json_object_set_new(r, k, json_boolean(x->truncated));
        }
        json_object_set_new(r, "encoding", json_string(o->base64 ? "base64" : "utf8"));
    }
    return r;
}

static void exec_maybe_finish(struct op *o, bool force)
{
    if (o->dead || !o->exited)
        return;
    if (!force && !(o->xs[0].eof && o->xs[1].eof))
        return;
    /* Drain whatever is already in the pipes (a background process may
     * still hold them open: we stop here, it keeps running). */
    bool timed = o->timed_out && WIFSIGNALED(o->status);
    for (int i = 0; i < 2; i++) {
        struct xstream *x = &o->xs[i];
        char buf[CHUNK];
        for (int k = 0; k < 16 && x->w.fd >= 0; k++) {
            ssize_t n = read(x->w.fd, buf, sizeof buf);
            if (n <= 0)
                break;
            exec_deliver(o, i, buf, (size_t)n);
        }
        if (o->stream && o->c) {
            json_t *d = chunk_json(x, NULL, 0, true, o->base64);
            if (d)
                send_event(o->c, o->id, stream_name[i], json_pack("{s:o}", "data", d));
        }
    }
    if (timed) {
        /* As `fluebox run` does: say so on stderr. */
        char note[128];
        int nl = snprintf(note, sizeof note, "fluebox: the command timed out after %lld ms and was killed\n",
                          (long long)((o->deadline_ns - o->start_ns) / 1000000ull));
        if (o->stream && o->c) {
            json_t *d = chunk_json(&o->xs[1], note, (size_t)nl, true, o->base64);
            send_event(o->c, o->id, "stderr", json_pack("{s:o}", "data", d));
        } else if (!o->stream) {
            buf_append(&o->xs[1].buf, note, (size_t)nl);
        }
    }
    if (o->ss)
        session_touch(o->ss->s);
    send_result(o->c, o->id, exec_result(o));
    op_finish(o);
}

static void exec_kill(struct op *o, int sig)
{
    if (!o->ss || o->exited)
        return;
    json_t *h = json_pack("{s:s, s:I, s:I, s:i}", "op", "kill", "t", (json_int_t)0, "target",
                          (json_int_t)o->tag, "sig", sig);
    sess_send(o->ss, h, NULL, 0, NULL, 0);
}

static void on_exec_pipe(struct op *o, int sub)
{
    if (sub == 2) {
        /* stdin: write what is left */
        while (buf_pending(&o->inbuf)) {
            ssize_t n = write(o->win.fd, buf_head(&o->inbuf), buf_pending(&o->inbuf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0) {
                buf_reset(&o->inbuf);
                break;
            }
            buf_consume(&o->inbuf, (size_t)n);
        }
        buf_free(&o->inbuf);
        w_close(&o->win);
        return;
    }
    struct xstream *x = &o->xs[sub];
    char buf[CHUNK];
    ssize_t n = read(x->w.fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        x->eof = true;
        w_close(&x->w);
        exec_maybe_finish(o, false);
        return;
    }
    exec_deliver(o, sub, buf, (size_t)n);
}

/* ---- file ops: results ---- */

static int cmp_entry(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x + 1, y + 1);
}

static json_t *str_repaired(const char *s, size_t n)
{
    char *out = fb_xmalloc(3 * n + 1);
    size_t used;
    size_t l = utf8_repair((const unsigned char *)s, n, out, true, &used);
    json_t *j = json_stringn_nocheck(out, l);
    free(out);
    return j;
}

static const char *type_of(char t)
{
    switch (t) {
    case 'f': return "file";
    case 'd': return "dir";
    case 'l': return "symlink";
    case 'p': return "fifo";
    case 's': return "socket";
    case 'c': return "char";
    case 'b': return "block";
    default: return "unknown";
    }
}

static json_t *listing_json(const char *p, size_t n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (!p[i])
            cnt++;
    const char **ents = fb_xcalloc(cnt ? cnt : 1, sizeof *ents);
    size_t k = 0, i = 0;
    while (i < n && k < cnt) {
        const char *e = p + i;
        size_t l = strnlen(e, n - i);
        if (l < 1 || i + l >= n)
            break;
        ents[k++] = e;
        i += l + 1;
    }
    qsort(ents, k, sizeof *ents, cmp_entry);
    json_t *arr = json_array();
    for (size_t j = 0; j < k; j++) {
        const char *e = ents[j];
        json_array_append_new(arr, json_pack("{s:o, s:s}", "name", str_repaired(e + 1, strlen(e + 1)),
                                             "type", type_of(e[0])));
    }
    free(ents);
    return json_pack("{s:o}", "entries", arr);
}

static void file_read_result(struct op *o)
{
    json_t *r = o->result;
    o->result = NULL;
    json_int_t size = json_integer_value(json_object_get(r, "size"));
    size_t n = buf_pending(&o->data);
    if (o->base64 && n > 65536 && o->c) {
        /* Big binary reads: write the line directly, base64 needs no JSON
         * escaping, and we save a copy and a pass over the data. */
        char *idj = json_dumps(o->id, JSON_COMPACT | JSON_ENCODE_ANY);
        char head[256];
        int hl = snprintf(head, sizeof head,
                          "{\"id\":%s,\"result\":{\"encoding\":\"base64\",\"bytesRead\":%zu,"
                          "\"size\":%lld,\"eof\":%s,\"data\":\"",
                          idj ? idj : "null", n, (long long)size,
                          o->offset + (int64_t)n >= size ? "true" : "false");
        free(idj);
        size_t bl = b64_encoded_len(n);
        char *line = fb_xmalloc((size_t)hl + bl + 4);
        memcpy(line, head, (size_t)hl);
        b64_encode((const unsigned char *)buf_head(&o->data), n, line + hl);
        memcpy(line + hl + bl, "\"}}\n", 4);
        json_decref(r);
        buf_free(&o->data);
        conn_send(o->c, line, (size_t)hl + bl + 4);
        op_finish(o);
        return;
    }
    json_t *res = json_object();
    json_t *d;
    if (o->base64) {
        char *b = fb_xmalloc(b64_encoded_len(n) + 1);
        size_t l = b64_encode((const unsigned char *)buf_head(&o->data), n, b);
        d = json_stringn_nocheck(b, l);
        free(b);
    } else {
        d = str_repaired(buf_head(&o->data), n);
    }
    json_object_set_new(res, "data", d);
    json_object_set_new(res, "encoding", json_string(o->base64 ? "base64" : "utf8"));
    json_object_set_new(res, "bytesRead", json_integer((json_int_t)n));
    json_object_set_new(res, "size", json_integer(size));
    json_object_set_new(res, "eof", json_boolean(o->offset + (int64_t)n >= size));
    json_decref(r);
    send_result(o->c, o->id, res);
    op_finish(o);
}

static void file_bulk_done(struct op *o)
{
    if (o->fop == F_READ) {
        if (o->expect >= 0 && (int64_t)buf_pending(&o->data) > o->expect)
            o->data.len = o->data.off + (size_t)o->expect;
        file_read_result(o);
    } else { /* F_READDIR */
        json_decref(o->result);
        o->result = NULL;
        send_result(o->c, o->id, listing_json(buf_head(&o->data), buf_pending(&o->data)));
        op_finish(o);
    }
}

static void on_bulk_pipe(struct op *o)
{
    if (o->fop == F_WRITE) {
        while (buf_pending(&o->data)) {
            ssize_t n = write(o->wbulk.fd, buf_head(&o->data), buf_pending(&o->data));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0)
                break; /* the helper is gone: init's reply says why */
            buf_consume(&o->data, (size_t)n);
        }
        buf_free(&o->data);
        w_close(&o->wbulk);
        return;
    }
    char buf[CHUNK];
    for (int k = 0; k < 16; k++) {
        ssize_t n = read(o->wbulk.fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) {
            w_close(&o->wbulk);
            o->bulk_done = true;
            if (o->replied)
                file_bulk_done(o);
            return;
        }
        if ((int64_t)(buf_pending(&o->data) + (size_t)n) > o->max) {
            w_close(&o->wbulk);
            send_errf(o->c, o->id, "too_large", "%s: the listing is larger than %lld bytes",
                      o->path, (long long)o->max);
            op_finish(o);
            return;
        }
        buf_append(&o->data, buf, (size_t)n);
    }
}

static void send_errno(struct op *o, int e)
{
    struct proto_err pe = {0};
    if (e == E2BIG) {
        perr_set(&pe, "too_large", "%s: larger than %lld bytes", o->path ? o->path : "",
                 (long long)lim.max_output);
    } else {
        pe.code = proto_errno_name(e);
        snprintf(pe.message, sizeof pe.message, "%s: %s", o->path ? o->path : "", strerror(e));
        pe.path = o->path ? fb_xstrdup(o->path) : NULL;
    }
    send_error(o->c, o->id, &pe);
}

/* A reply from init for a file op. Untrusted: check every field. */
static void on_file_reply(struct op *o, json_t *h, const char *payload, size_t plen)
{
    json_t *ej = json_object_get(h, "errno");
    if (ej) {
        json_int_t e = json_integer_value(ej);
        send_errno(o, e > 0 && e < 4096 ? (int)e : EIO);
        op_finish(o);
        return;
    }
    json_t *res = json_object_get(h, "result");
    if (!json_is_object(res)) {
        send_errf(o->c, o->id, "internal", "bad reply from the session");
        op_finish(o);
        return;
    }
    o->replied = true;
    switch (o->fop) {
    case F_READ:
    case F_READDIR: {
        json_t *bulk = json_object_get(res, "bulk");
        o->result = json_incref(res);
        if (json_is_integer(bulk)) {
            json_int_t b = json_integer_value(bulk);
            if (b < 0 || b > o->max) {
                send_errf(o->c, o->id, "internal", "bad reply from the session");
                op_finish(o);
                return;
            }
            o->expect = b;
            if (o->bulk_done)
                file_bulk_done(o);
            return;
        }
        w_close(&o->wbulk);
        if ((int64_t)plen > o->max)
            plen = (size_t)o->max;
        buf_append(&o->data, payload, plen);
        file_bulk_done(o);
        return;
    }
    case F_STAT: {
        json_t *r = json_deep_copy(res);
        if (plen)
            json_object_set_new(r, "target", str_repaired(payload, plen));
        send_result(o->c, o->id, r);
        break;
    }
    case F_WRITE:
        w_close(&o->wbulk);
        send_result(o->c, o->id, json_deep_copy(res));
        break;
    default:
        send_result(o->c, o->id, json_deep_copy(res));
        break;
    }
    op_finish(o);
}

/* ---- records from init ---- */

static void on_ctl(struct sess *ss)
{
    for (int k = 0; k < 64 && !ss->dead && ss->wctl.fd >= 0; k++) {
        json_t *h;
        const char *payload;
        size_t plen, nfds = 0;
        int r = srec_recv(ss->s->sb.ctl, recbuf, MSG_DONTWAIT, &h, &payload, &plen, NULL, &nfds);
        if (r < 0 && errno == EPROTO)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r <= 0) {
            /* EOF: init is exiting; its pidfd tells us when it is gone. */
            w_set(&ss->wctl, 0);
            return;
        }
        const char *opn = json_string_value(json_object_get(h, "op"));
        json_t *tj = json_object_get(h, "t");
        struct op *o = json_is_integer(tj) ? op_by_tag(ss, (uint64_t)json_integer_value(tj)) : NULL;
        if (!opn || !o) {
            json_decref(h);
            continue;
        }
        if (o->kind == OP_EXEC) {
            if (!strcmp(opn, "started") && !o->started) {
                o->started = true;
                o->pid = (pid_t)json_integer_value(json_object_get(h, "pid"));
                if (o->stream)
                    send_event(o->c, o->id, "start",
                               json_pack("{s:s, s:i}", "execId", o->exec_id, "pid", (int)o->pid));
                if (!o->c)
                    exec_kill(o, SIGKILL); /* the client left before it started */
            } else if (!strcmp(opn, "exit") && o->started && !o->exited) {
                o->exited = true;
                o->status = (int)json_integer_value(json_object_get(h, "status"));
                o->end_ns = now_ns();
                o->grace_ns = o->end_ns + GRACE_NS;
                exec_maybe_finish(o, false);
            } else if (!strcmp(opn, "reply")) {
                json_int_t e = json_integer_value(json_object_get(h, "errno"));
                if (e <= 0 || e >= 4096)
                    e = EIO;
                struct proto_err pe = {0};
                pe.code = proto_errno_name((int)e);
                snprintf(pe.message, sizeof pe.message, "cannot start the command: %s",
                         strerror((int)e));
                send_error(o->c, o->id, &pe);
                op_finish(o);
            }
        } else if (o->kind == OP_FILE && !strcmp(opn, "reply") && !o->replied) {
            on_file_reply(o, h, payload, plen);
        }
        json_decref(h);
    }
}

/* ---- requests ---- */

static int join_path(struct sess *ss, const char *p, char **out, struct proto_err *e,
                     const char *param)
{
    if (p[0] == '/')
        *out = fb_xstrdup(p);
    else
        *out = fb_xasprintf("%s/%s", ss->s->cwd, p);
    if (strlen(*out) > 4095) {
        free(*out);
        *out = NULL;
        return perr_param(e, param, "%s is too long", param);
    }
    return 0;
}

static void pool_take_or_spawn(struct conn *c, json_t *id, struct fb_policy *p,
                               struct session_params *sp);

static void m_session_create(struct conn *c, json_t *id, json_t *params)
{
    struct proto_err e = {0};
    if (stopping)
        return send_errf(c, id, "shutting_down", "the server is stopping");
    if ((int64_t)sessions_of(c->uid) >= lim.max_sessions) {
        perr_set(&e, "limit_exceeded", "at most %lld sessions per user", (long long)lim.max_sessions);
        snprintf(e.limit, sizeof e.limit, "sessionsPerUid");
        return send_error(c, id, &e);
    }
    struct fb_policy p;
    struct session_params sp;
    if (session_policy_from_params(params, c->uid, &p, &sp, &e) < 0) {
        policy_free(&p);
        return send_error(c, id, &e);
    }
    pool_take_or_spawn(c, id, &p, &sp);
}

static void pool_take_or_spawn(struct conn *c, json_t *id, struct fb_policy *p,
                               struct session_params *sp)
{
    /* From the pool? */
    if (sp->pool_ok) {
        for (struct sess *ss = sesss; ss; ss = ss->next) {
            if (!ss->in_pool || ss->dead || ss->s->state != SESS_POOL)
                continue;
            if (session_adopt_limits(ss->s, p) < 0)
                break; /* cannot change limits here: spawn */
            ss->in_pool = false;
            pool_ready--;
            struct fb_session *s = ss->s;
            policy_free(&s->pol);
            s->pol = *p;
            s->uid = c->uid;
            s->pooled = true;
            s->state = SESS_READY;
            session_set_id(s);
            session_apply_params(s, sp);
            send_result(c, id, session_info(s, NULL, 0));
            pool_refill();
            return;
        }
    }
    struct fb_session *s = session_new();
    policy_free(&s->pol);
    s->pol = *p;
    s->uid = c->uid;
    s->state = SESS_STARTING;
    session_set_id(s);
    session_apply_params(s, sp);
    struct sess *ss = sess_new(s);
    struct op *o = op_new(OP_CREATE, c, id, ss);
    o->pending = s;
    worker_submit(s, WJ_SPAWN);
}

/* The worker finished spawning s. */
static void spawn_done(struct fb_session *s)
{
    struct sess *ss = s->srv;
    if (ss->in_pool) {
        pool_pending--;
        if (s->spawn_rc < 0 || stopping) {
            if (s->spawn_rc < 0 && !stopping) {
                fb_warn("pool: %s", s->spawn_err.msg);
                pool_retry_ns = now_ns() + 2000000000ull;
            }
            if (s->spawn_rc == 0) {
                s->spawned = true;
                sandbox_kill(&s->sb);
                s->state = SESS_DEAD;
                ss->in_pool = false;
                sess_release(ss);
                return;
            }
            ss->in_pool = false;
            sess_free(ss);
            return;
        }
        s->spawned = true;
        s->state = SESS_POOL;
        pool_ready++;
        sess_watch(ss);
        return;
    }
    struct op *o = NULL;
    for (struct op *x = ss->ops; x; x = x->snext)
        if (x->kind == OP_CREATE)
            o = x;
    if (s->spawn_rc < 0) {
        if (o) {
            send_errf(o->c, o->id, stopping ? "shutting_down" : "sandbox_failed", "%s",
                      s->spawn_err.msg);
            op_finish(o);
        }
        sess_free(ss);
        return;
    }
    s->spawned = true;
    s->state = SESS_READY;
    sess_watch(ss);
    if (!o || !o->c || stopping) {
        /* Nobody is waiting for it any more. */
        if (o)
            op_finish(o);
        ss->dying = true;
        sandbox_kill(&s->sb);
        s->state = SESS_DEAD;
        sess_release(ss);
        return;
    }
    session_touch(s);
    send_result(o->c, o->id, session_info(s, NULL, 0));
    op_finish(o);
}

static void release_done(struct fb_session *s)
{
    struct sess *ss = s->srv;
    s->releasing = false;
    s->spawned = false;
    if (ss->dying || stopping || s->uid == (uid_t)-1) {
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            if (o->kind == OP_DESTROY) {
                send_result(o->c, o->id, json_object());
                op_finish(o);
            }
            o = nx;
        }
        sess_free(ss);
    }
    pool_refill();
}

static void pool_refill(void)
{
    if (stopping || lim.pool <= 0 || now_ns() < pool_retry_ns)
        return;
    while (pool_ready + pool_pending < lim.pool) {
        struct fb_session *s = session_new();
        struct fb_err err = {0};
        policy_free(&s->pol);
        if (session_pool_policy(&s->pol, &err) < 0) {
            fb_warn("%s", err.msg);
            session_free(s);
            pool_retry_ns = now_ns() + 10000000000ull;
            return;
        }
        /* Say what cannot be applied once, not at every refill. */
        static bool warned;
        s->pol.quiet = s->pol.quiet || warned;
        warned = true;
        struct session_params sp = {0};
        sp.idle_ms = 1800000;
        session_apply_params(s, &sp);
        s->state = SESS_STARTING; /* SESS_POOL once spawned */
        s->uid = (uid_t)-1;
        struct sess *ss = sess_new(s);
        ss->in_pool = true;
        pool_pending++;
        worker_submit(s, WJ_SPAWN);
    }
}

static void m_session_destroy(struct conn *c, json_t *id, struct sess *ss)
{
    op_new(OP_DESTROY, c, id, ss);
    sess_destroy(ss);
}

static json_t *running_ids(struct sess *ss)
{
    json_t *a = json_array();
    for (struct op *o = ss->ops; o; o = o->snext)
        if (o->kind == OP_EXEC && !o->dead)
            json_array_append_new(a, json_string(o->exec_id));
    return a;
}

static void m_session_list(struct conn *c, json_t *id, json_t *params)
{
    struct proto_err e = {0};
    const char *label;
    if (pget_str(params, "label", &label, NULL, false, 256, &e) < 0)
        return send_error(c, id, &e);
    /* Oldest first. */
    size_t n = 0;
    for (struct sess *ss = sesss; ss; ss = ss->next)
        if (!ss->in_pool && !ss->dead && !ss->dying && ss->s->uid == c->uid &&
            ss->s->state != SESS_STARTING)
            n++;
    struct sess **v = fb_xcalloc(n ? n : 1, sizeof *v);
    size_t k = 0;
    for (struct sess *ss = sesss; ss; ss = ss->next)
        if (!ss->in_pool && !ss->dead && !ss->dying && ss->s->uid == c->uid &&
            ss->s->state != SESS_STARTING)
            v[k++] = ss;
    json_t *arr = json_array();
    for (size_t i = k; i-- > 0;) {
        if (label && (!v[i]->s->label || strcmp(label, v[i]->s->label)))
            continue;
        json_array_append_new(arr, session_info(v[i]->s, running_ids(v[i]), v[i]->total_execs));
    }
    free(v);
    send_result(c, id, json_pack("{s:o}", "sessions", arr));
}

static bool exec_id_ok(const char *s)
{
    size_t l = strlen(s);
    if (l < 1 || l > 64)
        return false;
    for (size_t i = 0; i < l; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

static struct op *exec_by_id(struct sess *ss, const char *xid)
{
    for (struct op *o = ss->ops; o; o = o->snext)
        if (o->kind == OP_EXEC && !o->dead && !strcmp(o->exec_id, xid))
            return o;
    return NULL;
}

static int mkpipe(int fds[2], bool server_reads)
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    int mine = server_reads ? fds[0] : fds[1];
    fcntl(mine, F_SETFL, fcntl(mine, F_GETFL) | O_NONBLOCK);
    return 0;
}

static void m_exec(struct conn *c, json_t *id, json_t *params, struct sess *ss)
{
    struct proto_err e = {0};
    json_t *argv, *env;
    const char *command, *cwd, *stdin_s, *xid;
    size_t stdin_len;
    bool stdin_b64;
    int64_t timeout, maxout;
    if (pget_strarray(params, "argv", &argv, false, &e) < 0 ||
        pget_str(params, "command", &command, NULL, false, 0, &e) < 0 ||
        pget_str(params, "cwd", &cwd, NULL, false, 4095, &e) < 0 ||
        pget_strmap(params, "env", &env, &e) < 0 ||
        pget_bytes(params, "stdin", &stdin_s, &stdin_len, false, &e) < 0 ||
        pget_encoding(params, "stdinEncoding", &stdin_b64, &e) < 0 ||
        pget_int(params, "timeoutMs", &timeout, ss->s->exec_timeout_ms, 0, INT64_MAX / 2000000,
                 &e) < 0 ||
        pget_int(params, "maxOutputBytes", &maxout, lim.max_output, 0, INT64_MAX, &e) < 0 ||
        pget_str(params, "execId", &xid, NULL, false, 64, &e) < 0)
        return send_error(c, id, &e);
    bool stream, b64;
    if (pget_bool(params, "stream", &stream, false, &e) < 0 ||
        pget_encoding(params, "encoding", &b64, &e) < 0)
        return send_error(c, id, &e);
    if (!!argv == !!command) {
        perr_param(&e, "argv", "give exactly one of argv and command");
        return send_error(c, id, &e);
    }
    if (argv && !json_array_size(argv)) {
        perr_param(&e, "argv", "argv must not be empty");
        return send_error(c, id, &e);
    }
    if (argv && !json_string_length(json_array_get(argv, 0))) {
        perr_param(&e, "argv", "argv[0] must not be empty");
        return send_error(c, id, &e);
    }
    if (xid && !exec_id_ok(xid)) {
        perr_param(&e, "execId", "execId must be 1 to 64 characters of [A-Za-z0-9._-]");
        return send_error(c, id, &e);
    }
    if (xid && exec_by_id(ss, xid)) {
        perr_param(&e, "execId", "execId %s is running already", xid);
        return send_error(c, id, &e);
    }
    if ((int64_t)ss->running_execs >= lim.max_execs) {
        perr_set(&e, "limit_exceeded", "at most %lld execs run at once in a session",
                 (long long)lim.max_execs);
        snprintf(e.limit, sizeof e.limit, "execsPerSession");
        return send_error(c, id, &e);
    }
    if (maxout > lim.max_output)
        maxout = lim.max_output;
    if (env) {
        const char *k;
        json_t *v;
        json_object_foreach(env, k, v)
        {
            if (!*k || strchr(k, '=')) {
                perr_param(&e, "env", "env: \"%.64s\" is not a variable name", k);
                return send_error(c, id, &e);
            }
        }
    }
    /* stdin */
    struct fb_buf in = {0};
    if (stdin_s) {
        size_t l = stdin_len;
        if (stdin_b64) {
            unsigned char *d = fb_xmalloc(b64_decoded_max(l));
            ssize_t dl = b64_decode(stdin_s, l, d);
            if (dl < 0) {
                free(d);
                perr_param(&e, "stdin", "stdin is not valid base64");
                return send_error(c, id, &e);
            }
            buf_append(&in, d, (size_t)dl);
            free(d);
        } else {
            buf_append(&in, stdin_s, l);
        }
    }
    /* The spec for init. */
    size_t total = 0;
    json_t *av = json_array();
    if (command) {
        json_array_append_new(av, json_string("/bin/sh"));
        json_array_append_new(av, json_string("-c"));
        json_array_append_new(av, json_string(command));
        total += strlen(command) + 16;
    } else {
        size_t i;
        json_t *it;
        json_array_foreach(argv, i, it)
        {
            json_array_append(av, it);
            total += json_string_length(it) + 1;
        }
    }
    json_t *ev = json_array();
    for (char **p = ss->s->env; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (env && eq) {
            char k[256];
            size_t kl = (size_t)(eq - *p);
            if (kl < sizeof k) {
                memcpy(k, *p, kl);
                k[kl] = 0;
                if (json_object_get(env, k))
                    continue;
            }
        }
        json_array_append_new(ev, json_string(*p));
        total += strlen(*p) + 1;
    }
    if (env) {
        const char *k;
        json_t *v;
        json_object_foreach(env, k, v)
        {
            json_array_append_new(ev, json_sprintf("%s=%s", k, json_string_value(v)));
            total += strlen(k) + json_string_length(v) + 2;
        }
    }
    char *wd = NULL;
    if (join_path(ss, cwd ? cwd : ss->s->cwd, &wd, &e, "cwd") < 0) {
        json_decref(av);
        json_decref(ev);
        buf_free(&in);
        return send_error(c, id, &e);
    }
    total += strlen(wd);
    if (total > EXEC_SPEC_MAX) {
        json_decref(av);
        json_decref(ev);
        buf_free(&in);
        free(wd);
        return send_errf(c, id, "too_large", "argv, env and cwd exceed %d bytes", EXEC_SPEC_MAX);
    }
    int po[2] = {-1, -1}, pe[2] = {-1, -1}, pi[2] = {-1, -1};
    bool piped = mkpipe(po, true) == 0 && mkpipe(pe, true) == 0 &&
                 (!buf_pending(&in) || mkpipe(pi, false) == 0);
    if (!piped) {
        int er = errno;
        int all[6] = {po[0], po[1], pe[0], pe[1], pi[0], pi[1]};
        for (int k = 0; k < 6; k++)
            if (all[k] >= 0)
                close(all[k]);
        json_decref(av);
        json_decref(ev);
        buf_free(&in);
        free(wd);
        return send_errf(c, id, proto_errno_name(er), "cannot create pipes: %s", strerror(er));
    }
    struct op *o = op_new(OP_EXEC, c, id, ss);
    if (xid)
        snprintf(o->exec_id, sizeof o->exec_id, "%s", xid);
    else
        snprintf(o->exec_id, sizeof o->exec_id, "x%llu", (unsigned long long)(ss->total_execs + 1));
    ss->total_execs++;
    ss->running_execs++;
    o->stream = stream;
    o->base64 = b64;
    o->max_out = maxout;
    o->start_ns = now_ns();
    o->deadline_ns = timeout > 0 ? o->start_ns + (uint64_t)timeout * 1000000ull : 0;
    o->inbuf = in;
    o->xs[0].w.fd = po[0];
    o->xs[1].w.fd = pe[0];
    w_set(&o->xs[0].w, EPOLLIN);
    w_set(&o->xs[1].w, EPOLLIN);
    if (pi[1] >= 0) {
        o->win.fd = pi[1];
        w_set(&o->win, EPOLLOUT);
    }
    json_t *h = json_pack("{s:s, s:I, s:o, s:o, s:s, s:b, s:I, s:I}", "op", "exec", "t",
                          (json_int_t)o->tag, "argv", av, "env", ev, "cwd", wd, "stdin",
                          pi[0] >= 0, "nofile", (json_int_t)(ss->s->pol.limits.nofile > 0 ? ss->s->pol.limits.nofile : 0),
                          "fsize", (json_int_t)(ss->s->pol.limits.fsize > 0 ? ss->s->pol.limits.fsize : 0));
    free(wd);
    int fds[3] = {po[1], pe[1], pi[0]};
    int sr = sess_send(ss, h, NULL, 0, fds, pi[0] >= 0 ? 3 : 2);
    if (sr < 0) {
        if (sr == -1)
            send_errf(c, id, "too_large", "the command is too large");
        else
            send_errf(c, id, "session_dead", "the session is not running");
        op_finish(o);
    }
}

static void m_exec_kill(struct conn *c, json_t *id, json_t *params, struct sess *ss)
{
    struct proto_err e = {0};
    const char *xid;
    if (pget_str(params, "execId", &xid, NULL, true, 64, &e) < 0)
        return send_error(c, id, &e);
    json_t *sj = json_object_get(params, "signal");
    int sig = SIGKILL;
    if (sj && !json_is_null(sj) && (sig = proto_signal_parse(sj)) < 0) {
        perr_param(&e, "signal", "signal must be one of SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT, "
                                 "SIGUSR1, SIGUSR2, SIGALRM, SIGSTOP, SIGCONT, SIGWINCH");
        return send_error(c, id, &e);
    }
    struct op *o = exec_by_id(ss, xid);
    if (!o || o->exited)
        return send_errf(c, id, "not_found", "no running exec %s in session %s", xid, ss->s->id);
    exec_kill(o, sig);
    send_result(c, id, json_object());
}

static const struct {
    const char *method;
    const char *op;
    enum fop fop;
} fops[] = {
    {"file.read", "read", F_READ},       {"file.write", "write", F_WRITE},
    {"file.stat", "stat", F_STAT},       {"file.exists", "exists", F_EXISTS},
    {"file.readdir", "readdir", F_READDIR}, {"file.mkdir", "mkdir", F_MKDIR},
    {"file.rm", "rm", F_RM},             {"file.rename", "rename", F_RENAME},
};

/* workspace.diff / workspace.commit / workspace.reset: answered at once
 * from the session's upper layer (cow_session.c); not_supported unless the
 * session was created with "cow": true. */
static void m_workspace(struct conn *c, json_t *id, const char *method, json_t *params,
                        struct sess *ss)
{
    struct proto_err e = {0};
    json_t *r = cow_session_method(ss->s->sb.cow, method, params, &e);
    if (r)
        send_result(c, id, r);
    else
        send_error(c, id, &e);
}

static void m_file(struct conn *c, json_t *id, const char *method, json_t *params,
                   struct sess *ss)
{
    struct proto_err e = {0};
    size_t fi;
    for (fi = 0; fi < FB_ARRAY_LEN(fops); fi++)
        if (!strcmp(fops[fi].method, method))
            break;
    enum fop fop = fops[fi].fop;
    const char *path;
    const char *pkey = fop == F_RENAME ? "from" : "path";
    char *abs = NULL, *abs2 = NULL;
    if (pget_path(params, pkey, &path, &e) < 0 || join_path(ss, path, &abs, &e, pkey) < 0)
        return send_error(c, id, &e);
    json_t *h = json_pack("{s:s, s:s}", "op", fops[fi].op, "path", abs);
    int fds[1] = {-1};
    size_t nfds = 0;
    const void *payload = NULL;
    size_t plen = 0;
    bool b64 = false;
    int64_t offset = 0, length = -1;
    unsigned char *wdata = NULL;
    size_t wlen = 0;
    int pipefd[2] = {-1, -1};

    switch (fop) {
    case F_READ:
        if (pget_int(params, "offset", &offset, 0, 0, INT64_MAX / 2, &e) < 0 ||
            pget_int(params, "length", &length, -1, 0, INT64_MAX / 2, &e) < 0 ||
            pget_encoding(params, "encoding", &b64, &e) < 0)
            goto bad;
        if (length > lim.max_output) {
            perr_set(&e, "too_large", "length is above maxReadBytes (%lld)", (long long)lim.max_output);
            goto bad;
        }
        json_object_set_new(h, "offset", json_integer(offset));
        json_object_set_new(h, "length", json_integer(length));
        json_object_set_new(h, "max", json_integer(lim.max_output));
        break;
    case F_READDIR:
        json_object_set_new(h, "max", json_integer(lim.max_output));
        break;
    case F_WRITE: {
        const char *data;
        bool append, parents, excl;
        unsigned mode;
        size_t dl;
        if (pget_bytes(params, "data", &data, &dl, true, &e) < 0 ||
            pget_encoding(params, "encoding", &b64, &e) < 0 ||
            pget_bool(params, "append", &append, false, &e) < 0 ||
            pget_bool(params, "parents", &parents, false, &e) < 0 ||
            pget_bool(params, "exclusive", &excl, false, &e) < 0 ||
            pget_mode(params, "mode", &mode, 0644, &e) < 0)
            goto bad;
        if (b64) {
            wdata = fb_xmalloc(b64_decoded_max(dl));
            ssize_t n = b64_decode(data, dl, wdata);
            if (n < 0) {
                perr_param(&e, "data", "data is not valid base64");
                goto bad;
            }
            wlen = (size_t)n;
        } else {
            wdata = fb_xmalloc(dl + 1);
            memcpy(wdata, data, dl);
            wlen = dl;
        }
        json_object_set_new(h, "append", json_boolean(append));
        json_object_set_new(h, "parents", json_boolean(parents));
        json_object_set_new(h, "exclusive", json_boolean(excl));
        json_object_set_new(h, "mode", json_integer(mode));
        json_object_set_new(h, "size", json_integer((json_int_t)wlen));
        json_object_set_new(h, "inline", json_boolean(wlen <= SREC_INLINE));
        if (wlen <= SREC_INLINE) {
            payload = wdata;
            plen = wlen;
        }
        break;
    }
    case F_STAT:
    case F_EXISTS: {
        bool follow;
        if (pget_bool(params, "follow", &follow, true, &e) < 0)
            goto bad;
        json_object_set_new(h, "follow", json_boolean(follow));
        break;
    }
    case F_MKDIR: {
        bool rec;
        unsigned mode;
        if (pget_bool(params, "recursive", &rec, false, &e) < 0 ||
            pget_mode(params, "mode", &mode, 0755, &e) < 0)
            goto bad;
        json_object_set_new(h, "recursive", json_boolean(rec));
        json_object_set_new(h, "mode", json_integer(mode));
        break;
    }
    case F_RM: {
        bool rec, force;
        if (pget_bool(params, "recursive", &rec, false, &e) < 0 ||
            pget_bool(params, "force", &force, false, &e) < 0)
            goto bad;
        json_object_set_new(h, "recursive", json_boolean(rec));
        json_object_set_new(h, "force", json_boolean(force));
        break;
    }
    case F_RENAME: {
        const char *to;
        bool ow;
        if (pget_path(params, "to", &to, &e) < 0 || join_path(ss, to, &abs2, &e, "to") < 0 ||
            pget_bool(params, "overwrite", &ow, true, &e) < 0)
            goto bad;
        json_object_del(h, "path");
        json_object_set_new(h, "from", json_string(abs));
        json_object_set_new(h, "to", json_string(abs2));
        json_object_set_new(h, "overwrite", json_boolean(ow));
        break;
    }
    }

    bool need_pipe = fop == F_READ || fop == F_READDIR || (fop == F_WRITE && wlen > SREC_INLINE);
    if (need_pipe) {
        bool server_reads = fop != F_WRITE;
        if (mkpipe(pipefd, server_reads) < 0) {
            int er = errno;
            perr_set(&e, proto_errno_name(er), "cannot create a pipe: %s", strerror(er));
            goto bad;
        }
        /* Larger pipes: fewer wake-ups for big transfers (best effort). */
        if (fop != F_READDIR)
            fcntl(pipefd[0], F_SETPIPE_SZ, 1 << 20);
        fds[0] = server_reads ? pipefd[1] : pipefd[0];
        nfds = 1;
    }
    struct op *o = op_new(OP_FILE, c, id, ss);
    o->fop = fop;
    o->path = fb_xstrdup(path);
    o->base64 = b64;
    o->offset = offset;
    o->max = lim.max_output;
    if (need_pipe) {
        o->wbulk.fd = fop == F_WRITE ? pipefd[1] : pipefd[0];
        if (fop == F_WRITE) {
            buf_append(&o->data, wdata, wlen);
            w_set(&o->wbulk, EPOLLOUT);
        } else {
            w_set(&o->wbulk, EPOLLIN);
        }
    }
    json_object_set_new(h, "t", json_integer((json_int_t)o->tag));
    int sr = sess_send(ss, h, payload, plen, fds, nfds);
    if (sr < 0) {
        if (sr == -1)
            send_errf(c, id, "too_large", "the request is too large");
        else
            send_errf(c, id, "session_dead", "the session is not running");
        op_finish(o);
    }
    free(wdata);
    free(abs);
    free(abs2);
    return;
bad:
    json_decref(h);
    free(wdata);
    free(abs);
    free(abs2);
    send_error(c, id, &e);
}

static void m_server_info(struct conn *c, json_t *id)
{
    json_t *methods = json_array();
    for (size_t i = 0; proto_methods[i]; i++)
        json_array_append_new(methods, json_string(proto_methods[i]));
    json_t *profiles = json_array();
    for (const char *const *n = profile_builtin_names(); n && *n; n++)
        json_array_append_new(profiles, json_string(*n));
    json_t *r = json_object();
    json_object_set_new(r, "name", json_string("fluebox"));
    json_object_set_new(r, "version", json_string(FB_VERSION));
    json_object_set_new(r, "protocol", json_integer(FB_PROTO_VERSION));
    json_object_set_new(r, "pid", json_integer(getpid()));
    json_object_set_new(r, "uid", json_integer(geteuid()));
    json_object_set_new(r, "peerUid", json_integer(c->uid));
    json_object_set_new(r, "socket", json_string(sock_path));
    json_object_set_new(r, "sessions", json_integer(sessions_of(c->uid)));
    json_object_set_new(r, "pool", json_pack("{s:I, s:i, s:s}", "size", (json_int_t)lim.pool,
                                             "ready", pool_ready, "profile", FB_DEFAULT_PROFILE));
    json_object_set_new(r, "profiles", profiles);
    json_object_set_new(r, "methods", methods);
    json_object_set_new(
        r, "limits",
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "maxMessageBytes", (json_int_t)lim.max_message,
                  "maxSessionsPerUid", (json_int_t)lim.max_sessions, "maxExecsPerSession",
                  (json_int_t)lim.max_execs, "maxOutputBytes", (json_int_t)lim.max_output,
                  "maxReadBytes", (json_int_t)lim.max_output, "maxConnections",
                  (json_int_t)lim.max_conns));
    send_result(c, id, r);
}

static void handle_line(struct conn *c, const char *line, size_t len)
{
    struct proto_req req;
    struct proto_err e = {0};
    if (proto_parse_request(line, len, &req, &e) < 0) {
        send_error(c, req.id, &e);
        proto_req_free(&req);
        return;
    }
    for (struct op *o = c->ops; o; o = o->cnext) {
        if (json_equal(o->id, req.id)) {
            send_errf(c, req.id, "invalid_request", "id is already in use by a request in flight");
            proto_req_free(&req);
            return;
        }
    }
    const char *m = req.method;
    json_t *id = req.id, *params = req.params;
    if (!strcmp(m, "server.info")) {
        m_server_info(c, id);
    } else if (!strcmp(m, "session.create")) {
        m_session_create(c, id, params);
    } else if (!strcmp(m, "session.list")) {
        m_session_list(c, id, params);
    } else {
        const char *sid;
        if (pget_str(params, "session", &sid, NULL, true, 64, &e) < 0) {
            send_error(c, id, &e);
            proto_req_free(&req);
            return;
        }
        struct sess *ss = sess_find(c->uid, sid);
        if (!ss || (ss->dying && strcmp(m, "session.destroy"))) {
            send_errf(c, id, "not_found", "no session %.64s", sid);
        } else if (!strcmp(m, "session.destroy")) {
            m_session_destroy(c, id, ss);
        } else if (!strcmp(m, "session.info")) {
            session_touch(ss->s);
            send_result(c, id, session_info(ss->s, running_ids(ss), ss->total_execs));
        } else if (ss->s->state == SESS_DEAD) {
            send_errf(c, id, "session_dead", "%s", ss->s->death[0] ? ss->s->death : "the session is gone");
        } else if (stopping) {
            send_errf(c, id, "shutting_down", "the server is stopping");
        } else {
            session_touch(ss->s);
            if (!strcmp(m, "exec"))
                m_exec(c, id, params, ss);
            else if (!strcmp(m, "exec.kill"))
                m_exec_kill(c, id, params, ss);
            else if (!strncmp(m, "workspace.", 10))
                m_workspace(c, id, m, params, ss); /* copy-on-write: cow_session.c */
            else
                m_file(c, id, m, params, ss);
        }
    }
    proto_req_free(&req);
}

/* ---- connections: input ---- */

static bool conn_paused(struct conn *c)
{
    return buf_pending(&c->out) >= OUT_PAUSE || c->nops >= MAX_INFLIGHT;
}

/* Handle complete lines in c->in. */
static void conn_process(struct conn *c)
{
    while (!c->dead && !conn_paused(c)) {
        const char *head = buf_head(&c->in);
        size_t pend = buf_pending(&c->in);
        const char *nl = pend > c->scan ? memchr(head + c->scan, '\n', pend - c->scan) : NULL;
        if (!nl) {
            c->scan = pend;
            if (c->discard) {
                buf_consume(&c->in, pend);
                c->scan = 0;
            } else if ((int64_t)pend > lim.max_message) {
                json_t *pid = proto_peek_id(head, pend < 512 ? pend : 512);
                send_errf(c, pid, "too_large", "a request line is larger than %lld bytes",
                          (long long)lim.max_message);
                json_decref(pid);
                c->discard = true;
                buf_consume(&c->in, pend);
                c->scan = 0;
            }
            break;
        }
        size_t len = (size_t)(nl - head);
        c->scan = 0;
        if (c->discard) {
            c->discard = false;
        } else if ((int64_t)len > lim.max_message) {
            json_t *pid = proto_peek_id(head, len < 512 ? len : 512);
            send_errf(c, pid, "too_large", "a request line is larger than %lld bytes",
                      (long long)lim.max_message);
            json_decref(pid);
        } else {
            size_t l = len;
            if (l && head[l - 1] == '\r')
                l--;
            bool blank = true;
            for (size_t i = 0; i < l && blank; i++)
                blank = head[i] == ' ' || head[i] == '\t';
            if (!blank)
                handle_line(c, head, l);
        }
        if (c->dead)
            return;
        buf_consume(&c->in, len + 1);
    }
    if (!buf_pending(&c->in))
        buf_reset(&c->in);
}

static void conn_resume(struct conn *c)
{
    if (c->dead)
        return;
    for (struct op *o = c->ops; o; o = o->cnext)
        if (o->kind == OP_EXEC && o->paused)
            exec_pause(o, false);
}

/* An op of c finished: maybe more requests can be read now (the loop
 * processes buffered lines at the end of the iteration). */
static void conn_after_op(struct conn *c)
{
    conn_update(c, true);
}

static void on_conn(struct conn *c, uint32_t events)
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
            ssize_t n = read(c->fd, buf, sizeof buf);
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

static void conn_close(struct conn *c)
{
    if (c->dead)
        return;
    c->dead = true;
    w_set(&c->w, 0);
    close(c->fd);
    c->w.fd = c->fd = -1;
    /* Its ops: execs are killed, the rest finish unanswered. */
    while (c->ops) {
        struct op *o = c->ops;
        op_unlink_conn(o);
        if (o->kind == OP_EXEC) {
            exec_kill(o, SIGKILL);
            exec_pause(o, false); /* keep draining so the command is not stuck */
        }
    }
    if (c->prev)
        c->prev->next = c->next;
    else
        conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    nconns--;
    bury(0, c);
}

static struct watch *listen_w;
static uint64_t listen_paused_until;

static void on_accept(int lfd)
{
    for (int k = 0; k < 64; k++) {
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: stop accepting for a moment instead of
                 * spinning on a listening socket that stays readable. */
                w_set(listen_w, 0);
                listen_paused_until = now_ns() + 100000000ull;
            }
            return;
        }
        struct ucred cr;
        socklen_t cl = sizeof cr;
        if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0) {
            close(fd);
            continue;
        }
        if ((int64_t)nconns >= lim.max_conns || stopping) {
            struct proto_err e = {0};
            if (stopping)
                perr_set(&e, "shutting_down", "the server is stopping");
            else {
                perr_set(&e, "limit_exceeded", "too many connections");
                snprintf(e.limit, sizeof e.limit, "connections");
            }
            size_t len;
            char *line = proto_error_line(NULL, &e, &len);
            ssize_t w = write(fd, line, len);
            (void)w;
            free(line);
            close(fd);
            continue;
        }
        struct conn *c = fb_xcalloc(1, sizeof *c);
        c->fd = fd;
        c->uid = cr.uid;
        c->pid = cr.pid;
        w_init(&c->w, W_CONN, 0, c, fd);
        c->next = conns;
        if (conns)
            conns->prev = c;
        conns = c;
        nconns++;
        w_set(&c->w, EPOLLIN | EPOLLHUP);
    }
}

/* ---- timers ---- */

static int next_timeout_ms(void)
{
    uint64_t now = now_ns(), best = UINT64_MAX;
    for (struct sess *ss = sesss; ss; ss = ss->next) {
        struct fb_session *s = ss->s;
        if (ss->dead || ss->in_pool || s->state == SESS_STARTING || ss->dying)
            continue;
        if (s->ttl_ms > 0) {
            uint64_t t = s->created_ns + (uint64_t)s->ttl_ms * 1000000ull;
            if (t < best)
                best = t;
        }
        if (s->idle_ms > 0 && !ss->running_execs) {
            uint64_t t = s->last_used_ns + (uint64_t)s->idle_ms * 1000000ull;
            if (t < best)
                best = t;
        }
        for (struct op *o = ss->ops; o; o = o->snext) {
            if (o->kind != OP_EXEC || o->dead)
                continue;
            if (o->deadline_ns && !o->timed_out && o->deadline_ns < best)
                best = o->deadline_ns;
            if (o->exited && o->grace_ns < best)
                best = o->grace_ns;
        }
    }
    if (lim.pool > 0 && pool_retry_ns && pool_ready + pool_pending < lim.pool && pool_retry_ns < best)
        best = pool_retry_ns;
    if (listen_paused_until && listen_paused_until < best)
        best = listen_paused_until;
    if (best == UINT64_MAX)
        return -1;
    if (best <= now)
        return 0;
    uint64_t ms = (best - now + 999999) / 1000000;
    return ms > 60000 ? 60000 : (int)ms;
}

static void run_timers(void)
{
    uint64_t now = now_ns();
    for (struct sess *ss = sesss; ss; ss = ss->next) {
        struct fb_session *s = ss->s;
        if (ss->dead || ss->in_pool || s->state == SESS_STARTING || ss->dying)
            continue;
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            if (o->kind == OP_EXEC && !o->dead) {
                if (o->deadline_ns && !o->timed_out && now >= o->deadline_ns) {
                    o->timed_out = true;
                    exec_kill(o, SIGKILL);
                }
                if (o->exited && now >= o->grace_ns)
                    exec_maybe_finish(o, true);
            }
            o = nx;
        }
        bool expired = s->ttl_ms > 0 && now >= s->created_ns + (uint64_t)s->ttl_ms * 1000000ull;
        bool idle = s->idle_ms > 0 && !ss->running_execs && !ss->ops &&
                    now >= s->last_used_ns + (uint64_t)s->idle_ms * 1000000ull;
        if (expired || idle) {
            snprintf(s->death, sizeof s->death, "%s", expired ? "ttl expired" : "idle timeout");
            sess_destroy(ss);
        }
    }
    if (listen_paused_until && now >= listen_paused_until) {
        listen_paused_until = 0;
        w_set(listen_w, EPOLLIN);
    }
    if (pool_retry_ns && now >= pool_retry_ns) {
        pool_retry_ns = 0;
        pool_refill();
    }
}

/* ---- start-up and shutdown ---- */

static int lock_fd = -1;

static int listen_on(const char *path, struct fb_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return fb_errf(err, FB_EXIT_SETUP, "socket path too long: %s", path);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    char lockp[sizeof sa.sun_path + 8];
    snprintf(lockp, sizeof lockp, "%s.lock", path);
    lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (lock_fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", lockp);
    if (flock(lock_fd, LOCK_EX | LOCK_NB) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "another fluebox serve is using %s", path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return fb_errf(err, FB_EXIT_SETUP, "%s exists and is not a socket", path);
        unlink(path); /* stale: whoever made it does not hold the lock */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socket");
    mode_t old = umask(0177);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r < 0) {
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "bind %s", path);
    }
    chmod(path, 0600);
    if (listen(fd, 512) < 0) {
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "listen %s", path);
    }
    return fd;
}

static void shutdown_all(int lfd)
{
    stopping = true;
    if (lfd >= 0)
        close(lfd);
    unlink(sock_path);
    /* Answer whatever is in flight, kill every sandbox. */
    for (struct sess *ss = sesss; ss; ss = ss->next) {
        if (ss->dead)
            continue;
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            if (o->kind != OP_CREATE || !o->pending) {
                send_errf(o->c, o->id, "shutting_down", "the server is stopping");
                op_finish(o);
            }
            o = nx;
        }
        if (ss->s->spawned)
            sandbox_kill(&ss->s->sb);
    }
    worker_stop();
    enum worker_job kind;
    struct fb_session *s;
    while ((s = worker_done(&kind))) {
        if (kind == WJ_SPAWN && s->spawn_rc == 0)
            s->spawned = true;
        else if (kind == WJ_RELEASE)
            s->spawned = false;
        struct sess *ss = s->srv;
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            send_errf(o->c, o->id, "shutting_down", "the server is stopping");
            op_finish(o);
            o = nx;
        }
    }
    for (struct sess *ss = sesss; ss; ss = ss->next) {
        sess_unwatch(ss);
        outq_free(ss);
        if (ss->s->spawned) {
            sandbox_kill(&ss->s->sb);
            sandbox_release(&ss->s->sb);
            ss->s->spawned = false;
        }
    }
    /* Best effort: flush what we owe the clients. */
    for (struct conn *c = conns; c; c = c->next)
        if (!c->dead && buf_pending(&c->out))
            (void)!write(c->fd, buf_head(&c->out), buf_pending(&c->out));
}

static void free_all(void)
{
    while (conns)
        conn_close(conns);
    while (sesss) {
        struct sess *ss = sesss;
        while (ss->ops)
            op_finish(ss->ops);
        sess_free(ss);
    }
    while (graves) {
        struct grave *g = graves;
        graves = g->next;
        if (g->kind == 0) {
            struct conn *c = g->p;
            buf_free(&c->in);
            buf_free(&c->out);
            free(c);
        } else if (g->kind == 1) {
            struct sess *ss = g->p;
            outq_free(ss);
            session_free(ss->s);
            free(ss);
        } else {
            op_free(g->p);
        }
        free(g);
    }
}

static void bury_flush(void)
{
    while (graves) {
        struct grave *g = graves;
        graves = g->next;
        if (g->kind == 0) {
            struct conn *c = g->p;
            buf_free(&c->in);
            buf_free(&c->out);
            free(c);
        } else if (g->kind == 1) {
            struct sess *ss = g->p;
            while (ss->ops)
                op_finish(ss->ops); /* cannot normally happen */
            outq_free(ss);
            if (ss->s->spawned) {
                /* Should have been released: do it now rather than leak. */
                sandbox_kill(&ss->s->sb);
                sandbox_release(&ss->s->sb);
            }
            session_free(ss->s);
            free(ss);
        } else {
            op_free(g->p);
        }
        free(g);
    }
}

static int ready_fd = -1;
static bool exit_with_parent;

static const char serve_usage[] =
    "Usage: fluebox serve [--socket PATH] [--pool N] [--max-sessions N] [--max-execs N]\n"
    "                     [--max-output SIZE] [--max-message SIZE] [--max-conns N]\n"
    "                     [--ready-fd N] [--exit-with-parent]\n"
    "Serves sessions on a Unix socket (docs/protocol.md). Default socket:\n"
    "$FLUEBOX_SOCKET, $XDG_RUNTIME_DIR/fluebox.sock, /run/user/UID/fluebox.sock or\n"
    "/tmp/fluebox-UID/fluebox.sock. SIGTERM destroys every session and exits.\n";

static int parse_serve_args(int argc, char **argv, const char **sock)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            fputs(serve_usage, stdout);
            return 1;
        }
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        int64_t *num = NULL;
        bool size = false;
        if (!strcmp(a, "--exit-with-parent")) {
            exit_with_parent = true;
            continue;
        }
        if (!strcmp(a, "--ready-fd")) {
            uint64_t fd;
            if (!v || fb_parse_u64(v, &fd) < 0 || fd > 1 << 20) {
                fb_warn("--ready-fd needs a descriptor number");
                return -1;
            }
            ready_fd = (int)fd;
            i++;
            continue;
        }
        if (!strcmp(a, "--socket")) {
            if (!v) {
                fb_warn("--socket needs a value");
                return -1;
            }
            *sock = v;
            i++;
            continue;
        } else if (!strcmp(a, "--pool")) {
            num = &lim.pool;
        } else if (!strcmp(a, "--max-sessions")) {
            num = &lim.max_sessions;
        } else if (!strcmp(a, "--max-execs")) {
            num = &lim.max_execs;
        } else if (!strcmp(a, "--max-conns")) {
            num = &lim.max_conns;
        } else if (!strcmp(a, "--max-output")) {
            num = &lim.max_output;
            size = true;
        } else if (!strcmp(a, "--max-message")) {
            num = &lim.max_message;
            size = true;
        } else {
            fb_warn("serve: unknown option %s\n%s", a, serve_usage);
            return -1;
        }
        if (!v) {
            fb_warn("%s needs a value", a);
            return -1;
        }
        int64_t n;
        uint64_t u;
        if (size) {
            if (fb_parse_size(v, &n) < 0 || n < 1024) {
                fb_warn("%s %s: expected a size of at least 1K", a, v);
                return -1;
            }
        } else if (fb_parse_u64(v, &u) < 0 || u > 100000) {
            fb_warn("%s %s: expected a number", a, v);
            return -1;
        } else {
            n = (int64_t)u;
        }
        *num = n;
        i++;
    }
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    const char *sock = NULL;
    int r = parse_serve_args(argc, argv, &sock);
    if (r)
        return r > 0 ? 0 : FB_EXIT_SETUP;
    struct fb_err err = {0};
    if (sock) {
        snprintf(sock_path, sizeof sock_path, "%s", sock);
    } else if (proto_default_socket(sock_path, sizeof sock_path, true, &err) < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }

    /* Signals: everything through a signalfd; SIGPIPE stays blocked so a
     * write to a closed pipe or socket just fails with EPIPE. Threads and
     * sandboxes inherit this mask (init and execs reset it). */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigdelset(&set, SIGPIPE);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    if (exit_with_parent) {
        /* The parent's death arrives as SIGTERM: a clean shutdown. If it
         * died before we asked, we are an orphan already. */
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) {
            fb_warn("serve: the parent is gone already (--exit-with-parent)");
            return FB_EXIT_SETUP;
        }
    }

    /* Every exec holds two or three pipes here: use the hard limit. */
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max > 65536 ? 65536 : rl.rlim_max;
        setrlimit(RLIMIT_NOFILE, &rl);
    }
    cgroup_sweep_stale();
    int lfd = listen_on(sock_path, &err);
    if (lfd < 0 || sfd < 0) {
        fb_warn("%s", lfd < 0 ? err.msg : "signalfd failed");
        return FB_EXIT_SETUP;
    }
    ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0 || worker_start(&err) < 0) {
        fb_warn("%s", ep < 0 ? "epoll_create1 failed" : err.msg);
        unlink(sock_path);
        return FB_EXIT_SETUP;
    }
    recbuf = fb_xmalloc(SREC_MAX);
    struct watch wl, ws, ww;
    w_init(&wl, W_LISTEN, 0, NULL, lfd);
    w_init(&ws, W_SIG, 0, NULL, sfd);
    w_init(&ww, W_WORKER, 0, NULL, worker_fd());
    listen_w = &wl;
    w_set(&wl, EPOLLIN);
    w_set(&ws, EPOLLIN);
    w_set(&ww, EPOLLIN);
    fb_warn("serving on %s (pool %lld)", sock_path, (long long)lim.pool);
    if (ready_fd >= 0) {
        /* Listening: clients may connect from now on. */
        if (fb_write_all(ready_fd, "ready\n", 6) < 0)
            fb_warn("--ready-fd %d: %s", ready_fd, strerror(errno));
        if (ready_fd > 2)
            close(ready_fd);
    }
    pool_refill();

    while (!stopping) {
        struct epoll_event evs[64];
        int n = epoll_wait(ep, evs, 64, next_timeout_ms());
        if (n < 0 && errno != EINTR) {
            fb_warn("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n && !stopping; i++) {
            struct watch *w = evs[i].data.ptr;
            uint32_t ev = evs[i].events;
            switch (w->kind) {
            case W_LISTEN:
                on_accept(lfd);
                break;
            case W_SIG: {
                struct signalfd_siginfo si;
                while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                    if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                        stopping = true;
                break;
            }
            case W_WORKER: {
                worker_ack();
                worker_hold();
                enum worker_job kind;
                struct fb_session *s;
                while ((s = worker_done(&kind))) {
                    if (kind == WJ_SPAWN)
                        spawn_done(s);
                    else
                        release_done(s);
                }
                break;
            }
            case W_CONN: {
                struct conn *c = w->ptr;
                if (!c->dead)
                    on_conn(c, ev);
                break;
            }
            case W_CTL: {
                struct sess *ss = w->ptr;
                if (ss->dead)
                    break;
                if (ev & EPOLLOUT)
                    outq_flush(ss);
                if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
                    on_ctl(ss);
                break;
            }
            case W_PIDFD: {
                struct sess *ss = w->ptr;
                if (!ss->dead)
                    sess_gone(ss);
                break;
            }
            case W_EGRESS: {
                struct sess *ss = w->ptr;
                if (!ss->dead && ss->s->sb.egress && ss->s->state == SESS_READY)
                    egress_dispatch(ss->s->sb.egress);
                break;
            }
            case W_PIPE: {
                struct op *o = w->ptr;
                if (o->dead)
                    break;
                if (w->sub == 3)
                    on_bulk_pipe(o);
                else
                    on_exec_pipe(o, w->sub);
                break;
            }
            }
        }
        run_timers();
        /* Connections that were paused on in-flight requests may go on. */
        for (struct conn *c = conns; c; c = c->next)
            if (!c->dead && !c->rd_eof && !conn_paused(c) && buf_pending(&c->in))
                conn_process(c);
        bury_flush();
    }
    unsigned live = 0;
    for (struct sess *ss = sesss; ss; ss = ss->next)
        live += !ss->dead && !ss->in_pool && ss->s->state != SESS_DEAD;
    fb_warn("stopping: destroying %u session(s)", live);
    shutdown_all(lfd);
    free_all();
    bury_flush();
    close(ep);
    close(sfd);
    if (lock_fd >= 0) {
        char lockp[sizeof sock_path + 8];
        snprintf(lockp, sizeof lockp, "%s.lock", sock_path);
        unlink(lockp);
        close(lock_fd);
    }
    free(recbuf);
    return 0;
}
