/* server_fork.c — session.fork (docs/protocol.md): a new session of the
 * same parameters whose home, /tmp and workspace layer start as copies of
 * the original's (sess_copy.h says what is copied and how). The fork is
 * built by the spawn worker like any session; the original stays as it was
 * and keeps working, and is not released before the copy from it is done,
 * even if it is destroyed meanwhile. */
#include "server.h"

#include "sess_copy.h"

void fork_spawned(struct sess *ss)
{
    struct sess *orig = ss->fork_parent;
    ss->fork_parent = NULL;
    if (orig->forking > 0)
        orig->forking--;
    if (!orig->forking && orig->release_after_fork) {
        orig->release_after_fork = false;
        sess_release(orig);
    }
}

void m_session_fork(struct conn *c, const struct method *m, json_t *id, json_t *params,
                    struct sess *ss)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    const char *label;
    if (pget_str(params, "label", &label, NULL, false, 256, &e) < 0)
        return send_error(c, id, &e);
    if (srv->stopping)
        return send_errf(c, id, "shutting_down", "the server is stopping");
    if (at_session_limit(srv, c->uid)) {
        perr_set(&e, "limit_exceeded", "at most %lld sessions per user", (long long)srv->lim.max_sessions);
        snprintf(e.limit, sizeof e.limit, "sessionsPerUid");
        return send_error(c, id, &e);
    }
    /* The same parameters, through the same checks as a create by this
     * caller (the server's rules may have changed since: they apply). */
    struct fb_policy p;
    struct session_params sp;
    bool foreign = c->uid != geteuid() && c->uid != 0;
    /* The secrets' values come from the original's policy (the params it
     * keeps have none), into the fork's own keeping, with new stand-ins. */
    json_t *orig_params = ss->s->params ? sess_secrets_refill(ss->s->params, &ss->s->pol)
                                        : json_object();
    int rc = session_policy_from_params(orig_params, foreign ? &srv->foreign : NULL, &p, &sp, &e);
    sess_secrets_wipe(orig_params);
    if (rc < 0) {
        policy_free(&p);
        json_decref(orig_params);
        return send_error(c, id, &e);
    }
    if (!p.limits.nofile)
        p.limits.nofile = srv->sandbox_nofile;
    /* As session.create: say so now rather than fail half-way on EMFILE. */
    if (fds_free(NULL, NULL) < FDS_PER_SESSION + FDS_RESERVE) {
        policy_free(&p);
        json_decref(orig_params);
        return send_out_of_fds(c, id, "no new session");
    }
    if (ss->ws) {
        /* A diff or commit of the layer is running on its thread. */
        policy_free(&p);
        json_decref(orig_params);
        return send_errf(c, id, "EBUSY", "a workspace operation is running in this session "
                                         "(workspace.cancel stops it)");
    }
    if (p.workspace && !p.cow) {
        policy_free(&p);
        json_decref(orig_params);
        return send_errf(c, id, "not_supported",
                         "session.fork copies the session's workspace layer: this session's "
                         "/workspace is the host directory %s itself (a session created with "
                         "\"cow\": true over it can be forked)", ss->s->pol.workspace);
    }
    struct fb_err err = {0};
    struct fb_fork *f = fork_prepare(&ss->s->sb, &p, &err);
    if (!f) {
        policy_free(&p);
        json_decref(orig_params);
        return send_errf(c, id, "internal", "%s", err.msg);
    }
    p.seed_scratch = true;
    struct fb_session *s = session_new();
    policy_free(&s->pol);
    s->pol = p;
    s->uid = c->uid;
    s->state = SESS_STARTING;
    s->params = orig_params; /* sp's strings point into it */
    s->fork = f;
    snprintf(s->forked_from, sizeof s->forked_from, "%s", ss->s->id);
    session_set_id(s);
    if (label)
        sp.label = label;
    else
        sp.label = ss->s->label;
    session_apply_params(s, &sp);
    struct sess *ns = sess_new(srv, s);
    ns->fork_parent = ss;
    ss->forking++;
    struct op *o = op_new(OP_CREATE, c, id, ns);
    o->pending = s;
    s->queue_key = (uintptr_t)c;
    worker_submit(s, WJ_SPAWN);
}
