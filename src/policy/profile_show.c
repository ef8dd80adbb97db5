/* profile_show.c — the effective policy written back as a profile
 * (profile.h: profile_to_json, profile_rules_json), for `fluebox profile
 * show`, the report and the built-ins' check: every field a profile can
 * set, rules grouped as a profile would write them ("names", lists of
 * values). Loading the text again gives the same policy. */
#include "profile_int.h"

#include "seccomp.h"

#include <string.h>

/* ---- the effective policy as a profile ---- */

static void pattern_cat(char *buf, size_t cap, const struct fb_allow *a)
{
    size_t n = strlen(buf);
    snprintf(buf + n, cap - n, "%s%s", a->wildcard ? "*." : "", a->name);
    n = strlen(buf);
    if (a->port)
        snprintf(buf + n, cap - n, ":%u", a->port);
}

/* network.secrets / http / upstream_ca, when the policy has them (names
 * and hosts: a value is never in a policy's text). */
static void inspection_json(const struct fb_policy *p, json_t *net)
{
    static const char *const mnames[] = {"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE",
                                         "OPTIONS"};
    char buf[1024];
    if (p->nsecrets) {
        json_t *a = json_array();
        for (size_t i = 0; i < p->nsecrets; i++) {
            const struct fb_secret *sc = &p->secrets[i];
            snprintf(buf, sizeof buf, "%s%s%s:", sc->name, sc->file ? "=@" : "",
                     sc->file ? sc->file : "");
            for (size_t k = 0; k < sc->nhosts; k++) {
                if (k)
                    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), ",");
                pattern_cat(buf, sizeof buf, &sc->hosts[k]);
            }
            json_array_append_new(a, json_string(buf));
        }
        json_object_set_new(net, "secrets", a);
    }
    if (p->nhttp_rules) {
        json_t *a = json_array();
        for (size_t i = 0; i < p->nhttp_rules; i++) {
            const struct fb_http_rule *r = &p->http_rules[i];
            buf[0] = 0;
            if (r->methods == FB_HTTP_ANY)
                snprintf(buf, sizeof buf, "*");
            for (size_t k = 0; r->methods != FB_HTTP_ANY && k < FB_ARRAY_LEN(mnames); k++)
                if (r->methods & (1u << k))
                    snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s%s", *buf ? "," : "",
                             mnames[k]);
            snprintf(buf + strlen(buf), sizeof buf - strlen(buf), " ");
            pattern_cat(buf, sizeof buf, &r->host);
            if (r->prefix && strcmp(r->prefix, "/"))
                snprintf(buf + strlen(buf), sizeof buf - strlen(buf), "%s", r->prefix);
            json_array_append_new(a, json_string(buf));
        }
        json_object_set_new(net, "http", a);
    }
    if (p->upstream_ca)
        json_object_set_new(net, "upstream_ca", json_string(p->upstream_ca));
}

static json_t *size_json(int64_t v)
{
    if (v < 0)
        return json_string("unlimited");
    static const struct {
        char suffix;
        int64_t mul;
    } u[] = {{'T', 1LL << 40}, {'G', 1LL << 30}, {'M', 1LL << 20}, {'K', 1LL << 10}};
    for (size_t i = 0; i < FB_ARRAY_LEN(u); i++)
        if (v >= u[i].mul && v % u[i].mul == 0) {
            char buf[32];
            snprintf(buf, sizeof buf, "%lld%c", (long long)(v / u[i].mul), u[i].suffix);
            return json_string(buf);
        }
    return json_integer(v);
}

static json_t *count_json(int64_t v) { return v < 0 ? json_string("unlimited") : json_integer(v); }

char *action_str(enum fb_sc_action a, int e)
{
    switch (a) {
    case FB_SC_ALLOW: return fb_xstrdup("allow");
    case FB_SC_KILL: return fb_xstrdup("kill");
    case FB_SC_LOG: return fb_xstrdup("log");
    case FB_SC_TRACE: return fb_xstrdup("trace");
    case FB_SC_ERRNO: {
        const char *n = strerrorname_np(e);
        return n ? fb_xasprintf("errno(%s)", n) : fb_xasprintf("errno(%d)", e);
    }
    }
    return fb_xstrdup("?");
}

static json_t *value_json(const char *syscall, unsigned idx, uint64_t v)
{
    const char *n = seccomp_const_name(syscall, idx, v);
    if (n)
        return json_string(n);
    if (v <= 0xffff)
        return json_integer((json_int_t)v);
    char buf[24];
    snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v);
    return json_string(buf);
}

/* The conditions of r; with list_k >= 0, condition list_k's value is the
 * list of the values of rules[0..n) (a group made by same_but_value). */
static json_t *rule_args_json(const struct fb_sc_rule *r, int list_k, const struct fb_sc_rule *rules,
                              size_t n)
{
    static const char *const ops[] = {"eq", "ne", "lt", "le", "gt", "ge", "masked_eq"};
    json_t *arr = json_array();
    for (unsigned k = 0; k < r->nargs; k++) {
        const struct fb_sc_arg *a = &r->args[k];
        json_t *c = json_object();
        json_object_set_new(c, "index", json_integer(a->index));
        json_object_set_new(c, "op", json_string(ops[a->op <= FB_SC_MASKED_EQ ? a->op : 0]));
        if ((int)k == list_k) {
            json_t *vals = json_array();
            for (size_t i = 0; i < n; i++)
                json_array_append_new(vals, value_json(r->name, a->index, rules[i].args[k].value));
            json_object_set_new(c, "value", vals);
        } else {
            json_object_set_new(c, "value", value_json(r->name, a->index, a->value));
        }
        if (a->op == FB_SC_MASKED_EQ) {
            char buf[24];
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)a->mask);
            json_object_set_new(c, "mask", json_string(buf));
        }
        json_array_append_new(arr, c);
    }
    return arr;
}

static bool same_comment(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    return (!a->comment && !b->comment) || (a->comment && b->comment && !strcmp(a->comment, b->comment));
}

static bool same_action(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    return a->action == b->action && (a->action != FB_SC_ERRNO || a->errno_val == b->errno_val);
}

/* Consecutive unconditional rules with the same action and comment print
 * as one rule with "names". */
static bool same_group(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    return a->nargs == 0 && b->nargs == 0 && same_action(a, b) && same_comment(a, b);
}

/* Is b the same rule as a but for the value of condition k (eq or
 * masked_eq)? Such rules print as one rule with a list of values. */
static bool same_but_value(const struct fb_sc_rule *a, const struct fb_sc_rule *b, unsigned k)
{
    if (strcmp(a->name, b->name) || !same_action(a, b) || !same_comment(a, b) ||
        a->nargs != b->nargs || k >= a->nargs ||
        (a->args[k].op != FB_SC_EQ && a->args[k].op != FB_SC_MASKED_EQ))
        return false;
    for (unsigned i = 0; i < a->nargs; i++) {
        const struct fb_sc_arg *x = &a->args[i], *y = &b->args[i];
        if (x->index != y->index || x->op != y->op ||
            (x->op == FB_SC_MASKED_EQ && x->mask != y->mask) || (i != k && x->value != y->value))
            return false;
    }
    return true;
}

json_t *profile_rules_json(const struct fb_sc_rule *rules, size_t n)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n;) {
        const struct fb_sc_rule *r = &rules[i];
        size_t k = i + 1;
        int list_k = -1;
        while (k < n && same_group(r, &rules[k]))
            k++;
        if (k == i + 1 && i + 1 < n)
            for (unsigned c = 0; c < r->nargs && list_k < 0; c++)
                if (same_but_value(r, &rules[i + 1], c) &&
                    r->args[c].value != rules[i + 1].args[c].value)
                    list_k = (int)c;
        if (list_k >= 0)
            while (k < n && k - i < MAX_VALUES && same_but_value(r, &rules[k], (unsigned)list_k))
                k++;
        json_t *o = json_object();
        if (k - i > 1 && list_k < 0) {
            json_t *names = json_array();
            for (size_t m = i; m < k; m++)
                json_array_append_new(names, json_string(rules[m].name));
            json_object_set_new(o, "names", names);
        } else {
            json_object_set_new(o, "name", json_string(r->name));
        }
        char *act = action_str(r->action, r->errno_val);
        json_object_set_new(o, "action", json_string(act));
        free(act);
        if (r->nargs)
            json_object_set_new(o, "args", rule_args_json(r, list_k, r, list_k >= 0 ? k - i : 0));
        if (r->comment)
            json_object_set_new(o, "comment", json_string(r->comment));
        json_array_append_new(arr, o);
        i = k;
    }
    return arr;
}

static void mounts_json(const struct fb_policy *p, json_t *fs)
{
    json_t *ro = json_array(), *rw = json_array(), *tm = json_array(), *hide = json_array();
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        json_t *o = json_object();
        switch (m->kind) {
        case FB_MNT_RO_BIND:
        case FB_MNT_BIND:
            json_object_set_new(o, "src", json_string(m->src));
            json_object_set_new(o, "dst", json_string(m->dst));
            if (m->optional)
                json_object_set_new(o, "optional", json_true());
            json_array_append_new(m->kind == FB_MNT_BIND ? rw : ro, o);
            break;
        case FB_MNT_TMPFS:
            json_object_set_new(o, "dst", json_string(m->dst));
            if (m->size > 0)
                json_object_set_new(o, "size", size_json(m->size));
            json_array_append_new(tm, o);
            break;
        case FB_MNT_HIDE:
            json_decref(o);
            json_array_append_new(hide, json_string(m->dst));
            break;
        }
    }
    json_object_set_new(fs, "ro_bind", ro);
    json_object_set_new(fs, "bind", rw);
    json_object_set_new(fs, "tmpfs", tm);
    json_object_set_new(fs, "hide", hide);
}

char *profile_to_json(const struct fb_policy *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(p->profile_name ? p->profile_name : ""));
    if (p->description)
        json_object_set_new(o, "description", json_string(p->description));
    cleanup_free char *note = fb_xasprintf(
        "effective policy%s%s; always on, whatever the profile: user and mount namespaces, no "
        "capabilities, no_new_privs, non-native ABIs killed, clone3 ENOSYS, clone/unshare with "
        "namespace flags, ioctl TIOCSTI/TIOCLINUX and set-id modes (chmod, file creation) EPERM, "
        "openat2 and syscalls newer than fluebox ENOSYS",
        p->profile_extends ? ", extends " : "", p->profile_extends ? p->profile_extends : "");
    json_object_set_new(o, "comment", json_string(note));

    json_t *fs = json_object();
    mounts_json(p, fs);
    json_object_set_new(fs, "workspace_readonly", json_boolean(p->workspace_ro));
    json_object_set_new(fs, "bind_interpreter", json_boolean(p->bind_interpreter));
    json_object_set_new(o, "filesystem", fs);

    json_t *env = json_object(), *set = json_object(), *pass = json_array();
    for (size_t i = 0; i < p->nenv_set; i++) {
        const char *eq = strchr(p->env_set[i], '=');
        if (!eq)
            continue;
        cleanup_free char *k = fb_xstrndup(p->env_set[i], (size_t)(eq - p->env_set[i]));
        json_object_set_new(set, k, json_string(eq + 1));
    }
    for (size_t i = 0; i < p->nenv_pass; i++)
        json_array_append_new(pass, json_string(p->env_pass[i]));
    json_object_set_new(env, "set", set);
    json_object_set_new(env, "pass", pass);
    json_object_set_new(o, "environment", env);

    json_t *lim = json_object();
    json_object_set_new(lim, "memory", size_json(p->limits.mem));
    json_object_set_new(lim, "cpus", p->limits.cpus > 0 ? json_real(p->limits.cpus)
                                                        : json_string("unlimited"));
    json_object_set_new(lim, "pids", count_json(p->limits.pids));
    json_object_set_new(lim, "disk", size_json(p->limits.disk));
    if (p->limits.timeout_ms > 0) {
        char buf[32];
        if (p->limits.timeout_ms % 1000)
            snprintf(buf, sizeof buf, "%lldms", (long long)p->limits.timeout_ms);
        else
            snprintf(buf, sizeof buf, "%llds", (long long)(p->limits.timeout_ms / 1000));
        json_object_set_new(lim, "timeout", json_string(buf));
    } else {
        json_object_set_new(lim, "timeout", json_string("none"));
    }
    json_object_set_new(lim, "nofile", count_json(p->limits.nofile));
    json_object_set_new(lim, "fsize", size_json(p->limits.fsize));
    json_object_set_new(lim, "require", json_boolean(p->limits.require));
    json_object_set_new(o, "limits", lim);

    json_t *net = json_object();
    static const char *const modes[] = {"none", "allow", "host"};
    json_object_set_new(net, "mode", json_string(modes[p->net <= FB_NET_HOST ? p->net : 0]));
    json_t *allow = json_array();
    for (size_t i = 0; i < p->nallow; i++) {
        const struct fb_allow *a = &p->allow[i];
        char buf[300];
        int n = snprintf(buf, sizeof buf, "%s%s", a->wildcard ? "*." : "", a->name);
        if (a->port && n > 0 && (size_t)n < sizeof buf)
            snprintf(buf + n, sizeof buf - (size_t)n, ":%u", a->port);
        json_array_append_new(allow, json_string(buf));
    }
    json_object_set_new(net, "allow", allow);
    json_object_set_new(net, "host_allowed", json_boolean(p->net_host_allowed));
    inspection_json(p, net);
    json_object_set_new(o, "network", net);

    json_t *ns = json_object();
    json_object_set_new(ns, "pid", json_boolean(p->namespaces & FB_NS_PID));
    json_object_set_new(ns, "ipc", json_boolean(p->namespaces & FB_NS_IPC));
    json_object_set_new(ns, "uts", json_boolean(p->namespaces & FB_NS_UTS));
    json_object_set_new(ns, "cgroup", json_boolean(p->namespaces & FB_NS_CGROUP));
    json_object_set_new(o, "namespaces", ns);
    if (p->isolation == FB_ISO_LANDLOCK)
        json_object_set_new(o, "isolation", json_string("landlock"));
    json_object_set_new(o, "uid", json_integer(p->uid));
    json_object_set_new(o, "gid", json_integer(p->gid));
    if (p->namespaces & FB_NS_UTS) /* no own uts namespace: no hostname of its own */
        json_object_set_new(o, "hostname", json_string(p->hostname ? p->hostname : "fluebox"));

    json_t *sc = json_object();
    char *def = action_str(p->seccomp.default_action, p->seccomp.default_errno);
    json_object_set_new(sc, "default", json_string(def));
    free(def);
    json_object_set_new(sc, "rules", profile_rules_json(p->seccomp.rules, p->seccomp.nrules));
    json_object_set_new(o, "seccomp", sc);

    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return fb_xstrdup("{}\n");
    char *out = fb_xasprintf("%s\n", s);
    free(s);
    return out;
}
