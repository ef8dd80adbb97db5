/* sess_table.c — sessions and the warm pool in the server (server.h):
 * the op objects that wait on a session, a session's watches and the queue
 * of records to its init, records from init (handed to the exec and file
 * code), session.create/destroy/list/info and the spawn worker's results.
 * The warm pool is in server_pool.c; the policy and the worker in
 * sess_sandbox.c. */
#include "server.h"

#include "cgroup.h"
#include "cow.h"
#include "record.h"
#include "sess_copy.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <unistd.h>

/* ---- ops ---- */

struct op *op_new(enum opkind kind, struct conn *c, json_t *id, struct sess *ss)
{
    struct op *o = fb_xcalloc(1, sizeof *o);
    o->srv = c ? c->srv : ss->srv;
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

void op_mem_sync(struct op *o)
{
    int64_t m = (int64_t)(buf_pending(&o->inbuf) + buf_pending(&o->data) +
                          buf_pending(&o->xs[0].buf) + buf_pending(&o->xs[1].buf)) +
                o->reserve;
    if (o->c)
        conn_mem(o->c, m - o->mem);
    o->mem = m;
}

void op_unlink_conn(struct op *o)
{
    struct conn *c = o->c;
    if (!c)
        return;
    conn_mem(c, -o->mem); /* from now on its buffers are nobody's */
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

void op_finish(struct op *o)
{
    if (o->dead)
        return;
    o->dead = true;
    struct conn *c = o->c;
    struct sess *ss = o->ss;
    ws_forget_op(o);
    if (o->kind == OP_EXEC)
        stdin_forget(o);
    if (o->kind == OP_FILE)
        file_unpark_forget(o);
    if (o->kind == OP_EXEC && o->ss && o->ss->running_execs > 0)
        o->ss->running_execs--;
    op_unlink_conn(o);
    op_unlink_sess(o);
    w_close(o->srv, &o->wbulk);
    w_close(o->srv, &o->win);
    for (int i = 0; i < 2; i++)
        w_close(o->srv, &o->xs[i].w);
    bury(o->srv, GRAVE_OP, o);
    if (ss)
        timers_note(ss); /* the last one gone: its idle timeout counts again */
    if (c)
        conn_after_op(c);
}

void op_free(struct op *o)
{
    run_free(o->run);
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

struct sess *sess_new(struct srv *srv, struct fb_session *s)
{
    struct sess *ss = fb_xcalloc(1, sizeof *ss);
    ss->srv = srv;
    ss->s = s;
    s->srv = ss;
    w_init(&ss->wctl, W_CTL, 0, ss, -1);
    w_init(&ss->wpid, W_PIDFD, 0, ss, -1);
    w_init(&ss->wreap, W_REAP, 0, ss, -1);
    ss->next = srv->sesss;
    if (srv->sesss)
        srv->sesss->prev = ss;
    srv->sesss = ss;
    srv->nsess++;
    return ss;
}

/* ---- sessions by id ----
 * A session is filed under its id once that is final, when it is made,
 * forked or taken from the pool (sess_log_created: every way a session
 * becomes one a client can name; a pool sandbox is given its id when
 * taken), and taken out when it is unlinked: a look-up by id, found or
 * not, walks no list of sessions. */

static size_t idx_slot(const struct srv *srv, const char *id)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const unsigned char *p = (const unsigned char *)id; *p; p++)
        h = (h ^ *p) * 1099511628211ull;
    return (size_t)(h & (srv->idx_cap - 1));
}

static void idx_del(struct sess *ss)
{
    struct srv *srv = ss->srv;
    if (!ss->idx_key[0])
        return;
    for (struct sess **pp = &srv->idx[idx_slot(srv, ss->idx_key)]; *pp; pp = &(*pp)->idx_next)
        if (*pp == ss) {
            *pp = ss->idx_next;
            srv->idx_n--;
            break;
        }
    ss->idx_next = NULL;
    ss->idx_key[0] = 0;
}

static void idx_add(struct sess *ss)
{
    struct srv *srv = ss->srv;
    idx_del(ss);
    if (srv->idx_n + 1 > srv->idx_cap) {
        size_t cap = srv->idx_cap ? srv->idx_cap * 2 : 256;
        free(srv->idx);
        srv->idx = fb_xcalloc(cap, sizeof *srv->idx);
        srv->idx_cap = cap;
        for (struct sess *x = srv->sesss; x; x = x->next)
            if (x->idx_key[0]) {
                size_t k = idx_slot(srv, x->idx_key);
                x->idx_next = srv->idx[k];
                srv->idx[k] = x;
            }
    }
    snprintf(ss->idx_key, sizeof ss->idx_key, "%s", ss->s->id);
    size_t k = idx_slot(srv, ss->idx_key);
    ss->idx_next = srv->idx[k];
    srv->idx[k] = ss;
    srv->idx_n++;
}

static void sess_unlink(struct sess *ss)
{
    struct srv *srv = ss->srv;
    idx_del(ss);
    srv->nsess--;
    if (ss->prev)
        ss->prev->next = ss->next;
    else
        srv->sesss = ss->next;
    if (ss->next)
        ss->next->prev = ss->prev;
    ss->next = ss->prev = NULL;
}

/* Start watching a freshly spawned sandbox. -1 when it cannot be watched
 * (it must then not be used: nothing would tell that it died). */
int sess_watch(struct sess *ss)
{
    struct fb_sandbox *sb = &ss->s->sb;
    int fl = fcntl(sb->ctl, F_GETFL);
    fcntl(sb->ctl, F_SETFL, fl | O_NONBLOCK);
    int sz = 1 << 20;
    setsockopt(sb->ctl, SOL_SOCKET, SO_SNDBUF, &sz, sizeof sz);
    /* The fds belong to the sandbox struct: watches never close them. */
    ss->wctl.fd = sb->ctl;
    if (w_set(ss->srv, &ss->wctl, EPOLLIN) < 0)
        return -1;
    /* Init's death shows as the end of its control socket (every process
     * that could hold the other end dies with it), so an idle session holds
     * no pidfd: one is opened when it is needed (a destroy waits for the
     * reap, sess_release), which is safe as init stays our unreaped child
     * until the worker reaps it. A sandbox without a pid namespace keeps
     * its pidfd (what it started may outlive init). */
    if (sb->ll) {
        ss->wpid.fd = sb->pidfd;
        if (w_set(ss->srv, &ss->wpid, EPOLLIN) < 0)
            return -1;
    } else if (sb->pidfd >= 0) {
        close(sb->pidfd);
        sb->pidfd = -1;
    }
    /* Its cgroup's directories are opened when used (info, limits), its
     * scratch space taken from init's own descriptor when needed. */
    cgroup_park(sb->cg);
    sandbox_scratch_park(sb);
    /* The network relay's sockets are watched in the server's own epoll
     * (no epoll of its own per session, egress.h). */
    if (sb->egress && egress_share_epoll(sb->egress, ss->srv->ep) < 0)
        return -1;
    /* Its listening sockets (the resolver's, the allowed ports') are
     * watched by init until a query or connection comes: on_ctl's "net". */
    if (sb->net_in_init)
        egress_park(sb->egress);
    return 0;
}

void sess_unwatch(struct sess *ss)
{
    w_set(ss->srv, &ss->wctl, 0);
    w_set(ss->srv, &ss->wpid, 0);
    ss->wctl.fd = ss->wpid.fd = -1;
    /* The relay stops here, on this thread: events of it this batch has
     * fetched already are ignored, and it is freed after the batch (not by
     * the worker, which releases the rest). */
    struct fb_sandbox *sb = &ss->s->sb;
    if (sb->egress) {
        egress_set_record(sb->egress, NULL);
        egress_detach(sb->egress);
        bury(ss->srv, GRAVE_EGRESS, fb_steal_ptr(sb->egress));
    }
}

void outq_free(struct sess *ss)
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

/* A send failed for want of kernel memory (ENOBUFS, ENOMEM): not a broken
 * socket, and no EPOLLOUT will say when to try again: a timer does. */
static bool send_later(struct sess *ss)
{
    if (errno != ENOBUFS && errno != ENOMEM)
        return false;
    if (w_set(ss->srv, &ss->wctl, EPOLLIN) < 0)
        return false;
    ss->send_retry_ns = now_ns() + 10 * 1000000ull;
    timers_note(ss);
    return true;
}

void outq_flush(struct sess *ss)
{
    ss->send_retry_ns = 0;
    while (ss->qhead) {
        struct outrec *r = ss->qhead;
        if (srec_send(ss->s->sb.ctl, r->rec, r->len, r->fds, r->nfds, MSG_DONTWAIT) < 0) {
            if ((errno == EAGAIN || errno == EWOULDBLOCK) &&
                w_set(ss->srv, &ss->wctl, EPOLLIN | EPOLLOUT) == 0)
                return;
            if (send_later(ss))
                return;
            /* The requests queued cannot reach init: the session is of no
             * use any more (and init is probably gone already). */
            sess_broken(ss, "the session's control socket failed");
            return;
        }
        ss->qhead = r->next;
        for (size_t i = 0; i < r->nfds; i++)
            close(r->fds[i]);
        free(r->rec);
        free(r);
    }
    ss->qtail = NULL;
    if (ss->wctl.fd >= 0 && w_set(ss->srv, &ss->wctl, EPOLLIN) < 0)
        sess_broken(ss, "the session's control socket cannot be watched");
}

int sess_send(struct sess *ss, json_t *hdr, const void *payload, size_t plen, int *fds,
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
    bool later = !ss->qhead && send_later(ss);
    if (!ss->qhead && !later && errno != EAGAIN && errno != EWOULDBLOCK) {
        /* Not a full socket: a broken one. This request fails (the caller
         * answers it); the others fail when the pidfd says init is gone. */
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        free(rec);
        sandbox_kill(&ss->s->sb);
        return -2;
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
    if (!ss->send_retry_ns && w_set(ss->srv, &ss->wctl, EPOLLIN | EPOLLOUT) < 0)
        sandbox_kill(&ss->s->sb); /* as above: the pidfd fails what is queued */
    return 0;
}

unsigned sessions_of(struct srv *srv, uid_t uid)
{
    unsigned n = 0;
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        if (!ss->in_pool && ss->s->uid == uid && !ss->dead && !ss->gone)
            n++;
    return n;
}

bool at_session_limit(struct srv *srv, uid_t uid)
{
    /* Fewer sessions in all than the limit: no need to count uid's. */
    return (int64_t)srv->nsess >= srv->lim.max_sessions &&
           (int64_t)sessions_of(srv, uid) >= srv->lim.max_sessions;
}

static bool findable(const struct sess *ss, uid_t uid, const char *id)
{
    return !ss->in_pool && !ss->dead && !ss->gone && ss->s->uid == uid &&
           ss->s->state != SESS_STARTING && !strcmp(ss->s->id, id);
}

struct sess *sess_find(struct srv *srv, uid_t uid, const char *id)
{
    if (srv->idx_cap)
        for (struct sess *ss = srv->idx[idx_slot(srv, id)]; ss; ss = ss->idx_next)
            if (!strcmp(ss->idx_key, id) && findable(ss, uid, id))
                return ss;
    return NULL;
}

/* Fail every op waiting on the session (it died or is being destroyed). */
static void sess_fail_ops(struct sess *ss, const char *code, const char *why)
{
    struct op *o = ss->ops;
    while (o) {
        struct op *nx = o->snext;
        if (o->kind == OP_EXEC || o->kind == OP_FILE || o->kind == OP_WS) {
            send_errf(o->c, o->id, code, "%s", why);
            op_finish(o);
        }
        o = nx;
    }
}

/* Answer the session.destroy ops of a dying session. */
static void answer_destroys(struct sess *ss)
{
    struct op *o = ss->ops;
    while (o) {
        struct op *nx = o->snext;
        if (o->kind == OP_DESTROY) {
            send_result(o->c, o->id, json_object());
            op_finish(o);
        }
        o = nx;
    }
}

void sess_release(struct sess *ss)
{
    ports_close(ss);
    if (ss->forking) {
        /* A fork is being copied from it: once that is done. */
        ss->release_after_fork = true;
        return;
    }
    if (ss->s->releasing)
        return;
    if (ss->ws) {
        /* Its thread uses the copy-on-write layer: stop it, then release. */
        ws_cancel(ss->ws);
        ss->release_wait = true;
        return;
    }
    outq_free(ss);
    sess_unwatch(ss);
    if (!ss->s->spawned) {
        release_done(ss->srv, ss->s); /* nothing to release */
        return;
    }
    /* A destroy is answered as soon as init is gone (W_REAP), even while
     * the worker is busy with a spawn; the worker's WJ_REAPED says it too.
     * A landlock sandbox has no pid namespace: its release finds its
     * leftovers, so its destroy waits for that (release_done). */
    if (ss->dying && !ss->gone && !ss->s->sb.ll && ss->s->sb.pid > 0 && ss->wreap.fd < 0) {
        ss->wreap.fd = ss->s->sb.pidfd >= 0 ? fcntl(ss->s->sb.pidfd, F_DUPFD_CLOEXEC, 0)
                                            : (int)syscall(SYS_pidfd_open, ss->s->sb.pid, 0);
        if (ss->wreap.fd >= 0 && w_set(ss->srv, &ss->wreap, EPOLLIN) < 0)
            w_close(ss->srv, &ss->wreap);
    }
    sess_record_end(ss); /* before the worker frees the relay */
    ss->s->releasing = true;
    worker_submit(ss->s, WJ_RELEASE);
}

void sess_free(struct sess *ss)
{
    if (ss->dead)
        return;
    sess_record_end(ss);
    ss->dead = true;
    w_close(ss->srv, &ss->wreap);
    ports_close(ss);
    sess_unlink(ss);
    bury(ss->srv, GRAVE_SESS, ss);
}

/* Destroy: kill now; answered (and freed) once the worker released it. */
void sess_destroy(struct sess *ss)
{
    if (!ss->dying && !ss->in_pool && ss->s->state != SESS_STARTING)
        srv_log_event(ss, "destroyed", json_pack("{s:s}", "reason", ss->s->death[0] ? ss->s->death : "destroyed"));
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
        answer_destroys(ss);
        sess_free(ss);
    }
}

/* The session is dead (why: NULL = find out): fail what waits on it and
 * release the sandbox. */
static void sess_died(struct sess *ss, const char *why)
{
    struct fb_session *s = ss->s;
    if (s->state == SESS_DEAD) {
        sess_unwatch(ss);
        return;
    }
    if (why) {
        snprintf(s->death, sizeof s->death, "%s", why);
    } else if (!ss->dying) {
        struct fb_cg_usage u = {0};
        u.mem_peak = u.mem_current = u.pids_peak = u.cpu_usage_us = u.oom_kills = -1;
        if (s->sb.cg)
            cgroup_usage(s->sb.cg, &u);
        snprintf(s->death, sizeof s->death, "%s",
                 u.oom_killed ? "the session's init was killed by the OOM killer"
                              : "the session's init exited");
    }
    s->state = SESS_DEAD;
    if (!ss->dying && !ss->in_pool)
        srv_log_event(ss, "died", json_pack("{s:s}", "reason", s->death[0] ? s->death : "gone"));
    sess_fail_ops(ss, "session_dead", s->death[0] ? s->death : "the session is gone");
    if (ss->in_pool) {
        /* A pool sandbox died: drop it and refill. */
        ss->dying = true;
        ss->srv->pool_ready--;
        ss->in_pool = false;
        ss->s->uid = (uid_t)-1;
    }
    sess_release(ss);
}

/* Init's pidfd became readable: the sandbox is gone. */
void sess_gone(struct sess *ss)
{
    sess_died(ss, NULL);
}

void sess_broken(struct sess *ss, const char *why)
{
    if (ss->s->state == SESS_DEAD)
        return;
    fb_warn("session %s: %s: %s", ss->s->id, why, strerror(errno));
    if (ss->s->spawned)
        sandbox_kill(&ss->s->sb);
    sess_died(ss, why);
}

/* ---- records from init ---- */

void on_ctl(struct sess *ss)
{
    for (int k = 0; k < 64 && !ss->dead && ss->wctl.fd >= 0; k++) {
        json_t *h;
        const char *payload;
        int fds[8];
        size_t plen, nfds = 8;
        int r = srec_recv(ss->s->sb.ctl, ss->srv->recbuf, MSG_DONTWAIT, &h, &payload, &plen, fds, &nfds);
        if (r < 0 && errno == EPROTO)
            continue;
        if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (r < 0) {
            sess_broken(ss, "reading the session's control socket failed");
            return;
        }
        if (r == 0) {
            /* EOF: init is gone or going (sess_watch): the session died. A
             * landlock sandbox's pidfd tells when it is gone. */
            w_set(ss->srv, &ss->wctl, 0);
            if (!ss->s->sb.ll)
                sess_gone(ss);
            return;
        }
        const char *opn = json_string_value(json_object_get(h, "op"));
        if (opn && !strcmp(opn, "net")) {
            /* init hands back the listening sockets egress_park gave it: a
             * query or connection is waiting on one of them. */
            struct fb_err err = {0};
            if (egress_unpark(ss->s->sb.egress, fds, nfds, &err) < 0)
                srv_log_event(ss, "relay-error", json_pack("{s:s}", "reason", err.msg));
            json_decref(h);
            continue;
        }
        json_t *tj = json_object_get(h, "t");
        uint64_t tag = json_is_integer(tj) ? (uint64_t)json_integer_value(tj) : 0;
        if (opn && tag && !strcmp(opn, "reply") && port_on_record(ss, tag, h, fds, nfds)) {
            json_decref(h);
            continue;
        }
        struct op *o = tag ? op_by_tag(ss, tag) : NULL;
        if (o && opn && nfds == 1 && !strcmp(opn, "started") && o->kind == OP_EXEC && o->tty &&
            !o->started) {
            exec_take_pty(o, fds[0]); /* a tty exec's terminal */
            nfds = 0;
        }
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        if (!opn || !o) {
            json_decref(h);
            continue;
        }
        if (o->kind == OP_EXEC) {
            on_exec_record(o, opn, h);
        } else if (o->kind == OP_FILE && !strcmp(opn, "reply") && !o->replied) {
            on_file_reply(o, h, payload, plen);
        }
        json_decref(h);
    }
}

/* ---- requests ---- */

int join_path(struct sess *ss, const char *p, char **out, struct proto_err *e, const char *param)
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

json_t *sess_info(struct sess *ss, json_t *running)
{
    json_t *o = session_info(ss->s, running, ss->total_execs);
    json_object_set_new(o, "ports", ports_json(ss));
    json_t *snaps = ss->s->state == SESS_READY ? cow_snapshots_json(ss->s->sb.cow) : NULL;
    json_object_set_new(o, "snapshots", snaps ? snaps : json_array());
    return o;
}

void sess_log_created(struct sess *ss)
{
    const struct fb_policy *p = &ss->s->pol;
    json_t *f = json_pack("{s:s, s:b, s:s}", "profile", p->profile_name ? p->profile_name : "",
                          "pooled", ss->s->pooled, "network",
                          p->net == FB_NET_ALLOW ? "allow" : p->net == FB_NET_HOST ? "host" : "none");
    if (ss->s->fork) {
        json_object_set_new(f, "from", json_string(ss->s->forked_from));
        json_object_set_new(f, "copyMs", json_integer(fork_copy_ms(ss->s->fork)));
    }
    srv_log_event(ss, ss->s->fork ? "forked" : "created", f);
    sess_record_start(ss);
    timers_note(ss); /* its ttl and idle timeout */
    idx_add(ss);     /* its id is final */
}


void m_session_create(struct conn *c, const struct method *m, json_t *id, json_t *params,
                      struct sess *unused)
{
    session_create_for(c, id, params, NULL);
}

/* Every refusal below frees r (a run's request: its descriptors). */
void session_create_for(struct conn *c, json_t *id, json_t *params, struct runreq *r)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    if (srv->stopping) {
        perr_set(&e, "shutting_down", "the server is stopping");
        goto refuse;
    }
    if (at_session_limit(srv, c->uid)) {
        perr_set(&e, "limit_exceeded", "at most %lld sessions per user", (long long)srv->lim.max_sessions);
        snprintf(e.limit, sizeof e.limit, "sessionsPerUid");
        goto refuse;
    }
    struct fb_policy p;
    struct session_params sp;
    /* Another uid (the socket was opened to others): only what the owner
     * allows them (serve --foreign-*). */
    bool foreign = c->uid != geteuid() && c->uid != 0;
    json_t *publish = json_object_get(params, "publish");
    if (publish && !json_is_null(publish)) {
        size_t i;
        json_t *v;
        int port, hp;
        bool any;
        json_t *hosts;
        if (!json_is_array(publish)) {
            perr_param(&e, "publish", "publish must be an array");
            goto refuse;
        }
        json_array_foreach(publish, i, v)
        {
            if (port_spec_parse(v, "publish", &port, &hp, &any, &hosts, &e) < 0)
                goto refuse;
        }
    } else {
        publish = NULL;
    }
    int prc = session_policy_from_params(params, foreign ? &srv->foreign : NULL, &p, &sp, &e);
    /* The secrets' values are in the engine's keeping now (or refused):
     * the params, which a session keeps, must not hold them. */
    sess_secrets_wipe(params);
    if (prc < 0) {
        policy_free(&p);
        goto refuse;
    }
    if (!p.limits.nofile)
        p.limits.nofile = srv->sandbox_nofile;
    /* Say so now rather than let the build fail half-way on EMFILE with
     * whatever step it was at. */
    if (fds_free(NULL, NULL) < FDS_PER_SESSION + FDS_RESERVE) {
        policy_free(&p);
        run_free(r);
        return send_out_of_fds(c, id, "no new session");
    }
    if (sess_record_open(params, &p, foreign, &sp.rec, &e) < 0) {
        policy_free(&p);
        goto refuse;
    }
    pool_take_or_spawn(c, id, &p, &sp, params, publish, r);
    record_discard(sp.rec); /* refused before a session took it */
    return;
refuse:
    run_free(r);
    send_error(c, id, &e);
}

/* The worker finished spawning s. */
void spawn_done(struct srv *srv, struct fb_session *s)
{
    struct sess *ss = s->srv;
    if (ss->fork_parent)
        fork_spawned(ss);
    if (ss->in_pool) {
        pool_spawned(ss);
        return;
    }
    struct op *o = NULL;
    for (struct op *x = ss->ops; x; x = x->snext)
        if (x->kind == OP_CREATE)
            o = x;
    if (s->spawn_rc < 0) {
        if (o) {
            send_errf(o->c, o->id, srv->stopping ? "shutting_down" : "sandbox_failed", "%s",
                      s->spawn_err.msg);
            op_finish(o);
        }
        sess_free(ss);
        return;
    }
    s->spawned = true;
    s->state = SESS_READY;
    if (sess_watch(ss) < 0) {
        int er = errno;
        if (o) {
            send_errf(o->c, o->id, "sandbox_failed", "cannot watch the new session: %s",
                      strerror(er));
            op_finish(o);
        }
        ss->dying = true;
        errno = er;
        sess_broken(ss, "watching the new session failed");
        return;
    }
    if (!o || !o->c || srv->stopping) {
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
    ports_start(ss);
    sess_log_created(ss);
    json_t *info = sess_info(ss, NULL);
    if (s->fork)
        json_object_set_new(info, "copyMs", json_integer(fork_copy_ms(s->fork)));
    session_give_warnings(s, info);
    if (o->run) {
        struct runreq *r = o->run;
        o->run = NULL;
        struct conn *c = o->c;
        json_t *rid = json_incref(o->id);
        op_finish(o);
        run_begin(ss, c, rid, r, info);
        json_decref(rid);
    } else {
        send_result(o->c, o->id, info);
        op_finish(o);
    }
    /* This create gave the pool a new shape: its refills may start now. */
    if (srv->pool_reshape)
        pool_reshape(srv);
}

/* The worker reaped a released session's init: nothing of its sandbox runs
 * any more, so a session.destroy is answered now rather than after the
 * clean-up (cgroup, layers, host ids), which goes on until release_done. */
void reaped_done(struct srv *srv, struct fb_session *s)
{
    struct sess *ss = s->srv;
    if (ss->gone || !(ss->dying || srv->stopping || s->uid == (uid_t)-1))
        return;
    ss->gone = true;
    answer_destroys(ss);
}

void release_done(struct srv *srv, struct fb_session *s)
{
    struct sess *ss = s->srv;
    s->releasing = false;
    s->spawned = false;
    if (ss->dying || srv->stopping || s->uid == (uid_t)-1 || ss->run_once) {
        answer_destroys(ss);
        sess_free(ss);
    }
    pool_refill(srv);
}


void m_session_destroy(struct conn *c, const struct method *m, json_t *id, json_t *params,
                       struct sess *ss)
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

void m_session_list(struct conn *c, const struct method *m, json_t *id, json_t *params,
                    struct sess *unused)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    const char *label;
    if (pget_str(params, "label", &label, NULL, false, 256, &e) < 0)
        return send_error(c, id, &e);
    /* Oldest first. */
    size_t n = 0;
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        if (!ss->in_pool && !ss->dead && !ss->dying && ss->s->uid == c->uid &&
            ss->s->state != SESS_STARTING)
            n++;
    struct sess **v = fb_xcalloc(n ? n : 1, sizeof *v);
    size_t k = 0;
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        if (!ss->in_pool && !ss->dead && !ss->dying && ss->s->uid == c->uid &&
            ss->s->state != SESS_STARTING)
            v[k++] = ss;
    json_t *arr = json_array();
    for (size_t i = k; i-- > 0;) {
        if (label && (!v[i]->s->label || strcmp(label, v[i]->s->label)))
            continue;
        json_array_append_new(arr, sess_info(v[i], running_ids(v[i])));
    }
    free(v);
    send_result(c, id, json_pack("{s:o}", "sessions", arr));
}

void m_session_info(struct conn *c, const struct method *m, json_t *id, json_t *params,
                    struct sess *ss)
{
    session_touch(ss->s);
    send_result(c, id, sess_info(ss, running_ids(ss)));
}
