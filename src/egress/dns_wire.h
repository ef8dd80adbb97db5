/* dns_wire.h — the little DNS wire format the sandbox's resolver needs: parse one
 * query (header + one question) and build the reply (the question echoed,
 * optionally one A record). Pure functions on byte buffers, no I/O; egress
 * does the sockets and the policy. Nothing here ever forwards a query. */
#ifndef FB_DNS_H
#define FB_DNS_H

#include "fb.h"

enum {
    DNS_TYPE_A = 1,
    DNS_TYPE_AAAA = 28,
    DNS_CLASS_IN = 1,
    DNS_RCODE_NOERROR = 0,
    DNS_RCODE_FORMERR = 1,
    DNS_RCODE_SERVFAIL = 2,
    DNS_RCODE_NXDOMAIN = 3,
    DNS_RCODE_NOTIMP = 4,
    DNS_RCODE_REFUSED = 5,
};

/* The outcome of parsing: answer it, answer with an error code only (the
 * header could be read but the rest is unusable), or drop it (too short to
 * have an id, or it is a response, not a query). */
enum dns_parse { DNS_OK, DNS_ERROR_REPLY, DNS_DROP };

struct dns_query {
    uint16_t id, flags;
    uint16_t qtype, qclass;
    int rcode;       /* DNS_ERROR_REPLY: FORMERR or NOTIMP */
    size_t qend;     /* offset just past the question */
    /* The name in presentation form, as sent (case kept: it is what the
     * audit log shows), without the final dot;
     * bytes that are not printable ASCII, '.' inside a label and '\\' are
     * written as \DDD (so the log can show anything). name_plain is false
     * when any escape was needed: such a name never matches the allowlist. */
    char name[4 * 255 + 1];
    bool name_plain;
    const char *why; /* what was wrong, for DNS_ERROR_REPLY / DNS_DROP */
};

enum dns_parse dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q);

/* Build the reply to q (msg is the query it was parsed from) into out.
 * rcode: DNS_RCODE_*; a4 (network byte order) non-NULL adds one A answer
 * with ttl. Returns the length, or 0 if cap is too small. */
size_t dns_build_reply(const uint8_t *msg, const struct dns_query *q, int rcode,
                       const uint32_t *a4, uint32_t ttl, uint8_t *out, size_t cap);

/* "A", "AAAA", "TXT", ... or "TYPE65" into buf (at least 16 bytes). */
const char *dns_type_name(uint16_t type, char *buf, size_t cap);

#endif
