/* inspect.c — an inspected connection (docs/secrets.md): the host is one a
 * secret is bound to, or one with HTTP rules. The loop hands the
 * connection (connected upstream, its first bytes checked: the SNI or the
 * Host is the name) to a thread of its own (at most INSPECT_MAX), which
 *
 *   TLS: terminates the client's TLS with a leaf of the per-run CA, opens
 *        its own TLS upstream (verified: the host's trust store and
 *        --upstream-ca; a failure answers 502 and is logged, never passed
 *        over), ALPN http/1.1 on both ends;
 *   then reads every request of the connection in turn (keep-alive and
 *   pipelining: one at a time, in order), checks it (Host, HTTP rules,
 *   stand-ins: rules_request), writes its head out again with the secrets
 *   swapped in, passes the body on (Content-Length or chunked, re-chunked)
 *   while looking for stand-ins that must not go there, reads the
 *   response, masks any secret value in it, and logs one line;
 *   a WebSocket upgrade answered 101 becomes an opaque tunnel.
 *
 * A refused request gets a 403 whose body names the rule, the connection
 * is closed, and nothing of that request goes upstream — except, for a
 * stand-in found in a body, the part of the body before it (the request is
 * then cut off: upstream sees a reset, never the stand-in).
 *
 * The sockets stay non-blocking: reading and writing wait with poll() for
 * at most the idle timeout (--net-idle), so a client that stops mid-record
 * cannot hold a thread for ever, and a thread can look at a side without
 * waiting (an upstream that closed a kept-alive connection). Log lines and
 * counts go to the loop through a queue (the log is the loop's). */
#include "egress_int.h"

#include "http1.h"
#include "tls_ca.h"

#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>

#define IO_CHUNK (16 * 1024)
#define THREAD_STACK (256 * 1024)

/* ---- the queue of log lines ---- */

enum qtype { Q_HTTP, Q_CONN, Q_GRANT };

struct qent {
    struct qent *next;
    enum qtype type;
    char name[256], method[24], path[512], secrets[512], verdict[8], reason[512];
    unsigned port;
    int status;
    int64_t bytes_out, bytes_in, ttl_ms;
    char action[8], kind[8];
};

static void enqueue(struct fb_egress *e, struct qent *q)
{
    pthread_mutex_lock(&e->imu);
    q->next = NULL;
    *e->qtail = q;
    e->qtail = &q->next;
    pthread_mutex_unlock(&e->imu);
    uint64_t one = 1;
    if (write(e->qfd, &one, sizeof one) < 0) {
        /* the counter is far from full; nothing to do */
    }
}

void egress_queue_grant(struct fb_egress *e, const char *action, const struct fb_grant *g)
{
    struct qent *q = fb_xcalloc(1, sizeof *q);
    q->type = Q_GRANT;
    snprintf(q->action, sizeof q->action, "%s", action);
    snprintf(q->kind, sizeof q->kind, "%s",
             g->kind == FB_GRANT_ALLOW ? "allow" : g->kind == FB_GRANT_HTTP ? "http" : "secret");
    snprintf(q->reason, sizeof q->reason, "%s", g->spec); /* names and hosts, never a value */
    q->ttl_ms = g->ttl_ms;
    enqueue(e, q);
}

void egress_queue_drain(struct fb_egress *e)
{
    uint64_t v;
    if (read(e->qfd, &v, sizeof v) < 0) {
        /* EAGAIN: drained already */
    }
    pthread_mutex_lock(&e->imu);
    struct qent *q = e->qhead;
    e->qhead = NULL;
    e->qtail = &e->qhead;
    pthread_mutex_unlock(&e->imu);
    while (q) {
        struct qent *n = q->next;
        if (q->type == Q_HTTP) {
            e->sum.http_requests++;
            if (!strcmp(q->verdict, "deny"))
                e->sum.http_denied++;
            if (q->secrets[0])
                e->sum.http_injected++;
            struct audit_http r = {q->name, q->port, q->method, q->path, q->status, q->secrets,
                                   q->verdict, q->reason, q->bytes_out, q->bytes_in};
            audit_http(e->audit, &r);
        } else if (q->type == Q_CONN) {
            e->sum.bytes_out += q->bytes_out;
            e->sum.bytes_in += q->bytes_in;
            if (q->status)
                e->sum.tls_verify_failed++;
        } else {
            audit_grant(e->audit, !strcmp(q->action, "grant") ? "grant" : "revoke", q->kind,
                        q->reason, q->ttl_ms);
        }
        free(q);
        q = n;
    }
}

/* ---- I/O with a timeout on non-blocking sockets ---- */

struct sock {
    int fd;
    const uint8_t *pre; /* bytes read before the hand-over, read first */
    size_t npre;
    int timeout_ms;
    bool nowait;        /* a read that would wait says so instead */
    bool timed_out;
};

/* 1 ready, 0 timed out, -1 error. */
static int wait_fd(struct sock *s, short ev)
{
    struct pollfd p = {.fd = s->fd, .events = ev};
    for (;;) {
        int r = poll(&p, 1, s->timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r == 0)
            s->timed_out = true;
        return r;
    }
}

/* >0 bytes, 0 end of stream, -1 error (errno; EAGAIN only when nowait). */
static ssize_t sock_read(struct sock *s, void *buf, size_t cap)
{
    if (s->npre) {
        size_t n = s->npre < cap ? s->npre : cap;
        memcpy(buf, s->pre, n);
        s->pre += n;
        s->npre -= n;
        return (ssize_t)n;
    }
    for (;;) {
        ssize_t n = recv(s->fd, buf, cap, MSG_DONTWAIT);
        if (n >= 0)
            return n;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN || s->nowait)
            return -1;
        int w = wait_fd(s, POLLIN);
        if (w <= 0) {
            errno = w == 0 ? ETIMEDOUT : errno;
            return -1;
        }
    }
}

static ssize_t sock_write(struct sock *s, const void *buf, size_t n)
{
    for (;;) {
        ssize_t w = send(s->fd, buf, n, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (w >= 0)
            return w;
        if (errno == EINTR)
            continue;
        if (errno != EAGAIN)
            return -1;
        int r = wait_fd(s, POLLOUT);
        if (r <= 0) {
            errno = r == 0 ? ETIMEDOUT : errno;
            return -1;
        }
    }
}

/* An OpenSSL BIO over struct sock. */
static int bio_read(BIO *b, char *buf, int len)
{
    struct sock *s = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    ssize_t n = sock_read(s, buf, (size_t)len);
    if (n < 0 && errno == EAGAIN)
        BIO_set_retry_read(b);
    return (int)n;
}

static int bio_write(BIO *b, const char *buf, int len)
{
    struct sock *s = BIO_get_data(b);
    BIO_clear_retry_flags(b);
    return (int)sock_write(s, buf, (size_t)len);
}

static long bio_ctrl(BIO *b, int cmd, long num, void *ptr)
{
    (void)b;
    (void)num;
    (void)ptr;
    return cmd == BIO_CTRL_FLUSH ? 1 : 0;
}

static int bio_create(BIO *b)
{
    BIO_set_init(b, 1);
    return 1;
}

static pthread_once_t bio_once = PTHREAD_ONCE_INIT;
static BIO_METHOD *bio_meth;

static void bio_init(void)
{
    bio_meth = BIO_meth_new(BIO_get_new_index() | BIO_TYPE_SOURCE_SINK, "fluebox-sock");
    if (!bio_meth)
        abort(); /* out of memory */
    BIO_meth_set_read(bio_meth, bio_read);
    BIO_meth_set_write(bio_meth, bio_write);
    BIO_meth_set_ctrl(bio_meth, bio_ctrl);
    BIO_meth_set_create(bio_meth, bio_create);
}

static BIO_METHOD *bio_method(void)
{
    pthread_once(&bio_once, bio_init);
    return bio_meth;
}

/* ---- one side: a socket, maybe TLS, and what was read but not used ---- */

struct side_io {
    struct sock s;
    SSL *ssl;
    uint8_t *d;          /* read buffer */
    size_t off, len, cap;
    bool eof;
    char err[256];       /* why the last read or write failed */
};

static void ssl_why(struct side_io *x, int r)
{
    int code = SSL_get_error(x->ssl, r);
    unsigned long e = ERR_peek_last_error();
    if (x->s.timed_out)
        snprintf(x->err, sizeof x->err, "idle too long");
    else if (e)
        ERR_error_string_n(e, x->err, sizeof x->err);
    else if (code == SSL_ERROR_SYSCALL)
        snprintf(x->err, sizeof x->err, "%s", errno ? strerror(errno) : "connection closed");
    else
        snprintf(x->err, sizeof x->err, "TLS error %d", code);
    ERR_clear_error();
}

/* Read what is there (at most cap) into buf: >0, 0 end, -1 error. */
static ssize_t io_read(struct side_io *x, void *buf, size_t cap)
{
    if (!x->ssl) {
        ssize_t n = sock_read(&x->s, buf, cap);
        if (n < 0 && !(x->s.nowait && errno == EAGAIN))
            snprintf(x->err, sizeof x->err, "%s", x->s.timed_out ? "idle too long" : strerror(errno));
        return n;
    }
    size_t got = 0;
    int r = SSL_read_ex(x->ssl, buf, cap, &got);
    if (r == 1)
        return (ssize_t)got;
    int code = SSL_get_error(x->ssl, r);
    if (code == SSL_ERROR_ZERO_RETURN)
        return 0;
    if (code == SSL_ERROR_WANT_READ && x->s.nowait) {
        errno = EAGAIN;
        return -1;
    }
    if (code == SSL_ERROR_SYSCALL && !ERR_peek_error() && !x->s.timed_out && errno == 0)
        return 0; /* closed without close_notify: an end all the same */
    ssl_why(x, r);
    errno = EIO;
    return -1;
}

static int io_write(struct side_io *x, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n) {
        if (!x->ssl) {
            ssize_t w = sock_write(&x->s, p, n);
            if (w <= 0) {
                snprintf(x->err, sizeof x->err, "%s",
                         x->s.timed_out ? "idle too long" : strerror(errno));
                return -1;
            }
            p += w;
            n -= (size_t)w;
            continue;
        }
        size_t w = 0;
        int r = SSL_write_ex(x->ssl, p, n, &w);
        if (r != 1) {
            ssl_why(x, r);
            return -1;
        }
        p += w;
        n -= w;
    }
    return 0;
}

static size_t avail(const struct side_io *x) { return x->len - x->off; }
static uint8_t *at(struct side_io *x) { return x->d + x->off; }
static void consume(struct side_io *x, size_t n) { x->off += n; }

/* Read more into the buffer: >0, 0 end, -1 error. */
static ssize_t fill(struct side_io *x)
{
    if (x->off == x->len)
        x->off = x->len = 0;
    if (x->len == x->cap) {
        if (x->off) {
            memmove(x->d, x->d + x->off, x->len - x->off);
            x->len -= x->off;
            x->off = 0;
        } else {
            x->cap *= 2;
            x->d = fb_xrealloc(x->d, x->cap);
        }
    }
    ssize_t n = io_read(x, x->d + x->len, x->cap - x->len);
    if (n > 0)
        x->len += (size_t)n;
    else if (n == 0)
        x->eof = true;
    return n;
}

/* A line (chunk size, trailer) of at most 4 KiB: its length without the
 * line end into *ll, the bytes to consume into *total. 1, 0 (end), -1. */
static int read_line(struct side_io *x, size_t *ll, size_t *total)
{
    for (;;) {
        uint8_t *nl = memchr(at(x), '\n', avail(x));
        if (nl) {
            *total = (size_t)(nl - at(x)) + 1;
            *ll = *total - 1;
            if (*ll && at(x)[*ll - 1] == '\r')
                (*ll)--;
            return 1;
        }
        if (avail(x) > 4096)
            return -1;
        ssize_t n = fill(x);
        if (n <= 0)
            return n < 0 ? -1 : 0;
    }
}

/* ---- scanning a body: stand-ins (refuse) or values (mask) ---- */

struct scan {
    const uint8_t **pat;
    size_t *plen;
    size_t n, keep;  /* keep: the longest pattern - 1, held back */
    bool mask;
    uint8_t *win;
    size_t wlen, wcap;
};

static void scan_init(struct scan *sc, size_t n, bool mask)
{
    memset(sc, 0, sizeof *sc);
    sc->pat = fb_xcalloc(n + 1, sizeof *sc->pat);
    sc->plen = fb_xcalloc(n + 1, sizeof *sc->plen);
    sc->mask = mask;
}

static void scan_add(struct scan *sc, const uint8_t *p, size_t l)
{
    if (!l)
        return;
    sc->pat[sc->n] = p;
    sc->plen[sc->n++] = l;
    if (l - 1 > sc->keep)
        sc->keep = l - 1;
}

static void scan_free(struct scan *sc)
{
    if (sc->win)
        explicit_bzero(sc->win, sc->wcap);
    free(sc->win);
    free(sc->pat);
    free(sc->plen);
}

/* Append data; returns the index of a pattern found (detect mode) or -1.
 * *ready: how many bytes at the window's start may go on now. */
static int scan_feed(struct scan *sc, const uint8_t *d, size_t n, size_t *ready)
{
    if (sc->wlen + n > sc->wcap) {
        sc->wcap = sc->wlen + n + 1024;
        uint8_t *w = fb_xmalloc(sc->wcap);
        memcpy(w, sc->win, sc->wlen);
        if (sc->win)
            explicit_bzero(sc->win, sc->wlen);
        free(sc->win);
        sc->win = w;
    }
    memcpy(sc->win + sc->wlen, d, n);
    sc->wlen += n;
    for (size_t i = 0; i < sc->n; i++) {
        uint8_t *p = sc->win;
        size_t left = sc->wlen;
        uint8_t *m;
        while ((m = memmem(p, left, sc->pat[i], sc->plen[i]))) {
            if (!sc->mask)
                return (int)i;
            memset(m, '*', sc->plen[i]);
            left -= (size_t)(m - p) + sc->plen[i];
            p = m + sc->plen[i];
        }
    }
    *ready = sc->wlen > sc->keep ? sc->wlen - sc->keep : 0;
    return -1;
}

static void scan_take(struct scan *sc, size_t n)
{
    memmove(sc->win, sc->win + n, sc->wlen - n);
    sc->wlen -= n;
}

/* ---- the connection ---- */

struct insp {
    struct insp *next, *prev;
    struct fb_egress *e;
    struct side_io c, u; /* the sandbox's client, upstream */
    uint8_t *pre, *down_pre;
    size_t npre, ndown_pre;
    bool tls;
    char name[256];
    uint16_t port;
    char upstream_bad[1024]; /* upstream TLS failed: why */
    int64_t bytes_out, bytes_in;
};

static void log_req(struct insp *in, const struct http_head *h, int status, const char *secrets,
                    const char *verdict, const char *reason, int64_t out, int64_t inb)
{
    struct qent *q = fb_xcalloc(1, sizeof *q);
    q->type = Q_HTTP;
    snprintf(q->name, sizeof q->name, "%s", in->name);
    q->port = in->port;
    if (h && h->method[0]) {
        snprintf(q->method, sizeof q->method, "%s", h->method);
        if (h->target)
            http1_log_path(h->target, h->tlen, q->path, sizeof q->path);
    }
    q->status = status;
    snprintf(q->secrets, sizeof q->secrets, "%s", secrets ? secrets : "");
    snprintf(q->verdict, sizeof q->verdict, "%s", verdict);
    snprintf(q->reason, sizeof q->reason, "%s", reason ? reason : "");
    q->bytes_out = out;
    q->bytes_in = inb;
    enqueue(in->e, q);
}

/* A short answer of the relay's own to the client, then the end. */
static void answer(struct insp *in, const char *status, const char *why)
{
    char msg[1024];
    int n = snprintf(msg, sizeof msg,
                     "HTTP/1.1 %s\r\nContent-Type: text/plain\r\nConnection: close\r\n"
                     "Content-Length: %zu\r\n\r\nfluebox: %s\n",
                     status, strlen(why) + 10, why);
    if (n > 0)
        io_write(&in->c, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1);
}

/* Emit a body piece to dst: raw, or as one chunk. */
static int emit(struct side_io *dst, const uint8_t *d, size_t n, bool chunked, int64_t *count)
{
    if (!n)
        return 0;
    if (chunked) {
        char hdr[24];
        int hl = snprintf(hdr, sizeof hdr, "%zx\r\n", n);
        if (io_write(dst, hdr, (size_t)hl) < 0 || io_write(dst, d, n) < 0 ||
            io_write(dst, "\r\n", 2) < 0)
            return -1;
    } else if (io_write(dst, d, n) < 0) {
        return -1;
    }
    *count += (int64_t)n;
    return 0;
}

enum body_end { B_OK, B_SRC, B_DST, B_FOUND, B_BAD };

/* Pass a body on from src to dst: length bytes (length >= 0), chunked
 * (re-chunked, trailers passed on), or to the end of the stream (length
 * -1, not chunked). sc: detect (*found gets the pattern) or mask. */
static enum body_end pass_body(struct side_io *src, struct side_io *dst, int64_t length,
                               bool chunked, struct scan *sc, int *found, int64_t *count)
{
    size_t ready;
    uint64_t left = length >= 0 ? (uint64_t)length : UINT64_MAX;
    bool in_chunk = false;
    for (;;) {
        if (chunked && !in_chunk) {
            size_t ll, total;
            int r = read_line(src, &ll, &total);
            if (r <= 0)
                return r < 0 ? B_BAD : B_SRC;
            uint64_t size;
            if (http1_chunk_size(at(src), ll, &size) < 0)
                return B_BAD;
            consume(src, total);
            if (size == 0)
                break;
            left = size;
            in_chunk = true;
        }
        if (!chunked && length >= 0 && left == 0)
            break;
        if (!avail(src)) {
            ssize_t n = fill(src);
            if (n < 0)
                return B_SRC;
            if (n == 0) {
                if (!chunked && length < 0)
                    break; /* the end of a body that ends with the stream */
                return B_SRC;
            }
        }
        size_t n = avail(src);
        if ((uint64_t)n > left)
            n = (size_t)left;
        int f = scan_feed(sc, at(src), n, &ready);
        consume(src, n);
        left -= n;
        if (f >= 0) {
            *found = f;
            return B_FOUND;
        }
        if (emit(dst, sc->win, ready, chunked, count) < 0)
            return B_DST;
        scan_take(sc, ready);
        if (chunked && left == 0) {
            size_t ll, total;
            int r = read_line(src, &ll, &total);
            if (r <= 0 || ll != 0)
                return r < 0 || ll ? B_BAD : B_SRC;
            consume(src, total);
            in_chunk = false;
        }
    }
    if (emit(dst, sc->win, sc->wlen, chunked, count) < 0)
        return B_DST;
    scan_take(sc, sc->wlen);
    if (chunked) {
        /* The last chunk, then the trailers (checked like the body), then
         * the blank line. */
        if (io_write(dst, "0\r\n", 3) < 0)
            return B_DST;
        for (;;) {
            size_t ll, total;
            int r = read_line(src, &ll, &total);
            if (r <= 0)
                return r < 0 ? B_BAD : B_SRC;
            if (!sc->mask)
                for (size_t i = 0; i < sc->n; i++)
                    if (memmem(at(src), ll, sc->pat[i], sc->plen[i])) {
                        *found = (int)i;
                        return B_FOUND;
                    }
            if (io_write(dst, at(src), total) < 0)
                return B_DST;
            consume(src, total);
            if (ll == 0)
                break;
        }
    }
    return B_OK;
}

/* Opaque both ways after a 101, until one side ends. */
static void tunnel(struct insp *in)
{
    struct side_io *x[2] = {&in->c, &in->u};
    uint8_t buf[IO_CHUNK];
    for (int k = 0; k < 2; k++)
        if (avail(x[k])) {
            if (io_write(x[1 - k], at(x[k]), avail(x[k])) < 0)
                return;
            consume(x[k], avail(x[k]));
        }
    for (;;) {
        struct pollfd p[2] = {{.fd = in->c.s.fd, .events = POLLIN}, {.fd = in->u.s.fd, .events = POLLIN}};
        bool pend[2] = {in->c.ssl && SSL_pending(in->c.ssl) > 0, in->u.ssl && SSL_pending(in->u.ssl) > 0};
        if (!pend[0] && !pend[1]) {
            int r = poll(p, 2, in->c.s.timeout_ms);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0)
                return;
        }
        for (int k = 0; k < 2; k++) {
            if (!pend[k] && !(p[k].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            x[k]->s.nowait = true;
            ssize_t n = io_read(x[k], buf, sizeof buf);
            x[k]->s.nowait = false;
            if (n < 0 && errno == EAGAIN)
                continue;
            if (n <= 0)
                return;
            if (io_write(x[1 - k], buf, (size_t)n) < 0)
                return;
            if (k == 0)
                in->bytes_out += n;
            else
                in->bytes_in += n;
        }
    }
}

/* Wait for the client's next request; false if the connection is over
 * (the client closed or idled, or upstream closed or spoke unasked). */
static bool wait_request(struct insp *in)
{
    for (;;) {
        if (avail(&in->c) || (in->c.ssl && SSL_pending(in->c.ssl) > 0))
            return true;
        struct pollfd p[2] = {{.fd = in->c.s.fd, .events = POLLIN}, {.fd = in->u.s.fd, .events = POLLIN}};
        /* (upstream failed its handshake: only the client's request, for
         * the 502 that says why) */
        int r = poll(p, in->upstream_bad[0] ? 1 : 2, in->c.s.timeout_ms);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return false;
        if (!in->upstream_bad[0] && p[1].revents) {
            /* Upstream: a TLS record that is no data (a session ticket) is
             * fine; data or its end means the connection is done. */
            uint8_t b[256];
            in->u.s.nowait = true;
            ssize_t n = io_read(&in->u, b, sizeof b);
            in->u.s.nowait = false;
            if (!(n < 0 && errno == EAGAIN))
                return false;
        }
        if (p[0].revents)
            return true;
    }
}

/* One request and its response. false: the connection is over. */
static bool one_request(struct insp *in)
{
    struct http_head h;
    int r;
    while ((r = http1_parse_request(at(&in->c), avail(&in->c), &h)) == 0) {
        ssize_t n = fill(&in->c);
        if (n <= 0) {
            if (avail(&in->c))
                log_req(in, NULL, 0, NULL, "deny", "the client closed in the middle of a request",
                        0, 0);
            return false;
        }
    }
    char why[1200];
    if (r < 0) {
        snprintf(why, sizeof why, "not a well-formed HTTP/1.x request: %s", h.why);
        answer(in, "400 Bad Request", why);
        log_req(in, NULL, 400, NULL, "deny", why, 0, 0);
        return false;
    }
    if (in->upstream_bad[0]) {
        answer(in, "502 Bad Gateway", in->upstream_bad);
        log_req(in, &h, 502, NULL, "error", in->upstream_bad, 0, 0);
        return false;
    }
    if (h.host[0] && strcmp(h.host, in->name)) {
        snprintf(why, sizeof why, "HTTP Host %s does not match %s", h.host, in->name);
        answer(in, "403 Forbidden", why);
        log_req(in, &h, 403, NULL, "deny", why, 0, 0);
        return false;
    }
    if (h.upgrade) {
        const char *up = NULL;
        size_t ul = 0;
        for (size_t i = 0; i < h.nh; i++)
            if (h.h[i].nlen == 7 && !strncasecmp(h.h[i].name, "upgrade", 7)) {
                up = h.h[i].val;
                ul = h.h[i].vlen;
            }
        if (!up || ul != 9 || strncasecmp(up, "websocket", 9)) {
            snprintf(why, sizeof why, "an upgrade to %.*s: only WebSocket upgrades pass an "
                     "inspected host (HTTP/2 is not inspected)", (int)(ul < 40 ? ul : 40),
                     up ? up : "");
            answer(in, "403 Forbidden", why);
            log_req(in, &h, 403, NULL, "deny", why, 0, 0);
            return false;
        }
    }
    struct rules_verdict v;
    if (rules_request(in->e, in->name, in->port, &h, &v) < 0) {
        answer(in, "403 Forbidden", v.why);
        log_req(in, &h, 403, NULL, "deny", v.why, 0, 0);
        rules_verdict_free(&v);
        return false;
    }
    bool keep = true;
    int64_t out = 0, inb = 0;
    int status = 0;
    const char *verdict = "allow";
    char reason[600] = "";
    struct scan sc;
    scan_init(&sc, v.nunbound, false);
    for (size_t i = 0; i < v.nunbound; i++)
        scan_add(&sc, (const uint8_t *)v.unbound[i], strlen(v.unbound[i]));
    struct scan ms;
    scan_init(&ms, v.nvalues, true);
    for (size_t i = 0; i < v.nvalues; i++) {
        size_t vl;
        const uint8_t *val = secret_value_bytes(v.values[i], &vl);
        scan_add(&ms, val, vl);
    }
    bool has_body = h.chunked || h.content_length > 0;
    int64_t length = h.chunked ? -1 : h.content_length > 0 ? h.content_length : 0;
    consume(&in->c, h.head_len);
    if (h.expect_continue && has_body &&
        io_write(&in->c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) {
        keep = false;
        verdict = "error";
        snprintf(reason, sizeof reason, "sandbox side: %s", in->c.err);
        goto done;
    }
    if (io_write(&in->u, v.head, v.head_len) < 0) {
        answer(in, "502 Bad Gateway", "upstream closed the connection");
        keep = false;
        verdict = "error";
        snprintf(reason, sizeof reason, "upstream side: %s", in->u.err);
        goto done;
    }
    out += (int64_t)v.head_len;
    if (has_body) {
        int found = -1;
        enum body_end b = pass_body(&in->c, &in->u, length, h.chunked, &sc, &found, &out);
        if (b == B_FOUND) {
            snprintf(reason, sizeof reason,
                     "the request body carries the stand-in of secret %s, which is not bound to "
                     "%s (bodies are never rewritten: docs/secrets.md)",
                     found >= 0 && (size_t)found < v.nunbound ? v.unbound_names[found] : "?",
                     in->name);
            answer(in, "403 Forbidden", reason);
            struct linger l = {1, 0};
            setsockopt(in->u.s.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
            status = 403;
            verdict = "deny";
            keep = false;
            goto done;
        }
        if (b != B_OK) {
            keep = false;
            verdict = b == B_BAD ? "deny" : "error";
            snprintf(reason, sizeof reason, "%s",
                     b == B_BAD ? "malformed chunked request body"
                     : b == B_SRC ? "the client stopped in the middle of the body"
                                  : "upstream stopped reading the body");
            if (b != B_DST)
                answer(in, "400 Bad Request", reason);
            goto done;
        }
    }
    /* The response: interim ones (1xx) first, then the final one. */
    struct http_head rh;
    for (;;) {
        while ((r = http1_parse_response(at(&in->u), avail(&in->u), &rh)) == 0) {
            ssize_t n = fill(&in->u);
            if (n <= 0) {
                snprintf(reason, sizeof reason, "upstream %s before answering",
                         n == 0 ? "closed the connection" : in->u.err);
                answer(in, "502 Bad Gateway", reason);
                verdict = "error";
                keep = false;
                goto done;
            }
        }
        if (r < 0) {
            snprintf(reason, sizeof reason, "upstream's answer: %s", rh.why);
            answer(in, "502 Bad Gateway", reason);
            verdict = "error";
            keep = false;
            goto done;
        }
        /* A value the server echoes back is masked (same length). */
        size_t ready;
        scan_feed(&ms, at(&in->u), rh.head_len, &ready);
        int wr = io_write(&in->c, ms.win, ms.wlen);
        scan_take(&ms, ms.wlen);
        consume(&in->u, rh.head_len);
        inb += (int64_t)rh.head_len;
        if (wr < 0) {
            keep = false;
            verdict = "error";
            snprintf(reason, sizeof reason, "sandbox side: %s", in->c.err);
            goto done;
        }
        status = rh.status;
        if (rh.status >= 100 && rh.status < 200 && rh.status != 101)
            continue;
        break;
    }
    if (status == 101) {
        in->bytes_out += out;
        in->bytes_in += inb;
        log_req(in, &h, status, v.secrets, "allow", "upgraded: the rest is not inspected", out, inb);
        out = inb = 0;
        if (h.upgrade)
            tunnel(in);
        keep = false;
        goto quiet;
    }
    bool no_body = !strcmp(h.method, "HEAD") || status == 204 || status == 304;
    if (!no_body && (rh.chunked || rh.content_length != 0)) {
        int dummy = -1;
        int64_t rb = 0;
        enum body_end b = pass_body(&in->u, &in->c, rh.chunked ? -1 : rh.content_length,
                                    rh.chunked, &ms, &dummy, &rb);
        inb += rb;
        if (b != B_OK) {
            verdict = "error";
            snprintf(reason, sizeof reason, "%s",
                     b == B_DST ? "the client stopped reading the response"
                                : "upstream's response body ended early or was malformed");
            keep = false;
            goto done;
        }
        if (!rh.chunked && rh.content_length < 0)
            keep = false; /* ended with the stream */
    }
    if (h.close || rh.close)
        keep = false;
done:
    log_req(in, &h, status, verdict[0] == 'a' ? v.secrets : (status == 403 ? NULL : v.secrets),
            verdict, reason[0] ? reason : NULL, out, inb);
    in->bytes_out += out;
    in->bytes_in += inb;
quiet:
    scan_free(&sc);
    scan_free(&ms);
    rules_verdict_free(&v);
    return keep;
}

/* Both TLS handshakes. false: the connection is over. */
static bool handshakes(struct insp *in)
{
    struct fb_err err = {0};
    in->c.ssl = tls_ca_server(in->e->ca, in->name, &err);
    if (!in->c.ssl) {
        log_req(in, NULL, 0, NULL, "error", err.msg, 0, 0);
        return false;
    }
    BIO *cb = BIO_new(bio_method());
    BIO_set_data(cb, &in->c.s);
    SSL_set_bio(in->c.ssl, cb, cb);
    int r = SSL_accept(in->c.ssl);
    if (r != 1) {
        ssl_why(&in->c, r);
        char why[400];
        snprintf(why, sizeof why, "TLS with the sandbox's client failed (does it trust the "
                 "per-run CA?): %s", in->c.err);
        log_req(in, NULL, 0, NULL, "error", why, 0, 0);
        return false;
    }
    in->u.ssl = tls_ca_client(in->e->ca, in->name, &err);
    if (!in->u.ssl) {
        snprintf(in->upstream_bad, sizeof in->upstream_bad, "%s", err.msg);
        return true;
    }
    BIO *ub = BIO_new(bio_method());
    BIO_set_data(ub, &in->u.s);
    SSL_set_bio(in->u.ssl, ub, ub);
    r = SSL_connect(in->u.ssl);
    if (r != 1) {
        long vr = SSL_get_verify_result(in->u.ssl);
        ssl_why(&in->u, r);
        if (vr != X509_V_OK)
            snprintf(in->upstream_bad, sizeof in->upstream_bad,
                     "the TLS certificate of %s did not verify: %s (the relay never connects "
                     "without verifying; a private CA: --upstream-ca)",
                     in->name, X509_verify_cert_error_string(vr));
        else
            snprintf(in->upstream_bad, sizeof in->upstream_bad, "TLS with %s failed: %s",
                     in->name, in->u.err);
    }
    return true;
}

static void *insp_main(void *arg)
{
    struct insp *in = arg;
    struct fb_egress *e = in->e;
    bool ok = true;
    if (in->ndown_pre) {
        /* The proxy's "200 Connection established", before any TLS. */
        ok = sock_write(&in->c.s, in->down_pre, in->ndown_pre) == (ssize_t)in->ndown_pre;
    }
    if (ok && in->tls)
        ok = handshakes(in);
    while (ok && wait_request(in) && one_request(in))
        ;
    struct qent *q = fb_xcalloc(1, sizeof *q);
    q->type = Q_CONN;
    q->bytes_out = in->bytes_out;
    q->bytes_in = in->bytes_in;
    q->status = in->upstream_bad[0] != 0;
    enqueue(e, q);
    for (int k = 0; k < 2; k++) {
        struct side_io *x = k ? &in->u : &in->c;
        if (x->ssl) {
            SSL_shutdown(x->ssl); /* close_notify, without waiting for the answer */
            SSL_free(x->ssl);
        }
        free(x->d);
    }
    ERR_clear_error();
    free(in->pre);
    free(in->down_pre);
    pthread_mutex_lock(&e->imu);
    if (in->prev)
        in->prev->next = in->next;
    else
        e->insps = in->next;
    if (in->next)
        in->next->prev = in->prev;
    e->ninsp--;
    pthread_cond_broadcast(&e->icond);
    pthread_mutex_unlock(&e->imu);
    /* e may be gone from here on (egress_free waits only for the count). */
    close(in->c.s.fd);
    close(in->u.s.fd);
    free(in);
    return NULL;
}

void inspect_start(struct fb_egress *e, struct conn *c)
{
    pthread_mutex_lock(&e->imu);
    bool room = e->ninsp < INSPECT_MAX;
    pthread_mutex_unlock(&e->imu);
    if (!room) {
        conn_end(e, c, "deny", true, "more than %d inspected connections at once", INSPECT_MAX);
        return;
    }
    struct insp *in = fb_xcalloc(1, sizeof *in);
    in->e = e;
    in->tls = !strncmp(c->proto ? c->proto : "", "tls", 3);
    snprintf(in->name, sizeof in->name, "%s", c->name);
    in->port = c->port;
    int timeout = e->p->conn_idle_ms > 0 && e->p->conn_idle_ms < INT32_MAX ? (int)e->p->conn_idle_ms
                                                                          : -1;
    in->npre = buf_len(&c->up);
    in->pre = fb_xmalloc(in->npre + 1);
    memcpy(in->pre, c->up.d + c->up.head, in->npre);
    in->ndown_pre = buf_len(&c->down);
    in->down_pre = fb_xmalloc(in->ndown_pre + 1);
    memcpy(in->down_pre, c->down.d + c->down.head, in->ndown_pre);
    in->c.s = (struct sock){.fd = c->in.fd, .pre = in->pre, .npre = in->npre, .timeout_ms = timeout};
    in->u.s = (struct sock){.fd = c->out.fd, .timeout_ms = timeout};
    in->c.cap = in->u.cap = IO_CHUNK;
    in->c.d = fb_xmalloc(IO_CHUNK);
    in->u.d = fb_xmalloc(IO_CHUNK);
    /* The descriptors are the thread's from here. */
    struct side *s[2] = {&c->in, &c->out};
    for (int k = 0; k < 2; k++) {
        if (s[k]->reg)
            epoll_ctl(e->ep, EPOLL_CTL_DEL, s[k]->fd, NULL);
        s[k]->reg = false;
        s[k]->fd = -1;
    }
    addr_str((struct sockaddr *)&c->addr[c->iaddr], c->dst, sizeof c->dst);
    pthread_mutex_lock(&e->imu);
    in->next = e->insps;
    if (e->insps)
        e->insps->prev = in;
    e->insps = in;
    e->ninsp++;
    pthread_mutex_unlock(&e->imu);
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, THREAD_STACK);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the thread takes no signals */
    pthread_t th;
    int rc = pthread_create(&th, &attr, insp_main, in);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        pthread_mutex_lock(&e->imu);
        if (in->prev)
            in->prev->next = in->next;
        else
            e->insps = in->next;
        if (in->next)
            in->next->prev = in->prev;
        e->ninsp--;
        pthread_mutex_unlock(&e->imu);
        close(in->c.s.fd);
        close(in->u.s.fd);
        free(in->c.d);
        free(in->u.d);
        free(in->pre);
        free(in->down_pre);
        free(in);
        conn_end(e, c, "error", false, "cannot start an inspecting thread: %s", strerror(rc));
        return;
    }
    conn_end(e, c, "allow", false, "inspected: each request has its own \"http\" line");
}

void inspect_stop_all(struct fb_egress *e)
{
    if (!e->sync_init)
        return;
    pthread_mutex_lock(&e->imu);
    for (struct insp *in = e->insps; in; in = in->next) {
        /* Wakes the thread's poll; it ends and unlinks itself. */
        shutdown(in->c.s.fd, SHUT_RDWR);
        shutdown(in->u.s.fd, SHUT_RDWR);
    }
    while (e->ninsp > 0)
        pthread_cond_wait(&e->icond, &e->imu);
    pthread_mutex_unlock(&e->imu);
}
