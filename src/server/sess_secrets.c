/* sess_secrets.c — credentials and HTTP rules of sessions (issue 24,
 * docs/secrets.md "Sessions", docs/protocol.md 4.1 and 4.20):
 *
 *  - session.create's "secrets" (each with the real value, which the client
 *    read from its own environment or file: the server never reads its own
 *    environment for a client), "allowHttp" and "upstreamCa", into the
 *    session's policy (policy_add_secret, policy_add_http_rule,
 *    secrets_load: the engine's, src/policy and src/egress);
 *  - (session.grant / session.revoke, the run-time changes: server_grant.c).
 *
 * A real value is kept only where the engine keeps it (struct
 * fb_secret_value). The copies the protocol brings (the request's JSON, its
 * line) are wiped as soon as they are loaded, and the params a session
 * keeps (for session.fork) never hold them: a fork takes its values from the
 * original's policy. No value is ever put in a log line, an error message or
 * an answer. */
#include "server.h"

#include <ctype.h>
#include <string.h>

#define SECRETS_MAX 64

/* Overwrite a JSON string's bytes (we own the object: a request's params
 * or a copy of them). */
static void wipe_string(json_t *v)
{
    if (json_is_string(v))
        explicit_bzero((char *)json_string_value(v), json_string_length(v));
}

void sess_secrets_wipe(json_t *params)
{
    json_t *a = json_object_get(params, "secrets"), *it;
    size_t i;
    json_array_foreach(a, i, it)
    {
        if (json_is_object(it)) {
            wipe_string(json_object_get(it, "value"));
            json_object_del(it, "value");
        }
    }
    json_t *v = json_object_get(params, "value");
    wipe_string(v);
    if (v)
        json_object_del(params, "value");
}

static bool var_name_ok(const char *s)
{
    if (!*s || isdigit((unsigned char)*s))
        return false;
    for (; *s; s++)
        if (!isalnum((unsigned char)*s) && *s != '_')
            return false;
    return true;
}

/* One element of "secrets": name, hosts (may be absent: a value for a
 * secret the profile names), value. */
static int one_secret(json_t *it, size_t i, struct fb_policy *p, struct proto_err *e)
{
    char param[64];
    snprintf(param, sizeof param, "secrets[%zu]", i);
    if (!json_is_object(it))
        return perr_param(e, param, "%s must be an object {\"name\", \"hosts\", \"value\"}", param);
    json_t *name = json_object_get(it, "name"), *hosts = json_object_get(it, "hosts"),
           *value = json_object_get(it, "value");
    if (!json_is_string(name) || !var_name_ok(json_string_value(name)) ||
        json_string_length(name) > 128)
        return perr_param(e, param, "%s.name must be a variable name ([A-Za-z_][A-Za-z0-9_]*)",
                          param);
    const char *n = json_string_value(name);
    if (!json_is_string(value))
        return perr_param(e, param, "%s.value (the real value of %s) must be a string", param, n);
    size_t vl = json_string_length(value);
    if (!vl)
        return perr_param(e, param, "secret %s: its value is empty", n);
    if (vl > SECRET_VALUE_MAX)
        return perr_param(e, param, "secret %s: its value is longer than %d bytes", n,
                          SECRET_VALUE_MAX);
    if (strlen(json_string_value(value)) != vl)
        return perr_param(e, param, "secret %s: its value contains a NUL character", n);
    if (!hosts || json_is_null(hosts))
        return 0; /* a value for a secret the profile names */
    if (!json_is_array(hosts) || !json_array_size(hosts))
        return perr_param(e, param, "secret %s: hosts must be a non-empty array of host patterns",
                          n);
    char *spec = fb_xasprintf("%s:", n);
    size_t k;
    json_t *h;
    json_array_foreach(hosts, k, h)
    {
        const char *hs = json_string_value(h);
        if (!hs || !*hs || strlen(hs) != json_string_length(h) || strchr(hs, ',')) {
            free(spec);
            return perr_param(e, param, "secret %s: hosts[%zu] must be one host pattern", n, k);
        }
        char *more = fb_xasprintf("%s%s%s", spec, k ? "," : "", hs);
        free(spec);
        spec = more;
    }
    struct fb_err err = {0};
    int rc = policy_add_secret(p, spec, &err);
    free(spec);
    if (rc < 0)
        return perr_param(e, param, "%s", err.msg);
    return 0;
}

int sess_secret_fields(json_t *params, const struct foreign_rules *r, struct fb_policy *p,
                       struct proto_err *e)
{
    json_t *secrets = json_object_get(params, "secrets"), *rules, *it;
    const char *ca;
    if (pget_strarray(params, "allowHttp", &rules, true, e) < 0 ||
        pget_str(params, "upstreamCa", &ca, NULL, false, 4095, e) < 0)
        return -1;
    size_t i;
    if (secrets && !json_is_null(secrets)) {
        if (!json_is_array(secrets))
            return perr_param(e, "secrets", "secrets must be an array of {\"name\", \"hosts\", "
                                            "\"value\"}");
        if (json_array_size(secrets) > SECRETS_MAX)
            return perr_param(e, "secrets", "at most %d secrets", SECRETS_MAX);
        if (json_array_size(secrets) && session_check_field(r, "secrets", "secret", e) < 0)
            return -1;
        json_array_foreach(secrets, i, it)
        {
            if (one_secret(it, i, p, e) < 0)
                return -1;
        }
    }
    if (json_array_size(rules)) {
        if (session_check_field(r, "allowHttp", "allow-http", e) < 0)
            return -1;
        struct fb_err err = {0};
        json_array_foreach(rules, i, it)
        {
            if (policy_add_http_rule(p, json_string_value(it), &err) < 0)
                return perr_param(e, "allowHttp", "%s", err.msg);
        }
    }
    if (ca) {
        if (session_check_field(r, "upstreamCa", "upstream-ca", e) < 0)
            return -1;
        if (ca[0] != '/')
            return perr_param(e, "upstreamCa", "upstreamCa must be an absolute host path");
        struct fb_err err = {0};
        if (policy_set_upstream_ca(p, ca, &err) < 0)
            return perr_param(e, "upstreamCa", "%s", err.msg);
    }
    return 0;
}

int sess_secrets_load(json_t *params, struct fb_policy *p, struct proto_err *e)
{
    if (!p->nsecrets)
        return 0;
    json_t *secrets = json_object_get(params, "secrets"), *it;
    size_t n = json_array_size(secrets), i;
    char **envp = fb_xcalloc(n + 1, sizeof *envp);
    size_t k = 0;
    json_array_foreach(secrets, i, it)
    {
        const char *name = json_string_value(json_object_get(it, "name"));
        json_t *v = json_object_get(it, "value");
        size_t nl = strlen(name), vl = json_string_length(v);
        char *kv = fb_xmalloc(nl + vl + 2);
        memcpy(kv, name, nl);
        kv[nl] = '=';
        memcpy(kv + nl + 1, json_string_value(v), vl + 1);
        envp[k++] = kv;
    }
    struct fb_err err = {0};
    int rc = secrets_load(p, (const char *const *)envp, &err);
    for (i = 0; i < k; i++) {
        explicit_bzero(envp[i], strlen(envp[i]));
        free(envp[i]);
    }
    free(envp);
    if (rc < 0)
        return perr_param(e, "secrets", "%s", err.msg);
    return 0;
}

json_t *sess_secrets_refill(json_t *params, const struct fb_policy *orig)
{
    json_t *copy = json_deep_copy(params);
    json_t *a = json_object_get(copy, "secrets");
    for (size_t i = 0; i < json_array_size(a);) {
        json_t *it = json_array_get(a, i);
        const char *name = json_string_value(json_object_get(it, "name"));
        bool have = false;
        for (size_t k = 0; name && k < orig->nsecrets; k++) {
            size_t len;
            const uint8_t *v = secret_value(&orig->secrets[k], &len);
            if (v && !strcmp(orig->secrets[k].name, name)) {
                json_object_set_new(it, "value", json_stringn((const char *)v, len));
                have = true;
            }
        }
        /* Revoked whole (session.revoke): the fork does not get it back. */
        if (have)
            i++;
        else
            json_array_remove(a, i);
    }
    return copy;
}

static json_t *pattern_json(const struct fb_allow *a)
{
    return a->port ? json_sprintf("%s%s:%u", a->wildcard ? "*." : "", a->name, a->port)
                   : json_sprintf("%s%s", a->wildcard ? "*." : "", a->name);
}

void sess_secrets_info(const struct fb_policy *p, json_t *o)
{
    static const char *const mnames[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
                                         "OPTIONS"};
    json_t *secrets = json_array();
    for (size_t i = 0; i < p->nsecrets; i++) {
        const struct fb_secret *sc = &p->secrets[i];
        json_t *hosts = json_array();
        for (size_t k = 0; k < sc->nhosts; k++)
            json_array_append_new(hosts, pattern_json(&sc->hosts[k]));
        json_array_append_new(secrets, json_pack("{s:s, s:o}", "name", sc->name, "hosts", hosts));
    }
    json_object_set_new(o, "secrets", secrets);
    json_t *rules = json_array();
    for (size_t i = 0; i < p->nhttp_rules; i++) {
        const struct fb_http_rule *r = &p->http_rules[i];
        char ms[64] = "";
        if (r->methods == FB_HTTP_ANY) {
            snprintf(ms, sizeof ms, "*");
        } else {
            for (size_t k = 0; k < FB_ARRAY_LEN(mnames); k++)
                if (r->methods & (1u << k))
                    snprintf(ms + strlen(ms), sizeof ms - strlen(ms), "%s%s", *ms ? "," : "",
                             mnames[k]);
        }
        json_t *host = pattern_json(&r->host);
        json_array_append_new(rules, json_sprintf("%s %s%s", ms, json_string_value(host),
                                                  r->prefix && strcmp(r->prefix, "/") ? r->prefix
                                                                                      : ""));
        json_decref(host);
    }
    json_object_set_new(o, "allowHttp", rules);
}
