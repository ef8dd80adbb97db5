/* net_fuzz.c — libFuzzer target for the parsers the supervisor runs on what
 * a sandbox sends it (src/egress/sniff.c, src/egress/dns_wire.c). Checks, beyond "no crash, no
 * sanitizer report":
 *   - following the requests of a plain-HTTP stream (http_walk) gives the
 *     same verdicts and passes the same bytes whether the stream comes whole
 *     or in pieces (the relay sees it in pieces; a difference would let a
 *     request past the Host check), and never passes more than it was given;
 *   - every request it reports is well-formed: a Host name, a method;
 *   - the first-bytes, CONNECT and response parsers never claim more bytes
 *     than they were given;
 *   - a DNS query that parses gets a reply that echoes its id.
 * The first input byte chooses the piece size and the upgrade answer.
 * Built and run briefly by tests/suites/fuzz-net.sh; longer: make fuzz-net. */
#include "dns_wire.h"
#include "sniff.h"

#include <string.h>

#define CHECK(c)                                                                   \
    do {                                                                           \
        if (!(c)) {                                                                \
            fprintf(stderr, "check failed: %s (%s:%d)\n", #c, __FILE__, __LINE__); \
            abort();                                                               \
        }                                                                          \
    } while (0)

struct seen {
    char log[4096];
    size_t n, passed;
};

static void note(struct seen *s, const char *a, const char *b)
{
    int k = snprintf(s->log + s->n, sizeof s->log - s->n, "%s%s|", a, b ? b : "");
    if (k > 0 && (size_t)k < sizeof s->log - s->n)
        s->n += (size_t)k;
}

static void walk(const uint8_t *d, size_t len, size_t step, bool answer, struct seen *s)
{
    struct http_walk w;
    memset(&w, 0, sizeof w);
    memset(s, 0, sizeof *s);
    size_t have = 0, pos = 0;
    for (int rounds = 0;; rounds++) {
        have = step && have + step < len ? have + step : len;
        for (;;) {
            size_t used = 0;
            struct sniff req;
            enum http_walk_result r = http_walk(&w, d + pos, have - pos, &used, &req);
            CHECK(used <= have - pos);
            pos += used;
            if (r == HW_REQUEST) {
                CHECK(req.kind == SNIFF_HTTP && req.name[0] && req.method[0]);
                CHECK(strlen(req.name) < sizeof req.name);
                note(s, "R", req.name);
                continue;
            }
            if (r == HW_ERROR) {
                CHECK(req.why != NULL);
                note(s, "E", req.why);
                s->passed = pos;
                return;
            }
            if (r == HW_WAIT) {
                note(s, "W", NULL);
                http_walk_answer(&w, answer);
                continue;
            }
            break;
        }
        if (have == len) {
            s->passed = pos;
            return;
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    size_t step = 1 + (data[0] & 0x3f);
    bool answer = data[0] & 0x40;
    const uint8_t *d = data + 1;
    size_t n = size - 1;

    static struct seen whole, pieces;
    walk(d, n, 0, answer, &whole);
    walk(d, n, step, answer, &pieces);
    CHECK(whole.passed <= n);
    CHECK(whole.passed == pieces.passed);
    CHECK(whole.n == pieces.n && !memcmp(whole.log, pieces.log, whole.n));

    struct sniff s;
    sniff_classify(d, n, &s);
    if (s.kind == SNIFF_HTTP)
        CHECK(s.head_len <= n && s.name[0]);
    uint16_t port;
    sniff_connect(d, n, &s, &port);
    if (s.kind == SNIFF_HTTP)
        CHECK(s.head_len <= n && port);
    int status;
    sniff_response(d, n, &s, &status);
    if (s.kind == SNIFF_HTTP)
        CHECK(s.head_len <= n && status >= 100 && status < 600);

    struct dns_query q;
    enum dns_parse p = dns_parse_query(d, n, &q);
    if (p != DNS_DROP) {
        uint8_t out[4096 + 64];
        uint32_t a4 = 0x0200120a;
        size_t r = dns_build_reply(d, &q, p == DNS_OK ? 0 : q.rcode, p == DNS_OK ? &a4 : NULL, 300,
                                   out, sizeof out);
        CHECK(n > 4096 || (r >= 12 && out[0] == d[0] && out[1] == d[1]));
    }
    return 0;
}
