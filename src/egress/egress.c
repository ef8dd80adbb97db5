/* egress.c — the supervisor side of the network allowlist (see egress.h,
 * egress_int.h for how it is divided, and docs/network.md).
 *
 * Everything is non-blocking and driven by one private epoll instance (the
 * supervisor polls its fd and calls egress_dispatch()):
 *
 *   DNS: egress_resolver.c answers the sandbox's queries.
 *   Connections (listeners on the allowed ports, and the CONNECT proxy)
 *     destination -> name (only addresses handed out count) -> port allowed?
 *     -> first client bytes: TLS SNI or HTTP Host must be the name
 *        (ports 80/443: required; other explicitly allowed ports: checked
 *        when the client speaks first, opaque TCP otherwise)
 *     -> resolve on the host and connect (upstream.c)
 *     -> relay both ways (relay.c), or, for a host a secret is bound to or
 *        that has HTTP rules, hand the connection to its own inspecting
 *        thread (inspect.c; docs/secrets.md).
 *   Limits: p->max_conns relayed connections, p->conn_idle_ms idle timeout,
 *   HANDSHAKE_MS to get from accept to relaying.
 *   Audit: one JSON line per DNS query and per connection (netlog.c).
 *
 * FLUEBOX_NO_SPLICE=1 in the supervisor's environment relays through the
 * buffers instead of splice() (for comparing the two).
 */
#include "egress_int.h"

#include "sniff.h"
#include "tls_ca.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>

/* ---- small helpers ---- */

void buf_compact(struct buf *b)
{
    if (b->head == b->tail) {
        b->head = b->tail = 0;
    } else if (b->tail == BUF_SIZE && b->head) {
        memmove(b->d, b->d + b->head, b->tail - b->head);
        b->tail -= b->head;
        b->head = 0;
    }
}

void buf_put(struct buf *b, const void *data, size_t n)
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

const char *addr_str(const struct sockaddr *sa, char *buf, size_t cap)
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

void egress_note_distinct(char *list, size_t width, int *n, const char *s)
{
    for (int i = 0; i < *n && i < FB_NET_NOTE_MAX; i++)
        if (!strcmp(list + (size_t)i * width, s))
            return;
    if (*n < FB_NET_NOTE_MAX) {
        size_t l = strnlen(s, width - 1);
        memcpy(list + (size_t)*n * width, s, l);
        list[(size_t)*n * width + l] = 0;
    }
    if (*n <= FB_NET_NOTE_MAX)
        (*n)++;
}

void egress_note_denied_name(struct fb_egress *e, const char *name)
{
    if (nametab_find(&e->denied, name) >= 0)
        return;
    if (e->denied.n >= DENIED_MAX) {
        e->sum.names_denied_more = true;
        return;
    }
    nametab_add(&e->denied, name);
    e->sum.names_denied++;
    egress_note_denied(e->sum.denied_names, &e->sum.ndenied_names, name);
}

void egress_note_refused(struct fb_egress *e, const char *name, unsigned port)
{
    char t[300];
    snprintf(t, sizeof t, "%s:%u", name, port);
    e->sum.conns_refused++;
    egress_note_denied(e->sum.refused, &e->sum.nrefused, t);
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

void conn_update(struct fb_egress *e, struct conn *c)
{
    uint32_t win = 0, wout = 0;
    bool spliced = c->pu[0] >= 0;
    bool can_read_in = !c->in_eof && !c->wait_upgrade &&
                       (spliced && !c->walked ? c->pu_fill < c->pipe_cap : buf_room(&c->up) > 0);
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
        if (!c->out_eof && (spliced && !(c->wait_upgrade && !c->pd_fill)
                                ? c->pd_fill < c->pipe_cap
                                : buf_room(&c->down) > 0))
            wout |= EPOLLIN;
        if ((buf_len(&c->up) && (!c->walked || c->up_ok)) || c->pu_fill)
            wout |= EPOLLOUT;
        break;
    }
    if ((buf_len(&c->down) && (!c->wait_upgrade || c->down_ok)) || c->pd_fill)
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

void conn_end(struct fb_egress *e, struct conn *c, const char *verdict, bool reset,
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
        char reason[512];
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(reason, sizeof reason, fmt, ap);
        va_end(ap);
        struct audit_conn r = {
            .name = c->name,
            .port = c->port,
            .via = c->proxy ? "proxy" : "transparent",
            .dest = c->via,
            .verdict = verdict,
            .reason = reason,
            .protocol = c->proto,
            .upstream = c->dst[0] ? c->dst : NULL,
            .bytes_out = c->bytes_out,
            .bytes_in = c->bytes_in,
            .duration_ms = (int64_t)((fb_now_ns() - c->start_ns) / 1000000ull),
        };
        audit_conn(e->audit, &r);
    }
    if (c->counted) {
        e->nrelay--;
        e->rebalance = true;
    }
    e->queued -= (int64_t)c->queued;
    e->pipes -= (int64_t)(c->pu_fill + c->pd_fill);
    c->queued = c->pu_fill = c->pd_fill = 0;
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

struct conn *conn_new(struct fb_egress *e, int fd, enum phase ph)
{
    struct conn *c = fb_xcalloc(1, sizeof *c);
    c->id = ++e->next_id;
    c->ph = ph;
    c->in = (struct side){{H_SIDE, e}, c, fd, 0, false, false};
    c->out = (struct side){{H_SIDE, e}, c, -1, 0, false, false};
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

void upstream_fail(struct fb_egress *e, struct conn *c, const char *status, const char *verdict,
                   const char *fmt, ...)
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

/* Check the client's first bytes against c->name. Returns false if the
 * connection was ended. */
bool check_first_bytes(struct fb_egress *e, struct conn *c)
{
    if (c->checked)
        return true;
    struct sniff s;
    const uint8_t *first = c->up.d + c->up.head;
    size_t len = buf_len(&c->up);
    if (sniff_may_change(c->sn_seen, c->sn_need, c->sn_lf, first, len)) {
        sniff_classify(first, len, &s);
        if (s.kind == SNIFF_MORE) {
            c->sn_seen = len;
            c->sn_need = s.need;
            c->sn_lf = s.lf;
        }
    } else {
        s.kind = SNIFF_MORE; /* nothing that could change the answer came */
    }
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
        if (c->inspect) {
            c->checked = true; /* inspect.c reads every request itself */
            return true;
        }
        /* From here on every request of the connection is followed and
         * checked, this first one included (relay.c walk_up). */
        c->walked = true;
        c->checked = true;
        return walk_up(e, c);
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
            if (!read_in(e, c) || (c->walked && !walk_up(e, c)))
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
        if ((rev & EPOLLOUT) && !flush(e, c, &c->in, &c->down, NULL, down_gate(c)))
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

/* ---- accepting ---- */

static void deny_at_once(struct fb_egress *e, int fd, const char *via, uint16_t port,
                         const char *name, const char *reason)
{
    struct linger l = {1, 0};
    setsockopt(fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
    close(fd);
    e->sum.conns++;
    e->sum.conns_denied++;
    struct audit_conn r = {
        .name = name,
        .port = port,
        .via = strcmp(via, "proxy") ? "transparent" : "proxy",
        .dest = via,
        .verdict = "deny",
        .reason = reason,
    };
    audit_conn(e->audit, &r);
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
            if (!egress_allowed(e, name, l->port)) {
                char why[400];
                snprintf(why, sizeof why, "port %u is not allowed for %s", l->port, name);
                egress_note_refused(e, name, l->port);
                deny_at_once(e, fd, via, l->port, name, why);
                continue;
            }
        }
        e->sum.conns++;
        struct conn *c = conn_new(e, fd, l->h.kind == H_PROXY ? PH_PROXYREQ : PH_SNIFF);
        c->counted = true;
        e->nrelay++;
        relay_rebalance(e); /* one more connection may mean a smaller share */
        relay_apply(e, c);
        snprintf(c->via, sizeof c->via, "%s", via);
        if (l->h.kind == H_PROXY) {
            c->proxy = true;
            conn_update(e, c);
            continue;
        }
        c->name = fb_xstrdup(name);
        c->port = l->port;
        c->strict = l->port == 80 || l->port == 443;
        /* An inspected host: the client must speak first, TLS or HTTP. */
        c->inspect = egress_inspects(e, name, l->port);
        if (c->strict || c->inspect) {
            c->strict = true;
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
    bool want = e->conns != NULL || audit_pending(e->audit);
    if (want == e->timer_armed)
        return;
    /* The timer exists only while something needs it: an idle sandbox's
     * relay holds no descriptor for it (a server holds thousands). */
    if (!want) {
        if (e->timer >= 0)
            close(e->timer); /* leaves e->ep with it */
        e->timer = -1;
        e->timer_armed = false;
        return;
    }
    if (e->timer < 0) {
        e->timer = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct epoll_event tev = {.events = EPOLLIN, .data.ptr = &e->timer_h};
        if (e->timer >= 0 && epoll_ctl(e->ep, EPOLL_CTL_ADD, e->timer, &tev) < 0) {
            close(e->timer);
            e->timer = -1;
        }
        if (e->timer < 0)
            return; /* tried again at the next event; without it, no idle ends */
    }
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
    audit_tick(e->audit);
    for (struct conn *c = e->conns; c; c = c->next)
        if (c->counted)
            relay_measure(e, c);
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

static void handle_event(struct fb_egress *e, struct handle *h, uint32_t events)
{
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
    case H_QUEUE:
        egress_queue_drain(e);
        break;
    case H_SIDE: {
        struct side *s = (struct side *)h;
        if (s->c->dead)
            break;
        if (s->c->ph == PH_DNS)
            dns_tcp_event(e, s->c, events);
        else
            side_event(e, s, events);
        break;
    }
    }
}

/* After a batch of events: free what closed, share the buffers out, set
 * the timer. */
static void after_events(struct fb_egress *e)
{
    while (e->dead) {
        struct conn *c = e->dead;
        e->dead = c->next;
        conn_free(c);
    }
    if (e->rebalance)
        relay_rebalance(e);
    timer_update(e);
}

void egress_dispatch(struct fb_egress *e)
{
    if (!e || e->shared)
        return;
    struct epoll_event evs[BATCH];
    int n = epoll_wait(e->ep, evs, BATCH, 0);
    for (int i = 0; i < n; i++)
        handle_event(e, evs[i].data.ptr, evs[i].events);
    after_events(e);
}

/* ---- a shared epoll (egress.h) ---- */

static struct fb_egress *dirty_head; /* the supervisor's thread only */

/* Move every watched descriptor of e from one epoll to another. */
static int move_fds(struct fb_egress *e, int from, int to)
{
    struct {
        int fd;
        struct handle *h;
        uint32_t ev;
    } v[8 + FB_NET_MAX_PORTS];
    size_t n = 0;
    struct listener *ls[] = {&e->dns_udp, &e->dns_tcp, &e->proxy};
    for (size_t i = 0; i < FB_ARRAY_LEN(ls); i++)
        if (ls[i]->fd >= 0)
            v[n].fd = ls[i]->fd, v[n].h = &ls[i]->h, v[n].ev = EPOLLIN, n++;
    for (size_t i = 0; i < e->nlis; i++)
        if (e->lis[i].fd >= 0)
            v[n].fd = e->lis[i].fd, v[n].h = &e->lis[i].h, v[n].ev = EPOLLIN, n++;
    if (e->timer >= 0)
        v[n].fd = e->timer, v[n].h = &e->timer_h, v[n].ev = EPOLLIN, n++;
    if (e->res)
        v[n].fd = hostres_fd(e->res), v[n].h = &e->res_h, v[n].ev = EPOLLIN, n++;
    if (e->qfd >= 0)
        v[n].fd = e->qfd, v[n].h = &e->q_h, v[n].ev = EPOLLIN, n++;
    for (size_t i = 0; i < n; i++) {
        if (from >= 0)
            epoll_ctl(from, EPOLL_CTL_DEL, v[i].fd, NULL);
        struct epoll_event ev = {.events = v[i].ev, .data.ptr = v[i].h};
        if (to >= 0 && epoll_ctl(to, EPOLL_CTL_ADD, v[i].fd, &ev) < 0)
            return -1;
    }
    for (struct conn *c = e->conns; c; c = c->next) {
        struct side *s[2] = {&c->in, &c->out};
        for (int k = 0; k < 2; k++) {
            if (!s[k]->reg || s[k]->fd < 0)
                continue;
            if (from >= 0)
                epoll_ctl(from, EPOLL_CTL_DEL, s[k]->fd, NULL);
            struct epoll_event ev = {.events = s[k]->ev, .data.ptr = &s[k]->h};
            if (to >= 0 && epoll_ctl(to, EPOLL_CTL_ADD, s[k]->fd, &ev) < 0)
                return -1;
        }
    }
    return 0;
}

int egress_share_epoll(struct fb_egress *e, int ep)
{
    if (!e || e->shared)
        return 0;
    if (move_fds(e, e->ep, ep) < 0) {
        int er = errno;
        move_fds(e, ep, -1); /* (whatever did move) */
        errno = er;
        return -1;
    }
    close(e->ep);
    e->ep = ep;
    e->shared = true;
    return 0;
}

void egress_event(void *handle, uint32_t events)
{
    struct handle *h = handle;
    struct fb_egress *e = h->e;
    if (e->detached)
        return;
    handle_event(e, h, events);
    if (!e->dirty) {
        e->dirty = true;
        e->dirty_next = dirty_head;
        dirty_head = e;
    }
}

void egress_flush(void)
{
    while (dirty_head) {
        struct fb_egress *e = dirty_head;
        dirty_head = e->dirty_next;
        e->dirty = false;
        e->dirty_next = NULL;
        if (!e->detached)
            after_events(e);
    }
}

void egress_detach(struct fb_egress *e)
{
    if (!e || !e->shared || e->detached)
        return;
    move_fds(e, e->ep, -1);
    e->detached = true;
    e->ep = -1;
    /* Its pending clean-up is done by egress_free (after this batch). */
}

static int add_listener(struct fb_egress *e, struct listener *l, enum hkind kind, int fd,
                        uint16_t port)
{
    l->h.kind = kind;
    l->h.e = e;
    l->fd = fd;
    l->port = port;
    int fl = fcntl(fd, F_GETFL);
    if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return -1;
    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = &l->h};
    return epoll_ctl(e->ep, EPOLL_CTL_ADD, fd, &ev);
}

/* The listener a socket from the sandbox is, by its type and the address
 * it is bound to; NULL (with err) for one that is none of them. parked:
 * only one whose socket egress_park gave away, else only a new one. */
static struct listener *socket_slot(struct fb_egress *e, int fd, bool parked, enum hkind *kind,
                                    uint16_t *portp, struct fb_err *err)
{
    int type = 0;
    socklen_t tl = sizeof type;
    struct sockaddr_in sa;
    socklen_t sl = sizeof sa;
    if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &tl) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0 || sa.sin_family != AF_INET) {
        fb_errf(err, FB_EXIT_SETUP, "egress: unexpected socket from the sandbox");
        return NULL;
    }
    char ip[INET_ADDRSTRLEN];
    inet_ntop(AF_INET, &sa.sin_addr, ip, sizeof ip);
    uint16_t port = ntohs(sa.sin_port);
    *portp = port;
    bool dns = !strcmp(ip, FB_NET_DNS_ADDR) && port == 53;
    struct listener *l = NULL;
    if (type == SOCK_DGRAM && dns)
        l = &e->dns_udp, *kind = H_DNS_UDP;
    else if (type == SOCK_STREAM && dns)
        l = &e->dns_tcp, *kind = H_DNS_TCP;
    else if (type == SOCK_STREAM && !strcmp(ip, "127.0.0.1") && port == e->p->proxy_port)
        l = &e->proxy, *kind = H_PROXY;
    else if (type == SOCK_STREAM && !strcmp(ip, "0.0.0.0")) {
        *kind = H_LISTEN;
        for (size_t i = 0; i < e->nlis && !l; i++)
            if (parked && e->lis[i].port == port)
                l = &e->lis[i];
        if (!parked && e->nlis < FB_NET_MAX_PORTS) {
            l = &e->lis[e->nlis++];
            l->fd = -1;
        }
    }
    if (l && (parked ? !(l->parked && l->fd < 0) : l->fd >= 0))
        l = NULL;
    if (!l)
        fb_errf(err, FB_EXIT_SETUP, "egress: unexpected socket %s:%u from the sandbox", ip, port);
    return l;
}

/* Serve fd (taken: closed on failure) as the listener it is. */
static int take_socket(struct fb_egress *e, int fd, bool parked, struct fb_err *err)
{
    enum hkind kind;
    uint16_t port;
    struct listener *l = socket_slot(e, fd, parked, &kind, &port, err);
    if (!l) {
        close(fd);
        return -1;
    }
    if (add_listener(e, l, kind, fd, port) < 0) {
        l->fd = -1;
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "egress: serving port %u", port);
    }
    l->parked = false;
    return 0;
}

int egress_park(struct fb_egress *e)
{
    if (!e || !e->shared || e->detached || e->conns)
        return 0;
    int n = 0;
    struct listener *ls[3 + FB_NET_MAX_PORTS] = {&e->dns_udp, &e->dns_tcp, &e->proxy};
    size_t nl = 3;
    for (size_t i = 0; i < e->nlis; i++)
        ls[nl++] = &e->lis[i];
    for (size_t i = 0; i < nl; i++) {
        if (ls[i]->fd < 0)
            continue;
        /* Out of the epoll first: init's copy keeps the socket open, and an
         * epoll entry lives as long as its open file does. */
        epoll_ctl(e->ep, EPOLL_CTL_DEL, ls[i]->fd, NULL);
        close(ls[i]->fd);
        ls[i]->fd = -1;
        ls[i]->parked = true;
        n++;
    }
    return n;
}

int egress_unpark(struct fb_egress *e, const int *fds, size_t nfds, struct fb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < nfds; i++) {
        if (!e || e->detached) {
            close(fds[i]);
            continue;
        }
        if (take_socket(e, fds[i], true, err) < 0)
            rc = -1;
    }
    return rc;
}

int egress_start(const struct fb_policy *p, const int *fds, size_t nfds,
                 struct fb_egress **out, struct fb_err *err)
{
    *out = NULL;
    struct fb_egress *e = fb_xcalloc(1, sizeof *e);
    e->p = p;
    e->sum.mode = p->net;
    e->timer = -1;
    e->dns_udp.fd = e->dns_tcp.fd = e->proxy.fd = -1;
    e->timer_h.kind = H_TIMER;
    e->res_h.kind = H_RESOLVER;
    e->q_h.kind = H_QUEUE;
    e->qtail = &e->qhead;
    e->qfd = -1;
    pthread_mutex_init(&e->imu, NULL);
    pthread_cond_init(&e->icond, NULL);
    e->sync_init = true;
    e->timer_h.e = e->res_h.e = e->q_h.e = e;
    size_t used = 0;
    e->ep = epoll_create1(EPOLL_CLOEXEC);
    if (e->ep < 0) {
        fb_errno(err, FB_EXIT_SETUP, "egress: event loop");
        goto fail;
    }
    /* The timer (timer_update) is made when a connection needs it. The
     * queue's eventfd (the inspecting threads' and the grants' lines) only
     * when the relay can inspect or take grants: an idle sandbox without
     * holds no descriptor for it (a server holds thousands). */
    if (policy_wants_ca(p)) {
        e->qfd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
        struct epoll_event qev = {.events = EPOLLIN, .data.ptr = &e->q_h};
        if (e->qfd < 0 || epoll_ctl(e->ep, EPOLL_CTL_ADD, e->qfd, &qev) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "egress: event loop");
            goto fail;
        }
    }
    rules_init(e);

    /* Each socket says what it is: its type and the address it is bound to. */
    for (; used < nfds; used++)
        if (take_socket(e, fds[used], false, err) < 0) {
            used++;
            goto fail;
        }
    if (p->net_log) {
        e->audit = audit_open(p->net_log, err);
        if (!e->audit)
            goto fail;
        audit_start(e->audit, p->net == FB_NET_NONE    ? "none"
                              : p->net == FB_NET_ALLOW ? "allow"
                                                       : "host",
                    p->net == FB_NET_HOST ? "the sandbox shares the host's network: nothing "
                                            "is relayed, checked or logged"
                                          : NULL);
    }
    /* splice() may raise SIGPIPE (see drop_sigpipe): only with it blocked
     * or ignored; otherwise the relay copies through its buffers. */
    sigset_t cur;
    struct sigaction sa_pipe;
    e->splice_ok = (pthread_sigmask(SIG_BLOCK, NULL, &cur) == 0 && sigismember(&cur, SIGPIPE)) ||
                   (sigaction(SIGPIPE, NULL, &sa_pipe) == 0 && sa_pipe.sa_handler == SIG_IGN);
    if (getenv("FLUEBOX_NO_SPLICE"))
        e->splice_ok = false;
    *out = e;
    return 0;
fail:
    /* The ones not yet taken over are closed here; the others by egress_free. */
    for (size_t i = used; i < nfds; i++)
        close(fds[i]);
    egress_free(e);
    return -1;
}

void egress_set_record(struct fb_egress *e, struct fb_record *rec)
{
    if (!e || (!rec && !e->audit))
        return;
    if (!e->audit)
        e->audit = audit_open(NULL, NULL);
    audit_set_record(e->audit, rec);
}

void egress_summary(const struct fb_egress *e, struct fb_net_summary *s)
{
    if (!e) {
        memset(s, 0, sizeof *s);
        return;
    }
    *s = e->sum;
    int64_t floor = (int64_t)e->p->max_conns * SHARE_MIN;
    s->relay_budget = floor > RELAY_BUDGET ? floor : RELAY_BUDGET;
    struct audit_stats st;
    audit_stats(e->audit, &st);
    s->dns_aggregated = st.dns_aggregated;
    s->conns_aggregated = st.conns_aggregated;
}

/* "a, b, c, ..." from a list kept by egress_note_distinct. */
static void join_list(const char *list, size_t width, int n, char *out, size_t cap)
{
    size_t len = 0;
    out[0] = 0;
    for (int i = 0; i < n && i < FB_NET_NOTE_MAX; i++)
        len += (size_t)snprintf(out + len, len < cap ? cap - len : 0, "%s%s", i ? ", " : "",
                                list + (size_t)i * width);
    if (n > FB_NET_NOTE_MAX && len < cap)
        snprintf(out + len, cap - len, ", ...");
}

bool egress_denial_note(const struct fb_net_summary *s, char *buf, size_t cap)
{
    if (!s->names_denied && !s->conns_refused)
        return false;
    char names[FB_NET_NOTE_MAX * 260 + 8], ports[FB_NET_NOTE_MAX * 270 + 8];
    join_list(&s->denied_names[0][0], sizeof s->denied_names[0], s->ndenied_names, names,
              sizeof names);
    join_list(&s->refused[0][0], sizeof s->refused[0], s->nrefused, ports, sizeof ports);
    char lookups[sizeof names + 64] = "", conns[sizeof ports + 64] = "";
    if (s->names_denied)
        snprintf(lookups, sizeof lookups, "%s%lld name%s denied (%s)",
                 s->names_denied_more ? "over " : "", (long long)s->names_denied,
                 s->names_denied == 1 ? "" : "s", names);
    if (s->conns_refused)
        snprintf(conns, sizeof conns, "%lld connection%s refused (%s)",
                 (long long)s->conns_refused, s->conns_refused == 1 ? "" : "s", ports);
    snprintf(buf, cap, "network: %s%s%s: %s", lookups, lookups[0] && conns[0] ? ", " : "", conns,
             s->mode == FB_NET_NONE ? "the network is off; allow names with --allow-net NAME"
             : conns[0] ? "allow with --allow-net NAME[:PORT]"
                        : "allow with --allow-net NAME");
    return true;
}

void egress_free(struct fb_egress *e)
{
    if (!e)
        return;
    /* The inspecting threads first: they use the rules, the CA and the
     * queue, whose last lines then go into the log. */
    inspect_stop_all(e);
    if (e->qfd >= 0)
        egress_queue_drain(e);
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
        if (e->lis[i].fd >= 0)
            close(e->lis[i].fd);
    nametab_free(&e->synth);
    nametab_free(&e->denied);
    free(e->host_addrs);
    if (e->timer >= 0)
        close(e->timer);
    if (e->ep >= 0 && !e->shared)
        close(e->ep);
    if (e->dirty) {
        struct fb_egress **pp = &dirty_head;
        while (*pp && *pp != e)
            pp = &(*pp)->dirty_next;
        if (*pp)
            *pp = e->dirty_next;
    }
    struct fb_net_summary sum;
    egress_summary(e, &sum);
    audit_close(e->audit, &sum);
    rules_free(e);
    tls_ca_free(e->ca);
    if (e->qfd >= 0)
        close(e->qfd);
    if (e->sync_init) {
        pthread_mutex_destroy(&e->imu);
        pthread_cond_destroy(&e->icond);
    }
    free(e);
}

/* ---- the per-run CA ---- */

int egress_ca_new(const struct fb_policy *p, struct tls_ca **out, struct fb_err *err)
{
    *out = NULL;
    if (p->net != FB_NET_ALLOW || !policy_wants_ca(p))
        return 0;
    /* Constrained to the names known now, unless grants may add others. */
    size_t n = 0, cap = 1;
    for (size_t i = 0; i < p->nsecrets; i++)
        cap += p->secrets[i].nhosts;
    cap += p->nhttp_rules;
    const char **names = fb_xcalloc(cap, sizeof *names);
    if (!p->tls_ca) {
        for (size_t i = 0; i < p->nsecrets; i++)
            for (size_t k = 0; k < p->secrets[i].nhosts; k++)
                names[n++] = p->secrets[i].hosts[k].name;
        for (size_t i = 0; i < p->nhttp_rules; i++)
            names[n++] = p->http_rules[i].host.name;
    }
    *out = tls_ca_new(names, n, p->upstream_ca, err);
    free(names);
    return *out ? 0 : -1;
}

const char *egress_ca_pem(const struct tls_ca *ca) { return tls_ca_pem(ca); }
unsigned long egress_ca_hash(const struct tls_ca *ca) { return tls_ca_hash(ca); }
void egress_ca_free(struct tls_ca *ca) { tls_ca_free(ca); }

void egress_adopt_ca(struct fb_egress *e, struct tls_ca *ca)
{
    if (!e) {
        tls_ca_free(ca);
        return;
    }
    tls_ca_free(e->ca);
    e->ca = ca;
}

