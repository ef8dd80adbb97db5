/* bytes.h — byte buffers and encodings every layer uses (bytes.c): a
 * growable byte queue, base64, UTF-8 validation and repair. */
#ifndef FB_BYTES_H
#define FB_BYTES_H

#include "fb.h"

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A growable byte queue: bytes are appended at the end, consumed from off. */
struct fb_buf {
    char *data;
    size_t len; /* bytes in data, including the consumed prefix */
    size_t off; /* consumed prefix */
    size_t cap;
};
void buf_append(struct fb_buf *b, const void *p, size_t n);
static inline size_t buf_pending(const struct fb_buf *b) { return b->len - b->off; }
static inline const char *buf_head(const struct fb_buf *b) { return b->data + b->off; }
void buf_consume(struct fb_buf *b, size_t n);
void buf_reset(struct fb_buf *b);
void buf_free(struct fb_buf *b);

/* base64 (RFC 4648, with padding). */
size_t b64_encoded_len(size_t n);
size_t b64_encode(const unsigned char *in, size_t n, char *out); /* no NUL added */
/* Decodes; whitespace is not allowed. Returns bytes, or -1 if invalid. out
 * needs b64_decoded_max(n) bytes. */
ssize_t b64_decode(const char *in, size_t n, unsigned char *out);
static inline size_t b64_decoded_max(size_t n) { return n / 4 * 3 + 3; }

/* Copies in to out as valid UTF-8, replacing each invalid sequence with
 * U+FFFD. When !final, an incomplete sequence at the end is left unconsumed
 * (*consumed < n) for the next chunk. out needs 3 * n bytes. Returns the
 * number of bytes written. */
size_t utf8_repair(const unsigned char *in, size_t n, char *out, bool final, size_t *consumed);
bool utf8_valid(const unsigned char *s, size_t n);
/* Length of the valid UTF-8 sequence at s (n bytes available): >0 its
 * length, 0 a valid but incomplete prefix, -1 invalid (replace one byte). */
int utf8_seq(const unsigned char *s, size_t n);

#endif
