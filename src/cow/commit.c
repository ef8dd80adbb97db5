/* commit.c — apply a copy-on-write workspace's changes to the host
 * directory (see changes.h).
 *
 * This runs in the supervisor with fluebox's privileges, on content the
 * sandbox controls, so:
 *   - every host path is resolved from the workspace's directory fd with
 *     openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV): a
 *     symlink anywhere on the way (planted by the sandbox through an earlier
 *     change, or present on the host) makes the change fail, it is never
 *     followed, and nothing outside the workspace or on another mount is
 *     reached; the last component is replaced by rename(), which replaces a
 *     symlink itself rather than its target;
 *   - the upper layer is read the same way (changes.c), so a symlink or a
 *     hard link in it is data, never a path to follow;
 *   - each file is written to a new inode in the same directory (O_TMPFILE,
 *     or a named temporary file) and renamed over the old one, so a commit
 *     killed half way leaves every file either old or new, never truncated;
 *   - modes keep the permission bits only: no setuid, setgid or sticky bit
 *     the sandbox set survives;
 *   - as root, files are created with the workspace owner's ids (setfsuid/
 *     setfsgid, which also drops root's file capabilities while writing), so
 *     nothing the sandbox wrote becomes root's;
 *   - all changes are checked before any is applied: a host entry changed
 *     since the session started (its ctime is at or after the start, or it
 *     is not the inode fluebox itself wrote in an earlier commit) is a
 *     conflict, and with a conflict nothing is applied unless forced;
 *   - each entry is checked again right before its rename or unlink, so a
 *     file the host saved during the commit is left alone and reported as a
 *     conflict (the commit then fails, having applied everything else);
 *   - a mode-only change is a new inode too, never a chmod of the host
 *     inode, which may have hard links outside the workspace;
 *   - new files are written in batches and made durable together (one
 *     syncfs per batch rather than an fdatasync per file) before their
 *     renames. */
#include "changes.h"

#include <fcntl.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/random.h>
#include <sys/stat.h>

static void conflict(struct fb_commit *r, const char *path, const char *why)
{
    r->conflicts = fb_xrealloc(r->conflicts, (r->nconflicts + 1) * sizeof *r->conflicts);
    r->conflicts[r->nconflicts].path = fb_xstrdup(path);
    r->conflicts[r->nconflicts].reason = fb_xstrdup(why);
    r->nconflicts++;
}

void commit_free(struct fb_commit *r)
{
    for (size_t i = 0; i < r->nconflicts; i++) {
        free(r->conflicts[i].path);
        free(r->conflicts[i].reason);
    }
    free(r->conflicts);
    memset(r, 0, sizeof *r);
}

json_t *commit_json(const struct fb_commit *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "applied", json_integer((json_int_t)r->applied));
    json_t *a = json_array();
    for (size_t i = 0; i < r->nconflicts; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "path", json_string(r->conflicts[i].path));
        json_object_set_new(e, "reason", json_string(r->conflicts[i].reason));
        if (!json_object_get(e, "path"))
            json_object_set_new(e, "path", json_string("(not UTF-8)"));
        json_array_append_new(a, e);
    }
    json_object_set_new(o, "conflicts", a);
    json_object_set_new(o, "error", r->error[0] ? json_string(r->error) : json_null());
    return o;
}

static bool ts_ge(struct timespec a, struct timespec b)
{
    return a.tv_sec > b.tv_sec || (a.tv_sec == b.tv_sec && a.tv_nsec >= b.tv_nsec);
}

/* Has this host entry changed since the session started? */
static bool changed_since(const struct fb_cow *c, const char *path, const struct stat *st)
{
    const struct fb_cow_base *b = cow_base_get(c, path);
    if (b)
        return !(b->dev == st->st_dev && b->ino == st->st_ino &&
                 b->ctime.tv_sec == st->st_ctim.tv_sec && b->ctime.tv_nsec == st->st_ctim.tv_nsec);
    return ts_ge(st->st_ctim, c->start);
}

/* lstat of a host path, resolved beneath the workspace. Returns 1 found,
 * 0 absent, -1 unreachable (a symlink, a mount or a non-directory on the
 * way) with errno. */
static int host_lstat(struct fb_cow *c, const char *path, struct stat *st)
{
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int d = changes_open_beneath(c->host, parent, O_PATH | O_DIRECTORY, 0);
    if (d < 0)
        return errno == ENOENT ? 0 : -1;
    if (fstatat(d, name, st, AT_SYMLINK_NOFOLLOW) == 0)
        return 1;
    return errno == ENOENT ? 0 : -1;
}

static char kind_of(mode_t m)
{
    return S_ISREG(m) ? FB_K_FILE : S_ISLNK(m) ? FB_K_LINK : S_ISDIR(m) ? FB_K_DIR : FB_K_OTHER;
}

static const char *unreachable(void)
{
    if (errno == ELOOP)
        return "the host path goes through a symlink";
    if (errno == EXDEV)
        return "the host path crosses a mount point";
    if (errno == ENOTDIR)
        return "a parent on the host is not a directory";
    return strerror(errno);
}

/* A sorted array of paths. */
struct pathlist {
    const char **v;
    size_t n;
};

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static bool pl_has(const struct pathlist *l, const char *path)
{
    return l->n && bsearch(&path, l->v, l->n, sizeof *l->v, cmp_cstr) != NULL;
}

/* Index of the first entry >= key. */
static size_t pl_lower(const struct pathlist *l, const char *key)
{
    size_t lo = 0, hi = l->n;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        if (strcmp(l->v[mid], key) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Does the list hold path or something below it? */
static bool pl_has_at_or_below(const struct pathlist *l, const char *path)
{
    if (pl_has(l, path))
        return true;
    char *key = fb_xasprintf("%s/", path);
    size_t i = pl_lower(l, key);
    bool below = i < l->n && !strncmp(l->v[i], key, strlen(key));
    free(key);
    return below;
}

/* Does the list hold one of path's parents? */
static bool pl_has_parent(const struct pathlist *l, const char *path)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", path);
    for (char *s = strrchr(buf, '/'); s; s = strrchr(buf, '/')) {
        *s = 0;
        if (pl_has(l, buf))
            return true;
    }
    return false;
}

static const char *gone_path(const struct fb_change *x)
{
    return x->status == FB_CHG_DELETED ? x->path : x->status == FB_CHG_RENAMED ? x->from : NULL;
}

/* Is path, or (with parents) one of its parents, going away in this
 * commit: deleted, or the source of a rename? Then whatever the host has
 * there is checked by that deletion, not by the addition that replaces it. */
static bool going(const struct pathlist *gone, const char *path, bool parents)
{
    return parents ? pl_has_parent(gone, path) : pl_has(gone, path);
}

/* Would a symlink at path with this target lead outside the workspace: an
 * absolute target (a host secret, /proc/1/root/...), or more ".." than the
 * link has directories above it? Read as text, never resolved. */
static bool link_escapes(const char *path, const char *target)
{
    if (!*target || *target == '/')
        return *target == '/';
    int depth = 0;
    for (const char *s = path; (s = strchr(s, '/')); s++)
        depth++;
    for (const char *s = target; *s;) {
        size_t n = strcspn(s, "/");
        if (n == 2 && s[0] == '.' && s[1] == '.') {
            if (--depth < 0)
                return true;
        } else if (n > 0 && !(n == 1 && s[0] == '.')) {
            depth++;
        }
        s += n;
        while (*s == '/')
            s++;
    }
    return false;
}

/* A new or changed symlink pointing outside the workspace is a conflict:
 * committed, it would put a link to the host's files (or /proc/1/root) into
 * the host workspace, for the next tool that follows it. Forced, it is
 * written as any conflict is. */
static void check_link(struct fb_cow *c, const struct fb_change *x, struct fb_commit *r)
{
    if (x->kind != FB_K_LINK || x->status == FB_CHG_DELETED)
        return;
    struct fb_text t = {0};
    if (changes_read_upper(c, x->path, FB_K_LINK, &t) == 0) {
        text_add(&t, "", 1);
        if (link_escapes(x->path, t.p)) {
            char why[600];
            snprintf(why, sizeof why, "a symlink pointing outside the workspace (%.500s)", t.p);
            conflict(r, x->path, why);
        }
    }
    text_free(&t);
}

/* Check one change; adds conflicts to r. */
static void check(struct fb_cow *c, const struct pathlist *gone, const struct fb_change *x,
                  struct fb_commit *r)
{
    struct stat st;
    int h = host_lstat(c, x->path, &st);
    bool adding = x->status == FB_CHG_ADDED || x->status == FB_CHG_RENAMED;
    if (h < 0 && adding && (errno == ENOTDIR || errno == ELOOP) && going(gone, x->path, true))
        h = 0; /* a parent that is a file or symlink now is replaced by a directory */
    if (h < 0) {
        conflict(r, x->path, unreachable());
        return;
    }
    if (h == 1 && adding && going(gone, x->path, false))
        h = 0;
    switch (x->status) {
    case FB_CHG_DELETED:
        if (h == 0)
            return; /* deleted on both sides */
        if (kind_of(st.st_mode) != x->kind)
            conflict(r, x->path, "its type changed on the host");
        else if (x->kind != FB_K_DIR && changed_since(c, x->path, &st))
            conflict(r, x->path, "changed on the host since the session started");
        return;
    case FB_CHG_MODIFIED:
        if (h == 0)
            conflict(r, x->path, "deleted on the host since the session started");
        else if (kind_of(st.st_mode) != x->kind)
            conflict(r, x->path, "its type changed on the host");
        else if (x->kind != FB_K_DIR && changed_since(c, x->path, &st))
            conflict(r, x->path, "changed on the host since the session started");
        return;
    case FB_CHG_ADDED:
    case FB_CHG_RENAMED:
        if (h == 1 && !(x->kind == FB_K_DIR && S_ISDIR(st.st_mode))) {
            conflict(r, x->path, "created on the host since the session started");
            return;
        }
        if (x->status == FB_CHG_ADDED && x->copied_up && x->kind != FB_K_DIR) {
            /* It was copied up from the host, which no longer has it: deleted
             * there, unless the sandbox only moved it (then the directory on
             * the host is unchanged). */
            char parent[4096];
            const char *name;
            changes_split_path(x->path, parent, sizeof parent, &name);
            struct stat ps;
            cleanup_close int d = changes_open_beneath(c->host, parent, O_PATH | O_DIRECTORY, 0);
            if (d >= 0 && fstat(d, &ps) == 0 && changed_since(c, *parent ? parent : ".", &ps))
                conflict(r, x->path, "deleted on the host since the session started");
        }
        if (x->status == FB_CHG_RENAMED) {
            int hf = host_lstat(c, x->from, &st);
            if (hf < 0)
                conflict(r, x->from, unreachable());
            else if (hf == 1 && kind_of(st.st_mode) != x->kind)
                conflict(r, x->from, "its type changed on the host");
            else if (hf == 1 && changed_since(c, x->from, &st))
                conflict(r, x->from, "changed on the host since the session started");
        }
        return;
    }
}

/* ---- applying ---- */

/* A file or symlink written to a new inode, waiting for its rename. */
struct pending {
    const struct fb_change *x;
    int dir;        /* its host directory (a real directory fd) */
    int out;        /* the new file (closed once renamed), or -1 for a symlink */
    bool named;     /* the new inode has its temporary name already */
    char tmp[64];
};

/* Files are written in batches: write each to its new inode, make them
 * all durable at once, then rename each into place. */
#define BATCH 64

struct apply {
    struct fb_cow *c;
    struct fb_commit *r;
    const struct fb_cow_progress *prog;
    bool force;          /* no re-check before a rename or unlink */
    const struct fb_change *chv; /* the changes (failed[] is indexed like them) */
    size_t done, total;  /* progress */
    char *failed;        /* per change: it conflicted while being applied */
    unsigned tmpseq;
    char **dirs; /* parent directories touched: fsync'ed and re-based at the end */
    size_t ndirs;
    char **set;  /* the same, as an open-addressing hash set (cap a power of 2) */
    size_t setcap;
    struct pending batch[BATCH];
    size_t nbatch;
};

/* As root, create and modify host files as the workspace's owner. */
static void as_owner(const struct fb_cow *c, bool on)
{
    if (!c->root || c->owner_uid == 0)
        return;
    if (on) {
        setfsgid(c->owner_gid);
        setfsuid(c->owner_uid);
    } else {
        setfsuid(0);
        setfsgid(0);
    }
}

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static void touched(struct apply *a, const char *dir)
{
    if (2 * (a->ndirs + 1) > a->setcap) {
        size_t cap = a->setcap ? 2 * a->setcap : 64;
        char **set = fb_xcalloc(cap, sizeof *set);
        for (size_t i = 0; i < a->ndirs; i++) {
            size_t k = hash_str(a->dirs[i]) & (cap - 1);
            while (set[k])
                k = (k + 1) & (cap - 1);
            set[k] = a->dirs[i];
        }
        free(a->set);
        a->set = set;
        a->setcap = cap;
        a->dirs = fb_xrealloc(a->dirs, cap / 2 * sizeof *a->dirs);
    }
    size_t k = hash_str(dir) & (a->setcap - 1);
    for (; a->set[k]; k = (k + 1) & (a->setcap - 1))
        if (!strcmp(a->set[k], dir))
            return;
    a->dirs[a->ndirs] = fb_xstrdup(dir);
    a->set[k] = a->dirs[a->ndirs++];
}

static int fail(struct apply *a, const char *path, const char *what)
{
    snprintf(a->r->error, sizeof a->r->error, "%s: %s: %s", path, what, strerror(errno));
    return -1;
}

/* The next item; false (with the error set) when the caller cancelled. */
static bool step(struct apply *a)
{
    if (cow_step(a->prog, "commit", a->done++, a->total))
        return true;
    snprintf(a->r->error, sizeof a->r->error, "cancelled after %zu of %zu changes", a->done - 1,
             a->total);
    return false;
}

/* What a host path must still be, right before it is replaced or removed:
 * what the checks before the commit saw. */
enum expect {
    ABSENT,         /* an addition (what stood in the way is gone by now) */
    SAME,           /* a modification: there, unchanged since the start */
    SAME_OR_ABSENT, /* a deletion: unchanged, or gone already */
};

/* The host may have changed the entry since the checks (an editor saving
 * during the commit): then it is a conflict, and it is left alone. */
static bool still_same(struct apply *a, int dir, const char *name, const char *path, char kind,
                       enum expect want)
{
    if (a->force)
        return true;
    struct stat st;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
        if (errno != ENOENT)
            conflict(a->r, path, unreachable());
        else if (want == SAME)
            conflict(a->r, path, "deleted on the host during the commit");
        return errno == ENOENT && want != SAME;
    }
    if (want == ABSENT) {
        conflict(a->r, path, "created on the host during the commit");
        return false;
    }
    if (kind_of(st.st_mode) != kind || changed_since(a->c, path, &st)) {
        conflict(a->r, path, "changed on the host during the commit");
        return false;
    }
    return true;
}

/* Make sure directory `path` exists on the host (creating missing ones
 * with the mode the sandbox gave them, owner-writable until the end) and
 * return an fd of it. */
static int host_dir(struct apply *a, const char *path)
{
    int fd = changes_open_beneath(a->c->host, path, O_PATH | O_DIRECTORY, 0);
    if (fd >= 0 || errno != ENOENT)
        return fd;
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int pfd = host_dir(a, parent);
    if (pfd < 0)
        return -1;
    as_owner(a->c, true);
    int rc = mkdirat(pfd, name, 0700);
    int e = errno;
    as_owner(a->c, false);
    if (rc < 0 && e != EEXIST) {
        errno = e;
        return -1;
    }
    touched(a, *parent ? parent : ".");
    return changes_open_beneath(a->c->host, path, O_PATH | O_DIRECTORY, 0);
}

/* A temporary name in the target's directory. Unpredictable, so that a
 * file committed earlier cannot be in the way of it. */
static void tmp_name(struct apply *a, char *buf, size_t cap)
{
    uint64_t r = 0;
    if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r)
        r = fb_now_ns() ^ ((uint64_t)getpid() << 32);
    snprintf(buf, cap, ".fluebox-commit-%d-%u-%016llx", (int)getpid(), a->tmpseq++,
             (unsigned long long)r);
}

/* Copy src into a new inode in p->dir (unnamed when the filesystem allows,
 * O_TMPFILE) with the given mode. */
static int new_file(struct apply *a, struct pending *p, int src, mode_t mode)
{
    p->out = openat(p->dir, ".", O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (p->out < 0) {
        p->out = openat(p->dir, p->tmp, O_CREAT | O_EXCL | O_WRONLY | O_NOFOLLOW | O_CLOEXEC, 0600);
        p->named = p->out >= 0;
    }
    if (p->out < 0)
        return -1;
    char buf[65536];
    for (;;) {
        ssize_t n = read(src, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 || (n > 0 && fb_write_all(p->out, buf, (size_t)n) < 0))
            return -1;
        if (n == 0)
            break;
    }
    return fchmod(p->out, mode & 0777);
}

/* Undo what a pending entry created, close what it holds. */
static void pending_drop(struct apply *a, struct pending *p)
{
    if (p->named) {
        as_owner(a->c, true);
        unlinkat(p->dir, p->tmp, 0);
        as_owner(a->c, false);
    }
    if (p->out >= 0)
        close(p->out);
    if (p->dir >= 0)
        close(p->dir);
    p->out = p->dir = -1;
    p->named = false;
}

/* Write the upper layer's file or symlink at x->path to a new inode next
 * to its host path, to be renamed into place by flush(). A mode-only
 * change is written the same way: the host inode may have hard links
 * outside the workspace, which a chmod would change too. */
static int prepare(struct apply *a, const struct fb_change *x)
{
    char parent[4096];
    const char *name;
    changes_split_path(x->path, parent, sizeof parent, &name);
    struct pending *p = &a->batch[a->nbatch];
    *p = (struct pending){.x = x, .dir = -1, .out = -1};
    tmp_name(a, p->tmp, sizeof p->tmp);
    {
        cleanup_close int pd = host_dir(a, parent);
        if (pd < 0)
            return fail(a, x->path, "opening its host directory");
        /* O_TMPFILE needs a real directory fd, not O_PATH. */
        p->dir = openat(pd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (p->dir < 0)
            return fail(a, x->path, "opening its host directory");
    }
    touched(a, *parent ? parent : ".");
    a->nbatch++;
    int rc;
    if (x->kind == FB_K_LINK) {
        struct fb_text t = {0};
        if (changes_read_upper(a->c, x->path, FB_K_LINK, &t) < 0) {
            text_free(&t);
            return fail(a, x->path, "reading the symlink");
        }
        as_owner(a->c, true);
        rc = symlinkat(t.p ? t.p : "", p->dir, p->tmp);
        int e = errno;
        as_owner(a->c, false);
        errno = e;
        p->named = rc == 0;
        text_free(&t);
    } else {
        /* The source is opened with fluebox's own ids (the upper layer
         * belongs to the sandbox's host id), the target written as the
         * owner. */
        cleanup_close int src =
            changes_open_upper(a->c, x->path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
        struct stat ss;
        if (src < 0 || fstat(src, &ss) < 0 || !S_ISREG(ss.st_mode)) {
            if (src >= 0)
                errno = EINVAL;
            return fail(a, x->path, "reading the new content");
        }
        int fl = fcntl(src, F_GETFL);
        if (fl >= 0)
            fcntl(src, F_SETFL, fl & ~O_NONBLOCK);
        as_owner(a->c, true);
        rc = new_file(a, p, src, x->mode);
        int e = errno;
        as_owner(a->c, false);
        errno = e;
    }
    return rc < 0 ? fail(a, x->path, "writing") : 0;
}

/* Flush the batch and rename each entry into place, re-checking each host
 * path right before. */
static int flush(struct apply *a)
{
    int rc = 0;
    /* Durable before any rename: one file alone with fdatasync, a batch
     * with one syncfs (a flush per file costs about a millisecond each on a
     * busy disk; a syncfs also writes other dirty data of the filesystem,
     * which the kernel would write within seconds anyway). */
    if (a->nbatch == 1 && a->batch[0].out >= 0 && fdatasync(a->batch[0].out) < 0)
        rc = fail(a, a->batch[0].x->path, "writing");
    else if (a->nbatch > 1 && syncfs(a->batch[0].dir) < 0)
        rc = fail(a, a->batch[0].x->path, "writing");
    for (size_t i = 0; i < a->nbatch && rc == 0; i++) {
        struct pending *p = &a->batch[i];
        const struct fb_change *x = p->x;
        const char *name = strrchr(x->path, '/') ? strrchr(x->path, '/') + 1 : x->path;
        if (!step(a)) {
            rc = -1;
            break;
        }
        if (!still_same(a, p->dir, name, x->path, x->kind,
                        x->status == FB_CHG_MODIFIED ? SAME : ABSENT)) {
            a->failed[x - a->chv] = 1;
            pending_drop(a, p);
            continue;
        }
        as_owner(a->c, true);
        if (!p->named) {
            char via[64];
            snprintf(via, sizeof via, "/proc/self/fd/%d", p->out);
            p->named = linkat(AT_FDCWD, via, p->dir, p->tmp, AT_SYMLINK_FOLLOW) == 0;
        }
        int r = p->named ? renameat(p->dir, p->tmp, p->dir, name) : -1;
        int e = errno;
        as_owner(a->c, false);
        errno = e;
        if (r < 0) {
            rc = fail(a, x->path, "writing");
            break;
        }
        p->named = false;
        struct stat st;
        if (fstatat(p->dir, name, &st, AT_SYMLINK_NOFOLLOW) == 0)
            cow_base_set(a->c, x->path, &st);
        a->r->applied++;
        pending_drop(a, p);
    }
    for (size_t i = 0; i < a->nbatch; i++)
        pending_drop(a, &a->batch[i]);
    a->nbatch = 0;
    return rc;
}

/* Remove a host entry that goes away (a deletion, a rename's source),
 * unless the host changed it since the checks. */
static int delete_entry(struct apply *a, const struct fb_change *x, const char *path)
{
    if (!step(a))
        return -1;
    char parent[4096];
    const char *name;
    changes_split_path(path, parent, sizeof parent, &name);
    cleanup_close int dir = changes_open_beneath(a->c->host, parent, O_PATH | O_DIRECTORY, 0);
    if (dir < 0)
        return errno == ENOENT ? 0 : fail(a, path, "opening its host directory");
    if (x->kind != FB_K_DIR && !still_same(a, dir, name, path, x->kind, SAME_OR_ABSENT)) {
        a->failed[x - a->chv] = 1;
        return 0;
    }
    as_owner(a->c, true);
    int rc = unlinkat(dir, name, x->kind == FB_K_DIR ? AT_REMOVEDIR : 0);
    int e = errno;
    as_owner(a->c, false);
    if (rc < 0 && e != ENOENT && !(x->kind == FB_K_DIR && (e == ENOTEMPTY || e == EEXIST))) {
        errno = e;
        return fail(a, path, "deleting");
    }
    touched(a, *parent ? parent : ".");
    if (x->status == FB_CHG_DELETED)
        a->r->applied++;
    return 0;
}

/* A directory's mode (a directory has no hard links elsewhere, so it is
 * changed in place). */
static int chmod_dir(struct apply *a, const char *path, mode_t mode)
{
    if (!step(a))
        return -1;
    int fd = changes_open_beneath(a->c->host, path, O_RDONLY | O_DIRECTORY, 0);
    if (fd < 0 && errno == EACCES)
        fd = changes_open_beneath(a->c->host, path, O_PATH | O_DIRECTORY, 0);
    if (fd < 0)
        return fail(a, path, "opening");
    char via[64];
    snprintf(via, sizeof via, "/proc/self/fd/%d", fd);
    as_owner(a->c, true);
    int rc = fchmod(fd, mode & 0777);
    if (rc < 0 && errno == EBADF) /* an O_PATH fd */
        rc = chmod(via, mode & 0777);
    int e = errno;
    as_owner(a->c, false);
    errno = e;
    close(fd);
    if (rc < 0)
        return fail(a, path, "changing the mode");
    a->r->applied++;
    return 0;
}

int commit_apply(struct fb_cow *c, const struct fb_changes *ch, char *const *sel, size_t nsel,
                 bool force, const struct fb_cow_progress *prog, struct fb_commit *res,
                 struct fb_err *err)
{
    memset(res, 0, sizeof *res);
    /* The selected changes, in path order (ch is sorted). */
    const struct fb_change **v = fb_xcalloc(ch->n + 1, sizeof *v);
    size_t n = 0;
    for (size_t i = 0; i < ch->n; i++)
        if (ch->v[i].kind != FB_K_OTHER && changes_selected(&ch->v[i], sel, nsel))
            v[n++] = &ch->v[i];
    /* What goes away (deletions, rename sources) and what comes (additions,
     * rename targets), sorted for lookups. */
    struct pathlist gone = {fb_xcalloc(n + 1, sizeof(char *)), 0};
    struct pathlist come = {fb_xcalloc(n + 1, sizeof(char *)), 0};
    struct pathlist all = {fb_xcalloc(n + 1, sizeof(char *)), 0};
    for (size_t i = 0; i < n; i++) {
        if (gone_path(v[i]))
            gone.v[gone.n++] = gone_path(v[i]);
        if (v[i]->status == FB_CHG_ADDED || v[i]->status == FB_CHG_RENAMED)
            come.v[come.n++] = v[i]->path;
        all.v[all.n++] = v[i]->path;
    }
    qsort(gone.v, gone.n, sizeof(char *), cmp_cstr);
    qsort(come.v, come.n, sizeof(char *), cmp_cstr);

    struct apply a = {.c = c, .r = res, .prog = prog, .force = force, .chv = ch->v,
                      .failed = fb_xcalloc(ch->n + 1, 1)};
    /* Steps: one per change applied, one more per entry that goes away and
     * per new directory (created, then given its mode). */
    a.total = gone.n;
    for (size_t i = 0; i < n; i++)
        a.total += (v[i]->status != FB_CHG_DELETED) +
                   (v[i]->kind == FB_K_DIR && v[i]->status == FB_CHG_ADDED);
    char *in_way = fb_xcalloc(n + 1, 1);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        if (!cow_step(prog, "check", i, n)) {
            snprintf(res->error, sizeof res->error, "cancelled before anything was applied");
            rc = -1;
            break;
        }
        check(c, &gone, v[i], res);
        check_link(c, v[i], res);
    }
    if (rc == 0 && res->nconflicts && !force) {
        fb_errf(err, FB_EXIT_SETUP, "%zu conflict%s: nothing was committed", res->nconflicts,
                res->nconflicts == 1 ? "" : "s");
        rc = -2;
        goto out;
    }
    /* A forced commit applies what conflicted: only conflicts that arise
     * while applying are reported from here on. */
    size_t early = res->nconflicts;

    /* What goes away in the way of something new (the same path or one of
     * its parents: a file that becomes a directory, a directory that
     * becomes a file) goes first, with everything below it; the rest only
     * after every new file is in place, so a commit interrupted half way
     * has lost nothing. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        const char *g = gone_path(v[i]);
        if (!g || !pl_has_at_or_below(&come, g))
            continue;
        in_way[i] = 1;
        if (v[i]->kind == FB_K_DIR) {
            char *key = fb_xasprintf("%s/", v[i]->path);
            for (size_t j = pl_lower(&all, key); j < n && !strncmp(v[j]->path, key, strlen(key)); j++)
                if (v[j]->status == FB_CHG_DELETED)
                    in_way[j] = 1;
            free(key);
        }
    }
    /* 1. In the way: files, then directories deepest first. */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (in_way[i] && v[i]->kind != FB_K_DIR)
            rc = delete_entry(&a, v[i], gone_path(v[i]));
    for (size_t i = n; i-- > 0 && rc == 0;)
        if (in_way[i] && v[i]->kind == FB_K_DIR && v[i]->status == FB_CHG_DELETED)
            rc = delete_entry(&a, v[i], v[i]->path);
    /* 2. New and changed entries, parents first (path order); files in
     * batches. */
    for (size_t i = 0; i < n && rc == 0; i++) {
        const struct fb_change *x = v[i];
        if (x->status == FB_CHG_DELETED || (x->kind == FB_K_DIR && x->status == FB_CHG_MODIFIED))
            continue; /* directory modes: step 4 */
        if (x->kind != FB_K_DIR) {
            rc = prepare(&a, x);
            if (rc == 0 && a.nbatch == BATCH)
                rc = flush(&a);
            continue;
        }
        if (!step(&a)) {
            rc = -1;
            break;
        }
        int d = host_dir(&a, x->path);
        rc = d < 0 ? fail(&a, x->path, "creating the directory") : 0;
        if (d >= 0)
            close(d);
    }
    if (rc == 0)
        rc = flush(&a);
    else
        for (size_t i = 0; i < a.nbatch; i++)
            pending_drop(&a, &a.batch[i]);
    /* 3. The rest of what goes away: files (and rename sources whose
     * target is in place), then directories deepest first. */
    for (size_t i = 0; i < n && rc == 0; i++)
        if (!in_way[i] && gone_path(v[i]) && v[i]->kind != FB_K_DIR && !a.failed[v[i] - ch->v])
            rc = delete_entry(&a, v[i], gone_path(v[i]));
    for (size_t i = n; i-- > 0 && rc == 0;)
        if (!in_way[i] && v[i]->kind == FB_K_DIR && v[i]->status == FB_CHG_DELETED)
            rc = delete_entry(&a, v[i], v[i]->path);
    /* 4. Directory modes last (deepest first), so a directory the sandbox
     * made read-only could still be written into above. */
    for (size_t i = n; i-- > 0 && rc == 0;) {
        const struct fb_change *x = v[i];
        if (x->kind == FB_K_DIR && x->status != FB_CHG_DELETED)
            rc = chmod_dir(&a, x->path, x->mode);
    }
    /* Make the renames durable, and remember the directories as fluebox left
     * them (an earlier commit is not a change made on the host). */
    for (size_t i = 0; i < a.ndirs; i++) {
        int d = changes_open_beneath(c->host, a.dirs[i], O_RDONLY | O_DIRECTORY, 0);
        if (d >= 0) {
            fsync(d);
            struct stat st;
            if (fstat(d, &st) == 0)
                cow_base_set(c, a.dirs[i], &st);
            close(d);
        }
    }
    if (rc == 0 && res->nconflicts > early) {
        size_t k = res->nconflicts - early;
        snprintf(res->error, sizeof res->error,
                 "%zu entr%s changed on the host during the commit, left as the host has %s; "
                 "everything else was committed",
                 k, k == 1 ? "y" : "ies", k == 1 ? "it" : "them");
        rc = -1;
    }
    if (rc < 0)
        fb_errf(err, FB_EXIT_SETUP, "commit: %s", res->error);
out:
    for (size_t i = 0; i < a.ndirs; i++)
        free(a.dirs[i]);
    free(a.dirs);
    free(a.set);
    free(a.failed);
    free(in_way);
    free(gone.v);
    free(come.v);
    free(all.v);
    free(v);
    changes_restore_modes(c);
    return rc < 0 ? -1 : 0;
}
