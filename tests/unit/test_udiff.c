/* Unit tests of the copy-on-write diff machinery (src/base/udiff.c): unified
 * hunks (exact output for small cases, and random edits checked by applying
 * the hunks with an independent applier), git blob ids, binary detection,
 * UTF-8 validation and the git binary literal. */
#include "udiff.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

static bool hunks_are(const char *a, const char *b, const char *want)
{
    struct fb_text t = {0};
    udiff_hunks(a, strlen(a), b, strlen(b), 3, &t);
    bool ok = !strcmp(t.p ? t.p : "", want);
    if (!ok)
        printf("# got:\n%s# want:\n%s", t.p ? t.p : "", want);
    text_free(&t);
    return ok;
}

/* Apply unified hunks to old; returns the new text (malloc'ed) or NULL when
 * the hunks do not fit. Independent of udiff.c on purpose. */
static char *apply(const char *old, const char *hunks)
{
    size_t nl = 0, cap = 64;
    const char **lines = malloc(cap * sizeof *lines);
    for (const char *p = old; *p;) {
        if (nl == cap)
            lines = realloc(lines, (cap *= 2) * sizeof *lines);
        lines[nl++] = p;
        const char *e = strchr(p, '\n');
        p = e ? e + 1 : p + strlen(p);
    }
    struct fb_text out = {0};
    text_add(&out, "", 0);
    size_t cur = 0; /* next old line to copy */
    const char *h = hunks;
    bool last_plus = false;
    while (*h) {
        const char *e = strchr(h, '\n');
        size_t len = e ? (size_t)(e - h) : strlen(h);
        if (!strncmp(h, "@@ -", 4)) {
            unsigned long os = strtoul(h + 4, NULL, 10);
            size_t start = os ? os - 1 : 0;
            const char *comma = memchr(h, ',', len);
            const char *sp = memchr(h + 4, ' ', len - 4);
            if (comma && comma < sp && strtoul(comma + 1, NULL, 10) == 0)
                start = os; /* empty old range names the line before */
            while (cur < start && cur < nl) {
                const char *le = strchr(lines[cur], '\n');
                text_add(&out, lines[cur], le ? (size_t)(le - lines[cur]) + 1 : strlen(lines[cur]));
                cur++;
            }
        } else if (h[0] == ' ' || h[0] == '-') {
            if (cur >= nl) {
                text_free(&out);
                free(lines);
                return NULL;
            }
            const char *le = strchr(lines[cur], '\n');
            size_t ll = le ? (size_t)(le - lines[cur]) : strlen(lines[cur]);
            if (ll != len - 1 || memcmp(lines[cur], h + 1, ll)) {
                text_free(&out);
                free(lines);
                return NULL;
            }
            if (h[0] == ' ')
                text_add(&out, lines[cur], le ? ll + 1 : ll);
            cur++;
            last_plus = false;
        } else if (h[0] == '+') {
            text_add(&out, h + 1, len - 1);
            text_add(&out, "\n", 1);
            last_plus = true;
        } else if (h[0] == '\\') {
            /* The previous line had no newline: take back the one added. */
            if (last_plus && out.len)
                out.p[--out.len] = 0;
        }
        h += len + (e ? 1 : 0);
    }
    while (cur < nl) {
        const char *le = strchr(lines[cur], '\n');
        text_add(&out, lines[cur], le ? (size_t)(le - lines[cur]) + 1 : strlen(lines[cur]));
        cur++;
    }
    free(lines);
    return out.p;
}

static unsigned rnd_state = 12345;
static unsigned rnd(unsigned n)
{
    rnd_state = rnd_state * 1103515245u + 12345u;
    return (rnd_state >> 16) % n;
}

static void random_edits(void)
{
    int bad = 0, runs = 600;
    for (int r = 0; r < runs && !bad; r++) {
        static const char *const words[] = {"a", "b", "c", "d", "", "e"};
        char old[2048] = "", new_[2048] = "";
        int n = (int)rnd(30), m = 0;
        const char *ol[64];
        for (int i = 0; i < n; i++)
            ol[i] = words[rnd(6)];
        const char *nl[128];
        for (int i = 0; i < n; i++) {
            unsigned op = rnd(10);
            if (op == 0)
                continue;                        /* delete */
            if (op == 1)
                nl[m++] = "new";                 /* insert */
            nl[m++] = op == 2 ? "changed" : ol[i];
        }
        if (rnd(3) == 0)
            nl[m++] = "tail";
        for (int i = 0; i < n; i++)
            strcat(strcat(old, ol[i]), "\n");
        for (int i = 0; i < m; i++)
            strcat(strcat(new_, nl[i]), "\n");
        if (rnd(4) == 0 && *old)
            old[strlen(old) - 1] = 0;  /* no newline at the end */
        if (rnd(4) == 0 && *new_)
            new_[strlen(new_) - 1] = 0;
        struct fb_text t = {0};
        udiff_hunks(old, strlen(old), new_, strlen(new_), 3, &t);
        char *got = apply(old, t.p ? t.p : "");
        if (!got || strcmp(got, new_)) {
            bad = 1;
            printf("# old=%s|\n# new=%s|\n# hunks:\n%s", old, new_, t.p ? t.p : "");
        }
        free(got);
        text_free(&t);
    }
    CHECK(!bad, "udiff: %d random edits: the hunks turn old into new", runs);
}

/* The length of a longest common subsequence of the lines, by the
 * textbook quadratic table: a shortest script has na + nb - 2 * LCS edits. */
static size_t lcs(const char *const *a, size_t na, const char *const *b, size_t nb)
{
    size_t *row = calloc(nb + 1, sizeof *row), *prev = calloc(nb + 1, sizeof *prev);
    for (size_t i = 1; i <= na; i++) {
        for (size_t j = 1; j <= nb; j++) {
            size_t best = prev[j] > row[j - 1] ? prev[j] : row[j - 1];
            row[j] = !strcmp(a[i - 1], b[j - 1]) ? prev[j - 1] + 1 : best;
        }
        size_t *t = prev;
        prev = row;
        row = t;
    }
    size_t n = prev[nb];
    free(row);
    free(prev);
    return n;
}

/* Random texts over small alphabets (many equal lines, the hard case):
 * the diff is a shortest one, and its hunks turn old into new. */
static void random_shortest(void)
{
    int bad = 0, runs = 3000;
    for (int r = 0; r < runs && !bad; r++) {
        static const char *const words[] = {"a", "b", "c", "d", "e", "f", "g", "h"};
        const char *ol[80], *nl[80];
        size_t n = rnd(80), m = rnd(80), alpha = 2 + rnd(7);
        char old[512] = "", new_[512] = "";
        for (size_t i = 0; i < n; i++)
            strcat(strcat(old, ol[i] = words[rnd(alpha)]), "\n");
        for (size_t j = 0; j < m; j++)
            strcat(strcat(new_, nl[j] = words[rnd(alpha)]), "\n");
        size_t add = 0, rem = 0;
        struct fb_text t = {0};
        udiff_diff(old, strlen(old), new_, strlen(new_), 3, &t, &add, &rem);
        size_t want = n + m - 2 * lcs(ol, n, nl, m);
        char *got = apply(old, t.p ? t.p : "");
        if (add + rem != want || add - rem != m - n || !got || strcmp(got, new_)) {
            bad = 1;
            printf("# old=%s|\n# new=%s|\n# +%zu -%zu, shortest %zu\n# hunks:\n%s", old, new_, add,
                   rem, want, t.p ? t.p : "");
        }
        free(got);
        text_free(&t);
    }
    CHECK(!bad, "udiff: %d random texts over small alphabets: a shortest diff, and it applies", runs);
}

/* Diff big inputs, check the hunks rebuild new from old and the counts add
 * up; returns the counts. */
static bool big_ok(const struct fb_text *a, const struct fb_text *b, size_t *add, size_t *rem)
{
    struct fb_text t = {0};
    udiff_diff(a->p ? a->p : "", a->len, b->p ? b->p : "", b->len, 3, &t, add, rem);
    char *got = apply(a->p ? a->p : "", t.p ? t.p : "");
    size_t na = 0, nb = 0;
    for (size_t i = 0; i < a->len; i++)
        na += a->p[i] == '\n';
    for (size_t i = 0; i < b->len; i++)
        nb += b->p[i] == '\n';
    bool ok = got && strlen(got) == b->len && !memcmp(got, b->p ? b->p : "", b->len) &&
              *add >= nb - (na < nb ? na : nb) && *add - *rem == nb - na;
    free(got);
    text_free(&t);
    return ok;
}

/* Inputs of the sizes that used to take minutes (a file rewritten, a huge
 * generated file): only correctness is checked here, the time is in
 * `make bench`. */
static void big_inputs(void)
{
    struct fb_text a = {0}, b = {0};
    size_t add, rem;
    text_puts(&a, "one line\n");
    for (size_t i = 0; i < 50000; i++)
        text_printf(&b, "rewritten line %zu\n", i);
    CHECK(big_ok(&a, &b, &add, &rem) && add == 50000 && rem == 1,
          "udiff: one line rewritten as 50,000 (+%zu -%zu)", add, rem);
    text_free(&a);
    text_free(&b);

    for (size_t i = 0; i < 200000; i++) {
        text_printf(&a, "line %zu\n", i);
        if (i % 3 == 0)
            text_printf(&b, "changed %zu\n", i);
        else
            text_printf(&b, "line %zu\n", i);
        if (i % 1000 == 7)
            text_puts(&b, "inserted\n");
    }
    CHECK(big_ok(&a, &b, &add, &rem) && rem == 66667 && add == 66667 + 200,
          "udiff: 200,000 lines, every third changed (+%zu -%zu)", add, rem);
    text_free(&a);
    text_free(&b);

    /* Few distinct lines in a different order: far too many edits to search
     * exhaustively, so the budget runs out; the diff must still apply. */
    for (size_t i = 0; i < 30000; i++) {
        text_printf(&a, "%zu\n", i % 7);
        text_printf(&b, "%zu\n", (i * 3 + i / 5) % 7);
    }
    CHECK(big_ok(&a, &b, &add, &rem), "udiff: 30,000 shuffled lines of 7 kinds (+%zu -%zu)", add, rem);
    text_free(&a);
    text_free(&b);

    /* A large file with a few scattered edits is still diffed exactly. */
    for (size_t i = 0; i < 100000; i++) {
        text_printf(&a, "%zu\n", i % 100);
        text_printf(&b, "%zu\n", i % 4999 == 17 ? 1000 + i : i % 100);
    }
    CHECK(big_ok(&a, &b, &add, &rem) && add == 21 && rem == 21,
          "udiff: 100,000 repetitive lines with 21 edits: exactly those (+%zu -%zu)", add, rem);
    text_free(&a);
    text_free(&b);
}

void unit_udiff(void)
{
    CHECK(hunks_are("a\nb\nc\n", "a\nb\nc\n", ""), "udiff: equal texts give no hunk");
    CHECK(hunks_are("foo\nline2\n", "bar\nline2\n", "@@ -1,2 +1,2 @@\n-foo\n+bar\n line2\n"),
          "udiff: one changed line");
    CHECK(hunks_are("", "new\n", "@@ -0,0 +1 @@\n+new\n"), "udiff: a new file");
    CHECK(hunks_are("old\n", "", "@@ -1 +0,0 @@\n-old\n"), "udiff: a deleted file");
    CHECK(hunks_are("x\ny", "x\ny\n", "@@ -1,2 +1,2 @@\n x\n-y\n\\ No newline at end of file\n+y\n"),
          "udiff: the missing final newline is marked");
    CHECK(hunks_are("1\n2\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\n15\n16\n",
                    "1\nTWO\n3\n4\n5\n6\n7\n8\n9\n10\n11\n12\n13\n14\nFIFTEEN\n16\n",
                    "@@ -1,5 +1,5 @@\n 1\n-2\n+TWO\n 3\n 4\n 5\n"
                    "@@ -12,5 +12,5 @@\n 12\n 13\n 14\n-15\n+FIFTEEN\n 16\n"),
          "udiff: distant changes are separate hunks with 3 lines of context");
    CHECK(hunks_are("1\n2\n3\n4\n5\n6\n7\n8\n", "1\nX\n3\n4\n5\n6\nY\n8\n",
                    "@@ -1,8 +1,8 @@\n 1\n-2\n+X\n 3\n 4\n 5\n 6\n-7\n+Y\n 8\n"),
          "udiff: close changes share a hunk");
    size_t add = 0, rem = 0;
    udiff_count("a\nb\nc\n", 6, "a\nc\nd\ne\n", 8, &add, &rem);
    CHECK(add == 2 && rem == 1, "udiff: line counts (+%zu -%zu)", add, rem);
    random_edits();
    random_shortest();
    big_inputs();

    char id[41];
    udiff_blob_id("hello\n", 6, id);
    CHECK(!strcmp(id, "ce013625030ba8dba906f756967f9e9ca394464a"), "udiff: git blob id of hello");
    udiff_blob_id("", 0, id);
    CHECK(!strcmp(id, "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"), "udiff: git blob id of nothing");
    char big[100000];
    memset(big, 'x', sizeof big);
    udiff_blob_id(big, sizeof big, id);
    CHECK(strlen(id) == 40, "udiff: blob id of a multi-block input");

    CHECK(udiff_is_binary("a\0b", 3) && !udiff_is_binary("text\n", 5), "udiff: binary detection");
    CHECK(udiff_utf8_valid("h\xc3\xa9", 3) && !udiff_utf8_valid("\xc3", 1) &&
              !udiff_utf8_valid("\xed\xa0\x80", 3) && !udiff_utf8_valid("\xc0\xaf", 2),
          "udiff: UTF-8 validation (truncated, surrogate, overlong)");

    struct fb_text t = {0};
    udiff_git_binary("", 0, &t);
    CHECK(t.p && !strncmp(t.p, "literal 0\n", 10) && t.p[t.len - 1] == '\n' && t.p[t.len - 2] == '\n',
          "udiff: git binary literal of an empty file");
    text_free(&t);
}
