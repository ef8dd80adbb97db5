/* sess_init.c — pid 1 of a session sandbox. init_main() execs a fresh image of
 * fluebox once capabilities are dropped (sess_init_image(): undumpable
 * again, then seccomp loaded), or, where it cannot, calls sess_init_main()
 * once seccomp is loaded; either way this loop then serves the server's
 * records (sess_sandbox.h) on the control socket:
 *
 *   exec     fork; the child takes the pipes the server passed as 0/1/2 and
 *            execs through init_exec_child(): same namespaces, cgroup,
 *            seccomp and uid as everything else in the sandbox. Output never
 *            passes through init: the server reads the pipes itself.
 *   kill     signal an exec's process group.
 *   sock     an IPv4 and an IPv6 TCP socket of the sandbox's network
 *            namespace, passed back to the server, which connects them to
 *            a published port (server_port.c); init does nothing else
 *            with them.
 *   file ops performed here, inside the sandbox's mount namespace, as the
 *            sandbox user: a path can only name what the sandbox itself can
 *            see, so a symlink in the workspace cannot lead to a host file.
 *            Opens use openat2(RESOLVE_NO_MAGICLINKS) where available, refuse
 *            /proc (its "self" would be this init), and handle only regular
 *            files for read/write (a FIFO would block init).
 *   bulk     file contents over SREC_INLINE and big listings go through
 *            the server's pipe, moved by init itself a chunk at a time when
 *            the pipe is ready (see "bulk transfers"): code in the session
 *            cannot stop init as it could a helper. A recursive removal is
 *            done the same way, a few hundred entries per turn of the loop
 *            (rmtree.c); the server's deadline (--file-timeout) bounds all
 *            of them.
 *
 * init also reaps every orphan. If the server goes away (EOF on the control
 * socket) init exits, which kills everything in the sandbox. */
#include "init.h"

#include "ctl.h"
#include "pty.h"
#include "rmtree.h"
#include "safeopen.h"
#include "seccomp.h"
#include "sess_sandbox.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/magic.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

enum job_kind { J_EXEC, J_READ, J_WRITE, J_LIST };

struct job {
    pid_t pid;
    int64_t tag;
    enum job_kind kind;
    int64_t bytes;
};

static struct job *jobs;
static size_t njobs, capjobs;
static int ctl_fd = -1;
static const struct fb_policy *pol;
static char *recbuf;

static void job_add(pid_t pid, int64_t tag, enum job_kind kind, int64_t bytes)
{
    if (njobs == capjobs) {
        capjobs = capjobs ? capjobs * 2 : 16;
        jobs = fb_xrealloc(jobs, capjobs * sizeof *jobs);
    }
    jobs[njobs++] = (struct job){pid, tag, kind, bytes};
}

static struct job *job_by_pid(pid_t pid)
{
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].pid == pid)
            return &jobs[i];
    return NULL;
}

static struct job *exec_by_tag(int64_t tag)
{
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].kind == J_EXEC && jobs[i].tag == tag)
            return &jobs[i];
    return NULL;
}

static void job_del(struct job *j)
{
    *j = jobs[--njobs];
}

/* ---- replies ---- */

static void send_rec_fds(json_t *hdr, const void *payload, size_t plen, int *fds, size_t nfds)
{
    size_t len;
    char *rec = srec_encode(hdr, payload, plen, &len);
    if (!rec)
        return;
    /* Blocking: the server reads its control sockets promptly (and a
     * shortage of kernel memory is waited out, ctl.c). A record that cannot
     * be sent is a request never answered: if the server is gone, so is
     * init; otherwise it ends the session rather than leave it hanging. */
    if (srec_send(ctl_fd, rec, len, fds, nfds, 0) < 0)
        _exit(errno == EPIPE || errno == ECONNRESET ? 0 : FB_EXIT_SETUP);
    free(rec);
}

static void send_rec(json_t *hdr, const void *payload, size_t plen)
{
    send_rec_fds(hdr, payload, plen, NULL, 0);
}

static void reply_ok(int64_t tag, json_t *result, const void *payload, size_t plen)
{
    json_t *h = json_pack("{s:s, s:I, s:o}", "op", "reply", "t", (json_int_t)tag, "result",
                          result ? result : json_object());
    send_rec(h, payload, plen);
}

static void reply_errno(int64_t tag, int e)
{
    json_t *h = json_pack("{s:s, s:I, s:i}", "op", "reply", "t", (json_int_t)tag, "errno",
                          e > 0 ? e : EIO);
    send_rec(h, NULL, 0);
}

/* ---- helpers for file operations ---- */

static const char *hstr(json_t *h, const char *k)
{
    const char *s = json_string_value(json_object_get(h, k));
    return s && *s ? s : NULL;
}

static int64_t hint(json_t *h, const char *k, int64_t d)
{
    json_t *v = json_object_get(h, k);
    return json_is_integer(v) ? json_integer_value(v) : d;
}

static bool hbool(json_t *h, const char *k)
{
    return json_is_true(json_object_get(h, k));
}

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

/* fork() without glibc's fork(): that one takes every malloc arena lock
 * and the stdio list lock first. This init is a clone of one thread of a
 * multi-threaded server (sess_sandbox.c's worker; egress resolver threads may
 * exist too): a lock another server thread held at that instant is held
 * forever in our copy, and glibc's fork() would wait for it. A raw clone
 * takes no lock; the child uses only this thread's own arena. */
static pid_t raw_fork(void)
{
    return (pid_t)syscall(SYS_clone, SIGCHLD, 0, NULL, NULL, 0);
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
    enum job_kind kind; /* J_READ: file -> pipe; J_WRITE: pipe -> file; J_LIST: buf -> pipe */
    int file, pipe;
    int64_t left;       /* bytes still to move */
    off_t off;          /* J_READ: where in the file */
    char *buf;          /* J_LIST: the listing; else one chunk */
    size_t blen, boff;  /* bytes in buf, bytes of them sent */
    int64_t moved;
    int err;
    /* J_WRITE: where the data lands (see file.write below) */
    int dir;
    off_t keep;
    bool excl;
    char tmp[64], name[256];
    struct xfer *next;
};

static struct xfer *xfers;

static int write_finish(int e, int fd, off_t keep, int dir, const char *tmp, const char *name,
                        bool excl);

static struct xfer *xfer_add(int64_t tag, enum job_kind kind, int file, int pipefd, int64_t n,
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
        if (x->kind == J_WRITE) {
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
            if (x->kind == J_LIST || !x->left)
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
    if (x->kind == J_WRITE) {
        /* Renamed into place, or the temporary removed (in place: cut back). */
        int e = write_finish(x->err, x->file, x->keep, x->dir, x->tmp[0] ? x->tmp : NULL, x->name,
                             x->excl);
        x->file = -1; /* closed by write_finish */
        if (x->dir >= 0)
            close(x->dir);
        if (e)
            reply_errno(x->tag, e);
        else
            reply_ok(x->tag, json_pack("{s:I}", "bytesWritten", (json_int_t)x->moved), NULL, 0);
    }
    /* J_READ / J_LIST were answered at the start: the server sees the
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
        pf[n++] = (struct pollfd){x->pipe, x->kind == J_WRITE ? POLLIN : POLLOUT, 0};
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
        return reply_errno(tag, EINVAL);
    int fd = open_safe(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return reply_errno(tag, errno);
    struct stat st;
    if (fstat(fd, &st) < 0) {
        int e = errno;
        close(fd);
        return reply_errno(tag, e);
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
        return reply_errno(tag, e);
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
            return reply_errno(tag, e);
        }
        return reply_ok(tag, res, buf, (size_t)got);
    }
    json_object_set_new(res, "bulk", json_integer(n));
    xfer_add(tag, J_READ, fd, fds[0], n, (off_t)offset, NULL, 0);
    reply_ok(tag, res, NULL, 0);
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
        return reply_errno(tag, EINVAL);
    if (hbool(h, "parents") && mkdir_parents(path) < 0)
        return reply_errno(tag, errno);
    mode_t mode = (mode_t)(hint(h, "mode", 0644) & 07777);
    int dir;
    char name[256], tmp[64];
    off_t keep;
    if (write_target(path, &dir, name, sizeof name) < 0)
        return reply_errno(tag, errno);
    int fd = write_open(dir, name, hbool(h, "append"), excl, mode, tmp, sizeof tmp, &keep);
    if (fd < 0) {
        int e = errno;
        close(dir);
        return reply_errno(tag, e);
    }
    const char *t = tmp[0] ? tmp : NULL;
    if (inl) {
        int e = fb_write_all(fd, payload, plen) < 0 ? (errno ? errno : EIO) : 0;
        e = write_finish(e, fd, keep, dir, t, name, excl);
        close(dir);
        if (e)
            return reply_errno(tag, e);
        return reply_ok(tag, json_pack("{s:I}", "bytesWritten", (json_int_t)plen), NULL, 0);
    }
    struct xfer *x = xfer_add(tag, J_WRITE, fd, fds[0], size, 0, NULL, 0);
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
        return reply_errno(tag, EINVAL);
    bool follow = !json_is_false(json_object_get(h, "follow"));
    struct stat st;
    int pfd = safe_open(path, O_PATH | O_CLOEXEC, 0, follow);
    if (pfd < 0 || fstat(pfd, &st) < 0) {
        int e = errno;
        if (pfd >= 0)
            close(pfd);
        if (exists && (e == ENOENT || e == ENOTDIR))
            return reply_ok(tag, json_pack("{s:b}", "exists", 0), NULL, 0);
        return reply_errno(tag, e);
    }
    if (exists)
        return reply_ok(tag, json_pack("{s:b, s:s}", "exists", 1, "type", type_name(st.st_mode)),
                        NULL, 0);
    json_t *res = stat_json(&st);
    if (S_ISLNK(st.st_mode)) {
        char t[4096];
        ssize_t l = readlinkat(pfd, "", t, sizeof t - 1);
        close(pfd);
        if (l >= 0) {
            /* The server repairs non-UTF-8 bytes; send raw as payload. */
            return reply_ok(tag, res, t, (size_t)l);
        }
        return reply_ok(tag, res, NULL, 0);
    }
    close(pfd);
    reply_ok(tag, res, NULL, 0);
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
        return reply_errno(tag, EINVAL);
    int fd = open_safe(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NONBLOCK, 0);
    if (fd < 0)
        return reply_errno(tag, errno);
    if (on_procfs(fd)) {
        close(fd);
        return reply_errno(tag, EACCES);
    }
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return reply_errno(tag, e);
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
        return reply_errno(tag, e);
    }
    if (out.len <= SREC_INLINE) {
        reply_ok(tag, json_object(), out.data, out.len);
        buf_free(&out);
        return;
    }
    reply_ok(tag, json_pack("{s:I}", "bulk", (json_int_t)out.len), NULL, 0);
    xfer_add(tag, J_LIST, -1, fds[0], 0, 0, out.data, out.len); /* takes the listing */
}

static void op_mkdir(int64_t tag, json_t *h)
{
    const char *path = hstr(h, "path");
    if (!path)
        return reply_errno(tag, EINVAL);
    mode_t mode = (mode_t)(hint(h, "mode", 0755) & 07777);
    bool created = false;
    if (hbool(h, "recursive")) {
        if (mkdir_p(path, mode, &created) < 0)
            return reply_errno(tag, errno);
    } else {
        if (mkdirat(AT_FDCWD, path, mode) < 0)
            return reply_errno(tag, errno);
        created = true;
    }
    reply_ok(tag, json_pack("{s:b}", "created", created), NULL, 0);
}

/* Remove name under dirfd, depth first, never following symlinks and never
 * descending into another filesystem (a mount point answers EBUSY). */
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
            reply_errno(j->tag, e);
        else
            reply_ok(j->tag, json_pack("{s:b}", "removed", 1), NULL, 0);
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
        return reply_errno(tag, EINVAL);
    bool force = hbool(h, "force");
    struct stat st;
    if (fstatat(AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (force && errno == ENOENT)
            return reply_ok(tag, json_pack("{s:b}", "removed", 0), NULL, 0);
        return reply_errno(tag, errno);
    }
    if (!S_ISDIR(st.st_mode)) {
        if (unlinkat(AT_FDCWD, path, 0) < 0)
            return reply_errno(tag, errno);
        return reply_ok(tag, json_pack("{s:b}", "removed", 1), NULL, 0);
    }
    if (!hbool(h, "recursive"))
        return reply_errno(tag, EISDIR);
    int e;
    struct rmtree *t = rmtree_start(path, st.st_dev, &e);
    if (!t)
        return reply_errno(tag, e);
    struct rmjob *j = fb_xcalloc(1, sizeof *j);
    *j = (struct rmjob){tag, t, rmjobs};
    rmjobs = j;
}

static void op_rename(int64_t tag, json_t *h)
{
    const char *from = hstr(h, "from"), *to = hstr(h, "to");
    if (!from || !to)
        return reply_errno(tag, EINVAL);
    int r;
    if (json_is_false(json_object_get(h, "overwrite")))
        r = renameat2(AT_FDCWD, from, AT_FDCWD, to, RENAME_NOREPLACE);
    else
        r = rename(from, to);
    if (r < 0)
        return reply_errno(tag, errno);
    reply_ok(tag, NULL, NULL, 0);
}

static char **strv_from_json(json_t *a)
{
    size_t n = json_array_size(a);
    char **v = fb_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        const char *s = json_string_value(json_array_get(a, i));
        v[i] = (char *)(s ? s : "");
    }
    return v;
}

static void lower_limit(int res, int64_t v)
{
    if (v <= 0)
        return;
    struct rlimit rl;
    if (getrlimit(res, &rl) < 0)
        return;
    rlim_t n = (rlim_t)v;
    if (rl.rlim_max != RLIM_INFINITY && n > rl.rlim_max)
        n = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = n;
    setrlimit(res, &rl);
}

static void op_exec(int64_t tag, json_t *h, int *fds, size_t nfds)
{
    json_t *argv = json_object_get(h, "argv"), *env = json_object_get(h, "env");
    const char *cwd = hstr(h, "cwd");
    if (!json_is_array(argv) || !json_array_size(argv) || !json_is_array(env) || nfds < 2)
        return reply_errno(tag, EINVAL);
    bool has_stdin = hbool(h, "stdin") && nfds >= 3;
    /* "tty": a pseudo-terminal of the sandbox's own devpts, the command's
     * controlling terminal in a new session; its master goes to the server
     * with the "started" record. */
    json_t *tty = json_object_get(h, "tty");
    int ptm = -1, pts = -1;
    if (json_is_object(tty)) {
        ptm = fb_pty_open((int)hint(tty, "rows", 24), (int)hint(tty, "cols", 80), &pts);
        if (ptm < 0)
            return reply_errno(tag, errno);
    }
    pid_t pid = raw_fork();
    if (pid < 0) {
        int e = errno;
        if (ptm >= 0) {
            close(ptm);
            close(pts);
        }
        return reply_errno(tag, e);
    }
    if (pid == 0) {
        if (ptm >= 0) {
            if (fb_pty_take(pts) < 0)
                _exit(FB_EXIT_SETUP);
        } else {
            setpgid(0, 0);
            int in = has_stdin ? fds[2] : open("/dev/null", O_RDONLY | O_CLOEXEC);
            /* fds are >= 3 here (0, 1, 2 are /dev/null in init), so dup2
             * never clobbers one of them before it is used. */
            if (in < 0 || dup2(in, 0) < 0 || dup2(fds[0], 1) < 0 || dup2(fds[1], 2) < 0)
                _exit(FB_EXIT_SETUP);
        }
        umask(022);
        lower_limit(RLIMIT_NOFILE, hint(h, "nofile", 0));
        lower_limit(RLIMIT_FSIZE, hint(h, "fsize", 0));
        char **av = strv_from_json(argv), **ev = strv_from_json(env);
        init_exec_child(pol, av, ev, cwd, -1);
    }
    if (ptm < 0)
        setpgid(pid, pid); /* both sides, so kill(-pid) works at once */
    job_add(pid, tag, J_EXEC, 0);
    send_rec_fds(json_pack("{s:s, s:I, s:i}", "op", "started", "t", (json_int_t)tag, "pid", (int)pid),
                 NULL, 0, ptm >= 0 ? &ptm : NULL, ptm >= 0 ? 1 : 0);
    if (ptm >= 0) {
        close(ptm);
        close(pts);
    }
}

/* Sockets of this network namespace for a published port's connection. */
static void op_sock(int64_t tag)
{
    int fds[2];
    size_t n = 0;
    fds[0] = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[0] < 0)
        return reply_errno(tag, errno);
    n++;
    fds[1] = socket(AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fds[1] >= 0)
        n++;
    size_t len;
    char *rec = srec_encode(json_pack("{s:s, s:I, s:{}}", "op", "reply", "t", (json_int_t)tag, "result"),
                            NULL, 0, &len);
    if (rec)
        srec_send(ctl_fd, rec, len, fds, n, 0);
    free(rec);
    for (size_t i = 0; i < n; i++)
        close(fds[i]);
}

static void op_kill(json_t *h)
{
    int64_t target = hint(h, "target", -1);
    int sig = (int)hint(h, "sig", SIGKILL);
    if (sig <= 0 || sig >= 32)
        return;
    struct job *j = exec_by_tag(target);
    if (j) {
        if (kill(-j->pid, sig) < 0)
            kill(j->pid, sig);
        return;
    }
    /* A file operation whose deadline passed at the server. */
    if (xfer_cancel(target) || rm_cancel(target))
        return;
    for (size_t i = 0; i < njobs; i++)
        if (jobs[i].tag == target && jobs[i].kind != J_EXEC)
            kill(jobs[i].pid, SIGKILL);
}

static void dispatch(json_t *h, const char *payload, size_t plen, int *fds, size_t nfds)
{
    const char *op = hstr(h, "op");
    int64_t tag = hint(h, "t", -1);
    if (!op)
        return;
    if (!strcmp(op, "exec"))
        op_exec(tag, h, fds, nfds);
    else if (!strcmp(op, "kill"))
        op_kill(h);
    else if (!strcmp(op, "sock"))
        op_sock(tag);
    else if (!strcmp(op, "read"))
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
        reply_errno(tag, ENOSYS);
}

static void reap(void)
{
    int status;
    pid_t w;
    while ((w = waitpid(-1, &status, WNOHANG)) > 0) {
        struct job *j = job_by_pid(w);
        if (!j)
            continue; /* an orphan */
        int64_t tag = j->tag;
        switch (j->kind) {
        case J_EXEC:
            send_rec(json_pack("{s:s, s:I, s:i}", "op", "exit", "t", (json_int_t)tag, "status",
                               status),
                     NULL, 0);
            break;
        case J_READ:
        case J_WRITE:
        case J_LIST:
            break; /* transfers are init's own work (xfer), not processes */
        }
        job_del(j);
    }
}

/* The loop itself, in whichever image runs it: scratch is the scratch
 * space's descriptor that init keeps (the server takes it back when it
 * needs it), or -1. */
__attribute__((noreturn)) static void init_loop(const struct fb_policy *p, int ctl, int scratch)
{
    pol = p;
    ctl_fd = ctl;
    /* The server's descriptors came along with the clone (other sessions'
     * pipes and control sockets, client connections): none of them belongs
     * here, and a copy would hold their other ends open. */
    int keep[2] = {ctl, scratch};
    if (keep[1] >= 0 && keep[1] < keep[0]) {
        keep[1] = keep[0];
        keep[0] = scratch;
    }
    unsigned from = 3;
    for (int i = 0; i < 2; i++) {
        if (keep[i] < 0)
            continue;
        if ((unsigned)keep[i] > from)
            syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    syscall(SYS_close_range, from, ~0U, 0);
    /* A write past RLIMIT_FSIZE must fail with EFBIG, not kill init. */
    signal(SIGXFSZ, SIG_IGN);
    umask(0);
    if (chdir("/") < 0)
        _exit(FB_EXIT_SETUP);
    /* Nothing of the server's stdio stays inside the sandbox. */
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul >= 0) {
        for (int i = 0; i < 3; i++)
            if (nul != i)
                dup2(nul, i);
        if (nul > 2)
            close(nul);
    }
    /* SIGCHLD is blocked already (init_main); read it from a signalfd. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGCHLD);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
    recbuf = fb_xmalloc(SREC_MAX);
    if (sfd < 0 || ctl_sendf(ctl, FB_MSG_READY, 0, "ready") < 0)
        _exit(FB_EXIT_SETUP);

    struct pollfd *pf = NULL;
    size_t pfcap = 0;
    for (;;) {
        size_t need = 2 + xfer_count();
        if (need > pfcap) {
            pfcap = need * 2;
            pf = fb_xrealloc(pf, pfcap * sizeof *pf);
        }
        pf[0] = (struct pollfd){ctl, POLLIN, 0};
        pf[1] = (struct pollfd){sfd, POLLIN, 0};
        size_t n = 2 + xfer_pollfds(pf + 2);
        /* A removal under way: look, do not wait. */
        if (poll(pf, n, rmjobs ? 0 : -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(FB_EXIT_SETUP);
        }
        if (n > 2)
            xfer_run(); /* each moves what it can without waiting */
        rm_run();
        if (pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                ;
            reap();
        }
        if (!pf[0].revents)
            continue;
        for (int k = 0; k < 64; k++) {
            json_t *h;
            const char *payload;
            size_t plen;
            int fds[8];
            size_t nfds = 8;
            int r = srec_recv(ctl, recbuf, MSG_DONTWAIT, &h, &payload, &plen, fds, &nfds);
            if (r == 0)
                _exit(0); /* the server is gone: so is the sandbox */
            if (r < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    break;
                if (errno == EPROTO)
                    continue;
                _exit(FB_EXIT_SETUP);
            }
            dispatch(h, payload, plen, fds, nfds);
            json_decref(h);
            for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
        }
        /* Reap between batches too: a fast exec may be done already. */
        reap();
    }
}

void sess_init_main(const struct fb_policy *p, int ctl)
{
    init_loop(p, ctl, sandbox_session_scratch());
}

/* A descriptor number from the command line: digits only, in range. */
static int arg_fd(const char *a, int min)
{
    char *end;
    errno = 0;
    long v = strtol(a, &end, 10);
    if (errno || end == a || *end || v < min || v > INT_MAX)
        return -2;
    return (int)v;
}

int sess_init_image(int argc, char **argv)
{
    /* The exec made this process dumpable again: before anything else, so
     * that nothing of the sandbox's uid can read or trace its memory and
     * descriptors through /proc/1 (init_main did the same in the image
     * before). Nothing else runs in the sandbox yet: the server starts
     * commands only once this loop says ready. */
    if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
        _exit(FB_EXIT_SETUP);
    int ctl = argc == 5 ? arg_fd(argv[2], 3) : -2;
    int scratch = argc == 5 ? arg_fd(argv[3], -1) : -2;
    struct stat st;
    if (ctl < 0 || scratch < -1 || (argv[4][0] != '0' && argv[4][0] != '1') || argv[4][1] ||
        fstat(ctl, &st) < 0 || !S_ISSOCK(st.st_mode)) {
        fprintf(stderr, "fluebox: %s is the image a session's init runs, started by fluebox "
                        "serve inside its sandbox; it is not a command\n", FB_SESSION_IMAGE_CMD);
        return FB_EXIT_SETUP;
    }
    /* What the loop reads of the policy: the command search (harden_exec:
     * no exec_path in a session) and whether filters follow on ctl. */
    static struct fb_policy p;
    p.seccomp.enabled = argv[4][0] == '1';
    struct fb_err err = {0};
    if (seccomp_receive_and_load(&p, ctl, &err) < 0) {
        ctl_sendf(ctl, FB_MSG_ERR, err.code ? err.code : FB_EXIT_SETUP, "%s", err.msg);
        _exit(FB_EXIT_SETUP);
    }
    init_loop(&p, ctl, scratch);
}
