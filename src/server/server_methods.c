/* server_methods.c — the dispatch table, made from the one method list
 * (methods.h), and the request line's way to its handler: parse, check the
 * id, find the method and the session it names, call. Also server.info. */
#include "server.h"

#include "methods.h"
#include "profile.h"

#include <string.h>

#define METHOD_ENTRY(name, fn, scope, arg) {name, fn, scope, arg},
static const struct method table[] = {FB_METHODS(METHOD_ENTRY)};
#undef METHOD_ENTRY

const struct method *server_method(const char *name)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(table); i++)
        if (!strcmp(table[i].name, name))
            return &table[i];
    return NULL;
}

void m_server_info(struct conn *c, const struct method *m, json_t *id, json_t *params,
                   struct sess *unused)
{
    struct srv *srv = c->srv;
    json_t *methods = json_array();
    for (size_t i = 0; proto_methods[i]; i++)
        json_array_append_new(methods, json_string(proto_methods[i]));
    /* The profiles this caller may ask for: another uid gets the owner's
     * --foreign-profiles. */
    json_t *profiles = json_array();
    if (c->uid != geteuid() && c->uid != 0) {
        for (size_t i = 0; i < srv->foreign.nprofiles; i++)
            json_array_append_new(profiles, json_string(srv->foreign.profiles[i]));
    } else {
        for (const char *const *n = profile_builtin_names(); n && *n; n++)
            json_array_append_new(profiles, json_string(*n));
    }
    json_t *r = json_object();
    json_object_set_new(r, "name", json_string("fluebox"));
    json_object_set_new(r, "version", json_string(FB_VERSION));
    json_object_set_new(r, "protocol", json_integer(FB_PROTO_VERSION));
    json_object_set_new(r, "pid", json_integer(getpid()));
    json_object_set_new(r, "uid", json_integer(geteuid()));
    json_object_set_new(r, "peerUid", json_integer(c->uid));
    json_object_set_new(r, "socket", json_string(srv->sock_path));
    json_object_set_new(r, "sessions", json_integer(sessions_of(srv, c->uid)));
    json_object_set_new(r, "pool", json_pack("{s:I, s:i, s:s}", "size", (json_int_t)srv->lim.pool,
                                             "ready", srv->pool_ready, "profile", FB_DEFAULT_PROFILE));
    json_object_set_new(r, "profiles", profiles);
    json_object_set_new(r, "methods", methods);
    json_t *lim = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "maxMessageBytes",
                            (json_int_t)srv->lim.max_message, "maxSessionsPerUid",
                            (json_int_t)srv->lim.max_sessions, "maxExecsPerSession",
                            (json_int_t)srv->lim.max_execs, "maxOutputBytes",
                            (json_int_t)srv->lim.max_output, "maxReadBytes",
                            (json_int_t)srv->lim.max_output, "maxConnections",
                            (json_int_t)srv->lim.max_conns);
    json_object_set_new(lim, "maxConnectionsPerUid", json_integer(srv->lim.max_conns_uid));
    json_object_set_new(lim, "memoryPerConnection", json_integer(srv->lim.conn_mem));
    json_object_set_new(lim, "memoryPerUid", json_integer(srv->lim.uid_mem));
    json_object_set_new(r, "limits", lim);
    send_result(c, id, r);
}

/* The session a request names, answering the request when it cannot go
 * on. */
static struct sess *named_session(struct conn *c, const struct method *m, json_t *id,
                                  json_t *params)
{
    struct proto_err e = {0};
    const char *sid;
    if (pget_str(params, "session", &sid, NULL, true, 64, &e) < 0) {
        send_error(c, id, &e);
        return NULL;
    }
    struct sess *ss = sess_find(c->srv, c->uid, sid);
    if (!ss || (ss->dying && m->scope != SCOPE_DYING)) {
        send_errf(c, id, "not_found", "no session %.64s", sid);
        return NULL;
    }
    if (m->scope != SCOPE_LIVE)
        return ss;
    if (ss->s->state == SESS_DEAD) {
        send_errf(c, id, "session_dead", "%s", ss->s->death[0] ? ss->s->death : "the session is gone");
        return NULL;
    }
    if (c->srv->stopping) {
        send_errf(c, id, "shutting_down", "the server is stopping");
        return NULL;
    }
    session_touch(ss->s);
    return ss;
}

/* The request's memory, against the budgets (server.h): 0 go on, 1 wait
 * (c->need says for what), -1 refused (answered). */
static int admit(struct conn *c, const struct method *m, json_t *id, json_t *params,
                 size_t linelen)
{
    struct srv *srv = c->srv;
    int64_t in = (int64_t)linelen;
    const char *key = m->fn == m_exec ? "stdin" : m->fn == m_file && m->arg == F_WRITE ? "data"
                                                                                     : NULL;
    int64_t need = 0;
    if (key) {
        /* Data that may be held as long as a command does not read it:
         * refused, not waited for. The line itself is counted already. */
        json_t *v = json_object_get(params, key);
        need = json_is_string(v) ? (int64_t)json_string_length(v) : 0;
        if (!need || !conn_over(c, need - in))
            return 0;
    } else if (m->fn == m_file && m->arg == F_READ) {
        need = file_read_reserve(srv, params);
        if (!conn_over(c, need))
            return 0;
        if (conn_busy(c)) {
            c->need = need; /* it fits once something of this connection's is done */
            return 1;
        }
        int64_t uid_room = srv->lim.uid_mem - (c->ua ? c->ua->mem : 0);
        if (need <= uid_room)
            return 0; /* alone on its connection: may pass the connection's budget */
    } else {
        return 0;
    }
    struct proto_err e = {0};
    bool uid = c->ua && srv->lim.uid_mem - c->ua->mem < srv->lim.conn_mem - c->mem;
    perr_set(&e, "limit_exceeded",
             "the server holds %lld MiB for this %s already; %lld more bytes do not fit in its "
             "%lld MiB budget (read the replies, or wait for requests in flight)",
             (long long)((uid ? c->ua->mem : c->mem) >> 20), uid ? "user" : "connection",
             (long long)need, (long long)((uid ? srv->lim.uid_mem : srv->lim.conn_mem) >> 20));
    snprintf(e.limit, sizeof e.limit, "%s", uid ? "memoryPerUid" : "memoryPerConnection");
    send_error(c, id, &e);
    return -1;
}

int handle_line(struct conn *c, const char *line, size_t len)
{
    struct proto_req req;
    struct proto_err e = {0};
    if (proto_parse_request(line, len, &req, &e) < 0) {
        send_error(c, req.id, &e);
        proto_req_free(&req);
        return 0;
    }
    for (struct op *o = c->ops; o; o = o->cnext) {
        if (json_equal(o->id, req.id)) {
            send_errf(c, req.id, "invalid_request", "id is already in use by a request in flight");
            proto_req_free(&req);
            return 0;
        }
    }
    /* proto_parse_request accepts only listed methods, and every listed
     * method has an entry. */
    const struct method *m = server_method(req.method);
    struct sess *ss = NULL;
    int a = 0;
    if (!m)
        send_errf(c, req.id, "method_not_found", "unknown method \"%.64s\"", req.method);
    else if ((a = admit(c, m, req.id, req.params, len)) != 0)
        ; /* waits, or was refused */
    else if (m->scope == SCOPE_NONE || (ss = named_session(c, m, req.id, req.params)))
        m->fn(c, m, req.id, req.params, ss);
    /* A request that may carry a secret's real value: no copy of it stays
     * in the server's memory (its JSON and its line are wiped). */
    if (m && (m->fn == m_session_create || m->fn == m_session_grant)) {
        sess_secrets_wipe(req.params);
        explicit_bzero((char *)line, len);
    }
    proto_req_free(&req);
    return a > 0;
}
