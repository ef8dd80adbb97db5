/* egress_int.h — what the files of the egress side share, and nothing else
 * includes: the connection and the egress state, and the functions one file
 * calls in another.
 *
 *   egress.c           the event loop, accepting, the connection's life
 *                      (first bytes, timers), start and end
 *   egress_resolver.c  the sandbox's resolver: synthetic addresses, DNS over
 *                      UDP and TCP (dns_wire.c parses and builds the messages)
 *   upstream.c         the host side of a connection: resolving and connecting
 *   relay.c            moving bytes both ways once connected
 *   proxy.c            the in-sandbox HTTP CONNECT proxy's request
 *   netlog.c           the audit log (--net-log); it knows nothing of the rest
 *   tls_ca.c           the per-run CA, leaves, the TLS contexts of inspection
 *   http1.c            HTTP/1.x heads: parsing, stand-in swapping (pure)
 *   inspect.c          an inspected connection (a secret's or an HTTP rule's
 *                      host): its own thread, TLS both ways, every request
 *                      read, checked, rewritten; the queue of its log lines
 *   grant.c            the rules that change at run time (secrets, HTTP
 *                      rules, grants and revocations), behind a mutex
 *
 * Design, limits and threat model: docs/network.md. */
#ifndef FB_EGRESS_INT_H
#define FB_EGRESS_INT_H

#include "netlog.h"
#include "egress.h"
#include "hostres.h"
#include "nametab.h"
#include "netns.h"
#include "sniff.h"

#include <netinet/in.h>
#include <pthread.h>
#include <sys/socket.h>

#define BUF_SIZE (64 * 1024)   /* per direction and connection, until relaying */
/* The relay's kernel buffers (socket queues and pipes) for one sandbox,
 * shared out among its connections (relay.c). */
#define RELAY_BUDGET (32u << 20)
#define SHARE_MIN (128u << 10) /* a connection's share, at least */
#define SHARE_MAX (8u << 20)   /* and at most */
#define PIPE_MAX (1u << 20)    /* the unprivileged pipe size limit's default */
#define MEASURE_MS 100         /* a stalled connection's queues, at most this often */
#define SYNTH_FIRST 2          /* 198.18.0.2 is the first address handed out */
#define SYNTH_MAX 65536        /* names with an address, per sandbox */
#define DNS_TTL 300
#define DNS_MSG_MAX 4096       /* largest query accepted (UDP or TCP) */
#define DNS_TCP_MAX 16         /* concurrent DNS-over-TCP connections */
#define DNS_TCP_IDLE_MS 10000
#define HANDSHAKE_MS 30000     /* accept -> relaying */
#define CONNECT_TRY_MS 5000    /* per upstream address, when there are more to try */
#define DENIED_MAX 4096        /* distinct denied names counted exactly */
#define BATCH 64               /* events / datagrams / accepts per dispatch */

#define INSPECT_MAX 64         /* inspected connections (threads) at once */

/* From FB_EGRESS_HANDLE_KIND up: a supervisor that shares its epoll with
 * the relay (egress_share_epoll) tells the relay's events from its own by
 * the first int its event's pointer points to (egress.h). */
enum hkind { H_DNS_UDP = FB_EGRESS_HANDLE_KIND, H_DNS_TCP, H_PROXY, H_LISTEN, H_TIMER, H_RESOLVER,
             H_SIDE, H_QUEUE };

struct handle {
    enum hkind kind;
    struct fb_egress *e;
};

struct listener {
    struct handle h;
    int fd;         /* -1: none, or parked (init holds it, egress_park) */
    uint16_t port;
    bool parked;
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
    bool inspect;        /* a secret's or an HTTP rule's host: inspect.c */
    char *name;
    uint16_t port;
    const char *proto;   /* "tls", "http", "opaque" */
    char via[64];        /* "198.18.0.2:443" or "proxy" */
    char dst[INET6_ADDRSTRLEN + 8];
    struct buf up, down; /* up: sandbox -> upstream; down: upstream -> sandbox */
    /* Relaying with splice(): a pipe per direction; the buffers above then
     * only hold what was read before relaying started, sent first. */
    int pu[2], pd[2];
    size_t pu_fill, pd_fill, pipe_cap, pipe_size;
    /* Its share of the relay's budget (applied to its sockets and pipes),
     * and its socket queues when last measured. */
    size_t share, queued;
    uint64_t measured_ns;
    bool in_eof, out_eof, up_shut, down_shut;
    uint64_t start_ns, last_ns;
    int64_t bytes_out, bytes_in;
    struct sockaddr_storage addr[HOSTRES_MAX_ADDRS];
    socklen_t alen[HOSTRES_MAX_ADDRS];
    size_t naddr, iaddr;
    uint64_t try_ns;     /* when the connect to addr[iaddr] started */
    int connect_errno;
    /* Plain HTTP: every request the client sends is followed (sniff.h
     * http_walk) and its Host checked; only bytes walked past (up_ok) may
     * go upstream, and up is read through the buffer, never spliced. */
    bool walked;
    struct http_walk walk;
    /* The first bytes were incomplete when last looked at (sniff.h
     * sniff_may_change): bytes seen, and what could change that. */
    size_t sn_seen, sn_need;
    bool sn_lf;
    size_t up_ok;
    /* An upgrade request is out: the client is not read until the server's
     * answer (101 or not) has been read through down; down_ok of it may
     * go to the client. */
    bool wait_upgrade;
    size_t down_ok;
};

struct fb_egress {
    const struct fb_policy *p;
    int ep;                /* its own epoll, or the supervisor's (shared) */
    bool shared;           /* egress_share_epoll: ep is not ours */
    bool detached;         /* egress_detach: nothing of it is watched any more */
    bool dirty;            /* shared: events handled, egress_flush has work */
    struct fb_egress *dirty_next;
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
    /* Synthetic addresses: name i has FB_NET_SYNTH_BASE + SYNTH_FIRST + i. */
    struct nametab synth;
    struct nametab denied; /* names looked up and denied (DENIED_MAX at most) */
    struct fb_audit *audit;
    bool splice_ok;        /* SIGPIPE is blocked or ignored in this thread */
    /* The host's own interface addresses (read at the first host-side
     * lookup): an allowed name that resolves to one of them would reach the
     * host's services. */
    struct sockaddr_storage *host_addrs;
    size_t nhost_addrs;
    bool host_addrs_read;
    struct fb_net_summary sum;
    /* The relay's buffers: the share each connection gets now, the bytes
     * in all pipes, the socket queues as last measured. */
    size_t share;
    bool rebalance;        /* nrelay changed: share out again */
    int64_t pipes, queued;
    /* Inspection (docs/secrets.md): the per-run CA (NULL: none), the rules
     * that may change (grant.c), the inspecting threads, and the queue by
     * which they (and grants) hand their log lines to this loop. */
    struct tls_ca *ca;
    struct egress_rules *rules;
    pthread_mutex_t imu;
    pthread_cond_t icond;
    struct insp *insps;
    int ninsp;
    struct qent *qhead, **qtail;
    int qfd;
    struct handle q_h;
    bool sync_init;
};

/* ---- buffers ---- */

static inline size_t buf_len(const struct buf *b) { return b->tail - b->head; }
static inline size_t buf_room(const struct buf *b) { return BUF_SIZE - b->tail + b->head; }
void buf_compact(struct buf *b);
void buf_put(struct buf *b, const void *data, size_t n);

const char *addr_str(const struct sockaddr *sa, char *buf, size_t cap);

/* ---- egress.c: a connection's life ---- */

struct conn *conn_new(struct fb_egress *e, int fd, enum phase ph);
/* Register the events c needs now (from its phase and buffer levels). */
void conn_update(struct fb_egress *e, struct conn *c);
/* End a connection: log it, close it, free it at the end of the dispatch.
 * verdict: "allow" (it was relayed), "deny" (policy), "error" (allowed but
 * it failed). reset: an abortive close. */
void conn_end(struct fb_egress *e, struct conn *c, const char *verdict, bool reset,
              const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Failed or refused before relaying: a proxy client gets a status line
 * (403, 502 or 504), a transparent one a reset. */
void upstream_fail(struct fb_egress *e, struct conn *c, const char *status, const char *verdict,
                   const char *fmt, ...) __attribute__((format(printf, 5, 6)));
/* Check the client's first bytes against c->name. Returns false if the
 * connection was ended. */
bool check_first_bytes(struct fb_egress *e, struct conn *c);

/* Remember s in list (rows of width bytes, FB_NET_NOTE_MAX of them) unless
 * it is there; *n counts distinct ones up to FB_NET_NOTE_MAX + 1. */
void egress_note_distinct(char *list, size_t width, int *n, const char *s);
#define egress_note_denied(list, n, s) egress_note_distinct(&(list)[0][0], sizeof (list)[0], n, s)
/* A lookup of name denied because the allowlist lacks it. */
void egress_note_denied_name(struct fb_egress *e, const char *name);
/* A connection to name:port refused because the allowlist lacks it. */
void egress_note_refused(struct fb_egress *e, const char *name, unsigned port);

/* ---- egress_resolver.c ---- */

void dns_udp_ready(struct fb_egress *e);
void dns_tcp_event(struct fb_egress *e, struct conn *c, uint32_t rev);
/* The name a synthetic address (host order) was handed out for, or NULL. */
const char *synth_name(const struct fb_egress *e, uint32_t a);

/* ---- upstream.c ---- */

/* Resolve c->name on the host (or take --egress-resolve) and connect. */
void start_resolve(struct fb_egress *e, struct conn *c);
void resolver_ready(struct fb_egress *e);
/* The connect in progress finished (EPOLLOUT on c->out). */
void connect_ready(struct fb_egress *e, struct conn *c);
/* Give up on the address being connected to and try the next one. */
void connect_next(struct fb_egress *e, struct conn *c, int er);
bool looks_like_ip(const char *name);

/* ---- relay.c ---- */

/* Read from the sandbox's end (into up or its pipe) / from upstream (into
 * down or its pipe). Return false if the connection ended. */
bool read_in(struct fb_egress *e, struct conn *c);
bool read_out(struct fb_egress *e, struct conn *c);
/* Send what b holds to side s (count: add to this byte counter; ok: at
 * most this many, decreased by what was sent; NULL: all). */
bool flush(struct fb_egress *e, struct conn *c, struct side *s, struct buf *b, int64_t *count,
           size_t *ok);
/* The gates on each direction for flush(). */
static inline size_t *up_gate(struct conn *c) { return c->walked ? &c->up_ok : NULL; }
static inline size_t *down_gate(struct conn *c) { return c->wait_upgrade ? &c->down_ok : NULL; }
/* Plain HTTP: walk the requests the client sent past up_ok, checking each
 * one's Host; the server's answer to an upgrade request. Return false if
 * the connection was ended. */
bool walk_up(struct fb_egress *e, struct conn *c);
bool answer_upgrade(struct fb_egress *e, struct conn *c);
void start_relay(struct fb_egress *e, struct conn *c);
/* Move what can move, pass on half-closes, end when both are done. */
void relay_progress(struct fb_egress *e, struct conn *c);

/* The buffer budget: rebalance() gives every connection its share again
 * when their number changed; apply() sets c's sockets and pipes to it;
 * measure() reads c's socket queues into the totals and the peak. */
void relay_rebalance(struct fb_egress *e);
void relay_apply(struct fb_egress *e, struct conn *c);
void relay_measure(struct fb_egress *e, struct conn *c);

/* ---- grant.c ---- */

struct http_head;
void rules_init(struct fb_egress *e);
void rules_free(struct fb_egress *e);
int64_t egress_now_ms(void);
/* Is name:port allowed now (the allowlist, grants, revocations)? */
bool egress_allowed(struct fb_egress *e, const char *name, uint16_t port);
/* Is name:port to be inspected (a live secret or HTTP rule for it)? */
bool egress_inspects(struct fb_egress *e, const char *name, uint16_t port);
/* One request to name:port: allowed (0: head is what goes upstream,
 * secrets the names swapped in, unbound the stand-ins that must not go in
 * the body, values those that must not come back) or refused (-1: why). */
struct rules_verdict {
    uint8_t *head;
    size_t head_len;
    char why[512];
    char secrets[512];
    char **unbound, **unbound_names;
    size_t nunbound;
    struct fb_secret_value **values;
    size_t nvalues;
};
int rules_request(struct fb_egress *e, const char *name, uint16_t port, const struct http_head *h,
                  struct rules_verdict *v);
void rules_verdict_free(struct rules_verdict *v);

/* ---- inspect.c ---- */

/* Hand c (connected, first bytes checked) to its own inspecting thread;
 * c is ended here (its descriptors move to the thread). */
void inspect_start(struct fb_egress *e, struct conn *c);
/* Stop every inspecting thread and wait for them (egress_free). */
void inspect_stop_all(struct fb_egress *e);
/* The log lines and counts the threads queued, into the log (this loop). */
void egress_queue_drain(struct fb_egress *e);
void egress_queue_grant(struct fb_egress *e, const char *action, const struct fb_grant *g);

/* ---- proxy.c ---- */

void proxy_request(struct fb_egress *e, struct conn *c);
/* Send a short HTTP reply (a proxy status line) and end the connection. */
void reply_and_end(struct fb_egress *e, struct conn *c, const char *status, const char *verdict,
                   const char *reason);

#endif
