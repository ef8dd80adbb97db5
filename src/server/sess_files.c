/* sess_files.c — the file operations a session's init performs for the
 * server (docs/protocol.md, session.file.*): read, write, stat, exists,
 * readdir, mkdir, rm and rename, inside the sandbox's mount namespace, as
 * the sandbox user, so a path can only name what the sandbox itself can see
 * and a symlink in the workspace cannot lead to a host file. Opens walk the
 * path without following /proc's magic links (safeopen.c), refuse /proc and
 * /sys (their "self" would be init), and read or write regular files only
 * (a FIFO would block init).
 *
 * It also owns the work these leave running between turns of init's loop
 * (sess_init.c): bulk transfers through the server's pipe, a chunk at a
 * time when the pipe is ready, and recursive removals, a few hundred
 * entries per turn (rmtree.c). Code in the session cannot stop init as it
 * could a helper process, and the server's deadline (--file-timeout)
 * cancels any of them (sfile_cancel). */
#include "sess_files.h"

#include "rmtree.h"
#include "safeopen.h"
#include "sess_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

enum xfer_kind { X_READ, X_WRITE, X_LIST };

/* Open without following "magic" /proc links (fd/, cwd, root, exe): init
 * runs under the sandbox's seccomp filters, which answer openat2 with
 * ENOSYS, so the walk is done here (safeopen.c). */
static int open_safe(const char *path, int flags, mode_t mode)
{
    return safe_open(path, flags, mode, true);
}

/* /proc inside the sandbox describes this init when a path says "self":
 * file operations do not go there (exec `cat` does). */
static bool on_procfs(int fd)
{
    struct statfs sf;
    return fstatfs(fd, &sf) == 0 && (sf.f_type == PROC_SUPER_MAGIC || sf.f_type == SYSFS_MAGIC);
}

static const char *type_name(mode_t m)
{
    if (S_ISREG(m))
        return "file";
    if (S_ISDIR(m))
        return "dir";
    if (S_ISLNK(m))
        return "symlink";
    if (S_ISFIFO(m))
        return "fifo";
    if (S_ISSOCK(m))
        return "socket";
    if (S_ISCHR(m))
        return "char";
    if (S_ISBLK(m))
        return "block";
    return "unknown";
}

static int64_t ts_ms(struct timespec ts)
{
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* mkdir -p; *created set when the last component was made. */
static int mkdir_p(const char *path, mode_t mode, bool *created)
{
    if (created)
        *created = false;
    size_t l = strlen(path);
    char *buf = fb_xstrdup(path);
    while (l > 1 && buf[l - 1] == '/')
        buf[--l] = 0;
    int rc = 0;
    for (char *s = buf + 1;; s++) {
        if (*s && *s != '/')
            continue;
        char c = *s;
        *s = 0;
        if (mkdirat(AT_FDCWD, buf, mode) == 0) {
            if (!c && created)
                *created = true;
        } else if (errno == EEXIST) {
            struct stat st;
            if (stat(buf, &st) < 0) {
                rc = -1;
                break;
            }
            if (!S_ISDIR(st.st_mode)) {
                errno = c ? ENOTDIR : EEXIST;
                rc = -1;
                break;
            }
        } else {
            rc = -1;
            break;
        }
        if (!c)
            break;
        *s = c;
        while (s[1] == '/')
            s++;
    }
    int e = errno;
    free(buf);
    errno = e;
    return rc;
}

static int mkdir_parents(const char *path)
{
    char *d = fb_xstrdup(path);
    char *slash = strrchr(d, '/');
    int rc = 0;
    if (slash && slash != d) {
        *slash = 0;
        rc = mkdir_p(d, 0755, NULL);
    }
    int e = errno;
    free(d);
    errno = e;
    return rc;
}

/* ---- bulk transfers ----
 *
 * Contents and listings over SREC_INLINE go through a pipe the server
 * passed with the request. Init moves them itself, a chunk at a time when
 * the pipe is ready, between the other requests of its loop: init is the
 * pid namespace's init, so code in the session cannot stop or kill it
 * (SIGSTOP and SIGKILL from inside the namespace do not reach it), as it
 * could a helper process. The server's pipe end being slow never blocks
 * init: its end is non-blocking. */

#define XFER_CHUNK 65536

struct xfer {
    int64_t tag;
    enum xfer_kind kind; /* X_READ: file -> pipe; X_WRITE: pipe -> file; X_LIST: buf -> pipe */
    int file, pipe;
    int64_t left;       /* bytes still to move */
    off_t off;          /* X_READ: where in the file */
    char *buf;          /* X_LIST: the listing; else one chunk */
    size_t blen, boff;  /* bytes in buf, bytes of them sent */
    int64_t moved;
    int err;
    /* X_WRITE: where the data lands (see file.write below) */
    int dir;
    off_t keep;
    bool excl;
    char tmp[64], name[256];
    struct xfer *next;
};

static struct xfer *xfers;

static int write_finish(int e, int fd, off_t keep, int dir, const char *tmp, const char *name,
                        bool excl);

static struct xfer *xfer_add(int64_t tag, enum xfer_kind kind, int file, int pipefd, int64_t n,
                             off_t off, char *buf, size_t blen)
{
    struct xfer *x = fb_xcalloc(1, sizeof *x);
    x->dir = -1;
    x->tag = tag;
    x->kind = kind;
    x->file = file;
    x->pipe = fcntl(pipefd, F_DUPFD_CLOEXEC, 3); /* the loop closes the one received */
    if (x->pipe >= 0)
        fcntl(x->pipe, F_SETFL, fcntl(x->pipe, F_GETFL) | O_NONBLOCK);
    else
        x->err = errno;
    x->left = n;
    x->off = off;
    x->buf = buf ? buf : fb_xmalloc(XFER_CHUNK);
    x->blen = blen;
    x->next = xfers;
    xfers = x;
    return x;
}

/* Move what can be moved now. True when the transfer is over. */
static bool xfer_step(struct xfer *x)
{
    if (x->err)
        return true;
    for (int k = 0; k < 16; k++) {
        if (x->kind == X_WRITE) {
            if (!x->left)
                return true;
            size_t want = x->left < XFER_CHUNK ? (size_t)x->left : XFER_CHUNK;
            ssize_t r = read(x->pipe, x->buf, want);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0 && errno == EAGAIN)
                return false;
            if (r <= 0) {
                x->err = r < 0 ? errno : EPIPE; /* the server gave up */
                return true;
            }
            if (fb_write_all(x->file, x->buf, (size_t)r) < 0) {
                x->err = errno ? errno : EIO;
                return true;
            }
            x->left -= r;
            x->moved += r;
            continue;
        }
        if (x->boff == x->blen) {
            if (x->kind == X_LIST || !x->left)
                return true;
            size_t want = x->left < XFER_CHUNK ? (size_t)x->left : XFER_CHUNK;
            ssize_t r = pread(x->file, x->buf, want, x->off);
            if (r < 0 && errno == EINTR)
                continue;
            if (r <= 0) {
                x->err = r < 0 ? errno : 0; /* the file shrank: send what there is */
                return true;
            }
            x->blen = (size_t)r;
            x->boff = 0;
            x->off += r;
            x->left -= r;
        }
        ssize_t w = write(x->pipe, x->buf + x->boff, x->blen - x->boff);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0 && errno == EAGAIN)
            return false;
        if (w < 0) {
            x->err = errno; /* the server is gone from this request */
            return true;
        }
        x->boff += (size_t)w;
    }
    return false;
}

static void xfer_end(struct xfer *x)
{
    if (x->kind == X_WRITE) {
        /* Renamed into place, or the temporary removed (in place: cut back). */
        int e = write_finish(x->err, x->file, x->keep, x->dir, x->tmp[0] ? x->tmp : NULL, x->name,
                             x->excl);
        x->file = -1; /* closed by write_finish */
        if (x->dir >= 0)
            close(x->dir);
        if (e)
            sinit_reply_errno(x->tag, e);
        else
            sinit_reply_ok(x->tag, json_pack("{s:I}", "bytesWritten", (json_int_t)x->moved), NULL, 0);
    }
    /* X_READ / X_LIST were answered at the start: the server sees the
     * pipe's end. */
    if (x->file >= 0)
        close(x->file);
    if (x->pipe >= 0)
        close(x->pipe);
    free(x->buf);
    free(x);
}

/* The transfers' pipes to poll (pf has room for all), then their work. */
static size_t xfer_pollfds(struct pollfd *pf)
{
    size_t n = 0;
    for (struct xfer *x = xfers; x; x = x->next)
        pf[n++] = (struct pollfd){x->pipe, x->kind == X_WRITE ? POLLIN : POLLOUT, 0};
    return n;
}

static void xfer_run(void)
{
    for (struct xfer **pp = &xfers; *pp;) {
        struct xfer *x = *pp;
        if (xfer_step(x)) {
            *pp = x->next;
            xfer_end(x);
        } else {
            pp = &x->next;
        }
    }
}

static size_t xfer_count(void)
{
    size_t n = 0;
    for (struct xfer *x = xfers; x; x = x->next)
        n++;
    return n;
}

/* The server's "kill" for a request whose deadline passed. */
static bool xfer_cancel(int64_t tag)
{
    for (struct xfer **pp = &xfers; *pp; pp = &(*pp)->next) {
        if ((*pp)->tag == tag) {
            struct xfer *x = *pp;
            *pp = x->next;
            x->err = ECANCELED;
            xfer_end(x);
            return true;
        }
    }
    return false;
}

/* ---- operations ---- */

static void op_read(int64_t tag, json_t *h, int *fds, size_t nfds)
{
    const char *path = hstr(h, "path");
    int64_t offset = hint(h, "offset", 0), length = hint(h, "length", -1);
    int64_t max = hint(h, "max", 16 << 20);
    if (!path || nfds < 1 || offset < 0)
        return sinit_reply_errno(tag, EINVAL);
    int fd = open_safe(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return sinit_reply_errno(tag, errno);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return sinit_reply_errno(tag, e);
    }
    int e = 0;
    if (S_ISDIR(st.st_mode))
        e = EISDIR;
    else if (!S_ISREG(st.st_mode))
        e = EINVAL;
    else if (on_procfs(fd))
        e = EACCES;
    if (e) {
        close(fd);
        return sinit_reply_errno(tag, e);
    }
    int64_t size = st.st_size;
    int64_t avail = size > offset ? size - offset : 0;
    int64_t n = length < 0 ? (avail < max ? avail : max) : (length < avail ? length : avail);
    json_t *res = json_pack("{s:I}", "size", (json_int_t)size);
    if (n <= SREC_INLINE) {
        static char buf[SREC_INLINE];
        ssize_t got = 0;
        while (got < n) {
            ssize_t r = pread(fd, buf + got, (size_t)(n - got), offset + got);
            if (r < 0 && errno == EINTR)
                continue;
            if (r < 0) {
                e = errno;
                break;
            }
            if (r == 0)
                break;
            got += r;
        }
        close(fd);
        if (e) {
            json_decref(res);
            return sinit_reply_errno(tag, e);
        }
        return sinit_reply_ok(tag, res, buf, (size_t)got);
    }
    json_object_set_new(res, "bulk", json_integer(n));
    xfer_add(tag, X_READ, fd, fds[0], n, (off_t)offset, NULL, 0);
    sinit_reply_ok(tag, res, NULL, 0);
}

/* ---- file.write ----
 *
 * A write replaces the file whole: the data goes to a new file in the same
 * directory, renamed over the target only once all of it is written, so a
 * full disk or a transfer cut short leaves the old file (or no file), never
 * a partial one. An append writes in place and, when it fails, cuts the
 * file back to its old length. A file that cannot be renamed over (a
 * bind-mounted file, or one in a directory the sandbox user may not write)
 * is written in place, as it always was. */

static unsigned write_seq;

/* Where a write to path lands: its directory (an fd) and the name in it,
 * after following the symlinks of the last component as open() would,
 * inside the sandbox and never through /proc. */
static int write_target(const char *path, int *dirfd, char *name, size_t cap)
{
    char cur[4096];
    snprintf(cur, sizeof cur, "%s", path);
    for (int hops = 0; hops < 40; hops++) {
        char *slash = strrchr(cur, '/');
        const char *base = slash ? slash + 1 : cur;
        if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || strlen(base) >= cap) {
            errno = *base && strlen(base) >= cap ? ENAMETOOLONG : EISDIR;
            return -1;
        }
        char dir[4096];
        if (!slash)
            snprintf(dir, sizeof dir, ".");
        else if (slash == cur)
            snprintf(dir, sizeof dir, "/");
        else
            snprintf(dir, sizeof dir, "%.*s", (int)(slash - cur), cur);
        int d = open_safe(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC, 0);
        if (d < 0)
            return -1;
        if (on_procfs(d)) {
            close(d);
            errno = EACCES;
            return -1;
        }
        struct stat st;
        if (fstatat(d, base, &st, AT_SYMLINK_NOFOLLOW) < 0 || !S_ISLNK(st.st_mode)) {
            snprintf(name, cap, "%s", base);
            *dirfd = d;
            return 0;
        }
        char t[4096];
        ssize_t n = readlinkat(d, base, t, sizeof t - 1);
        close(d);
        if (n < 0)
            return -1;
        t[n] = 0;
        char next[4096];
        if (t[0] == '/' || !slash)
            snprintf(next, sizeof next, "%s", t);
        else if (snprintf(next, sizeof next, "%s/%s", dir, t) >= (int)sizeof next) {
            errno = ENAMETOOLONG;
            return -1;
        }
        memcpy(cur, next, sizeof cur);
    }
    errno = ELOOP;
    return -1;
}

/* Is dir/name a mount point (a file bind-mounted into the sandbox)? */
static bool mount_root(int dir, const char *name)
{
    struct statx sx;
    return statx(dir, name, AT_SYMLINK_NOFOLLOW, 0, &sx) == 0 &&
           (sx.stx_attributes_mask & STATX_ATTR_MOUNT_ROOT) &&
           (sx.stx_attributes & STATX_ATTR_MOUNT_ROOT);
}

/* The end of a write, e being 0 or the transfer's errno: a new file (tmp)
 * is renamed into place ("exclusive": only where nothing is, else EEXIST),
 * or removed on failure; a file written in place (tmp NULL) is cut back to
 * `keep` bytes on failure. Closes fd. Returns 0 or an errno value. */
static int write_finish(int e, int fd, off_t keep, int dir, const char *tmp, const char *name,
                        bool excl)
{
    if (e && !tmp)
        (void)!ftruncate(fd, keep);
    if (close(fd) < 0 && !e)
        e = errno;
    if (!tmp)
        return e;
    if (!e && !excl) {
        if (renameat(dir, tmp, dir, name) == 0)
            return 0;
        e = errno;
    } else if (!e) {
        if (renameat2(dir, tmp, dir, name, RENAME_NOREPLACE) == 0)
            return 0;
        e = errno;
        if ((e == EINVAL || e == ENOSYS) && linkat(dir, tmp, dir, name, 0) == 0)
            e = 0; /* no RENAME_NOREPLACE on this file system: linked, tmp goes */
        else if (e == EINVAL || e == ENOSYS)
            e = errno;
    }
    unlinkat(dir, tmp, 0);
    return e;
}

/* Open the file to write: a new temporary file next to the target (its
 * name in tmp), or the target itself in place (tmp[0] = 0, *keep = the
 * length to cut back to). Returns the fd, or -1 with errno. */
static int write_open(int dir, const char *name, bool append, bool excl, mode_t mode, char *tmp,
                      size_t cap, off_t *keep)
{
    struct stat st;
    bool exists = fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0;
    if (!exists && errno != ENOENT)
        return -1;
    if (exists && excl)
        return errno = EEXIST, -1;
    if (exists && S_ISDIR(st.st_mode))
        return errno = EISDIR, -1;
    if (exists && !S_ISREG(st.st_mode))
        return errno = EINVAL, -1;
    tmp[0] = 0;
    *keep = 0;
    if (!exists || !(append || mount_root(dir, name))) {
        snprintf(tmp, cap, ".fluebox-write-%d-%u-%llx", (int)getpid(), write_seq++,
                 (unsigned long long)(fb_now_ns() & 0xffffffffffull));
        int fd = openat(dir, tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
                        exists ? st.st_mode & 07777 : mode);
        if (fd >= 0 || !exists || (errno != EACCES && errno != EPERM && errno != EROFS)) {
            if (fd < 0)
                tmp[0] = 0;
            return fd;
        }
        tmp[0] = 0; /* a directory we may not write in: in place */
    }
    int fd = openat(dir, name, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat fst;
    int e = 0;
    if (fstat(fd, &fst) < 0)
        e = errno;
    else if (!S_ISREG(fst.st_mode))
        e = EINVAL;
    else if (on_procfs(fd))
        e = EACCES;
    else if (!append && ftruncate(fd, 0) < 0)
        e = errno;
    if (e) {
        close(fd);
        return errno = e, -1;
    }
    *keep = append ? fst.st_size : 0;
    fcntl(fd, F_SETFL, append ? O_APPEND : 0); /* clears O_NONBLOCK */
    return fd;
}

static void op_write(int64_t tag, json_t *h, const char *payload, size_t plen, int *fds,
                     size_t nfds)
{
    const char *path = hstr(h, "path");
    int64_t size = hint(h, "size", -1);
    bool inl = hbool(h, "inline"), excl = hbool(h, "exclusive");
    if (!path || size < 0 || (inl && (size_t)size != plen) || (!inl && nfds < 1))
        return sinit_reply_errno(tag, EINVAL);
    if (hbool(h, "parents") && mkdir_parents(path) < 0)
        return sinit_reply_errno(tag, errno);
    mode_t mode = (mode_t)(hint(h, "mode", 0644) & 07777);
    int dir;
    char name[256], tmp[64];
    off_t keep;
    if (write_target(path, &dir, name, sizeof name) < 0)
        return sinit_reply_errno(tag, errno);
    int fd = write_open(dir, name, hbool(h, "append"), excl, mode, tmp, sizeof tmp, &keep);
    if (fd < 0) {
        int e = errno;
        close(dir);
        return sinit_reply_errno(tag, e);
    }
    const char *t = tmp[0] ? tmp : NULL;
    if (inl) {
        int e = fb_write_all(fd, payload, plen) < 0 ? (errno ? errno : EIO) : 0;
        e = write_finish(e, fd, keep, dir, t, name, excl);
        close(dir);
        if (e)
            return sinit_reply_errno(tag, e);
        return sinit_reply_ok(tag, json_pack("{s:I}", "bytesWritten", (json_int_t)plen), NULL, 0);
    }
    struct xfer *x = xfer_add(tag, X_WRITE, fd, fds[0], size, 0, NULL, 0);
    x->dir = dir; /* the end of the transfer finishes the write (write_finish) */
    x->keep = keep;
    x->excl = excl;
    snprintf(x->tmp, sizeof x->tmp, "%s", tmp);
    snprintf(x->name, sizeof x->name, "%s", name);
}

static json_t *stat_json(const struct stat *st)
{
    return json_pack("{s:s, s:I, s:i, s:i, s:i, s:I, s:I, s:I, s:I}", "type",
                     type_name(st->st_mode), "size", (json_int_t)st->st_size, "mode",
                     (int)(st->st_mode & 07777), "uid", (int)st->st_uid, "gid", (int)st->st_gid,
                     "nlink", (json_int_t)st->st_nlink, "mtimeMs", (json_int_t)ts_ms(st->st_mtim),
                     "atimeMs", (json_int_t)ts_ms(st->st_atim), "ctimeMs",
                     (json_int_t)ts_ms(st->st_ctim));
}

static void op_stat(int64_t tag, json_t *h, bool exists)
{
    const char *path = hstr(h, "path");
    if (!path)
        return sinit_reply_errno(tag, EINVAL);
    bool follow = !json_is_false(json_object_get(h, "follow"));
    struct stat st;
    int pfd = safe_open(path, O_PATH | O_CLOEXEC, 0, follow);
    if (pfd < 0 || fstat(pfd, &st) < 0) {
        int e = errno;
        if (pfd >= 0)
            close(pfd);
        if (exists && (e == ENOENT || e == ENOTDIR))
            return sinit_reply_ok(tag, json_pack("{s:b}", "exists", 0), NULL, 0);
        return sinit_reply_errno(tag, e);
    }
    if (exists)
        return sinit_reply_ok(tag, json_pack("{s:b, s:s}", "exists", 1, "type", type_name(st.st_mode)),
                        NULL, 0);
    json_t *res = stat_json(&st);
    if (S_ISLNK(st.st_mode)) {
        char t[4096];
        ssize_t l = readlinkat(pfd, "", t, sizeof t - 1);
        close(pfd);
        if (l >= 0) {
            /* The server repairs non-UTF-8 bytes; send raw as payload. */
            return sinit_reply_ok(tag, res, t, (size_t)l);
        }
        return sinit_reply_ok(tag, res, NULL, 0);
    }
    close(pfd);
    sinit_reply_ok(tag, res, NULL, 0);
}

static char dtype_char(unsigned char t)
{
    switch (t) {
    case DT_REG: return 'f';
    case DT_DIR: return 'd';
    case DT_LNK: return 'l';
    case DT_FIFO: return 'p';
    case DT_SOCK: return 's';
    case DT_CHR: return 'c';
    case DT_BLK: return 'b';
    default: return '?';
    }
}

/* Listing payload: for each entry, a type letter, the name, a NUL. */
static void op_readdir(int64_t tag, json_t *h, int *fds, size_t nfds)
{
    const char *path = hstr(h, "path");
    int64_t max = hint(h, "max", 16 << 20);
    if (!path || nfds < 1)
        return sinit_reply_errno(tag, EINVAL);
    int fd = open_safe(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0)
        return sinit_reply_errno(tag, errno);
    if (on_procfs(fd)) {
        close(fd);
        return sinit_reply_errno(tag, EACCES);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return sinit_reply_errno(tag, e);
    }
    struct fb_buf out = {0};
    struct dirent *de;
    int e = 0;
    errno = 0;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char t = dtype_char(de->d_type);
        if (t == '?') {
            struct stat st;
            if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0)
                t = dtype_char(S_ISREG(st.st_mode)   ? DT_REG
                               : S_ISDIR(st.st_mode) ? DT_DIR
                               : S_ISLNK(st.st_mode) ? DT_LNK
                                                     : DT_UNKNOWN);
        }
        buf_append(&out, &t, 1);
        buf_append(&out, de->d_name, strlen(de->d_name) + 1);
        if ((int64_t)out.len > max) {
            e = E2BIG;
            break;
        }
        errno = 0;
    }
    if (!e && errno)
        e = errno;
    closedir(d);
    if (e) {
        buf_free(&out);
        return sinit_reply_errno(tag, e);
    }
    if (out.len <= SREC_INLINE) {
        sinit_reply_ok(tag, json_object(), out.data, out.len);
        buf_free(&out);
        return;
    }
    sinit_reply_ok(tag, json_pack("{s:I}", "bulk", (json_int_t)out.len), NULL, 0);
    xfer_add(tag, X_LIST, -1, fds[0], 0, 0, out.data, out.len); /* takes the listing */
}

static void op_mkdir(int64_t tag, json_t *h)
{
    const char *path = hstr(h, "path");
    if (!path)
        return sinit_reply_errno(tag, EINVAL);
    mode_t mode = (mode_t)(hint(h, "mode", 0755) & 07777);
    bool created = false;
    if (hbool(h, "recursive")) {
        if (mkdir_p(path, mode, &created) < 0)
            return sinit_reply_errno(tag, errno);
    } else {
        if (mkdirat(AT_FDCWD, path, mode) < 0)
            return sinit_reply_errno(tag, errno);
        created = true;
    }
    sinit_reply_ok(tag, json_pack("{s:b}", "created", created), NULL, 0);
}

/* Recursive removals under way: init does them a few hundred entries per
 * turn of its loop (rmtree.c), between its other work, so code in the
 * session can no more hold one up than it can stop init. */
struct rmjob {
    int64_t tag;
    struct rmtree *t;
    struct rmjob *next;
};

static struct rmjob *rmjobs;

#define RM_STEP 256

static void rm_run(void)
{
    for (struct rmjob **pp = &rmjobs; *pp;) {
        struct rmjob *j = *pp;
        if (!rmtree_step(j->t, RM_STEP)) {
            pp = &j->next;
            continue;
        }
        *pp = j->next;
        int e = rmtree_free(j->t);
        if (e)
            sinit_reply_errno(j->tag, e);
        else
            sinit_reply_ok(j->tag, json_pack("{s:b}", "removed", 1), NULL, 0);
        free(j);
    }
}

/* The server's "kill" for a removal whose deadline passed: what is
 * removed stays removed, the rest stays. */
static bool rm_cancel(int64_t tag)
{
    for (struct rmjob **pp = &rmjobs; *pp; pp = &(*pp)->next) {
        if ((*pp)->tag == tag) {
            struct rmjob *j = *pp;
            *pp = j->next;
            rmtree_free(j->t);
            free(j);
            return true;
        }
    }
    return false;
}

static void op_rm(int64_t tag, json_t *h)
{
    const char *path = hstr(h, "path");
    if (!path)
        return sinit_reply_errno(tag, EINVAL);
    bool force = hbool(h, "force");
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (force && errno == ENOENT)
            return sinit_reply_ok(tag, json_pack("{s:b}", "removed", 0), NULL, 0);
        return sinit_reply_errno(tag, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(AT_FDCWD, path, 0) < 0)
            return sinit_reply_errno(tag, errno);
        return sinit_reply_ok(tag, json_pack("{s:b}", "removed", 1), NULL, 0);
    }
    if (!hbool(h, "recursive"))
        return sinit_reply_errno(tag, EISDIR);
    int e;
    struct rmtree *t = rmtree_start(path, st.st_dev, &e);
    if (!t)
        return sinit_reply_errno(tag, e);
    struct rmjob *j = fb_xcalloc(1, sizeof *j);
    *j = (struct rmjob){tag, t, rmjobs};
    rmjobs = j;
}

static void op_rename(int64_t tag, json_t *h)
{
    const char *from = hstr(h, "from"), *to = hstr(h, "to");
    if (!from || !to)
        return sinit_reply_errno(tag, EINVAL);
    int r;
    if (json_is_false(json_object_get(h, "overwrite")))
        r = renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
    else
        r = rename(from, to);
    if (r < 0)
        return sinit_reply_errno(tag, errno);
    sinit_reply_ok(tag, NULL, NULL, 0);
}

/* ---- what init's loop calls ---- */

bool sfile_dispatch(const char *op, int64_t tag, json_t *h, const char *payload, size_t plen,
                    int *fds, size_t nfds)
{
    if (!strcmp(op, "read"))
        op_read(tag, h, fds, nfds);
    else if (!strcmp(op, "write"))
        op_write(tag, h, payload, plen, fds, nfds);
    else if (!strcmp(op, "stat"))
        op_stat(tag, h, false);
    else if (!strcmp(op, "exists"))
        op_stat(tag, h, true);
    else if (!strcmp(op, "readdir"))
        op_readdir(tag, h, fds, nfds);
    else if (!strcmp(op, "mkdir"))
        op_mkdir(tag, h);
    else if (!strcmp(op, "rm"))
        op_rm(tag, h);
    else if (!strcmp(op, "rename"))
        op_rename(tag, h);
    else
        return false;
    return true;
}

size_t sfile_npoll(void)
{
    return xfer_count();
}

size_t sfile_pollfds(struct pollfd *pf)
{
    return xfer_pollfds(pf);
}

void sfile_step(bool polled)
{
    if (polled)
        xfer_run(); /* each moves what it can without waiting */
    rm_run();
}

bool sfile_busy(void)
{
    return rmjobs != NULL;
}

bool sfile_cancel(int64_t tag)
{
    return xfer_cancel(tag) || rm_cancel(tag);
}
