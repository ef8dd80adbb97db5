/* parsers_test.c — the DNS and first-bytes parsers (src/egress/dns_wire.c, src/egress/sniff.c)
 * on their own: expected results for crafted input, real ClientHellos (from
 * tests/net/clienthello.py, argv[1]) whole, cut short, split across records
 * and corrupted, and random input. Built with ASan/UBSan by 40-net-bad.sh;
 * prints "ok - ..." / "not ok - ..." lines. */
#include "dns_wire.h"
#include "sniff.h"

#include <stdarg.h>
#include <string.h>

static int failures;

static void check(bool cond, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    printf(cond ? "ok - parsers: " : "not ok - parsers: ");
    vprintf(fmt, ap);
    printf("\n");
    va_end(ap);
    failures += !cond;
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)rng;
}

static const char *kind_name(enum sniff_kind k)
{
    static const char *n[] = {"MORE", "TLS", "HTTP", "OTHER", "BAD"};
    return n[k];
}

static void http_case(const char *in, enum sniff_kind want, const char *name)
{
    struct sniff s;
    sniff_classify((const uint8_t *)in, strlen(in), &s);
    bool good = s.kind == want && (!name || !strcmp(s.name, name));
    char shown[48];
    snprintf(shown, sizeof shown, "%.40s", in);
    for (char *c = shown; *c; c++)
        if (*c == '\r' || *c == '\n')
            *c = '|';
    check(good, "\"%s\" -> %s %s (got %s %s%s%s)", shown, kind_name(want), name ? name : "",
          kind_name(s.kind), s.name, s.why ? ": " : "", s.why ? s.why : "");
}

static void http_cases(void)
{
    http_case("GET / HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("GET / HTTP/1.1\r\nhOsT:  API.Test.:8080 \r\nAccept: */*\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("POST /x HTTP/1.0\nHost: api.test\n\n", SNIFF_HTTP, "api.test");
    http_case("GET http://api.test/x HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("GET", SNIFF_MORE, NULL);
    http_case("GET / HTTP/1.1\r\nHost: api.test\r\n", SNIFF_MORE, NULL);
    http_case("GET / HTTP/1.1\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost: a.test\r\n b.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nX: 1\rHost: b.test\r\nHost: a.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost : a.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET http://b.test/ HTTP/1.1\r\nHost: a.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET http://a.test@b.test/ HTTP/1.1\r\nHost: b.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost: a.test:99999\r\n\r\n", SNIFF_BAD, NULL);
    http_case("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET /\r\n", SNIFF_OTHER, NULL);
    http_case("SSH-2.0-OpenSSH_9.2\r\n", SNIFF_OTHER, NULL);
    http_case("\x01\x02\x03", SNIFF_OTHER, NULL);
    http_case("ping\r\n", SNIFF_OTHER, NULL);
    /* Absolute-form targets of any scheme name the host too. */
    http_case("GET ws://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET ftp://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET WSS://Evil.Test:443/x?y HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET ws://api.test/chat HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("GET x-y.z+a://API.test:8080 HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("GET evil.test:80 HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET mailto:x@evil.test HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET http:evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET ws://u@evil.test/ HTTP/1.1\r\nHost: evil.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET 1ws://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET ws://[::1]/ HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    http_case("OPTIONS * HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_HTTP, "api.test");
    http_case("GET * HTTP/1.1\r\nHost: api.test\r\n\r\n", SNIFF_BAD, NULL);
    /* Where a request ends must be unambiguous. */
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 5\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5, 5\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: -1\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 99999999999999999999\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nContent-Length: 3\r\nTransfer-Encoding: chunked\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: gzip, chunked\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\nTransfer-Encoding: chunked\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.0\r\nHost: a.test\r\nTransfer-Encoding: chunked\r\n\r\n", SNIFF_BAD, NULL);
    http_case("POST / HTTP/1.1\r\nHost: a.test\r\nTransfer-Encoding: Chunked \r\n\r\n", SNIFF_HTTP, "a.test");
    http_case("GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: h2c\r\nConnection: Upgrade, HTTP2-Settings\r\n\r\n", SNIFF_BAD, NULL);
    http_case("GET / HTTP/1.1\r\nHost: a.test\r\nUpgrade: websocket, H2C\r\n\r\n", SNIFF_BAD, NULL);

    struct sniff s;
    static char many[8192];
    size_t ml = (size_t)snprintf(many, sizeof many, "GET / HTTP/1.1\r\nHost: api.test\r\n");
    for (int i = 0; i < 256; i++)
        ml += (size_t)snprintf(many + ml, sizeof many - ml, "X%d: y\r\n", i);
    snprintf(many + ml, sizeof many - ml, "\r\n");
    sniff_classify((const uint8_t *)many, strlen(many), &s);
    check(s.kind == SNIFF_BAD, "more than 256 header lines refused");
    uint16_t port;
    const char *c1 = "CONNECT Api.Test:443 HTTP/1.1\r\nHost: api.test:443\r\n\r\nXYZ";
    sniff_connect((const uint8_t *)c1, strlen(c1), &s, &port);
    check(s.kind == SNIFF_HTTP && !strcmp(s.name, "api.test") && port == 443 &&
              s.head_len == strlen(c1) - 3,
          "CONNECT api.test:443 parsed, pipelined bytes left");
    const char *c2 = "CONNECT api.test HTTP/1.1\r\n\r\n";
    sniff_connect((const uint8_t *)c2, strlen(c2), &s, &port);
    check(s.kind == SNIFF_BAD, "CONNECT without a port refused");
    const char *c3 = "GET http://api.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n";
    sniff_connect((const uint8_t *)c3, strlen(c3), &s, &port);
    check(s.kind == SNIFF_BAD && !strcmp(s.method, "GET"), "proxy GET refused, method reported");
    const char *c4 = "CONNECT [::1]:443 HTTP/1.1\r\n\r\n";
    sniff_connect((const uint8_t *)c4, strlen(c4), &s, &port);
    check(s.kind == SNIFF_BAD, "CONNECT to an IPv6 literal refused");
}

/* ---- every request of a connection ---- */

/* Feed stream to a walker in pieces of at most step bytes (0: whole), as
 * the relay does (what was used is dropped, the rest kept); writes what it
 * saw into log: "R<host>" per request, "W" at an upgrade wait (answered
 * with answer: 0 no, 1 yes), "E<why>" at an error. Returns the bytes passed. */
static size_t walk_feed(const char *stream, size_t len, size_t step, int answer, char *log,
                        size_t cap)
{
    struct http_walk w;
    memset(&w, 0, sizeof w);
    size_t have = 0, pos = 0, passed = 0, o = 0;
    log[0] = 0;
    for (;;) {
        size_t avail = step ? (have + step < len ? have + step : len) : len;
        bool more = avail > have;
        have = avail;
        for (;;) {
            size_t used = 0;
            struct sniff req;
            enum http_walk_result r = http_walk(&w, (const uint8_t *)stream + pos, have - pos, &used, &req);
            pos += used;
            passed += used;
            if (r == HW_REQUEST) {
                o += (size_t)snprintf(log + o, o < cap ? cap - o : 0, "R%s ", req.name);
                continue;
            }
            if (r == HW_ERROR) {
                o += (size_t)snprintf(log + o, o < cap ? cap - o : 0, "E%s", req.why);
                return passed;
            }
            if (r == HW_WAIT) {
                o += (size_t)snprintf(log + o, o < cap ? cap - o : 0, "W ");
                if (answer < 0)
                    return passed;
                http_walk_answer(&w, answer == 1);
                continue;
            }
            break;
        }
        if (!more && have == len)
            return passed;
    }
}

static void walk_case(const char *what, const char *stream, int answer, const char *want)
{
    char whole[512], split[512];
    size_t len = strlen(stream);
    size_t p1 = walk_feed(stream, len, 0, answer, whole, sizeof whole);
    bool same = true;
    for (size_t step = 1; step < 9 && same; step++) {
        size_t p2 = walk_feed(stream, len, step, answer, split, sizeof split);
        same = !strcmp(whole, split) && p1 == p2;
    }
    check(!strncmp(whole, want, strlen(want)) && same,
          "walk: %s -> \"%s\" (got \"%s\"%s)", what, want, whole,
          same ? "" : "; differs when fed in pieces");
}

static void walk_cases(void)
{
    walk_case("two requests, the second for another host",
              "GET / HTTP/1.1\r\nHost: api.test\r\n\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
              0, "Rapi.test Revil.test ");
    walk_case("a request hidden in a Content-Length body is body",
              "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 35\r\n\r\n"
              "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n"
              "GET /n HTTP/1.1\r\nHost: api.test\r\n\r\n",
              0, "Rapi.test Rapi.test ");
    walk_case("a request after a chunked body is checked",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n"
              "23;ext=1\r\nGET / HTTP/1.1\r\nHost: evil.test\r\n\r\n\r\n"
              "0\r\nX-Trailer: t\r\n\r\n"
              "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
              0, "Rapi.test Revil.test ");
    walk_case("chunk size not hex",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", 0,
              "Rapi.test Emalformed chunk size line");
    walk_case("chunk size line with a bare LF",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n5\nhello\r\n", 0,
              "Rapi.test Emalformed chunk size line");
    walk_case("chunk size too large",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n10000000000000000\r\n", 0,
              "Rapi.test Emalformed chunk size line");
    walk_case("chunk data longer than its size",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n2\r\nabc\r\n", 0,
              "Rapi.test Echunk not followed by CRLF");
    walk_case("folded trailer",
              "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n0\r\n x: y\r\n\r\n", 0,
              "Rapi.test Emalformed trailer line");
    walk_case("an upgrade declined: requests go on being checked",
              "GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n"
              "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
              0, "Rapi.test W Revil.test ");
    walk_case("an upgrade accepted: the rest is the new protocol",
              "GET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n\x81\x85junk GET / HTTP/1.1\r\n",
              1, "Rapi.test W ");
    walk_case("an upgrade on a later request is refused",
              "GET / HTTP/1.1\r\nHost: api.test\r\n\r\nGET /ws HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n",
              0, "Rapi.test EUpgrade on a later request");
    walk_case("garbage after a request",
              "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n\x01\x02\x03", 0,
              "Rapi.test Ebytes after a request are not an HTTP/1.x request");
    walk_case("ws:// target for another host on a later request",
              "GET / HTTP/1.1\r\nHost: api.test\r\n\r\nGET ws://evil.test/ HTTP/1.1\r\nHost: api.test\r\n\r\n",
              0, "Rapi.test Erequest target and Host header name different hosts");

    /* Responses, for the answer to an upgrade. */
    struct sniff s;
    int status;
    const char *r1 = "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n\r\n\x81";
    sniff_response((const uint8_t *)r1, strlen(r1), &s, &status);
    check(s.kind == SNIFF_HTTP && status == 101 && s.head_len == strlen(r1) - 1, "response: 101 parsed");
    sniff_response((const uint8_t *)r1, 20, &s, &status);
    check(s.kind == SNIFF_MORE, "response: a partial head is need-more");
    const char *r2 = "SSH-2.0-x\r\n";
    sniff_response((const uint8_t *)r2, strlen(r2), &s, &status);
    check(s.kind == SNIFF_BAD, "response: not HTTP is bad");

    /* Random streams: no crash, and the same verdicts whole or in pieces. */
    static const char *parts[] = {
        "GET / HTTP/1.1\r\nHost: api.test\r\n\r\n", "GET / HTTP/1.1\r\nHost: evil.test\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: api.test\r\nContent-Length: 7\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: api.test\r\nTransfer-Encoding: chunked\r\n\r\n",
        "5\r\nhello\r\n", "0\r\n\r\n", "0\r\nT: 1\r\n\r\n", "abcdefg", "\r\n",
        "GET /w HTTP/1.1\r\nHost: api.test\r\nUpgrade: websocket\r\n\r\n", "Host: x\r\n",
    };
    int differ = 0;
    for (int i = 0; i < 20000 && !differ; i++) {
        char st[1024], a[512], b[512];
        size_t n = 0;
        int np = 1 + (int)(rnd() % 6);
        for (int k = 0; k < np; k++) {
            const char *pp = parts[rnd() % (sizeof parts / sizeof *parts)];
            size_t pl = strlen(pp);
            if (n + pl >= sizeof st)
                break;
            memcpy(st + n, pp, pl);
            n += pl;
        }
        for (int k = 0; k < 2 && n; k++)
            if (rnd() % 3 == 0)
                st[rnd() % n] = (char)rnd();
        st[n] = 0;
        int answer = (int)(rnd() % 2);
        size_t p1 = walk_feed(st, n, 0, answer, a, sizeof a);
        size_t p2 = walk_feed(st, n, 1 + rnd() % 13, answer, b, sizeof b);
        differ = strcmp(a, b) || p1 != p2;
    }
    check(!differ, "walk: 20000 random request streams, same verdicts whole and in pieces");
}

/* Re-frame a single-record ClientHello into two records split at cut. */
static size_t split_records(const uint8_t *in, size_t n, size_t cut, uint8_t *out)
{
    size_t body = n - 5;
    if (cut == 0 || cut >= body)
        return 0;
    memcpy(out, in, 3);
    out[3] = (uint8_t)(cut >> 8);
    out[4] = (uint8_t)cut;
    memcpy(out + 5, in + 5, cut);
    memcpy(out + 5 + cut, in, 3);
    out[5 + cut + 3] = (uint8_t)((body - cut) >> 8);
    out[5 + cut + 4] = (uint8_t)(body - cut);
    memcpy(out + 10 + cut, in + 5 + cut, body - cut);
    return n + 5;
}

static void tls_cases(const char *path)
{
    FILE *f = path ? fopen(path, "rb") : NULL;
    if (!f) {
        printf("ok - parsers: real ClientHellos # SKIP no input\n");
        return;
    }
    static const char *want[] = {"api.test", "", "other.test"};
    for (int i = 0; i < 3; i++) {
        uint8_t lb[4];
        if (fread(lb, 1, 4, f) != 4)
            break;
        size_t n = (size_t)lb[0] << 24 | (size_t)lb[1] << 16 | (size_t)lb[2] << 8 | lb[3];
        uint8_t *h = malloc(n), *two = malloc(n + 5), *mut = malloc(n);
        if (fread(h, 1, n, f) != n)
            break;
        struct sniff s;
        sniff_classify(h, n, &s);
        check(s.kind == SNIFF_TLS && !strcmp(s.name, want[i]), "ClientHello %d: SNI \"%s\" (got %s \"%s\")",
              i + 1, want[i], kind_name(s.kind), s.name);
        bool all_more = true;
        for (size_t k = 0; k < n; k++) {
            sniff_classify(h, k, &s);
            all_more &= s.kind == SNIFF_MORE;
        }
        check(all_more, "ClientHello %d: every prefix is \"need more\"", i + 1);
        bool split_ok = true;
        for (size_t cut = 1; cut < n - 5; cut += 7) {
            size_t m = split_records(h, n, cut, two);
            sniff_classify(two, m, &s);
            split_ok &= s.kind == SNIFF_TLS && !strcmp(s.name, want[i]);
        }
        check(split_ok, "ClientHello %d: split across two records", i + 1);
        for (int r = 0; r < 20000; r++) {
            memcpy(mut, h, n);
            int flips = 1 + (int)(rnd() % 4);
            for (int k = 0; k < flips; k++)
                mut[rnd() % n] ^= (uint8_t)(1u << (rnd() % 8));
            sniff_classify(mut, n, &s);
            sniff_classify(mut, rnd() % n, &s);
        }
        check(true, "ClientHello %d: 20000 corrupted copies parsed without a fault", i + 1);
        free(h);
        free(two);
        free(mut);
    }
    fclose(f);
}

static size_t dns_q(uint8_t *b, uint16_t id, const char *name, uint16_t type)
{
    size_t n = 0;
    uint8_t hdr[12] = {(uint8_t)(id >> 8), (uint8_t)id, 1, 0, 0, 1, 0, 0, 0, 0, 0, 0};
    memcpy(b, hdr, 12);
    n = 12;
    const char *s = name;
    while (*s) {
        const char *dot = strchr(s, '.');
        size_t l = dot ? (size_t)(dot - s) : strlen(s);
        b[n++] = (uint8_t)l;
        memcpy(b + n, s, l);
        n += l;
        s += l + (dot ? 1 : 0);
    }
    b[n++] = 0;
    b[n++] = (uint8_t)(type >> 8);
    b[n++] = (uint8_t)type;
    b[n++] = 0;
    b[n++] = 1;
    return n;
}

static void dns_cases(void)
{
    uint8_t q[512], out[600];
    struct dns_query d;
    size_t n = dns_q(q, 0xbeef, "Api.Test", 1);
    check(dns_parse_query(q, n, &d) == DNS_OK && !strcmp(d.name, "Api.Test") && d.name_plain &&
              d.qtype == 1 && d.id == 0xbeef,
          "DNS: a plain A query");
    uint32_t a = 0x020012c6;
    size_t r = dns_build_reply(q, &d, 0, &a, 300, out, sizeof out);
    check(r == n + 16 && out[0] == 0xbe && out[1] == 0xef && (out[2] & 0x80) && out[7] == 1 &&
              !memcmp(out + r - 4, &a, 4),
          "DNS: the reply echoes id and question and carries the A record");
    check(dns_build_reply(q, &d, 0, &a, 300, out, 20) == 0, "DNS: reply refuses a short buffer");
    q[12 + 1] = '.';
    check(dns_parse_query(q, n, &d) == DNS_OK && !d.name_plain, "DNS: a dot inside a label is escaped");
    check(dns_parse_query(q, 11, &d) == DNS_DROP, "DNS: shorter than a header is dropped");
    n = dns_q(q, 1, "a.test", 1);
    q[2] |= 0x80;
    check(dns_parse_query(q, n, &d) == DNS_DROP, "DNS: a response is dropped");
    q[2] = 0x28;
    check(dns_parse_query(q, n, &d) == DNS_ERROR_REPLY && d.rcode == DNS_RCODE_NOTIMP,
          "DNS: opcode UPDATE is NOTIMP");
    n = dns_q(q, 1, "a.test", 1);
    q[12] = 0xc0;
    q[13] = 12;
    check(dns_parse_query(q, n, &d) == DNS_ERROR_REPLY && d.rcode == DNS_RCODE_FORMERR,
          "DNS: a compression pointer is FORMERR");
    uint8_t big[400];
    memcpy(big, q, 12);
    size_t m = 12;
    for (int i = 0; i < 5; i++) {
        big[m++] = 63;
        memset(big + m, 'a', 63);
        m += 63;
    }
    big[m++] = 0;
    check(dns_parse_query(big, m, &d) == DNS_ERROR_REPLY, "DNS: a name over 255 bytes is FORMERR");
    size_t accepted = 0;
    for (int i = 0; i < 300000; i++) {
        uint8_t f[600];
        size_t fl;
        if (i % 2) {
            fl = rnd() % sizeof f;
            for (size_t k = 0; k < fl; k++)
                f[k] = (uint8_t)rnd();
        } else {
            fl = dns_q(f, (uint16_t)i, "x.y.test", 1);
            for (int k = 0; k < 3; k++)
                f[rnd() % fl] = (uint8_t)rnd();
            fl = rnd() % (fl + 1);
        }
        enum dns_parse p = dns_parse_query(f, fl, &d);
        if (p != DNS_DROP) {
            r = dns_build_reply(f, &d, p == DNS_OK ? 0 : d.rcode, p == DNS_OK ? &a : NULL, 1, out,
                                sizeof out);
            accepted += p == DNS_OK;
            if (r < 12 || out[0] != f[0] || out[1] != f[1]) {
                check(false, "DNS: fuzz reply %d malformed", i);
                return;
            }
        }
        struct sniff s;
        sniff_classify(f, fl, &s);
    }
    check(accepted > 0, "DNS and sniff: 300000 random and mutated inputs (%zu parsed)", accepted);
}

int main(int argc, char **argv)
{
    http_cases();
    walk_cases();
    tls_cases(argc > 1 ? argv[1] : NULL);
    dns_cases();
    return failures ? 1 : 0;
}
