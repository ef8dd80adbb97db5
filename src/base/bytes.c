/* bytes.c — byte buffers and encodings every layer uses (bytes.h): a
 * growable byte queue, base64 and UTF-8 validation and repair. No I/O. */
#include "bytes.h"

#include <stdint.h>
#include <string.h>

/* ---- byte queue ---- */

void buf_append(struct fb_buf *b, const void *p, size_t n)
{
    if (!n)
        return;
    if (b->off && b->off == b->len)
        b->off = b->len = 0;
    if (b->len + n > b->cap) {
        /* Reclaim the consumed prefix before growing. */
        if (b->off > 0 && b->off >= b->cap / 2) {
            memmove(b->data, b->data + b->off, b->len - b->off);
            b->len -= b->off;
            b->off = 0;
        }
        if (b->len + n > b->cap) {
            size_t c = b->cap ? b->cap : 4096;
            while (c < b->len + n)
                c *= 2;
            b->data = fb_xrealloc(b->data, c);
            b->cap = c;
        }
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
}

void buf_consume(struct fb_buf *b, size_t n)
{
    b->off += n;
    if (b->off >= b->len)
        b->off = b->len = 0;
}

void buf_reset(struct fb_buf *b)
{
    b->off = b->len = 0;
    /* Do not keep a large buffer around once it is empty. */
    if (b->cap > 65536) {
        free(b->data);
        b->data = NULL;
        b->cap = 0;
    }
}

void buf_free(struct fb_buf *b)
{
    free(b->data);
    memset(b, 0, sizeof *b);
}

/* ---- base64 ---- */

static const char b64a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

size_t b64_encoded_len(size_t n)
{
    return (n + 2) / 3 * 4;
}

size_t b64_encode(const unsigned char *in, size_t n, char *out)
{
    size_t o = 0, i = 0;
    for (; i + 3 <= n; i += 3) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8 | in[i + 2];
        out[o++] = b64a[v >> 18];
        out[o++] = b64a[(v >> 12) & 63];
        out[o++] = b64a[(v >> 6) & 63];
        out[o++] = b64a[v & 63];
    }
    if (n - i == 1) {
        uint32_t v = (uint32_t)in[i] << 16;
        out[o++] = b64a[v >> 18];
        out[o++] = b64a[(v >> 12) & 63];
        out[o++] = '=';
        out[o++] = '=';
    } else if (n - i == 2) {
        uint32_t v = (uint32_t)in[i] << 16 | (uint32_t)in[i + 1] << 8;
        out[o++] = b64a[v >> 18];
        out[o++] = b64a[(v >> 12) & 63];
        out[o++] = b64a[(v >> 6) & 63];
        out[o++] = '=';
    }
    return o;
}

/* Decoding table: 0..63, 64 = invalid. Accepts the URL-safe alphabet too. */
static unsigned char b64t[256];

static void b64_init(void)
{
    if (b64t['A'] == 0 && b64t['B'] == 1)
        return;
    memset(b64t, 64, sizeof b64t);
    for (int i = 0; i < 64; i++)
        b64t[(unsigned char)b64a[i]] = (unsigned char)i;
    b64t['-'] = 62;
    b64t['_'] = 63;
}

ssize_t b64_decode(const char *in, size_t n, unsigned char *out)
{
    b64_init();
    /* Padding is optional; "=" may only end the input. */
    while (n > 0 && in[n - 1] == '=')
        n--;
    if (n % 4 == 1)
        return -1;
    const unsigned char *s = (const unsigned char *)in;
    size_t o = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        unsigned a = b64t[s[i]], b = b64t[s[i + 1]], c = b64t[s[i + 2]], d = b64t[s[i + 3]];
        if ((a | b | c | d) & 64)
            return -1;
        uint32_t v = a << 18 | b << 12 | c << 6 | d;
        out[o++] = (unsigned char)(v >> 16);
        out[o++] = (unsigned char)(v >> 8);
        out[o++] = (unsigned char)v;
    }
    size_t rest = n - i;
    if (rest >= 2) {
        unsigned a = b64t[s[i]], b = b64t[s[i + 1]], c = rest == 3 ? b64t[s[i + 2]] : 0;
        if ((a | b | c) & 64)
            return -1;
        uint32_t v = a << 18 | b << 12 | c << 6;
        out[o++] = (unsigned char)(v >> 16);
        if (rest == 3)
            out[o++] = (unsigned char)(v >> 8);
    }
    return (ssize_t)o;
}

/* ---- UTF-8 ---- */

/* Length of the valid sequence at s (n bytes available): >0 valid length,
 * 0 a valid but incomplete prefix, -1 invalid (replace one byte). */
int utf8_seq(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    if (c < 0x80)
        return 1;
    int len;
    unsigned char lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF)
        len = 2;
    else if (c == 0xE0) {
        len = 3;
        lo = 0xA0;
    } else if ((c >= 0xE1 && c <= 0xEC) || c == 0xEE || c == 0xEF)
        len = 3;
    else if (c == 0xED) {
        len = 3;
        hi = 0x9F; /* no surrogates */
    } else if (c == 0xF0) {
        len = 4;
        lo = 0x90;
    } else if (c >= 0xF1 && c <= 0xF3)
        len = 4;
    else if (c == 0xF4) {
        len = 4;
        hi = 0x8F;
    } else
        return -1;
    for (int i = 1; i < len; i++) {
        if ((size_t)i >= n)
            return 0;
        unsigned char lo_i = i == 1 ? lo : 0x80, hi_i = i == 1 ? hi : 0xBF;
        if (s[i] < lo_i || s[i] > hi_i)
            return -1;
    }
    return len;
}

size_t utf8_repair(const unsigned char *in, size_t n, char *out, bool final, size_t *consumed)
{
    size_t i = 0, o = 0;
    while (i < n) {
        int l = utf8_seq(in + i, n - i);
        if (l > 0) {
            memcpy(out + o, in + i, (size_t)l);
            o += (size_t)l;
            i += (size_t)l;
            continue;
        }
        if (l == 0 && !final)
            break; /* incomplete at the end: wait for more */
        out[o++] = (char)0xEF;
        out[o++] = (char)0xBF;
        out[o++] = (char)0xBD;
        i++;
        /* An incomplete-but-valid prefix at the very end (final) becomes one
         * U+FFFD for its first byte and then its continuation bytes are
         * invalid on their own: consistent with WHATWG "maximal subpart"
         * closely enough for our purposes. */
    }
    *consumed = i;
    return o;
}

bool utf8_valid(const unsigned char *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        int l = utf8_seq(s + i, n - i);
        if (l <= 0)
            return false;
        i += (size_t)l;
    }
    return true;
}
