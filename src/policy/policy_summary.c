/* policy_summary.c — a policy as the flight record's "start" event says it
 * (docs/record.md): profile, overrides, isolation, mounts, limits, network
 * allowlist, seccomp, environment variable names. Values of environment
 * variables are never included (they may be secrets), not even in the
 * overrides ("--env NAME=(value not recorded)"). */
#include "policy_summary.h"

#include <string.h>

static json_t *opt_int(int64_t v) { return v < 0 ? json_null() : json_integer(v); }
static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *limits_json(const struct fb_limits *l)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "memory_bytes", opt_int(l->mem),
                     "cpus", l->cpus > 0 ? json_real(l->cpus) : json_null(), "pids",
                     opt_int(l->pids), "disk_bytes", opt_int(l->disk), "timeout_ms",
                     opt_int(l->timeout_ms), "nofile", opt_int(l->nofile), "fsize_bytes",
                     opt_int(l->fsize));
}

static json_t *mounts_json(const struct fb_policy *p)
{
    static const char *const kinds[] = {"ro-bind", "bind", "tmpfs", "hide"};
    json_t *a = json_array();
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        json_array_append_new(a, json_pack("{s:s, s:o, s:s}", "kind", kinds[m->kind], "src",
                                           str_or_null(m->src), "dst", m->dst));
    }
    for (size_t i = 0; i < p->ntool_binds; i++)
        json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "kind", "ro-bind", "src",
                                           str_or_null(p->tool_binds[i].src), "dst",
                                           str_or_null(p->tool_binds[i].dst)));
    return a;
}

static json_t *network_json(const struct fb_policy *p)
{
    static const char *const modes[] = {"none", "allow", "host"};
    json_t *allow = json_array(), *resolve = json_array();
    for (size_t i = 0; i < p->nallow; i++) {
        const struct fb_allow *a = &p->allow[i];
        char port[16] = "";
        if (a->port)
            snprintf(port, sizeof port, ":%u", a->port);
        char *s = fb_xasprintf("%s%s%s", a->wildcard ? "*." : "", a->name, port);
        json_array_append_new(allow, json_string(s));
        free(s);
    }
    for (size_t i = 0; i < p->nresolve; i++)
        json_array_append_new(resolve, json_pack("{s:s, s:s}", "name", p->resolve[i].name,
                                                 "addr", p->resolve[i].addr));
    return json_pack("{s:s, s:o, s:o, s:o}", "mode", modes[p->net], "allow", allow, "resolve",
                     resolve, "proxy_port", p->proxy_port ? json_integer(p->proxy_port)
                                                          : json_null());
}

/* Names of the variables set or passed in: never their values. */
static json_t *env_names(const struct fb_policy *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->nenv_set; i++)
        json_array_append_new(a, json_stringn(p->env_set[i], strcspn(p->env_set[i], "=")));
    for (size_t i = 0; i < p->nenv_pass; i++)
        json_array_append_new(a, json_string(p->env_pass[i]));
    return a;
}

/* An option as given, without the value of an --env (it may be a secret). */
static json_t *override_json(const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (strncmp(ov, "--env ", 6) || !eq)
        return json_string(ov);
    char *s = fb_xasprintf("%.*s=(value not recorded)", (int)(eq - ov), ov);
    json_t *j = json_string(s);
    free(s);
    return j;
}

json_t *policy_summary_json(const struct fb_policy *p)
{
    json_t *ov = json_array();
    for (size_t i = 0; i < p->noverrides; i++)
        json_array_append_new(ov, override_json(p->overrides[i]));
    const char *ws = !p->workspace ? NULL : p->cow ? "cow" : p->workspace_ro ? "ro" : "rw";
    json_t *o = json_pack("{s:o, s:o, s:o, s:s, s:i, s:o, s:o}", "profile",
                          str_or_null(p->profile_name), "extends", str_or_null(p->profile_extends),
                          "overrides", ov, "isolation",
                          p->isolation == FB_ISO_LANDLOCK ? "landlock" : "namespaces", "uid",
                          (int)p->uid, "workspace", str_or_null(p->workspace), "workspace_mode",
                          str_or_null(ws));
    json_object_set_new(o, "mounts", mounts_json(p));
    json_object_set_new(o, "limits", limits_json(&p->limits));
    json_object_set_new(o, "network", network_json(p));
    json_object_set_new(o, "seccomp", json_pack("{s:b, s:i, s:b}", "enabled", p->seccomp.enabled,
                                                "rules", (int)p->seccomp.nrules, "log_denied",
                                                p->seccomp.log_denied));
    json_object_set_new(o, "env_names", env_names(p));
    return o;
}
