/* server_pool.c — the server's warm pool (server.h): sandboxes spawned
 * ahead of session.create, taken by a create whose policy they fit, refilled
 * on the worker, and their shape.
 *
 * The shape is the set of read-only tool binds a pool sandbox carries: the
 * programs a caller's PATH finds (a pyenv Python, an nvm node: toolchain.c)
 * are bound when a sandbox is made, so a pool of plain sandboxes fits only
 * callers whose programs are all in the system tree. A create that fits in
 * every other way but asks for other binds is spawned as usual, and the pool
 * then takes its shape: the sandboxes ready in another shape are released
 * once that session is made, and the refills carry the new binds, so the
 * next create from the same caller environment is served warm. Binds are
 * compared by source and place; a take still needs the caller's own policy
 * to ask for exactly those (made and checked for that caller, as a cold
 * spawn would). Callers that alternate between shapes are served cold. */
#include "server.h"

#include "sess_sandbox.h"

#include <string.h>

/* How long a refill waits after a take while the pool has more ready. */
#define POOL_DEFER_NS 100000000ull

void pool_take_or_spawn(struct conn *c, json_t *id, struct fb_policy *p,
                        struct session_params *sp, json_t *params, json_t *publish,
                        struct runreq *run)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    /* From the pool? (Not a walk of every session when it is empty.) */
    if (sp->pool_ok && srv->pool_ready > 0) {
        for (struct sess *ss = srv->sesss; ss; ss = ss->next) {
            if (!ss->in_pool || ss->dead || ss->s->state != SESS_POOL)
                continue;
            /* The caller's programs must be bound as this sandbox has them. */
            if (!tool_binds_equal(ss->s->pol.tool_binds, ss->s->pol.ntool_binds, p->tool_binds,
                                  p->ntool_binds))
                continue;
            /* The host ports first: a port in use leaves the pooled
             * sandbox untouched. */
            if (publish && ports_publish_all(ss, publish, &e) < 0) {
                ports_close(ss);
                policy_free(p);
                run_free(run);
                return send_error(c, id, &e);
            }
            if (session_adopt_limits(ss->s, p) < 0) {
                ports_close(ss);
                break; /* cannot change limits here: spawn */
            }
            ss->in_pool = false;
            srv->pool_ready--;
            struct fb_session *s = ss->s;
            policy_free(&s->pol);
            s->pol = *p;
            s->uid = c->uid;
            s->pooled = true;
            s->state = SESS_READY;
            json_decref(s->params);
            s->params = json_deep_copy(params);
            session_set_id(s);
            session_apply_params(s, sp);
            ports_start(ss);
            sess_log_created(ss);
            json_t *info = sess_info(ss, NULL);
            session_give_warnings(s, info);
            if (run)
                run_begin(ss, c, id, run, info);
            else
                send_result(c, id, info);
            /* While another sandbox is ready, the refill waits a little (or
             * until this session is released, release_done): spawning now
             * would compete for the CPUs with this session's first requests
             * (a one-shot run's exec and destroy). */
            if (srv->pool_ready && !srv->pool_defer_ns)
                srv->pool_defer_ns = now_ns() + POOL_DEFER_NS;
            else if (!srv->pool_ready)
                pool_refill(srv);
            return;
        }
    }
    /* A caller the pool would have fitted but for its programs: the pool
     * takes the shape of its binds once this session is made. */
    if (sp->pool_ok && !tool_binds_equal(srv->pool_binds, srv->npool_binds, p->tool_binds,
                                         p->ntool_binds)) {
        tool_binds_free(srv->pool_binds, srv->npool_binds);
        srv->pool_binds = NULL;
        srv->npool_binds = 0;
        struct fb_policy shape = {0};
        tool_binds_append(&shape, p->tool_binds, p->ntool_binds);
        srv->pool_binds = shape.tool_binds;
        srv->npool_binds = shape.ntool_binds;
        srv->pool_reshape = true;
    }
    struct fb_session *s = session_new();
    policy_free(&s->pol);
    s->pol = *p;
    s->uid = c->uid;
    s->state = SESS_STARTING;
    s->params = json_deep_copy(params);
    session_set_id(s);
    session_apply_params(s, sp);
    struct sess *ss = sess_new(srv, s);
    if (publish && ports_publish_all(ss, publish, &e) < 0) {
        sess_free(ss);
        run_free(run);
        return send_error(c, id, &e);
    }
    struct op *o = op_new(OP_CREATE, c, id, ss);
    o->pending = s;
    o->run = run;
    s->queue_key = (uintptr_t)c;
    worker_submit(s, WJ_SPAWN);
}

/* A pool sandbox was spawned (or failed). */
void pool_spawned(struct sess *ss)
{
    struct srv *srv = ss->srv;
    struct fb_session *s = ss->s;
    srv->pool_pending--;
    if (s->spawn_rc < 0 || srv->stopping) {
        if (s->spawn_rc < 0 && !srv->stopping) {
            fb_warn("pool: %s", s->spawn_err.msg);
            srv->pool_retry_ns = now_ns() + 2000000000ull;
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
    srv->pool_ready++;
    if (sess_watch(ss) < 0) {
        sess_broken(ss, "watching a pool sandbox failed");
        return;
    }
    if (srv->pool_reshape)
        pool_reshape(srv);
}

/* Release the ready pool sandboxes that are not of the pool's shape; the
 * refill brings ones that are. Called once the session that changed the
 * shape is made (spawn_done), so the refills do not hold up its spawn. */
void pool_reshape(struct srv *srv)
{
    srv->pool_reshape = false;
    for (struct sess *ss = srv->sesss; ss; ss = ss->next) {
        if (!ss->in_pool || ss->dead || ss->s->state != SESS_POOL)
            continue;
        if (tool_binds_equal(ss->s->pol.tool_binds, ss->s->pol.ntool_binds, srv->pool_binds,
                             srv->npool_binds))
            continue;
        srv->pool_ready--;
        ss->in_pool = false;
        ss->dying = true;
        sandbox_kill(&ss->s->sb);
        ss->s->state = SESS_DEAD;
        snprintf(ss->s->death, sizeof ss->s->death, "the pool changed shape");
        sess_release(ss);
    }
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        if (ss->in_pool && !ss->dead && ss->s->state == SESS_STARTING &&
            !tool_binds_equal(ss->s->pool_binds, ss->s->npool_binds, srv->pool_binds,
                              srv->npool_binds))
            srv->pool_reshape = true; /* again when it is ready */
    pool_refill(srv);
}

void pool_refill(struct srv *srv)
{
    srv->pool_defer_ns = 0;
    if (srv->stopping || srv->lim.pool <= 0 || now_ns() < srv->pool_retry_ns)
        return;
    while (srv->pool_ready + srv->pool_pending < srv->lim.pool) {
        if (fds_free(NULL, NULL) < FDS_PER_SESSION + FDS_RESERVE) {
            srv->pool_retry_ns = now_ns() + 2000000000ull; /* out of descriptors: later */
            return;
        }
        struct fb_session *s = session_new();
        /* Its policy is built by the worker (sess_sandbox.c), off this loop. */
        s->pool_policy = true;
        s->pool_nofile = srv->sandbox_nofile;
        /* Say what cannot be applied once, not at every refill. */
        s->pool_quiet = srv->pool_warned;
        srv->pool_warned = true;
        struct fb_policy shape = {0};
        tool_binds_append(&shape, srv->pool_binds, srv->npool_binds);
        s->pool_binds = shape.tool_binds;
        s->npool_binds = shape.ntool_binds;
        struct session_params sp = {0};
        sp.idle_ms = 1800000;
        session_apply_params(s, &sp);
        s->state = SESS_STARTING; /* SESS_POOL once spawned */
        s->uid = (uid_t)-1;
        struct sess *ss = sess_new(srv, s);
        ss->in_pool = true;
        srv->pool_pending++;
        worker_submit(s, WJ_SPAWN);
    }
}
