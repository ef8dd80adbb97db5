/* sniff.c — TLS ClientHello SNI, HTTP/1.x Host and CONNECT parsing (see
 * sniff.h). Every read is bounds-checked against the bytes received so far;
 * "not enough bytes yet" is SNIFF_MORE, never a guess. */
#include "sniff.h"

#include <string.h>

#define TLS_HS_MAX 65536     /* largest ClientHello we reassemble */
#define HTTP_LINE_MAX 8192   /* request line */

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
    if (m == len && m < sizeof o->method - 1)
        return 0;
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
    *target = buf + m + 1;
    *tlen = ll - vl - m - 1;
    for (size_t i = 0; i < *tlen; i++)
        if ((*target)[i] <= ' ' || (*target)[i] >= 0x7f) {
            bad(o, "request target has spaces or control bytes");
            return -1;
        }
    return (long)(lf - buf) + 1;
}

/* Walk the header lines from off; finds Host. Returns the head length, 0 =
 * need more, -1 = bad (o set). */
static long header_block(const uint8_t *buf, size_t len, size_t off, struct sniff *o,
                         const uint8_t **host, size_t *hostlen, int *nhost)
{
    *nhost = 0;
    for (;;) {
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
        if (nl == 4 && !strncasecmp((const char *)l, "host", 4)) {
            const uint8_t *v = colon + 1, *e = l + ll;
            while (v < e && (*v == ' ' || *v == '\t'))
                v++;
            while (e > v && (e[-1] == ' ' || e[-1] == '\t'))
                e--;
            *host = v;
            *hostlen = (size_t)(e - v);
            (*nhost)++;
        }
        off = next;
    }
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
    const uint8_t *host = NULL;
    size_t hostlen = 0;
    int nhost = 0;
    long hl = header_block(buf, len, (size_t)rl, o, &host, &hostlen, &nhost);
    if (hl <= 0) {
        if (hl == 0)
            o->kind = SNIFF_MORE;
        return;
    }
    o->head_len = (size_t)hl;
    if (nhost == 0)
        return bad(o, "no Host header");
    if (nhost > 1)
        return bad(o, "more than one Host header");
    char h[SNIFF_NAME_MAX];
    if (!host_port((const char *)host, hostlen, h, NULL, false))
        return bad(o, "Host is not a host name");
    /* An absolute-form target names the host again; it must agree. */
    static const char http[] = "http://", https[] = "https://";
    size_t skip = 0;
    if (tlen > 7 && !strncasecmp((const char *)target, http, 7))
        skip = 7;
    else if (tlen > 8 && !strncasecmp((const char *)target, https, 8))
        skip = 8;
    if (skip) {
        const uint8_t *a = target + skip;
        size_t al = 0;
        while (skip + al < tlen && a[al] != '/' && a[al] != '?' && a[al] != '#')
            al++;
        if (memchr(a, '@', al))
            return bad(o, "user name in the request target");
        char t[SNIFF_NAME_MAX];
        if (!host_port((const char *)a, al, t, NULL, false))
            return bad(o, "request target is not a host name");
        if (strcmp(t, h))
            return bad(o, "request target and Host header name different hosts");
    }
    o->kind = SNIFF_HTTP;
    snprintf(o->name, sizeof o->name, "%s", h);
}

void sniff_classify(const uint8_t *buf, size_t len, struct sniff *o)
{
    memset(o, 0, sizeof *o);
    if (len == 0) {
        o->kind = SNIFF_MORE;
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
    const uint8_t *host = NULL;
    size_t hostlen = 0;
    int nhost = 0;
    long hl = header_block(buf, len, (size_t)rl, o, &host, &hostlen, &nhost);
    if (hl <= 0) {
        if (hl == 0)
            o->kind = SNIFF_MORE;
        return;
    }
    o->head_len = (size_t)hl;
    if (!host_port((const char *)target, tlen, o->name, port, true))
        return bad(o, "CONNECT target is not host:port");
    o->kind = SNIFF_HTTP;
}
