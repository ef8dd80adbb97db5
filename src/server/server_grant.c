/* server_grant.c — session.grant and session.revoke (docs/protocol.md 4.20,
 * docs/secrets.md "Sessions"): the owner's run-time changes to a live
 * session's network relay — an allowed name, an HTTP rule, a secret binding
 * — optionally for a time (egress_grant / egress_revoke, the engine's, which
 * keep the expiry and write the net log's line, so the session's record has
 * it). Only the session's owner reaches a session (server_methods.c); nothing
 * inside the sandbox can reach the server's socket. The server's log gets a
 * session.grant / session.revoke line; no value ever goes into a log line,
 * an error or an answer, and the request's copy is wiped. */
#include "server.h"

#include "egress.h"

#include <string.h>

/* ---- session.grant / session.revoke ---- */

static const struct {
    const char *kind, *opt;
    int gk;
} grant_kinds[] = {
    {"allowNet", "allow-net", FB_GRANT_ALLOW},
    {"allowHttp", "allow-http", FB_GRANT_HTTP},
    {"secret", "secret", FB_GRANT_SECRET},
};

/* The session's policy keeps its created secrets' values too (session.fork
 * takes them from there): it follows the relay's copy. A new value for one
 * of them replaces it; a secret revoked whole is wiped there as well, so a
 * fork made later leaves it out. */
static void policy_copy_follows(struct fb_policy *p, bool grant, const char *spec,
                                const char *value, size_t vlen)
{
    size_t nl = strcspn(spec, ":");
    for (size_t i = 0; i < p->nsecrets; i++) {
        struct fb_secret *sc = &p->secrets[i];
        if (strlen(sc->name) != nl || strncmp(sc->name, spec, nl))
            continue;
        if (grant && value) {
            secret_value_free(sc->value);
            sc->value = secret_value_new(value, vlen);
        } else if (!grant && !spec[nl]) {
            secret_value_free(sc->value);
            sc->value = NULL;
        }
    }
}

static int64_t wall_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static void grant_or_revoke(struct conn *c, json_t *id, json_t *params, struct sess *ss,
                            bool grant)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    const char *kind, *spec, *value;
    size_t vlen;
    int64_t ttl = 0;
    if (pget_str(params, "kind", &kind, NULL, true, 32, &e) < 0 ||
        pget_str(params, "spec", &spec, NULL, true, 4095, &e) < 0 ||
        pget_bytes(params, "value", &value, &vlen, false, &e) < 0 ||
        (grant && pget_int(params, "ttlMs", &ttl, 0, 0, INT64_MAX / 2000000, &e) < 0))
        goto fail;
    size_t k = 0;
    while (k < FB_ARRAY_LEN(grant_kinds) && strcmp(grant_kinds[k].kind, kind))
        k++;
    if (k == FB_ARRAY_LEN(grant_kinds)) {
        perr_param(&e, "kind", "kind must be \"allowNet\" (a name or pattern), \"allowHttp\" (an "
                               "HTTP rule) or \"secret\" (NAME:HOST[,HOST...])");
        goto fail;
    }
    if (value && grant_kinds[k].gk != FB_GRANT_SECRET) {
        perr_param(&e, "value", "value goes only with kind \"secret\"");
        goto fail;
    }
    if (value && (!vlen || vlen > SECRET_VALUE_MAX || strlen(value) != vlen)) {
        perr_param(&e, "value", "value must be 1 to %d bytes without NUL", SECRET_VALUE_MAX);
        goto fail;
    }
    if (!grant && value) {
        perr_param(&e, "value", "session.revoke takes no value");
        goto fail;
    }
    bool foreign = c->uid != geteuid() && c->uid != 0;
    if (session_check_field(foreign ? &srv->foreign : NULL, "kind", grant_kinds[k].opt, &e) < 0)
        goto fail;
    struct fb_egress *eg = ss->s->sb.egress;
    const struct fb_policy *p = &ss->s->pol;
    if (!eg || p->net != FB_NET_ALLOW) {
        perr_set(&e, "not_supported",
                 "%s changes the session's network relay: this session has network \"%s\" and "
                 "no relay (create it with an allowlist, network \"allow\")",
                 grant ? "session.grant" : "session.revoke",
                 p->net == FB_NET_HOST ? "host" : "none");
        goto fail;
    }
    struct fb_grant g = {.kind = grant_kinds[k].gk, .spec = spec, .value = value,
                         .value_len = vlen, .ttl_ms = ttl};
    struct fb_err err = {0};
    int rc = grant ? egress_grant(eg, &g, &err) : egress_revoke(eg, &g, &err);
    if (rc < 0) {
        perr_param(&e, "spec", "%s", err.msg);
        goto fail;
    }
    if (g.kind == FB_GRANT_SECRET)
        policy_copy_follows(&ss->s->pol, grant, spec, value, vlen);
    json_t *r = json_pack("{s:s, s:s}", "kind", kind, "spec", spec);
    json_t *logf = json_pack("{s:s, s:s}", "kind", kind, "spec", spec);
    if (grant) {
        int64_t exp = ttl ? wall_now_ms() + ttl : 0;
        json_object_set_new(r, "ttlMs", json_integer(ttl));
        json_object_set_new(r, "expiresAt", exp ? json_integer(exp) : json_null());
        json_object_set_new(logf, "ttlMs", json_integer(ttl));
        /* A secret: its stand-in (a new name's was made now; the session's
         * environment was made at its start, so the caller passes it on). */
        if (g.kind == FB_GRANT_SECRET) {
            char name[256], buf[256];
            snprintf(name, sizeof name, "%.*s", (int)strcspn(spec, ":"), spec);
            const char *st = egress_standin(eg, name, buf, sizeof buf);
            if (st)
                json_object_set_new(r, "standin", json_string(st));
        }
    }
    srv_log_event(ss, grant ? "grant" : "revoke", logf);
    sess_secrets_wipe(params);
    send_result(c, id, r);
    return;
fail:
    sess_secrets_wipe(params);
    send_error(c, id, &e);
}

void m_session_grant(struct conn *c, const struct method *m, json_t *id, json_t *params,
                     struct sess *ss)
{
    grant_or_revoke(c, id, params, ss, true);
}

void m_session_revoke(struct conn *c, const struct method *m, json_t *id, json_t *params,
                      struct sess *ss)
{
    grant_or_revoke(c, id, params, ss, false);
}
