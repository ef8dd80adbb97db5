/* profile_sections.c — the sections of a profile other than seccomp,
 * applied to the policy (profile_int.h): "filesystem" (ro_bind, bind,
 * tmpfs, hide and the flags), "environment", "limits", "network" and
 * "namespaces". Lists append to what an extended profile set; scalars
 * replace. */
#include "profile_int.h"

#include <limits.h>
#include <string.h>

/* ---- sections ---- */

/* ro_bind / bind: "SRC", "SRC:DST" or {"src", "dst", "optional", "comment"}. */
static int apply_binds(struct ld *l, struct fb_policy *p, json_t *arr, const char *path,
                       enum fb_mount_kind kind)
{
    if (want_type(l, path, arr, JSON_ARRAY, "an array") < 0)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char ip[256];
        idx_path(ip, sizeof ip, path, i);
        cleanup_free char *src = NULL;
        cleanup_free char *dst = NULL;
        bool optional = false;
        if (json_is_string(e)) {
            src = fb_xstrdup(json_string_value(e));
            char *colon = strchr(src, ':');
            if (colon) {
                *colon = 0;
                dst = fb_xstrdup(colon + 1);
            }
        } else if (json_is_object(e)) {
            static const char *const keys[] = {"src", "dst", "optional", "comment", NULL};
            if (check_keys(l, ip, e, keys) < 0 || get_comment(l, ip, e, NULL) < 0)
                return -1;
            json_t *js = json_object_get(e, "src"), *jd = json_object_get(e, "dst"),
                   *jo = json_object_get(e, "optional");
            char sp[256];
            key_path(sp, sizeof sp, ip, "src");
            if (!js)
                return perr(l, sp, "missing");
            if (want_type(l, sp, js, JSON_STRING, "a string") < 0)
                return -1;
            src = fb_xstrdup(json_string_value(js));
            if (jd) {
                key_path(sp, sizeof sp, ip, "dst");
                if (want_type(l, sp, jd, JSON_STRING, "a string") < 0)
                    return -1;
                dst = fb_xstrdup(json_string_value(jd));
            }
            if (jo) {
                key_path(sp, sizeof sp, ip, "optional");
                if (want_type(l, sp, jo, JSON_TRUE, "true or false") < 0)
                    return -1;
                optional = json_is_true(jo);
            }
        } else {
            return perr(l, ip, "expected \"SRC[:DST]\" or an object, got %s", jtype(e));
        }
        if (!*src)
            return perr(l, ip, "empty source path");
        /* A relative source is relative to the profile file. */
        cleanup_free char *full = NULL;
        if (src[0] != '/') {
            if (!l->dir)
                return perr(l, ip, "\"%s\": the source must be an absolute path", src);
            full = fb_xasprintf("%s/%s", l->dir, src);
        } else {
            full = fb_xstrdup(src);
        }
        char real[PATH_MAX];
        if (!realpath(full, real)) {
            if (!optional || errno != ENOENT)
                return perr(l, ip, "%s: %s", src, strerror(errno));
            snprintf(real, sizeof real, "%s", full);
        }
        cleanup_free char *d = inside_path(l, ip, dst ? dst : real);
        if (!d)
            return -1;
        policy_add_mount(p, kind, real, d, 0);
        p->mounts[p->nmounts - 1].optional = optional;
    }
    return 0;
}

static int apply_tmpfs(struct ld *l, struct fb_policy *p, json_t *arr, const char *path)
{
    if (want_type(l, path, arr, JSON_ARRAY, "an array") < 0)
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(arr, i, e) {
        char ip[256];
        idx_path(ip, sizeof ip, path, i);
        cleanup_free char *dst = NULL;
        int64_t size = 0;
        if (json_is_string(e)) {
            dst = fb_xstrdup(json_string_value(e));
            char *colon = strchr(dst, ':');
            if (colon) {
                *colon = 0;
                if (fb_parse_size(colon + 1, &size) < 0 || size < 0)
                    return perr(l, ip, "bad size \"%s\" (e.g. 64M)", colon + 1);
            }
        } else if (json_is_object(e)) {
            static const char *const keys[] = {"dst", "size", "comment", NULL};
            if (check_keys(l, ip, e, keys) < 0 || get_comment(l, ip, e, NULL) < 0)
                return -1;
            json_t *jd = json_object_get(e, "dst"), *jz = json_object_get(e, "size");
            char sp[256];
            key_path(sp, sizeof sp, ip, "dst");
            if (!jd)
                return perr(l, sp, "missing");
            if (want_type(l, sp, jd, JSON_STRING, "a string") < 0)
                return -1;
            dst = fb_xstrdup(json_string_value(jd));
            if (jz) {
                key_path(sp, sizeof sp, ip, "size");
                if (get_size(l, sp, jz, &size) < 0)
                    return -1;
                if (size < 0)
                    return perr(l, sp, "a tmpfs needs a size (\"unlimited\" is not one)");
            }
        } else {
            return perr(l, ip, "expected \"DST[:SIZE]\" or an object, got %s", jtype(e));
        }
        cleanup_free char *d = inside_path(l, ip, dst);
        if (!d)
            return -1;
        policy_add_mount(p, FB_MNT_TMPFS, NULL, d, size);
    }
    return 0;
}

int apply_filesystem(struct ld *l, struct fb_policy *p, json_t *fs)
{
    const char *path = "filesystem";
    static const char *const keys[] = {"ro_bind", "bind", "tmpfs", "hide", "workspace_readonly",
                                       "bind_interpreter", "comment", NULL};
    if (want_type(l, path, fs, JSON_OBJECT, "an object") < 0 || check_keys(l, path, fs, keys) < 0 ||
        get_comment(l, path, fs, NULL) < 0)
        return -1;
    json_t *j;
    if ((j = json_object_get(fs, "ro_bind")) &&
        apply_binds(l, p, j, "filesystem.ro_bind", FB_MNT_RO_BIND) < 0)
        return -1;
    if ((j = json_object_get(fs, "bind")) && apply_binds(l, p, j, "filesystem.bind", FB_MNT_BIND) < 0)
        return -1;
    if ((j = json_object_get(fs, "tmpfs")) && apply_tmpfs(l, p, j, "filesystem.tmpfs") < 0)
        return -1;
    if ((j = json_object_get(fs, "hide"))) {
        if (want_type(l, "filesystem.hide", j, JSON_ARRAY, "an array of paths") < 0)
            return -1;
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e) {
            char ip[256];
            idx_path(ip, sizeof ip, "filesystem.hide", i);
            if (want_type(l, ip, e, JSON_STRING, "a path") < 0)
                return -1;
            cleanup_free char *d = inside_path(l, ip, json_string_value(e));
            if (!d)
                return -1;
            policy_add_mount(p, FB_MNT_HIDE, NULL, d, 0);
        }
    }
    if ((j = json_object_get(fs, "workspace_readonly"))) {
        if (want_type(l, "filesystem.workspace_readonly", j, JSON_TRUE, "true or false") < 0)
            return -1;
        p->workspace_ro = json_is_true(j);
    }
    if ((j = json_object_get(fs, "bind_interpreter"))) {
        if (want_type(l, "filesystem.bind_interpreter", j, JSON_TRUE, "true or false") < 0)
            return -1;
        p->bind_interpreter = json_is_true(j);
    }
    return 0;
}

static bool valid_env_name(const char *k)
{
    if (!*k || (*k >= '0' && *k <= '9'))
        return false;
    for (const char *c = k; *c; c++)
        if (!((*c >= 'A' && *c <= 'Z') || (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') ||
              *c == '_'))
            return false;
    return true;
}

int apply_environment(struct ld *l, struct fb_policy *p, json_t *env)
{
    static const char *const keys[] = {"set", "pass", "comment", NULL};
    if (want_type(l, "environment", env, JSON_OBJECT, "an object") < 0 ||
        check_keys(l, "environment", env, keys) < 0 || get_comment(l, "environment", env, NULL) < 0)
        return -1;
    json_t *set = json_object_get(env, "set"), *pass = json_object_get(env, "pass");
    if (set) {
        if (want_type(l, "environment.set", set, JSON_OBJECT, "an object of NAME: value") < 0)
            return -1;
        const char *k;
        json_t *v;
        json_object_foreach(set, k, v) {
            char sp[256];
            key_path(sp, sizeof sp, "environment.set", k);
            if (!valid_env_name(k))
                return perr(l, sp, "not a valid variable name");
            if (want_type(l, sp, v, JSON_STRING, "a string") < 0)
                return -1;
            cleanup_free char *kv = fb_xasprintf("%s=%s", k, json_string_value(v));
            policy_add_env_set(p, kv);
        }
    }
    if (pass) {
        if (want_type(l, "environment.pass", pass, JSON_ARRAY, "an array of names") < 0)
            return -1;
        size_t i;
        json_t *e;
        json_array_foreach(pass, i, e) {
            char ip[256];
            idx_path(ip, sizeof ip, "environment.pass", i);
            if (want_type(l, ip, e, JSON_STRING, "a variable name") < 0)
                return -1;
            if (!valid_env_name(json_string_value(e)))
                return perr(l, ip, "\"%s\" is not a valid variable name", json_string_value(e));
            policy_add_env_pass(p, json_string_value(e));
        }
    }
    return 0;
}

int apply_limits(struct ld *l, struct fb_policy *p, json_t *lim)
{
    static const char *const keys[] = {"memory", "cpus", "pids", "disk", "timeout", "nofile",
                                       "fsize", "require", "comment", NULL};
    if (want_type(l, "limits", lim, JSON_OBJECT, "an object") < 0 ||
        check_keys(l, "limits", lim, keys) < 0 || get_comment(l, "limits", lim, NULL) < 0)
        return -1;
    json_t *j;
    if ((j = json_object_get(lim, "memory"))) {
        if (get_size(l, "limits.memory", j, &p->limits.mem) < 0)
            return -1;
        if (p->limits.mem > 0 && p->limits.mem < 4 * 1024 * 1024)
            return perr(l, "limits.memory", "too small (at least 4M)");
    }
    if ((j = json_object_get(lim, "cpus"))) {
        if (json_is_string(j) && !strcmp(json_string_value(j), "unlimited")) {
            p->limits.cpus = 0;
        } else {
            if (!json_is_number(j))
                return perr(l, "limits.cpus", "expected a number of CPUs or \"unlimited\", got %s",
                            jtype(j));
            double c = json_number_value(j);
            if (!(c >= 0.01) || c > 4096)
                return perr(l, "limits.cpus", "expected a number of CPUs from 0.01 to 4096");
            p->limits.cpus = c;
        }
    }
    if ((j = json_object_get(lim, "pids")) && get_count(l, "limits.pids", j, 1, &p->limits.pids) < 0)
        return -1;
    if ((j = json_object_get(lim, "nofile")) &&
        get_count(l, "limits.nofile", j, 16, &p->limits.nofile) < 0)
        return -1;
    if ((j = json_object_get(lim, "disk")) && get_size(l, "limits.disk", j, &p->limits.disk) < 0)
        return -1;
    if ((j = json_object_get(lim, "fsize")) && get_size(l, "limits.fsize", j, &p->limits.fsize) < 0)
        return -1;
    if ((j = json_object_get(lim, "timeout"))) {
        if (json_is_integer(j) && json_integer_value(j) > 0 &&
            json_integer_value(j) < (json_int_t)9e12) {
            p->limits.timeout_ms = json_integer_value(j) * 1000;
        } else if (!json_is_string(j) ||
                   fb_parse_duration_ms(json_string_value(j), &p->limits.timeout_ms) < 0) {
            return perr(l, "limits.timeout",
                        "expected a duration such as \"30s\", \"5m\" or \"none\", got %s",
                        jtype(j));
        }
    }
    if ((j = json_object_get(lim, "require"))) {
        if (want_type(l, "limits.require", j, JSON_TRUE, "true or false") < 0)
            return -1;
        p->limits.require = json_is_true(j);
    }
    return 0;
}

/* network.secrets (["NAME:HOSTS", "NAME=@FILE:HOSTS"], as --secret: the
 * value comes from the caller, never from the profile), network.http
 * (["METHODS HOST[/PREFIX]"], as --allow-http) and network.upstream_ca (a
 * file, as --upstream-ca). docs/secrets.md. */
static int apply_inspection(struct ld *l, struct fb_policy *p, json_t *net)
{
    static const struct {
        const char *key, *what;
        int (*add)(struct fb_policy *, const char *, struct fb_err *);
    } lists[] = {
        {"secrets", "a secret \"NAME:HOST[,HOST...]\"", policy_add_secret},
        {"http", "an HTTP rule \"METHODS HOST[:PORT][/PATH-PREFIX]\"", policy_add_http_rule},
    };
    for (size_t k = 0; k < FB_ARRAY_LEN(lists); k++) {
        char path[64];
        snprintf(path, sizeof path, "network.%s", lists[k].key);
        json_t *j = json_object_get(net, lists[k].key), *e;
        if (!j)
            continue;
        if (want_type(l, path, j, JSON_ARRAY, "an array") < 0)
            return -1;
        size_t i;
        json_array_foreach(j, i, e) {
            char ip[256];
            idx_path(ip, sizeof ip, path, i);
            if (want_type(l, ip, e, JSON_STRING, lists[k].what) < 0)
                return -1;
            struct fb_err e2 = {0};
            if (lists[k].add(p, json_string_value(e), &e2) < 0)
                return perr(l, ip, "%s", e2.msg);
        }
    }
    json_t *j = json_object_get(net, "upstream_ca");
    if (j) {
        if (want_type(l, "network.upstream_ca", j, JSON_STRING, "a file path") < 0)
            return -1;
        struct fb_err e2 = {0};
        if (policy_set_upstream_ca(p, json_string_value(j), &e2) < 0)
            return perr(l, "network.upstream_ca", "%s", e2.msg);
    }
    return 0;
}

int apply_network(struct ld *l, struct fb_policy *p, json_t *net)
{
    static const char *const keys[] = {"mode",  "allow",       "host_allowed", "secrets",
                                       "http",  "upstream_ca", "comment",      NULL};
    if (want_type(l, "network", net, JSON_OBJECT, "an object") < 0 ||
        check_keys(l, "network", net, keys) < 0 || get_comment(l, "network", net, NULL) < 0)
        return -1;
    json_t *j;
    if ((j = json_object_get(net, "host_allowed"))) {
        if (want_type(l, "network.host_allowed", j, JSON_TRUE, "true or false") < 0)
            return -1;
        p->net_host_allowed = json_is_true(j);
    }
    if ((j = json_object_get(net, "mode"))) {
        const char *m = json_is_string(j) ? json_string_value(j) : "";
        if (!strcmp(m, "none"))
            p->net = FB_NET_NONE;
        else if (!strcmp(m, "allow"))
            p->net = FB_NET_ALLOW;
        else if (!strcmp(m, "host"))
            p->net = FB_NET_HOST;
        else
            return perr(l, "network.mode", "expected \"none\", \"allow\" or \"host\"");
    }
    if ((j = json_object_get(net, "allow"))) {
        if (want_type(l, "network.allow", j, JSON_ARRAY, "an array of host patterns") < 0)
            return -1;
        size_t i;
        json_t *e;
        json_array_foreach(j, i, e) {
            char ip[256];
            idx_path(ip, sizeof ip, "network.allow", i);
            if (want_type(l, ip, e, JSON_STRING, "a host pattern such as \"*.pypi.org:443\"") < 0)
                return -1;
            struct fb_err e2 = {0};
            if (policy_add_allow(p, json_string_value(e), &e2) < 0) {
                /* "--allow-net PATTERN: why" -> "why" */
                const char *why = strstr(e2.msg, ": ");
                return perr(l, ip, "%s", why ? why + 2 : e2.msg);
            }
        }
    }
    if (apply_inspection(l, p, net) < 0)
        return -1;
    if (p->net == FB_NET_HOST && !p->net_host_allowed)
        return perr(l, "network.mode", "\"host\" needs \"host_allowed\": true");
    if (p->net == FB_NET_HOST && p->nallow)
        return perr(l, "network.allow", "an allowlist cannot be combined with \"mode\": \"host\"");
    if (p->net == FB_NET_NONE && p->nallow)
        return perr(l, "network.allow", "an allowlist needs \"mode\": \"allow\"");
    return 0;
}

int apply_namespaces(struct ld *l, struct fb_policy *p, json_t *ns)
{
    static const struct {
        const char *key;
        unsigned bit;
    } map[] = {{"pid", FB_NS_PID}, {"ipc", FB_NS_IPC}, {"uts", FB_NS_UTS}, {"cgroup", FB_NS_CGROUP}};
    if (want_type(l, "namespaces", ns, JSON_OBJECT, "an object") < 0)
        return -1;
    const char *k;
    json_t *v;
    json_object_foreach(ns, k, v) {
        char sp[256];
        key_path(sp, sizeof sp, "namespaces", k);
        if (!strcmp(k, "comment"))
            continue;
        if (!strcmp(k, "user") || !strcmp(k, "mount"))
            return perr(l, sp, "the %s namespace is always created and cannot be turned off", k);
        if (!strcmp(k, "net") || !strcmp(k, "network"))
            return perr(l, sp, "set \"network\": {\"mode\": \"host\"} to share the host network");
        size_t i;
        for (i = 0; i < FB_ARRAY_LEN(map); i++)
            if (!strcmp(map[i].key, k))
                break;
        if (i == FB_ARRAY_LEN(map))
            return perr(l, sp, "unknown key (expected one of: pid, ipc, uts, cgroup, comment)");
        if (want_type(l, sp, v, JSON_TRUE, "true or false") < 0)
            return -1;
        if (json_is_true(v))
            p->namespaces |= map[i].bit;
        else
            p->namespaces &= ~map[i].bit;
    }
    return get_comment(l, "namespaces", ns, NULL);
}
