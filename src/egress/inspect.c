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
#include "insp_io.h"
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
        if (avail(&in->c) || in->c.s.npre || (in->c.ssl && SSL_pending(in->c.ssl) > 0))
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

/* What happened to one request, for its log line. */
struct outcome {
    int64_t out, inb;
    int status;
    const char *verdict;
    char reason[600];
    bool keep;
};

static void failed(struct outcome *o, const char *verdict, const char *fmt, const char *arg)
{
    o->verdict = verdict;
    o->keep = false;
    snprintf(o->reason, sizeof o->reason, fmt, arg);
}

/* Read and check the next request head: 1 go on (h filled, *v the rules'
 * verdict), 0 the connection is over (answered and logged). */
static int take_request(struct insp *in, struct http_head *h, struct rules_verdict *v)
{
    int r;
    while ((r = http1_parse_request(at(&in->c), avail(&in->c), h)) == 0) {
        if (fill(&in->c) <= 0) {
            if (avail(&in->c))
                log_req(in, NULL, 0, NULL, "deny", "the client closed in the middle of a request",
                        0, 0);
            return 0;
        }
    }
    char why[1200];
    const char *status = "403 Forbidden";
    if (r < 0) {
        snprintf(why, sizeof why, "not a well-formed HTTP/1.x request: %s", h->why);
        answer(in, "400 Bad Request", why);
        log_req(in, NULL, 400, NULL, "deny", why, 0, 0);
        return 0;
    }
    why[0] = 0;
    const char *up = NULL;
    size_t ul = 0;
    for (size_t i = 0; h->upgrade && i < h->nh; i++)
        if (h->h[i].nlen == 7 && !strncasecmp(h->h[i].name, "upgrade", 7)) {
            up = h->h[i].val;
            ul = h->h[i].vlen;
        }
    if (in->upstream_bad[0]) {
        snprintf(why, sizeof why, "%s", in->upstream_bad);
        status = "502 Bad Gateway";
    } else if (h->host[0] && strcmp(h->host, in->name)) {
        snprintf(why, sizeof why, "HTTP Host %s does not match %s", h->host, in->name);
    } else if (h->upgrade && (!up || ul != 9 || strncasecmp(up, "websocket", 9))) {
        snprintf(why, sizeof why, "an upgrade to %.*s: only WebSocket upgrades pass an "
                 "inspected host (HTTP/2 is not inspected)", (int)(ul < 40 ? ul : 40), up ? up : "");
    } else if (rules_request(in->e, in->name, in->port, h, v) < 0) {
        snprintf(why, sizeof why, "%s", v->why);
        rules_verdict_free(v);
    } else {
        return 1;
    }
    answer(in, status, why);
    log_req(in, h, atoi(status), NULL, status[0] == '5' ? "error" : "deny", why, 0, 0);
    return 0;
}

/* The head as rewritten, then the body (checked for stand-ins). */
static bool send_request(struct insp *in, const struct http_head *h,
                         const struct rules_verdict *v, struct scan *sc, struct outcome *o)
{
    bool has_body = h->chunked || h->content_length > 0;
    if (h->expect_continue && has_body &&
        io_write(&in->c, "HTTP/1.1 100 Continue\r\n\r\n", 25) < 0) {
        failed(o, "error", "sandbox side: %s", in->c.err);
        return false;
    }
    if (io_write(&in->u, v->head, v->head_len) < 0) {
        answer(in, "502 Bad Gateway", "upstream closed the connection");
        failed(o, "error", "upstream side: %s", in->u.err);
        return false;
    }
    o->out += (int64_t)v->head_len;
    if (!has_body)
        return true;
    int found = -1;
    enum body_end b = pass_body(&in->c, &in->u, h->chunked ? -1 : h->content_length, h->chunked,
                                sc, &found, &o->out);
    if (b == B_FOUND) {
        snprintf(o->reason, sizeof o->reason,
                 "the request body carries the stand-in of secret %s, which is not bound to %s "
                 "(bodies are never rewritten: docs/secrets.md)",
                 found >= 0 && (size_t)found < v->nunbound ? v->unbound_names[found] : "?",
                 in->name);
        answer(in, "403 Forbidden", o->reason);
        /* Upstream gets a reset, not the end of a request. */
        struct linger l = {1, 0};
        setsockopt(in->u.s.fd, SOL_SOCKET, SO_LINGER, &l, sizeof l);
        o->status = 403;
        o->verdict = "deny";
        o->keep = false;
        return false;
    }
    if (b == B_OK)
        return true;
    failed(o, b == B_BAD ? "deny" : "error", "%s",
           b == B_BAD ? "malformed chunked request body"
           : b == B_SRC ? "the client stopped in the middle of the body"
                        : "upstream stopped reading the body");
    if (b != B_DST)
        answer(in, "400 Bad Request", o->reason);
    return false;
}

/* The response: interim heads (1xx) passed on, the final head, its body;
 * any value upstream echoes is masked (ms). false: the connection is over
 * (or upgraded: *switched). */
static bool pass_response(struct insp *in, const struct http_head *h, struct scan *ms,
                          struct outcome *o)
{
    struct http_head rh;
    int r;
    for (;;) {
        while ((r = http1_parse_response(at(&in->u), avail(&in->u), &rh)) == 0) {
            ssize_t n = fill(&in->u);
            if (n <= 0) {
                failed(o, "error", "upstream %s before answering",
                       n == 0 ? "closed the connection" : in->u.err);
                answer(in, "502 Bad Gateway", o->reason);
                return false;
            }
        }
        if (r < 0) {
            failed(o, "error", "upstream's answer: %s", rh.why);
            answer(in, "502 Bad Gateway", o->reason);
            return false;
        }
        size_t ready;
        scan_feed(ms, at(&in->u), rh.head_len, &ready);
        int wr = io_write(&in->c, ms->win, ms->wlen);
        scan_take(ms, ms->wlen);
        consume(&in->u, rh.head_len);
        o->inb += (int64_t)rh.head_len;
        if (wr < 0) {
            failed(o, "error", "sandbox side: %s", in->c.err);
            return false;
        }
        o->status = rh.status;
        if (rh.status < 100 || rh.status >= 200 || rh.status == 101)
            break;
    }
    if (o->status == 101)
        return false;
    bool no_body = !strcmp(h->method, "HEAD") || o->status == 204 || o->status == 304;
    if (!no_body && (rh.chunked || rh.content_length != 0)) {
        int unused = -1;
        enum body_end b = pass_body(&in->u, &in->c, rh.chunked ? -1 : rh.content_length,
                                    rh.chunked, ms, &unused, &o->inb);
        if (b != B_OK) {
            failed(o, "error", "%s",
                   b == B_DST ? "the client stopped reading the response"
                              : "upstream's response body ended early or was malformed");
            return false;
        }
        if (!rh.chunked && rh.content_length < 0)
            return false; /* it ended with the stream */
    }
    return !(h->close || rh.close);
}

/* One request and its response. false: the connection is over. */
static bool one_request(struct insp *in)
{
    struct http_head h;
    struct rules_verdict v;
    if (!take_request(in, &h, &v))
        return false;
    struct outcome o = {.verdict = "allow", .keep = true};
    struct scan sc, ms;
    scan_init(&sc, v.nunbound, false);
    for (size_t i = 0; i < v.nunbound; i++)
        scan_add(&sc, (const uint8_t *)v.unbound[i], strlen(v.unbound[i]));
    scan_init(&ms, v.nvalues, true);
    for (size_t i = 0; i < v.nvalues; i++) {
        size_t vl;
        const uint8_t *val = secret_value_bytes(v.values[i], &vl);
        scan_add(&ms, val, vl);
    }
    consume(&in->c, h.head_len);
    if (send_request(in, &h, &v, &sc, &o))
        o.keep = pass_response(in, &h, &ms, &o);
    bool upgraded = o.status == 101 && !strcmp(o.verdict, "allow");
    log_req(in, &h, o.status, o.status == 403 ? NULL : v.secrets, o.verdict,
            upgraded ? "upgraded: the rest is not inspected" : o.reason[0] ? o.reason : NULL,
            o.out, o.inb);
    in->bytes_out += o.out;
    in->bytes_in += o.inb;
    scan_free(&sc);
    scan_free(&ms);
    rules_verdict_free(&v);
    if (upgraded && h.upgrade)
        tunnel(in);
    return o.keep && !upgraded;
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

/* in leaves the relay's list of inspected connections (under imu); whoever
 * waits for the count (egress_free) is woken. */
static void insp_unlink(struct fb_egress *e, struct insp *in)
{
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
    insp_unlink(e, in);
    /* e may be gone from here on (egress_free waits only for the count). */
    close(in->c.s.fd);
    close(in->u.s.fd);
    free(in);
    return NULL;
}

void inspect_start(struct fb_egress *e, struct conn *c)
{
    if (!e->ca) {
        /* Fail closed: the rules cannot be kept without reading the requests. */
        conn_end(e, c, "deny", true, "%s needs inspection, and this sandbox has no per-run CA",
                 c->name);
        return;
    }
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
        insp_unlink(e, in);
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
