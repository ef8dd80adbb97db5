/* udiff.c — line diffs and git patch encodings (see udiff.h).
 *
 * The diff is Myers' "An O(ND) Difference Algorithm and Its Variations"
 * (1986), the linear-space version: find a point on a shortest edit script
 * by running the greedy search from both ends at once, then recurse on the
 * two halves. Before the search, the common first and last lines are taken
 * off and every line is numbered by its content (a hash table, bytes
 * compared on equal hashes); lines that only one side has are edits in any
 * case and never enter the search, so a file rewritten from scratch costs
 * linear time. The search itself is O((N+M)D) for D edits, which is
 * quadratic for large, very different inputs: it has a budget of work, and
 * what it has not solved when the budget runs out is replaced whole (still
 * a correct diff, only not the shortest). */
#include "udiff.h"

#include <limits.h>
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

static bool line_eq(const struct line *x, const struct line *y)
{
    return x->h == y->h && x->len == y->len && memcmp(x->s, y->s, x->len) == 0;
}

/* ---- the search ---- */

/* The search works on the lines as class numbers (equal lines, equal
 * numbers). It may spend DIFF_UNITS_PER_LINE work units (a diagonal
 * visited, a line pair compared) per line it is given, at least
 * DIFF_UNITS_MIN; what is still unsolved when they run out is replaced
 * whole, which is a correct if larger diff. So a diff's time is linear in
 * its input (a unit is a few ns), and any script of up to about a thousand
 * edits, or of a few percent of the lines of a large file, is still found
 * exactly. */
#define DIFF_UNITS_PER_LINE 512L
#define DIFF_UNITS_MIN (1L << 20)
/* More lines than this (both sides, after the common start and end) are not
 * searched at all. */
#define MAX_DIFF_LINES 4000000

struct dctx {
    const uint32_t *a, *b;
    bool *da, *db;  /* a[i] deleted / b[j] inserted */
    long *kf, *kb;  /* furthest x per diagonal (x - y), forward and backward,
                       indexed from -(M + 1) */
    long budget;
};

/* Find a point (*sx, *sy) that some shortest edit script of a[a0..a1)
 * against b[b0..b1) passes through, by Myers' greedy search run from both
 * ends at once until the two meet. The diagonals searched are kept inside
 * the rectangle (the one beyond each end is a sentinel). The inputs differ
 * in their first and last lines, so the script has at least two edits and
 * the point splits it into two strictly shorter ones. Returns false when
 * the budget ran out first. */
static bool split(struct dctx *c, long a0, long a1, long b0, long b1, long *sx, long *sy)
{
    long *kf = c->kf, *kb = c->kb;
    long dmin = a0 - b1, dmax = a1 - b0;
    long fmid = a0 - b0, bmid = a1 - b1;
    bool odd = (fmid - bmid) & 1;
    long fmin = fmid, fmax = fmid, bmin = bmid, bmax = bmid;
    kf[fmid] = a0;
    kb[bmid] = a1;
    while (c->budget >= 0) {
        /* One more edit forward: the range of diagonals grows by one at
         * each end, or shrinks where it reached the rectangle's corner. */
        if (fmin > dmin)
            kf[--fmin - 1] = -1;
        else
            fmin++;
        if (fmax < dmax)
            kf[++fmax + 1] = -1;
        else
            fmax--;
        for (long k = fmax; k >= fmin; k -= 2) {
            long x = kf[k - 1] >= kf[k + 1] ? kf[k - 1] + 1 : kf[k + 1];
            long y = x - k, x0 = x;
            while (x < a1 && y < b1 && c->a[x] == c->b[y])
                x++, y++;
            c->budget -= 1 + (x - x0);
            kf[k] = x;
            if (odd && k >= bmin && k <= bmax && kb[k] <= x) {
                *sx = x, *sy = y;
                return true;
            }
        }
        /* One more edit backward, from the end. */
        if (bmin > dmin)
            kb[--bmin - 1] = LONG_MAX;
        else
            bmin++;
        if (bmax < dmax)
            kb[++bmax + 1] = LONG_MAX;
        else
            bmax--;
        for (long k = bmax; k >= bmin; k -= 2) {
            long x = kb[k - 1] < kb[k + 1] ? kb[k - 1] : kb[k + 1] - 1;
            long y = x - k, x0 = x;
            while (x > a0 && y > b0 && c->a[x - 1] == c->b[y - 1])
                x--, y--;
            c->budget -= 1 + (x0 - x);
            kb[k] = x;
            if (!odd && k >= fmin && k <= fmax && x <= kf[k]) {
                *sx = x, *sy = y;
                return true;
            }
        }
    }
    return false;
}

static void diff_rec(struct dctx *c, long a0, long a1, long b0, long b1)
{
    for (;;) {
        while (a0 < a1 && b0 < b1 && c->a[a0] == c->b[b0])
            a0++, b0++;
        while (a0 < a1 && b0 < b1 && c->a[a1 - 1] == c->b[b1 - 1])
            a1--, b1--;
        long x, y;
        if (a0 == a1 || b0 == b1 || !split(c, a0, a1, b0, b1, &x, &y)) {
            /* One side is used up, or the budget is: the rest is replaced. */
            for (long i = a0; i < a1; i++)
                c->da[i] = true;
            for (long j = b0; j < b1; j++)
                c->db[j] = true;
            return;
        }
        /* Recurse on the first half, loop on the second: the depth stays
         * logarithmic in the number of edits. */
        diff_rec(c, a0, x, b0, y);
        a0 = x, b0 = y;
    }
}

/* Lines to classes: an open-addressing table of the distinct lines (slot:
 * class + 1), and per class whether each side has it. */
struct classes {
    const struct line **rep; /* a line of each class */
    uint8_t *sides;          /* bit 1: in a, bit 2: in b */
    uint32_t *slot;
    size_t cap, n;
};

static uint32_t class_of(struct classes *t, const struct line *l, uint8_t side)
{
    size_t k = (size_t)(l->h ^ (l->h >> 29)) & (t->cap - 1);
    for (;; k = (k + 1) & (t->cap - 1)) {
        uint32_t s = t->slot[k];
        if (!s) {
            t->rep[t->n] = l;
            t->sides[t->n] = side;
            t->slot[k] = (uint32_t)++t->n;
            return (uint32_t)(t->n - 1);
        }
        if (line_eq(t->rep[s - 1], l)) {
            t->sides[s - 1] |= side;
            return s - 1;
        }
    }
}

struct diff {
    struct line *a, *b;
    size_t na, nb;
    bool *da, *db;
};

/* Search a[p..p+ma) against b[p..p+mb): lines that the other side does not
 * have at all are edits in every script, so they are marked at once and
 * left out of the search (which keeps it exact: they are in no common
 * subsequence); the rest is searched as class numbers. */
static void diff_middle(struct diff *d, size_t p, size_t ma, size_t mb)
{
    struct classes t = {0};
    t.cap = 64;
    while (t.cap < 2 * (ma + mb))
        t.cap *= 2;
    t.slot = fb_xcalloc(t.cap, sizeof *t.slot);
    t.rep = fb_xmalloc((ma + mb) * sizeof *t.rep);
    t.sides = fb_xmalloc(ma + mb);
    uint32_t *ca = fb_xmalloc((ma + 1) * sizeof *ca), *cb = fb_xmalloc((mb + 1) * sizeof *cb);
    for (size_t i = 0; i < ma; i++)
        ca[i] = class_of(&t, &d->a[p + i], 1);
    for (size_t j = 0; j < mb; j++)
        cb[j] = class_of(&t, &d->b[p + j], 2);
    /* Keep the lines both sides have, remembering where they came from. */
    size_t *ia = fb_xmalloc((ma + 1) * sizeof *ia), *ib = fb_xmalloc((mb + 1) * sizeof *ib);
    size_t ra = 0, rb = 0;
    for (size_t i = 0; i < ma; i++) {
        if (t.sides[ca[i]] == 3)
            ca[ra] = ca[i], ia[ra++] = p + i;
        else
            d->da[p + i] = true;
    }
    for (size_t j = 0; j < mb; j++) {
        if (t.sides[cb[j]] == 3)
            cb[rb] = cb[j], ib[rb++] = p + j;
        else
            d->db[p + j] = true;
    }
    free(t.slot);
    free(t.rep);
    free(t.sides);
    long budget = DIFF_UNITS_PER_LINE * (long)(ma + mb);
    struct dctx c = {.a = ca, .b = cb, .budget = budget > DIFF_UNITS_MIN ? budget : DIFF_UNITS_MIN};
    c.da = fb_xcalloc(ra + 1, sizeof *c.da);
    c.db = fb_xcalloc(rb + 1, sizeof *c.db);
    size_t span = ra + rb + 3;
    c.kf = fb_xmalloc(span * sizeof *c.kf);
    c.kb = fb_xmalloc(span * sizeof *c.kb);
    c.kf += rb + 1;
    c.kb += rb + 1;
    diff_rec(&c, 0, (long)ra, 0, (long)rb);
    for (size_t i = 0; i < ra; i++)
        d->da[ia[i]] = c.da[i];
    for (size_t j = 0; j < rb; j++)
        d->db[ib[j]] = c.db[j];
    free(c.kf - (rb + 1));
    free(c.kb - (rb + 1));
    free(c.da);
    free(c.db);
    free(ca);
    free(cb);
    free(ia);
    free(ib);
}

static void diff_run(struct diff *d, const char *old, size_t olen, const char *new_, size_t nlen)
{
    d->a = split_lines(old, olen, &d->na);
    d->b = split_lines(new_, nlen, &d->nb);
    d->da = fb_xcalloc(d->na + 1, 1);
    d->db = fb_xcalloc(d->nb + 1, 1);
    /* The common start and end are no edits. */
    size_t p = 0, s = 0;
    while (p < d->na && p < d->nb && line_eq(&d->a[p], &d->b[p]))
        p++;
    while (s < d->na - p && s < d->nb - p && line_eq(&d->a[d->na - 1 - s], &d->b[d->nb - 1 - s]))
        s++;
    size_t ma = d->na - p - s, mb = d->nb - p - s;
    if (ma == 0 || mb == 0 || ma + mb > MAX_DIFF_LINES) {
        memset(d->da + p, 1, ma);
        memset(d->db + p, 1, mb);
        return;
    }
    diff_middle(d, p, ma, mb);
}

static void diff_free(struct diff *d)
{
    free(d->a);
    free(d->b);
    free(d->da);
    free(d->db);
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

static size_t emit_hunks(const struct diff *dp, int context, struct fb_text *out)
{
    const struct diff d = *dp;
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
    return nh;
}

size_t udiff_diff(const char *old, size_t olen, const char *new_, size_t nlen, int context,
                  struct fb_text *out, size_t *added, size_t *removed)
{
    struct diff d;
    diff_run(&d, old, olen, new_, nlen);
    size_t nh = out ? emit_hunks(&d, context, out) : 0;
    if (added) {
        *added = 0;
        for (size_t j = 0; j < d.nb; j++)
            *added += d.db[j];
    }
    if (removed) {
        *removed = 0;
        for (size_t i = 0; i < d.na; i++)
            *removed += d.da[i];
    }
    diff_free(&d);
    return nh;
}

size_t udiff_hunks(const char *old, size_t olen, const char *new_, size_t nlen, int context,
                   struct fb_text *out)
{
    return udiff_diff(old, olen, new_, nlen, context, out, NULL, NULL);
}

void udiff_count(const char *old, size_t olen, const char *new_, size_t nlen, size_t *added,
                 size_t *removed)
{
    udiff_diff(old, olen, new_, nlen, 0, NULL, added, removed);
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
