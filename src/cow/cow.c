/* cow.c — copy-on-write workspaces, the supervisor's side of the state (see
 * cow.h for who calls what): the host workspace opened at the start, the
 * upper layer's fds once the child hands them over, the paths committed by
 * this session, how much the layer holds (--disk on a --cow-upper layer),
 * and a layer emptied in place or replaced by a new one. The overlay itself
 * is mounted, and remounted for a reset, by sandbox/cow_mount.c; the changes
 * are read by changes.c and applied to the host by commit.c. */
#include "cow.h"

#include "changes.h"
#include "treecopy.h"

#include <dirent.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/wait.h>
#include <string.h>
#include <sys/statvfs.h>

#define START_FILE "fluebox-start"

static void tree_usage(int dirfd, int64_t limit, int depth, int64_t dir_cost, int64_t *total);

/* ---- supervisor: state ---- */

/* Record c->start in DIR/fluebox-start (best effort: without it, the next
 * run starts its own clock). */
static void write_start(const struct fb_cow *c, int dirfd)
{
    char buf[64];
    snprintf(buf, sizeof buf, "%lld.%09ld\n", (long long)c->start.tv_sec, c->start.tv_nsec);
    int f = openat(dirfd, START_FILE, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (f >= 0) {
        (void)fb_write_all(f, buf, strlen(buf));
        close(f);
    }
}

/* --cow-upper DIR is reused across runs: the start time of the run that
 * created its upper layer is kept next to it, so that later runs still
 * detect host changes made since the layer began. A new layer's start file
 * is written once the layer is there (cow_attach): a run refused before
 * that leaves DIR as it was. */
static void persistent_start(struct fb_cow *c, const char *dir)
{
    cleanup_close int d = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (d < 0)
        return;
    struct stat st;
    bool have_upper = fstatat(d, "upper", &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISDIR(st.st_mode);
    char buf[64];
    if (have_upper && fb_read_fileat(d, START_FILE, buf, sizeof buf) > 0) {
        long long s = 0;
        long ns = 0;
        if (sscanf(buf, "%lld.%ld", &s, &ns) == 2 && ns >= 0 && ns < 1000000000L &&
            (s < c->start.tv_sec || (s == c->start.tv_sec && ns < c->start.tv_nsec))) {
            c->start.tv_sec = (time_t)s;
            c->start.tv_nsec = ns;
        }
        return;
    }
    c->start_pending = true;
}

int cow_begin(const struct fb_policy *p, const struct fb_ids *ids, struct fb_cow **out,
              struct fb_err *err)
{
    /* A profile that makes the workspace read-only still allows a
     * copy-on-write view of it, never writing it back. */
    if (p->workspace_ro && p->cow_commit)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--commit: profile \"%s\" makes the workspace read-only",
                       p->profile_name ? p->profile_name : "?");
    struct fb_cow *c = fb_xcalloc(1, sizeof *c);
    c->host = c->store = c->upper = c->userns = c->mntns = c->scratch = -1;
    c->readonly = p->workspace_ro;
    c->workspace = fb_xstrdup(p->workspace);
    c->host = open(p->workspace, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (c->host < 0) {
        fb_errno(err, FB_EXIT_SETUP, "--workspace %s", p->workspace);
        cow_free(c);
        return -1;
    }
    struct stat st;
    if (fstat(c->host, &st) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "--workspace %s", p->workspace);
        cow_free(c);
        return -1;
    }
    c->owner_uid = st.st_uid;
    c->owner_gid = st.st_gid;
    c->root = ids->root;
    c->inside_uid = p->uid;
    c->inside_gid = p->gid;
    c->sandbox_uid = ids->host_uid;
    c->sandbox_gid = ids->host_gid;
    c->disk = p->limits.disk;
    /* Conflicts are host entries whose ctime is at or after this. Taken
     * from the fine clock, so nothing changed before now can look newer;
     * cow_attach() then waits until the coarse clock, which most
     * timestamps come from, has passed it, so nothing changed after the
     * command starts can look older. */
    clock_gettime(CLOCK_REALTIME, &c->start);
    if (p->cow_upper) {
        c->persistent = true;
        c->upper_dir = fb_xstrdup(p->cow_upper);
        persistent_start(c, p->cow_upper);
        int d = open(p->cow_upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (d >= 0 && fstat(d, &st) == 0) {
            c->dir_uid = st.st_uid;
            c->dir_gid = st.st_gid;
        }
        int64_t used = 0;
        if (d >= 0 && c->disk > 0)
            tree_usage(d, c->disk, 0, 0, &used);
        if (d >= 0)
            close(d);
        if (c->disk > 0 && used >= c->disk) {
            fb_errf(err, FB_EXIT_SETUP,
                    "--cow-upper %s: the layer already takes --disk (%lld bytes) or more: "
                    "remove it, or raise --disk",
                    p->cow_upper, (long long)c->disk);
            cow_free(c);
            return -1;
        }
    }
    *out = c;
    return 0;
}

/* Wait (at most one clock tick, usually not at all: setting up the
 * sandbox took longer) until file timestamps taken from now on are at or
 * after c->start. */
static void wait_coarse_past_start(const struct fb_cow *c)
{
    for (int i = 0; i < 1000; i++) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec > c->start.tv_sec ||
            (now.tv_sec == c->start.tv_sec && now.tv_nsec >= c->start.tv_nsec))
            return;
        struct timespec nap = {0, 500000};
        nanosleep(&nap, NULL);
    }
}

int cow_attach(struct fb_cow *c, int *fds, size_t nfds, struct fb_err *err)
{
    if (nfds != 3) {
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: the sandbox sent %zu descriptors", nfds);
    }
    if (c->store >= 0)
        close(c->store);
    if (c->upper >= 0)
        close(c->upper);
    if (c->userns >= 0)
        close(c->userns);
    if (c->mntns >= 0)
        close(c->mntns);
    c->store = fds[0];
    c->userns = fds[1];
    c->mntns = fds[2];
    c->upper = changes_open_beneath(c->store, "upper", O_RDONLY | O_DIRECTORY, 0);
    if (c->upper < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: opening the upper layer");
    if (c->start_pending && c->upper_dir) {
        int d = open(c->upper_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (d >= 0) {
            write_start(c, d);
            close(d);
        }
        c->start_pending = false;
    }
    /* The command starts only after this message is handled and READY
     * comes: from then on every host change is seen as one. */
    wait_coarse_past_start(c);
    return 0;
}

static void base_clear(struct fb_cow *c);

void cow_free(struct fb_cow *c)
{
    if (!c)
        return;
    int fds[] = {c->host, c->store, c->upper, c->userns, c->mntns};
    for (size_t i = 0; i < FB_ARRAY_LEN(fds); i++)
        if (fds[i] >= 0)
            close(fds[i]);
    changes_restore_modes(c);
    base_clear(c);
    free(c->workspace);
    free(c->upper_dir);
    free(c);
}

/* The baseline is an array with an open-addressing index (slots hold
 * array index + 1; capacity a power of two, at most half full). */
static uint64_t path_hash(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

static size_t *base_slot(const struct fb_cow *c, const char *path)
{
    if (!c->bcap)
        return NULL;
    size_t k = path_hash(path) & (c->bcap - 1);
    while (c->bidx[k] && strcmp(c->base[c->bidx[k] - 1].path, path))
        k = (k + 1) & (c->bcap - 1);
    return &c->bidx[k];
}

static void base_clear(struct fb_cow *c)
{
    for (size_t i = 0; i < c->nbase; i++)
        free(c->base[i].path);
    free(c->base);
    free(c->bidx);
    c->base = NULL;
    c->bidx = NULL;
    c->nbase = c->bcap = 0;
}

void cow_base_set(struct fb_cow *c, const char *path, const struct stat *st)
{
    size_t *slot = base_slot(c, path);
    struct fb_cow_base *b;
    if (slot && *slot) {
        b = &c->base[*slot - 1];
    } else {
        if (2 * (c->nbase + 1) > c->bcap) {
            free(c->bidx);
            c->bcap = c->bcap ? 2 * c->bcap : 64;
            c->bidx = fb_xcalloc(c->bcap, sizeof *c->bidx);
            for (size_t i = 0; i < c->nbase; i++)
                *base_slot(c, c->base[i].path) = i + 1;
        }
        c->base = fb_xrealloc(c->base, (c->nbase + 1) * sizeof *c->base);
        b = &c->base[c->nbase++];
        b->path = fb_xstrdup(path);
        *base_slot(c, path) = c->nbase;
    }
    b->dev = st->st_dev;
    b->ino = st->st_ino;
    b->ctime = st->st_ctim;
}

const struct fb_cow_base *cow_base_get(const struct fb_cow *c, const char *path)
{
    size_t *slot = base_slot(c, path);
    return slot && *slot ? &c->base[*slot - 1] : NULL;
}

/* ---- --disk on a --cow-upper directory ----
 *
 * A tmpfs layer is sized by the kernel. A layer in the caller's directory
 * lives on a file system fluebox cannot size, so the supervisor measures
 * it instead (allocated blocks of everything in the directory): before the
 * run (a layer already at --disk is refused), twice a second while the
 * command runs (past --disk it is stopped, supervise.c) and when the
 * changes are reported (a layer at --disk is reported full and not
 * committed). */

/* Add the blocks of everything below dirfd to *total (and dir_cost for
 * each directory), stopping early once it passes limit. A directory the
 * sandbox made unsearchable is opened up for a moment (we own it when
 * fluebox is unprivileged; root needs none of this). */
static void tree_usage(int dirfd, int64_t limit, int depth, int64_t dir_cost, int64_t *total)
{
    int fd = fcntl(dirfd, F_DUPFD_CLOEXEC, 0);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    rewinddir(d); /* the duplicate shares dirfd's offset */
    struct dirent *e;
    while (*total <= limit && (e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dirfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        *total += (int64_t)st.st_blocks * 512;
        if (!S_ISDIR(st.st_mode) || depth > 512)
            continue;
        *total += dir_cost;
        int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 && errno == EACCES && st.st_uid == geteuid() &&
            fchmodat(dirfd, e->d_name, (st.st_mode & 07777) | 0500, 0) == 0) {
            sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                tree_usage(sub, limit, depth + 1, dir_cost, total);
            fchmodat(dirfd, e->d_name, st.st_mode & 07777, 0);
            if (sub >= 0)
                close(sub);
            continue;
        }
        if (sub >= 0) {
            tree_usage(sub, limit, depth + 1, dir_cost, total);
            close(sub);
        }
    }
    closedir(d);
}

int64_t cow_upper_usage(const struct fb_cow *c, int64_t limit)
{
    int64_t total = 0;
    if (c->store >= 0)
        tree_usage(c->store, limit < 0 ? INT64_MAX : limit, 0, 0, &total);
    return total;
}

bool cow_upper_over(struct fb_cow *c)
{
    if (!c->persistent || c->staged || c->disk <= 0 || c->store < 0)
        return false;
    if (!c->over_disk)
        c->over_disk = cow_upper_usage(c, c->disk) >= c->disk;
    return c->over_disk;
}

bool cow_upper_full(const struct fb_cow *c)
{
    if (c->persistent && !c->staged)
        return c->disk > 0 && c->store >= 0 &&
               (c->over_disk || cow_upper_usage(c, c->disk) >= c->disk);
    struct statvfs sv;
    if (c->store < 0 || fstatvfs(c->store, &sv) < 0)
        return false;
    if (sv.f_blocks > 0 && sv.f_bavail == 0)
        return true;
    if (sv.f_files > 0 && sv.f_favail == 0)
        return true;
    return false;
}

/* ---- a staged layer back into --cow-upper DIR ---- */

#define PERSIST_NEW ".fluebox-upper.new"

/* Remove DIR/name (a directory tree), never following a link. */
static void remove_tree(int dir, const char *name)
{
    int d = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        return;
    fchmod(d, 0700);
    tree_empty(d);
    close(d);
    unlinkat(dir, name, AT_REMOVEDIR);
}

/* In the helper: copy the layer to DIR/PERSIST_NEW and exchange it with
 * DIR/upper. Unprivileged, the helper is in the sandbox's user namespace
 * first, where it may read what the sandbox made unreadable (the files
 * are the caller's, whose id that namespace maps). */
static int persist_copy(struct fb_cow *c, int dir, struct fb_err *err)
{
    if (!c->root && c->userns >= 0 && setns(c->userns, CLONE_NEWUSER) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "joining the sandbox's user namespace");
    remove_tree(dir, PERSIST_NEW); /* what a killed run left */
    if (mkdirat(dir, PERSIST_NEW, 0700) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating %s", PERSIST_NEW);
    int dst = openat(dir, PERSIST_NEW, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    /* As root the sandbox's files become DIR's owner's, as the idmapped
     * DIR showed them to the sandbox. */
    struct tree_copy_opts o = {.from = {c->sandbox_uid, c->sandbox_gid, 1},
                               .to = {c->dir_uid, c->dir_gid, 1},
                               .chown = c->root};
    if (dst < 0 || tree_copy(c->upper, dst, &o, err) < 0) {
        if (dst >= 0)
            close(dst);
        if (!err->msg[0])
            fb_errno(err, FB_EXIT_SETUP, "copying the layer");
        remove_tree(dir, PERSIST_NEW);
        return -1;
    }
    close(dst);
    if (renameat2(dir, PERSIST_NEW, dir, "upper", RENAME_EXCHANGE) == 0) {
        remove_tree(dir, PERSIST_NEW); /* the layer of before */
    } else if (errno != ENOENT || renameat(dir, PERSIST_NEW, dir, "upper") < 0) {
        fb_errno(err, FB_EXIT_SETUP, "putting the layer in place");
        remove_tree(dir, PERSIST_NEW);
        return -1;
    }
    syncfs(dir);
    return 0;
}

int cow_persist(struct fb_cow *c, struct fb_err *err)
{
    if (!c->staged || !c->upper_dir || c->upper < 0)
        return 0;
    c->staged = false;
    cleanup_close int dir = open(c->upper_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--cow-upper %s", c->upper_dir);
    /* Measured as a disk would hold it: what tmpfs holds once (a hard
     * link) is copied for each name, and a directory takes a block, which
     * tmpfs does not count: a layer that filled --disk still fits in the
     * slack, unless it is mostly directories or hard links. */
    int64_t need = 0, most = c->disk + c->disk / COW_PERSIST_SLACK_DIV;
    if (c->disk > 0) {
        tree_usage(c->upper, most, 0, 4096, &need);
        if (need > most)
            return fb_errf(err, FB_EXIT_SETUP,
                           "--cow-upper %s: this run's layer is not kept: copied there it would "
                           "take more than --disk (%lld bytes) and its slack (1/%d more for "
                           "directories; hard links become copies): %s/upper is as it was before "
                           "the run",
                           c->upper_dir, (long long)c->disk, COW_PERSIST_SLACK_DIV, c->upper_dir);
    }
    int pf[2];
    if (pipe2(pf, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(pf[0]);
        close(pf[1]);
        return fb_errno(err, FB_EXIT_SETUP, "fork");
    }
    if (pid == 0) {
        close(pf[0]);
        struct fb_err e = {0};
        int rc = persist_copy(c, dir, &e);
        if (rc < 0)
            (void)fb_write_all(pf[1], e.msg, strlen(e.msg));
        _exit(rc < 0 ? 1 : 0);
    }
    close(pf[1]);
    char msg[sizeof err->msg];
    ssize_t n = fb_read_full(pf[0], msg, sizeof msg - 1);
    close(pf[0]);
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return fb_errno(err, FB_EXIT_SETUP, "waiting for the copy of the layer");
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    msg[n > 0 ? n : 0] = 0;
    return fb_errf(err, FB_EXIT_SETUP, "--cow-upper %s: this run's layer could not be kept (%s): "
                   "%s/upper is as it was before the run", c->upper_dir,
                   msg[0] ? msg : "the copy failed", c->upper_dir);
}

/* ---- reset ---- */

/* Remove everything below dirfd (not dirfd itself), never following a
 * symlink. */
static int empty_dir(int dirfd, int depth)
{
    if (depth > 512) {
        errno = ELOOP;
        return -1;
    }
    int dfd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return -1;
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return -1;
    }
    int rc = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (unlinkat(dirfd, e->d_name, 0) == 0)
            continue;
        if (errno != EISDIR && errno != EPERM) {
            rc = -1;
            continue;
        }
        /* It goes anyway: make sure we may list and empty it (the sandbox
         * may have made it unsearchable or read-only). */
        fchmodat(dirfd, e->d_name, 0700, 0);
        int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0) {
            rc = -1;
            continue;
        }
        if (empty_dir(sub, depth + 1) < 0)
            rc = -1;
        close(sub);
        if (unlinkat(dirfd, e->d_name, AT_REMOVEDIR) < 0)
            rc = -1;
    }
    closedir(d);
    return rc;
}

int cow_empty_in_place(struct fb_cow *c, struct fb_err *err)
{
    if (empty_dir(c->upper, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: emptying the upper layer");
    base_clear(c);
    c->over_disk = false;
    /* An empty layer starts its history now. */
    clock_gettime(CLOCK_REALTIME, &c->start);
    wait_coarse_past_start(c);
    if (c->upper_dir) {
        int d = open(c->upper_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (d >= 0) {
            write_start(c, d);
            close(d);
        }
    }
    return 0;
}

int cow_adopt_layer(struct fb_cow *c, int newfd, bool fresh, struct fb_err *err)
{
    int up = changes_open_beneath(newfd, "upper", O_RDONLY | O_DIRECTORY, 0);
    if (up < 0) {
        close(newfd);
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write reset: the new upper layer");
    }
    close(c->store);
    close(c->upper);
    c->store = newfd;
    c->upper = up;
    if (!fresh)
        return 0; /* restored: the same history as before */
    /* A fresh layer: nothing committed from it yet. */
    base_clear(c);
    clock_gettime(CLOCK_REALTIME, &c->start);
    wait_coarse_past_start(c);
    return 0;
}
