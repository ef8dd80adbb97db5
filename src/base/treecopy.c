/* treecopy.c — copying and emptying trees a sandbox wrote (treecopy.h).
 * Every entry is reached from its parent's descriptor by its name with
 * O_NOFOLLOW (or the *at() calls' AT_SYMLINK_NOFOLLOW), and checked to be
 * what fstatat said it was, so a tree changed while it is copied can at
 * worst give a mix of old and new entries of the same tree.
 *
 * Nothing here allocates memory (directories are read with getdents64 into
 * buffers on the stack, data goes through copy_file_range or a stack
 * buffer): childjob.h runs these walks in a raw clone of one thread of the
 * server, where a malloc lock held by another thread would never be
 * released. */
#include "treecopy.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>

#define MAX_DEPTH 128
#define DIRBUF 4096

struct linux_dirent64 {
    uint64_t d_ino;
    int64_t d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

/* Call fn for each entry of dir but . and .. (on a description of its
 * own, so the caller's offset is untouched). Stops at fn's first non-zero
 * return, which it returns; -1 with errno when the directory cannot be
 * read. */
static int each_entry(int dir, int (*fn)(void *ctx, const char *name), void *ctx)
{
    int fd = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    char buf[DIRBUF] __attribute__((aligned(8)));
    int rc = 0;
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n < 0)
                rc = -1;
            break;
        }
        for (long off = 0; off < n && rc == 0;) {
            struct linux_dirent64 *d = (struct linux_dirent64 *)(buf + off);
            off += d->d_reclen;
            if (strcmp(d->d_name, ".") && strcmp(d->d_name, ".."))
                rc = fn(ctx, d->d_name);
        }
        if (rc)
            break;
    }
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

struct tcx {
    const struct tree_copy_opts *o;
    dev_t dev;           /* the source's filesystem */
    struct fb_err *err;
    char path[4096];     /* the entry being copied, relative, for messages */
    bool no_cfr;         /* copy_file_range does not work between the trees */
};

static uid_t shift_uid(const struct tree_copy_opts *o, uid_t u)
{
    if (o->from.count && o->to.count && u >= o->from.uid_base && u - o->from.uid_base < o->from.count)
        return o->to.uid_base + (u - o->from.uid_base);
    return u;
}

static gid_t shift_gid(const struct tree_copy_opts *o, gid_t g)
{
    if (o->from.count && o->to.count && g >= o->from.gid_base && g - o->from.gid_base < o->from.count)
        return o->to.gid_base + (g - o->from.gid_base);
    return g;
}

static int failed(struct tcx *x, const char *what)
{
    return fb_errno(x->err, FB_EXIT_SETUP, "%s %s", what, x->path[0] ? x->path : ".");
}

/* Permission bits only: set-id bits never come along; sticky does (/tmp). */
static mode_t perm(const struct stat *st)
{
    return st->st_mode & (S_ISDIR(st->st_mode) ? 01777 : 0777);
}

/* The user.* extended attributes (overlayfs's user.overlay.* markers). */
static void copy_xattrs(int sfd, int dfd)
{
    char names[8192];
    ssize_t n = flistxattr(sfd, names, sizeof names);
    for (ssize_t off = 0; n > 0 && off < n; off += (ssize_t)strlen(names + off) + 1) {
        const char *name = names + off;
        if (strncmp(name, "user.", 5))
            continue;
        char val[4096];
        ssize_t vl = fgetxattr(sfd, name, val, sizeof val);
        if (vl >= 0)
            fsetxattr(dfd, name, val, (size_t)vl, 0);
    }
}

/* Owner, mode, times of an open destination (after its contents). */
static int finish_meta(struct tcx *x, int sfd, int dfd, const struct stat *st)
{
    copy_xattrs(sfd, dfd);
    if (x->o->chown && fchown(dfd, shift_uid(x->o, st->st_uid), shift_gid(x->o, st->st_gid)) < 0 &&
        errno != EPERM)
        return failed(x, "chown");
    if (fchmod(dfd, perm(st)) < 0)
        return failed(x, "chmod");
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    futimens(dfd, ts);
    return 0;
}

/* Make room for name in dst: remove what is there unless it is a
 * directory and want_dir. */
static int clear_name(int dst, const char *name, bool want_dir)
{
    struct stat st;
    if (fstatat(dst, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return errno == ENOENT ? 0 : -1;
    if (S_ISDIR(st.st_mode)) {
        if (want_dir)
            return 0;
        int d = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d < 0)
            return -1;
        int r = tree_empty(d);
        close(d);
        if (r < 0)
            return -1;
        return unlinkat(dst, name, AT_REMOVEDIR);
    }
    return unlinkat(dst, name, 0);
}

static int copy_data(struct tcx *x, int in, int out)
{
    while (!x->no_cfr) {
        ssize_t n = copy_file_range(in, NULL, out, NULL, 1 << 30, 0);
        if (n > 0)
            continue;
        if (n == 0)
            return 0;
        if (errno == EINTR)
            continue;
        if (errno != EXDEV && errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
            return -1;
        x->no_cfr = true; /* no in-kernel copy between these two: read and write */
    }
    char buf[64 * 1024];
    for (;;) {
        ssize_t n = read(in, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return (int)n;
        if (fb_write_all(out, buf, (size_t)n) < 0)
            return -1;
    }
}

static int copy_file(struct tcx *x, int src, int dst, const char *name, const struct stat *lst)
{
    int sfd = openat(src, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (sfd < 0)
        return errno == ENOENT ? 0 : failed(x, "opening");
    struct stat st;
    if (fstat(sfd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_ino != lst->st_ino) {
        close(sfd); /* replaced meanwhile: not what we looked at */
        return 0;
    }
    if (clear_name(dst, name, false) < 0) {
        close(sfd);
        return failed(x, "replacing");
    }
    int dfd = openat(dst, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (dfd < 0) {
        close(sfd);
        return failed(x, "creating");
    }
    int rc = copy_data(x, sfd, dfd) < 0 ? failed(x, "copying") : finish_meta(x, sfd, dfd, &st);
    close(sfd);
    close(dfd);
    return rc;
}

static int copy_link(struct tcx *x, int src, int dst, const char *name, const struct stat *st)
{
    char target[4096];
    ssize_t n = readlinkat(src, name, target, sizeof target - 1);
    if (n < 0)
        return errno == ENOENT || errno == EINVAL ? 0 : failed(x, "reading the link");
    target[n] = 0;
    if (clear_name(dst, name, false) < 0 || symlinkat(target, dst, name) < 0)
        return failed(x, "creating the link");
    if (x->o->chown)
        fchownat(dst, name, shift_uid(x->o, st->st_uid), shift_gid(x->o, st->st_gid),
                 AT_SYMLINK_NOFOLLOW);
    struct timespec ts[2] = {st->st_atim, st->st_mtim};
    utimensat(dst, name, ts, AT_SYMLINK_NOFOLLOW);
    return 0;
}

/* A fifo, or an overlayfs whiteout (a character device 0/0). */
static int copy_node(struct tcx *x, int dst, const char *name, const struct stat *st)
{
    bool whiteout = S_ISCHR(st->st_mode) && st->st_rdev == makedev(0, 0);
    if (!whiteout && !S_ISFIFO(st->st_mode))
        return 0; /* devices and sockets are not copied */
    if (clear_name(dst, name, false) < 0 ||
        mknodat(dst, name, (st->st_mode & S_IFMT) | (perm(st) & 0777), whiteout ? makedev(0, 0) : 0) < 0)
        return failed(x, "creating");
    if (x->o->chown)
        fchownat(dst, name, shift_uid(x->o, st->st_uid), shift_gid(x->o, st->st_gid),
                 AT_SYMLINK_NOFOLLOW);
    return 0;
}

static int copy_dir(struct tcx *x, int src, int dst, int depth);

static int copy_subdir(struct tcx *x, int src, int dst, const char *name, int depth)
{
    int sfd = openat(src, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return errno == ENOENT ? 0 : failed(x, "opening");
    struct stat st;
    if (fstat(sfd, &st) < 0 || st.st_dev != x->dev) {
        close(sfd); /* another filesystem mounted there: not ours to copy */
        return 0;
    }
    if (clear_name(dst, name, true) < 0 || (mkdirat(dst, name, 0700) < 0 && errno != EEXIST)) {
        close(sfd);
        return failed(x, "creating");
    }
    int dfd = openat(dst, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dfd < 0) {
        close(sfd);
        return failed(x, "opening the copy of");
    }
    int rc = copy_dir(x, sfd, dfd, depth + 1);
    if (rc == 0)
        rc = finish_meta(x, sfd, dfd, &st);
    close(sfd);
    close(dfd);
    return rc;
}

struct copy_at {
    struct tcx *x;
    int src, dst, depth;
};

static int copy_one(void *ctx, const char *name)
{
    struct copy_at *c = ctx;
    struct tcx *x = c->x;
    size_t base = strlen(x->path);
    snprintf(x->path + base, sizeof x->path - base, "%s%s", base ? "/" : "", name);
    int rc = 0;
    struct stat st;
    if (fstatat(c->src, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            rc = failed(x, "reading");
    } else if (S_ISDIR(st.st_mode)) {
        rc = copy_subdir(x, c->src, c->dst, name, c->depth);
    } else if (S_ISREG(st.st_mode)) {
        rc = copy_file(x, c->src, c->dst, name, &st);
    } else if (S_ISLNK(st.st_mode)) {
        rc = copy_link(x, c->src, c->dst, name, &st);
    } else {
        rc = copy_node(x, c->dst, name, &st);
    }
    x->path[base] = 0;
    return rc;
}

static int copy_dir(struct tcx *x, int src, int dst, int depth)
{
    if (depth > MAX_DEPTH) {
        errno = ELOOP;
        return failed(x, "too deep:");
    }
    struct copy_at c = {x, src, dst, depth};
    int rc = each_entry(src, copy_one, &c);
    if (rc < 0 && !x->err->msg[0])
        return failed(x, "listing");
    return rc;
}

int tree_copy(int src, int dst, const struct tree_copy_opts *o, struct fb_err *err)
{
    struct tcx x = {.o = o, .err = err};
    struct stat st;
    if (fstat(src, &st) < 0 || !S_ISDIR(st.st_mode))
        return fb_errno(err, FB_EXIT_SETUP, "copying: the source is not a directory");
    x.dev = st.st_dev;
    if (copy_dir(&x, src, dst, 0) < 0)
        return -1;
    return finish_meta(&x, src, dst, &st);
}

struct empty_at_ctx {
    int dir;
    dev_t dev;
    int depth;
    bool failed, removed;
};

static int empty_at(int dir, dev_t dev, int depth);

static int empty_one(void *ctx, const char *name)
{
    struct empty_at_ctx *c = ctx;
    if (unlinkat(c->dir, name, 0) == 0) {
        c->removed = true;
        return 0;
    }
    if (errno == ENOENT)
        return 0;
    if (errno != EISDIR && errno != EPERM) {
        c->failed = true;
        return 0;
    }
    /* A directory: make sure it can be listed and emptied (the sandbox may
     * have made it unsearchable or read-only). */
    fchmodat(c->dir, name, 0700, 0);
    int sub = openat(c->dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (sub < 0 || fstat(sub, &st) < 0 || st.st_dev != c->dev) {
        if (sub >= 0)
            close(sub);
        c->failed = true;
        return 0;
    }
    if (empty_at(sub, c->dev, c->depth + 1) < 0)
        c->failed = true;
    close(sub);
    if (unlinkat(c->dir, name, AT_REMOVEDIR) < 0)
        c->failed = true;
    else
        c->removed = true;
    return 0;
}

static int empty_at(int dir, dev_t dev, int depth)
{
    if (depth > MAX_DEPTH) {
        errno = ELOOP;
        return -1;
    }
    /* Removing entries while listing may make a listing skip some: list
     * again until a pass finds nothing more to remove. */
    for (int pass = 0; pass < 16; pass++) {
        struct empty_at_ctx c = {dir, dev, depth, false, false};
        if (each_entry(dir, empty_one, &c) < 0 || c.failed)
            return -1;
        if (!c.removed)
            return 0;
    }
    return 0;
}

int tree_empty(int dir)
{
    struct stat st;
    if (fstat(dir, &st) < 0)
        return -1;
    return empty_at(dir, st.st_dev, 0);
}

struct measure_ctx {
    int dir;
    dev_t dev;
    int depth;
    int64_t *bytes, *entries;
};

static void measure_at(int dir, dev_t dev, int depth, int64_t *bytes, int64_t *entries);

static int measure_one(void *ctx, const char *name)
{
    struct measure_ctx *c = ctx;
    struct stat st;
    if (fstatat(c->dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
        return 0;
    (*c->entries)++;
    if (S_ISREG(st.st_mode))
        *c->bytes += st.st_size;
    if (S_ISDIR(st.st_mode) && st.st_dev == c->dev && c->depth < MAX_DEPTH) {
        int sub = openat(c->dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0) {
            measure_at(sub, c->dev, c->depth + 1, c->bytes, c->entries);
            close(sub);
        }
    }
    return 0;
}

static void measure_at(int dir, dev_t dev, int depth, int64_t *bytes, int64_t *entries)
{
    struct measure_ctx c = {dir, dev, depth, bytes, entries};
    each_entry(dir, measure_one, &c);
}

void tree_measure(int dir, int64_t *bytes, int64_t *entries)
{
    *bytes = *entries = 0;
    struct stat st;
    if (fstat(dir, &st) == 0)
        measure_at(dir, st.st_dev, 0, bytes, entries);
}
