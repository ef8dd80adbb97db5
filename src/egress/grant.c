/* grant.c — the relay's rules that may change while it runs: the secrets
 * and their hosts, the HTTP rules, names allowed or revoked after the start
 * (egress_grant / egress_revoke, from the server's thread; everything else
 * here is read by the loop and the inspecting threads). One mutex guards
 * the table; the values stay in locked memory (secrets.c) and are only
 * read under it. Entries with a time limit stop counting when it passes. */
#include "egress_int.h"

#include "http1.h"
#include "tls_ca.h"

#include <string.h>
#include <time.h>

struct rsecret {
    char *name;
    struct fb_allow *hosts;
    size_t nhosts;
    char *standin;
    struct fb_secret_value *value; /* NULL: revoked */
    int64_t expires_ms;
};

struct rallow {
    struct fb_allow a;
    int64_t expires_ms;
};

struct egress_rules {
    pthread_mutex_t mu;
    struct rsecret *sec;
    size_t nsec;
    struct fb_http_rule *http;
    size_t nhttp;
    struct rallow *allow;   /* granted */
    size_t nallow;
    struct fb_allow *gone;  /* --allow-net patterns revoked */
    size_t ngone;
};

int64_t egress_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool live(int64_t expires_ms, int64_t now)
{
    return !expires_ms || now < expires_ms;
}

static void allow_copy(struct fb_allow *d, const struct fb_allow *s)
{
    *d = *s;
    d->name = fb_xstrdup(s->name);
}

static bool allow_eq(const struct fb_allow *a, const struct fb_allow *b)
{
    return a->wildcard == b->wildcard && a->port == b->port && !strcmp(a->name, b->name);
}

static void rsecret_free(struct rsecret *s)
{
    free(s->name);
    for (size_t i = 0; i < s->nhosts; i++)
        free(s->hosts[i].name);
    free(s->hosts);
    free(s->standin);
    secret_value_free(s->value);
}

void rules_init(struct fb_egress *e)
{
    struct egress_rules *r = fb_xcalloc(1, sizeof *r);
    pthread_mutex_init(&r->mu, NULL);
    const struct fb_policy *p = e->p;
    r->sec = fb_xcalloc(p->nsecrets + 1, sizeof *r->sec);
    for (size_t i = 0; i < p->nsecrets; i++) {
        const struct fb_secret *s = &p->secrets[i];
        size_t vl;
        const uint8_t *v = secret_value(s, &vl);
        if (!v || !s->standin)
            continue; /* not loaded (no values for this sandbox) */
        struct rsecret *d = &r->sec[r->nsec++];
        d->name = fb_xstrdup(s->name);
        d->standin = fb_xstrdup(s->standin);
        d->value = secret_value_new(v, vl);
        d->expires_ms = s->expires_ms;
        d->hosts = fb_xcalloc(s->nhosts, sizeof *d->hosts);
        for (size_t k = 0; k < s->nhosts; k++)
            allow_copy(&d->hosts[d->nhosts++], &s->hosts[k]);
    }
    r->http = fb_xcalloc(p->nhttp_rules + 1, sizeof *r->http);
    for (size_t i = 0; i < p->nhttp_rules; i++) {
        r->http[i] = p->http_rules[i];
        r->http[i].host.name = fb_xstrdup(p->http_rules[i].host.name);
        r->http[i].prefix = fb_xstrdup(p->http_rules[i].prefix);
    }
    r->nhttp = p->nhttp_rules;
    e->rules = r;
}

void rules_free(struct fb_egress *e)
{
    struct egress_rules *r = e->rules;
    if (!r)
        return;
    for (size_t i = 0; i < r->nsec; i++)
        rsecret_free(&r->sec[i]);
    free(r->sec);
    for (size_t i = 0; i < r->nhttp; i++) {
        free(r->http[i].host.name);
        free(r->http[i].prefix);
    }
    free(r->http);
    for (size_t i = 0; i < r->nallow; i++)
        free(r->allow[i].a.name);
    free(r->allow);
    for (size_t i = 0; i < r->ngone; i++)
        free(r->gone[i].name);
    free(r->gone);
    pthread_mutex_destroy(&r->mu);
    free(r);
    e->rules = NULL;
}

/* ---- questions the loop asks ---- */

static bool allowed_locked(const struct fb_egress *e, const char *name, uint16_t port, int64_t now)
{
    const struct egress_rules *r = e->rules;
    for (size_t i = 0; i < r->nallow; i++)
        if (live(r->allow[i].expires_ms, now) && policy_pattern_match(&r->allow[i].a, name, port))
            return true;
    for (size_t i = 0; i < e->p->nallow; i++) {
        const struct fb_allow *a = &e->p->allow[i];
        if (!policy_pattern_match(a, name, port))
            continue;
        bool gone = false;
        for (size_t k = 0; k < r->ngone && !gone; k++)
            gone = allow_eq(&r->gone[k], a);
        if (!gone)
            return true;
    }
    return false;
}

bool egress_allowed(struct fb_egress *e, const char *name, uint16_t port)
{
    if (!e->rules)
        return policy_allow_match(e->p, name, port) != NULL;
    pthread_mutex_lock(&e->rules->mu);
    bool ok = allowed_locked(e, name, port, egress_now_ms());
    pthread_mutex_unlock(&e->rules->mu);
    return ok;
}

static bool inspects_locked(const struct egress_rules *r, const char *name, uint16_t port,
                            int64_t now)
{
    for (size_t i = 0; i < r->nsec; i++) {
        if (!r->sec[i].value || !live(r->sec[i].expires_ms, now))
            continue;
        for (size_t k = 0; k < r->sec[i].nhosts; k++)
            if (policy_pattern_match(&r->sec[i].hosts[k], name, port))
                return true;
    }
    for (size_t i = 0; i < r->nhttp; i++)
        if (live(r->http[i].expires_ms, now) && policy_pattern_match(&r->http[i].host, name, port))
            return true;
    return false;
}

bool egress_inspects(struct fb_egress *e, const char *name, uint16_t port)
{
    if (!e->rules)
        return false;
    pthread_mutex_lock(&e->rules->mu);
    bool yes = inspects_locked(e->rules, name, port, egress_now_ms());
    pthread_mutex_unlock(&e->rules->mu);
    return yes;
}

/* ---- one request ---- */

static bool rule_allows(const struct fb_http_rule *rule, const struct http_head *h)
{
    if (rule->methods != FB_HTTP_ANY) {
        static const char *const names[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
                                            "OPTIONS"};
        bool ok = false;
        for (size_t b = 0; b < FB_ARRAY_LEN(names); b++)
            if ((rule->methods & (1u << b)) && !strcmp(h->method, names[b]))
                ok = true;
        if (!ok)
            return false;
    }
    return http1_prefix_match(h->target, h->tlen, rule->prefix);
}

int rules_request(struct fb_egress *e, const char *name, uint16_t port, const struct http_head *h,
                  struct rules_verdict *v)
{
    memset(v, 0, sizeof *v);
    struct egress_rules *r = e->rules;
    pthread_mutex_lock(&r->mu);
    int64_t now = egress_now_ms();
    int rc = -1;
    /* HTTP rules: a host with any gets only what one of them allows. */
    bool has_rules = false, ok = false;
    for (size_t i = 0; i < r->nhttp; i++) {
        if (!live(r->http[i].expires_ms, now) || !policy_pattern_match(&r->http[i].host, name, port))
            continue;
        has_rules = true;
        ok |= rule_allows(&r->http[i], h);
    }
    if (has_rules && !ok) {
        snprintf(v->why, sizeof v->why,
                 "no --allow-http rule for %s allows %s %.*s", name, h->method,
                 (int)(h->tlen < 200 ? h->tlen : 200), h->target);
        goto out;
    }
    if (has_rules && http1_path_unclear(h->target, h->tlen)) {
        snprintf(v->why, sizeof v->why,
                 "the path has dot segments, an encoded dot, slash or backslash, or //: "
                 "--allow-http rules for %s only match plain paths", name);
        goto out;
    }
    /* Secrets: bound to this host (swapped in) or not (refused). */
    struct http_secret *hs = fb_xcalloc(r->nsec + 1, sizeof *hs);
    for (size_t i = 0; i < r->nsec; i++) {
        const struct rsecret *s = &r->sec[i];
        hs[i].name = s->name;
        hs[i].standin = s->standin;
        bool bound = false;
        if (s->value && live(s->expires_ms, now))
            for (size_t k = 0; k < s->nhosts && !bound; k++)
                bound = policy_pattern_match(&s->hosts[k], name, port);
        if (bound) {
            hs[i].value = secret_value_bytes(s->value, &hs[i].vlen);
        }
    }
    uint64_t used = 0;
    int bad = http1_rewrite(h, hs, r->nsec, true, &v->head, &v->head_len, &used);
    if (bad) {
        snprintf(v->why, sizeof v->why,
                 "the request carries the stand-in of secret %s, which is not bound to %s "
                 "(--secret %s:HOSTS)", hs[bad - 1].name, name, hs[bad - 1].name);
        free(hs);
        goto out;
    }
    /* For the body and the response: the stand-ins that must not pass,
     * and the values that must not come back. */
    size_t ul = 0;
    v->unbound = fb_xcalloc(r->nsec + 1, sizeof *v->unbound);
    v->unbound_names = fb_xcalloc(r->nsec + 1, sizeof *v->unbound_names);
    v->values = fb_xcalloc(r->nsec + 1, sizeof *v->values);
    for (size_t i = 0; i < r->nsec; i++) {
        if (!hs[i].value) {
            v->unbound_names[v->nunbound] = fb_xstrdup(hs[i].name);
            v->unbound[v->nunbound++] = fb_xstrdup(hs[i].standin);
            continue;
        }
        if (used & (1ull << (i < 64 ? i : 63))) {
            ul += (size_t)snprintf(v->secrets + ul, ul < sizeof v->secrets ? sizeof v->secrets - ul : 0,
                                   "%s%s", ul ? "," : "", hs[i].name);
            v->values[v->nvalues++] = secret_value_new(hs[i].value, hs[i].vlen);
        }
    }
    free(hs);
    rc = 0;
out:
    pthread_mutex_unlock(&r->mu);
    return rc;
}

void rules_verdict_free(struct rules_verdict *v)
{
    if (v->head) {
        explicit_bzero(v->head, v->head_len);
        free(v->head);
    }
    for (size_t i = 0; i < v->nunbound; i++) {
        free(v->unbound[i]);
        free(v->unbound_names[i]);
    }
    free(v->unbound);
    free(v->unbound_names);
    for (size_t i = 0; i < v->nvalues; i++)
        secret_value_free(v->values[i]);
    free(v->values);
    memset(v, 0, sizeof *v);
}

/* ---- grants ---- */

static bool has_listener(const struct fb_egress *e, uint16_t port)
{
    for (size_t i = 0; i < e->nlis; i++)
        if (e->lis[i].port == port)
            return true;
    return false;
}

static int check_host(struct fb_egress *e, const struct fb_allow *a, const char *what,
                      struct fb_err *err)
{
    int64_t now = egress_now_ms();
    bool covered = policy_allow_covers(e->p, a);
    for (size_t i = 0; i < e->rules->nallow && !covered; i++)
        covered = live(e->rules->allow[i].expires_ms, now) && allow_eq(&e->rules->allow[i].a, a);
    if (!covered)
        return fb_errf(err, FB_EXIT_SETUP, "%s: %s%s is not an allowed name (grant it first)",
                       what, a->wildcard ? "*." : "", a->name);
    if (!e->ca)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s: this sandbox has no per-run CA (create it with secrets, HTTP rules "
                       "or tls_ca)", what);
    if (!tls_ca_covers(e->ca, a->name))
        return fb_errf(err, FB_EXIT_SETUP, "%s: %s is outside the names the per-run CA may sign for",
                       what, a->name);
    return 0;
}

static int grant_secret(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err)
{
    struct egress_rules *r = e->rules;
    struct fb_secret s;
    if (policy_parse_secret(g->spec, &s, err) < 0)
        return -1;
    int rc = -1;
    if (s.file) {
        fb_errf(err, FB_EXIT_SETUP, "grant secret %s: the value comes with the grant, not a file",
                s.name);
        goto out;
    }
    if (!g->value || !g->value_len || g->value_len > 65536) {
        fb_errf(err, FB_EXIT_SETUP, "grant secret %s: no value (or over 64 KiB)", s.name);
        goto out;
    }
    for (size_t i = 0; i < g->value_len; i++)
        if ((unsigned char)g->value[i] < 0x20 || g->value[i] == 0x7f) {
            fb_errf(err, FB_EXIT_SETUP, "grant secret %s: the value has a control character",
                    s.name);
            goto out;
        }
    for (size_t k = 0; k < s.nhosts; k++)
        if (check_host(e, &s.hosts[k], "grant secret", err) < 0)
            goto out;
    struct rsecret *d = NULL;
    for (size_t i = 0; i < r->nsec && !d; i++)
        if (!strcmp(r->sec[i].name, s.name))
            d = &r->sec[i];
    if (!d) {
        r->sec = fb_xrealloc(r->sec, (r->nsec + 1) * sizeof *r->sec);
        d = &r->sec[r->nsec++];
        memset(d, 0, sizeof *d);
        d->name = fb_xstrdup(s.name);
        d->standin = secret_standin_new();
    }
    secret_value_free(d->value);
    d->value = secret_value_new(g->value, g->value_len);
    for (size_t i = 0; i < d->nhosts; i++)
        free(d->hosts[i].name);
    free(d->hosts);
    d->hosts = fb_steal_ptr(s.hosts);
    d->nhosts = s.nhosts;
    s.nhosts = 0;
    d->expires_ms = g->ttl_ms > 0 ? egress_now_ms() + g->ttl_ms : 0;
    rc = 0;
out:
    policy_secret_free(&s);
    return rc;
}

static int grant_locked(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err)
{
    struct egress_rules *r = e->rules;
    int64_t exp = g->ttl_ms > 0 ? egress_now_ms() + g->ttl_ms : 0;
    if (g->kind == FB_GRANT_ALLOW) {
        struct fb_allow a;
        if (policy_parse_allow(g->spec, "grant allow", &a, err) < 0)
            return -1;
        if (a.port ? !has_listener(e, a.port) : !(has_listener(e, 80) && has_listener(e, 443))) {
            free(a.name);
            return fb_errf(err, FB_EXIT_SETUP,
                           "grant allow %s: the sandbox has no listener on that port (only the "
                           "ports allowed at its start can be granted)", g->spec);
        }
        r->allow = fb_xrealloc(r->allow, (r->nallow + 1) * sizeof *r->allow);
        r->allow[r->nallow++] = (struct rallow){a, exp};
        for (size_t i = 0; i < r->ngone; i++)
            if (allow_eq(&r->gone[i], &a)) {
                free(r->gone[i].name);
                r->gone[i] = r->gone[--r->ngone];
                break;
            }
        return 0;
    }
    if (g->kind == FB_GRANT_HTTP) {
        struct fb_http_rule h;
        if (policy_parse_http_rule(g->spec, &h, err) < 0)
            return -1;
        if (check_host(e, &h.host, "grant http", err) < 0) {
            free(h.host.name);
            free(h.prefix);
            return -1;
        }
        h.expires_ms = exp;
        r->http = fb_xrealloc(r->http, (r->nhttp + 1) * sizeof *r->http);
        r->http[r->nhttp++] = h;
        return 0;
    }
    return grant_secret(e, g, err);
}

int egress_grant(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err)
{
    if (!e || !e->rules)
        return fb_errf(err, FB_EXIT_SETUP, "this sandbox has no filtered network to grant to");
    pthread_mutex_lock(&e->rules->mu);
    int rc = grant_locked(e, g, err);
    pthread_mutex_unlock(&e->rules->mu);
    if (rc == 0)
        egress_queue_grant(e, "grant", g);
    return rc;
}

static int revoke_locked(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err)
{
    struct egress_rules *r = e->rules;
    if (g->kind == FB_GRANT_ALLOW) {
        struct fb_allow a;
        if (policy_parse_allow(g->spec, "revoke allow", &a, err) < 0)
            return -1;
        bool found = false;
        for (size_t i = 0; i < r->nallow;) {
            if (allow_eq(&r->allow[i].a, &a)) {
                free(r->allow[i].a.name);
                r->allow[i] = r->allow[--r->nallow];
                found = true;
            } else {
                i++;
            }
        }
        for (size_t i = 0; i < e->p->nallow; i++)
            if (allow_eq(&e->p->allow[i], &a)) {
                found = true;
                r->gone = fb_xrealloc(r->gone, (r->ngone + 1) * sizeof *r->gone);
                allow_copy(&r->gone[r->ngone++], &a);
                break;
            }
        free(a.name);
        return found ? 0 : fb_errf(err, FB_EXIT_SETUP, "revoke allow %s: not allowed", g->spec);
    }
    if (g->kind == FB_GRANT_HTTP) {
        struct fb_http_rule h;
        if (policy_parse_http_rule(g->spec, &h, err) < 0)
            return -1;
        bool found = false;
        for (size_t i = 0; i < r->nhttp;) {
            struct fb_http_rule *x = &r->http[i];
            if (x->methods == h.methods && allow_eq(&x->host, &h.host) &&
                !strcmp(x->prefix, h.prefix)) {
                free(x->host.name);
                free(x->prefix);
                *x = r->http[--r->nhttp];
                found = true;
            } else {
                i++;
            }
        }
        free(h.host.name);
        free(h.prefix);
        return found ? 0 : fb_errf(err, FB_EXIT_SETUP, "revoke http %s: no such rule", g->spec);
    }
    /* A secret: "NAME" (all of it) or "NAME:HOSTS" (those hosts). */
    size_t nl = strcspn(g->spec, ":");
    struct rsecret *d = NULL;
    for (size_t i = 0; i < r->nsec && !d; i++)
        if (strlen(r->sec[i].name) == nl && !strncmp(r->sec[i].name, g->spec, nl))
            d = &r->sec[i];
    if (!d || !d->value)
        return fb_errf(err, FB_EXIT_SETUP, "revoke secret %.*s: no such secret", (int)nl, g->spec);
    if (!g->spec[nl]) {
        secret_value_free(d->value); /* wiped; the stand-in stays known (refused) */
        d->value = NULL;
        return 0;
    }
    struct fb_secret s;
    if (policy_parse_secret(g->spec, &s, err) < 0)
        return -1;
    for (size_t k = 0; k < s.nhosts; k++)
        for (size_t i = 0; i < d->nhosts;) {
            if (allow_eq(&d->hosts[i], &s.hosts[k])) {
                free(d->hosts[i].name);
                d->hosts[i] = d->hosts[--d->nhosts];
            } else {
                i++;
            }
        }
    policy_secret_free(&s);
    return 0;
}

int egress_revoke(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err)
{
    if (!e || !e->rules)
        return fb_errf(err, FB_EXIT_SETUP, "this sandbox has no filtered network");
    pthread_mutex_lock(&e->rules->mu);
    int rc = revoke_locked(e, g, err);
    pthread_mutex_unlock(&e->rules->mu);
    if (rc == 0)
        egress_queue_grant(e, "revoke", g);
    return rc;
}

const char *egress_standin(struct fb_egress *e, const char *name, char *buf, size_t cap)
{
    if (!e || !e->rules)
        return NULL;
    const char *res = NULL;
    pthread_mutex_lock(&e->rules->mu);
    for (size_t i = 0; i < e->rules->nsec; i++)
        if (!strcmp(e->rules->sec[i].name, name)) {
            snprintf(buf, cap, "%s", e->rules->sec[i].standin);
            res = buf;
        }
    pthread_mutex_unlock(&e->rules->mu);
    return res;
}
