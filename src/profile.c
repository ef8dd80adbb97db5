/* profile.c — security profiles: JSON files (and the built-in ones embedded
 * from profiles/ *.json) loaded with jansson into a policy, and
 * `fluebox profile list|show|check`.
 *
 * A profile that extends another is applied over it: first the extended
 * profile, then this one. Scalars replace, lists (mounts, environment,
 * network allowlist) append, and a profile's seccomp rules for a syscall
 * replace every inherited rule for that syscall (seccomp.h: per syscall one
 * unconditional rule or exclusive conditional ones, checked here per file so
 * that errors name the rule). Every key is known: anything else is an error,
 * and every error names the file and the JSON path of the bad field. The
 * format is documented in docs/profiles.md.
 *
 * The built-in profiles are also precompiled: their effective policies,
 * loaded from the JSON at build time (scripts/profiles-precompile.c), are
 * copied instead of parsed when the build has them (profile.h). */
#include "profile.h"

#include "commands.h"
#include "options.h"
#include "seccomp.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

/* Generated from profiles/ *.json by scripts/embed-profiles.sh. */
struct fb_builtin_profile {
    const char *name;
    const char *json;
};
extern const struct fb_builtin_profile fb_builtin_profiles[];

#define MAX_DEPTH 16
#define MAX_FILE (1 << 20)

const char *const *profile_builtin_names(void)
{
    static const char *names[16];
    size_t n = 0;
    for (const struct fb_builtin_profile *b = fb_builtin_profiles; b->name && n < 15; b++)
        names[n++] = b->name;
    names[n] = NULL;
    return names;
}

static const char *builtin_json(const char *name)
{
    for (const struct fb_builtin_profile *b = fb_builtin_profiles; b->name; b++)
        if (!strcmp(b->name, name))
            return b->json;
    return NULL;
}

static const struct fb_builtin_policy *builtin_policy(const char *name)
{
    if (!fb_builtin_policies)
        return NULL;
    for (const struct fb_builtin_policy *b = fb_builtin_policies; b->name; b++)
        if (!strcmp(b->name, name))
            return b;
    return NULL;
}

/* ---- error reporting ---- */

struct ld {
    const char *label;   /* how errors name this profile: the path or built-in name */
    char *dir;           /* the file's directory (relative paths), NULL for built-ins */
    struct fb_err *err;
    bool files_ok;       /* may "extends" name files */
    char **chain;        /* identities of the profiles being loaded (cycles) */
    char **labels;       /* their labels, for the cycle message */
    size_t nchain;
    bool builtin;        /* one of the compiled-in profiles (checked at build time) */
    enum fb_builtin_src src; /* where built-ins come from */
};

__attribute__((format(printf, 3, 4))) static int perr(struct ld *l, const char *path,
                                                        const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    /* Keys and values from the file are echoed: keep the message one line. */
    for (char *c = msg; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    char pbuf[256];
    snprintf(pbuf, sizeof pbuf, "%s", path ? path : "");
    for (char *c = pbuf; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = '?';
    path = pbuf;
    if (path && *path)
        return fb_errf(l->err, FB_EXIT_SETUP, "%s: %s: %s", l->label, path, msg);
    return fb_errf(l->err, FB_EXIT_SETUP, "%s: %s", l->label, msg);
}

static const char *jtype(const json_t *j)
{
    switch (json_typeof(j)) {
    case JSON_OBJECT: return "an object";
    case JSON_ARRAY: return "an array";
    case JSON_STRING: return "a string";
    case JSON_INTEGER: return "an integer";
    case JSON_REAL: return "a number";
    case JSON_TRUE:
    case JSON_FALSE: return "a boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* JSON paths for error messages ("seccomp.rules[3].name"), built for every
 * element as the profile is walked, so without printf: a built-in profile has
 * hundreds of them and loads on every start. Paths are cut at the buffer's
 * size (256), long enough for any real one. */
static size_t path_put(char *out, size_t cap, size_t o, const char *s)
{
    while (*s && o + 1 < cap)
        out[o++] = *s++;
    out[o < cap ? o : cap - 1] = 0;
    return o;
}

/* "path.key" */
static void key_path(char *out, size_t cap, const char *path, const char *key)
{
    size_t o = 0;
    if (path && *path) {
        o = path_put(out, cap, o, path);
        o = path_put(out, cap, o, ".");
    }
    path_put(out, cap, o, key);
}

/* "path[i]" */
static void idx_path(char *out, size_t cap, const char *path, size_t i)
{
    char num[24], *d = num + sizeof num;
    *--d = 0;
    do
        *--d = (char)('0' + i % 10);
    while ((i /= 10) && d > num);
    size_t o = path_put(out, cap, 0, path);
    o = path_put(out, cap, o, "[");
    o = path_put(out, cap, o, d);
    path_put(out, cap, o, "]");
}

static int want_type(struct ld *l, const char *path, const json_t *j, json_type t,
                     const char *what)
{
    if (json_typeof(j) == t || (t == JSON_TRUE && json_typeof(j) == JSON_FALSE))
        return 0;
    return perr(l, path, "expected %s, got %s", what, jtype(j));
}

/* Every key of obj must be in keys (NULL-terminated). */
static int check_keys(struct ld *l, const char *path, json_t *obj, const char *const *keys)
{
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        bool known = false;
        for (const char *const *q = keys; *q && !known; q++)
            known = !strcmp(*q, k);
        if (known)
            continue;
        char sub[256], list[300];
        key_path(sub, sizeof sub, path, k);
        size_t o = 0;
        list[0] = 0;
        for (const char *const *q = keys; *q; q++)
            o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%s",
                                  q == keys ? "" : ", ", *q);
        return perr(l, sub, "unknown key (expected one of: %s)", list);
    }
    return 0;
}

/* A "comment": a string or an array of strings. */
static int get_comment(struct ld *l, const char *path, json_t *obj, char **out)
{
    json_t *c = json_object_get(obj, "comment");
    if (out)
        *out = NULL;
    if (!c)
        return 0;
    char sub[256];
    key_path(sub, sizeof sub, path, "comment");
    if (json_is_string(c)) {
        if (out)
            *out = fb_xstrdup(json_string_value(c));
        return 0;
    }
    if (!json_is_array(c))
        return perr(l, sub, "expected a string or an array of strings, got %s", jtype(c));
    size_t i;
    json_t *e;
    size_t len = 0;
    json_array_foreach(c, i, e) {
        if (!json_is_string(e)) {
            char s2[256];
            idx_path(s2, sizeof s2, sub, i);
            return perr(l, s2, "expected a string, got %s", jtype(e));
        }
        len += strlen(json_string_value(e)) + 1;
    }
    if (out) {
        char *s = fb_xcalloc(1, len + 1);
        json_array_foreach(c, i, e) {
            if (i)
                strcat(s, " ");
            strcat(s, json_string_value(e));
        }
        *out = s;
    }
    return 0;
}

/* ---- value parsers ---- */

int profile_errno_parse(const char *s)
{
    if (!s || !*s)
        return -1;
    if (*s >= '0' && *s <= '9') {
        uint64_t v;
        if (fb_parse_u64(s, &v) < 0 || v < 1 || v > 4095)
            return -1;
        return (int)v;
    }
    for (int e = 1; e < 4096; e++) {
        const char *n = strerrorname_np(e);
        if (n && !strcmp(n, s))
            return e;
    }
    return -1;
}

/* "allow", "kill", "log", "errno", "errno(EPERM)", "errno(13)". */
static int parse_action(const char *s, enum fb_sc_action *a, int *e, bool *has_errno)
{
    *has_errno = false;
    *e = EPERM;
    if (!strcmp(s, "allow")) {
        *a = FB_SC_ALLOW;
        return 0;
    }
    if (!strcmp(s, "kill")) {
        *a = FB_SC_KILL;
        return 0;
    }
    if (!strcmp(s, "log")) {
        *a = FB_SC_LOG;
        return 0;
    }
    if (!strcmp(s, "errno")) {
        *a = FB_SC_ERRNO;
        return 0;
    }
    size_t n = strlen(s);
    if (n > 7 && !strncmp(s, "errno(", 6) && s[n - 1] == ')') {
        char buf[64];
        if (n - 7 >= sizeof buf)
            return -1;
        memcpy(buf, s + 6, n - 7);
        buf[n - 7] = 0;
        int v = profile_errno_parse(buf);
        if (v < 0)
            return -1;
        *a = FB_SC_ERRNO;
        *e = v;
        *has_errno = true;
        return 0;
    }
    return -1;
}

/* A size: "512M", "unlimited" or a number of bytes. */
static int get_size(struct ld *l, const char *path, json_t *j, int64_t *out)
{
    if (json_is_integer(j)) {
        json_int_t v = json_integer_value(j);
        if (v <= 0)
            return perr(l, path, "expected a positive size, got %lld", (long long)v);
        *out = v;
        return 0;
    }
    if (!json_is_string(j))
        return perr(l, path, "expected a size such as \"512M\", \"1G\" or \"unlimited\", got %s",
                    jtype(j));
    if (fb_parse_size(json_string_value(j), out) < 0)
        return perr(l, path, "\"%s\" is not a size such as \"512M\", \"1G\" or \"unlimited\"",
                    json_string_value(j));
    return 0;
}

/* A positive count or "unlimited" (-1). */
static int get_count(struct ld *l, const char *path, json_t *j, int64_t min, int64_t *out)
{
    if (json_is_string(j) && (!strcmp(json_string_value(j), "unlimited") ||
                              !strcmp(json_string_value(j), "max"))) {
        *out = -1;
        return 0;
    }
    if (!json_is_integer(j))
        return perr(l, path, "expected a number or \"unlimited\", got %s", jtype(j));
    json_int_t v = json_integer_value(j);
    if (v < min || v > (1 << 30))
        return perr(l, path, "expected a number from %lld to %d, got %lld", (long long)min, 1 << 30,
                    (long long)v);
    *out = v;
    return 0;
}

/* An argument value: integer (negative = two's complement) or a string:
 * "0x5412", "42", "AF_INET", "CLONE_NEWNS|CLONE_NEWUSER". */
static int get_value(struct ld *l, const char *path, json_t *j, uint64_t *out)
{
    if (json_is_integer(j)) {
        *out = (uint64_t)json_integer_value(j);
        return 0;
    }
    if (json_is_string(j)) {
        const char *s = json_string_value(j);
        if (*s == '-') {
            char *end;
            errno = 0;
            long long v = strtoll(s, &end, 0);
            if (!errno && !*end) {
                *out = (uint64_t)v;
                return 0;
            }
        } else if (seccomp_const_parse(s, out) == 0) {
            return 0;
        }
        return perr(l, path, "\"%s\" is not a number or a known constant", s);
    }
    return perr(l, path, "expected an integer or a string, got %s", jtype(j));
}

/* A path inside the sandbox, normalised: absolute, no "..", not "/". */
static char *inside_path(struct ld *l, const char *path, const char *s)
{
    if (s[0] != '/') {
        perr(l, path, "\"%s\": the path inside the sandbox must be absolute", s);
        return NULL;
    }
    char *out = fb_xmalloc(strlen(s) + 2);
    size_t o = 0;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        size_t n = strcspn(s, "/");
        if (n == 1 && s[0] == '.') {
            s += n;
            continue;
        }
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            free(out);
            perr(l, path, "\"..\" is not allowed in sandbox paths");
            return NULL;
        }
        out[o++] = '/';
        memcpy(out + o, s, n);
        o += n;
        s += n;
    }
    if (!o) {
        free(out);
        perr(l, path, "cannot mount over the sandbox root");
        return NULL;
    }
    out[o] = 0;
    return out;
}

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

static int apply_filesystem(struct ld *l, struct fb_policy *p, json_t *fs)
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

static int apply_environment(struct ld *l, struct fb_policy *p, json_t *env)
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

static int apply_limits(struct ld *l, struct fb_policy *p, json_t *lim)
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

static int apply_network(struct ld *l, struct fb_policy *p, json_t *net)
{
    static const char *const keys[] = {"mode", "allow", "host_allowed", "comment", NULL};
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
    if (p->net == FB_NET_HOST && !p->net_host_allowed)
        return perr(l, "network.mode", "\"host\" needs \"host_allowed\": true");
    if (p->net == FB_NET_HOST && p->nallow)
        return perr(l, "network.allow", "an allowlist cannot be combined with \"mode\": \"host\"");
    if (p->net == FB_NET_NONE && p->nallow)
        return perr(l, "network.allow", "an allowlist needs \"mode\": \"allow\"");
    return 0;
}

static int apply_namespaces(struct ld *l, struct fb_policy *p, json_t *ns)
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

/* At most this many values in one condition's list. */
#define MAX_VALUES 256

/* One value of a condition, checked against the argument's width and the
 * mask; a negative 32-bit value may be written sign-extended (-1). */
static int cond_value(struct ld *l, const char *vp, json_t *jv, const char *syscall,
                      struct fb_sc_arg *a, bool is32, uint64_t *out)
{
    if (get_value(l, vp, jv, out) < 0)
        return -1;
    if (is32 && (*out >> 32) == 0xffffffffu && (*out & 0x80000000u))
        *out &= 0xffffffffu;
    if (is32 && (*out >> 32))
        return perr(l, vp, "0x%llx does not fit argument %u of %s, which is 32 bits",
                    (unsigned long long)*out, a->index, syscall);
    if (a->op == FB_SC_MASKED_EQ && (*out & ~a->mask))
        return perr(l, vp, "value has bits outside mask: the condition could never hold");
    uint64_t max = is32 ? 0xffffffffu : ~(uint64_t)0;
    if ((a->op == FB_SC_LT && *out == 0) || (a->op == FB_SC_GT && *out == max))
        return perr(l, vp, "the condition could never hold");
    return 0;
}

/* One argument condition: {"index", "op", "value", "mask"}. "value" may be a
 * list (eq and masked_eq only): the condition holds for any of them, and the
 * rule becomes one rule per value. The values go to *vals (malloc'ed). */
static int parse_cond(struct ld *l, const char *path, json_t *j, const char *syscall,
                      struct fb_sc_arg *a, uint64_t **vals, size_t *nvals)
{
    static const char *const keys[] = {"index", "op", "value", "mask", "comment", NULL};
    *vals = NULL;
    *nvals = 0;
    if (want_type(l, path, j, JSON_OBJECT, "an object {\"index\", \"op\", \"value\"}") < 0 ||
        check_keys(l, path, j, keys) < 0 || get_comment(l, path, j, NULL) < 0)
        return -1;
    char sp[256];
    json_t *ji = json_object_get(j, "index"), *jo = json_object_get(j, "op"),
           *jv = json_object_get(j, "value"), *jm = json_object_get(j, "mask");
    key_path(sp, sizeof sp, path, "index");
    if (!ji)
        return perr(l, sp, "missing");
    if (!json_is_integer(ji) || json_integer_value(ji) < 0 || json_integer_value(ji) > 5)
        return perr(l, sp, "expected an argument index from 0 to 5");
    a->index = (unsigned)json_integer_value(ji);
    static const struct {
        const char *name;
        enum fb_sc_op op;
    } ops[] = {{"eq", FB_SC_EQ}, {"ne", FB_SC_NE}, {"lt", FB_SC_LT}, {"le", FB_SC_LE},
               {"gt", FB_SC_GT}, {"ge", FB_SC_GE}, {"masked_eq", FB_SC_MASKED_EQ}};
    key_path(sp, sizeof sp, path, "op");
    a->op = FB_SC_EQ;
    if (jo) {
        size_t i;
        for (i = 0; i < FB_ARRAY_LEN(ops); i++)
            if (json_is_string(jo) && !strcmp(json_string_value(jo), ops[i].name))
                break;
        if (i == FB_ARRAY_LEN(ops))
            return perr(l, sp, "expected one of eq, ne, lt, le, gt, ge, masked_eq");
        a->op = ops[i].op;
    }
    bool is32 = seccomp_arg_is32(syscall, a->index);
    a->mask = 0;
    key_path(sp, sizeof sp, path, "mask");
    if (a->op == FB_SC_MASKED_EQ) {
        if (!jm)
            return perr(l, sp, "missing (\"masked_eq\" compares (argument & mask) with value)");
        if (get_value(l, sp, jm, &a->mask) < 0)
            return -1;
        if (is32 && (a->mask >> 32) == 0xffffffffu && (a->mask & 0x80000000u))
            a->mask &= 0xffffffffu;
        if (is32 && (a->mask >> 32))
            return perr(l, sp, "does not fit argument %u of %s, which is 32 bits", a->index, syscall);
    } else if (jm) {
        return perr(l, sp, "only \"masked_eq\" takes a mask");
    }
    key_path(sp, sizeof sp, path, "value");
    if (!jv)
        return perr(l, sp, "missing");
    if (!json_is_array(jv)) {
        *vals = fb_xmalloc(sizeof **vals);
        if (cond_value(l, sp, jv, syscall, a, is32, *vals) < 0) {
            free(*vals);
            *vals = NULL;
            return -1;
        }
        *nvals = 1;
        a->value = **vals;
        return 0;
    }
    if (a->op != FB_SC_EQ && a->op != FB_SC_MASKED_EQ)
        return perr(l, sp, "a list of values needs \"eq\" or \"masked_eq\"");
    size_t n = json_array_size(jv);
    if (n == 0 || n > MAX_VALUES)
        return perr(l, sp, "expected from 1 to %d values", MAX_VALUES);
    *vals = fb_xcalloc(n, sizeof **vals);
    for (size_t i = 0; i < n; i++) {
        char vp[256];
        idx_path(vp, sizeof vp, sp, i);
        if (cond_value(l, vp, json_array_get(jv, i), syscall, a, is32, &(*vals)[i]) < 0) {
            free(*vals);
            *vals = NULL;
            return -1;
        }
    }
    *nvals = n;
    a->value = (*vals)[0];
    return 0;
}

static void rules_free(struct fb_sc_rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].name);
        free(r[i].comment);
    }
    free(r);
}

/* Rules parsed from one file, each with the index of the JSON rule it
 * came from (a rule with "names" or a list of values makes several). */
struct rule_list {
    struct fb_sc_rule *r;
    size_t *src;
    size_t n;
};

static void rule_list_add(struct rule_list *rl, const struct fb_sc_rule *r, size_t src)
{
    rl->r = fb_xrealloc(rl->r, (rl->n + 1) * sizeof *rl->r);
    rl->src = fb_xrealloc(rl->src, (rl->n + 1) * sizeof *rl->src);
    rl->r[rl->n] = *r;
    rl->src[rl->n] = src;
    rl->n++;
}

/* A rule: {"name" | "names", "action", "errno", "args", "comment"}; one
 * fb_sc_rule per name and per value of a condition's list, appended to rl. */
static int parse_rule(struct ld *l, const char *path, json_t *j, size_t ji, struct rule_list *rl)
{
    static const char *const keys[] = {"name", "names", "action", "errno", "args", "comment", NULL};
    if (want_type(l, path, j, JSON_OBJECT, "an object {\"name\", \"action\"}") < 0 ||
        check_keys(l, path, j, keys) < 0)
        return -1;
    char sp[256];
    struct fb_sc_rule r;
    memset(&r, 0, sizeof r);
    json_t *jn = json_object_get(j, "name"), *jns = json_object_get(j, "names"),
           *ja = json_object_get(j, "action"), *je = json_object_get(j, "errno"),
           *jargs = json_object_get(j, "args");
    key_path(sp, sizeof sp, path, "action");
    if (!ja)
        return perr(l, sp, "missing");
    bool has_errno;
    if (!json_is_string(ja) ||
        parse_action(json_string_value(ja), &r.action, &r.errno_val, &has_errno) < 0)
        return perr(l, sp, "expected \"allow\", \"errno\", \"errno(ENAME)\", \"kill\" or \"log\"%s%s%s",
                    json_is_string(ja) ? ", got \"" : "", json_is_string(ja) ? json_string_value(ja) : "",
                    json_is_string(ja) ? "\"" : "");
    key_path(sp, sizeof sp, path, "errno");
    if (je) {
        if (r.action != FB_SC_ERRNO)
            return perr(l, sp, "only the \"errno\" action takes an errno");
        if (has_errno)
            return perr(l, sp, "the errno is already given in \"action\"");
        int v = json_is_string(je) ? profile_errno_parse(json_string_value(je))
                : json_is_integer(je) && json_integer_value(je) > 0 && json_integer_value(je) < 4096
                    ? (int)json_integer_value(je)
                    : -1;
        if (v < 0)
            return perr(l, sp, "expected an errno name such as \"EPERM\" or a number from 1 to 4095");
        r.errno_val = v;
    }
    if (jargs) {
        key_path(sp, sizeof sp, path, "args");
        if (want_type(l, sp, jargs, JSON_ARRAY, "an array of conditions") < 0)
            return -1;
        if (json_array_size(jargs) > 6)
            return perr(l, sp, "at most 6 conditions");
    }
    /* The names. */
    if (jn && jns)
        return perr(l, path, "give \"name\" or \"names\", not both");
    if (!jn && !jns) {
        key_path(sp, sizeof sp, path, "name");
        return perr(l, sp, "missing");
    }
    json_t *names = jns;
    json_t *one = NULL;
    if (jn) {
        one = json_array();
        json_array_append(one, jn);
        names = one;
    } else {
        key_path(sp, sizeof sp, path, "names");
        if (want_type(l, sp, jns, JSON_ARRAY, "an array of syscall names") < 0)
            return -1;
        if (!json_array_size(jns))
            return perr(l, sp, "empty");
    }
    char *comment = NULL;
    if (get_comment(l, path, j, &comment) < 0) {
        json_decref(one);
        return -1;
    }
    size_t i;
    json_t *e;
    int rc = 0;
    json_array_foreach(names, i, e) {
        if (jn)
            key_path(sp, sizeof sp, path, "name");
        else {
            char np[256];
            key_path(np, sizeof np, path, "names");
            idx_path(sp, sizeof sp, np, i);
        }
        if (!json_is_string(e)) {
            rc = perr(l, sp, "expected a syscall name, got %s", jtype(e));
            break;
        }
        const char *name = json_string_value(e);
        if (seccomp_syscall_nr(name) == -1) {
            rc = perr(l, sp, "unknown syscall \"%s\"", name);
            break;
        }
        struct fb_sc_rule rr = r;
        uint64_t *list = NULL; /* the one condition with several values */
        size_t nlist = 1, klist = 0;
        if (jargs) {
            size_t k;
            json_t *c;
            json_array_foreach(jargs, k, c) {
                char ap[256], cp[256];
                key_path(ap, sizeof ap, path, "args");
                idx_path(cp, sizeof cp, ap, k);
                uint64_t *vals;
                size_t nv;
                if (parse_cond(l, cp, c, name, &rr.args[k], &vals, &nv) < 0) {
                    rc = -1;
                    break;
                }
                for (size_t m = 0; m < k && rc == 0; m++)
                    if (rr.args[m].index == rr.args[k].index) {
                        char ip[256];
                        key_path(ip, sizeof ip, cp, "index");
                        rc = perr(l, ip,
                                  "argument %u is already compared by args[%zu] (a rule compares "
                                  "each argument once)",
                                  rr.args[k].index, m);
                    }
                if (rc == 0 && nv > 1 && list) {
                    char vp[256];
                    key_path(vp, sizeof vp, cp, "value");
                    rc = perr(l, vp, "only one condition of a rule may list several values");
                }
                if (rc < 0) {
                    free(vals);
                    break;
                }
                if (nv > 1) {
                    list = vals;
                    nlist = nv;
                    klist = k;
                } else {
                    free(vals);
                }
            }
            if (rc < 0) {
                free(list);
                break;
            }
            rr.nargs = (unsigned)json_array_size(jargs);
        }
        for (size_t v = 0; v < nlist; v++) {
            struct fb_sc_rule one_rule = rr;
            if (list)
                one_rule.args[klist].value = list[v];
            one_rule.name = fb_xstrdup(name);
            one_rule.comment = comment ? fb_xstrdup(comment) : NULL;
            rule_list_add(rl, &one_rule, ji);
        }
        free(list);
    }
    free(comment);
    json_decref(one);
    return rc;
}

/* seccomp: "default" replaces; "rules" replace, syscall by syscall, every
 * rule inherited for the same syscall (docs/profiles.md). */
static int apply_seccomp(struct ld *l, struct fb_policy *p, json_t *sc)
{
    static const char *const keys[] = {"default", "rules", "comment", NULL};
    if (want_type(l, "seccomp", sc, JSON_OBJECT, "an object") < 0 ||
        check_keys(l, "seccomp", sc, keys) < 0 || get_comment(l, "seccomp", sc, NULL) < 0)
        return -1;
    json_t *jd = json_object_get(sc, "default"), *jr = json_object_get(sc, "rules");
    if (jd) {
        bool has;
        enum fb_sc_action a;
        int e;
        if (!json_is_string(jd) || parse_action(json_string_value(jd), &a, &e, &has) < 0)
            return perr(l, "seccomp.default",
                        "expected \"allow\", \"errno\", \"errno(ENAME)\", \"kill\" or \"log\"");
        p->seccomp.default_action = a;
        p->seccomp.default_errno = e;
    }
    if (!jr)
        return 0;
    if (want_type(l, "seccomp.rules", jr, JSON_ARRAY, "an array of rules") < 0)
        return -1;
    struct rule_list mine = {0};
    size_t i;
    json_t *e;
    json_array_foreach(jr, i, e) {
        char ip[256];
        idx_path(ip, sizeof ip, "seccomp.rules", i);
        if (parse_rule(l, ip, e, i, &mine) < 0) {
            rules_free(mine.r, mine.n);
            free(mine.src);
            return -1;
        }
    }
    /* Built-in profiles (no directory) were checked when fluebox was built
     * (`fluebox profile check` runs the full check, and the build runs it on
     * every built-in): the check costs ~1 ms and ~1 MB on every start. */
    struct fb_err cerr = {0};
    if (!l->builtin && seccomp_check_rules(mine.r, mine.n, mine.src, &cerr) < 0) {
        rules_free(mine.r, mine.n);
        free(mine.src);
        return perr(l, NULL, "%s", cerr.msg);
    }
    free(mine.src);
    /* The inherited rules of every syscall this file has rules for go. */
    struct fb_sc_rule *all = fb_xcalloc(mine.n + p->seccomp.nrules + 1, sizeof *all);
    size_t n = 0;
    for (size_t k = 0; k < p->seccomp.nrules; k++) {
        struct fb_sc_rule *old = &p->seccomp.rules[k];
        bool replaced = false;
        for (size_t m = 0; m < mine.n && !replaced; m++)
            replaced = !strcmp(mine.r[m].name, old->name);
        if (replaced) {
            free(old->name);
            free(old->comment);
        } else {
            all[n++] = *old;
        }
    }
    if (mine.n)
        memcpy(all + n, mine.r, mine.n * sizeof *all);
    n += mine.n;
    free(mine.r);
    free(p->seccomp.rules);
    p->seccomp.rules = all;
    p->seccomp.nrules = n;
    return 0;
}

/* ---- the precompiled built-ins ---- */

/* Copy built-in b's precompiled policy into p, which leaves p as loading
 * b's JSON over a policy fresh from policy_init() does (lists append and
 * the rules replace, as for JSON, but p has none yet). Every field a profile
 * can set is copied; profile_builtin_verify() compares the result with the
 * JSON's, through profile_to_json(), which prints every such field. */
static void apply_precompiled(struct fb_policy *p, const struct fb_builtin_policy *b)
{
    const struct fb_policy *s = b->policy;
    free(p->profile_extends);
    p->profile_extends = fb_xstrdup(s->profile_extends);
    free(p->description);
    p->description = fb_xstrdup(s->description);
    for (size_t i = 0; i < s->nmounts; i++) {
        const struct fb_mount *m = &s->mounts[i];
        policy_add_mount(p, m->kind, m->src, m->dst, m->size);
        p->mounts[p->nmounts - 1].optional = m->optional;
    }
    p->workspace_ro = s->workspace_ro;
    p->bind_interpreter = s->bind_interpreter;
    for (size_t i = 0; i < s->nenv_set; i++)
        policy_add_env_set(p, s->env_set[i]);
    for (size_t i = 0; i < s->nenv_pass; i++)
        policy_add_env_pass(p, s->env_pass[i]);
    p->uid = s->uid;
    p->gid = s->gid;
    free(p->hostname);
    p->hostname = fb_xstrdup(s->hostname);
    p->namespaces = s->namespaces;
    p->isolation = s->isolation;
    p->limits = s->limits;
    p->net = s->net;
    p->net_host_allowed = s->net_host_allowed;
    if (s->nallow) {
        p->allow = fb_xrealloc(p->allow, (p->nallow + s->nallow) * sizeof *p->allow);
        for (size_t i = 0; i < s->nallow; i++) {
            p->allow[p->nallow] = s->allow[i];
            p->allow[p->nallow++].name = fb_xstrdup(s->allow[i].name);
        }
    }
    p->seccomp.default_action = s->seccomp.default_action;
    p->seccomp.default_errno = s->seccomp.default_errno;
    policy_clear_rules(p);
    p->seccomp.rules = fb_xcalloc(b->nrules + 1, sizeof *p->seccomp.rules);
    for (size_t i = 0; i < b->nrules; i++) {
        const struct fb_pre_rule *c = &b->rules[i];
        struct fb_sc_rule *r = &p->seccomp.rules[i];
        r->name = fb_xstrdup(c->name);
        r->comment = fb_xstrdup(c->comment);
        r->action = (enum fb_sc_action)c->action;
        r->errno_val = c->errno_val;
        r->nargs = c->nargs <= 6 ? c->nargs : 6;
        memcpy(r->args, b->args + c->first, r->nargs * sizeof *r->args);
    }
    p->seccomp.nrules = b->nrules;
}

/* ---- loading ---- */

static int load_ref(struct ld *parent, struct fb_policy *p, const char *ref, const char *path);

static int apply_root(struct ld *l, struct fb_policy *p, json_t *root)
{
    static const char *const keys[] = {"name", "description", "comment", "extends", "filesystem",
                                       "environment", "limits", "network", "namespaces", "uid",
                                       "gid", "hostname", "seccomp", "isolation", NULL};
    if (!json_is_object(root))
        return perr(l, NULL, "a profile is a JSON object, got %s", jtype(root));
    if (check_keys(l, "", root, keys) < 0 || get_comment(l, "", root, NULL) < 0)
        return -1;
    json_t *j;
    if ((j = json_object_get(root, "extends"))) {
        if (!json_is_string(j) || !*json_string_value(j))
            return perr(l, "extends", "expected the name of a built-in profile or a file, got %s",
                        jtype(j));
        if (load_ref(l, p, json_string_value(j), "extends") < 0)
            return -1;
    }
    if ((j = json_object_get(root, "name"))) {
        if (want_type(l, "name", j, JSON_STRING, "a string") < 0)
            return -1;
    }
    if ((j = json_object_get(root, "description"))) {
        if (want_type(l, "description", j, JSON_STRING, "a string") < 0)
            return -1;
        free(p->description);
        p->description = fb_xstrdup(json_string_value(j));
    }
    if ((j = json_object_get(root, "filesystem")) && apply_filesystem(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "environment")) && apply_environment(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "limits")) && apply_limits(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "network")) && apply_network(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "namespaces")) && apply_namespaces(l, p, j) < 0)
        return -1;
    static const char *const ids[] = {"uid", "gid"};
    for (size_t i = 0; i < 2; i++) {
        if (!(j = json_object_get(root, ids[i])))
            continue;
        if (!json_is_integer(j) || json_integer_value(j) < 0 ||
            json_integer_value(j) >= 4294967295LL)
            return perr(l, ids[i], "expected a numeric id from 0 to 4294967294");
        if (i == 0)
            p->uid = (uid_t)json_integer_value(j);
        else
            p->gid = (gid_t)json_integer_value(j);
    }
    if ((j = json_object_get(root, "hostname"))) {
        if (want_type(l, "hostname", j, JSON_STRING, "a string") < 0)
            return -1;
        const char *h = json_string_value(j);
        size_t n = strlen(h);
        if (n < 1 || n > 64 || strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789.-") != n)
            return perr(l, "hostname", "1 to 64 letters, digits, '.' or '-'");
        free(p->hostname);
        p->hostname = fb_xstrdup(h);
        if (!(p->namespaces & FB_NS_UTS))
            return perr(l, "hostname", "needs the uts namespace (\"namespaces\": {\"uts\": true})");
    }
    if ((j = json_object_get(root, "seccomp")) && apply_seccomp(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "isolation"))) {
        if (want_type(l, "isolation", j, JSON_STRING, "a string") < 0)
            return -1;
        const char *v = json_string_value(j);
        if (!strcmp(v, "namespaces"))
            p->isolation = FB_ISO_NAMESPACES;
        else if (!strcmp(v, "landlock"))
            p->isolation = FB_ISO_LANDLOCK;
        else
            return perr(l, "isolation", "expected \"namespaces\" or \"landlock\", got \"%s\"", v);
    }
    return 0;
}

static int load_json_text(struct ld *l, struct fb_policy *p, const char *text, size_t len)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return fb_errf(l->err, FB_EXIT_SETUP, "%s:%d:%d: invalid JSON: %s", l->label, je.line,
                       je.column, je.text);
    int rc = apply_root(l, p, root);
    json_decref(root);
    return rc;
}

static char *read_profile_file(struct ld *l, const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        perr(l, NULL, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
        close(fd);
        perr(l, NULL, "%s", S_ISREG(st.st_mode) ? "larger than 1 MiB" : "not a regular file");
        return NULL;
    }
    char *buf = fb_xmalloc((size_t)st.st_size + 1);
    ssize_t n = fb_read_full(fd, buf, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        free(buf);
        perr(l, NULL, "%s", strerror(errno));
        return NULL;
    }
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

static bool is_file_ref(const char *ref)
{
    size_t n = strlen(ref);
    return strchr(ref, '/') || (n > 5 && !strcmp(ref + n - 5, ".json"));
}

static void ld_free(struct ld *l)
{
    free(l->dir);
}

/* Load ref (a built-in name or a file, relative to parent's directory) into
 * p. parent is NULL for the top level; path is where ref was written. */
static int load_ref(struct ld *parent, struct fb_policy *p, const char *ref, const char *path)
{
    struct ld l = {.err = parent->err, .files_ok = parent->files_ok, .chain = parent->chain,
                   .labels = parent->labels, .nchain = parent->nchain, .src = parent->src};
    char ident[PATH_MAX + 16];
    cleanup_free char *label = NULL;
    cleanup_free char *text = NULL;
    size_t len = 0;
    const char *btext = NULL;
    const struct fb_builtin_policy *pre = NULL;

    if (!is_file_ref(ref)) {
        btext = builtin_json(ref);
        if (!btext) {
            const char *const *names = profile_builtin_names();
            char list[200] = "";
            size_t o = 0;
            for (size_t i = 0; names[i]; i++)
                o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%s",
                                      i ? ", " : "", names[i]);
            if (parent->label)
                return perr(parent, path, "\"%s\": no such built-in profile (built-in: %s; a file "
                                          "name needs a '/' or .json)", ref, list);
            return fb_errf(parent->err, FB_EXIT_SETUP,
                           "%s: no such built-in profile (built-in: %s; a file name needs a '/' or "
                           ".json)", ref, list);
        }
        if (parent->src != FB_BUILTIN_JSON)
            pre = builtin_policy(ref);
        if (!pre && parent->src == FB_BUILTIN_PRECOMPILED)
            return fb_errf(parent->err, FB_EXIT_SETUP,
                           "%s: this build has no precompiled policy of it", ref);
        snprintf(ident, sizeof ident, "builtin:%s", ref);
        label = fb_xstrdup(ref);
    } else {
        if (!parent->files_ok)
            return perr(parent, path, "\"%s\": only built-in profiles can be extended here", ref);
        const char *r = ref;
        while (r[0] == '.' && r[1] == '/')
            r += 2;
        if (ref[0] != '/' && parent->dir && strcmp(parent->dir, "."))
            label = fb_xasprintf("%s/%s", parent->dir, r);
        else
            label = fb_xstrdup(ref[0] == '/' ? ref : r);
        char real[PATH_MAX];
        if (!realpath(label, real)) {
            int e = errno;
            if (parent->label)
                return perr(parent, path, "\"%s\": %s", ref, strerror(e));
            return fb_errf(parent->err, FB_EXIT_SETUP, "%s: %s", ref, strerror(e));
        }
        snprintf(ident, sizeof ident, "file:%s", real);
        char *slash = strrchr(label, '/');
        l.dir = slash ? fb_xstrndup(label, slash == label ? 1 : (size_t)(slash - label))
                      : fb_xstrdup(".");
    }
    l.label = label;

    /* Cycles. */
    for (size_t i = 0; i < parent->nchain; i++) {
        if (strcmp(parent->chain[i], ident))
            continue;
        char msg[400];
        size_t o = 0;
        msg[0] = 0;
        for (size_t k = i; k < parent->nchain; k++)
            o += (size_t)snprintf(msg + o, o < sizeof msg ? sizeof msg - o : 0, "%s -> ",
                                  parent->labels[k]);
        snprintf(msg + o, o < sizeof msg ? sizeof msg - o : 0, "%s", label);
        ld_free(&l);
        return perr(parent, path, "\"extends\" makes a cycle: %s", msg);
    }
    if (parent->nchain >= MAX_DEPTH) {
        ld_free(&l);
        return perr(parent, path, "profiles extend each other more than %d deep", MAX_DEPTH);
    }
    char *chain[MAX_DEPTH + 1], *labels[MAX_DEPTH + 1];
    for (size_t i = 0; i < parent->nchain; i++) {
        chain[i] = parent->chain[i];
        labels[i] = parent->labels[i];
    }
    chain[parent->nchain] = ident;
    labels[parent->nchain] = label;
    l.chain = chain;
    l.labels = labels;
    l.nchain = parent->nchain + 1;

    if (!btext) {
        text = read_profile_file(&l, label, &len);
        if (!text) {
            ld_free(&l);
            return -1;
        }
    }
    l.builtin = btext != NULL && !getenv("FLUEBOX_CHECK_BUILTINS");
    int rc = 0;
    if (pre)
        apply_precompiled(p, pre);
    else
        rc = btext ? load_json_text(&l, p, btext, strlen(btext)) : load_json_text(&l, p, text, len);
    ld_free(&l);
    if (rc < 0)
        return -1;
    /* Remember what was extended, for show and the report. */
    if (parent->label) {
        char *old = p->profile_extends;
        p->profile_extends = old ? fb_xasprintf("%s < %s", label, old) : fb_xstrdup(label);
        free(old);
    }
    return 0;
}

static void set_name(struct fb_policy *p, const char *name)
{
    free(p->profile_name);
    p->profile_name = fb_xstrdup(name);
}

/* FLUEBOX_CHECK_BUILTINS: built-ins from their JSON, every check on. */
static enum fb_builtin_src default_src(void)
{
    return getenv("FLUEBOX_CHECK_BUILTINS") ? FB_BUILTIN_JSON : FB_BUILTIN_ANY;
}

int profile_load(struct fb_policy *p, const char *name_or_path, struct fb_err *err)
{
    return profile_load_from(p, name_or_path, default_src(), err);
}

int profile_load_from(struct fb_policy *p, const char *name_or_path, enum fb_builtin_src src,
                      struct fb_err *err)
{
    struct ld top = {.err = err, .files_ok = true, .src = src};
    free(p->profile_extends);
    p->profile_extends = NULL;
    if (load_ref(&top, p, name_or_path, NULL) < 0)
        return -1;
    set_name(p, name_or_path);
    /* Files are checked as a whole; the built-in ones are tested. */
    if (is_file_ref(name_or_path) && seccomp_validate(p, err) < 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return fb_errf(err, FB_EXIT_SETUP, "%s: %s", name_or_path, msg);
    }
    return 0;
}

int profile_load_text(struct fb_policy *p, const char *label, const char *text, size_t len,
                      struct fb_err *err)
{
    struct ld l = {.label = label, .err = err, .files_ok = false, .src = default_src()};
    char ident[64];
    snprintf(ident, sizeof ident, "text:%s", label);
    char *chain[1] = {ident}, *labels[1] = {(char *)label};
    l.chain = chain;
    l.labels = labels;
    l.nchain = 1;
    if (load_json_text(&l, p, text, len) < 0)
        return -1;
    set_name(p, label);
    if (seccomp_validate(p, err) < 0) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return fb_errf(err, FB_EXIT_SETUP, "%s: %s", label, msg);
    }
    return 0;
}

/* ---- the effective policy as a profile ---- */

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

static char *action_str(enum fb_sc_action a, int e)
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

/* The first line where texts a and b differ, in out (cut, one line). */
static size_t first_diff(const char *a, const char *b, char *out, size_t cap)
{
    size_t line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    snprintf(out, cap, "%.*s | %.*s", (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
    return line;
}

int profile_builtin_verify(const char *name, struct fb_err *err)
{
    if (is_file_ref(name) || !builtin_json(name))
        return fb_errf(err, FB_EXIT_SETUP, "%s: not a built-in profile", name);
    if (!builtin_policy(name))
        return 1;
    struct fb_policy js, pre;
    policy_init(&js);
    policy_init(&pre);
    int rc = -1;
    if (profile_load_from(&js, name, FB_BUILTIN_JSON, err) < 0 ||
        profile_load_from(&pre, name, FB_BUILTIN_PRECOMPILED, err) < 0)
        goto out;
    char *a = profile_to_json(&js), *b = profile_to_json(&pre);
    if (strcmp(a, b)) {
        char where[300];
        size_t line = first_diff(a, b, where, sizeof where);
        fb_errf(err, FB_EXIT_SETUP,
                "%s: the precompiled policy differs from its JSON's (profile show, line %zu, "
                "JSON | precompiled: %s); rebuild fluebox",
                name, line, where);
    } else if (seccomp_policy_key(&js) != seccomp_policy_key(&pre)) {
        fb_errf(err, FB_EXIT_SETUP,
                "%s: the precompiled seccomp rules differ from its JSON's; rebuild fluebox", name);
    } else {
        rc = 0;
    }
    free(a);
    free(b);
out:
    policy_free(&js);
    policy_free(&pre);
    return rc;
}

/* ---- fluebox profile ---- */

static const char profile_usage[] =
    "Usage: fluebox profile list\n"
    "       fluebox profile show NAME|FILE   the effective policy, as a profile (JSON)\n"
    "       fluebox profile check FILE...    validate; exit 0 if valid, 1 if not\n"
    "       fluebox profile bpf NAME|FILE [--seccomp-log|--learn]\n"
    "                                        the seccomp filters, as libseccomp dumps them\n";

static int profile_subcommand(const char *sub, int nops, char **ops, enum fb_sc_mode mode);

static int set_bpf_mode(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    *(enum fb_sc_mode *)ctx = !strcmp(o->name, "learn") ? FB_SCM_LEARN : FB_SCM_LOG;
    return 0;
}

static const struct fb_opt bpf_opts[] = {
    {"seccomp-log", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_bpf_mode,
     "the filters as --seccomp-log runs them", NULL},
    {"learn", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_bpf_mode,
     "the filters as fluebox learn runs them", NULL},
};

int cmd_profile(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(profile_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? FB_EXIT_SETUP : 0;
    }
    const char *sub = argv[0];
    static const struct {
        const char *name, *usage;
        int min, max;
    } subs[] = {
        {"list", "Usage: fluebox profile list\nThe built-in profiles.\n\n", 0, 0},
        {"show", "Usage: fluebox profile show NAME|FILE\nThe effective policy, as a profile (JSON).\n\n", 1, 1},
        {"check", "Usage: fluebox profile check NAME|FILE...\nValidates; exit 0 if valid, 1 if not.\n\n", 1, 1 << 20},
        {"bpf", "Usage: fluebox profile bpf [OPTIONS] NAME|FILE\nThe seccomp filters, as libseccomp dumps them.\n\n", 1, 1},
    };
    size_t k;
    for (k = 0; k < FB_ARRAY_LEN(subs) && strcmp(sub, subs[k].name); k++)
        ;
    if (k == FB_ARRAY_LEN(subs)) {
        fb_warn("profile %s: unknown subcommand (list, show, check, bpf; see fluebox profile --help)", sub);
        return FB_EXIT_SETUP;
    }
    enum fb_sc_mode mode = FB_SCM_ENFORCE;
    struct fb_optset set = {bpf_opts, !strcmp(sub, "bpf") ? FB_ARRAY_LEN(bpf_opts) : 0, &mode};
    struct fb_parsed parsed;
    struct fb_err perr = {0};
    char cmd[32];
    snprintf(cmd, sizeof cmd, "profile %s", sub);
    int r = opt_parse(argc - 1, argv + 1, &set, 1, FB_OPT_ANY | FB_PARSE_PERMUTE, cmd, &parsed, &perr);
    if (r == 1) {
        fputs(subs[k].usage, stdout);
        opt_help(stdout, &set, 1, FB_OPT_ANY);
        return 0;
    }
    if (r == 0 && (parsed.nargs < subs[k].min || parsed.nargs > subs[k].max)) {
        r = fb_errf(&perr, FB_EXIT_SETUP, "profile %s: expected %s (see fluebox profile %s --help)",
                    sub, subs[k].max == 0 ? "no arguments" : subs[k].max == 1 ? "one profile" : "profiles", sub);
        opt_parsed_free(&parsed);
    }
    if (r < 0 || opt_apply(&parsed, &mode, &perr) < 0) {
        opt_parsed_free(&parsed);
        fb_warn("%s", perr.msg);
        return FB_EXIT_SETUP;
    }
    int rc = profile_subcommand(sub, parsed.nargs, parsed.args, mode);
    opt_parsed_free(&parsed);
    return rc;
}

/* The subcommand, its operands checked for number. */
static int profile_subcommand(const char *sub, int nops, char **ops, enum fb_sc_mode mode)
{
    if (!strcmp(sub, "list")) {
        const char *const *names = profile_builtin_names();
        for (size_t i = 0; names[i]; i++) {
            struct fb_policy p;
            struct fb_err err = {0};
            policy_init(&p);
            if (profile_load(&p, names[i], &err) < 0)
                printf("%-10s (broken: %s)\n", names[i], err.msg);
            else
                printf("%-10s %s%s\n", names[i], p.description ? p.description : "",
                       !strcmp(names[i], FB_DEFAULT_PROFILE) ? " [default]" : "");
            policy_free(&p);
        }
        return 0;
    }
    if (!strcmp(sub, "show")) {
        struct fb_policy p;
        struct fb_err err = {0};
        policy_init(&p);
        if (profile_load(&p, ops[0], &err) < 0) {
            fb_warn("%s", err.msg);
            policy_free(&p);
            return 1;
        }
        char *s = profile_to_json(&p);
        fputs(s, stdout);
        free(s);
        policy_free(&p);
        return 0;
    }
    if (!strcmp(sub, "check")) {
        int rc = 0;
        for (int i = 0; i < nops; i++) {
            struct fb_policy p;
            struct fb_err err = {0};
            int pre = 1;
            policy_init(&p);
            if (profile_load(&p, ops[i], &err) < 0) {
                fb_warn("%s", err.msg);
                rc = 1;
            } else if (seccomp_check_compile(&p, &err) < 0) {
                fb_warn("%s: %s", ops[i], err.msg);
                rc = 1;
            } else if (!is_file_ref(ops[i]) && (pre = profile_builtin_verify(ops[i], &err)) < 0) {
                fb_warn("%s", err.msg);
                rc = 1;
            } else {
                char *def = action_str(p.seccomp.default_action, p.seccomp.default_errno);
                const char *from = p.profile_extends ? "extends "
                                   : is_file_ref(ops[i]) ? "no extends: starts from fluebox's bare defaults"
                                                          : "built-in";
                const char *how = is_file_ref(ops[i]) ? ""
                                  : pre == 0 ? ", precompiled policy identical to its JSON's"
                                             : ", not precompiled in this build";
                printf("%s: ok (%s%s%s; %zu seccomp rules, default %s)\n", ops[i], from,
                       p.profile_extends ? p.profile_extends : "", how, p.seccomp.nrules, def);
                free(def);
            }
            policy_free(&p);
        }
        return rc;
    }
    if (!strcmp(sub, "bpf")) {
        struct fb_policy p;
        struct fb_err err = {0};
        policy_init(&p);
        int rc = 0;
        fflush(stdout);
        if (profile_load(&p, ops[0], &err) < 0 || seccomp_dump(&p, mode, 1, &err) < 0) {
            fb_warn("%s", err.msg);
            rc = 1;
        }
        policy_free(&p);
        return rc;
    }
    return FB_EXIT_SETUP;
}
