/* dns_wire.c — parse one DNS query, build its reply (see dns_wire.h).
 *
 * Every length is checked against the message before it is used; names may
 * not use compression pointers (a query has nothing to point back to) and
 * are limited to 255 bytes on the wire, labels to 63. */
#include "dns_wire.h"

#include <arpa/inet.h>
#include <string.h>

#define HDR 12

static uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }

enum dns_parse dns_parse_query(const uint8_t *msg, size_t len, struct dns_query *q)
{
    memset(q, 0, sizeof *q);
    if (len < HDR) {
        q->why = "shorter than a DNS header";
        return DNS_DROP;
    }
    q->id = get16(msg);
    q->flags = get16(msg + 2);
    if (q->flags & 0x8000) {
        q->why = "a response, not a query";
        return DNS_DROP;
    }
    q->rcode = DNS_RCODE_FORMERR;
    unsigned opcode = (q->flags >> 11) & 0xf;
    if (opcode != 0) {
        q->rcode = DNS_RCODE_NOTIMP;
        q->why = "opcode is not QUERY";
        return DNS_ERROR_REPLY;
    }
    if (get16(msg + 4) != 1) {
        q->why = "question count is not 1";
        return DNS_ERROR_REPLY;
    }
    if (get16(msg + 6) != 0 || get16(msg + 8) != 0) {
        q->why = "answer or authority records in a query";
        return DNS_ERROR_REPLY;
    }
    /* Additional records (an EDNS OPT) are allowed and ignored. */
    size_t off = HDR, wire = 0, o = 0;
    q->name_plain = true;
    for (;;) {
        if (off >= len) {
            q->why = "name runs past the end";
            return DNS_ERROR_REPLY;
        }
        uint8_t l = msg[off++];
        wire += 1u + l;
        if (l == 0)
            break;
        if (l & 0xc0) {
            q->why = (l & 0xc0) == 0xc0 ? "compression pointer in a question"
                                        : "unknown label type";
            return DNS_ERROR_REPLY;
        }
        if (wire > 255 || off + l > len) {
            q->why = wire > 255 ? "name longer than 255 bytes" : "name runs past the end";
            return DNS_ERROR_REPLY;
        }
        if (o)
            q->name[o++] = '.';
        for (uint8_t k = 0; k < l; k++) {
            uint8_t c = msg[off + k];
            if (c > 0x20 && c < 0x7f && c != '.' && c != '\\') {
                q->name[o++] = (char)c;
            } else {
                o += (size_t)snprintf(q->name + o, sizeof q->name - o, "\\%03u", c);
                q->name_plain = false;
            }
        }
        off += l;
    }
    q->name[o] = 0;
    if (off + 4 > len) {
        q->why = "question truncated";
        return DNS_ERROR_REPLY;
    }
    q->qtype = get16(msg + off);
    q->qclass = get16(msg + off + 2);
    q->qend = off + 4;
    q->rcode = 0;
    return DNS_OK;
}

size_t dns_build_reply(const uint8_t *msg, const struct dns_query *q, int rcode,
                       const uint32_t *a4, uint32_t ttl, uint8_t *out, size_t cap)
{
    size_t qlen = q->qend > HDR ? q->qend - HDR : 0;
    size_t need = HDR + qlen + (a4 && qlen ? 16 : 0);
    if (cap < need)
        return 0;
    memset(out, 0, HDR);
    put16(out, q->id);
    /* QR, opcode echoed, AA (the sandbox's resolver is the authority for
     * what it hands out), RD echoed, RA. */
    uint16_t flags = (uint16_t)(0x8000 | (q->flags & 0x7800) | 0x0400 | (q->flags & 0x0100) |
                                0x0080 | (rcode & 0xf));
    put16(out + 2, flags);
    if (!qlen)
        return HDR;
    put16(out + 4, 1);
    memcpy(out + HDR, msg + HDR, qlen);
    size_t n = HDR + qlen;
    if (a4) {
        put16(out + 6, 1);
        uint8_t *r = out + n;
        put16(r, 0xc000 | HDR); /* the name: a pointer to the question's */
        put16(r + 2, DNS_TYPE_A);
        put16(r + 4, DNS_CLASS_IN);
        put16(r + 6, (uint16_t)(ttl >> 16));
        put16(r + 8, (uint16_t)ttl);
        put16(r + 10, 4);
        memcpy(r + 12, a4, 4);
        n += 16;
    }
    return n;
}

const char *dns_type_name(uint16_t type, char *buf, size_t cap)
{
    static const struct { uint16_t t; const char *n; } names[] = {
        {1, "A"},     {2, "NS"},     {5, "CNAME"},  {6, "SOA"},   {12, "PTR"},
        {15, "MX"},   {16, "TXT"},   {28, "AAAA"},  {33, "SRV"},  {35, "NAPTR"},
        {39, "DNAME"}, {41, "OPT"},  {43, "DS"},    {48, "DNSKEY"}, {52, "TLSA"},
        {64, "SVCB"}, {65, "HTTPS"}, {99, "SPF"},   {252, "AXFR"}, {255, "ANY"},
        {257, "CAA"},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(names); i++)
        if (names[i].t == type) {
            snprintf(buf, cap, "%s", names[i].n);
            return buf;
        }
    snprintf(buf, cap, "TYPE%u", type);
    return buf;
}
