/* sniff.c — TLS ClientHello SNI, HTTP/1.x Host and CONNECT parsing (see
 * sniff.h). Every read is bounds-checked against the bytes received so far;
 * "not enough bytes yet" is SNIFF_MORE, never a guess. */
#include "sniff.h"

#include <string.h>

#define TLS_HS_MAX 65536     /* largest ClientHello we reassemble */
#define HTTP_LINE_MAX 8192   /* request line */
#define CHUNK_LINE_MAX 4096  /* a chunk-size line or a trailer line */
#define HEADER_LINES_MAX 256 /* header lines of one head (servers allow about 100) */

static unsigned get16(const uint8_t *p) { return (unsigned)p[0] << 8 | p[1]; }
static unsigned get24(const uint8_t *p) { return (unsigned)p[0] << 16 | (unsigned)p[1] << 8 | p[2]; }

bool sniff_norm_host(char *s)
{
    size_t n = strlen(s);
    if (n && s[n - 1] == '.')
        s[--n] = 0;
    if (n == 0 || n > 253)
        return false;
    char prev = '.';
    for (char *c = s; *c; c++) {
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
        bool ok = (*c >= 'a' && *c <= 'z') || (*c >= '0' && *c <= '9') || *c == '-' ||
                  *c == '_' || *c == '.';
        if (!ok || (*c == '.' && prev == '.'))
            return false;
        prev = *c;
    }
    return true;
}

static void bad(struct sniff *o, const char *why)
{
    o->kind = SNIFF_BAD;
    o->why = why;
}

/* Need more; only a new line can change that (a head's lines have no
 * length limit of their own: the caller's buffer is it). */
static void more_lines(struct sniff *o)
{
    o->kind = SNIFF_MORE;
    o->need = 0;
    o->lf = true;
}

/* ---- TLS ---- */

/* Parse a complete ClientHello body (after the 4-byte handshake header). */
static void parse_client_hello(const uint8_t *p, size_t n, struct sniff *o)
{
    size_t off = 2 + 32; /* legacy_version, random */
    if (off + 1 > n)
        return bad(o, "ClientHello truncated");
    off += 1 + p[off]; /* session id */
    if (off + 2 > n)
        return bad(o, "ClientHello truncated");
    off += 2 + get16(p + off); /* cipher suites */
    if (off + 1 > n)
        return bad(o, "ClientHello truncated");
    off += 1 + p[off]; /* compression methods */
    if (off > n)
        return bad(o, "ClientHello truncated");
    o->kind = SNIFF_TLS;
    o->name[0] = 0;
    if (off == n)
        return; /* no extensions at all: no SNI */
    if (off + 2 > n || off + 2 + get16(p + off) != n)
        return bad(o, "ClientHello extensions malformed");
    off += 2;
    bool have_sni = false;
    unsigned seen[64];
    size_t nseen = 0;
    while (off < n) {
        if (off + 4 > n)
            return bad(o, "ClientHello extension truncated");
        unsigned type = get16(p + off), len = get16(p + off + 2);
        off += 4;
        if (off + len > n)
            return bad(o, "ClientHello extension truncated");
        for (size_t i = 0; i < nseen; i++)
            if (seen[i] == type)
                return bad(o, "ClientHello repeats an extension");
        if (nseen < FB_ARRAY_LEN(seen))
            seen[nseen++] = type;
        if (type == 0xffce)
            return bad(o, "encrypted server name (ESNI draft) hides the server name");
        if (type == 0xfe0d)
            o->ech = true; /* browsers send a placeholder on every connection */
        if (type == 0) {
            const uint8_t *e = p + off;
            if (len < 2 || get16(e) != len - 2)
                return bad(o, "server_name extension malformed");
            size_t k = 2;
            while (k < len) {
                if (k + 3 > len)
                    return bad(o, "server_name extension malformed");
                unsigned nt = e[k], nl = get16(e + k + 1);
                k += 3;
                if (k + nl > len)
                    return bad(o, "server_name extension malformed");
                if (nt == 0) {
                    if (have_sni)
                        return bad(o, "ClientHello names two servers");
                    if (nl == 0 || nl >= SNIFF_NAME_MAX)
                        return bad(o, "server name empty or too long");
                    memcpy(o->name, e + k, nl);
                    o->name[nl] = 0;
                    if (memchr(e + k, 0, nl) || !sniff_norm_host(o->name))
                        return bad(o, "server name is not a host name");
                    have_sni = true;
                }
                k += nl;
            }
        }
        off += len;
    }
}

static void sniff_tls(const uint8_t *buf, size_t len, struct sniff *o)
{
    /* Reassemble the handshake messages from consecutive records. */
    static __thread uint8_t hs[TLS_HS_MAX];
    size_t hn = 0, off = 0;
    for (;;) {
        if (off + 5 > len) {
            o->kind = SNIFF_MORE;
            o->need = off + 5;
            return;
        }
        const uint8_t *r = buf + off;
        if (r[0] != 0x16)
            return bad(o, "TLS record after the first is not a handshake");
        if (r[1] != 3 || r[2] > 4)
            return off ? bad(o, "TLS record version malformed") : (void)(o->kind = SNIFF_OTHER);
        unsigned rl = get16(r + 3);
        if (rl == 0 || rl > 16384 + 2048)
            return bad(o, "TLS record length malformed");
        if (off + 5 + rl > len) {
            /* Partial record: what is there already counts. */
            size_t have = len - off - 5;
            if (hn + have > sizeof hs)
                return bad(o, "ClientHello too large");
            memcpy(hs + hn, r + 5, have);
            hn += have;
            if (hn >= 1 && hs[0] != 1)
                return bad(o, "first TLS handshake message is not a ClientHello");
            o->kind = SNIFF_MORE;
            /* What changes the answer: the handshake's first byte, the
             * record's end, or growing past the reassembly buffer. */
            o->need = hn == 0 ? off + 6 : off + 5 + rl;
            if (off + 5 + (sizeof hs - (hn - have)) + 1 < o->need)
                o->need = off + 5 + (sizeof hs - (hn - have)) + 1;
            return;
        }
        if (hn + rl > sizeof hs)
            return bad(o, "ClientHello too large");
        memcpy(hs + hn, r + 5, rl);
        hn += rl;
        off += 5 + rl;
        if (hs[0] != 1)
            return bad(o, "first TLS handshake message is not a ClientHello");
        if (hn >= 4) {
            size_t need = 4 + get24(hs + 1);
            if (need > sizeof hs)
                return bad(o, "ClientHello too large");
            if (hn >= need)
                return parse_client_hello(hs + 4, need - 4, o);
        }
    }
}

/* ---- HTTP ---- */

static bool is_method_char(uint8_t c)
{
    return (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Split "host[:port]" (no brackets) into name; false if it is not a host. */
static bool host_port(const char *s, size_t n, char *name, uint16_t *port, bool need_port)
{
    if (n == 0 || n >= SNIFF_NAME_MAX)
        return false;
    if (s[0] == '[')
        return false; /* an IPv6 literal is never an allowed name */
    const char *colon = memchr(s, ':', n);
    size_t hl = colon ? (size_t)(colon - s) : n;
    unsigned long pv = 0;
    if (colon) {
        size_t pl = n - hl - 1;
        if (pl == 0 || pl > 5)
            return false;
        for (size_t i = 0; i < pl; i++) {
            if (colon[1 + i] < '0' || colon[1 + i] > '9')
                return false;
            pv = pv * 10 + (unsigned long)(colon[1 + i] - '0');
        }
        if (pv == 0 || pv > 65535)
            return false;
    } else if (need_port) {
        return false;
    }
    if (port)
        *port = (uint16_t)pv;
    memcpy(name, s, hl);
    name[hl] = 0;
    return sniff_norm_host(name);
}

/* The request line: METHOD SP TARGET SP HTTP/1.x. Returns the line length
 * (through LF), 0 = need more, -1 = not HTTP/1.x (o->kind set). */
static long request_line(const uint8_t *buf, size_t len, struct sniff *o, const uint8_t **target,
                         size_t *tlen)
{
    size_t m = 0;
    while (m < len && m < sizeof o->method - 1 && is_method_char(buf[m]))
        m++;
    if (m == len && m < sizeof o->method - 1) {
        o->need = len + 1; /* the next byte decides */
        return 0;
    }
    if (m == 0 || m >= sizeof o->method - 1 || buf[m] != ' ') {
        o->kind = SNIFF_OTHER;
        return -1;
    }
    memcpy(o->method, buf, m);
    o->method[m] = 0;
    const uint8_t *lf = memchr(buf, '\n', len < HTTP_LINE_MAX ? len : HTTP_LINE_MAX);
    if (!lf) {
        if (len >= HTTP_LINE_MAX) {
            o->kind = SNIFF_OTHER;
            return -1;
        }
        o->need = HTTP_LINE_MAX;
        o->lf = true;
        return 0;
    }
    size_t ll = (size_t)(lf - buf); /* without LF */
    if (ll && buf[ll - 1] == '\r')
        ll--;
    static const char v10[] = " HTTP/1.0", v11[] = " HTTP/1.1";
    size_t vl = sizeof v10 - 1;
    if (ll < m + 1 + vl || (memcmp(buf + ll - vl, v10, vl) && memcmp(buf + ll - vl, v11, vl))) {
        if (ll >= 9 && !memcmp(buf, "PRI * HTTP/2.0", ll < 14 ? ll : 14))
            bad(o, "HTTP/2 without TLS (prior knowledge) is not supported");
        else
            o->kind = SNIFF_OTHER;
        return -1;
    }
    o->minor = memcmp(buf + ll - vl, v10, vl) ? 1 : 0;
    *target = buf + m + 1;
    *tlen = ll - vl - m - 1;
    for (size_t i = 0; i < *tlen; i++)
        if ((*target)[i] <= ' ' || (*target)[i] >= 0x7f) {
            bad(o, "request target has spaces or control bytes");
            return -1;
        }
    return (long)(lf - buf) + 1;
}

/* What the header lines say, besides being well-formed. */
struct headers {
    const uint8_t *host;
    size_t hostlen;
    int nhost, nclen, nte;
    int64_t clen;     /* -1: no valid Content-Length */
    bool te_chunked;  /* the one Transfer-Encoding is exactly "chunked" */
    bool upgrade, upgrade_h2c;
};

/* Does the comma-separated list v (length n) name token tok? */
static bool has_token(const uint8_t *v, size_t n, const char *tok)
{
    size_t tl = strlen(tok);
    for (size_t i = 0; i < n;) {
        while (i < n && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
            i++;
        size_t j = i;
        while (j < n && v[j] != ',' && v[j] != ' ' && v[j] != '\t' && v[j] != '/')
            j++;
        if (j - i == tl && !strncasecmp((const char *)v + i, tok, tl))
            return true;
        while (j < n && v[j] != ',')
            j++;
        i = j;
    }
    return false;
}

/* Walk the header lines from off. Returns the head length, 0 = need more,
 * -1 = bad (o set). */
static long header_block(const uint8_t *buf, size_t len, size_t off, struct sniff *o,
                         struct headers *h)
{
    memset(h, 0, sizeof *h);
    h->clen = -1;
    for (int lines = 0;; lines++) {
        if (lines > HEADER_LINES_MAX) {
            bad(o, "more than 256 header lines");
            return -1;
        }
        const uint8_t *lf = memchr(buf + off, '\n', len - off);
        if (!lf)
            return 0;
        size_t ll = (size_t)(lf - (buf + off));
        const uint8_t *l = buf + off;
        size_t next = off + ll + 1;
        if (ll && l[ll - 1] == '\r')
            ll--;
        if (ll == 0)
            return (long)next;
        for (size_t i = 0; i < ll; i++)
            if (l[i] == 0 || l[i] == '\r') {
                bad(o, "NUL or bare CR in the request head");
                return -1;
            }
        if (l[0] == ' ' || l[0] == '\t') {
            bad(o, "folded header line");
            return -1;
        }
        const uint8_t *colon = memchr(l, ':', ll);
        if (!colon || colon == l) {
            bad(o, "header line without a name");
            return -1;
        }
        size_t nl = (size_t)(colon - l);
        for (size_t i = 0; i < nl; i++)
            if (l[i] <= ' ' || l[i] >= 0x7f) {
                bad(o, "space or control byte in a header name");
                return -1;
            }
        const uint8_t *v = colon + 1, *e = l + ll;
        while (v < e && (*v == ' ' || *v == '\t'))
            v++;
        while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
            e--;
        size_t vl = (size_t)(e - v);
        if (nl == 4 && !strncasecmp((const char *)l, "host", 4)) {
            h->host = v;
            h->hostlen = vl;
            h->nhost++;
        } else if (nl == 14 && !strncasecmp((const char *)l, "content-length", 14)) {
            h->nclen++;
            int64_t n = 0;
            for (size_t i = 0; i < vl; i++) {
                if (v[i] < '0' || v[i] > '9' || i >= 18) {
                    n = -1;
                    break;
                }
                n = n * 10 + (v[i] - '0');
            }
            h->clen = vl ? n : -1;
        } else if (nl == 17 && !strncasecmp((const char *)l, "transfer-encoding", 17)) {
            h->nte++;
            h->te_chunked = vl == 7 && !strncasecmp((const char *)v, "chunked", 7);
        } else if (nl == 7 && !strncasecmp((const char *)l, "upgrade", 7)) {
            h->upgrade = true;
            h->upgrade_h2c |= has_token(v, vl, "h2c");
        }
        off = next;
    }
}

/* The request target must name the same host as Host: origin-form (a
 * path), "*" for OPTIONS, or absolute-form with any scheme, whose authority
 * is compared. Anything else (authority-form outside CONNECT, a scheme
 * without "//", user info) is refused: a server may route by it. Returns
 * NULL or why not. */
static const char *check_target(const uint8_t *t, size_t tlen, const char *method, const char *host)
{
    if (tlen && t[0] == '/')
        return NULL;
    if (tlen == 1 && t[0] == '*')
        return strcmp(method, "OPTIONS") ? "request target * is only for OPTIONS" : NULL;
    size_t i = 0;
    while (i < tlen && ((t[i] >= 'a' && t[i] <= 'z') || (t[i] >= 'A' && t[i] <= 'Z') ||
                        (i && ((t[i] >= '0' && t[i] <= '9') || t[i] == '+' || t[i] == '-' ||
                               t[i] == '.'))))
        i++;
    if (i == 0 || tlen - i < 3 || memcmp(t + i, "://", 3))
        return "request target is neither a path nor an absolute URL";
    const uint8_t *a = t + i + 3;
    size_t al = 0, rest = tlen - i - 3;
    while (al < rest && a[al] != '/' && a[al] != '?' && a[al] != '#')
        al++;
    if (memchr(a, '@', al))
        return "user name in the request target";
    char name[SNIFF_NAME_MAX];
    if (!host_port((const char *)a, al, name, NULL, false))
        return "request target is not a host name";
    if (strcmp(name, host))
        return "request target and Host header name different hosts";
    return NULL;
}

static void sniff_http(const uint8_t *buf, size_t len, struct sniff *o)
{
    const uint8_t *target = NULL;
    size_t tlen = 0;
    long rl = request_line(buf, len, o, &target, &tlen);
    if (rl <= 0) {
        if (rl == 0)
            o->kind = SNIFF_MORE;
        return;
    }
    struct headers h;
    long hl = header_block(buf, len, (size_t)rl, o, &h);
    if (hl <= 0) {
        if (hl == 0)
            more_lines(o);
        return;
    }
    o->head_len = (size_t)hl;
    if (h.nhost == 0)
        return bad(o, "no Host header");
    if (h.nhost > 1)
        return bad(o, "more than one Host header");
    char name[SNIFF_NAME_MAX];
    if (!host_port((const char *)h.host, h.hostlen, name, NULL, false))
        return bad(o, "Host is not a host name");
    const char *why = check_target(target, tlen, o->method, name);
    if (why)
        return bad(o, why);
    /* Where this request ends (RFC 9112 6.3): anything a server could read
     * differently is refused. */
    if (h.nclen > 1)
        return bad(o, "more than one Content-Length");
    if (h.nclen && h.clen < 0)
        return bad(o, "Content-Length is not a number");
    if (h.nte > 1)
        return bad(o, "more than one Transfer-Encoding");
    if (h.nte && h.nclen)
        return bad(o, "both Content-Length and Transfer-Encoding");
    if (h.nte && !h.te_chunked)
        return bad(o, "Transfer-Encoding other than chunked");
    if (h.nte && o->minor == 0)
        return bad(o, "Transfer-Encoding in an HTTP/1.0 request");
    if (h.upgrade_h2c)
        return bad(o, "HTTP/2 upgrade (h2c) is not supported");
    o->kind = SNIFF_HTTP;
    o->content_length = h.nclen ? h.clen : 0;
    o->chunked = h.nte > 0;
    o->upgrade = h.upgrade;
    snprintf(o->name, sizeof o->name, "%s", name);
}

bool sniff_may_change(size_t seen, size_t need, bool lf, const uint8_t *buf, size_t len)
{
    if (!seen)
        return true;
    if (len <= seen)
        return false;
    if (!lf)
        return !need || len >= need;
    return (need && len >= need) || memchr(buf + seen, '\n', len - seen);
}

void sniff_classify(const uint8_t *buf, size_t len, struct sniff *o)
{
    memset(o, 0, sizeof *o);
    if (len == 0) {
        o->kind = SNIFF_MORE;
        o->need = 1;
        return;
    }
    if (buf[0] == 0x16)
        return sniff_tls(buf, len, o);
    if (is_method_char(buf[0]))
        return sniff_http(buf, len, o);
    o->kind = SNIFF_OTHER;
}

void sniff_connect(const uint8_t *buf, size_t len, struct sniff *o, uint16_t *port)
{
    memset(o, 0, sizeof *o);
    *port = 0;
    const uint8_t *target = NULL;
    size_t tlen = 0;
    long rl = request_line(buf, len, o, &target, &tlen);
    if (rl == 0) {
        o->kind = SNIFF_MORE;
        return;
    }
    if (rl < 0) {
        if (o->kind != SNIFF_BAD)
            bad(o, "not an HTTP/1.x request");
        return;
    }
    if (strcmp(o->method, "CONNECT"))
        return bad(o, "only CONNECT is supported by this proxy");
    struct headers h;
    long hl = header_block(buf, len, (size_t)rl, o, &h);
    if (hl <= 0) {
        if (hl == 0)
            more_lines(o);
        return;
    }
    o->head_len = (size_t)hl;
    if (h.nclen || h.nte)
        return bad(o, "CONNECT request with a body");
    if (!host_port((const char *)target, tlen, o->name, port, true))
        return bad(o, "CONNECT target is not host:port");
    o->kind = SNIFF_HTTP;
}

/* ---- every request of a connection ---- */

/* Stopped in the middle of a head or line that starts where the next call's
 * bytes will: remember what can change that (sniff_may_change). */
static void stall(struct http_walk *w, size_t seen, size_t need, bool lf)
{
    w->seen = seen;
    w->need = need;
    w->lf = lf;
}

static void request_done(struct http_walk *w)
{
    w->st = w->upgrade ? HW_UPGRADE : HW_HEAD;
}

static enum http_walk_result walk_fail(struct sniff *req, const char *why)
{
    req->kind = SNIFF_BAD;
    req->why = why;
    return HW_ERROR;
}

/* A chunk-size line at p (n bytes available): 0 = need more, -1 = bad,
 * else its length through CRLF; *size set. */
static long chunk_line(const uint8_t *p, size_t n, uint64_t *size)
{
    const uint8_t *lf = memchr(p, '\n', n < CHUNK_LINE_MAX ? n : CHUNK_LINE_MAX);
    if (!lf)
        return n >= CHUNK_LINE_MAX ? -1 : 0;
    size_t ll = (size_t)(lf - p);
    if (ll == 0 || p[ll - 1] != '\r')
        return -1;
    ll--;
    size_t i = 0;
    uint64_t v = 0;
    for (; i < ll; i++) {
        uint8_t c = p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
              : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0)
            break;
        if (i >= 15)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (i == 0)
        return -1;
    /* chunk extensions: BWS ";" ..., no control bytes */
    size_t j = i;
    while (j < ll && (p[j] == ' ' || p[j] == '\t'))
        j++;
    if (j < ll && p[j] != ';')
        return -1;
    for (; j < ll; j++)
        if ((p[j] < ' ' && p[j] != '\t') || p[j] == 0x7f)
            return -1;
    *size = v;
    return (long)(lf - p) + 1;
}

/* A trailer line: 0 = need more, -1 = bad, else its length; *empty when
 * it is the blank line that ends the message. */
static long trailer_line(const uint8_t *p, size_t n, bool *empty)
{
    const uint8_t *lf = memchr(p, '\n', n < CHUNK_LINE_MAX ? n : CHUNK_LINE_MAX);
    if (!lf)
        return n >= CHUNK_LINE_MAX ? -1 : 0;
    size_t ll = (size_t)(lf - p);
    if (ll == 0 || p[ll - 1] != '\r')
        return -1;
    ll--;
    *empty = ll == 0;
    if (!ll)
        return 2;
    if (p[0] == ' ' || p[0] == '\t')
        return -1;
    const uint8_t *colon = memchr(p, ':', ll);
    if (!colon || colon == p)
        return -1;
    for (const uint8_t *c = p; c < colon; c++)
        if (*c <= ' ' || *c >= 0x7f)
            return -1;
    for (size_t i = 0; i < ll; i++)
        if (p[i] == 0 || p[i] == '\r')
            return -1;
    return (long)ll + 2;
}

/* HW_HEAD: the next request's head at p (n bytes, off into this call). */
static enum http_walk_result walk_head(struct http_walk *w, const uint8_t *p, size_t n, size_t off,
                                       size_t *used, struct sniff *req)
{
    if (!n)
        return HW_MORE;
    if (!off && !sniff_may_change(w->seen, w->need, w->lf, p, n)) {
        req->kind = SNIFF_MORE;
        return HW_MORE;
    }
    sniff_classify(p, n, req);
    if (req->kind == SNIFF_MORE) {
        stall(w, n, req->need, req->lf);
        return HW_MORE;
    }
    w->seen = 0;
    if (req->kind == SNIFF_BAD)
        return HW_ERROR;
    if (req->kind != SNIFF_HTTP)
        return walk_fail(req, w->requests ? "bytes after a request are not an HTTP/1.x request"
                                          : "not an HTTP/1.x request");
    if (req->upgrade && w->requests)
        return walk_fail(req, "Upgrade on a later request of a connection");
    w->requests++;
    w->upgrade = req->upgrade;
    *used = off + req->head_len;
    if (req->chunked)
        w->st = HW_CHUNK_SIZE;
    else if (req->content_length > 0) {
        w->st = HW_BODY;
        w->left = (uint64_t)req->content_length;
    } else
        request_done(w);
    return HW_REQUEST;
}

enum http_walk_result http_walk(struct http_walk *w, const uint8_t *buf, size_t len, size_t *used,
                                struct sniff *req)
{
    size_t off = 0;
    for (;;) {
        *used = off;
        size_t n = len - off;
        const uint8_t *p = buf + off;
        switch (w->st) {
        case HW_HEAD:
            return walk_head(w, p, n, off, used, req);
        case HW_BODY:
        case HW_CHUNK_DATA: {
            size_t k = n < w->left ? n : (size_t)w->left;
            off += k;
            w->left -= k;
            if (w->left) {
                *used = off;
                return HW_MORE;
            }
            if (w->st == HW_BODY)
                request_done(w);
            else
                w->st = HW_CHUNK_END;
            break;
        }
        case HW_CHUNK_SIZE: {
            uint64_t size = 0;
            if (!off && !sniff_may_change(w->seen, w->need, w->lf, p, n))
                return HW_MORE;
            long l = chunk_line(p, n, &size);
            if (l == 0) {
                stall(w, n, CHUNK_LINE_MAX, true);
                return HW_MORE;
            }
            w->seen = 0;
            if (l < 0)
                return walk_fail(req, "malformed chunk size line");
            off += (size_t)l;
            if (size) {
                w->st = HW_CHUNK_DATA;
                w->left = size;
            } else
                w->st = HW_TRAILER;
            break;
        }
        case HW_CHUNK_END:
            if (n < 2)
                return HW_MORE;
            if (p[0] != '\r' || p[1] != '\n')
                return walk_fail(req, "chunk not followed by CRLF");
            off += 2;
            w->st = HW_CHUNK_SIZE;
            break;
        case HW_TRAILER: {
            bool empty = false;
            if (!off && !sniff_may_change(w->seen, w->need, w->lf, p, n))
                return HW_MORE;
            long l = trailer_line(p, n, &empty);
            if (l == 0) {
                stall(w, n, CHUNK_LINE_MAX, true);
                return HW_MORE;
            }
            w->seen = 0;
            if (l < 0)
                return walk_fail(req, "malformed trailer line");
            off += (size_t)l;
            if (empty)
                request_done(w);
            break;
        }
        case HW_UPGRADE:
            return HW_WAIT;
        case HW_TUNNEL:
            *used = len;
            return HW_MORE;
        }
    }
}

void http_walk_answer(struct http_walk *w, bool switched)
{
    if (w->st != HW_UPGRADE)
        return;
    w->upgrade = false;
    w->st = switched ? HW_TUNNEL : HW_HEAD;
}

void sniff_response(const uint8_t *buf, size_t len, struct sniff *o, int *status)
{
    memset(o, 0, sizeof *o);
    *status = 0;
    static const char v[] = "HTTP/1.";
    size_t need = sizeof v - 1 + 5; /* "HTTP/1.x 200" */
    if (len < need) {
        o->kind = memcmp(buf, v, len < sizeof v - 1 ? len : sizeof v - 1) ? SNIFF_OTHER : SNIFF_MORE;
        if (o->kind == SNIFF_OTHER)
            bad(o, "not an HTTP/1.x response");
        o->need = len + 1;
        return;
    }
    if (memcmp(buf, v, sizeof v - 1) || (buf[7] != '0' && buf[7] != '1') || buf[8] != ' ' ||
        buf[9] < '1' || buf[9] > '5' || buf[10] < '0' || buf[10] > '9' || buf[11] < '0' ||
        buf[11] > '9')
        return bad(o, "not an HTTP/1.x response");
    *status = (buf[9] - '0') * 100 + (buf[10] - '0') * 10 + (buf[11] - '0');
    const uint8_t *lf = memchr(buf, '\n', len < HTTP_LINE_MAX ? len : HTTP_LINE_MAX);
    if (!lf) {
        if (len >= HTTP_LINE_MAX)
            return bad(o, "status line too long");
        o->kind = SNIFF_MORE;
        o->need = HTTP_LINE_MAX;
        o->lf = true;
        return;
    }
    struct headers h;
    long hl = header_block(buf, len, (size_t)(lf - buf) + 1, o, &h);
    if (hl <= 0) {
        if (hl == 0)
            more_lines(o);
        return;
    }
    o->head_len = (size_t)hl;
    o->kind = SNIFF_HTTP;
}
