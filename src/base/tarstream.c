/* tarstream.c — tar streams for `fluebox cp -r` (tarstream.h). */
#include "tarstream.h"

#include "bytes.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

#define BLOCK 512
#define META_MAX (1 << 20) /* a long name or pax header larger than this is refused */

/* ---- writer ---- */

struct tw {
    tar_emit_fn *emit;
    void *ctx;
    void (*warn)(void *ctx, const char *msg);
    struct fb_err *err;
};

static void octal(char *dst, size_t width, uint64_t v)
{
    /* width includes the terminating NUL the field ends with. */
    char tmp[32];
    snprintf(tmp, sizeof tmp, "%0*llo", (int)(width - 1), (unsigned long long)v);
    memcpy(dst, tmp, width - 1);
}

static int emit(struct tw *w, const void *p, size_t n)
{
    if (w->emit(w->ctx, p, n) < 0)
        return fb_errf(w->err, FB_EXIT_SETUP, "cannot send the tar stream");
    return 0;
}

/* Zeros up to the next block boundary after n bytes. */
static int emit_pad(struct tw *w, size_t n)
{
    static const char zero[BLOCK];
    size_t pad = (BLOCK - n % BLOCK) % BLOCK;
    return pad ? emit(w, zero, pad) : 0;
}

static int emit_padded(struct tw *w, const void *p, size_t n)
{
    if (n && emit(w, p, n) < 0)
        return -1;
    return emit_pad(w, n);
}

/* One pax record: "LEN key=value\n", LEN counting itself. */
static void pax_record(struct fb_buf *b, const char *key, const char *val)
{
    size_t body = strlen(key) + strlen(val) + 3; /* ' ', '=', '\n' */
    size_t len = body + 1;
    char num[24];
    for (;;) {
        int d = snprintf(num, sizeof num, "%zu", len);
        if (body + (size_t)d == len)
            break;
        len = body + (size_t)d;
    }
    char *r = fb_xasprintf("%s %s=%s\n", num, key, val);
    buf_append(b, r, strlen(r));
    free(r);
}

static int put_block(struct tw *w, const char *name, char type, mode_t mode, uint64_t size,
                     int64_t mtime, const char *link)
{
    char h[BLOCK];
    memset(h, 0, sizeof h);
    snprintf(h, 100, "%s", name);
    octal(h + 100, 8, mode & 07777);
    octal(h + 108, 8, 0);
    octal(h + 116, 8, 0);
    octal(h + 124, 12, size);
    octal(h + 136, 12, mtime > 0 ? (uint64_t)mtime : 0);
    h[156] = type;
    if (link)
        strncpy(h + 157, link, 100);
    memcpy(h + 257, "ustar", 6);
    memcpy(h + 263, "00", 2);
    memset(h + 148, ' ', 8);
    unsigned sum = 0;
    for (size_t i = 0; i < sizeof h; i++)
        sum += (unsigned char)h[i];
    snprintf(h + 148, 8, "%06o", sum);
    h[155] = ' ';
    return emit(w, h, sizeof h);
}

static int put_header(struct tw *w, const char *name, char type, mode_t mode, uint64_t size,
                      int64_t mtime, const char *link)
{
    bool long_name = strlen(name) >= 100, long_link = link && strlen(link) >= 100;
    bool big = size > 077777777777ull;
    if (long_name || long_link || big) {
        struct fb_buf pax = {0};
        if (long_name)
            pax_record(&pax, "path", name);
        if (long_link)
            pax_record(&pax, "linkpath", link);
        if (big) {
            char s[24];
            snprintf(s, sizeof s, "%llu", (unsigned long long)size);
            pax_record(&pax, "size", s);
        }
        int rc = put_block(w, "././@PaxHeader", 'x', 0644, buf_pending(&pax), mtime, NULL);
        if (rc == 0)
            rc = emit_padded(w, buf_head(&pax), buf_pending(&pax));
        buf_free(&pax);
        if (rc < 0)
            return -1;
    }
    return put_block(w, name, type, mode, big ? 0 : size, mtime, link);
}

static int put_file(struct tw *w, int dir, const char *name, const char *rel, const struct stat *lst)
{
    int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != lst->st_ino) {
        if (fd >= 0)
            close(fd);
        if (w->warn) {
            char m[4200];
            snprintf(m, sizeof m, "%s: %s", rel, fd < 0 ? strerror(errno) : "changed while copied");
            w->warn(w->ctx, m);
        }
        return 0;
    }
    uint64_t size = (uint64_t)st.st_size, sent = 0;
    int rc = put_header(w, rel, '0', st.st_mode, size, st.st_mtim.tv_sec, NULL);
    char buf[65536];
    while (rc == 0 && sent < size) {
        size_t want = size - sent < sizeof buf ? (size_t)(size - sent) : sizeof buf;
        ssize_t n = read(fd, buf, want);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            /* It shrank while being read: the header said size bytes. */
            memset(buf, 0, want);
            n = (ssize_t)want;
        }
        rc = emit(w, buf, (size_t)n);
        sent += (uint64_t)n;
    }
    close(fd);
    if (rc == 0)
        rc = emit_pad(w, (size_t)(size % BLOCK));
    return rc;
}

static int walk(struct tw *w, int dir, const char *prefix, int depth)
{
    if (depth > 256)
        return fb_errf(w->err, FB_EXIT_SETUP, "%s: too deep", prefix);
    int d2 = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = d2 >= 0 ? fdopendir(d2) : NULL;
    if (!d) {
        if (d2 >= 0)
            close(d2);
        return fb_errno(w->err, FB_EXIT_SETUP, "%s", *prefix ? prefix : ".");
    }
    int rc = 0;
    struct dirent *e;
    while (rc == 0 && (e = readdir(d))) {
        const char *name = e->d_name;
        if (!strcmp(name, ".") || !strcmp(name, ".."))
            continue;
        cleanup_free char *rel = *prefix ? fb_xasprintf("%s/%s", prefix, name) : fb_xstrdup(name);
        struct stat st;
        if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        if (S_ISDIR(st.st_mode)) {
            int sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub < 0) {
                rc = fb_errno(w->err, FB_EXIT_SETUP, "%s", rel);
                break;
            }
            cleanup_free char *dname = fb_xasprintf("%s/", rel);
            rc = put_header(w, dname, '5', st.st_mode, 0, st.st_mtim.tv_sec, NULL);
            if (rc == 0)
                rc = walk(w, sub, rel, depth + 1);
            close(sub);
        } else if (S_ISREG(st.st_mode)) {
            rc = put_file(w, dir, name, rel, &st);
        } else if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t n = readlinkat(dir, name, target, sizeof target - 1);
            if (n >= 0) {
                target[n] = 0;
                rc = put_header(w, rel, '2', 0777, 0, st.st_mtim.tv_sec, target);
            }
        } else if (w->warn) {
            char m[4200];
            snprintf(m, sizeof m, "%s: not a file, directory or symlink: skipped", rel);
            w->warn(w->ctx, m);
        }
    }
    closedir(d);
    return rc;
}

int tar_write_dir(int dir, const char *prefix, tar_emit_fn *emit_fn, void *ctx,
                  void (*warn)(void *ctx, const char *msg), struct fb_err *err)
{
    struct tw w = {emit_fn, ctx, warn, err};
    const char *p = prefix && strcmp(prefix, ".") ? prefix : "";
    struct stat st;
    if (fstat(dir, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "fstat");
    if (*p) {
        cleanup_free char *dname = fb_xasprintf("%s/", p);
        if (put_header(&w, dname, '5', st.st_mode, 0, st.st_mtim.tv_sec, NULL) < 0)
            return -1;
    }
    if (walk(&w, dir, p, 0) < 0)
        return -1;
    static const char end[2 * BLOCK];
    return emit(&w, end, sizeof end);
}

/* ---- reader ---- */

enum rstate { R_HDR, R_DATA, R_META, R_END };

struct dirmode {
    char *path;
    mode_t mode;
};

struct tar_reader {
    int dest, strip;
    enum rstate st;
    char hdr[BLOCK];
    size_t hlen;
    uint64_t remain, pad;   /* of the current member's data */
    int out;                /* the file being written, or -1: data is skipped */
    char *out_name;         /* for messages */
    struct timespec mtime;
    mode_t mode;
    char meta_type;         /* 'L', 'K', 'x' being collected */
    struct fb_buf meta;
    char *next_name, *next_link; /* from the records before a header */
    int64_t next_size;      /* pax size=, or -1 */
    struct dirmode *dirs;
    size_t ndirs;
    int zeros;
    size_t files, skipped;
};

struct tar_reader *tar_reader_new(int dest, int strip)
{
    struct tar_reader *r = fb_xcalloc(1, sizeof *r);
    r->dest = dest;
    r->strip = strip;
    r->out = -1;
    r->next_size = -1;
    return r;
}

void tar_reader_free(struct tar_reader *r)
{
    if (!r)
        return;
    if (r->out >= 0)
        close(r->out);
    free(r->out_name);
    free(r->next_name);
    free(r->next_link);
    buf_free(&r->meta);
    for (size_t i = 0; i < r->ndirs; i++)
        free(r->dirs[i].path);
    free(r->dirs);
    free(r);
}

static uint64_t num_field(const char *f, size_t n)
{
    if ((unsigned char)f[0] & 0x80) {
        /* GNU base-256 */
        uint64_t v = (unsigned char)f[0] & 0x7f;
        for (size_t i = 1; i < n; i++)
            v = v << 8 | (unsigned char)f[i];
        return v;
    }
    uint64_t v = 0;
    size_t i = 0;
    while (i < n && (f[i] == ' ' || f[i] == 0))
        i++;
    for (; i < n && f[i] >= '0' && f[i] <= '7'; i++)
        v = v * 8 + (uint64_t)(f[i] - '0');
    return v;
}

static char *field_str(const char *f, size_t n)
{
    size_t l = strnlen(f, n);
    return fb_xstrndup(f, l);
}

/* The member's path with `strip` components dropped, as a list of
 * components joined by '/'; NULL when nothing is left; -1 (*bad) for "..". */
static char *clean_path(const char *p, int strip, bool *bad)
{
    *bad = false;
    struct fb_buf out = {0};
    cleanup_free char *copy = fb_xstrdup(p);
    char *save = NULL;
    int dropped = 0;
    for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            *bad = true;
            break;
        }
        if (dropped < strip) {
            dropped++;
            continue;
        }
        if (buf_pending(&out))
            buf_append(&out, "/", 1);
        buf_append(&out, c, strlen(c));
    }
    if (*bad || !buf_pending(&out)) {
        buf_free(&out);
        return NULL;
    }
    buf_append(&out, "", 1);
    char *s = fb_xstrdup(buf_head(&out));
    buf_free(&out);
    return s;
}

/* The directory that holds path's last component, created as needed,
 * beneath dest, following no symlink; *leaf points into path. */
static int open_parent(struct tar_reader *r, char *path, const char **leaf, bool create,
                       struct fb_err *err)
{
    int cur = fcntl(r->dest, F_DUPFD_CLOEXEC, 3);
    if (cur < 0)
        return fb_errno(err, FB_EXIT_SETUP, "dup");
    char *s = path;
    for (char *slash; (slash = strchr(s, '/')); s = slash + 1) {
        *slash = 0;
        int next = openat(cur, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (next < 0 && errno == ENOENT && create && mkdirat(cur, s, 0755) == 0)
            next = openat(cur, s, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        int e = errno;
        *slash = '/';
        if (next < 0) {
            close(cur);
            if (e == ELOOP || e == ENOTDIR)
                return fb_errf(err, FB_EXIT_SETUP, "%s: refusing to go through a symlink or a file",
                               path);
            errno = e;
            return fb_errno(err, FB_EXIT_SETUP, "%s", path);
        }
        close(cur);
        cur = next;
    }
    *leaf = s;
    return cur;
}

/* Remove what stands at leaf unless it is a directory (then EISDIR). */
static int clear_leaf(int dir, const char *leaf)
{
    struct stat st;
    if (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (S_ISDIR(st.st_mode)) {
        errno = EISDIR;
        return -1;
    }
    return unlinkat(dir, leaf, 0);
}

static int start_member(struct tar_reader *r, char type, char *path, const char *link,
                        uint64_t size, struct fb_err *err)
{
    const char *leaf;
    int dir = open_parent(r, path, &leaf, true, err);
    if (dir < 0)
        return -1;
    int rc = 0;
    if (type == '5') {
        if (mkdirat(dir, leaf, 0700) < 0 && errno != EEXIST)
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", path);
        struct stat st;
        if (rc == 0 && (fstatat(dir, leaf, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISDIR(st.st_mode)))
            rc = fb_errf(err, FB_EXIT_SETUP, "%s: exists and is not a directory", path);
        if (rc == 0) {
            r->dirs = fb_xrealloc(r->dirs, (r->ndirs + 1) * sizeof *r->dirs);
            r->dirs[r->ndirs].path = fb_xstrdup(path);
            r->dirs[r->ndirs++].mode = r->mode & 0777;
        }
    } else if (type == '0' || type == 0 || type == '7') {
        if (clear_leaf(dir, leaf) < 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", path);
        else if ((r->out = openat(dir, leaf, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)) < 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", path);
        else {
            r->out_name = fb_xstrdup(path);
            r->files++;
        }
    } else if (type == '2') {
        if (!link || !*link)
            r->skipped++;
        else if (clear_leaf(dir, leaf) < 0 || symlinkat(link, dir, leaf) < 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", path);
        else
            r->files++;
    } else {
        r->skipped++; /* hard links, devices, fifos */
    }
    close(dir);
    (void)size;
    return rc;
}

static void end_file(struct tar_reader *r)
{
    if (r->out < 0)
        return;
    fchmod(r->out, r->mode & 0777);
    struct timespec ts[2] = {r->mtime, r->mtime};
    futimens(r->out, ts);
    close(r->out);
    r->out = -1;
    free(r->out_name);
    r->out_name = NULL;
}

/* pax records: path, linkpath, size. */
static int parse_pax(struct tar_reader *r, struct fb_err *err)
{
    const char *p = buf_head(&r->meta), *end = p + buf_pending(&r->meta);
    while (p < end) {
        char *sp;
        unsigned long len = strtoul(p, &sp, 10);
        if (sp == p || *sp != ' ' || len == 0 || len > (unsigned long)(end - p))
            return fb_errf(err, FB_EXIT_SETUP, "tar: a malformed pax header");
        const char *kv = sp + 1, *rec_end = p + len;
        const char *eq = memchr(kv, '=', (size_t)(rec_end - kv));
        if (eq && rec_end[-1] == '\n') {
            size_t kl = (size_t)(eq - kv);
            char *val = fb_xstrndup(eq + 1, (size_t)(rec_end - 1 - (eq + 1)));
            if (kl == 4 && !memcmp(kv, "path", 4)) {
                free(r->next_name);
                r->next_name = val;
            } else if (kl == 8 && !memcmp(kv, "linkpath", 8)) {
                free(r->next_link);
                r->next_link = val;
            } else {
                if (kl == 4 && !memcmp(kv, "size", 4))
                    r->next_size = (int64_t)strtoull(val, NULL, 10);
                free(val);
            }
        }
        p = rec_end;
    }
    return 0;
}

static int on_header(struct tar_reader *r, struct fb_err *err)
{
    const char *h = r->hdr;
    bool zero = true;
    for (size_t i = 0; i < BLOCK && zero; i++)
        zero = h[i] == 0;
    if (zero) {
        if (++r->zeros >= 2)
            r->st = R_END;
        return 0;
    }
    r->zeros = 0;
    unsigned sum = 0;
    int ssum = 0; /* some tars sum signed chars */
    for (size_t i = 0; i < BLOCK; i++) {
        sum += (i >= 148 && i < 156) ? ' ' : (unsigned char)h[i];
        ssum += (i >= 148 && i < 156) ? ' ' : (signed char)h[i];
    }
    uint64_t want = num_field(h + 148, 8);
    if (sum != want && (uint64_t)(unsigned)ssum != want)
        return fb_errf(err, FB_EXIT_SETUP, "tar: a header with a bad checksum (not a tar stream?)");
    char type = h[156];
    uint64_t size = num_field(h + 124, 12);
    if (r->next_size >= 0 && type != 'x' && type != 'L' && type != 'K')
        size = (uint64_t)r->next_size;
    r->remain = size;
    r->pad = (BLOCK - size % BLOCK) % BLOCK;
    if (type == 'L' || type == 'K' || type == 'x' || type == 'g') {
        if (size > META_MAX)
            return fb_errf(err, FB_EXIT_SETUP, "tar: a header record of %llu bytes",
                           (unsigned long long)size);
        r->meta_type = type;
        buf_reset(&r->meta);
        r->st = R_META;
        return 0;
    }
    cleanup_free char *name = NULL;
    if (r->next_name) {
        name = r->next_name;
        r->next_name = NULL;
    } else {
        cleanup_free char *n = field_str(h, 100);
        bool ustar = !memcmp(h + 257, "ustar", 5);
        cleanup_free char *prefix = ustar && h[345] ? field_str(h + 345, 155) : NULL;
        name = prefix ? fb_xasprintf("%s/%s", prefix, n) : fb_xstrdup(n);
    }
    cleanup_free char *link = r->next_link ? r->next_link : field_str(h + 157, 100);
    r->next_link = NULL;
    r->next_size = -1;
    r->mode = (mode_t)num_field(h + 100, 8);
    r->mtime.tv_sec = (time_t)num_field(h + 136, 12);
    r->mtime.tv_nsec = 0;
    r->st = R_DATA;
    bool bad;
    cleanup_free char *path = clean_path(name, r->strip, &bad);
    if (bad)
        return fb_errf(err, FB_EXIT_SETUP, "%s: refusing a path with \"..\"", name);
    if (!path) {
        if (type != '5')
            r->skipped++;
        return 0;
    }
    return start_member(r, type, path, link, size, err);
}

int tar_reader_feed(struct tar_reader *r, const void *data, size_t len, struct fb_err *err)
{
    const char *p = data;
    while (len) {
        switch (r->st) {
        case R_END:
            return 0;
        case R_HDR: {
            size_t n = BLOCK - r->hlen < len ? BLOCK - r->hlen : len;
            memcpy(r->hdr + r->hlen, p, n);
            r->hlen += n;
            p += n;
            len -= n;
            if (r->hlen == BLOCK) {
                r->hlen = 0;
                if (on_header(r, err) < 0)
                    return -1;
            }
            break;
        }
        case R_META:
        case R_DATA: {
            uint64_t want = r->remain + r->pad;
            size_t n = want < len ? (size_t)want : len;
            size_t body = r->remain < n ? (size_t)r->remain : n;
            if (body) {
                if (r->st == R_META)
                    buf_append(&r->meta, p, body);
                else if (r->out >= 0 && fb_write_all(r->out, p, body) < 0)
                    return fb_errno(err, FB_EXIT_SETUP, "%s", r->out_name);
            }
            r->remain -= body;
            r->pad -= n - body;
            p += n;
            len -= n;
            if (r->remain == 0 && r->pad == 0) {
                if (r->st == R_META) {
                    r->st = R_HDR;
                    if (r->meta_type == 'x' && parse_pax(r, err) < 0)
                        return -1;
                    if (r->meta_type == 'L' || r->meta_type == 'K') {
                        buf_append(&r->meta, "", 1);
                        char *s = fb_xstrdup(buf_head(&r->meta));
                        char **slot = r->meta_type == 'L' ? &r->next_name : &r->next_link;
                        free(*slot);
                        *slot = s;
                    }
                } else {
                    end_file(r);
                    r->st = R_HDR;
                }
            }
            break;
        }
        }
        /* A member with no data ends at once. */
        if (r->st == R_DATA && r->remain == 0 && r->pad == 0) {
            end_file(r);
            r->st = R_HDR;
        }
    }
    if (r->st == R_DATA && r->remain == 0 && r->pad == 0) {
        end_file(r);
        r->st = R_HDR;
    }
    return 0;
}

int tar_reader_finish(struct tar_reader *r, size_t *files, size_t *skipped, struct fb_err *err)
{
    int rc = 0;
    if (r->st == R_DATA || r->st == R_META || r->hlen)
        rc = fb_errf(err, FB_EXIT_SETUP, "the tar stream ended in the middle of %s",
                     r->out_name ? r->out_name : "a member");
    end_file(r);
    /* Directory modes last, deepest first. */
    for (size_t i = r->ndirs; i-- > 0;) {
        const char *leaf;
        int dir = open_parent(r, r->dirs[i].path, &leaf, false, err);
        if (dir < 0)
            continue;
        int d = openat(dir, leaf, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d >= 0) {
            fchmod(d, r->dirs[i].mode);
            close(d);
        }
        close(dir);
    }
    if (files)
        *files = r->files;
    if (skipped)
        *skipped = r->skipped;
    return rc;
}
