/* egress_resolver.c — the sandbox's resolver, served by the supervisor on the
 * sandbox's 127.0.0.53:53 (UDP and TCP):
 *
 *   allowed name, A      -> a synthetic address, stable for the run
 *   allowed name, AAAA   -> NOERROR, no answer (IPv4 only)
 *   allowed name, other  -> REFUSED
 *   any other name       -> NXDOMAIN
 *   malformed            -> FORMERR / NOTIMP, or dropped when there is no
 *                           id to answer to. Nothing is ever forwarded.
 *
 * It owns the synthetic addresses (198.18.0.2 upwards, one per name), which
 * egress.c maps back to names when a connection arrives. */
#include "egress_int.h"

#include "dns_wire.h"

#include <arpa/inet.h>
#include <string.h>
#include <sys/epoll.h>

/* ---- synthetic addresses ---- */

/* The address for name (network order), allocating one; false when full. */
static bool synth_get(struct fb_egress *e, const char *name, uint32_t *a4)
{
    long k = nametab_find(&e->synth, name);
    if (k < 0) {
        if (e->synth.n >= SYNTH_MAX)
            return false;
        k = (long)nametab_add(&e->synth, name);
    }
    *a4 = htonl(FB_NET_SYNTH_BASE + SYNTH_FIRST + (uint32_t)k);
    return true;
}

const char *synth_name(const struct fb_egress *e, uint32_t a)
{
    if (a < FB_NET_SYNTH_BASE + SYNTH_FIRST)
        return NULL;
    uint32_t k = a - FB_NET_SYNTH_BASE - SYNTH_FIRST;
    return k < e->synth.n ? e->synth.v[k] : NULL;
}

/* ---- DNS ---- */

/* Answer one query; returns the reply length (0: no reply). */
static size_t dns_answer(struct fb_egress *e, const uint8_t *msg, size_t len, uint8_t *out,
                         size_t cap, const char *transport)
{
    struct dns_query q;
    enum dns_parse r = dns_parse_query(msg, len, &q);
    e->sum.dns_queries++;
    if (r != DNS_OK) {
        e->sum.dns_denied++;
        char why[160];
        snprintf(why, sizeof why, "malformed query: %s", q.why);
        audit_dns(e->audit, q.name[0] ? q.name : NULL, NULL, transport, "deny", why, NULL);
        return r == DNS_DROP ? 0 : dns_build_reply(msg, &q, q.rcode, NULL, 0, out, cap);
    }
    char tbuf[16];
    const char *type = dns_type_name(q.qtype, tbuf, sizeof tbuf);
    const char *name = q.name[0] ? q.name : ".";
    /* Names match case-insensitively; the log keeps the case as sent. */
    char lower[sizeof q.name];
    for (size_t i = 0;; i++) {
        char ch = q.name[i];
        lower[i] = ch >= 'A' && ch <= 'Z' ? (char)(ch - 'A' + 'a') : ch;
        if (!ch)
            break;
    }
    bool a = q.name_plain && q.name[0] && egress_allowed(e, lower, 0);
    int rcode;
    const char *verdict = "deny", *reason;
    uint32_t a4, *ans = NULL;
    if (q.qclass != DNS_CLASS_IN) {
        rcode = DNS_RCODE_REFUSED;
        reason = "query class is not IN";
    } else if (!a) {
        rcode = DNS_RCODE_NXDOMAIN;
        reason = e->p->net == FB_NET_NONE ? "no network (--net none)" : "name not in the allowlist";
        egress_note_denied_name(e, q.name_plain ? lower : name);
    } else if (q.qtype == DNS_TYPE_A) {
        if (synth_get(e, lower, &a4)) {
            rcode = DNS_RCODE_NOERROR;
            ans = &a4;
            verdict = "allow";
            reason = "allowlisted";
        } else {
            rcode = DNS_RCODE_SERVFAIL;
            reason = "synthetic address pool exhausted";
        }
    } else if (q.qtype == DNS_TYPE_AAAA) {
        rcode = DNS_RCODE_NOERROR;
        verdict = "allow";
        reason = "allowlisted; IPv4 only, no AAAA";
    } else {
        rcode = DNS_RCODE_REFUSED;
        reason = "only A and AAAA queries are answered";
    }
    if (!strcmp(verdict, "allow"))
        e->sum.dns_allowed++;
    else
        e->sum.dns_denied++;
    audit_dns(e->audit, name, type, transport, verdict, reason, ans);
    return dns_build_reply(msg, &q, rcode, ans, DNS_TTL, out, cap);
}

void dns_udp_ready(struct fb_egress *e)
{
    uint8_t msg[DNS_MSG_MAX + 1], out[DNS_MSG_MAX + 64];
    for (int i = 0; i < BATCH; i++) {
        struct sockaddr_storage from;
        socklen_t fl = sizeof from;
        ssize_t n = recvfrom(e->dns_udp.fd, msg, sizeof msg, MSG_TRUNC, (struct sockaddr *)&from, &fl);
        if (n < 0)
            return;
        if ((size_t)n > DNS_MSG_MAX) {
            e->sum.dns_queries++;
            e->sum.dns_denied++;
            audit_dns(e->audit, NULL, NULL, "udp", "deny", "malformed query: larger than 4096 bytes", NULL);
            continue;
        }
        size_t r = dns_answer(e, msg, (size_t)n, out, sizeof out, "udp");
        if (r > 512) {
            /* Never happens with one question and one A record; be safe. */
            r = 0;
        }
        if (r)
            sendto(e->dns_udp.fd, out, r, MSG_DONTWAIT | MSG_NOSIGNAL, (struct sockaddr *)&from, fl);
    }
}


void dns_tcp_event(struct fb_egress *e, struct conn *c, uint32_t rev)
{
    if (rev & EPOLLHUP)
        c->in.hup = true;
    if ((rev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !read_in(e, c))
        return;
    /* Answer every complete message while the reply buffer has room. */
    uint8_t out[DNS_MSG_MAX + 64];
    while (buf_len(&c->up) >= 2 && buf_room(&c->down) >= sizeof out + 2) {
        const uint8_t *p = c->up.d + c->up.head;
        size_t ml = (size_t)p[0] << 8 | p[1];
        if (ml > DNS_MSG_MAX || ml < 12) {
            e->sum.dns_queries++;
            e->sum.dns_denied++;
            audit_dns(e->audit, NULL, NULL, "tcp", "deny", "malformed query: bad length prefix", NULL);
            conn_end(e, c, "deny", true, "bad DNS length");
            return;
        }
        if (buf_len(&c->up) < 2 + ml)
            break;
        size_t r = dns_answer(e, p + 2, ml, out, sizeof out, "tcp");
        c->up.head += 2 + ml;
        if (r) {
            uint8_t l2[2] = {(uint8_t)(r >> 8), (uint8_t)r};
            buf_put(&c->down, l2, 2);
            buf_put(&c->down, out, r);
        }
    }
    buf_compact(&c->up);
    if (!flush(e, c, &c->in, &c->down, NULL, NULL))
        return;
    if (c->in_eof && !buf_len(&c->down)) {
        conn_end(e, c, "allow", false, "closed");
        return;
    }
    conn_update(e, c);
}
