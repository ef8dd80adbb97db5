/* insp_io.h — the I/O of an inspected connection (insp_io.c): a
 * non-blocking socket read and written with poll() waits bounded by the
 * idle timeout (optionally "do not wait"), an OpenSSL BIO over it, one side
 * of a connection (socket, TLS, read buffer), and a scanner that finds
 * stand-ins (or masks values) in a stream that arrives in pieces. */
#ifndef FB_INSP_IO_H
#define FB_INSP_IO_H

#include "fb.h"

#include <openssl/ssl.h>

struct sock {
    int fd;
    const uint8_t *pre; /* bytes read before the hand-over, read first */
    size_t npre;
    int timeout_ms;
    bool nowait;        /* a read that would wait says so instead */
    bool timed_out;
};

/* >0 bytes written, -1 error (errno; ETIMEDOUT after the timeout). */
ssize_t sock_write(struct sock *s, const void *buf, size_t n);
/* The BIO method over struct sock (BIO_set_data). */
BIO_METHOD *bio_method(void);

/* ---- one side: a socket, maybe TLS, and what was read but not used ---- */

struct side_io {
    struct sock s;
    SSL *ssl;
    uint8_t *d;          /* read buffer */
    size_t off, len, cap;
    bool eof;
    char err[256];       /* why the last read or write failed */
};

/* x->err from the failed TLS call that returned r. */
void ssl_why(struct side_io *x, int r);
/* Read what is there (at most cap): >0, 0 end, -1 error (errno EAGAIN:
 * nothing, with s.nowait). */
ssize_t io_read(struct side_io *x, void *buf, size_t cap);
/* All of it, or -1 (x->err). */
int io_write(struct side_io *x, const void *buf, size_t n);
static inline size_t avail(const struct side_io *x) { return x->len - x->off; }
static inline uint8_t *at(struct side_io *x) { return x->d + x->off; }
static inline void consume(struct side_io *x, size_t n) { x->off += n; }
/* Read more into the buffer: >0, 0 end, -1 error. */
ssize_t fill(struct side_io *x);
/* A line of at most 4 KiB at the buffer's start: its length without the
 * line end (*ll), the bytes it takes (*total). 1, 0 (end), -1. */
int read_line(struct side_io *x, size_t *ll, size_t *total);

/* ---- scanning a stream for patterns ---- */

struct scan {
    const uint8_t **pat;
    size_t *plen;
    size_t n, keep;  /* keep: the longest pattern - 1, held back */
    bool mask;
    uint8_t *win;
    size_t wlen, wcap;
};

/* mask: overwrite matches with '*' (values in responses); else report the
 * first pattern found (stand-ins in request bodies). Patterns are
 * borrowed. */
void scan_init(struct scan *sc, size_t n, bool mask);
void scan_add(struct scan *sc, const uint8_t *p, size_t l);
void scan_free(struct scan *sc);
/* Append n bytes to the window: the index of a pattern found (detect) or
 * -1; *ready: how many bytes at the window's start may go on now (the rest
 * could be the start of a pattern). */
int scan_feed(struct scan *sc, const uint8_t *d, size_t n, size_t *ready);
/* Drop n bytes from the window's start (sent on). */
void scan_take(struct scan *sc, size_t n);

#endif
