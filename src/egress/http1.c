/* http1.c — HTTP/1.x heads for the inspecting relay (see http1.h). Strict
 * on purpose, like sniff.c: a head two parsers could read differently
 * (folded or duplicated framing headers, bare CR, a NUL, both
 * Content-Length and Transfer-Encoding) is refused, and what goes upstream
 * is the relay's own rendering of what it parsed. */
#include "http1.h"

#include <ctype.h>
#include <string.h>

static bool tchar(int c)
{
    return isalnum(c) || (c && strchr("!#$%&'*+-.^_`|~", c));
}

static bool ieq(const char *a, size_t an, const char *b)
{
    size_t bn = strlen(b);
    return an == bn && !strncasecmp(a, b, bn);
}

/* Is token tok (case-insensitive) one of the comma-separated list v? */
static bool list_has(const char *v, size_t n, const char *tok)
{
    size_t i = 0;
    while (i < n) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t s = i;
        while (i < n && v[i] != ',')
            i++;
        size_t e = i;
        while (e > s && (v[e - 1] == ' ' || v[e - 1] == '\t'))
            e--;
        if (e > s && ieq(v + s, e - s, tok))
            return true;
    }
    return false;
}

/* The end of the head: the index after "\r\n\r\n" (or "\n\n"), 0 if not
 * there yet, -1 if a bare CR or a NUL comes first. */
static ssize_t head_end(const uint8_t *b, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        if (b[i] == 0)
            return -1;
        if (b[i] == '\r' && (i + 1 < len && b[i + 1] != '\n'))
            return -1;
        if (b[i] != '\n')
            continue;
        if (i + 1 < len && b[i + 1] == '\n')
            return (ssize_t)(i + 2);
        if (i + 2 < len && b[i + 1] == '\r' && b[i + 2] == '\n')
            return (ssize_t)(i + 3);
    }
    return 0;
}

static int fail(struct http_head *h, const char *why)
{
    h->why = why;
    return -1;
}

/* Header lines from p to end (the blank line excluded). */
static int parse_headers(const char *p, const char *end, struct http_head *h)
{
    bool have_cl = false, have_te = false, conn_close = false, conn_keep = false,
         conn_upgrade = false, have_upgrade = false;
    int nhost = 0;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol)
            return fail(h, "header line without an end");
        const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
        if (le == p)
            break;
        if (*p == ' ' || *p == '\t')
            return fail(h, "folded header line (obsolete line folding)");
        const char *colon = p;
        while (colon < le && tchar((unsigned char)*colon))
            colon++;
        if (colon == p || colon == le || *colon != ':')
            return fail(h, "malformed header line");
        const char *v = colon + 1, *ve = le;
        while (v < ve && (*v == ' ' || *v == '\t'))
            v++;
        while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
            ve--;
        for (const char *c = v; c < ve; c++)
            if ((unsigned char)*c < 0x20 && *c != '\t')
                return fail(h, "control character in a header value");
        if (h->nh == HTTP_HDRS_MAX)
            return fail(h, "too many header lines");
        struct http_hdr *hd = &h->h[h->nh++];
        *hd = (struct http_hdr){p, v, (size_t)(colon - p), (size_t)(ve - v)};
        size_t vl = hd->vlen;
        if (ieq(p, hd->nlen, "content-length")) {
            int64_t n = 0;
            if (!vl || vl > 18)
                return fail(h, "bad Content-Length");
            for (size_t i = 0; i < vl; i++) {
                if (!isdigit((unsigned char)v[i]))
                    return fail(h, "bad Content-Length");
                n = n * 10 + (v[i] - '0');
            }
            if (have_cl && n != h->content_length)
                return fail(h, "two different Content-Lengths");
            have_cl = true;
            h->content_length = n;
        } else if (ieq(p, hd->nlen, "transfer-encoding")) {
            if (have_te || !ieq(v, vl, "chunked"))
                return fail(h, "a Transfer-Encoding other than one \"chunked\"");
            have_te = true;
            h->chunked = true;
        } else if (ieq(p, hd->nlen, "host")) {
            nhost++;
            size_t hl = vl;
            if (hl && v[0] == '[')
                return fail(h, "an IP address in Host");
            const char *colon2 = memchr(v, ':', vl);
            if (colon2)
                hl = (size_t)(colon2 - v);
            if (!hl || hl >= sizeof h->host)
                return fail(h, "bad Host");
            memcpy(h->host, v, hl);
            h->host[hl] = 0;
            for (char *c = h->host; *c; c++)
                *c = (char)tolower((unsigned char)*c);
            if (hl > 1 && h->host[hl - 1] == '.')
                h->host[hl - 1] = 0;
        } else if (ieq(p, hd->nlen, "connection")) {
            conn_close |= list_has(v, vl, "close");
            conn_keep |= list_has(v, vl, "keep-alive");
            conn_upgrade |= list_has(v, vl, "upgrade");
        } else if (ieq(p, hd->nlen, "upgrade")) {
            have_upgrade = true;
        } else if (ieq(p, hd->nlen, "expect")) {
            h->expect_continue = ieq(v, vl, "100-continue");
        }
        p = eol + 1;
    }
    if (nhost > 1)
        return fail(h, "two Host headers");
    if (have_cl && have_te)
        return fail(h, "both Content-Length and Transfer-Encoding");
    h->upgrade = have_upgrade && conn_upgrade;
    h->close = conn_close || (h->minor == 0 && !conn_keep);
    return 1;
}

static void head_init(struct http_head *h)
{
    memset(h, 0, sizeof *h);
    h->content_length = -1;
}

int http1_parse_request(const uint8_t *buf, size_t len, struct http_head *h)
{
    head_init(h);
    ssize_t end = head_end(buf, len);
    if (end < 0)
        return fail(h, "bare CR or NUL in the request head");
    if (end == 0)
        return len >= HTTP_HEAD_MAX ? fail(h, "request head larger than 64 KiB") : 0;
    const char *p = (const char *)buf, *e = p + end;
    const char *eol = memchr(p, '\n', (size_t)(e - p));
    const char *le = eol > p && eol[-1] == '\r' ? eol - 1 : eol;
    const char *sp1 = memchr(p, ' ', (size_t)(le - p));
    if (!sp1 || sp1 == p || (size_t)(sp1 - p) >= sizeof h->method)
        return fail(h, "malformed request line");
    for (const char *c = p; c < sp1; c++)
        if (!tchar((unsigned char)*c))
            return fail(h, "malformed request method");
    memcpy(h->method, p, (size_t)(sp1 - p));
    const char *t = sp1 + 1;
    const char *sp2 = memchr(t, ' ', (size_t)(le - t));
    if (!sp2 || sp2 == t)
        return fail(h, "malformed request line");
    for (const char *c = t; c < sp2; c++)
        if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
            return fail(h, "bad byte in the request target");
    h->target = t;
    h->tlen = (size_t)(sp2 - t);
    const char *ver = sp2 + 1;
    if (le - ver != 8 || memcmp(ver, "HTTP/1.", 7) || (ver[7] != '0' && ver[7] != '1'))
        return fail(h, "not HTTP/1.0 or HTTP/1.1 (HTTP/2 is not inspected: docs/secrets.md)");
    h->minor = (uint8_t)(ver[7] - '0');
    if (!strcmp(h->method, "CONNECT"))
        return fail(h, "CONNECT request");
    if (!(h->target[0] == '/' || (h->tlen == 1 && h->target[0] == '*' &&
                                   !strcmp(h->method, "OPTIONS"))))
        return fail(h, "request target not in origin form (/path)");
    if (parse_headers(eol + 1, e, h) < 0)
        return -1;
    if (h->minor == 1 && !h->host[0])
        return fail(h, "HTTP/1.1 request without Host");
    h->head_len = (size_t)end;
    return 1;
}

int http1_parse_response(const uint8_t *buf, size_t len, struct http_head *h)
{
    head_init(h);
    ssize_t end = head_end(buf, len);
    if (end < 0)
        return fail(h, "bare CR or NUL in the response head");
    if (end == 0)
        return len >= HTTP_HEAD_MAX ? fail(h, "response head larger than 64 KiB") : 0;
    const char *p = (const char *)buf, *e = p + end;
    const char *eol = memchr(p, '\n', (size_t)(e - p));
    if (eol - p < 12 || memcmp(p, "HTTP/1.", 7) || (p[7] != '0' && p[7] != '1') || p[8] != ' ' ||
        !isdigit((unsigned char)p[9]) || !isdigit((unsigned char)p[10]) ||
        !isdigit((unsigned char)p[11]))
        return fail(h, "malformed status line");
    h->minor = (uint8_t)(p[7] - '0');
    h->status = (p[9] - '0') * 100 + (p[10] - '0') * 10 + (p[11] - '0');
    if (parse_headers(eol + 1, e, h) < 0)
        return -1;
    h->head_len = (size_t)end;
    return 1;
}

int http1_chunk_size(const uint8_t *line, size_t len, uint64_t *size)
{
    uint64_t n = 0;
    size_t i = 0;
    for (; i < len && isxdigit(line[i]); i++) {
        if (n >> 56)
            return -1;
        n = n * 16 + (uint64_t)(isdigit(line[i]) ? line[i] - '0' : (tolower(line[i]) - 'a' + 10));
    }
    if (i == 0)
        return -1;
    /* chunk extensions: ";name[=value]", passed on only as their size */
    while (i < len && (line[i] == ' ' || line[i] == '\t'))
        i++;
    if (i < len && line[i] != ';')
        return -1;
    *size = n;
    return 0;
}

/* ---- base64 ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t http1_b64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16;
        if (i + 1 < n)
            v |= (uint32_t)in[i + 1] << 8;
        if (i + 2 < n)
            v |= in[i + 2];
        out[o++] = b64[v >> 18 & 63];
        out[o++] = b64[v >> 12 & 63];
        out[o++] = i + 1 < n ? b64[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? b64[v & 63] : '=';
    }
    out[o] = 0;
    return o;
}

static int b64val(char c)
{
    const char *p = c ? strchr(b64, c) : NULL;
    return p ? (int)(p - b64) : -1;
}

ssize_t http1_b64_decode(const char *in, size_t n, uint8_t *out)
{
    if (n % 4)
        return -1;
    size_t o = 0;
    for (size_t i = 0; i < n; i += 4) {
        int v[4];
        int pad = 0;
        for (int k = 0; k < 4; k++) {
            if (in[i + k] == '=' && i + 4 == n && k >= 2) {
                v[k] = 0;
                pad++;
                continue;
            }
            if (pad || (v[k] = b64val(in[i + k])) < 0)
                return -1;
        }
        uint32_t x = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12 | (uint32_t)v[2] << 6 | (uint32_t)v[3];
        out[o++] = (uint8_t)(x >> 16);
        if (pad < 2)
            out[o++] = (uint8_t)(x >> 8);
        if (pad < 1)
            out[o++] = (uint8_t)x;
    }
    return (ssize_t)o;
}

/* ---- rewriting ---- */

struct out {
    uint8_t *d;
    size_t len, cap;
};

/* Grows by copying and wiping (never realloc): the old buffer may hold a
 * value already swapped in. */
static void put(struct out *o, const void *p, size_t n)
{
    if (o->len + n > o->cap) {
        size_t cap = o->cap ? o->cap : 1024;
        while (o->len + n > cap)
            cap *= 2;
        uint8_t *d = fb_xmalloc(cap);
        if (o->d) {
            memcpy(d, o->d, o->len);
            explicit_bzero(o->d, o->cap);
            free(o->d);
        }
        o->d = d;
        o->cap = cap;
    }
    memcpy(o->d + o->len, p, n);
    o->len += n;
}

/* Which secret's stand-in (any, bound or not) occurs in p[0..n)? -1 none;
 * unbound_only: only those not bound. */
static int find_standin(const void *p, size_t n, const struct http_secret *s, size_t ns,
                        bool unbound_only)
{
    for (size_t i = 0; i < ns; i++) {
        if (unbound_only && s[i].value)
            continue;
        if (memmem(p, n, s[i].standin, strlen(s[i].standin)))
            return (int)i;
    }
    return -1;
}

static bool unreserved(uint8_t c)
{
    return isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~';
}

/* p[0..n) into o with every bound stand-in swapped (pct: the value
 * percent-encoded). */
static void swap_into(struct out *o, const uint8_t *p, size_t n, const struct http_secret *s,
                      size_t ns, bool pct, uint64_t *used)
{
    size_t i = 0;
    while (i < n) {
        int hit = -1;
        size_t at = n;
        for (size_t k = 0; k < ns; k++) {
            if (!s[k].value)
                continue;
            size_t sl = strlen(s[k].standin);
            const uint8_t *m = memmem(p + i, n - i, s[k].standin, sl);
            if (m && (size_t)(m - p) < at) {
                at = (size_t)(m - p);
                hit = (int)k;
            }
        }
        put(o, p + i, at - i);
        if (hit < 0)
            break;
        if (pct) {
            for (size_t v = 0; v < s[hit].vlen; v++) {
                uint8_t c = s[hit].value[v];
                if (unreserved(c)) {
                    put(o, &c, 1);
                } else {
                    char e[4];
                    snprintf(e, sizeof e, "%%%02X", c);
                    put(o, e, 3);
                }
            }
        } else {
            put(o, s[hit].value, s[hit].vlen);
        }
        *used |= 1ull << (hit < 64 ? hit : 63);
        i = at + strlen(s[hit].standin);
    }
}

/* Authorization: Basic: the decoded credential, when it is one. */
static bool basic_cred(const struct http_hdr *hd, const char **b, size_t *bl)
{
    if (!ieq(hd->name, hd->nlen, "authorization") && !ieq(hd->name, hd->nlen, "proxy-authorization"))
        return false;
    if (hd->vlen < 6 || strncasecmp(hd->val, "basic ", 6))
        return false;
    *b = hd->val + 6;
    *bl = hd->vlen - 6;
    while (*bl && **b == ' ') {
        (*b)++;
        (*bl)--;
    }
    return true;
}

int http1_rewrite(const struct http_head *h, const struct http_secret *s, size_t ns,
                  bool drop_expect, uint8_t **out, size_t *outlen, uint64_t *used)
{
    *out = NULL;
    *outlen = 0;
    *used = 0;
    /* Refusals first: an unbound stand-in anywhere, or inside a Basic
     * credential (any of them decoded). */
    int bad = find_standin(h->target, h->tlen, s, ns, true);
    for (size_t i = 0; i < h->nh && bad < 0; i++) {
        bad = find_standin(h->h[i].name, h->h[i].nlen, s, ns, true);
        if (bad < 0)
            bad = find_standin(h->h[i].val, h->h[i].vlen, s, ns, true);
        const char *b;
        size_t bl;
        if (bad < 0 && basic_cred(&h->h[i], &b, &bl) && bl < 8192) {
            uint8_t dec[6144];
            ssize_t dl = http1_b64_decode(b, bl, dec);
            if (dl > 0)
                bad = find_standin(dec, (size_t)dl, s, ns, true);
            explicit_bzero(dec, sizeof dec);
        }
    }
    if (bad >= 0)
        return bad + 1;

    struct out o = {0};
    put(&o, h->method, strlen(h->method));
    put(&o, " ", 1);
    swap_into(&o, (const uint8_t *)h->target, h->tlen, s, ns, true, used);
    put(&o, h->minor ? " HTTP/1.1\r\n" : " HTTP/1.0\r\n", 11);
    for (size_t i = 0; i < h->nh; i++) {
        const struct http_hdr *hd = &h->h[i];
        if (drop_expect && ieq(hd->name, hd->nlen, "expect"))
            continue;
        put(&o, hd->name, hd->nlen);
        put(&o, ": ", 2);
        const char *b;
        size_t bl;
        uint8_t dec[6144];
        ssize_t dl;
        if (basic_cred(hd, &b, &bl) && bl < 8192 && (dl = http1_b64_decode(b, bl, dec)) > 0 &&
            find_standin(dec, (size_t)dl, s, ns, false) >= 0) {
            struct out plain = {0};
            swap_into(&plain, dec, (size_t)dl, s, ns, false, used);
            size_t cap = 4 * ((plain.len + 2) / 3) + 1;
            char *enc = fb_xmalloc(cap);
            size_t el = http1_b64_encode(plain.d, plain.len, enc);
            put(&o, "Basic ", 6);
            put(&o, enc, el);
            explicit_bzero(enc, cap);
            free(enc);
            explicit_bzero(plain.d, plain.cap);
            free(plain.d);
        } else {
            swap_into(&o, (const uint8_t *)hd->val, hd->vlen, s, ns, false, used);
        }
        explicit_bzero(dec, sizeof dec);
        put(&o, "\r\n", 2);
    }
    put(&o, "\r\n", 2);
    *out = o.d;
    *outlen = o.len;
    return 0;
}

/* ---- paths ---- */

void http1_log_path(const char *target, size_t tlen, char *out, size_t cap)
{
    size_t o = 0;
    bool in_query = false, in_value = false;
    for (size_t i = 0; i < tlen && o + 1 < cap; i++) {
        char c = target[i];
        if (!in_query) {
            if (c == '?')
                in_query = true;
            out[o++] = c;
            continue;
        }
        if (c == '&') {
            in_value = false;
            out[o++] = c;
        } else if (c == '=') {
            in_value = true;
        } else if (!in_value) {
            out[o++] = c;
        }
    }
    out[o] = 0;
}

bool http1_path_unclear(const char *target, size_t tlen)
{
    size_t pl = 0;
    while (pl < tlen && target[pl] != '?')
        pl++;
    for (size_t i = 0; i < pl; i++) {
        if (target[i] == '\\')
            return true;
        if (target[i] == '%' && i + 2 < pl + 1 && i + 2 <= pl) {
            char a = target[i + 1], b = (char)tolower((unsigned char)target[i + 2]);
            if (a == '2' && (b == 'e' || b == 'f'))
                return true;
            if (a == '5' && b == 'c')
                return true;
        }
        if (target[i] == '/') {
            size_t k = i + 1;
            if (k < pl && target[k] == '/')
                return true;
            if (k < pl && target[k] == '.' && (k + 1 == pl || target[k + 1] == '/'))
                return true;
            if (k + 1 < pl && target[k] == '.' && target[k + 1] == '.' &&
                (k + 2 == pl || target[k + 2] == '/'))
                return true;
        }
    }
    return false;
}

bool http1_prefix_match(const char *target, size_t tlen, const char *prefix)
{
    size_t pl = 0;
    while (pl < tlen && target[pl] != '?')
        pl++;
    size_t xl = strlen(prefix);
    if (pl < xl || memcmp(target, prefix, xl))
        return false;
    return pl == xl || prefix[xl - 1] == '/' || target[xl] == '/';
}
