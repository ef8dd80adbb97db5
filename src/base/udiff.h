/* udiff.h — the text machinery behind workspace changes: a line diff
 * (Myers' O(ND) algorithm in linear space, with a bounded cost) rendered as unified-diff hunks,
 * and the pieces of git's patch format that a `git apply` of binary files
 * needs (blob SHA-1, base85, a zlib stream). Pure functions over buffers;
 * nothing here touches the filesystem. */
#ifndef FB_UDIFF_H
#define FB_UDIFF_H

#include "fb.h"

/* A growable byte buffer. */
struct fb_text {
    char *p;
    size_t len, cap;
};
void text_add(struct fb_text *b, const void *data, size_t n);
void text_puts(struct fb_text *b, const char *s);
void text_printf(struct fb_text *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void text_free(struct fb_text *b);

/* Does this content look binary (a NUL byte in the first 8000 bytes, as git
 * decides)? */
bool udiff_is_binary(const char *data, size_t len);

/* The diff of old and new, once: its hunks appended to out (as
 * udiff_hunks, out may be NULL) and the number of lines added and removed
 * (either may be NULL). Returns the number of hunks. The time is bounded:
 * about linear in the input plus a fixed budget of search work, beyond
 * which the part not yet solved is replaced whole. */
size_t udiff_diff(const char *old, size_t olen, const char *new_, size_t nlen, int context,
                  struct fb_text *out, size_t *added, size_t *removed);

/* Append the unified-diff hunks ("@@ -a,b +c,d @@" and their lines, with
 * `context` lines of context and "\ No newline at end of file" markers)
 * that turn old into new. Appends nothing when they are equal. Returns the
 * number of hunks. */
size_t udiff_hunks(const char *old, size_t olen, const char *new_, size_t nlen, int context,
                   struct fb_text *out);

/* Lines added and removed (for summaries), computed with the same diff. */
void udiff_count(const char *old, size_t olen, const char *new_, size_t nlen, size_t *added,
                 size_t *removed);

/* git's object id of a blob with this content: SHA-1 of "blob LEN\0" DATA,
 * as 40 lower-case hex digits plus NUL. */
void udiff_blob_id(const char *data, size_t len, char hex[41]);

/* A "GIT binary patch" section body: "literal LEN\n" followed by the
 * content, zlib-wrapped and base85-encoded in git's line format, and a
 * blank line. */
void udiff_git_binary(const char *data, size_t len, struct fb_text *out);

/* Is s (length n) valid UTF-8? */
bool udiff_utf8_valid(const char *s, size_t n);

#endif
