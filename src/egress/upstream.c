/* upstream.c — the host side of a relayed connection: the name is resolved
 * on the host (--egress-resolve first, else getaddrinfo() in hostres.c's
 * worker threads, so a slow lookup never blocks the loop), addresses the
 * sandbox must not reach through a name are dropped (loopback, link-local,
 * multicast, the synthetic range, the host's own addresses), and each
 * remaining address is tried with a non-blocking connect. When connected,
 * relaying starts (relay.c), or the connection waits to see who speaks
 * first (opaque ports). */
#include "egress_int.h"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netdb.h>
#include <netinet/tcp.h>
#include <string.h>
#include <sys/epoll.h>

static void try_connect(struct fb_egress *e, struct conn *c);


/* The host's interface addresses, once (not at start: a run that never
 * resolves a name on the host does not pay for the netlink dump). */
static void read_host_addrs(struct fb_egress *e)
{
    if (e->host_addrs_read)
        return;
    e->host_addrs_read = true;
    struct ifaddrs *ifa = NULL;
    if (getifaddrs(&ifa) < 0)
        return;
    size_t n = 0;
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
        n++;
    e->host_addrs = fb_xcalloc(n ? n : 1, sizeof *e->host_addrs);
    for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
        if (!i->ifa_addr || (i->ifa_addr->sa_family != AF_INET && i->ifa_addr->sa_family != AF_INET6))
            continue;
        memcpy(&e->host_addrs[e->nhost_addrs++], i->ifa_addr,
               i->ifa_addr->sa_family == AF_INET ? sizeof(struct sockaddr_in)
                                                 : sizeof(struct sockaddr_in6));
    }
    freeifaddrs(ifa);
}

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

bool looks_like_ip(const char *name)
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

void start_resolve(struct fb_egress *e, struct conn *c)
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

void resolver_ready(struct fb_egress *e)
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
        read_host_addrs(e);
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
        if (c->wait_upgrade)
            c->down_ok += sizeof ok - 1; /* ours, not the answer to the upgrade */
    }
    if (c->checked)
        start_relay(e, c);
    else {
        c->ph = PH_FIRST;
        relay_apply(e, c); /* the upstream socket's buffers */
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
void connect_next(struct fb_egress *e, struct conn *c, int er)
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

void connect_ready(struct fb_egress *e, struct conn *c)
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
