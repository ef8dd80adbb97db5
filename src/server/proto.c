/* proto.c — the wire protocol's pure parts (see proto.h and
 * docs/protocol.md). Everything that touches bytes from a client before the
 * server trusts them lives here, small and fuzzed. */
#include "proto.h"
#include "methods.h"
#include "userdir.h"

#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

/* ---- errors ---- */

int perr_set(struct proto_err *e, const char *code, const char *fmt, ...)
{
    e->code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

int perr_param(struct proto_err *e, const char *param, const char *fmt, ...)
{
    e->code = "invalid_params";
    snprintf(e->param, sizeof e->param, "%s", param);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return -1;
}

void perr_clear(struct proto_err *e)
{
    free(e->path);
    memset(e, 0, sizeof *e);
}

/* ---- requests ---- */

/* The names from the one method list (methods.h); the server's dispatch
 * table is made from the same list. */
#define METHOD_NAME(name, fn, scope, arg) name,
const char *const proto_methods[] = {FB_METHODS(METHOD_NAME) NULL};
#undef METHOD_NAME

bool proto_method_known(const char *m)
{
    for (size_t i = 0; proto_methods[i]; i++)
        if (!strcmp(m, proto_methods[i]))
            return true;
    return false;
}

#define ID_INT_MAX 9007199254740992LL /* 2^53 */

/* Big strings (file.write data, stdin) make jansson's byte-at-a-time lexer
 * the server's main cost. A string longer than proto_bulk_min with no
 * escape in it is cut out of the line before parsing, replaced by a short
 * placeholder, checked (UTF-8, no control characters: what jansson would
 * check) and put back into the tree. The result is the same tree; the fuzz
 * target compares both ways. */
size_t proto_bulk_min = 65536;

struct bulk_span {
    size_t off, len; /* the string's content in the line */
};

#define MAX_SPANS 64

/* The placeholder, as it reads after parsing: NUL, "fbbulk:", a per-process
 * random nonce, ":", the span's index. A client string cannot collide with
 * it by accident. */
static char bulk_prefix[32];
static size_t bulk_prefix_len;

static void bulk_init(void)
{
    if (bulk_prefix_len)
        return;
    unsigned char r[8] = {0};
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = fb_now_ns();
        memcpy(r, &t, sizeof r);
    }
    bulk_prefix[0] = 0;
    int n = snprintf(bulk_prefix + 1, sizeof bulk_prefix - 1, "fbbulk:%02x%02x%02x%02x%02x%02x%02x%02x:",
                     r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7]);
    bulk_prefix_len = 1 + (size_t)n;
}

/* The index of a placeholder string, or -1. */
static long bulk_index(json_t *x)
{
    const char *s = json_string_value(x);
    size_t l = json_string_length(x);
    if (l <= bulk_prefix_len || memcmp(s, bulk_prefix, bulk_prefix_len))
        return -1;
    return strtol(s + bulk_prefix_len, NULL, 10);
}

static bool bulk_ok(const char *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)p[i] < 0x20)
            return false;
    return utf8_valid((const unsigned char *)p, n);
}

/* Replace placeholders in the tree. Returns false if one is malformed. */
static bool bulk_put_back(json_t *v, const char *line, const struct bulk_span *sp, size_t nsp,
                          unsigned depth)
{
    if (depth > 4096)
        return true;
    if (json_is_object(v)) {
        const char *k;
        json_t *x;
        json_object_foreach(v, k, x)
        {
            if (json_is_string(x)) {
                long i = bulk_index(x);
                if (i >= (long)nsp)
                    return false;
                if (i >= 0)
                    json_object_set_new(v, k, json_stringn_nocheck(line + sp[i].off, sp[i].len));
            } else if (!bulk_put_back(x, line, sp, nsp, depth + 1)) {
                return false;
            }
        }
    } else if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x)
        {
            if (json_is_string(x)) {
                long k = bulk_index(x);
                if (k >= (long)nsp)
                    return false;
                if (k >= 0)
                    json_array_set_new(v, i, json_stringn_nocheck(line + sp[k].off, sp[k].len));
            } else if (!bulk_put_back(x, line, sp, nsp, depth + 1)) {
                return false;
            }
        }
    }
    return true;
}

/* Parse line, cutting big plain strings out first. NULL with jerr set on
 * a parse error. */
static json_t *load_line(const char *line, size_t len, json_error_t *jerr)
{
    const size_t flags = JSON_REJECT_DUPLICATES | JSON_DECODE_ANY | JSON_ALLOW_NUL;
    struct bulk_span sp[MAX_SPANS];
    size_t nsp = 0;
    if (len >= proto_bulk_min) {
        size_t i = 0;
        while (i < len && nsp < MAX_SPANS) {
            const char *q = memchr(line + i, '"', len - i);
            if (!q)
                break;
            size_t start = (size_t)(q - line) + 1, j = start;
            bool plain = true;
            for (;;) {
                const char *q2 = memchr(line + j, '"', len - j);
                const char *bs = memchr(line + j, '\\', q2 ? (size_t)(q2 - (line + j)) : len - j);
                if (bs) {
                    plain = false;
                    j = (size_t)(bs - line) + 2; /* skip the escaped character */
                    if (j >= len)
                        break;
                    continue;
                }
                j = q2 ? (size_t)(q2 - line) : len;
                break;
            }
            if (j >= len)
                break; /* unterminated: jansson reports it */
            size_t n = j - start;
            /* A string followed by ':' is a key: keys stay as they are. */
            size_t after = j + 1;
            while (after < len && (line[after] == ' ' || line[after] == '\t' ||
                                   line[after] == '\r' || line[after] == '\n'))
                after++;
            bool key = after < len && line[after] == ':';
            if (plain && !key && n >= proto_bulk_min) {
                if (!bulk_ok(line + start, n))
                    break; /* let jansson produce the error */
                sp[nsp].off = start;
                sp[nsp].len = n;
                nsp++;
            }
            i = j + 1;
        }
    }
    if (!nsp)
        return json_loadb(line, len, flags, jerr);
    bulk_init();
    struct fb_buf b = {0};
    size_t at = 0;
    for (size_t k = 0; k < nsp; k++) {
        char tag[64];
        int tl = snprintf(tag, sizeof tag, "\\u0000%s%zu", bulk_prefix + 1, k);
        buf_append(&b, line + at, sp[k].off - at);
        buf_append(&b, tag, (size_t)tl);
        at = sp[k].off + sp[k].len;
    }
    buf_append(&b, line + at, len - at);
    json_t *root = json_loadb(buf_head(&b), buf_pending(&b), flags, jerr);
    buf_free(&b);
    if (root && !bulk_put_back(root, line, sp, nsp, 0)) {
        json_decref(root);
        root = NULL;
        snprintf(jerr->text, sizeof jerr->text, "malformed request");
        jerr->column = 0;
    }
    return root;
}

int proto_parse_request(const char *line, size_t len, struct proto_req *req, struct proto_err *e)
{
    memset(req, 0, sizeof *req);
    json_error_t jerr;
    /* Depth is bounded by jansson itself. NUL inside strings is valid JSON:
     * accepted here, refused per parameter (pget_str) where a C string is
     * needed. */
    json_t *root = load_line(line, len, &jerr);
    if (!root)
        return perr_set(e, "parse_error", "invalid JSON at column %d: %s", jerr.column, jerr.text);
    req->root = root;
    if (!json_is_object(root))
        return perr_set(e, "invalid_request", "a request must be a JSON object");
    json_t *id = json_object_get(root, "id");
    if (json_is_string(id)) {
        size_t l = json_string_length(id);
        if (l >= 1 && l <= 128)
            req->id = id;
    } else if (json_is_integer(id)) {
        json_int_t v = json_integer_value(id);
        if (v >= -ID_INT_MAX && v <= ID_INT_MAX)
            req->id = id;
    }
    if (!req->id)
        return perr_set(e, "invalid_request",
                        "\"id\" must be a string of 1 to 128 bytes or an integer");
    json_t *m = json_object_get(root, "method");
    if (!json_is_string(m))
        return perr_set(e, "invalid_request", "\"method\" must be a string");
    req->method = json_string_value(m);
    if (strlen(req->method) != json_string_length(m))
        return perr_set(e, "method_not_found", "unknown method (it contains NUL)");
    json_t *params = json_object_get(root, "params");
    if (!params || json_is_null(params)) {
        params = json_object();
        json_object_set_new(root, "params", params);
    } else if (!json_is_object(params)) {
        return perr_set(e, "invalid_request", "\"params\" must be an object");
    }
    req->params = params;
    if (!proto_method_known(req->method))
        return perr_set(e, "method_not_found", "unknown method \"%.64s\"", req->method);
    return 0;
}

json_t *proto_peek_id(const char *buf, size_t n)
{
    /* {  "id"  :  <integer or string without escapes> */
    size_t i = 0;
#define SKIPWS()                                                                  \
    while (i < n && (buf[i] == ' ' || buf[i] == '\t' || buf[i] == '\r'))          \
        i++
    SKIPWS();
    if (i >= n || buf[i++] != '{')
        return NULL;
    SKIPWS();
    if (n - i < 4 || memcmp(buf + i, "\"id\"", 4))
        return NULL;
    i += 4;
    SKIPWS();
    if (i >= n || buf[i++] != ':')
        return NULL;
    SKIPWS();
#undef SKIPWS
    size_t start = i;
    if (i < n && buf[i] == '"') {
        i++;
        while (i < n && i - start <= 130 && buf[i] != '"' && buf[i] != '\\')
            i++;
        if (i >= n || buf[i] != '"')
            return NULL;
        i++;
    } else {
        if (i < n && buf[i] == '-')
            i++;
        while (i < n && i - start < 20 && buf[i] >= '0' && buf[i] <= '9')
            i++;
    }
    if (i == start || i >= n || (buf[i] != ',' && buf[i] != '}' && buf[i] != ' '))
        return NULL;
    json_t *id = json_loadb(buf + start, i - start, JSON_DECODE_ANY, NULL);
    bool good = false;
    if (json_is_string(id))
        good = json_string_length(id) >= 1 && json_string_length(id) <= 128;
    else if (json_is_integer(id))
        good = json_integer_value(id) >= -ID_INT_MAX && json_integer_value(id) <= ID_INT_MAX;
    if (!good) {
        json_decref(id);
        return NULL;
    }
    return id;
}

void proto_req_free(struct proto_req *req)
{
    json_decref(req->root);
    memset(req, 0, sizeof *req);
}

/* ---- parameters ---- */

/* Find key (one level of "a.b" nesting). *parent_bad set when a parent
 * exists but is not an object. */
static json_t *pfind(json_t *params, const char *key, bool *parent_bad)
{
    *parent_bad = false;
    const char *dot = strchr(key, '.');
    if (!dot)
        return json_object_get(params, key);
    char head[64];
    size_t l = (size_t)(dot - key);
    if (l >= sizeof head)
        return NULL;
    memcpy(head, key, l);
    head[l] = 0;
    json_t *sub = json_object_get(params, head);
    if (!sub || json_is_null(sub))
        return NULL;
    if (!json_is_object(sub)) {
        *parent_bad = true;
        return NULL;
    }
    return json_object_get(sub, dot + 1);
}

static int parent_err(const char *key, struct proto_err *e)
{
    char head[64];
    const char *dot = strchr(key, '.');
    size_t l = dot ? (size_t)(dot - key) : strlen(key);
    if (l >= sizeof head)
        l = sizeof head - 1;
    memcpy(head, key, l);
    head[l] = 0;
    return perr_param(e, head, "%s must be an object", head);
}

/* The value of params.key for a pget_*: 1 with *v set when it is there, 0 when
 * it is absent or null (an error when required), -1 on an error. */
static int pget_value(json_t *params, const char *key, bool required, json_t **v,
                      struct proto_err *e)
{
    bool bad;
    *v = pfind(params, key, &bad);
    if (bad)
        return parent_err(key, e);
    if (*v && !json_is_null(*v))
        return 1;
    if (required)
        return perr_param(e, key, "%s is required", key);
    return 0;
}

int pget_str(json_t *params, const char *key, const char **out, const char *dflt, bool required,
             size_t maxlen, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, required, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = dflt;
        return 0;
    }
    if (!json_is_string(v))
        return perr_param(e, key, "%s must be a string", key);
    if (maxlen && json_string_length(v) > maxlen)
        return perr_param(e, key, "%s is longer than %zu bytes", key, maxlen);
    if (strlen(json_string_value(v)) != json_string_length(v))
        return perr_param(e, key, "%s must not contain NUL characters", key);
    *out = json_string_value(v);
    return 0;
}

int pget_bytes(json_t *params, const char *key, const char **out, size_t *len, bool required,
               struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, required, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = NULL;
        *len = 0;
        return 0;
    }
    if (!json_is_string(v))
        return perr_param(e, key, "%s must be a string", key);
    *out = json_string_value(v);
    *len = json_string_length(v);
    return 0;
}

int pget_bool(json_t *params, const char *key, bool *out, bool dflt, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = dflt;
        return 0;
    }
    if (!json_is_boolean(v))
        return perr_param(e, key, "%s must be true or false", key);
    *out = json_is_true(v);
    return 0;
}

int pget_int(json_t *params, const char *key, int64_t *out, int64_t dflt, int64_t min,
             int64_t max, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = dflt;
        return 0;
    }
    if (!json_is_integer(v))
        return perr_param(e, key, "%s must be an integer", key);
    json_int_t x = json_integer_value(v);
    if (x < min || x > max)
        return perr_param(e, key, "%s must be between %lld and %lld", key, (long long)min,
                          (long long)max);
    *out = x;
    return 0;
}

int pget_size(json_t *params, const char *key, int64_t *out, int64_t dflt, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = dflt;
        return 0;
    }
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < -1)
            return perr_param(e, key, "%s must be a size >= 0, or -1 for unlimited", key);
        *out = x;
        return 0;
    }
    int64_t n;
    if (json_is_string(v) && fb_parse_size(json_string_value(v), &n) == 0) {
        *out = n;
        return 0;
    }
    return perr_param(e, key, "%s must be a size in bytes, a string such as \"512M\", or -1",
                      key);
}

int pget_mode(json_t *params, const char *key, unsigned *out, unsigned dflt, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = dflt;
        return 0;
    }
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        if (x < 0 || x > 07777)
            return perr_param(e, key, "%s must be between 0 and 4095 (07777)", key);
        *out = (unsigned)x;
        return 0;
    }
    if (json_is_string(v)) {
        const char *s = json_string_value(v);
        size_t l = strlen(s);
        unsigned m = 0;
        if (l >= 1 && l <= 5) {
            size_t i;
            for (i = 0; i < l && s[i] >= '0' && s[i] <= '7'; i++)
                m = m * 8 + (unsigned)(s[i] - '0');
            if (i == l && m <= 07777) {
                *out = m;
                return 0;
            }
        }
    }
    return perr_param(e, key, "%s must be an integer or an octal string such as \"0644\"", key);
}

int pget_encoding(json_t *params, const char *key, bool *base64, struct proto_err *e)
{
    const char *s;
    if (pget_str(params, key, &s, "utf8", false, 16, e) < 0)
        return -1;
    if (!strcmp(s, "utf8") || !strcmp(s, "text") || !strcmp(s, "utf-8")) {
        *base64 = false;
        return 0;
    }
    if (!strcmp(s, "base64")) {
        *base64 = true;
        return 0;
    }
    return perr_param(e, key, "%s must be \"utf8\" or \"base64\"", key);
}

int pget_path(json_t *params, const char *key, const char **out, struct proto_err *e)
{
    if (pget_str(params, key, out, NULL, true, 4095, e) < 0)
        return -1;
    if (!**out)
        return perr_param(e, key, "%s must not be empty", key);
    return 0;
}

int pget_strarray(json_t *params, const char *key, json_t **out, bool nonempty_items,
                  struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = NULL;
        return 0;
    }
    if (!json_is_array(v))
        return perr_param(e, key, "%s must be an array of strings", key);
    size_t i;
    json_t *it;
    json_array_foreach(v, i, it)
    {
        if (!json_is_string(it))
            return perr_param(e, key, "%s[%zu] must be a string", key, i);
        if (nonempty_items && !json_string_length(it))
            return perr_param(e, key, "%s[%zu] must not be empty", key, i);
        if (strlen(json_string_value(it)) != json_string_length(it))
            return perr_param(e, key, "%s[%zu] must not contain NUL characters", key, i);
    }
    *out = v;
    return 0;
}

int pget_strmap(json_t *params, const char *key, json_t **out, struct proto_err *e)
{
    json_t *v;
    int have = pget_value(params, key, false, &v, e);
    if (have < 0)
        return -1;
    if (!have) {
        *out = NULL;
        return 0;
    }
    if (!json_is_object(v))
        return perr_param(e, key, "%s must be an object of strings", key);
    const char *k;
    json_t *it;
    json_object_foreach(v, k, it)
    {
        if (!json_is_string(it))
            return perr_param(e, key, "%s.%.32s must be a string", key, k);
        if (strlen(json_string_value(it)) != json_string_length(it))
            return perr_param(e, key, "%s.%.32s must not contain NUL characters", key, k);
    }
    *out = v;
    return 0;
}

/* ---- encoders ---- */

static char *dump_line(json_t *obj, size_t *len)
{
    char *s = json_dumps(obj, JSON_COMPACT);
    json_decref(obj);
    if (!s) {
        /* Only on allocation failure or invalid UTF-8 we put in: a bug. */
        s = fb_xstrdup("{\"id\":null,\"error\":{\"code\":\"internal\",\"message\":\"cannot encode the response\"}}");
    }
    size_t l = strlen(s);
    s = fb_xrealloc(s, l + 2);
    s[l] = '\n';
    s[l + 1] = 0;
    *len = l + 1;
    return s;
}

static json_t *id_or_null(json_t *id)
{
    return id ? json_incref(id) : json_null();
}

char *proto_result_line(json_t *id, json_t *result, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", id_or_null(id));
    json_object_set_new(o, "result", result ? result : json_object());
    return dump_line(o, len);
}

char *proto_error_line(json_t *id, const struct proto_err *e, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", id_or_null(id));
    json_t *er = json_object();
    json_object_set_new(er, "code", json_string(e->code ? e->code : "internal"));
    /* Messages may quote client bytes; keep them valid UTF-8. */
    size_t ml = strlen(e->message);
    char *fixed = fb_xmalloc(3 * ml + 1);
    size_t used;
    size_t fl = utf8_repair((const unsigned char *)e->message, ml, fixed, true, &used);
    json_object_set_new(er, "message", json_stringn(fixed, fl));
    free(fixed);
    if (e->param[0])
        json_object_set_new(er, "param", json_string(e->param));
    if (e->limit[0])
        json_object_set_new(er, "limit", json_string(e->limit));
    if (e->path) {
        size_t pl = strlen(e->path);
        char *pf = fb_xmalloc(3 * pl + 1);
        size_t l2 = utf8_repair((const unsigned char *)e->path, pl, pf, true, &used);
        json_object_set_new(er, "path", json_stringn(pf, l2));
        free(pf);
    }
    json_object_set_new(o, "error", er);
    return dump_line(o, len);
}

char *proto_event_line(json_t *id, const char *event, json_t *fields, size_t *len)
{
    json_t *o = json_object();
    json_object_set_new(o, "id", id_or_null(id));
    json_object_set_new(o, "event", json_string(event));
    if (fields) {
        json_object_update(o, fields);
        json_decref(fields);
    }
    return dump_line(o, len);
}

/* The JSON string body (no quotes) of bytes taken as UTF-8, invalid
 * sequences replaced by U+FFFD, escaped the way jansson escapes. */
size_t json_text(const unsigned char *in, size_t n, char *out)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t i = 0, o = 0;
    while (i < n) {
        unsigned char c = in[i];
        if (c >= 0x20 && c != '"' && c != '\\' && c < 0x80) {
            if (out)
                out[o] = (char)c;
            o++;
            i++;
            continue;
        }
        if (c < 0x80) {
            char e = c == '"' ? '"' : c == '\\' ? '\\' : c == '\b' ? 'b' : c == '\f' ? 'f'
                   : c == '\n' ? 'n' : c == '\r' ? 'r' : c == '\t' ? 't' : 0;
            if (out) {
                out[o] = '\\';
                if (e) {
                    out[o + 1] = e;
                } else {
                    memcpy(out + o + 1, "u00", 3);
                    out[o + 4] = hex[c >> 4];
                    out[o + 5] = hex[c & 15];
                }
            }
            o += e ? 2 : 6;
            i++;
            continue;
        }
        int l = utf8_seq(in + i, n - i);
        if (l > 0) {
            if (out)
                memcpy(out + o, in + i, (size_t)l);
            o += (size_t)l;
            i += (size_t)l;
        } else {
            if (out)
                memcpy(out + o, "\xEF\xBF\xBD", 3);
            o += 3;
            i++;
        }
    }
    return o;
}

/* ---- names ---- */

const char *proto_errno_name(int e)
{
    const char *n = e > 0 ? strerrorname_np(e) : NULL;
    return n ? n : "EIO";
}

static const struct {
    const char *name;
    int sig;
} sigs[] = {
    {"SIGTERM", SIGTERM}, {"SIGKILL", SIGKILL}, {"SIGINT", SIGINT},   {"SIGHUP", SIGHUP},
    {"SIGQUIT", SIGQUIT}, {"SIGUSR1", SIGUSR1}, {"SIGUSR2", SIGUSR2}, {"SIGALRM", SIGALRM},
    {"SIGSTOP", SIGSTOP}, {"SIGCONT", SIGCONT}, {"SIGWINCH", SIGWINCH},
};

int proto_signal_parse(json_t *v)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        for (size_t i = 0; i < FB_ARRAY_LEN(sigs); i++)
            if (sigs[i].sig == x)
                return sigs[i].sig;
        return -1;
    }
    if (!json_is_string(v))
        return -1;
    const char *s = json_string_value(v);
    for (size_t i = 0; i < FB_ARRAY_LEN(sigs); i++)
        if (!strcmp(s, sigs[i].name) || !strcmp(s, sigs[i].name + 3))
            return sigs[i].sig;
    return -1;
}

const char *proto_signal_name(int sig)
{
    static char buf[24];
    const char *ab = sigabbrev_np(sig);
    if (!ab)
        return NULL;
    snprintf(buf, sizeof buf, "SIG%s", ab);
    return buf;
}

/* ---- socket path ---- */

int proto_default_socket(char *out, size_t cap, bool create, struct fb_err *err)
{
    const char *env = getenv("FLUEBOX_SOCKET");
    if (env && *env) {
        if (strlen(env) >= cap || strlen(env) >= 108)
            return fb_errf(err, FB_EXIT_SETUP, "FLUEBOX_SOCKET is too long");
        snprintf(out, cap, "%s", env);
        return 0;
    }
    /* The user's private directory (userdir.h): the same rule for the server
     * and every client. */
    char d[200];
    if (fb_user_dir(d, sizeof d, create, err) < 0)
        return -1;
    if (strlen(d) + sizeof "/fluebox.sock" > cap || strlen(d) + sizeof "/fluebox.sock" > 108)
        return fb_errf(err, FB_EXIT_SETUP, "%s/fluebox.sock: the path is too long", d);
    snprintf(out, cap, "%s/fluebox.sock", d);
    return 0;
}
