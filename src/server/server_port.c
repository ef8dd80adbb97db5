/* server_port.c — published ports (docs/protocol.md, session.publish): a
 * listener on the host's loopback (127.0.0.1, a port of the caller's choice
 * or a free one) whose connections are relayed to a server the agent runs
 * inside the session, on 127.0.0.1:PORT (or [::1]:PORT) of the session's
 * own network namespace, in every network mode (none included: loopback is
 * always there).
 *
 * How a connection crosses into the namespace: for each accepted
 * connection the server asks the session's init for sockets ("sock"
 * record); init creates an IPv4 and an IPv6 TCP socket and passes them
 * back. A socket belongs to the network namespace it was created in, so
 * the server's connect() on it reaches the sandbox's loopback, and the
 * socket's buffers are charged to the sandbox. Nothing joins a namespace
 * (which a rootless server could not), and init never blocks: it only
 * creates sockets.
 *
 * Who may connect: 127.0.0.1 is reachable by every local user, so unless
 * the port was published with anyUid, the peer's socket is looked up in
 * the kernel's socket table (NETLINK_SOCK_DIAG, exact 4-tuple) and a
 * connection whose socket does not belong to the session's owner is closed
 * at once, before anything is relayed.
 *
 * Which hosts (DNS rebinding): a web page whose name an attacker points at
 * 127.0.0.1 is loaded by the owner's browser, which connects as the owner.
 * A port published with "hosts" is HTTP only: the relay reads the head of
 * each connection's first request (up to HEAD_MAX bytes) before it asks
 * init for sockets, and relays nothing unless the request target is a path
 * and its one Host header names an allowed host (any port); otherwise the
 * client gets a 403 (400, 431) and the connection is closed: the server
 * inside never sees it. Only the first request is read: a browser sends a
 * connection's requests all for one origin, the one it connected for.
 *
 * Relaying: both directions through a buffer of RELAY_BUF bytes each, in
 * the server's event loop; a full buffer stops reading its side, so a slow
 * reader holds up its writer instead of the server buffering. A side's EOF
 * becomes a shutdown(SHUT_WR) of the other once its buffer is written. */
#include "server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>

#define RELAY_BUF (32 * 1024)
#define MAX_PUBS 16           /* published ports per session */
#define MAX_RELAYS 128        /* relayed connections at once per session */
#define HEAD_MAX 8192         /* the request head read for a Host check */
#define MAX_HOSTS 16          /* names in a port's Host allowlist */
#define HOST_MAX 255          /* the longest name in it */

struct rdir {
    size_t off, len; /* pending bytes: buf[off..len) */
    bool eof;        /* the reading side said EOF */
    bool shut;       /* the writing side was shut down */
    char buf[RELAY_BUF];
};

struct relay {
    struct pub *pub;
    struct watch w[2];   /* 0: the host's client, 1: the sandbox's server */
    int fd6;             /* the IPv6 socket, tried when 127.0.0.1 refuses */
    uint64_t tag;        /* waiting for init's sockets; 0 once they came */
    bool checking;       /* reading the request head for the Host check */
    bool connecting;
    bool dead;
    struct relay *next, *prev;
    struct rdir d[2];    /* d[0]: host -> sandbox, d[1]: sandbox -> host */
};

struct pub {
    struct sess *ss;
    struct watch w;      /* W_PORT: the listener */
    int port, host_port;
    bool any_uid;
    bool dead;
    char **hosts;        /* the Host allowlist (NULL-terminated), or NULL */
    uint64_t refused;    /* connections refused by it */
    struct pub *next;
};

static unsigned relays_of(struct sess *ss)
{
    unsigned n = 0;
    for (struct relay *r = ss->relays; r; r = r->next)
        n++;
    return n;
}

/* ---- the peer's uid ---- */

/* The owner of the socket at the other end of an accepted loopback
 * connection: its 4-tuple seen from its side is (peer -> local). 0, or -1
 * when it cannot be found (it is gone already) or the kernel refuses. */
static int peer_uid(const struct sockaddr_in *peer, const struct sockaddr_in *local, uid_t *uid)
{
    int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
    if (nl < 0)
        return -1;
    struct timeval tv = {1, 0};
    setsockopt(nl, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    struct {
        struct nlmsghdr nh;
        struct inet_diag_req_v2 r;
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_len = sizeof req;
    req.nh.nlmsg_type = SOCK_DIAG_BY_FAMILY;
    req.nh.nlmsg_flags = NLM_F_REQUEST;
    req.r.sdiag_family = AF_INET;
    req.r.sdiag_protocol = IPPROTO_TCP;
    req.r.idiag_states = ~0u;
    req.r.id.idiag_sport = peer->sin_port;
    req.r.id.idiag_dport = local->sin_port;
    req.r.id.idiag_src[0] = peer->sin_addr.s_addr;
    req.r.id.idiag_dst[0] = local->sin_addr.s_addr;
    req.r.id.idiag_cookie[0] = req.r.id.idiag_cookie[1] = INET_DIAG_NOCOOKIE;
    struct sockaddr_nl to = {.nl_family = AF_NETLINK};
    int rc = -1;
    if (sendto(nl, &req, sizeof req, 0, (struct sockaddr *)&to, sizeof to) == (ssize_t)sizeof req) {
        union {
            char buf[8192];
            struct nlmsghdr align;
        } u;
        ssize_t n;
        do
            n = recv(nl, u.buf, sizeof u.buf, 0);
        while (n < 0 && errno == EINTR);
        for (struct nlmsghdr *h = (struct nlmsghdr *)u.buf; n > 0 && NLMSG_OK(h, (size_t)n);
             h = NLMSG_NEXT(h, n)) {
            if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY ||
                h->nlmsg_len < NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
                break;
            struct inet_diag_msg *m = NLMSG_DATA(h);
            *uid = m->idiag_uid;
            rc = 0;
            break;
        }
    }
    close(nl);
    return rc;
}

/* ---- relays ---- */

static void relay_free(struct relay *r)
{
    if (r->dead)
        return;
    r->dead = true;
    struct srv *srv = r->pub->ss->srv;
    struct sess *ss = r->pub->ss;
    w_close(srv, &r->w[0]);
    w_close(srv, &r->w[1]);
    if (r->fd6 >= 0)
        close(r->fd6);
    r->fd6 = -1;
    if (r->prev)
        r->prev->next = r->next;
    else
        ss->relays = r->next;
    if (r->next)
        r->next->prev = r->prev;
    /* A listener that stopped for want of descriptors may go on. */
    for (struct pub *p = ss->pubs; p; p = p->next)
        if (!p->dead && p->w.fd >= 0 && !p->w.ev)
            w_set(srv, &p->w, EPOLLIN);
    bury(srv, GRAVE_FREE, r);
}

/* What each side waits for now. */
static void relay_interest(struct relay *r)
{
    struct srv *srv = r->pub->ss->srv;
    for (int s = 0; s < 2; s++) {
        if (r->w[s].fd < 0)
            continue;
        uint32_t ev = 0;
        if (s == 1 && r->connecting) {
            ev = EPOLLOUT;
        } else {
            struct rdir *in = &r->d[s], *out = &r->d[1 - s];
            if (!in->eof && in->len < RELAY_BUF)
                ev |= EPOLLIN;
            if (out->len > out->off && (s == 0 || !r->connecting))
                ev |= EPOLLOUT;
        }
        /* w_set with 0 removes the watch; an fd with nothing to wait for
         * has its turn again when the other side moves. */
        w_set(srv, &r->w[s], ev);
    }
}

/* Start connecting the sandbox's side: 127.0.0.1:port first, then
 * [::1]:port. 0, or -1 when neither can even start. */
static int relay_connect(struct relay *r)
{
    struct pub *p = r->pub;
    for (;;) {
        int fd = r->w[1].fd, fam = 0, rc;
        socklen_t fl = sizeof fam;
        getsockopt(fd, SOL_SOCKET, SO_DOMAIN, &fam, &fl);
        struct sockaddr_in a4 = {.sin_family = AF_INET, .sin_port = htons((uint16_t)p->port)};
        struct sockaddr_in6 a6 = {.sin6_family = AF_INET6, .sin6_port = htons((uint16_t)p->port)};
        a4.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        a6.sin6_addr = in6addr_loopback;
        do
            rc = fam == AF_INET6 ? connect(fd, (struct sockaddr *)&a6, sizeof a6)
                                 : connect(fd, (struct sockaddr *)&a4, sizeof a4);
        while (rc < 0 && errno == EINTR);
        if (rc == 0 || errno == EINPROGRESS) {
            r->connecting = rc < 0;
            return 0;
        }
        if (r->fd6 < 0)
            return -1;
        /* Refused on IPv4: the IPv6 socket takes its place. */
        w_close(p->ss->srv, &r->w[1]);
        r->w[1].fd = r->fd6;
        r->fd6 = -1;
    }
}

/* ---- the Host allowlist ---- */

/* A host name as compared: lowercase, without the brackets of an IPv6
 * address and without a final dot. Written to out (HOST_MAX + 1 bytes);
 * false when it is empty or too long. */
static bool host_norm(const char *s, size_t n, char *out)
{
    if (n >= 2 && s[0] == '[' && s[n - 1] == ']')
        s++, n -= 2;
    if (n > 1 && s[n - 1] == '.')
        n--;
    if (n == 0 || n > HOST_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        out[i] = (char)(s[i] >= 'A' && s[i] <= 'Z' ? s[i] - 'A' + 'a' : s[i]);
    out[n] = 0;
    return true;
}

static bool host_allowed(const struct pub *p, const char *name)
{
    size_t nl = strlen(name);
    for (char **h = p->hosts; *h; h++) {
        if (!strcmp(*h, name))
            return true;
        /* "*.example.test": any name below example.test (not itself). */
        size_t hl = strlen(*h);
        if (hl > 2 && (*h)[0] == '*' && nl > hl - 1 && !strcmp(name + nl - (hl - 1), *h + 1))
            return true;
    }
    return false;
}

/* The name of a Host header's value (name[:port], [v6][:port]), normalized;
 * false when it is not of that form. */
static bool host_of_value(const char *v, size_t n, char *out)
{
    size_t end;
    if (n && v[0] == '[') {
        const char *rb = memchr(v, ']', n);
        if (!rb)
            return false;
        end = (size_t)(rb - v) + 1;
    } else {
        const char *c = memchr(v, ':', n);
        end = c ? (size_t)(c - v) : n;
    }
    if (end < n) {
        if (v[end] != ':' || end + 1 == n)
            return false;
        for (size_t i = end + 1; i < n; i++)
            if (v[i] < '0' || v[i] > '9')
                return false;
    }
    for (size_t i = 0; i < end; i++)
        if ((unsigned char)v[i] <= ' ' || v[i] == '/' || v[i] == '@' || v[i] == 0x7f)
            return false;
    return host_norm(v, end, out);
}

/* Check the request head in h[0..n): 0 when it is complete and allowed,
 * 1 when more must be read, else the HTTP status to refuse it with. */
static int head_check(const struct pub *p, const char *h, size_t n, bool eof)
{
    const char *end = NULL;
    for (size_t i = 0; i + 1 < n && !end; i++)
        if (h[i] == '\n' && (h[i + 1] == '\n' || (h[i + 1] == '\r' && i + 2 < n && h[i + 2] == '\n')))
            end = h + i + 1;
    if (!end)
        return eof ? 400 : n >= HEAD_MAX ? 431 : 1;
    /* The request line: METHOD SP TARGET SP VERSION; the target a path
     * (or "*"): an absolute URI would name a host of its own. */
    const char *nl = memchr(h, '\n', (size_t)(end - h));
    const char *sp1 = memchr(h, ' ', (size_t)(nl - h));
    if (!sp1 || sp1 == h || sp1 + 1 >= nl || (sp1[1] != '/' && sp1[1] != '*'))
        return 400;
    int found = 0;
    char name[HOST_MAX + 1];
    bool ok = false;
    for (const char *l = nl + 1; l < end;) {
        const char *le = memchr(l, '\n', (size_t)(end - l));
        if (!le)
            break;
        size_t ll = (size_t)(le - l);
        if (ll && l[ll - 1] == '\r')
            ll--;
        if (ll > 5 && !strncasecmp(l, "host:", 5)) {
            const char *v = l + 5, *ve = l + ll;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            found++;
            ok = host_of_value(v, (size_t)(ve - v), name) && host_allowed(p, name);
        } else if (ll >= 4 && !strncasecmp(l, "host", 4) && (l[4] == ' ' || l[4] == '\t')) {
            return 400; /* whitespace before the colon: not a header a server reads alike */
        }
        l = le + 1;
    }
    if (found != 1)
        return 400;
    return ok ? 0 : 403;
}

/* The client is refused: a short answer, then the connection is closed. */
static void head_refuse(struct relay *r, int status)
{
    const char *what = status == 403   ? "403 Forbidden"
                       : status == 431 ? "431 Request Header Fields Too Large"
                                       : "400 Bad Request";
    const char *why = status == 403 ? "fluebox: this published port does not serve that host name\n"
                                    : "fluebox: this published port needs an HTTP request with one "
                                      "Host header\n";
    char buf[400];
    int n = snprintf(buf, sizeof buf,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nContent-Length: %zu\r\n"
                     "Connection: close\r\n\r\n%s",
                     what, strlen(why), why);
    ssize_t w;
    do
        w = send(r->w[0].fd, buf, (size_t)n, MSG_NOSIGNAL | MSG_DONTWAIT);
    while (w < 0 && errno == EINTR);
    shutdown(r->w[0].fd, SHUT_WR);
    r->pub->refused++;
    relay_free(r);
}

/* Ask init for the sockets that reach the port inside. */
static int relay_ask_sockets(struct relay *r)
{
    struct sess *ss = r->pub->ss;
    r->tag = ++ss->next_tag;
    json_t *h = json_pack("{s:s, s:I}", "op", "sock", "t", (json_int_t)r->tag);
    return sess_send(ss, h, NULL, 0, NULL, 0);
}

/* Move what can be moved; close the relay when both directions are done
 * or one side failed. */
static void relay_pump(struct relay *r)
{
    for (int round = 0; round < 8; round++) {
        bool moved = false;
        for (int dir = 0; dir < 2; dir++) {
            struct rdir *d = &r->d[dir];
            int src = r->w[dir].fd, dst = r->w[1 - dir].fd;
            bool inside_up = r->w[1].fd >= 0 && !r->connecting;
            bool dst_ready = dir == 1 || inside_up;
            size_t cap = dir == 0 && r->checking ? HEAD_MAX : RELAY_BUF;
            if (!d->eof && d->len < cap && (dir == 0 || inside_up)) {
                ssize_t n = read(src, d->buf + d->len, cap - d->len);
                if (n > 0) {
                    d->len += (size_t)n;
                    moved = true;
                } else if (n == 0) {
                    d->eof = true;
                    moved = true;
                } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    return relay_free(r);
                }
                if (dir == 0 && r->checking) {
                    int st = head_check(r->pub, d->buf, d->len, d->eof);
                    if (st > 1)
                        return head_refuse(r, st);
                    if (st == 0) {
                        r->checking = false;
                        if (relay_ask_sockets(r) < 0)
                            return relay_free(r);
                    }
                }
            }
            if (dst_ready && d->len > d->off) {
                ssize_t n = send(dst, d->buf + d->off, d->len - d->off, MSG_NOSIGNAL);
                if (n > 0) {
                    d->off += (size_t)n;
                    if (d->off == d->len)
                        d->off = d->len = 0;
                    moved = true;
                } else if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
                    return relay_free(r);
                }
            }
            if (dst_ready && d->eof && d->len == d->off && !d->shut) {
                shutdown(dst, SHUT_WR);
                d->shut = true;
            }
        }
        if (r->d[0].shut && r->d[1].shut)
            return relay_free(r);
        if (!moved)
            break;
    }
    relay_interest(r);
}

void on_relay(struct relay *r, int side, uint32_t ev)
{
    if (r->dead)
        return;
    if (side == 1 && r->connecting) {
        int e = 0;
        socklen_t l = sizeof e;
        if (getsockopt(r->w[1].fd, SOL_SOCKET, SO_ERROR, &e, &l) < 0)
            e = errno;
        if (e == 0 && !(ev & (EPOLLERR | EPOLLHUP))) {
            r->connecting = false;
        } else if (r->fd6 >= 0) {
            w_close(r->pub->ss->srv, &r->w[1]);
            r->w[1].fd = r->fd6;
            r->fd6 = -1;
            if (relay_connect(r) < 0)
                return relay_free(r);
            if (r->connecting)
                return relay_interest(r);
        } else {
            /* Nothing listens on the port inside: the client sees its
             * connection closed. */
            return relay_free(r);
        }
    }
    relay_pump(r);
}

/* init answered a "sock" request (fds: its sockets, ours to close). True
 * when the tag was a relay's. */
bool port_on_record(struct sess *ss, uint64_t tag, json_t *h, int *fds, size_t nfds)
{
    struct relay *r;
    for (r = ss->relays; r; r = r->next)
        if (r->tag == tag && !r->dead)
            break;
    if (!r)
        return false;
    r->tag = 0;
    if (!json_object_get(h, "result") || nfds < 1) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        relay_free(r);
        return true;
    }
    for (size_t i = 0; i < nfds; i++)
        fcntl(fds[i], F_SETFL, fcntl(fds[i], F_GETFL) | O_NONBLOCK);
    r->w[1].fd = fds[0];
    r->fd6 = nfds > 1 ? fds[1] : -1;
    for (size_t i = 2; i < nfds; i++)
        close(fds[i]);
    if (relay_connect(r) < 0)
        return relay_free(r), true;
    relay_pump(r);
    return true;
}

/* ---- the listener ---- */

void on_port(struct pub *p)
{
    struct sess *ss = p->ss;
    struct srv *srv = ss->srv;
    for (int k = 0; k < 16 && !p->dead; k++) {
        struct sockaddr_in peer, local;
        socklen_t pl = sizeof peer, ll = sizeof local;
        int fd = accept4(p->w.fd, (struct sockaddr *)&peer, &pl, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0) {
            if (errno == EMFILE || errno == ENFILE || errno == ENOBUFS || errno == ENOMEM) {
                /* Out of descriptors: a listener that stays readable would
                 * spin. Paused until a relay of this session ends
                 * (relay_free) or for a moment (ports_resume). */
                w_set(srv, &p->w, 0);
                if (!srv->ports_paused_until)
                    srv->ports_paused_until = now_ns() + 100000000ull;
            }
            return;
        }
        uid_t uid = (uid_t)-1;
        bool ok = ss->s->state == SESS_READY && !ss->dying && relays_of(ss) < MAX_RELAYS;
        if (ok && !p->any_uid)
            ok = getsockname(fd, (struct sockaddr *)&local, &ll) == 0 && peer.sin_family == AF_INET &&
                 peer_uid(&peer, &local, &uid) == 0 && uid == ss->s->uid;
        if (!ok) {
            close(fd);
            continue;
        }
        struct relay *r = fb_xcalloc(1, sizeof *r);
        r->pub = p;
        r->fd6 = -1;
        w_init(&r->w[0], W_RELAY, 0, r, fd);
        w_init(&r->w[1], W_RELAY, 1, r, -1);
        r->next = ss->relays;
        if (ss->relays)
            ss->relays->prev = r;
        ss->relays = r;
        /* With a Host allowlist the request head comes first (relay_pump). */
        r->checking = p->hosts != NULL;
        if (!r->checking && relay_ask_sockets(r) < 0) {
            relay_free(r);
            continue;
        }
        relay_interest(r);
    }
}

static void pub_close(struct pub *p)
{
    struct sess *ss = p->ss;
    for (struct relay *r = ss->relays, *nx; r; r = nx) {
        nx = r->next;
        if (r->pub == p)
            relay_free(r);
    }
    w_close(ss->srv, &p->w);
    p->dead = true;
    for (char **h = p->hosts; h && *h; h++)
        free(*h);
    free(p->hosts);
    p->hosts = NULL;
}

void ports_close(struct sess *ss)
{
    while (ss->pubs) {
        struct pub *p = ss->pubs;
        ss->pubs = p->next;
        pub_close(p);
        bury(ss->srv, GRAVE_FREE, p);
    }
}

/* A listener on 127.0.0.1:host_port (0: a free one). The fd, or -1 with e. */
static int listen_loopback(int host_port, int *bound, struct proto_err *e)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        perr_set(e, proto_errno_name(errno), "cannot open a listener: %s", strerror(errno));
        return -1;
    }
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)host_port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        int er = errno;
        close(fd);
        if (er == EADDRINUSE)
            perr_param(e, "hostPort", "127.0.0.1:%d is in use on the host", host_port);
        else if (er == EACCES)
            perr_param(e, "hostPort", "127.0.0.1:%d: only root may use ports below 1024", host_port);
        else
            perr_set(e, proto_errno_name(er), "cannot listen on 127.0.0.1:%d: %s", host_port,
                     strerror(er));
        return -1;
    }
    *bound = ntohs(sa.sin_port);
    return fd;
}

static json_t *pub_json(const struct pub *p)
{
    json_t *o = json_object();
    json_object_set_new(o, "port", json_integer(p->port));
    json_object_set_new(o, "hostPort", json_integer(p->host_port));
    json_object_set_new(o, "host", json_string("127.0.0.1"));
    json_object_set_new(o, "url", json_sprintf("http://127.0.0.1:%d/", p->host_port));
    json_object_set_new(o, "anyUid", json_boolean(p->any_uid));
    json_t *h = json_null();
    if (p->hosts) {
        h = json_array();
        for (char **x = p->hosts; *x; x++)
            json_array_append_new(h, json_string(*x));
    }
    json_object_set_new(o, "hosts", h);
    return o;
}

json_t *ports_json(struct sess *ss)
{
    json_t *a = json_array();
    for (struct pub *p = ss->pubs; p; p = p->next) {
        json_t *o = pub_json(p);
        unsigned n = 0;
        for (struct relay *r = ss->relays; r; r = r->next)
            n += r->pub == p;
        json_object_set_new(o, "connections", json_integer(n));
        if (p->hosts)
            json_object_set_new(o, "refused", json_integer((json_int_t)p->refused));
        json_array_append_new(a, o);
    }
    return a;
}

/* A publish request's "hosts": null or absent (no check), or 1 to
 * MAX_HOSTS names: a host name, an IPv4 or IPv6 address (brackets
 * optional), or "*.NAME" for every name below NAME. *out: borrowed, or
 * NULL. */
static int hosts_parse(json_t *v, const char *param, json_t **out, struct proto_err *e)
{
    *out = NULL;
    if (!v || json_is_null(v))
        return 0;
    if (!json_is_array(v) || json_array_size(v) < 1 || json_array_size(v) > MAX_HOSTS)
        return perr_param(e, param, "%s: hosts must be an array of 1 to %d host names", param,
                          MAX_HOSTS);
    size_t i;
    json_t *h;
    json_array_foreach(v, i, h)
    {
        const char *s = json_string_value(h);
        char name[HOST_MAX + 1];
        bool good = s && host_norm(s, strlen(s), name) && strcmp(name, "*");
        for (size_t k = 0; good && name[k]; k++) {
            char c = name[k];
            good = (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
                   c == '_' || c == ':' || (c == '*' && k == 0 && name[1] == '.');
        }
        if (!good)
            return perr_param(e, param, "%s: hosts: \"%.64s\" is not a host name (NAME, an "
                              "address, or *.NAME)", param, s ? s : "(not a string)");
    }
    *out = v;
    return 0;
}

/* One entry of a publish request: {port, hostPort, anyUid, hosts}, a port
 * number, or "[HOSTPORT:]PORT". *hosts: borrowed, or NULL. */
int port_spec_parse(json_t *v, const char *param, int *port, int *host_port, bool *any_uid,
                    json_t **hosts, struct proto_err *e)
{
    *host_port = 0;
    *any_uid = false;
    *hosts = NULL;
    int64_t pt = -1, hp = 0;
    if (json_is_integer(v)) {
        pt = json_integer_value(v);
    } else if (json_is_string(v)) {
        const char *s = json_string_value(v), *colon = strchr(s, ':');
        uint64_t a, b;
        char *h = colon ? fb_xstrndup(s, (size_t)(colon - s)) : NULL;
        bool good = colon ? fb_parse_u64(h, &a) == 0 && fb_parse_u64(colon + 1, &b) == 0
                          : fb_parse_u64(s, &b) == 0;
        free(h);
        if (!good || (colon && a > 65535) || b > 65535)
            return perr_param(e, param, "%s: \"%.32s\" is not [HOSTPORT:]PORT", param, s);
        hp = colon ? (int64_t)a : 0;
        pt = (int64_t)b;
    } else if (json_is_object(v)) {
        if (pget_int(v, "port", &pt, -1, 1, 65535, e) < 0 ||
            pget_int(v, "hostPort", &hp, 0, 0, 65535, e) < 0 || pget_bool(v, "anyUid", any_uid, false, e) < 0 ||
            hosts_parse(json_object_get(v, "hosts"), param, hosts, e) < 0) {
            snprintf(e->param, sizeof e->param, "%s", param);
            return -1;
        }
    }
    if (pt < 1 || pt > 65535)
        return perr_param(e, param, "%s: the port must be 1 to 65535", param);
    *port = (int)pt;
    *host_port = (int)hp;
    return 0;
}

/* Publish port of ss: the listener is opened at once; its connections are
 * taken while the session runs. The entry (existing or new) or NULL with e. */
/* The names of hosts (a checked array, or NULL) as a pub keeps them. */
static char **hosts_copy(json_t *hosts)
{
    if (!hosts)
        return NULL;
    char **v = fb_xcalloc(json_array_size(hosts) + 1, sizeof *v);
    size_t i, n = 0;
    json_t *h;
    json_array_foreach(hosts, i, h)
    {
        char name[HOST_MAX + 1];
        const char *s = json_string_value(h);
        if (host_norm(s, strlen(s), name))
            v[n++] = fb_xstrdup(name);
    }
    return v;
}

static bool hosts_equal(char **a, json_t *b)
{
    char **c = hosts_copy(b);
    bool eq = !a == !c;
    size_t i = 0;
    for (; eq && a && a[i] && c[i]; i++)
        eq = !strcmp(a[i], c[i]);
    if (eq && a)
        eq = !a[i] && !c[i];
    for (char **x = c; x && *x; x++)
        free(*x);
    free(c);
    return eq;
}

static struct pub *publish(struct sess *ss, int port, int host_port, bool any_uid, json_t *hosts,
                           struct proto_err *e)
{
    unsigned n = 0;
    for (struct pub *p = ss->pubs; p; p = p->next, n++) {
        if (p->port != port)
            continue;
        if ((host_port == 0 || host_port == p->host_port) && any_uid == p->any_uid &&
            hosts_equal(p->hosts, hosts))
            return p; /* the same request again */
        perr_param(e, "port", "port %d is published already, as 127.0.0.1:%d%s (unpublish it first)",
                   port, p->host_port, p->any_uid ? " for any uid" : "");
        return NULL;
    }
    if (n >= MAX_PUBS) {
        perr_set(e, "limit_exceeded", "at most %d published ports per session", MAX_PUBS);
        snprintf(e->limit, sizeof e->limit, "portsPerSession");
        return NULL;
    }
    int bound;
    int fd = listen_loopback(host_port, &bound, e);
    if (fd < 0)
        return NULL;
    struct pub *p = fb_xcalloc(1, sizeof *p);
    p->ss = ss;
    p->port = port;
    p->host_port = bound;
    p->any_uid = any_uid;
    p->hosts = hosts_copy(hosts);
    w_init(&p->w, W_PORT, 0, p, fd);
    /* Appended: session.info lists them in the order they were made. */
    struct pub **tail = &ss->pubs;
    while (*tail)
        tail = &(*tail)->next;
    *tail = p;
    if (ss->s->state == SESS_READY)
        w_set(ss->srv, &p->w, EPOLLIN);
    return p;
}

void ports_start(struct sess *ss)
{
    for (struct pub *p = ss->pubs; p; p = p->next)
        if (!p->dead && p->w.fd >= 0)
            w_set(ss->srv, &p->w, EPOLLIN);
}

void ports_resume(struct srv *srv)
{
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        if (!ss->dead && !ss->dying && ss->s->state == SESS_READY)
            ports_start(ss);
}

int ports_publish_all(struct sess *ss, json_t *list, struct proto_err *e)
{
    size_t i;
    json_t *v;
    json_array_foreach(list, i, v)
    {
        int port, hp;
        bool any;
        json_t *hosts;
        if (port_spec_parse(v, "publish", &port, &hp, &any, &hosts, e) < 0 ||
            !publish(ss, port, hp, any, hosts, e))
            return -1;
    }
    return 0;
}

void m_session_publish(struct conn *c, const struct method *m, json_t *id, json_t *params,
                       struct sess *ss)
{
    struct proto_err e = {0};
    int64_t port, hp;
    bool any;
    json_t *hosts;
    if (pget_int(params, "port", &port, -1, 1, 65535, &e) < 0 ||
        pget_int(params, "hostPort", &hp, 0, 0, 65535, &e) < 0 ||
        pget_bool(params, "anyUid", &any, false, &e) < 0 ||
        hosts_parse(json_object_get(params, "hosts"), "hosts", &hosts, &e) < 0)
        return send_error(c, id, &e);
    if (port < 0) {
        perr_param(&e, "port", "port is required");
        return send_error(c, id, &e);
    }
    struct pub *p = publish(ss, (int)port, (int)hp, any, hosts, &e);
    if (!p)
        return send_error(c, id, &e);
    json_t *pj = pub_json(p);
    srv_log_event(ss, "publish", json_pack("{s:i, s:i, s:b, s:O}", "port", p->port, "hostPort",
                                           p->host_port, "anyUid", p->any_uid, "hosts",
                                           json_object_get(pj, "hosts")));
    json_decref(pj);
    send_result(c, id, pub_json(p));
}

void m_session_unpublish(struct conn *c, const struct method *m, json_t *id, json_t *params,
                         struct sess *ss)
{
    struct proto_err e = {0};
    int64_t port;
    if (pget_int(params, "port", &port, -1, 1, 65535, &e) < 0)
        return send_error(c, id, &e);
    for (struct pub **pp = &ss->pubs; *pp; pp = &(*pp)->next) {
        struct pub *p = *pp;
        if (p->port != port)
            continue;
        *pp = p->next;
        srv_log_event(ss, "unpublish", json_pack("{s:i, s:i}", "port", p->port, "hostPort", p->host_port));
        pub_close(p);
        bury(ss->srv, GRAVE_FREE, p);
        return send_result(c, id, json_object());
    }
    send_errf(c, id, "not_found", "port %lld is not published in session %s", (long long)port,
              ss->s->id);
}
