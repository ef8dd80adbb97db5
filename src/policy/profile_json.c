/* profile_json.c — walking a profile's JSON (profile_int.h): errors that
 * name the profile and the JSON path of the bad field, paths built without
 * printf, type, key and "comment" checks, and the parsers of the values a
 * profile holds: errno names, seccomp actions, sizes, counts, argument
 * values and paths inside the sandbox. */
#include "profile_int.h"

#include "seccomp.h"

#include <stdarg.h>
#include <string.h>

/* ---- error reporting ---- */

int perr(struct ld *l, const char *path, const char *fmt, ...)
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

const char *jtype(const json_t *j)
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
void key_path(char *out, size_t cap, const char *path, const char *key)
{
    size_t o = 0;
    if (path && *path) {
        o = path_put(out, cap, o, path);
        o = path_put(out, cap, o, ".");
    }
    path_put(out, cap, o, key);
}

/* "path[i]" */
void idx_path(char *out, size_t cap, const char *path, size_t i)
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

int want_type(struct ld *l, const char *path, const json_t *j, json_type t,
                     const char *what)
{
    if (json_typeof(j) == t || (t == JSON_TRUE && json_typeof(j) == JSON_FALSE))
        return 0;
    return perr(l, path, "expected %s, got %s", what, jtype(j));
}

/* Every key of obj must be in keys (NULL-terminated). */
int check_keys(struct ld *l, const char *path, json_t *obj, const char *const *keys)
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
int get_comment(struct ld *l, const char *path, json_t *obj, char **out)
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
int parse_action(const char *s, enum fb_sc_action *a, int *e, bool *has_errno)
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
int get_size(struct ld *l, const char *path, json_t *j, int64_t *out)
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
int get_count(struct ld *l, const char *path, json_t *j, int64_t min, int64_t *out)
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
int get_value(struct ld *l, const char *path, json_t *j, uint64_t *out)
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
char *inside_path(struct ld *l, const char *path, const char *s)
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
