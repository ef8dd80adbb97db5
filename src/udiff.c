/* udiff.c — line diffs and git patch encodings (see udiff.h).
 *
 * The diff is Myers' "An O(ND) Difference Algorithm and Its Variations"
 * (1986), the linear-space version: find the middle snake of the shortest
 * edit script by running the greedy search from both ends at once, then
 * recurse on the two halves. Lines are compared by a 64-bit hash first and
 * by their bytes when the hashes agree. Very large inputs skip the search
 * and become one replace-everything hunk, which is still a correct patch. */
#include "udiff.h"

#include <stdarg.h>
#include <string.h>

/* ---- buffer ---- */

void text_add(struct fb_text *b, const void *data, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1)
            cap *= 2;
        b->p = fb_xrealloc(b->p, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->p + b->len, data, n);
    b->len += n;
    b->p[b->len] = 0;
}

void text_puts(struct fb_text *b, const char *s)
{
    text_add(b, s, strlen(s));
}

void text_printf(struct fb_text *b, const char *fmt, ...)
{
    char small[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    if ((size_t)n < sizeof small) {
        text_add(b, small, (size_t)n);
        return;
    }
    char *big = fb_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(big, (size_t)n + 1, fmt, ap);
    va_end(ap);
    text_add(b, big, (size_t)n);
    free(big);
}

void text_free(struct fb_text *b)
{
    free(b->p);
    b->p = NULL;
    b->len = b->cap = 0;
}

bool udiff_is_binary(const char *data, size_t len)
{
    return memchr(data, 0, len < 8000 ? len : 8000) != NULL;
}

bool udiff_utf8_valid(const char *s, size_t n)
{
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        unsigned c = *p;
        size_t k;
        unsigned min;
        if (c < 0x80) {
            p++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            k = 1, min = 0x80, c &= 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            k = 2, min = 0x800, c &= 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            k = 3, min = 0x10000, c &= 0x07;
        } else {
            return false;
        }
        if ((size_t)(end - p) <= k)
            return false;
        for (size_t i = 1; i <= k; i++) {
            if ((p[i] & 0xc0) != 0x80)
                return false;
            c = (c << 6) | (p[i] & 0x3f);
        }
        if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
            return false;
        p += k + 1;
    }
    return true;
}

/* ---- lines ---- */

struct line {
    const char *s;
    size_t len; /* including the '\n', if any */
    uint64_t h;
};

static struct line *split_lines(const char *d, size_t n, size_t *count)
{
    size_t cap = 16, k = 0;
    struct line *v = fb_xmalloc(cap * sizeof *v);
    size_t i = 0;
    while (i < n) {
        const char *nl = memchr(d + i, '\n', n - i);
        size_t len = nl ? (size_t)(nl - (d + i)) + 1 : n - i;
        uint64_t h = 1469598103934665603ull;
        for (size_t j = 0; j < len; j++)
            h = (h ^ (unsigned char)d[i + j]) * 1099511628211ull;
        if (k == cap) {
            cap *= 2;
            v = fb_xrealloc(v, cap * sizeof *v);
        }
        v[k++] = (struct line){d + i, len, h};
        i += len;
    }
    *count = k;
    return v;
}

struct dctx {
    const struct line *a, *b;
    bool *da, *db;  /* line deleted from a / inserted in b */
    long *vf, *vb;  /* diagonals, indexed from -(N+M) */
    size_t voff;
};

static bool line_eq(const struct line *x, const struct line *y)
{
    return x->h == y->h && x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

/* The middle snake of a[a0..a1) against b[b0..b1): on return (*xs,*ys) to
 * (*xe,*ye) are offsets of a diagonal run (possibly empty) that some
 * shortest edit script passes through, splitting it in two halves. */
static void middle_snake(struct dctx *c, long a0, long a1, long b0, long b1, long *xs, long *ys,
                         long *xe, long *ye)
{
    long N = a1 - a0, M = b1 - b0, delta = N - M;
    long *vf = c->vf + c->voff, *vb = c->vb + c->voff;
    long dmax = (N + M + 1) / 2;
    vf[1] = 0;
    vb[1] = 0;
    for (long d = 0; d <= dmax; d++) {
        for (long k = -d; k <= d; k += 2) {
            long x = (k == -d || (k != d && vf[k - 1] < vf[k + 1])) ? vf[k + 1] : vf[k - 1] + 1;
            long y = x - k, sx = x, sy = y;
            while (x < N && y < M && line_eq(&c->a[a0 + x], &c->b[b0 + y]))
                x++, y++;
            vf[k] = x;
            long cb = delta - k;
            if ((delta & 1) && cb >= -(d - 1) && cb <= d - 1 && vf[k] + vb[cb] >= N) {
                *xs = sx, *ys = sy, *xe = x, *ye = y;
                return;
            }
        }
        for (long k = -d; k <= d; k += 2) {
            long x = (k == -d || (k != d && vb[k - 1] < vb[k + 1])) ? vb[k + 1] : vb[k - 1] + 1;
            long y = x - k, sx = x, sy = y;
            while (x < N && y < M && line_eq(&c->a[a0 + N - x - 1], &c->b[b0 + M - y - 1]))
                x++, y++;
            vb[k] = x;
            long kf = delta - k;
            if (!(delta & 1) && kf >= -d && kf <= d && vf[kf] + vb[k] >= N) {
                *xs = N - x, *ys = M - y, *xe = N - sx, *ye = M - sy;
                return;
            }
        }
    }
    /* Unreachable: a path of length N + M always exists. */
    *xs = *xe = N;
    *ys = *ye = M;
}

static void diff_rec(struct dctx *c, long a0, long a1, long b0, long b1)
{
    while (a0 < a1 && b0 < b1 && line_eq(&c->a[a0], &c->b[b0]))
        a0++, b0++;
    while (a0 < a1 && b0 < b1 && line_eq(&c->a[a1 - 1], &c->b[b1 - 1]))
        a1--, b1--;
    if (a0 == a1) {
        for (long j = b0; j < b1; j++)
            c->db[j] = true;
        return;
    }
    if (b0 == b1) {
        for (long i = a0; i < a1; i++)
            c->da[i] = true;
        return;
    }
    long xs, ys, xe, ye;
    middle_snake(c, a0, a1, b0, b1, &xs, &ys, &xe, &ye);
    diff_rec(c, a0, a0 + xs, b0, b0 + ys);
    diff_rec(c, a0 + xe, a1, b0 + ye, b1);
}

/* Inputs this large (in lines) are diffed as "replace everything". */
#define MAX_DIFF_LINES 400000

struct diff {
    struct line *a, *b;
    size_t na, nb;
    bool *da, *db;
};

static void diff_run(struct diff *d, const char *old, size_t olen, const char *new_, size_t nlen)
{
    d->a = split_lines(old, olen, &d->na);
    d->b = split_lines(new_, nlen, &d->nb);
    d->da = fb_xcalloc(d->na + 1, 1);
    d->db = fb_xcalloc(d->nb + 1, 1);
    if (d->na + d->nb > MAX_DIFF_LINES) {
        memset(d->da, 1, d->na);
        memset(d->db, 1, d->nb);
        return;
    }
    struct dctx c = {.a = d->a, .b = d->b, .da = d->da, .db = d->db};
    size_t span = d->na + d->nb + 2;
    c.voff = span;
    c.vf = fb_xcalloc(2 * span + 1, sizeof(long));
    c.vb = fb_xcalloc(2 * span + 1, sizeof(long));
    diff_rec(&c, 0, (long)d->na, 0, (long)d->nb);
    free(c.vf);
    free(c.vb);
}

static void diff_free(struct diff *d)
{
    free(d->a);
    free(d->b);
    free(d->da);
    free(d->db);
}

void udiff_count(const char *old, size_t olen, const char *new_, size_t nlen, size_t *added,
                 size_t *removed)
{
    struct diff d;
    diff_run(&d, old, olen, new_, nlen);
    *added = *removed = 0;
    for (size_t i = 0; i < d.na; i++)
        *removed += d.da[i];
    for (size_t j = 0; j < d.nb; j++)
        *added += d.db[j];
    diff_free(&d);
}

static void emit_line(struct fb_text *out, char tag, const struct line *l)
{
    text_add(out, &tag, 1);
    text_add(out, l->s, l->len);
    if (l->len == 0 || l->s[l->len - 1] != '\n')
        text_puts(out, "\n\\ No newline at end of file\n");
}

static void range(struct fb_text *out, size_t start, size_t count)
{
    /* An empty range names the line before it; a one-line range omits ",1". */
    if (count == 0)
        text_printf(out, "%zu,0", start);
    else if (count == 1)
        text_printf(out, "%zu", start + 1);
    else
        text_printf(out, "%zu,%zu", start + 1, count);
}

size_t udiff_hunks(const char *old, size_t olen, const char *new_, size_t nlen, int context,
                   struct fb_text *out)
{
    struct diff d;
    diff_run(&d, old, olen, new_, nlen);
    size_t nh = 0;
    size_t i = 0, j = 0;
    size_t ctx = context < 0 ? 0 : (size_t)context;
    while (i < d.na || j < d.nb) {
        /* Skip equal lines up to the next change. */
        while (i < d.na && j < d.nb && !d.da[i] && !d.db[j])
            i++, j++;
        if (i >= d.na && j >= d.nb)
            break;
        if (!(i < d.na && d.da[i]) && !(j < d.nb && d.db[j]))
            break; /* only possible at the very end; nothing left to change */
        /* A hunk starts ctx lines before this change. */
        size_t back = i < ctx ? i : ctx;
        if (j < back)
            back = j;
        size_t hi = i - back, hj = j - back;
        /* Find where it ends: after a change, ctx equal lines, unless
         * another change follows within 2*ctx equal lines. */
        size_t ei = i, ej = j;
        for (;;) {
            while ((ei < d.na && d.da[ei]) || (ej < d.nb && d.db[ej])) {
                if (ei < d.na && d.da[ei])
                    ei++;
                else
                    ej++;
            }
            size_t run = 0;
            while (ei + run < d.na && ej + run < d.nb && !d.da[ei + run] && !d.db[ej + run])
                run++;
            bool more = (ei + run < d.na && d.da[ei + run]) || (ej + run < d.nb && d.db[ej + run]);
            if (more && run <= 2 * ctx) {
                ei += run;
                ej += run;
                continue;
            }
            size_t tail = run < ctx ? run : ctx;
            ei += tail;
            ej += tail;
            break;
        }
        text_puts(out, "@@ -");
        range(out, hi, ei - hi);
        text_puts(out, " +");
        range(out, hj, ej - hj);
        text_puts(out, " @@\n");
        size_t x = hi, y = hj;
        while (x < ei || y < ej) {
            if (x < ei && d.da[x]) {
                emit_line(out, '-', &d.a[x++]);
            } else if (y < ej && d.db[y]) {
                emit_line(out, '+', &d.b[y++]);
            } else {
                emit_line(out, ' ', &d.a[x]);
                x++, y++;
            }
        }
        nh++;
        i = ei;
        j = ej;
    }
    diff_free(&d);
    return nh;
}

/* ---- SHA-1 (FIPS 180-4), for git blob ids ---- */

struct sha1 {
    uint32_t h[5];
    uint64_t total;
    unsigned char blk[64];
    size_t n;
};

static uint32_t rol(uint32_t x, int s)
{
    return (x << s) | (x >> (32 - s));
}

static void sha1_block(struct sha1 *s, const unsigned char *p)
{
    uint32_t w[80];
    for (int t = 0; t < 16; t++)
        w[t] = (uint32_t)p[4 * t] << 24 | (uint32_t)p[4 * t + 1] << 16 |
               (uint32_t)p[4 * t + 2] << 8 | p[4 * t + 3];
    for (int t = 16; t < 80; t++)
        w[t] = rol(w[t - 3] ^ w[t - 8] ^ w[t - 14] ^ w[t - 16], 1);
    uint32_t a = s->h[0], b = s->h[1], c = s->h[2], d = s->h[3], e = s->h[4];
    for (int t = 0; t < 80; t++) {
        uint32_t f, k;
        if (t < 20)
            f = (b & c) | (~b & d), k = 0x5a827999;
        else if (t < 40)
            f = b ^ c ^ d, k = 0x6ed9eba1;
        else if (t < 60)
            f = (b & c) | (b & d) | (c & d), k = 0x8f1bbcdc;
        else
            f = b ^ c ^ d, k = 0xca62c1d6;
        uint32_t tmp = rol(a, 5) + f + e + k + w[t];
        e = d, d = c, c = rol(b, 30), b = a, a = tmp;
    }
    s->h[0] += a, s->h[1] += b, s->h[2] += c, s->h[3] += d, s->h[4] += e;
}

static void sha1_init(struct sha1 *s)
{
    static const uint32_t iv[5] = {0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0};
    memcpy(s->h, iv, sizeof iv);
    s->total = 0;
    s->n = 0;
}

static void sha1_update(struct sha1 *s, const void *data, size_t len)
{
    const unsigned char *p = data;
    s->total += len;
    while (len) {
        size_t k = 64 - s->n < len ? 64 - s->n : len;
        memcpy(s->blk + s->n, p, k);
        s->n += k, p += k, len -= k;
        if (s->n == 64) {
            sha1_block(s, s->blk);
            s->n = 0;
        }
    }
}

static void sha1_final(struct sha1 *s, unsigned char out[20])
{
    uint64_t bits = s->total * 8;
    unsigned char pad = 0x80;
    sha1_update(s, &pad, 1);
    pad = 0;
    while (s->n != 56)
        sha1_update(s, &pad, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(bits >> (56 - 8 * i));
    sha1_update(s, len, 8);
    for (int i = 0; i < 5; i++) {
        out[4 * i] = (unsigned char)(s->h[i] >> 24);
        out[4 * i + 1] = (unsigned char)(s->h[i] >> 16);
        out[4 * i + 2] = (unsigned char)(s->h[i] >> 8);
        out[4 * i + 3] = (unsigned char)s->h[i];
    }
}

void udiff_blob_id(const char *data, size_t len, char hex[41])
{
    struct sha1 s;
    sha1_init(&s);
    char hdr[32];
    int n = snprintf(hdr, sizeof hdr, "blob %zu", len);
    sha1_update(&s, hdr, (size_t)n + 1); /* with the NUL */
    sha1_update(&s, data, len);
    unsigned char d[20];
    sha1_final(&s, d);
    for (int i = 0; i < 20; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
}

/* ---- git binary patches ---- */

/* A zlib stream (RFC 1950) of stored deflate blocks (RFC 1951 3.2.4): no
 * compression, so no zlib dependency; git inflates it like any other. */
static void zlib_stored(const char *data, size_t len, struct fb_text *z)
{
    static const unsigned char hdr[2] = {0x78, 0x01};
    text_add(z, hdr, 2);
    size_t off = 0;
    do {
        size_t k = len - off > 65535 ? 65535 : len - off;
        unsigned char bh[5] = {off + k >= len ? 1 : 0, (unsigned char)(k & 0xff),
                               (unsigned char)(k >> 8), (unsigned char)(~k & 0xff),
                               (unsigned char)((~k >> 8) & 0xff)};
        text_add(z, bh, 5);
        text_add(z, data + off, k);
        off += k;
    } while (off < len);
    uint32_t a = 1, b = 0;
    for (size_t i = 0; i < len; i++) {
        a = (a + (unsigned char)data[i]) % 65521;
        b = (b + a) % 65521;
    }
    uint32_t ad = b << 16 | a;
    unsigned char tail[4] = {(unsigned char)(ad >> 24), (unsigned char)(ad >> 16),
                             (unsigned char)(ad >> 8), (unsigned char)ad};
    text_add(z, tail, 4);
}

static const char b85[] = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz!#$%&()*+-;<=>?@^_`{|}~";

void udiff_git_binary(const char *data, size_t len, struct fb_text *out)
{
    struct fb_text z = {0};
    zlib_stored(data, len, &z);
    text_printf(out, "literal %zu\n", len);
    /* Lines of up to 52 bytes: a length letter, then 5 characters per 4
     * bytes (big-endian, zero-padded). */
    for (size_t off = 0; off < z.len; off += 52) {
        size_t n = z.len - off > 52 ? 52 : z.len - off;
        char lenc = n <= 26 ? (char)('A' + n - 1) : (char)('a' + n - 27);
        text_add(out, &lenc, 1);
        for (size_t i = 0; i < n; i += 4) {
            uint32_t acc = 0;
            for (size_t k = 0; k < 4; k++)
                acc = acc << 8 | (i + k < n ? (unsigned char)z.p[off + i + k] : 0);
            char enc[5];
            for (int k = 4; k >= 0; k--) {
                enc[k] = b85[acc % 85];
                acc /= 85;
            }
            text_add(out, enc, 5);
        }
        text_add(out, "\n", 1);
    }
    text_add(out, "\n", 1);
    text_free(&z);
}
