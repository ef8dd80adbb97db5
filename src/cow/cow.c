/* cow.c — copy-on-write workspaces: the overlay and its upper layer (see
 * cow.h for who calls what).
 *
 * The overlay is always mounted by the sandbox's child, inside its user
 * namespace (overlayfs allows that since Linux 5.11), so it needs the
 * "userxattr" option: its whiteouts are character devices 0/0 as usual,
 * but opaque directories and the other markers are "user.overlay.*"
 * extended attributes instead of "trusted.overlay.*". A tmpfs upper layer
 * needs user xattrs on tmpfs (Linux 6.6). Before that the overlay still
 * mounts, but without its markers: removing a directory with
 * subdirectories then fails with EIO or EOVERFLOW. So the upper storage is
 * tried first (upper_has_user_xattrs), and a run whose upper layer cannot
 * hold them is refused with a clear error naming --cow-upper on a file
 * system that can (ext4, xfs, btrfs). Every copy-up and every file the
 * sandbox creates happen with the child's credentials, so upper files
 * belong to the sandbox's host id.
 *
 * As root the sandbox's ids map to an unprivileged host id, so the
 * workspace owner's files would appear as "nobody" and could not be copied
 * up. The lower layer is then an idmapped mount (overlayfs accepts those
 * since 5.19) on which the owner's files appear as the sandbox's host id.
 *
 * Layers are given to overlayfs as paths, which older kernels require to be
 * mounts of the mounter's own namespace; the child stages them on a small
 * tmpfs that the new root is mounted over, and the old root (with the
 * staging tmpfs) is detached after pivot_root. The overlay keeps private
 * clones of its layers, and the supervisor keeps a directory fd of the
 * upper storage, so the layer outlives the namespace. */
#include "cow.h"

#include "cgroup.h"
#include "changes.h"
#include "mount.h"
#include "treecopy.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>

#define START_FILE "fluebox-start"

static void tree_usage(int dirfd, int64_t limit, int depth, int64_t *total);

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
        int64_t used = 0;
        if (d >= 0 && c->disk > 0)
            tree_usage(d, c->disk, 0, &used);
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

/* Add the blocks of everything below dirfd to *total, stopping early once
 * it passes limit. A directory the sandbox made unsearchable is opened up
 * for a moment (we own it when fluebox is unprivileged; root needs none of
 * this). */
static void tree_usage(int dirfd, int64_t limit, int depth, int64_t *total)
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
        int sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub < 0 && errno == EACCES && st.st_uid == geteuid() &&
            fchmodat(dirfd, e->d_name, (st.st_mode & 07777) | 0500, 0) == 0) {
            sub = openat(dirfd, e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (sub >= 0)
                tree_usage(sub, limit, depth + 1, total);
            fchmodat(dirfd, e->d_name, st.st_mode & 07777, 0);
            if (sub >= 0)
                close(sub);
            continue;
        }
        if (sub >= 0) {
            tree_usage(sub, limit, depth + 1, total);
            close(sub);
        }
    }
    closedir(d);
}

int64_t cow_upper_usage(const struct fb_cow *c, int64_t limit)
{
    int64_t total = 0;
    if (c->store >= 0)
        tree_usage(c->store, limit < 0 ? INT64_MAX : limit, 0, &total);
    return total;
}

bool cow_upper_over(struct fb_cow *c)
{
    if (!c->persistent || c->disk <= 0 || c->store < 0)
        return false;
    if (!c->over_disk)
        c->over_disk = cow_upper_usage(c, c->disk) >= c->disk;
    return c->over_disk;
}

bool cow_upper_full(const struct fb_cow *c)
{
    if (c->persistent)
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

/* ---- supervisor, as root: idmapped layers ---- */

int cow_premounts(const struct fb_policy *p, const struct fb_ids *ids, struct fb_premounts *pre,
                  struct fb_err *err)
{
    (void)err;
    if (!ids->root || !p->cow)
        return 0;
    struct stat st;
    if (stat(p->workspace, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", p->workspace);
    if (st.st_uid != ids->host_uid || st.st_gid != ids->host_gid) {
        struct fb_err e2 = {0};
        pre->workspace_fd =
            userns_idmapped_tree(p->workspace, st.st_uid, st.st_gid, ids, true, &e2);
        if (pre->workspace_fd < 0 && !p->quiet)
            fb_warn("warning: %s; the sandbox can only modify workspace files that \"other\" may "
                    "read",
                    e2.msg);
    }
    if (p->cow_upper) {
        if (stat(p->cow_upper, &st) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "--cow-upper %s", p->cow_upper);
        if (st.st_uid != ids->host_uid || st.st_gid != ids->host_gid) {
            pre->cow_upper_fd =
                userns_idmapped_tree(p->cow_upper, st.st_uid, st.st_gid, ids, false, err);
            if (pre->cow_upper_fd < 0)
                return -1;
        }
    }
    return 0;
}

/* ---- child: the overlay ---- */

/* The kernel's own explanation of a failed fsconfig() is in the context's
 * log; keep the last error line. */
static void fs_log(int fs, char *buf, size_t cap)
{
    char line[160];
    buf[0] = 0;
    ssize_t n;
    while ((n = read(fs, line, sizeof line - 1)) > 0) {
        line[n] = 0;
        if (n > 2 && line[1] == ' ' && (line[0] == 'e' || line[0] == 'w'))
            snprintf(buf, cap, "%.150s", line + 2);
    }
    size_t l = strlen(buf);
    if (l && buf[l - 1] == '\n')
        buf[l - 1] = 0;
}

static int cfg(int fs, const char *key, const char *val, const char *what, struct fb_err *err)
{
    int rc = val ? fsconfig(fs, FSCONFIG_SET_STRING, key, val, 0)
                 : fsconfig(fs, FSCONFIG_SET_FLAG, key, NULL, 0);
    if (rc < 0) {
        int e = errno;
        char why[200];
        fs_log(fs, why, sizeof why);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: %s %s%s%s%s", what, key,
                        why[0] ? " (" : "", why, why[0] ? ")" : "");
    }
    return 0;
}

static int create_fs(int fs, const char *what, struct fb_err *err)
{
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        int e = errno;
        char why[200];
        fs_log(fs, why, sizeof why);
        errno = e;
        if (!why[0] && (e == EPERM || e == EINVAL) && !strcmp(what, "overlay"))
            snprintf(why, sizeof why, "overlayfs in a user namespace needs Linux 5.11, and a "
                                      "tmpfs upper layer needs 6.6");
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: creating the %s%s%s%s", what,
                        why[0] ? " (" : "", why, why[0] ? ")" : "");
    }
    return 0;
}

/* A new tmpfs for the upper layer, as a detached mount. */
static int upper_tmpfs(const struct fb_policy *p, struct fb_err *err)
{
    cleanup_close int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: fsopen tmpfs");
    if (cfg(fs, "mode", "0755", "tmpfs", err) < 0)
        return -1;
    if (p->limits.disk > 0) {
        char sz[32];
        snprintf(sz, sizeof sz, "%lld", (long long)p->limits.disk);
        if (cfg(fs, "size", sz, "tmpfs", err) < 0)
            return -1;
    }
    if (create_fs(fs, "tmpfs", err) < 0)
        return -1;
    int m = fsmount(fs, FSMOUNT_CLOEXEC,
                    MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: fsmount tmpfs");
    return m;
}

/* Can the upper storage (directory fd sfd) hold the user.* extended
 * attributes the overlay keeps its markers in? Tried on a scratch file that
 * is removed again (the storage may be the user's --cow-upper DIR). */
static bool upper_has_user_xattrs(int sfd)
{
    static const char probe[] = ".fluebox-xattr-probe";
    int f = openat(sfd, probe, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (f < 0)
        return true; /* cannot tell: let the overlay decide */
    bool ok = fsetxattr(f, "user.fluebox.probe", "1", 1, 0) == 0 || errno != EOPNOTSUPP;
    close(f);
    unlinkat(sfd, probe, 0);
    return ok;
}

int cow_mount_child(const struct fb_policy *p, int lower_tree, int upper_tree, const char *stage,
                    int *ovl_fd, int fds[3], struct fb_err *err)
{
    return cow_mount_child_seeded(p, lower_tree, upper_tree, -1, stage, ovl_fd, fds, err);
}

int cow_mount_child_seeded(const struct fb_policy *p, int lower_tree, int upper_tree, int seed,
                           const char *stage, int *ovl_fd, int fds[3], struct fb_err *err)
{
    fds[0] = fds[1] = fds[2] = -1;
    *ovl_fd = -1;
    char lower[256], store[256], upper[300], work[300];
    snprintf(lower, sizeof lower, "%s/lower", stage);
    snprintf(store, sizeof store, "%s/store", stage);
    snprintf(upper, sizeof upper, "%s/upper", store);
    snprintf(work, sizeof work, "%s/work", store);

    if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: mounting the staging tmpfs on %s",
                        stage);
    if (mkdir(lower, 0700) < 0 || mkdir(store, 0700) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: staging directories");
    if (move_mount(lower_tree, "", AT_FDCWD, lower, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: attaching the workspace");
    if (upper_tree >= 0) {
        if (move_mount(upper_tree, "", AT_FDCWD, store, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: attaching --cow-upper");
    } else {
        cleanup_close int t = upper_tmpfs(p, err);
        if (t < 0)
            return -1;
        if (move_mount(t, "", AT_FDCWD, store, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: attaching the upper tmpfs");
    }
    cleanup_close int sfd = open(store, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (sfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: opening the upper storage");
    if (!upper_has_user_xattrs(sfd)) {
        /* Without --cow-upper the layer is the scratch tmpfs (or one of its
         * own): say it is tmpfs, and what to give instead. */
        if (p->cow_upper)
            return fb_errf(err, FB_EXIT_SETUP,
                           "copy-on-write: --cow-upper: its file system cannot hold user extended "
                           "attributes, which the overlay needs; use a directory on one that can "
                           "(ext4, xfs, btrfs)");
        return fb_errf(err, FB_EXIT_SETUP,
                       "copy-on-write: tmpfs on this kernel cannot hold user extended attributes "
                       "(Linux 6.6 added them), which the overlay needs; give --cow-upper DIR on "
                       "a file system that can (ext4, xfs, btrfs)");
    }
    bool fresh = mkdirat(sfd, "upper", 0755) == 0;
    if (!fresh && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: creating upper/");
    if (mkdirat(sfd, "work", 0700) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: creating work/");
    /* The overlay's root takes the upper directory's mode: make it the
     * workspace's, so /workspace looks like the host directory. */
    struct stat lst;
    if (fresh && stat(lower, &lst) == 0)
        fchmodat(sfd, "upper", lst.st_mode & 07777, 0);
    if (seed >= 0) {
        /* The snapshot's files, as ours (we are the sandbox's user). */
        cleanup_close int ufd = openat(sfd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct tree_copy_opts o = {.chown = false};
        if (ufd < 0 || tree_copy(seed, ufd, &o, err) < 0)
            return err->msg[0] ? -1 : fb_errno(err, FB_EXIT_SETUP, "copy-on-write: the restored layer");
    }

    cleanup_close int fs = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: overlayfs is not available");
    if (cfg(fs, "source", "fluebox-cow", "overlay", err) < 0 ||
        cfg(fs, "lowerdir", lower, "overlay", err) < 0 ||
        cfg(fs, "upperdir", upper, "overlay", err) < 0 ||
        cfg(fs, "workdir", work, "overlay", err) < 0 ||
        cfg(fs, "userxattr", NULL, "overlay", err) < 0)
        return -1;
    if (create_fs(fs, "overlay", err) < 0)
        return -1;
    int ovl = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (ovl < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: fsmount overlay");
    int u = open("/proc/self/ns/user", O_RDONLY | O_CLOEXEC);
    int m = open("/proc/self/ns/mnt", O_RDONLY | O_CLOEXEC);
    if (u < 0 || m < 0) {
        fb_errno(err, FB_EXIT_SETUP, "copy-on-write: opening the sandbox's namespaces");
        close(ovl);
        if (u >= 0)
            close(u);
        if (m >= 0)
            close(m);
        return -1;
    }
    *ovl_fd = ovl;
    fds[0] = fb_steal_fd(sfd);
    fds[1] = u;
    fds[2] = m;
    return 0;
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

/* Send one fd over a socket. */
static int send_fd(int sock, int fd, int code)
{
    char b = (char)code;
    struct iovec iov = {&b, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    if (fd >= 0) {
        mh.msg_control = u.buf;
        mh.msg_controllen = sizeof u.buf;
        struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
        cm->cmsg_level = SOL_SOCKET;
        cm->cmsg_type = SCM_RIGHTS;
        cm->cmsg_len = CMSG_LEN(sizeof(int));
        memcpy(CMSG_DATA(cm), &fd, sizeof fd);
    }
    return sendmsg(sock, &mh, MSG_NOSIGNAL) == 1 ? 0 : -1;
}

/* The helper of a live reset, in a forked child: join the sandbox's user
 * namespace, build a new overlay in a private mount namespace of our own
 * (the same staging as the child's), then join the sandbox's mount
 * namespace and put it on /workspace in place of the old one. Reports on
 * sock: an error message, or the new upper storage fd. */
__attribute__((noreturn)) static void reset_helper(struct fb_cow *c, int lower_tree, int seed,
                                                  int sock)
{
    struct fb_err err = {0};
    struct fb_policy p;
    memset(&p, 0, sizeof p);
    p.limits.disk = c->disk;
    /* The new layer's pages are the sandbox's (its memory limit). */
    if (c->cg && cgroup_enter(c->cg, &err) < 0)
        goto fail;
    if (setns(c->userns, CLONE_NEWUSER) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "joining the sandbox's user namespace");
        goto fail;
    }
    /* As root our own uid is not mapped in there: become the sandbox's user
     * (keeping the capabilities setns gave us) so what we create is its. */
    prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0);
    if (setresgid(c->inside_gid, c->inside_gid, c->inside_gid) < 0 ||
        setresuid(c->inside_uid, c->inside_uid, c->inside_uid) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "switching to the sandbox's ids");
        goto fail;
    }
    if (unshare(CLONE_NEWNS) < 0 || mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "a private mount namespace");
        goto fail;
    }
    int lower = lower_tree;
    if (lower < 0) {
        lower = open_tree(AT_FDCWD, c->workspace, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
        if (lower < 0 || mount_setattr(lower, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) {
            fb_errno(&err, FB_EXIT_SETUP, "%s", c->workspace);
            goto fail;
        }
    }
    const char *stage = access("/tmp", F_OK) == 0 ? "/tmp" : "/mnt";
    int ovl, fds[3];
    if (cow_mount_child_seeded(&p, lower, -1, seed, stage, &ovl, fds, &err) < 0)
        goto fail;
    if (setns(c->mntns, CLONE_NEWNS) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "joining the sandbox's mount namespace");
        goto fail;
    }
    /* setns left us at the sandbox's root. */
    if (umount2("/workspace", MNT_DETACH) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "detaching the old /workspace");
        goto fail;
    }
    if (move_mount(ovl, "", AT_FDCWD, "/workspace", MOVE_MOUNT_F_EMPTY_PATH) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "mounting the new /workspace");
        goto fail;
    }
    if (send_fd(sock, fds[0], 0) < 0)
        _exit(1);
    _exit(0);
fail:
    (void)!write(sock, err.msg, strlen(err.msg));
    _exit(1);
}

static int reset_live(struct fb_cow *c, int seed, struct fb_err *err)
{
    int lower_tree = -1;
    if (c->root) {
        /* The same idmapped lower layer the sandbox started with. */
        struct fb_ids ids = {.root = true};
        struct stat hs;
        if (fstat(c->host, &hs) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", c->workspace);
        /* The sandbox's host id is whatever its inside uid maps to: read it
         * from the upper layer's root, which the sandbox created. */
        struct stat us;
        if (fstat(c->upper, &us) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: upper layer");
        ids.host_uid = us.st_uid;
        ids.host_gid = us.st_gid;
        if (hs.st_uid != ids.host_uid || hs.st_gid != ids.host_gid) {
            lower_tree = userns_idmapped_tree(c->workspace, hs.st_uid, hs.st_gid, &ids, true, err);
            if (lower_tree < 0)
                return -1;
        }
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        if (lower_tree >= 0)
            close(lower_tree);
        return fb_errno(err, FB_EXIT_SETUP, "socketpair");
    }
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        if (lower_tree >= 0)
            close(lower_tree);
        return fb_errno(err, FB_EXIT_SETUP, "fork");
    }
    if (pid == 0) {
        close(sv[0]);
        reset_helper(c, lower_tree, seed, sv[1]);
    }
    close(sv[1]);
    if (lower_tree >= 0)
        close(lower_tree);
    char msg[512];
    struct iovec iov = {msg, sizeof msg - 1};
    union {
        char buf[CMSG_SPACE(sizeof(int))];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = sizeof u.buf};
    ssize_t n;
    do
        n = recvmsg(sv[0], &mh, MSG_CMSG_CLOEXEC);
    while (n < 0 && errno == EINTR);
    int newfd = -1;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); n > 0 && cm; cm = CMSG_NXTHDR(&mh, cm))
        if (cm->cmsg_level == SOL_SOCKET && cm->cmsg_type == SCM_RIGHTS)
            memcpy(&newfd, CMSG_DATA(cm), sizeof newfd);
    close(sv[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (newfd < 0) {
        msg[n > 0 ? n : 0] = 0;
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write reset: %s",
                       n > 0 ? msg : "the helper failed");
    }
    int up = changes_open_beneath(newfd, "upper", O_RDONLY | O_DIRECTORY, 0);
    if (up < 0) {
        close(newfd);
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write reset: the new upper layer");
    }
    close(c->store);
    close(c->upper);
    c->store = newfd;
    c->upper = up;
    if (seed >= 0)
        return 0; /* restored: the same history as before */
    /* A fresh layer: nothing committed from it yet. */
    base_clear(c);
    clock_gettime(CLOCK_REALTIME, &c->start);
    wait_coarse_past_start(c);
    return 0;
}

int cow_reset(struct fb_cow *c, struct fb_err *err)
{
    if (c->upper < 0)
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: no upper layer");
    if (c->userns >= 0 && c->mntns >= 0 && !c->persistent)
        return reset_live(c, -1, err);
    /* Not mounted any more (run mode), or the caller's own directory: empty
     * it in place. */
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

int cow_restore(struct fb_cow *c, int seed, struct fb_err *err)
{
    if (c->upper < 0 || c->userns < 0 || c->mntns < 0 || c->persistent)
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: only a live session's layer can be restored");
    return reset_live(c, seed, err);
}

/* ---- `fluebox run` ---- */

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* --changes FILE is written whole or not at all (a full disk leaves no cut
 * JSON or patch behind); "-" is stdout. */
static int write_out(const char *path, const char *data, size_t len, struct fb_err *err)
{
    int rc = strcmp(path, "-") ? fb_write_output(path, data, len) : fb_write_all(1, data, len);
    return rc < 0 ? fb_errno(err, FB_EXIT_SETUP, "--changes %s", path) : 0;
}

int cow_run_finish(const struct fb_policy *p, struct fb_cow *c, int exit_code, bool ran_ok)
{
    struct fb_err err = {0};
    struct fb_changes ch;
    int code = exit_code;
    if (!p->changes_out && !p->cow_commit)
        return exit_code; /* nobody asked: the layer just goes away */
    if (changes_scan(c, &ch, NULL, &err) < 0) {
        fb_warn("%s", err.msg);
        return p->cow_commit || p->changes_out ? FB_EXIT_SETUP : exit_code;
    }
    /* Rendered before committing: the old contents come from the host. */
    struct fb_changes_opts o = {.diffs = true};
    bool patch = p->changes_out &&
                 (ends_with(p->changes_out, ".patch") || ends_with(p->changes_out, ".diff"));
    struct fb_text text = {0};
    json_t *j = NULL;
    if (patch && changes_patch(c, &ch, &o, &text, &err) < 0) {
        fb_warn("%s", err.msg);
        code = FB_EXIT_SETUP;
        patch = false;
    } else if (p->changes_out && !patch) {
        j = changes_json(c, &ch, &o);
    }

    struct fb_commit res;
    memset(&res, 0, sizeof res);
    const char *not_committed = NULL;
    char why[600];
    bool committed = false;
    if (p->cow_commit) {
        if (ch.upper_full) {
            not_committed = "the copy-on-write layer ran out of space (--disk)";
        } else if (!ran_ok) {
            snprintf(why, sizeof why, "the command did not succeed (exit %d)", exit_code);
            not_committed = why;
        } else if (commit_apply(c, &ch, NULL, 0, false, NULL, &res, &err) < 0) {
            snprintf(why, sizeof why, "%s", res.nconflicts ? "conflicts with changes made on the host"
                                                         : err.msg);
            not_committed = why;
        } else {
            committed = true;
        }
        if (not_committed && ran_ok) {
            code = FB_EXIT_SETUP;
            fb_warn("--commit: %s", not_committed);
            for (size_t i = 0; i < res.nconflicts; i++)
                fb_warn("conflict: %s: %s", res.conflicts[i].path, res.conflicts[i].reason);
        } else if (not_committed && !p->quiet) {
            fb_warn("--commit: not committing: %s", not_committed);
        }
        /* The caller's persistent layer now holds nothing the host lacks. */
        if (committed && c->persistent && cow_reset(c, &err) < 0)
            fb_warn("%s", err.msg);
    }

    if (patch && write_out(p->changes_out, text.p ? text.p : "", text.len, &err) < 0) {
        fb_warn("%s", err.msg);
        code = FB_EXIT_SETUP;
    }
    if (j) {
        if (p->cow_commit) {
            json_t *cj = commit_json(&res);
            json_object_set_new(cj, "committed", json_boolean(committed));
            json_object_set_new(cj, "reason", not_committed ? json_string(not_committed) : json_null());
            json_object_set_new(j, "commit", cj);
        }
        char *s = json_dumps(j, JSON_COMPACT);
        char *line = s ? fb_xasprintf("%s\n", s) : NULL;
        if (!line || write_out(p->changes_out, line, strlen(line), &err) < 0) {
            fb_warn("%s", line ? err.msg : "--changes: cannot encode the changes");
            code = FB_EXIT_SETUP;
        }
        free(line);
        free(s);
        json_decref(j);
    }
    text_free(&text);
    commit_free(&res);
    changes_free(&ch);
    changes_restore_modes(c);
    return code;
}
