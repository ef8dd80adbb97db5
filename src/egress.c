/* egress.c — the supervisor side of the network allowlist (see egress.h and
 * docs/network.md).
 *
 * Everything is non-blocking and driven by one private epoll instance (the
 * supervisor polls its fd and calls egress_dispatch()):
 *
 *   DNS (UDP and TCP on the sandbox's 127.0.0.53:53)
 *     allowed name, A      -> a synthetic address, stable for the run
 *     allowed name, AAAA   -> NOERROR, no answer (IPv4 only)
 *     allowed name, other  -> REFUSED
 *     any other name       -> NXDOMAIN
 *     malformed            -> FORMERR / NOTIMP, or dropped when there is no
 *                             id to answer to. Nothing is ever forwarded.
 *   Connections (listeners on the allowed ports, and the CONNECT proxy)
 *     destination -> name (only addresses handed out count) -> port allowed?
 *     -> first client bytes: TLS SNI or HTTP Host must be the name
 *        (ports 80/443: required; other explicitly allowed ports: checked
 *        when the client speaks first, opaque TCP otherwise)
 *     -> resolve on the host (--egress-resolve first, else worker threads)
 *     -> non-blocking connect -> relay both ways through two bounded
 *        buffers: a side is only read while the buffer towards the other
 *        side has room, so a peer that stops reading stalls only its own
 *        connection.
 *   Limits: p->max_conns relayed connections, p->conn_idle_ms idle timeout,
 *   HANDSHAKE_MS to get from accept to relaying.
 *   Audit: one JSON line per DNS query and per connection (--net-log).
 *
 * FLUEBOX_NO_SPLICE=1 in the supervisor's environment relays through the
 * buffers instead of splice() (for comparing the two).
 */
#include "egress.h"

#include "dns.h"
#include "hostres.h"
#include "net.h"
#include "sniff.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <jansson.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <time.h>

#define BUF_SIZE (64 * 1024)   /* per direction and connection, until relaying */
#define PIPE_SIZE (256 * 1024) /* splice pipes, per direction, while relaying */
#define SYNTH_FIRST 2          /* 198.18.0.2 is the first address handed out */
#define SYNTH_MAX 65536        /* names with an address, per sandbox */
#define DNS_TTL 300
#define DNS_MSG_MAX 4096       /* largest query accepted (UDP or TCP) */
#define DNS_TCP_MAX 16         /* concurrent DNS-over-TCP connections */
#define DNS_TCP_IDLE_MS 10000
#define HANDSHAKE_MS 30000     /* accept -> relaying */
#define CONNECT_TRY_MS 5000    /* per upstream address, when there are more to try */
#define LOG_MAX_LINES 200000   /* then events are only counted */
#define BATCH 64               /* events / datagrams / accepts per dispatch */

enum hkind { H_DNS_UDP, H_DNS_TCP, H_PROXY, H_LISTEN, H_TIMER, H_RESOLVER, H_SIDE };

struct handle {
    enum hkind kind;
};

struct listener {
    struct handle h;
    int fd;
    uint16_t port;
};

struct buf {
    uint8_t *d;
    size_t head, tail;
};

enum phase {
    PH_DNS,      /* DNS over TCP */
    PH_PROXYREQ, /* proxy: reading the CONNECT request */
    PH_SNIFF,    /* ports 80/443: waiting for the first bytes */
    PH_RESOLVE,  /* waiting for the host-side lookup */
    PH_CONNECT,  /* connecting upstream */
    PH_FIRST,    /* connected; waiting to see who speaks first */
    PH_RELAY,
};

struct conn;
struct side {
    struct handle h;
    struct conn *c;
    int fd;
    uint32_t ev;  /* registered events */
    bool reg, hup;
};

struct conn {
    struct conn *next, *prev;
    uint64_t id;
    enum phase ph;
    struct side in, out; /* in: the sandbox's end; out: upstream */
    bool proxy;          /* came through the CONNECT proxy */
    bool strict;         /* port 80/443: TLS or HTTP required */
    bool checked;        /* first bytes verified (or opaque decided) */
    bool dead;
    bool counted;        /* counted against max_conns */
    char *name;
    uint16_t port;
    const char *proto;   /* "tls", "http", "opaque" */
    char via[64];        /* "198.18.0.2:443" or "proxy" */
    char dst[INET6_ADDRSTRLEN + 8];
    struct buf up, down; /* up: sandbox -> upstream; down: upstream -> sandbox */
    /* Relaying with splice(): a pipe per direction; the buffers above then
     * only hold what was read before relaying started, sent first. */
    int pu[2], pd[2];
    size_t pu_fill, pd_fill, pipe_cap;
    bool in_eof, out_eof, up_shut, down_shut;
    uint64_t start_ns, last_ns;
    int64_t bytes_out, bytes_in;
    struct sockaddr_storage addr[HOSTRES_MAX_ADDRS];
    socklen_t alen[HOSTRES_MAX_ADDRS];
    size_t naddr, iaddr;
    uint64_t try_ns;     /* when the connect to addr[iaddr] started */
    int connect_errno;
};

struct fb_egress {
    const struct fb_policy *p;
    int ep;
    struct listener dns_udp, dns_tcp, proxy;
    struct listener lis[FB_NET_MAX_PORTS];
    size_t nlis;
    struct handle timer_h;
    int timer;
    bool timer_armed;
    struct handle res_h;
    struct hostres *res;
    struct conn *conns;    /* live connections */
    struct conn *dead;     /* closed during this dispatch, freed at its end */
    int nrelay;            /* connections counted against max_conns */
    int ndns_tcp;
    uint64_t next_id;
    /* Synthetic addresses: names[i] has FB_NET_SYNTH_BASE + SYNTH_FIRST + i. */
    char **names;
    size_t nnames, capnames;
    uint32_t *hash;        /* open addressing: index + 1, 0 = empty */
    size_t hcap;
    int logfd;
    int64_t log_lines;
    bool splice_ok;        /* SIGPIPE is blocked or ignored in this thread */
    /* The host's own interface addresses (at start): an allowed name that
     * resolves to one of them would reach the host's services. */
    struct sockaddr_storage *host_addrs;
    size_t nhost_addrs;
    struct fb_net_summary sum;
};

/* ---- small helpers ---- */

static size_t buf_len(const struct buf *b) { return b->tail - b->head; }
static size_t buf_room(const struct buf *b) { return BUF_SIZE - b->tail + b->head; }

static void buf_compact(struct buf *b)
{
    if (b->head == b->tail) {
        b->head = b->tail = 0;
    } else if (b->tail == BUF_SIZE && b->head) {
        memmove(b->d, b->d + b->head, b->tail - b->head);
        b->tail -= b->head;
        b->head = 0;
    }
}

static void buf_put(struct buf *b, const void *data, size_t n)
{
    if (n > buf_room(b))
        n = buf_room(b);
    if (BUF_SIZE - b->tail < n) {
        memmove(b->d, b->d + b->head, b->tail - b->head);
        b->tail -= b->head;
        b->head = 0;
    }
    memcpy(b->d + b->tail, data, n);
    b->tail += n;
}

static const char *addr_str(const struct sockaddr *sa, char *buf, size_t cap)
{
    char ip[INET6_ADDRSTRLEN] = "?";
    unsigned port = 0;
    if (sa->sa_family == AF_INET) {
        const struct sockaddr_in *s = (const void *)sa;
        inet_ntop(AF_INET, &s->sin_addr, ip, sizeof ip);
        port = ntohs(s->sin_port);
        snprintf(buf, cap, "%s:%u", ip, port);
    } else if (sa->sa_family == AF_INET6) {
        const struct sockaddr_in6 *s = (const void *)sa;
        inet_ntop(AF_INET6, &s->sin6_addr, ip, sizeof ip);
        port = ntohs(s->sin6_port);
        snprintf(buf, cap, "[%s]:%u", ip, port);
    } else {
        snprintf(buf, cap, "?");
    }
    return buf;
}

/* ---- the audit log ---- */

static void iso_time(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* Writes o as one line (and consumes it). */
static void log_event(struct fb_egress *e, json_t *o)
{
    if (e->logfd < 0 || e->log_lines > LOG_MAX_LINES) {
        json_decref(o);
        return;
    }
    char t[40];
    iso_time(t, sizeof t);
    json_t *line = json_object();
    json_object_set_new(line, "time", json_string(t));
    json_object_update(line, o);
    json_decref(o);
    if (++e->log_lines > LOG_MAX_LINES) {
        json_decref(line);
        line = json_pack("{s:s, s:s, s:s}", "time", t, "event", "log_limit", "reason",
                         "too many events: later ones are only counted in the report");
    }
    char *s = json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(line);
    if (!s)
        return;
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
    if (fb_write_all(e->logfd, s, n + 1) < 0) {
        /* a full disk must not stop the sandbox; the report still counts */
    }
    free(s);
}

/* json_string() needs UTF-8; names are already escaped to ASCII, reasons are
 * ours. This keeps a stray byte from dropping a field. */
static json_t *jstr(const char *s)
{
    json_t *j = json_string(s);
    return j ? j : json_string("(not UTF-8)");
}

static void log_dns(struct fb_egress *e, const char *name, const char *type, const char *proto,
                    const char *verdict, const char *reason, const uint32_t *a4)
{
    if (e->logfd < 0)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("dns"));
    json_object_set_new(o, "name", name ? jstr(name) : json_null());
    json_object_set_new(o, "type", type ? json_string(type) : json_null());
    json_object_set_new(o, "transport", json_string(proto));
    json_object_set_new(o, "verdict", json_string(verdict));
    json_object_set_new(o, "reason", jstr(reason));
    if (a4) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, a4, ip, sizeof ip);
        json_object_set_new(o, "answer", json_string(ip));
    }
    log_event(e, o);
}

/* ---- synthetic addresses ---- */

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

static long synth_find(const struct fb_egress *e, const char *name)
{
    if (!e->hcap)
        return -1;
    for (size_t i = hash_name(name) & (e->hcap - 1);; i = (i + 1) & (e->hcap - 1)) {
        uint32_t v = e->hash[i];
        if (!v)
            return -1;
        if (!strcmp(e->names[v - 1], name))
            return (long)v - 1;
    }
}

static void synth_rehash(struct fb_egress *e, size_t cap)
{
    free(e->hash);
    e->hash = fb_xcalloc(cap, sizeof *e->hash);
    e->hcap = cap;
    for (size_t k = 0; k < e->nnames; k++) {
        size_t i = hash_name(e->names[k]) & (cap - 1);
        while (e->hash[i])
            i = (i + 1) & (cap - 1);
        e->hash[i] = (uint32_t)k + 1;
    }
}

/* The address for name (network order), allocating one; false when full. */
static bool synth_get(struct fb_egress *e, const char *name, uint32_t *a4)
{
    long k = synth_find(e, name);
    if (k < 0) {
        if (e->nnames >= SYNTH_MAX)
            return false;
        if (e->nnames == e->capnames) {
            e->capnames = e->capnames ? e->capnames * 2 : 16;
            e->names = fb_xrealloc(e->names, e->capnames * sizeof *e->names);
        }
        k = (long)e->nnames;
        e->names[e->nnames++] = fb_xstrdup(name);
        if (e->nnames * 2 > e->hcap)
            synth_rehash(e, e->hcap ? e->hcap * 2 : 64);
        else {
            size_t i = hash_name(name) & (e->hcap - 1);
            while (e->hash[i])
                i = (i + 1) & (e->hcap - 1);
            e->hash[i] = (uint32_t)k + 1;
        }
    }
    *a4 = htonl(FB_NET_SYNTH_BASE + SYNTH_FIRST + (uint32_t)k);
    return true;
}

/* The name a synthetic address (host order) was handed out for, or NULL. */
static const char *synth_name(const struct fb_egress *e, uint32_t a)
{
    if (a < FB_NET_SYNTH_BASE + SYNTH_FIRST)
        return NULL;
    uint32_t k = a - FB_NET_SYNTH_BASE - SYNTH_FIRST;
    return k < e->nnames ? e->names[k] : NULL;
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
        log_dns(e, q.name[0] ? q.name : NULL, NULL, transport, "deny", why, NULL);
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
    const struct fb_allow *a = q.name_plain && q.name[0] ? policy_allow_match(e->p, lower, 0) : NULL;
    int rcode;
    const char *verdict = "deny", *reason;
    uint32_t a4, *ans = NULL;
    if (q.qclass != DNS_CLASS_IN) {
        rcode = DNS_RCODE_REFUSED;
        reason = "query class is not IN";
    } else if (!a) {
        rcode = DNS_RCODE_NXDOMAIN;
        reason = "name not in the allowlist";
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
    log_dns(e, name, type, transport, verdict, reason, ans);
    return dns_build_reply(msg, &q, rcode, ans, DNS_TTL, out, cap);
}

static void dns_udp_ready(struct fb_egress *e)
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
            log_dns(e, NULL, NULL, "udp", "deny", "malformed query: larger than 4096 bytes", NULL);
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

/* ---- connections ---- */

static void side_update(struct fb_egress *e, struct side *s, uint32_t want)
{
    if (s->fd < 0)
        return;
    if (s->hup && !(want & EPOLLIN))
        want = 0; /* a hung-up socket reports EPOLLHUP forever */
    if (!want) {
        if (s->reg)
            epoll_ctl(e->ep, EPOLL_CTL_DEL, s->fd, NULL);
        s->reg = false;
        s->ev = 0;
        return;
    }
    if (s->reg && s->ev == want)
        return;
    struct epoll_event ev = {.events = want, .data.ptr = &s->h};
    if (epoll_ctl(e->ep, s->reg ? EPOLL_CTL_MOD : EPOLL_CTL_ADD, s->fd, &ev) == 0) {
        s->reg = true;
        s->ev = want;
    }
}

static void conn_update(struct fb_egress *e, struct conn *c)
{
    uint32_t win = 0, wout = 0;
    bool spliced = c->pu[0] >= 0;
    bool can_read_in = !c->in_eof && (spliced ? c->pu_fill < c->pipe_cap : buf_room(&c->up) > 0);
    switch (c->ph) {
    case PH_DNS:
        if (!c->in_eof && buf_len(&c->down) < BUF_SIZE / 2 && buf_room(&c->up) > 0)
            win |= EPOLLIN;
        break;
    case PH_PROXYREQ:
    case PH_SNIFF:
    case PH_RESOLVE:
        if (can_read_in)
            win |= EPOLLIN;
        break;
    case PH_CONNECT:
        if (can_read_in)
            win |= EPOLLIN;
        wout = EPOLLOUT;
        break;
    case PH_FIRST:
        if (can_read_in)
            win |= EPOLLIN;
        /* Server speaks first (opaque ports only): the client has sent nothing. */
        if (!c->strict && buf_len(&c->up) == 0)
            wout |= EPOLLIN;
        break;
    case PH_RELAY:
        if (can_read_in)
            win |= EPOLLIN;
        if (!c->out_eof && (spliced ? c->pd_fill < c->pipe_cap : buf_room(&c->down) > 0))
            wout |= EPOLLIN;
        if (buf_len(&c->up) || c->pu_fill)
            wout |= EPOLLOUT;
        break;
    }
    if (buf_len(&c->down) || c->pd_fill)
        win |= EPOLLOUT;
    side_update(e, &c->in, win);
    side_update(e, &c->out, wout);
}

static void conn_close_fds(struct fb_egress *e, struct conn *c, bool reset)
{
    struct side *s[2] = {&c->in, &c->out};
    for (int i = 0; i < 2; i++) {
        if (s[i]->fd < 0)
            continue;
        if (s[i]->reg)
            epoll_ctl(e->ep, EPOLL_CTL_DEL, s[i]->fd, NULL);
        if (reset) {
            /* An abortive close: the peer sees a reset, not a clean end of
             * stream, so a cut-off transfer never looks complete. */
            struct linger l = {1, 0};
            setsockopt(s[i]->fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        }
        close(s[i]->fd);
        s[i]->fd = -1;
        s[i]->reg = false;
    }
    int *p[4] = {&c->pu[0], &c->pu[1], &c->pd[0], &c->pd[1]};
    for (int i = 0; i < 4; i++)
        if (*p[i] >= 0) {
            close(*p[i]);
            *p[i] = -1;
        }
}

/* End a connection: log it, close it, free it at the end of the dispatch.
 * verdict: "allow" (it was relayed), "deny" (policy), "error" (allowed but
 * it failed). */
static void conn_end(struct fb_egress *e, struct conn *c, const char *verdict, bool reset,
                     const char *fmt, ...) __attribute__((format(printf, 5, 6)));
static void conn_end(struct fb_egress *e, struct conn *c, const char *verdict, bool reset,
                     const char *fmt, ...)
{
    if (c->dead)
        return;
    c->dead = true;
    conn_close_fds(e, c, reset);
    if (c->ph == PH_DNS) {
        e->ndns_tcp--;
    } else {
        if (!strcmp(verdict, "deny"))
            e->sum.conns_denied++;
        else if (!strcmp(verdict, "allow"))
            e->sum.conns_allowed++;
        if (e->logfd >= 0) {
            char reason[512];
            va_list ap;
            va_start(ap, fmt);
            vsnprintf(reason, sizeof reason, fmt, ap);
            va_end(ap);
            json_t *o = json_object();
            json_object_set_new(o, "event", json_string("connect"));
            json_object_set_new(o, "name", c->name ? jstr(c->name) : json_null());
            json_object_set_new(o, "port", c->port ? json_integer(c->port) : json_null());
            json_object_set_new(o, "via", json_string(c->proxy ? "proxy" : "transparent"));
            json_object_set_new(o, "dest", jstr(c->via));
            json_object_set_new(o, "verdict", json_string(verdict));
            json_object_set_new(o, "reason", jstr(reason));
            json_object_set_new(o, "protocol", c->proto ? json_string(c->proto) : json_null());
            json_object_set_new(o, "upstream", c->dst[0] ? json_string(c->dst) : json_null());
            json_object_set_new(o, "bytes_out", json_integer(c->bytes_out));
            json_object_set_new(o, "bytes_in", json_integer(c->bytes_in));
            json_object_set_new(o, "duration_ms",
                                json_integer((json_int_t)((fb_now_ns() - c->start_ns) / 1000000ull)));
            log_event(e, o);
        }
    }
    if (c->counted)
        e->nrelay--;
    /* Move to the dead list. */
    if (c->prev)
        c->prev->next = c->next;
    else
        e->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    c->next = e->dead;
    c->prev = NULL;
    e->dead = c;
}

static void conn_free(struct conn *c)
{
    free(c->up.d);
    free(c->down.d);
    free(c->name);
    free(c);
}

static struct conn *conn_new(struct fb_egress *e, int fd, enum phase ph)
{
    struct conn *c = fb_xcalloc(1, sizeof *c);
    c->id = ++e->next_id;
    c->ph = ph;
    c->in = (struct side){{H_SIDE}, c, fd, 0, false, false};
    c->out = (struct side){{H_SIDE}, c, -1, 0, false, false};
    c->pu[0] = c->pu[1] = c->pd[0] = c->pd[1] = -1;
    c->up.d = fb_xmalloc(BUF_SIZE);
    c->down.d = fb_xmalloc(BUF_SIZE);
    c->start_ns = fb_now_ns();
    c->last_ns = c->start_ns;
    c->next = e->conns;
    if (e->conns)
        e->conns->prev = c;
    e->conns = c;
    return c;
}

/* Send a short reply (a proxy status line) and end the connection. */
static void reply_and_end(struct fb_egress *e, struct conn *c, const char *status,
                          const char *verdict, const char *reason)
{
    char msg[768];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\nfluebox: %s\n",
                     status, strlen(reason) + 10, reason);
    if (n > 0 && c->in.fd >= 0)
        send(c->in.fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1,
             MSG_DONTWAIT | MSG_NOSIGNAL);
    conn_end(e, c, verdict, false, "%s", reason);
}

static void start_relay(struct fb_egress *e, struct conn *c);
static void try_connect(struct fb_egress *e, struct conn *c);

/* The way upstream failed or was refused before relaying: a proxy client
 * gets a status line (403, 502 or 504), a transparent one a reset. */
static void upstream_fail(struct fb_egress *e, struct conn *c, const char *status,
                          const char *verdict, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void upstream_fail(struct fb_egress *e, struct conn *c, const char *status,
                          const char *verdict, const char *fmt, ...)
{
    char why[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (c->proxy && c->ph != PH_FIRST && c->ph != PH_RELAY)
        reply_and_end(e, c, status, verdict, why);
    else
        conn_end(e, c, verdict, true, "%s", why);
}
static bool splice_in(struct fb_egress *e, struct conn *c, bool from_in);

/* Is this an address the relay must not connect to for a name resolved on
 * the host? (Explicit --egress-resolve mappings are trusted.) */
static const char *blocked_addr(const struct fb_egress *e, const struct sockaddr *sa)
{
    uint32_t a;
    if (sa->sa_family == AF_INET6) {
        const struct in6_addr *s = &((const struct sockaddr_in6 *)sa)->sin6_addr;
        if (IN6_IS_ADDR_UNSPECIFIED(s) || IN6_IS_ADDR_LOOPBACK(s))
            return "a loopback address";
        if (IN6_IS_ADDR_LINKLOCAL(s) || IN6_IS_ADDR_SITELOCAL(s))
            return "a link-local address";
        if (IN6_IS_ADDR_MULTICAST(s))
            return "a multicast address";
        if (IN6_IS_ADDR_V4MAPPED(s) || IN6_IS_ADDR_V4COMPAT(s))
            memcpy(&a, &s->s6_addr[12], 4);
        else
            goto own;
    } else {
        a = ((const struct sockaddr_in *)sa)->sin_addr.s_addr;
    }
    a = ntohl(a);
    if ((a >> 24) == 0 || (a >> 24) == 127)
        return "a loopback address";
    if ((a >> 16) == 0xa9fe)
        return "a link-local address";
    if ((a >> 28) >= 0xe)
        return "a multicast or reserved address";
    if ((a >> FB_NET_SYNTH_BITS) == (FB_NET_SYNTH_BASE >> FB_NET_SYNTH_BITS))
        return "an address in the synthetic range";
own:
    for (size_t i = 0; i < e->nhost_addrs; i++) {
        const struct sockaddr_storage *h = &e->host_addrs[i];
        if (h->ss_family != sa->sa_family)
            continue;
        if (sa->sa_family == AF_INET &&
            ((const struct sockaddr_in *)h)->sin_addr.s_addr ==
                ((const struct sockaddr_in *)sa)->sin_addr.s_addr)
            return "an address of this host";
        if (sa->sa_family == AF_INET6 &&
            !memcmp(&((const struct sockaddr_in6 *)h)->sin6_addr,
                    &((const struct sockaddr_in6 *)sa)->sin6_addr, sizeof(struct in6_addr)))
            return "an address of this host";
    }
    return NULL;
}

static void set_port(struct sockaddr_storage *ss, uint16_t port)
{
    if (ss->ss_family == AF_INET)
        ((struct sockaddr_in *)ss)->sin_port = htons(port);
    else
        ((struct sockaddr_in6 *)ss)->sin6_port = htons(port);
}

/* Parse an --egress-resolve address into c->addr. */
static bool resolve_override(struct fb_egress *e, struct conn *c)
{
    const struct fb_resolve *best = NULL;
    for (size_t i = 0; i < e->p->nresolve; i++) {
        const struct fb_resolve *r = &e->p->resolve[i];
        if (strcmp(r->name, c->name))
            continue;
        if (r->port && r->port != c->port)
            continue;
        if (!best || (r->port && !best->port))
            best = r;
    }
    if (!best)
        return false;
    struct sockaddr_storage ss;
    memset(&ss, 0, sizeof ss);
    struct sockaddr_in *s4 = (struct sockaddr_in *)&ss;
    struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&ss;
    if (inet_pton(AF_INET, best->addr, &s4->sin_addr) == 1) {
        s4->sin_family = AF_INET;
        c->alen[0] = sizeof *s4;
    } else if (inet_pton(AF_INET6, best->addr, &s6->sin6_addr) == 1) {
        s6->sin6_family = AF_INET6;
        c->alen[0] = sizeof *s6;
    } else {
        return false; /* policy.c validated it; cannot happen */
    }
    set_port(&ss, best->to_port ? best->to_port : c->port);
    c->addr[0] = ss;
    c->naddr = 1;
    c->iaddr = 0;
    return true;
}

static bool looks_like_ip(const char *name)
{
    const char *last = strrchr(name, '.');
    last = last ? last + 1 : name;
    if (!*last)
        return false;
    for (const char *s = last; *s; s++)
        if (*s < '0' || *s > '9')
            return false;
    return true;
}

static void start_resolve(struct fb_egress *e, struct conn *c)
{
    c->ph = PH_RESOLVE;
    if (resolve_override(e, c)) {
        try_connect(e, c);
        return;
    }
    if (looks_like_ip(c->name)) {
        upstream_fail(e, c, "403 Forbidden", "deny", "%s looks like an IP address, not a name",
                      c->name);
        return;
    }
    if (!e->res) {
        struct fb_err err = {0};
        e->res = hostres_new(&err);
        if (!e->res) {
            upstream_fail(e, c, "502 Bad Gateway", "error", "cannot start the resolver: %s",
                          err.msg);
            return;
        }
        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &e->res_h};
        epoll_ctl(e->ep, EPOLL_CTL_ADD, hostres_fd(e->res), &ev);
    }
    hostres_submit(e->res, c->id, c->name);
    conn_update(e, c);
}

static void resolver_ready(struct fb_egress *e)
{
    struct hostres_result r;
    while (hostres_take(e->res, &r)) {
        struct conn *c = e->conns;
        while (c && c->id != r.id)
            c = c->next;
        if (!c || c->ph != PH_RESOLVE)
            continue;
        if (r.gai_err) {
            upstream_fail(e, c, "502 Bad Gateway", "error", "cannot resolve %s on the host: %s",
                          c->name,
                          r.gai_err == EAI_SYSTEM ? strerror(r.sys_err) : gai_strerror(r.gai_err));
            continue;
        }
        c->naddr = 0;
        const char *why = NULL;
        char shown[INET6_ADDRSTRLEN + 8] = "";
        for (size_t i = 0; i < r.naddr; i++) {
            const char *b = blocked_addr(e, (struct sockaddr *)&r.addr[i]);
            if (b) {
                why = b;
                addr_str((struct sockaddr *)&r.addr[i], shown, sizeof shown);
                continue;
            }
            c->addr[c->naddr] = r.addr[i];
            c->alen[c->naddr] = r.addrlen[i];
            set_port(&c->addr[c->naddr], c->port);
            c->naddr++;
        }
        if (!c->naddr) {
            if (why)
                upstream_fail(e, c, "403 Forbidden", "deny",
                              "%s resolves to %s (%s) on the host; use "
                              "--egress-resolve to allow that explicitly",
                              c->name, why, shown);
            else
                upstream_fail(e, c, "502 Bad Gateway", "error", "%s has no address on the host",
                              c->name);
            continue;
        }
        c->iaddr = 0;
        try_connect(e, c);
    }
}

static void connected(struct fb_egress *e, struct conn *c)
{
    int one = 1;
    setsockopt(c->out.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    setsockopt(c->in.fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    addr_str((struct sockaddr *)&c->addr[c->iaddr], c->dst, sizeof c->dst);
    if (c->proxy) {
        static const char ok[] = "HTTP/1.1 200 Connection established\r\n\r\n";
        buf_put(&c->down, ok, sizeof ok - 1);
    }
    if (c->checked)
        start_relay(e, c);
    else {
        c->ph = PH_FIRST;
        conn_update(e, c);
    }
}

/* Try c->addr[c->iaddr...] until a connect starts. */
static void try_connect(struct fb_egress *e, struct conn *c)
{
    while (c->iaddr < c->naddr) {
        struct sockaddr *sa = (struct sockaddr *)&c->addr[c->iaddr];
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
        if (fd < 0) {
            c->connect_errno = errno;
            c->iaddr++;
            continue;
        }
        c->out.fd = fd;
        c->out.reg = false;
        c->out.hup = false;
        if (connect(fd, sa, c->alen[c->iaddr]) == 0) {
            connected(e, c);
            return;
        }
        if (errno == EINPROGRESS) {
            c->try_ns = fb_now_ns();
            c->ph = PH_CONNECT;
            conn_update(e, c);
            return;
        }
        c->connect_errno = errno;
        close(fd);
        c->out.fd = -1;
        c->iaddr++;
    }
    char a[INET6_ADDRSTRLEN + 8] = "?";
    if (c->naddr)
        addr_str((struct sockaddr *)&c->addr[c->naddr - 1], a, sizeof a);
    upstream_fail(e, c, "502 Bad Gateway", "error", "cannot connect to %s:%u (%s): %s", c->name,
                  c->port, a, strerror(c->connect_errno));
}

/* Give up on the address being connected to and try the next one. */
static void connect_next(struct fb_egress *e, struct conn *c, int er)
{
    c->connect_errno = er;
    if (c->out.reg)
        epoll_ctl(e->ep, EPOLL_CTL_DEL, c->out.fd, NULL);
    close(c->out.fd);
    c->out.fd = -1;
    c->out.reg = false;
    c->iaddr++;
    try_connect(e, c);
}

static void connect_ready(struct fb_egress *e, struct conn *c)
{
    int er = 0;
    socklen_t l = sizeof er;
    if (getsockopt(c->out.fd, SOL_SOCKET, SO_ERROR, &er, &l) < 0)
        er = errno;
    if (er == 0)
        connected(e, c);
    else
        connect_next(e, c, er);
}

/* Check the client's first bytes against c->name. Returns false if the
 * connection was ended. */
static bool check_first_bytes(struct fb_egress *e, struct conn *c)
{
    if (c->checked)
        return true;
    struct sniff s;
    sniff_classify(c->up.d + c->up.head, buf_len(&c->up), &s);
    switch (s.kind) {
    case SNIFF_MORE:
        if (buf_room(&c->up) == 0 && c->up.head == 0) {
            conn_end(e, c, "deny", true, "first request larger than %d KiB", BUF_SIZE / 1024);
            return false;
        }
        if (c->in_eof && c->strict) {
            conn_end(e, c, "deny", false, "client closed before a complete request");
            return false;
        }
        buf_compact(&c->up);
        return true;
    case SNIFF_TLS:
        c->proto = s.ech ? "tls+ech" : "tls";
        if (!s.name[0]) {
            conn_end(e, c, "deny", true, "TLS ClientHello without a server name (SNI)");
            return false;
        }
        if (strcmp(s.name, c->name)) {
            conn_end(e, c, "deny", true, "TLS server name %s does not match %s", s.name, c->name);
            return false;
        }
        break;
    case SNIFF_HTTP:
        c->proto = "http";
        if (!strcmp(s.method, "CONNECT")) {
            conn_end(e, c, "deny", true, "CONNECT request sent to %s itself", c->name);
            return false;
        }
        if (strcmp(s.name, c->name)) {
            conn_end(e, c, "deny", true, "HTTP Host %s does not match %s", s.name, c->name);
            return false;
        }
        break;
    case SNIFF_BAD:
        conn_end(e, c, "deny", true, "%s", s.why);
        return false;
    case SNIFF_OTHER:
        if (c->strict) {
            conn_end(e, c, "deny", true, "neither TLS nor HTTP/1.x on port %u", c->port);
            return false;
        }
        c->proto = "opaque";
        break;
    }
    c->checked = true;
    return true;
}

/* Read from the sandbox's end into up. Returns false if the connection ended. */
static bool read_in(struct fb_egress *e, struct conn *c)
{
    if (c->pu[0] >= 0)
        return splice_in(e, c, true);
    if (c->in_eof || buf_room(&c->up) == 0)
        return true;
    buf_compact(&c->up);
    ssize_t n = recv(c->in.fd, c->up.d + c->up.tail, BUF_SIZE - c->up.tail, MSG_DONTWAIT);
    if (n > 0) {
        c->up.tail += (size_t)n;
        c->last_ns = fb_now_ns();
    } else if (n == 0) {
        c->in_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
        conn_end(e, c, c->ph == PH_RELAY ? "allow" : "error", true, "sandbox side: %s",
                 strerror(errno));
        return false;
    }
    return true;
}

static bool flush(struct fb_egress *e, struct conn *c, struct side *s, struct buf *b,
                  int64_t *count)
{
    while (buf_len(b)) {
        ssize_t n = send(s->fd, b->d + b->head, buf_len(b), MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
            b->head += (size_t)n;
            if (count) {
                *count += n;
                if (s == &c->out)
                    e->sum.bytes_out += n;
            }
            c->last_ns = fb_now_ns();
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        conn_end(e, c, c->ph == PH_RELAY ? "allow" : "error", true, "%s side: %s",
                 s == &c->in ? "sandbox" : "upstream", n < 0 ? strerror(errno) : "closed");
        return false;
    }
    buf_compact(b);
    return true;
}

/* splice() into a socket cannot say MSG_NOSIGNAL: a peer that is gone
 * raises SIGPIPE, which the event loop keeps blocked (checked in
 * egress_start); take it off the pending set so it is never delivered. */
static void drop_sigpipe(void)
{
    sigset_t pipe_set, pending;
    sigemptyset(&pipe_set);
    sigaddset(&pipe_set, SIGPIPE);
    struct timespec zero = {0, 0};
    while (sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE) &&
           sigtimedwait(&pipe_set, NULL, &zero) == SIGPIPE)
        ;
}

/* socket -> pipe. Returns false if the connection ended. */
static bool splice_in(struct fb_egress *e, struct conn *c, bool from_in)
{
    struct side *s = from_in ? &c->in : &c->out;
    bool *eof = from_in ? &c->in_eof : &c->out_eof;
    size_t *fill = from_in ? &c->pu_fill : &c->pd_fill;
    int pw = from_in ? c->pu[1] : c->pd[1];
    while (!*eof && *fill < c->pipe_cap) {
        ssize_t n = splice(s->fd, NULL, pw, NULL, c->pipe_cap - *fill,
                           SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            *fill += (size_t)n;
            c->last_ns = fb_now_ns();
            if (!from_in) {
                c->bytes_in += n;
                e->sum.bytes_in += n;
            }
            continue;
        }
        if (n == 0) {
            *eof = true;
            break;
        }
        if (errno == EAGAIN || errno == EINTR)
            break;
        conn_end(e, c, "allow", true, "%s side: %s", from_in ? "sandbox" : "upstream",
                 strerror(errno));
        return false;
    }
    return true;
}

/* pipe -> socket, after what the buffer still holds. */
static bool splice_out(struct fb_egress *e, struct conn *c, bool to_out)
{
    struct side *s = to_out ? &c->out : &c->in;
    size_t *fill = to_out ? &c->pu_fill : &c->pd_fill;
    int pr = to_out ? c->pu[0] : c->pd[0];
    while (*fill) {
        ssize_t n = splice(pr, NULL, s->fd, NULL, *fill, SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
        if (n > 0) {
            *fill -= (size_t)n;
            c->last_ns = fb_now_ns();
            if (to_out) {
                c->bytes_out += n;
                e->sum.bytes_out += n;
            }
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EINTR))
            break;
        int er = n < 0 ? errno : EPIPE;
        if (er == EPIPE)
            drop_sigpipe();
        conn_end(e, c, "allow", true, "%s side: %s", to_out ? "upstream" : "sandbox", strerror(er));
        return false;
    }
    return true;
}

static void relay_progress(struct fb_egress *e, struct conn *c)
{
    if (!flush(e, c, &c->out, &c->up, &c->bytes_out) || !flush(e, c, &c->in, &c->down, NULL))
        return;
    if (c->pu[0] >= 0) {
        if ((!buf_len(&c->up) && !splice_out(e, c, true)) ||
            (!buf_len(&c->down) && !splice_out(e, c, false)))
            return;
    }
    if (c->in_eof && !buf_len(&c->up) && !c->pu_fill && !c->up_shut) {
        shutdown(c->out.fd, SHUT_WR);
        c->up_shut = true;
    }
    if (c->out_eof && !buf_len(&c->down) && !c->pd_fill && !c->down_shut) {
        shutdown(c->in.fd, SHUT_WR);
        c->down_shut = true;
    }
    if (c->up_shut && c->down_shut) {
        conn_end(e, c, "allow", false, "closed");
        return;
    }
    conn_update(e, c);
}

static void start_relay(struct fb_egress *e, struct conn *c)
{
    if (e->splice_ok && pipe2(c->pu, O_NONBLOCK | O_CLOEXEC) == 0) {
        if (pipe2(c->pd, O_NONBLOCK | O_CLOEXEC) == 0) {
            /* Larger pipes move more per system call; the kernel may refuse
             * (per-user pipe limits), then the default size it is. */
            fcntl(c->pu[1], F_SETPIPE_SZ, PIPE_SIZE);
            fcntl(c->pd[1], F_SETPIPE_SZ, PIPE_SIZE);
            int a = fcntl(c->pu[1], F_GETPIPE_SZ), b = fcntl(c->pd[1], F_GETPIPE_SZ);
            c->pipe_cap = (size_t)(a < b ? a : b);
        } else {
            close(c->pu[0]);
            close(c->pu[1]);
            c->pu[0] = c->pu[1] = -1;
        }
    }
    c->ph = PH_RELAY;
    c->last_ns = fb_now_ns();
    relay_progress(e, c);
}

static bool read_out(struct fb_egress *e, struct conn *c)
{
    if (c->pd[0] >= 0)
        return splice_in(e, c, false);
    if (c->out_eof || buf_room(&c->down) == 0)
        return true;
    buf_compact(&c->down);
    ssize_t n = recv(c->out.fd, c->down.d + c->down.tail, BUF_SIZE - c->down.tail, MSG_DONTWAIT);
    if (n > 0) {
        c->down.tail += (size_t)n;
        c->bytes_in += n;
        e->sum.bytes_in += n;
        c->last_ns = fb_now_ns();
    } else if (n == 0) {
        c->out_eof = true;
    } else if (errno != EAGAIN && errno != EINTR) {
        conn_end(e, c, "allow", true, "upstream side: %s", strerror(errno));
        return false;
    }
    return true;
}

/* The CONNECT request of a proxy client. */
static void proxy_request(struct fb_egress *e, struct conn *c)
{
    struct sniff s;
    uint16_t port;
    sniff_connect(c->up.d + c->up.head, buf_len(&c->up), &s, &port);
    if (s.kind == SNIFF_MORE) {
        if (buf_room(&c->up) == 0)
            reply_and_end(e, c, "431 Request Header Fields Too Large", "deny", "request too large");
        else if (c->in_eof)
            conn_end(e, c, "deny", false, "client closed before a complete CONNECT request");
        return;
    }
    if (s.kind != SNIFF_HTTP) {
        bool method = s.method[0] && strcmp(s.method, "CONNECT");
        char why[200];
        snprintf(why, sizeof why, "%s%s%s", s.why, method ? "; got " : "", method ? s.method : "");
        reply_and_end(e, c, method ? "405 Method Not Allowed" : "400 Bad Request", "deny", why);
        return;
    }
    c->name = fb_xstrdup(s.name);
    c->port = port;
    snprintf(c->via, sizeof c->via, "proxy");
    c->up.head += s.head_len;
    buf_compact(&c->up);
    if (looks_like_ip(c->name) || !policy_allow_match(e->p, c->name, port)) {
        char why[400];
        snprintf(why, sizeof why, "%s:%u is not in the allowlist", c->name, port);
        reply_and_end(e, c, "403 Forbidden", "deny", why);
        return;
    }
    c->strict = port == 80 || port == 443;
    /* Bytes the client sent right behind the request are checked like any
     * first bytes. */
    if (buf_len(&c->up) && !check_first_bytes(e, c))
        return;
    start_resolve(e, c);
}

static void side_event(struct fb_egress *e, struct side *s, uint32_t rev)
{
    struct conn *c = s->c;
    if (c->dead)
        return;
    bool is_in = s == &c->in;
    if (rev & EPOLLHUP)
        s->hup = true;
    if (c->ph == PH_CONNECT && !is_in) {
        connect_ready(e, c);
        return;
    }
    if (c->ph == PH_DNS) {
        /* handled by dns_tcp_event */
        return;
    }
    if (is_in) {
        if (rev & (EPOLLIN | EPOLLHUP | EPOLLERR)) {
            if (!read_in(e, c))
                return;
            switch (c->ph) {
            case PH_PROXYREQ:
                proxy_request(e, c);
                return;
            case PH_SNIFF:
                if (!check_first_bytes(e, c))
                    return;
                if (c->checked) {
                    start_resolve(e, c);
                    return;
                }
                break;
            case PH_RESOLVE:
            case PH_CONNECT:
                if (buf_len(&c->up) && !check_first_bytes(e, c))
                    return;
                break;
            case PH_FIRST:
                if (buf_len(&c->up) && !check_first_bytes(e, c))
                    return;
                if (c->checked) {
                    start_relay(e, c);
                    return;
                }
                if (c->in_eof && !c->strict) {
                    /* Closed its sending side without a word: opaque. */
                    c->checked = true;
                    c->proto = "opaque";
                    start_relay(e, c);
                    return;
                }
                break;
            default:
                break;
            }
            if (c->in_eof && c->ph != PH_RELAY && c->strict && !c->checked) {
                conn_end(e, c, "deny", false, "client closed before a complete request");
                return;
            }
        }
        if (c->ph == PH_RELAY) {
            relay_progress(e, c);
            return;
        }
        if ((rev & EPOLLOUT) && !flush(e, c, &c->in, &c->down, NULL))
            return;
        conn_update(e, c);
        return;
    }
    /* upstream side */
    if (c->ph == PH_FIRST) {
        /* The server spoke first: an opaque protocol (only polled for on
         * non-80/443 ports, and only while the client has sent nothing). */
        c->checked = true;
        c->proto = "opaque";
        c->ph = PH_RELAY;
    }
    if (c->ph != PH_RELAY)
        return;
    if ((rev & (EPOLLIN | EPOLLHUP | EPOLLERR)) && !read_out(e, c))
        return;
    relay_progress(e, c);
}

static void dns_tcp_event(struct fb_egress *e, struct conn *c, uint32_t rev)
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
            log_dns(e, NULL, NULL, "tcp", "deny", "malformed query: bad length prefix", NULL);
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
    if (!flush(e, c, &c->in, &c->down, NULL))
        return;
    if (c->in_eof && !buf_len(&c->down)) {
        conn_end(e, c, "allow", false, "closed");
        return;
    }
    conn_update(e, c);
}

/* ---- accepting ---- */

static void deny_at_once(struct fb_egress *e, int fd, const char *via, uint16_t port,
                         const char *name, const char *reason)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
    e->sum.conns++;
    e->sum.conns_denied++;
    if (e->logfd < 0)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("connect"));
    json_object_set_new(o, "name", name ? jstr(name) : json_null());
    json_object_set_new(o, "port", port ? json_integer(port) : json_null());
    json_object_set_new(o, "via", json_string(strcmp(via, "proxy") ? "transparent" : "proxy"));
    json_object_set_new(o, "dest", jstr(via));
    json_object_set_new(o, "verdict", json_string("deny"));
    json_object_set_new(o, "reason", jstr(reason));
    json_object_set_new(o, "bytes_out", json_integer(0));
    json_object_set_new(o, "bytes_in", json_integer(0));
    json_object_set_new(o, "duration_ms", json_integer(0));
    log_event(e, o);
}

static void accept_ready(struct fb_egress *e, struct listener *l)
{
    for (int i = 0; i < BATCH; i++) {
        int fd = accept4(l->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return;
        if (l->h.kind == H_DNS_TCP) {
            if (e->ndns_tcp >= DNS_TCP_MAX) {
                close(fd);
                continue;
            }
            e->ndns_tcp++;
            struct conn *c = conn_new(e, fd, PH_DNS);
            conn_update(e, c);
            continue;
        }
        struct sockaddr_in dst;
        socklen_t dl = sizeof dst;
        char via[64] = "proxy";
        if (l->h.kind == H_LISTEN) {
            if (getsockname(fd, (struct sockaddr *)&dst, &dl) < 0 || dst.sin_family != AF_INET) {
                deny_at_once(e, fd, "?", l->port, NULL, "cannot tell the destination");
                continue;
            }
            addr_str((struct sockaddr *)&dst, via, sizeof via);
        }
        if (e->nrelay >= e->p->max_conns) {
            char why[96];
            snprintf(why, sizeof why, "connection limit reached (%d)", e->p->max_conns);
            deny_at_once(e, fd, via, l->port, NULL, why);
            continue;
        }
        const char *name = NULL;
        if (l->h.kind == H_LISTEN) {
            name = synth_name(e, ntohl(dst.sin_addr.s_addr));
            if (!name) {
                deny_at_once(e, fd, via, l->port, NULL,
                             "not an address the sandbox's resolver handed out (no direct "
                             "connections to IP addresses)");
                continue;
            }
            if (!policy_allow_match(e->p, name, l->port)) {
                char why[400];
                snprintf(why, sizeof why, "port %u is not allowed for %s", l->port, name);
                deny_at_once(e, fd, via, l->port, name, why);
                continue;
            }
        }
        e->sum.conns++;
        struct conn *c = conn_new(e, fd, l->h.kind == H_PROXY ? PH_PROXYREQ : PH_SNIFF);
        c->counted = true;
        e->nrelay++;
        snprintf(c->via, sizeof c->via, "%s", via);
        if (l->h.kind == H_PROXY) {
            c->proxy = true;
            conn_update(e, c);
            continue;
        }
        c->name = fb_xstrdup(name);
        c->port = l->port;
        c->strict = l->port == 80 || l->port == 443;
        if (c->strict) {
            conn_update(e, c);
        } else {
            /* Any TCP protocol may run here: connect at once, so a server
             * that speaks first is heard; first client bytes are still
             * checked if they are TLS or HTTP. */
            start_resolve(e, c);
        }
    }
}

/* ---- timers ---- */

static void timer_update(struct fb_egress *e)
{
    bool want = e->conns != NULL;
    if (want == e->timer_armed)
        return;
    int64_t ms = 1000;
    if (e->p->conn_idle_ms > 0 && e->p->conn_idle_ms / 4 < ms)
        ms = e->p->conn_idle_ms / 4 < 50 ? 50 : e->p->conn_idle_ms / 4;
    struct itimerspec its = {0};
    if (want) {
        its.it_interval.tv_sec = ms / 1000;
        its.it_interval.tv_nsec = (ms % 1000) * 1000000L;
        its.it_value = its.it_interval;
    }
    timerfd_settime(e->timer, 0, &its, NULL);
    e->timer_armed = want;
}

static void timer_tick(struct fb_egress *e)
{
    uint64_t v;
    if (read(e->timer, &v, sizeof v) < 0) {
        /* EAGAIN: a spurious wake-up */
    }
    uint64_t now = fb_now_ns();
    for (struct conn *c = e->conns, *n; c; c = n) {
        n = c->next;
        uint64_t idle_ms = (now - c->last_ns) / 1000000ull;
        uint64_t age_ms = (now - c->start_ns) / 1000000ull;
        if (c->ph == PH_DNS) {
            if (idle_ms > DNS_TCP_IDLE_MS)
                conn_end(e, c, "allow", false, "idle");
        } else if (c->ph == PH_FIRST && !c->strict) {
            /* Connected on an opaque port and nobody has spoken yet. */
            if (e->p->conn_idle_ms > 0 && (int64_t)idle_ms > e->p->conn_idle_ms)
                conn_end(e, c, "allow", false, "idle for %lld ms", (long long)e->p->conn_idle_ms);
        } else if (c->ph == PH_CONNECT && c->iaddr + 1 < c->naddr &&
                   (now - c->try_ns) / 1000000ull > CONNECT_TRY_MS) {
            connect_next(e, c, ETIMEDOUT);
        } else if (c->ph != PH_RELAY) {
            int64_t limit = HANDSHAKE_MS;
            if (e->p->conn_idle_ms > 0 && e->p->conn_idle_ms < limit)
                limit = e->p->conn_idle_ms;
            if ((int64_t)age_ms > limit)
                upstream_fail(e, c, "504 Gateway Timeout",
                              c->ph == PH_SNIFF || c->ph == PH_PROXYREQ ? "deny" : "error",
                              "%s within %lld ms",
                              c->ph == PH_RESOLVE   ? "no host-side address"
                              : c->ph == PH_CONNECT ? "upstream did not accept the connection"
                                                    : "no complete request",
                              (long long)limit);
        } else if (e->p->conn_idle_ms > 0 && (int64_t)idle_ms > e->p->conn_idle_ms) {
            conn_end(e, c, "allow", false, "idle for %lld ms", (long long)e->p->conn_idle_ms);
        }
    }
}

/* ---- the interface ---- */

int egress_fd(const struct fb_egress *e) { return e ? e->ep : -1; }

void egress_dispatch(struct fb_egress *e)
{
    if (!e)
        return;
    struct epoll_event evs[BATCH];
    int n = epoll_wait(e->ep, evs, BATCH, 0);
    for (int i = 0; i < n; i++) {
        struct handle *h = evs[i].data.ptr;
        switch (h->kind) {
        case H_DNS_UDP:
            dns_udp_ready(e);
            break;
        case H_DNS_TCP:
        case H_PROXY:
        case H_LISTEN:
            accept_ready(e, (struct listener *)h);
            break;
        case H_TIMER:
            timer_tick(e);
            break;
        case H_RESOLVER:
            resolver_ready(e);
            break;
        case H_SIDE: {
            struct side *s = (struct side *)h;
            if (s->c->dead)
                break;
            if (s->c->ph == PH_DNS)
                dns_tcp_event(e, s->c, evs[i].events);
            else
                side_event(e, s, evs[i].events);
            break;
        }
        }
    }
    while (e->dead) {
        struct conn *c = e->dead;
        e->dead = c->next;
        conn_free(c);
    }
    timer_update(e);
}

static int add_listener(struct fb_egress *e, struct listener *l, enum hkind kind, int fd,
                        uint16_t port)
{
    l->h.kind = kind;
    l->fd = fd;
    l->port = port;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->h};
    return epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev);
}

int egress_start(const struct fb_policy *p, const int *fds, size_t nfds,
                 struct fb_egress **out, struct fb_err *err)
{
    *out = NULL;
    struct fb_egress *e = fb_xcalloc(1, sizeof *e);
    e->p = p;
    e->logfd = -1;
    e->timer = -1;
    e->dns_udp.fd = e->dns_tcp.fd = e->proxy.fd = -1;
    e->timer_h.kind = H_TIMER;
    e->res_h.kind = H_RESOLVER;
    size_t used = 0;
    e->ep = epoll_create1(EPOLL_CLOEXEC);
    e->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
    if (e->ep < 0 || e->timer < 0) {
        fb_errno(err, FB_EXIT_SETUP, "egress: event loop");
        goto fail;
    }
    struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &e->timer_h};
    epoll_ctl(e->ep, EPOLL_CTL_ADD, e->timer, &tev);

    /* Each socket says what it is: its type and the address it is bound to. */
    for (; used < nfds; used++) {
        int fd = fds[used], type = 0;
        socklen_t tl = sizeof type;
        struct sockaddr_in sa;
        socklen_t sl = sizeof sa;
        if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
            getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 || sa.sin_family != AF_INET) {
            fb_errf(err, FB_EXIT_SETUP, "egress: unexpected socket from the sandbox");
            goto fail;
        }
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
        uint16_t port = ntohs(sa.sin_port);
        int rc;
        if (type == SOCK_DGRAM && !strcmp(ip, FB_NET_DNS_ADDR) && port == 53 && e->dns_udp.fd < 0)
            rc = add_listener(e, &e->dns_udp, H_DNS_UDP, fd, port);
        else if (type == SOCK_STREAM && !strcmp(ip, FB_NET_DNS_ADDR) && port == 53 &&
                 e->dns_tcp.fd < 0)
            rc = add_listener(e, &e->dns_tcp, H_DNS_TCP, fd, port);
        else if (type == SOCK_STREAM && !strcmp(ip, "127.0.0.1") && port == p->proxy_port &&
                 e->proxy.fd < 0)
            rc = add_listener(e, &e->proxy, H_PROXY, fd, port);
        else if (type == SOCK_STREAM && !strcmp(ip, "0.0.0.0") && e->nlis < FB_NET_MAX_PORTS)
            rc = add_listener(e, &e->lis[e->nlis++], H_LISTEN, fd, port);
        else {
            fb_errf(err, FB_EXIT_SETUP, "egress: unexpected socket %s:%u from the sandbox", ip, port);
            goto fail;
        }
        if (rc < 0) {
            fb_errno(err, FB_EXIT_SETUP, "egress: serving %s:%u", ip, port);
            used++;
            goto fail;
        }
    }
    if (p->net_log) {
        e->logfd = open(p->net_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
        if (e->logfd < 0) {
            fb_errno(err, FB_EXIT_SETUP, "--net-log %s", p->net_log);
            goto fail;
        }
    }
    /* splice() may raise SIGPIPE (see drop_sigpipe): only with it blocked
     * or ignored; otherwise the relay copies through its buffers. */
    sigset_t cur;
    struct sigaction sa_pipe;
    e->splice_ok = (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGPIPE)) ||
                   (sigaction(SIGPIPE, NULL, &sa_pipe) == 0 && sa_pipe.sa_handler == SIG_IGN);
    if (getenv("FLUEBOX_NO_SPLICE"))
        e->splice_ok = false;
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) == 0) {
        size_t n = 0;
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
            n++;
        e->host_addrs = fb_xcalloc(n ? n : 1, sizeof *e->host_addrs);
        for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
            if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET &&
                                 i->ifa_addr->sa_family != AF_INET6))
                continue;
            memcpy(&e->host_addrs[e->nhost_addrs++], i->ifa_addr,
                   i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                     : sizeof(struct sockaddr_in6));
        }
        freeifaddrs(ifa);
    }
    *out = e;
    return 0;
fail:
    /* The ones not yet taken over are closed here; the others by egress_free. */
    for (size_t i = used; i < nfds; i++)
        close(fds[i]);
    egress_free(e);
    return -1;
}

void egress_summary(const struct fb_egress *e, struct fb_net_summary *s)
{
    if (e)
        *s = e->sum;
    else
        memset(s, 0, sizeof *s);
}

void egress_free(struct fb_egress *e)
{
    if (!e)
        return;
    while (e->conns) {
        struct conn *c = e->conns;
        conn_end(e, c, c->ph == PH_RELAY || c->ph == PH_DNS ? "allow" : "error", false,
                 "the sandbox ended");
    }
    while (e->dead) {
        struct conn *c = e->dead;
        e->dead = c->next;
        conn_free(c);
    }
    hostres_free(e->res);
    struct listener *ls[] = {&e->dns_udp, &e->dns_tcp, &e->proxy};
    for (size_t i = 0; i < FB_ARRAY_LEN(ls); i++)
        if (ls[i]->fd >= 0)
            close(ls[i]->fd);
    for (size_t i = 0; i < e->nlis; i++)
        close(e->lis[i].fd);
    for (size_t i = 0; i < e->nnames; i++)
        free(e->names[i]);
    free(e->names);
    free(e->hash);
    free(e->host_addrs);
    if (e->timer >= 0)
        close(e->timer);
    if (e->ep >= 0)
        close(e->ep);
    if (e->logfd >= 0)
        close(e->logfd);
    free(e);
}
