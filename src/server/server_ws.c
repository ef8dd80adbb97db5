/* server_ws.c — the workspace.* methods of copy-on-write sessions
 * (workspace.diff / workspace.commit / workspace.reset, answered from the
 * session's upper layer by ws_cow.c; not_supported unless the session
 * was created with "cow": true) and workspace.cancel.
 *
 * A diff or commit of a big tree takes seconds, and so does a
 * session.snapshot or session.restore of a big layer (a copy of it): each
 * runs on a thread of its own, one at a time per session, so the event loop
 * serves everyone else meanwhile. While it runs the client gets a "progress" event about every
 * second (entries looked at so far); workspace.cancel, the client's
 * disconnection or the session's end stop it between entries (a commit
 * stopped half way has lost nothing: ws_cow.c, commit.c). The thread
 * touches only the session's struct fb_cow and its own copy of the
 * parameters (cow_session_call's rules); the session's sandbox is not
 * released while it runs. */
#include "server.h"

#include "cow.h"

#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <sys/eventfd.h>

#define PROGRESS_NS 1000000000ull

struct wsjob {
    struct srv *srv;
    struct fb_cow *cow;
    char method[32];
    json_t *params;     /* the thread's own copy */
    json_t *result;     /* the thread's answer, or NULL and err */
    struct proto_err err;
    /* Shared with the thread: */
    _Atomic(const char *) phase; /* "scan", "diff", "commit" (static strings) */
    _Atomic size_t done, total;
    atomic_bool cancel;
    pthread_t th;
    /* Main thread only: */
    struct op *o;       /* NULL once the request is gone */
    struct sess *ss;
    uint64_t next_report_ns, reported;
    struct wsjob *next; /* the done list (under srv->ws_mu) */
};

/* The operation's thread, before each item: note it; false stops it. */
static bool ws_step(void *arg, const char *phase, size_t done, size_t total)
{
    struct wsjob *j = arg;
    j->phase = phase;
    j->done = done;
    j->total = total;
    return !j->cancel;
}

static void *ws_main(void *arg)
{
    struct wsjob *j = arg;
    struct fb_cow_progress prog = {.step = ws_step, .arg = j};
    j->result = cow_session_call(j->cow, j->method, j->params, &prog, &j->err);
    /* params are freed by ws_finish: the record names what was asked. */
    struct srv *srv = j->srv;
    pthread_mutex_lock(&srv->ws_mu);
    j->next = srv->ws_done;
    srv->ws_done = j;
    pthread_mutex_unlock(&srv->ws_mu);
    uint64_t one = 1;
    if (write(srv->wws.fd, &one, sizeof one) < 0) {
        /* an eventfd counter does not overflow at this rate */
    }
    return NULL;
}

int ws_start(struct srv *srv, struct fb_err *err)
{
    int fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "eventfd");
    pthread_mutex_init(&srv->ws_mu, NULL);
    w_init(&srv->wws, W_WS, 0, NULL, fd);
    if (w_set(srv, &srv->wws, EPOLLIN) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "epoll");
    return 0;
}

/* Answer a finished job's request, and let a release that waited go on. */
static void ws_finish(struct wsjob *j)
{
    pthread_join(j->th, NULL);
    struct sess *ss = j->ss;
    ss->ws = NULL;
    /* session.snapshot / session.restore: said in the server's log. */
    if (j->result && !strncmp(j->method, "session.", 8))
        srv_log_event(ss, j->method + 8,
                      json_pack("{s:O}", "name", json_object_get(j->result, "name")));
    sess_record_ws(ss, j->method, j->params, j->result);
    if (j->o) {
        j->o->ws = NULL;
        if (j->result)
            send_result(j->o->c, j->o->id, j->result);
        else
            send_error(j->o->c, j->o->id, &j->err);
        j->result = NULL;
        op_finish(j->o);
    }
    json_decref(j->result);
    json_decref(j->params);
    perr_clear(&j->err);
    free(j);
    if (ss->release_wait) {
        ss->release_wait = false;
        sess_release(ss);
    }
}

void ws_on_done(struct srv *srv)
{
    uint64_t v;
    if (read(srv->wws.fd, &v, sizeof v) < 0) {
        /* EAGAIN: nothing new */
    }
    pthread_mutex_lock(&srv->ws_mu);
    struct wsjob *done = srv->ws_done;
    srv->ws_done = NULL;
    pthread_mutex_unlock(&srv->ws_mu);
    while (done) {
        struct wsjob *j = done;
        done = j->next;
        ws_finish(j);
    }
}

void ws_cancel(struct wsjob *j)
{
    if (j)
        j->cancel = true;
}

void ws_forget_op(struct op *o)
{
    if (o->ws) {
        o->ws->o = NULL;
        ws_cancel(o->ws);
        o->ws = NULL;
    }
}

void ws_progress(struct sess *ss, uint64_t now)
{
    struct wsjob *j = ss->ws;
    if (!j || !j->o || now < j->next_report_ns)
        return;
    const char *phase = j->phase;
    size_t done = j->done, total = j->total;
    uint64_t mark = (uint64_t)done * 4 + (phase ? (uint64_t)phase[0] : 0);
    if (phase && mark != j->reported && j->o->c)
        send_event(j->o->c, j->o->id, "progress",
                   json_pack("{s:s, s:s, s:I, s:I}", "method", j->method, "phase", phase, "done",
                             (json_int_t)done, "total", (json_int_t)total));
    j->reported = mark;
    j->next_report_ns = now + PROGRESS_NS;
}

uint64_t ws_next_progress(const struct sess *ss)
{
    return ss->ws && ss->ws->o ? ss->ws->next_report_ns : UINT64_MAX;
}

void ws_shutdown(struct srv *srv)
{
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        ws_cancel(ss->ws);
    for (struct sess *ss = srv->sesss; ss; ss = ss->next) {
        if (!ss->ws)
            continue;
        pthread_join(ss->ws->th, NULL);
        /* ws_finish will see it on the done list: take it off first. */
        pthread_mutex_lock(&srv->ws_mu);
        for (struct wsjob **pp = &srv->ws_done; *pp; pp = &(*pp)->next) {
            if (*pp == ss->ws) {
                *pp = ss->ws->next;
                break;
            }
        }
        pthread_mutex_unlock(&srv->ws_mu);
        struct wsjob *j = ss->ws;
        ss->ws = NULL;
        if (j->o) {
            j->o->ws = NULL;
            send_errf(j->o->c, j->o->id, "shutting_down", "the server is stopping");
            op_finish(j->o);
        }
        json_decref(j->result);
        json_decref(j->params);
        perr_clear(&j->err);
        free(j);
    }
    w_close(srv, &srv->wws);
}

void m_workspace(struct conn *c, const struct method *m, json_t *id, json_t *params,
                 struct sess *ss)
{
    struct proto_err e = {0};
    struct fb_cow *cow = ss->s->sb.cow;
    if (!cow || !strcmp(m->name, "workspace.reset")) {
        /* not_supported, or a reset (quick: it remounts an empty layer). */
        json_t *r = ss->ws ? NULL : cow_session_method(cow, m->name, params, &e);
        if (ss->ws)
            perr_set(&e, "EBUSY", "a workspace operation is running in this session");
        sess_record_ws(ss, m->name, params, r);
        if (r)
            send_result(c, id, r);
        else
            send_error(c, id, &e);
        return;
    }
    if (ss->ws) {
        perr_set(&e, "EBUSY",
                 "a workspace operation is running in this session (workspace.cancel stops it)");
        return send_error(c, id, &e);
    }
    struct wsjob *j = fb_xcalloc(1, sizeof *j);
    j->srv = c->srv;
    j->cow = cow;
    snprintf(j->method, sizeof j->method, "%s", m->name);
    j->params = json_deep_copy(params);
    j->ss = ss;
    j->o = op_new(OP_WS, c, id, ss);
    j->o->ws = j;
    j->next_report_ns = now_ns() + PROGRESS_NS;
    ss->ws = j;
    timers_note(ss);
    int r = pthread_create(&j->th, NULL, ws_main, j);
    if (r) {
        ss->ws = NULL;
        j->o->ws = NULL;
        send_errf(c, id, "internal", "cannot start a thread: %s", strerror(r));
        op_finish(j->o);
        json_decref(j->params);
        free(j);
    }
}

void m_workspace_cancel(struct conn *c, const struct method *m, json_t *id, json_t *params,
                        struct sess *ss)
{
    bool running = ss->ws != NULL;
    ws_cancel(ss->ws);
    send_result(c, id, json_pack("{s:b}", "cancelled", running));
}
