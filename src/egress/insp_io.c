/* insp_io.c — the I/O of an inspected connection (see insp_io.h). */
#include "insp_io.h"

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <openssl/err.h>

/* ---- I/O with a timeout on non-blocking sockets ---- */


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

ssize_t sock_write(struct sock *s, const void *buf, size_t n)
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

BIO_METHOD *bio_method(void)
{
    pthread_once(&bio_once, bio_init);
    return bio_meth;
}

/* ---- one side: a socket, maybe TLS, and what was read but not used ---- */


void ssl_why(struct side_io *x, int r)
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
ssize_t io_read(struct side_io *x, void *buf, size_t cap)
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

int io_write(struct side_io *x, const void *buf, size_t n)
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


/* Read more into the buffer: >0, 0 end, -1 error. */
ssize_t fill(struct side_io *x)
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
int read_line(struct side_io *x, size_t *ll, size_t *total)
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


void scan_init(struct scan *sc, size_t n, bool mask)
{
    memset(sc, 0, sizeof *sc);
    sc->pat = fb_xcalloc(n + 1, sizeof *sc->pat);
    sc->plen = fb_xcalloc(n + 1, sizeof *sc->plen);
    sc->mask = mask;
}

void scan_add(struct scan *sc, const uint8_t *p, size_t l)
{
    if (!l)
        return;
    sc->pat[sc->n] = p;
    sc->plen[sc->n++] = l;
    if (l - 1 > sc->keep)
        sc->keep = l - 1;
}

void scan_free(struct scan *sc)
{
    if (sc->win)
        explicit_bzero(sc->win, sc->wcap);
    free(sc->win);
    free(sc->pat);
    free(sc->plen);
}

/* Append data; returns the index of a pattern found (detect mode) or -1.
 * *ready: how many bytes at the window's start may go on now. */
int scan_feed(struct scan *sc, const uint8_t *d, size_t n, size_t *ready)
{
    *ready = 0;
    if (!n && !sc->wlen)
        return -1;
    if (sc->wlen + n > sc->wcap) {
        sc->wcap = sc->wlen + n + 1024;
        uint8_t *w = fb_xmalloc(sc->wcap);
        if (sc->win) {
            memcpy(w, sc->win, sc->wlen);
            explicit_bzero(sc->win, sc->wlen);
        }
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

void scan_take(struct scan *sc, size_t n)
{
    if (!n)
        return;
    memmove(sc->win, sc->win + n, sc->wlen - n);
    sc->wlen -= n;
}

