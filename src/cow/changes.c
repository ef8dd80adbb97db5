/* changes.c — the changes in a copy-on-write workspace: scan the upper
 * layer against the host, render them as JSON or as a git patch (see
 * changes.h).
 *
 * Reading the upper layer is reading what the sandbox wrote, so every
 * lookup goes one component at a time from a directory fd or through
 * openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS): a symlink the sandbox
 * planted is read as a symlink and never followed, a fifo is never opened
 * for reading. The host side is read the same way.
 *
 * Overlay markers in the upper layer (mounted with "userxattr"):
 *   whiteout        character device 0/0 (or an entry carrying
 *                   user.overlay.whiteout): the lower entry is deleted
 *   opaque dir      user.overlay.opaque = "y": the lower directory's
 *                   entries are hidden (rm -r then mkdir of the same name)
 *   origin          user.overlay.origin: the entry was copied up */
#include "changes.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define XA_OPAQUE "user.overlay.opaque"
#define XA_WHITEOUT "user.overlay.whiteout"
#define XA_ORIGIN "user.overlay.origin"
#define XA_REDIRECT "user.overlay.redirect"
#define XA_METACOPY "user.overlay.metacopy"

int changes_open_beneath(int dirfd, const char *path, int flags, mode_t mode)
{
    struct open_how how = {
        .flags = (uint64_t)(flags | O_CLOEXEC),
        .mode = (flags & (O_CREAT | O_TMPFILE)) ? mode : 0,
        .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV,
    };
    if (!path || !*path)
        path = ".";
    for (int tries = 0; tries < 8; tries++) {
        long fd = syscall(SYS_openat2, dirfd, path, &how, sizeof how);
        if (fd >= 0 || errno != EAGAIN)
            return (int)fd;
    }
    return -1;
}

/* ---- small helpers ---- */

static char *join(const char *dir, const char *name)
{
    return *dir ? fb_xasprintf("%s/%s", dir, name) : fb_xstrdup(name);
}

/* Split "a/b/c" into a parent ("a/b", or "") and a name ("c"). */
void changes_split_path(const char *path, char *parent, size_t cap, const char **name)
{
    const char *s = strrchr(path, '/');
    if (!s) {
        parent[0] = 0;
        *name = path;
        return;
    }
    snprintf(parent, cap, "%.*s", (int)(s - path), path);
    *name = s + 1;
}

/* An extended attribute of dirfd/name without following name. */
static ssize_t xattr_at(int dirfd, const char *name, const char *key, char *val, size_t cap)
{
    char p[64 + 256];
    snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dirfd, name);
    return lgetxattr(p, key, val, cap);
}

/* The overlay markers an upper entry carries, from one llistxattr(). */
enum { XF_OPAQUE = 1, XF_WHITEOUT = 2, XF_ORIGIN = 4, XF_REDIRECT = 8, XF_METACOPY = 16 };

static unsigned markers(int dirfd, const char *name)
{
    char p[64 + 256];
    snprintf(p, sizeof p, "/proc/self/fd/%d/%s", dirfd, name);
    char small[512], *buf = small;
    ssize_t n = llistxattr(p, buf, sizeof small);
    while (n < 0 && errno == ERANGE) {
        if (buf != small)
            free(buf);
        buf = NULL;
        ssize_t want = llistxattr(p, NULL, 0);
        if (want < 0)
            break;
        buf = fb_xmalloc((size_t)want + 1);
        n = llistxattr(p, buf, (size_t)want + 1);
    }
    unsigned f = 0;
    static const struct {
        const char *key;
        unsigned flag;
    } known[] = {{XA_OPAQUE, XF_OPAQUE},     {XA_WHITEOUT, XF_WHITEOUT},
                 {XA_ORIGIN, XF_ORIGIN},     {XA_REDIRECT, XF_REDIRECT},
                 {XA_METACOPY, XF_METACOPY}};
    for (ssize_t i = 0; buf && i < n; i += (ssize_t)strnlen(buf + i, (size_t)(n - i)) + 1)
        for (size_t k = 0; k < FB_ARRAY_LEN(known); k++)
            if (!strncmp(buf + i, known[k].key, (size_t)(n - i)))
                f |= known[k].flag;
    if (buf != small)
        free(buf);
    return f;
}

static char kind_of(mode_t m)
{
    if (S_ISREG(m))
        return FB_K_FILE;
    if (S_ISLNK(m))
        return FB_K_LINK;
    if (S_ISDIR(m))
        return FB_K_DIR;
    return FB_K_OTHER;
}

static const char *kind_name(char k)
{
    return k == FB_K_FILE ? "file" : k == FB_K_LINK ? "symlink" : k == FB_K_DIR ? "dir" : "other";
}

/* The sandbox may leave files it owns unreadable (chmod 000). When we are
 * their owner (fluebox unprivileged; root needs none of this) we add the
 * owner's read (and, for a directory, search) permission in the upper
 * layer. A file gets its mode back at once, its fd stays readable; a
 * directory stays open until changes_restore_modes(), because every lookup
 * inside it needs the search permission. */
static int open_upper_entry(struct fb_cow *c, int dirfd, const char *name, int flags)
{
    int fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0 || errno != EACCES)
        return fd;
    struct stat st;
    if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0 || st.st_uid != geteuid() ||
        S_ISLNK(st.st_mode)) {
        errno = EACCES;
        return -1;
    }
    bool dir = S_ISDIR(st.st_mode);
    if (fchmodat(dirfd, name, (st.st_mode & 07777) | (dir ? 0700 : 0400), 0) < 0)
        return -1;
    fd = openat(dirfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
    int e = errno;
    if (!dir) {
        fchmodat(dirfd, name, st.st_mode & 07777, 0);
    } else {
        c->fix = fb_xrealloc(c->fix, (c->nfix + 1) * sizeof *c->fix);
        c->fix[c->nfix].dirfd = dup(dirfd);
        c->fix[c->nfix].name = fb_xstrdup(name);
        c->fix[c->nfix].mode = st.st_mode & 07777;
        c->nfix++;
    }
    errno = e;
    return fd;
}

void changes_restore_modes(struct fb_cow *c)
{
    /* Deepest first: the reverse of the order they were opened up. */
    while (c->nfix > 0) {
        struct fb_cow_fix *f = &c->fix[--c->nfix];
        if (f->dirfd >= 0) {
            fchmodat(f->dirfd, f->name, f->mode, 0);
            close(f->dirfd);
        }
        free(f->name);
    }
    free(c->fix);
    c->fix = NULL;
}

/* Open directory `path` below root (upper layer or host); for the upper
 * layer, component by component when one of them is not searchable. */
static int open_dir(struct fb_cow *c, int root, const char *path, bool upper)
{
    int fd = changes_open_beneath(root, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd >= 0 || !upper || errno != EACCES)
        return fd;
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int pfd = open_dir(c, root, parent, true);
    if (pfd < 0)
        return -1;
    return open_upper_entry(c, pfd, name, O_RDONLY | O_DIRECTORY);
}

int changes_open_upper(struct fb_cow *c, const char *path, int flags)
{
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int d = open_dir(c, c->upper, parent, true);
    if (d < 0)
        return -1;
    return open_upper_entry(c, d, name, flags);
}

static int read_fd_all(int fd, struct fb_text *out)
{
    char tmp[65536];
    for (;;) {
        ssize_t n = read(fd, tmp, sizeof tmp);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        if (n == 0)
            return 0;
        text_add(out, tmp, (size_t)n);
    }
}

static int read_entry(struct fb_cow *c, int root, const char *path, char kind, bool upper,
                      struct fb_text *out)
{
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int d = open_dir(c, root, parent, upper);
    if (d < 0)
        return -1;
    if (kind == FB_K_LINK) {
        char t[4096];
        ssize_t n = readlinkat(d, name, t, sizeof t);
        if (n < 0)
            return -1;
        text_add(out, t, (size_t)n);
        return 0;
    }
    int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
    cleanup_close int f = upper ? open_upper_entry(c, d, name, flags)
                                : openat(d, name, flags | O_NOFOLLOW | O_CLOEXEC);
    if (f < 0)
        return -1;
    struct stat st;
    if (fstat(f, &st) < 0)
        return -1;
    if (!S_ISREG(st.st_mode)) {
        errno = EINVAL;
        return -1;
    }
    text_add(out, "", 0);
    return read_fd_all(f, out);
}

int changes_read_upper(struct fb_cow *c, const char *path, char kind, struct fb_text *out)
{
    return read_entry(c, c->upper, path, kind, true, out);
}

int changes_read_host(struct fb_cow *c, const char *path, char kind, struct fb_text *out)
{
    return read_entry(c, c->host, path, kind, false, out);
}

/* Are two open regular files byte-for-byte equal? */
static bool same_content(int a, int b)
{
    char x[32768], y[32768];
    for (;;) {
        ssize_t n = fb_read_full(a, x, sizeof x);
        ssize_t m = fb_read_full(b, y, sizeof y);
        if (n < 0 || m < 0 || n != m)
            return false;
        if (n == 0)
            return true;
        if (memcmp(x, y, (size_t)n))
            return false;
    }
}

/* ---- the scan ---- */

struct scan {
    struct fb_cow *c;
    struct fb_changes *out;
    size_t cap;                /* of out->v */
    size_t seen;               /* upper entries looked at */
    const struct fb_cow_progress *prog;
    int depth;
};

static struct fb_change *add(struct scan *s, const char *path, enum fb_chg_status st, char kind)
{
    struct fb_changes *o = s->out;
    if (o->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 64;
        o->v = fb_xrealloc(o->v, s->cap * sizeof *o->v);
    }
    struct fb_change *x = &o->v[o->n++];
    memset(x, 0, sizeof *x);
    x->path = fb_xstrdup(path);
    x->status = st;
    x->kind = kind;
    x->size = x->old_size = -1;
    return x;
}

static void skipped(struct scan *s, const char *path, const char *why)
{
    struct fb_changes *o = s->out;
    o->skipped = fb_xrealloc(o->skipped, (o->nskipped + 1) * sizeof *o->skipped);
    o->skipped[o->nskipped++] = fb_xasprintf("%s: %s", path, why);
}

/* Names in a directory (not sorted). */
static char **list_dir(int dfd, size_t *n)
{
    *n = 0;
    int fd = fcntl(dfd, F_DUPFD_CLOEXEC, 0); /* not openat("."): needs search permission */
    if (fd < 0)
        return NULL;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return NULL;
    }
    size_t cap = 16;
    char **v = fb_xmalloc(cap * sizeof *v);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (*n == cap) {
            cap *= 2;
            v = fb_xrealloc(v, cap * sizeof *v);
        }
        v[(*n)++] = fb_xstrdup(e->d_name);
    }
    closedir(d);
    return v;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void free_list(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* A host entry (and, for a directory, everything below it) is deleted. */
static int host_deleted(struct scan *s, int hdir, const char *name, const char *path,
                        const struct stat *hst, struct fb_err *err)
{
    char k = kind_of(hst->st_mode);
    struct fb_change *x = add(s, path, FB_CHG_DELETED, k);
    x->old_mode = hst->st_mode & 07777;
    x->old_size = k == FB_K_DIR ? -1 : hst->st_size;
    if (k != FB_K_DIR)
        return 0;
    if (++s->depth > 1024) {
        s->depth--;
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: %s: too deep", path);
    }
    int rc = 0;
    cleanup_close int sub = openat(hdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sub < 0) {
        skipped(s, path, "cannot read the host directory");
        s->depth--;
        return 0;
    }
    size_t n;
    char **names = list_dir(sub, &n);
    for (size_t i = 0; i < n && rc == 0; i++) {
        struct stat st;
        if (fstatat(sub, names[i], &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char *child = join(path, names[i]);
        rc = host_deleted(s, sub, names[i], child, &st, err);
        free(child);
    }
    free_list(names, n);
    s->depth--;
    return rc;
}

static bool is_whiteout(const struct stat *st, unsigned marks)
{
    if (S_ISCHR(st->st_mode) && major(st->st_rdev) == 0 && minor(st->st_rdev) == 0)
        return true;
    if (!S_ISDIR(st->st_mode) && st->st_size == 0 && (marks & XF_WHITEOUT))
        return true;
    return false;
}

/* Compare an upper file or symlink with the host entry of the same kind. */
static void compare_same(struct scan *s, int udir, int hdir, const char *name, const char *path,
                         const struct stat *ust, const struct stat *hst, bool copied)
{
    char k = kind_of(ust->st_mode);
    bool content = false, mode = false;
    if (k == FB_K_LINK) {
        char a[4096], b[4096];
        ssize_t n = readlinkat(udir, name, a, sizeof a);
        ssize_t m = readlinkat(hdir, name, b, sizeof b);
        content = n < 0 || m < 0 || n != m || memcmp(a, b, (size_t)n) != 0;
    } else {
        mode = (ust->st_mode & 07777) != (hst->st_mode & 07777);
        if (ust->st_size != hst->st_size) {
            content = true;
        } else {
            int flags = O_RDONLY | O_NONBLOCK | O_NOCTTY;
            cleanup_close int a = open_upper_entry(s->c, udir, name, flags);
            cleanup_close int b = openat(hdir, name, flags | O_NOFOLLOW | O_CLOEXEC);
            struct stat as, bs;
            content = a < 0 || b < 0 || fstat(a, &as) < 0 || fstat(b, &bs) < 0 ||
                      !S_ISREG(as.st_mode) || !S_ISREG(bs.st_mode) || !same_content(a, b);
        }
    }
    if (!content && !mode)
        return;
    struct fb_change *x = add(s, path, FB_CHG_MODIFIED, k);
    x->content = content;
    x->mode = ust->st_mode & 07777;
    x->old_mode = hst->st_mode & 07777;
    x->size = ust->st_size;
    x->old_size = hst->st_size;
    x->copied_up = copied;
}

static int scan_dir(struct scan *s, const char *path, bool host_dir, bool opaque,
                    struct fb_err *err);

static int scan_entry(struct scan *s, int udir, int hdir, const char *name, const char *path,
                      struct fb_err *err)
{
    if (!cow_step(s->prog, "scan", s->seen++, 0))
        return fb_errf(err, FB_ERR_CANCELLED, "copy-on-write: cancelled");
    struct stat ust, hst;
    if (fstatat(udir, name, &ust, AT_SYMLINK_NOFOLLOW) < 0)
        return 0; /* gone meanwhile (a live session) */
    bool have_host = hdir >= 0 && fstatat(hdir, name, &hst, AT_SYMLINK_NOFOLLOW) == 0;
    /* Host entries on another mount are outside the overlay's view. */
    if (have_host && S_ISDIR(hst.st_mode)) {
        struct stat hd;
        if (fstat(hdir, &hd) == 0 && hd.st_dev != hst.st_dev)
            have_host = false;
    }

    unsigned marks = markers(udir, name);
    if (is_whiteout(&ust, marks))
        return have_host ? host_deleted(s, hdir, name, path, &hst, err) : 0;

    char k = kind_of(ust.st_mode);
    if (k == FB_K_OTHER) {
        skipped(s, path, S_ISFIFO(ust.st_mode) ? "a fifo" : S_ISSOCK(ust.st_mode) ? "a socket"
                                                                                  : "a device");
        return 0;
    }
    if (marks & (XF_REDIRECT | XF_METACOPY))
        return fb_errf(err, FB_EXIT_SETUP,
                       "copy-on-write: %s: overlay redirects and metacopy are not supported",
                       path);
    bool copied = marks & XF_ORIGIN;

    if (k == FB_K_DIR) {
        char v[8] = {0};
        bool opq = (marks & XF_OPAQUE) && xattr_at(udir, name, XA_OPAQUE, v, sizeof v) > 0 &&
                   v[0] == 'y';
        if (have_host && S_ISDIR(hst.st_mode)) {
            if ((ust.st_mode & 07777) != (hst.st_mode & 07777)) {
                struct fb_change *x = add(s, path, FB_CHG_MODIFIED, FB_K_DIR);
                x->mode = ust.st_mode & 07777;
                x->old_mode = hst.st_mode & 07777;
                x->copied_up = copied;
            }
            return scan_dir(s, path, true, opq, err);
        }
        if (have_host && host_deleted(s, hdir, name, path, &hst, err) < 0)
            return -1;
        struct fb_change *x = add(s, path, FB_CHG_ADDED, FB_K_DIR);
        x->mode = ust.st_mode & 07777;
        x->copied_up = copied;
        return scan_dir(s, path, false, false, err);
    }

    if (have_host && kind_of(hst.st_mode) == k) {
        compare_same(s, udir, hdir, name, path, &ust, &hst, copied);
        return 0;
    }
    if (have_host && host_deleted(s, hdir, name, path, &hst, err) < 0)
        return -1;
    struct fb_change *x = add(s, path, FB_CHG_ADDED, k);
    x->mode = k == FB_K_LINK ? 0777 : ust.st_mode & 07777;
    x->size = ust.st_size;
    x->copied_up = copied;
    return 0;
}

static int scan_dir(struct scan *s, const char *path, bool host_dir, bool opaque,
                    struct fb_err *err)
{
    if (++s->depth > 1024) {
        s->depth--;
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: %s: too deep", path);
    }
    int rc = 0;
    cleanup_close int udir = open_dir(s->c, s->c->upper, path, true);
    if (udir < 0) {
        s->depth--;
        if (errno == ENOENT || errno == ENOTDIR || errno == ELOOP)
            return 0; /* changed meanwhile (a live session): gone, or now a symlink */
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: reading %s in the upper layer",
                        *path ? path : ".");
    }
    cleanup_close int hdir = host_dir ? open_dir(s->c, s->c->host, path, false) : -1;
    size_t n = 0;
    char **names = list_dir(udir, &n);
    if (n > 1)
        qsort(names, n, sizeof *names, cmp_str);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char *child = join(path, names[i]);
        rc = scan_entry(s, udir, hdir, names[i], child, err);
        free(child);
    }
    /* An opaque directory hides every host entry it does not have itself. */
    if (rc == 0 && opaque && hdir >= 0) {
        size_t hn = 0;
        char **hnames = list_dir(hdir, &hn);
        for (size_t i = 0; i < hn && rc == 0; i++) {
            if (n && bsearch(&hnames[i], names, n, sizeof *names, cmp_str))
                continue;
            struct stat hst;
            if (fstatat(hdir, hnames[i], &hst, AT_SYMLINK_NOFOLLOW) < 0)
                continue;
            char *child = join(path, hnames[i]);
            rc = host_deleted(s, hdir, hnames[i], child, &hst, err);
            free(child);
        }
        free_list(hnames, hn);
    }
    free_list(names, n);
    s->depth--;
    return rc;
}

static int cmp_change(const void *a, const void *b)
{
    const struct fb_change *x = a, *y = b;
    int c = strcmp(x->path, y->path);
    if (c)
        return c;
    /* The deletion of an entry comes before the addition that replaces it. */
    return (x->status != FB_CHG_DELETED) - (y->status != FB_CHG_DELETED);
}

/* A deleted file and an added one with the same kind and content are a
 * rename. Only entries whose (kind, size) occurs on both sides are read;
 * they are grouped by a content hash and each pair is confirmed byte for
 * byte. Among equal candidates the one with the same base name wins, so
 * moving a directory pairs each file with its own copy. */
struct rcand {
    size_t idx;
    char kind;
    int64_t size;
    uint64_t hash;
    bool used;
};

static int cmp_rcand(const void *a, const void *b)
{
    const struct rcand *x = a, *y = b;
    if (x->kind != y->kind)
        return x->kind < y->kind ? -1 : 1;
    if (x->size != y->size)
        return x->size < y->size ? -1 : 1;
    if (x->hash != y->hash)
        return x->hash < y->hash ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static int cmp_ridx(const void *a, const void *b)
{
    const struct rcand *x = a, *y = b;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

static uint64_t fnv(const char *p, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++)
        h = (h ^ (unsigned char)p[i]) * 1099511628211ull;
    return h;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

#define RENAME_MAX_FILE (64ll << 20)   /* larger files are never paired */
#define RENAME_MAX_BYTES (1ll << 30)   /* total bytes read to find renames */

static void find_renames(struct fb_cow *c, struct fb_changes *ch)
{
    size_t nd = 0, na = 0;
    struct rcand *del = fb_xcalloc(ch->n + 1, sizeof *del);
    struct rcand *add = fb_xcalloc(ch->n + 1, sizeof *add);
    for (size_t i = 0; i < ch->n; i++) {
        struct fb_change *x = &ch->v[i];
        if (x->kind != FB_K_FILE && x->kind != FB_K_LINK)
            continue;
        if (x->status == FB_CHG_DELETED && x->old_size > 0 && x->old_size <= RENAME_MAX_FILE)
            del[nd++] = (struct rcand){.idx = i, .kind = x->kind, .size = x->old_size};
        else if (x->status == FB_CHG_ADDED && x->size > 0 && x->size <= RENAME_MAX_FILE)
            add[na++] = (struct rcand){.idx = i, .kind = x->kind, .size = x->size};
    }
    if (!nd || !na)
        goto out;
    /* Keep the candidates whose (kind, size) the other side has too. */
    qsort(del, nd, sizeof *del, cmp_rcand);
    qsort(add, na, sizeof *add, cmp_rcand);
    int64_t budget = RENAME_MAX_BYTES;
    for (size_t i = 0, j = 0; i < nd || j < na;) {
        int k = i < nd && j < na ? (del[i].kind != add[j].kind ? (del[i].kind < add[j].kind ? -1 : 1)
                                    : del[i].size < add[j].size ? -1 : del[i].size > add[j].size)
                : i < nd ? -1 : 1;
        if (k < 0) {
            del[i++].used = true; /* no partner: out */
        } else if (k > 0) {
            add[j++].used = true;
        } else {
            char kd = del[i].kind;
            int64_t sz = del[i].size;
            for (; i < nd && del[i].kind == kd && del[i].size == sz; i++) {
                struct fb_text t = {0};
                if (budget <= 0 || changes_read_host(c, ch->v[del[i].idx].path, kd, &t) < 0)
                    del[i].used = true;
                else
                    del[i].hash = fnv(t.p, t.len);
                budget -= sz;
                text_free(&t);
            }
            for (; j < na && add[j].kind == kd && add[j].size == sz; j++) {
                struct fb_text t = {0};
                if (budget <= 0 || changes_read_upper(c, ch->v[add[j].idx].path, kd, &t) < 0)
                    add[j].used = true;
                else
                    add[j].hash = fnv(t.p, t.len);
                budget -= sz;
                text_free(&t);
            }
        }
    }
    qsort(del, nd, sizeof *del, cmp_rcand);
    /* Added entries in path order (their index order). */
    qsort(add, na, sizeof *add, cmp_ridx);
    for (size_t a = 0; a < na; a++) {
        if (add[a].used)
            continue;
        /* The range of deleted entries with the same kind, size and hash. */
        struct rcand key = {.idx = 0, .kind = add[a].kind, .size = add[a].size, .hash = add[a].hash};
        size_t lo = 0, hi = nd;
        while (lo < hi) {
            size_t mid = (lo + hi) / 2;
            if (cmp_rcand(&del[mid], &key) < 0)
                lo = mid + 1;
            else
                hi = mid;
        }
        struct fb_change *x = &ch->v[add[a].idx];
        size_t pick = nd;
        for (size_t d = lo; d < nd && del[d].kind == key.kind && del[d].size == key.size &&
                            del[d].hash == key.hash;
             d++) {
            if (del[d].used)
                continue;
            if (pick == nd)
                pick = d;
            if (!strcmp(base_name(ch->v[del[d].idx].path), base_name(x->path))) {
                pick = d;
                break;
            }
        }
        if (pick == nd)
            continue;
        struct fb_change *d = &ch->v[del[pick].idx];
        struct fb_text at = {0}, dt = {0};
        bool same = changes_read_upper(c, x->path, x->kind, &at) == 0 &&
                    changes_read_host(c, d->path, d->kind, &dt) == 0 && at.len == dt.len &&
                    (at.len == 0 || memcmp(at.p, dt.p, at.len) == 0);
        text_free(&at);
        text_free(&dt);
        if (!same)
            continue;
        del[pick].used = true;
        x->status = FB_CHG_RENAMED;
        x->from = fb_xstrdup(d->path);
        x->old_mode = d->old_mode;
        x->old_size = d->old_size;
        d->status = (enum fb_chg_status)-1; /* removed below */
    }
    size_t k = 0;
    for (size_t i = 0; i < ch->n; i++) {
        if ((int)ch->v[i].status == -1) {
            free(ch->v[i].path);
            free(ch->v[i].from);
            continue;
        }
        ch->v[k++] = ch->v[i];
    }
    ch->n = k;
out:
    free(del);
    free(add);
}

int changes_scan(struct fb_cow *c, struct fb_changes *out, const struct fb_cow_progress *prog,
                 struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    if (c->upper < 0)
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: no upper layer");
    struct scan s = {.c = c, .out = out, .prog = prog};
    if (scan_dir(&s, "", true, false, err) < 0) {
        changes_free(out);
        return -1;
    }
    if (out->n > 1)
        qsort(out->v, out->n, sizeof *out->v, cmp_change);
    find_renames(c, out);
    out->upper_full = cow_upper_full(c);
    return 0;
}

void changes_free(struct fb_changes *ch)
{
    for (size_t i = 0; i < ch->n; i++) {
        free(ch->v[i].path);
        free(ch->v[i].from);
    }
    free(ch->v);
    for (size_t i = 0; i < ch->nskipped; i++)
        free(ch->skipped[i]);
    free(ch->skipped);
    memset(ch, 0, sizeof *ch);
}

static bool under(const char *path, const char *sel)
{
    while (*sel == '/')
        sel++;
    size_t n = strlen(sel);
    while (n && sel[n - 1] == '/')
        n--;
    if (n == 0 || (n == 1 && sel[0] == '.'))
        return true;
    return !strncmp(path, sel, n) && (path[n] == 0 || path[n] == '/');
}

bool changes_selected(const struct fb_change *x, char *const *sel, size_t nsel)
{
    if (nsel == 0)
        return true;
    for (size_t i = 0; i < nsel; i++)
        if (under(x->path, sel[i]) || (x->from && under(x->from, sel[i])))
            return true;
    return false;
}

/* ---- JSON ---- */

static const char *status_name(enum fb_chg_status s)
{
    switch (s) {
    case FB_CHG_ADDED:
        return "added";
    case FB_CHG_MODIFIED:
        return "modified";
    case FB_CHG_DELETED:
        return "deleted";
    case FB_CHG_RENAMED:
        return "renamed";
    }
    return "?";
}

/* JSON strings must be UTF-8: invalid bytes become U+FFFD, flagged. */
static json_t *jstr(const char *s, size_t n, bool *lossy)
{
    if (udiff_utf8_valid(s, n))
        return json_stringn(s, n);
    struct fb_text b = {0};
    const unsigned char *p = (const unsigned char *)s;
    for (size_t i = 0; i < n; i++) {
        if (p[i] < 0x80) {
            text_add(&b, &p[i], 1);
            continue;
        }
        size_t k = 1;
        while (i + k < n && k < 4 && (p[i + k] & 0xc0) == 0x80)
            k++;
        if (udiff_utf8_valid((const char *)p + i, k)) {
            text_add(&b, p + i, k);
            i += k - 1;
        } else {
            text_puts(&b, "\xef\xbf\xbd");
        }
    }
    if (lossy)
        *lossy = true;
    json_t *j = json_stringn(b.p ? b.p : "", b.len);
    text_free(&b);
    return j;
}

static json_t *jmode(mode_t m)
{
    char b[8];
    snprintf(b, sizeof b, "%04o", (unsigned)m);
    return json_string(b);
}

static void json_content(struct fb_cow *c, const struct fb_change *x, const char *old_path,
                         const struct fb_changes_opts *o, json_t *e)
{
    struct fb_text nb = {0}, ob = {0};
    bool want_new = x->status != FB_CHG_DELETED;
    bool want_old = x->status != FB_CHG_ADDED;
    if (want_new && changes_read_upper(c, x->path, x->kind, &nb) < 0) {
        json_object_set_new(e, "error", json_string("cannot read the new content"));
        goto out;
    }
    if (want_old && changes_read_host(c, old_path, x->kind, &ob) < 0) {
        json_object_set_new(e, "error", json_string("cannot read the old content"));
        goto out;
    }
    if (x->kind == FB_K_LINK) {
        if (want_new)
            json_object_set_new(e, "target", jstr(nb.p ? nb.p : "", nb.len, NULL));
        if (want_old && x->status != FB_CHG_RENAMED && (x->status == FB_CHG_DELETED || x->content))
            json_object_set_new(e, x->status == FB_CHG_DELETED ? "target" : "old_target",
                                jstr(ob.p ? ob.p : "", ob.len, NULL));
        goto out;
    }
    bool binary = udiff_is_binary(nb.p ? nb.p : "", nb.len) || udiff_is_binary(ob.p ? ob.p : "", ob.len);
    json_object_set_new(e, "binary", json_boolean(binary));
    if (binary || x->status == FB_CHG_RENAMED || (x->status == FB_CHG_MODIFIED && !x->content))
        goto out;
    size_t added = 0, removed = 0;
    struct fb_text d = {0};
    udiff_diff(ob.p ? ob.p : "", ob.len, nb.p ? nb.p : "", nb.len, 3, o->diffs ? &d : NULL, &added,
               &removed);
    json_object_set_new(e, "lines_added", json_integer((json_int_t)added));
    json_object_set_new(e, "lines_removed", json_integer((json_int_t)removed));
    if (!o->diffs)
        goto out;
    size_t cap = o->max_diff ? o->max_diff : 1 << 20;
    if (d.len > cap)
        json_object_set_new(e, "diff_omitted", json_string("too large"));
    else if (!udiff_utf8_valid(d.p ? d.p : "", d.len))
        json_object_set_new(e, "diff_omitted", json_string("not UTF-8"));
    else
        json_object_set_new(e, "diff", json_stringn(d.p ? d.p : "", d.len));
    text_free(&d);
out:
    text_free(&nb);
    text_free(&ob);
}

json_t *changes_json(struct fb_cow *c, const struct fb_changes *ch, const struct fb_changes_opts *o)
{
    json_t *root = json_object();
    json_t *arr = json_array();
    size_t counts[4] = {0};
    for (size_t i = 0; i < ch->n; i++) {
        const struct fb_change *x = &ch->v[i];
        if (!changes_selected(x, o->sel, o->nsel))
            continue;
        if (!cow_step(o->progress, "diff", i, ch->n)) {
            json_decref(arr);
            json_decref(root);
            return NULL;
        }
        json_t *e = json_object();
        bool lossy = false;
        json_object_set_new(e, "path", jstr(x->path, strlen(x->path), &lossy));
        json_object_set_new(e, "status", json_string(status_name(x->status)));
        json_object_set_new(e, "type", json_string(kind_name(x->kind)));
        if (x->from)
            json_object_set_new(e, "from", jstr(x->from, strlen(x->from), &lossy));
        if (lossy)
            json_object_set_new(e, "path_not_utf8", json_true());
        if (x->kind != FB_K_LINK) {
            if (x->status != FB_CHG_DELETED)
                json_object_set_new(e, "mode", jmode(x->mode));
            if (x->status != FB_CHG_ADDED && (x->status == FB_CHG_DELETED || x->mode != x->old_mode))
                json_object_set_new(e, "old_mode", jmode(x->old_mode));
        }
        if (x->kind == FB_K_FILE) {
            if (x->status != FB_CHG_DELETED)
                json_object_set_new(e, "size", json_integer(x->size));
            if (x->status != FB_CHG_ADDED)
                json_object_set_new(e, "old_size", json_integer(x->old_size));
        }
        if (x->status == FB_CHG_MODIFIED && x->kind != FB_K_DIR)
            json_object_set_new(e, "content_changed", json_boolean(x->content));
        if (x->kind == FB_K_FILE || x->kind == FB_K_LINK)
            json_content(c, x, x->from ? x->from : x->path, o, e);
        json_array_append_new(arr, e);
        counts[x->status]++;
    }
    json_object_set_new(root, "workspace", jstr(c->workspace, strlen(c->workspace), NULL));
    json_object_set_new(root, "changes", arr);
    json_t *cnt = json_object();
    for (int k = 0; k < 4; k++)
        json_object_set_new(cnt, status_name((enum fb_chg_status)k), json_integer((json_int_t)counts[k]));
    json_object_set_new(root, "counts", cnt);
    json_t *sk = json_array();
    for (size_t i = 0; i < ch->nskipped; i++)
        json_array_append_new(sk, jstr(ch->skipped[i], strlen(ch->skipped[i]), NULL));
    json_object_set_new(root, "skipped", sk);
    json_object_set_new(root, "upper_full", json_boolean(ch->upper_full));
    return root;
}

/* ---- git patch ---- */

/* A path as git writes it: C-quoted when it holds a quote, a backslash, a
 * control character or a non-ASCII byte. */
static void gitname(struct fb_text *b, const char *prefix, const char *path)
{
    bool quote = false;
    for (const unsigned char *p = (const unsigned char *)path; *p; p++)
        if (*p < 0x20 || *p >= 0x7f || *p == '"' || *p == '\\')
            quote = true;
    if (!quote) {
        text_puts(b, prefix);
        text_puts(b, path);
        return;
    }
    text_puts(b, "\"");
    text_puts(b, prefix);
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        switch (*p) {
        case '"': text_puts(b, "\\\""); break;
        case '\\': text_puts(b, "\\\\"); break;
        case '\n': text_puts(b, "\\n"); break;
        case '\t': text_puts(b, "\\t"); break;
        default:
            if (*p < 0x20 || *p >= 0x7f)
                text_printf(b, "\\%03o", *p);
            else
                text_add(b, p, 1);
        }
    }
    text_puts(b, "\"");
}

static unsigned gitmode(char kind, mode_t m)
{
    if (kind == FB_K_LINK)
        return 0120000;
    return (m & 0100) ? 0100755 : 0100644;
}

static void header(struct fb_text *b, const char *from, const char *to)
{
    text_puts(b, "diff --git ");
    gitname(b, "a/", from);
    text_puts(b, " ");
    gitname(b, "b/", to);
    text_puts(b, "\n");
}

/* Content part of a patch entry: text hunks or a binary literal. */
static void body(struct fb_text *b, const char *oldp, const char *newp, const struct fb_text *ob,
                 const struct fb_text *nb, unsigned mode_after)
{
    const char *o = ob ? (ob->p ? ob->p : "") : "";
    size_t ol = ob ? ob->len : 0;
    const char *n = nb ? (nb->p ? nb->p : "") : "";
    size_t nl = nb ? nb->len : 0;
    if (udiff_is_binary(o, ol) || udiff_is_binary(n, nl)) {
        char oid[41], nid[41];
        if (ob)
            udiff_blob_id(o, ol, oid);
        else
            snprintf(oid, sizeof oid, "%040d", 0);
        if (nb)
            udiff_blob_id(n, nl, nid);
        else
            snprintf(nid, sizeof nid, "%040d", 0);
        text_printf(b, "index %s..%s", oid, nid);
        if (mode_after)
            text_printf(b, " %06o", mode_after);
        text_puts(b, "\nGIT binary patch\n");
        udiff_git_binary(n, nl, b);
        return;
    }
    if (ol == 0 && nl == 0)
        return;
    text_puts(b, "--- ");
    if (oldp)
        gitname(b, "a/", oldp);
    else
        text_puts(b, "/dev/null");
    text_puts(b, "\n+++ ");
    if (newp)
        gitname(b, "b/", newp);
    else
        text_puts(b, "/dev/null");
    text_puts(b, "\n");
    udiff_hunks(o, ol, n, nl, 3, b);
}

int changes_patch(struct fb_cow *c, const struct fb_changes *ch, const struct fb_changes_opts *o,
                  struct fb_text *out, struct fb_err *err)
{
    for (size_t i = 0; i < ch->n; i++) {
        const struct fb_change *x = &ch->v[i];
        if (x->kind == FB_K_DIR || x->kind == FB_K_OTHER || !changes_selected(x, o->sel, o->nsel))
            continue;
        if (!cow_step(o->progress, "diff", i, ch->n))
            return fb_errf(err, FB_ERR_CANCELLED, "copy-on-write: cancelled");
        struct fb_text nb = {0}, ob = {0};
        const char *oldp = x->from ? x->from : x->path;
        bool need_new = x->status == FB_CHG_ADDED || (x->status == FB_CHG_MODIFIED && x->content);
        bool need_old = x->status == FB_CHG_DELETED || (x->status == FB_CHG_MODIFIED && x->content);
        if ((need_new && changes_read_upper(c, x->path, x->kind, &nb) < 0) ||
            (need_old && changes_read_host(c, oldp, x->kind, &ob) < 0)) {
            text_free(&nb);
            text_free(&ob);
            return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: reading %s", x->path);
        }
        unsigned nm = gitmode(x->kind, x->mode), om = gitmode(x->kind, x->old_mode);
        switch (x->status) {
        case FB_CHG_ADDED:
            header(out, x->path, x->path);
            text_printf(out, "new file mode %06o\n", nm);
            body(out, NULL, x->path, NULL, &nb, 0);
            break;
        case FB_CHG_DELETED:
            header(out, x->path, x->path);
            text_printf(out, "deleted file mode %06o\n", om);
            body(out, x->path, NULL, &ob, NULL, 0);
            break;
        case FB_CHG_MODIFIED:
            if (!x->content && nm == om)
                break; /* a mode change git cannot express (not the x bit) */
            header(out, x->path, x->path);
            if (nm != om)
                text_printf(out, "old mode %06o\nnew mode %06o\n", om, nm);
            if (x->content)
                body(out, x->path, x->path, &ob, &nb, nm == om ? nm : 0);
            break;
        case FB_CHG_RENAMED:
            header(out, x->from, x->path);
            if (nm != om)
                text_printf(out, "old mode %06o\nnew mode %06o\n", om, nm);
            text_puts(out, "similarity index 100%\nrename from ");
            gitname(out, "", x->from);
            text_puts(out, "\nrename to ");
            gitname(out, "", x->path);
            text_puts(out, "\n");
            break;
        }
        text_free(&nb);
        text_free(&ob);
    }
    return 0;
}
