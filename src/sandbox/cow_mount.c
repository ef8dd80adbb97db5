/* cow_mount.c — the overlay of a copy-on-write workspace (cow_mount.h): the
 * idmapped layers the supervisor prepares as root, the overlay the child
 * mounts in its namespaces, and a live session's overlay replaced by a new
 * one (workspace.reset, session.restore) by a helper that joins the
 * sandbox's namespaces. The layer's state is cow/cow.c's.
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
#include "cow_mount.h"

#include "cgroup.h"
#include "changes.h"
#include "treecopy.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <sys/xattr.h>

/* ---- supervisor, as root: idmapped layers ---- */

int cow_premounts(const struct fb_policy *p, const struct fb_ids *ids, struct fb_premounts *pre,
                  struct fb_err *err)
{
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
            fb_note(err, "warning: %s; the sandbox can only modify workspace files that \"other\" may "
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
static int upper_tmpfs(int64_t disk, struct fb_err *err)
{
    cleanup_close int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "copy-on-write: fsopen tmpfs");
    if (cfg(fs, "mode", "0755", "tmpfs", err) < 0)
        return -1;
    if (disk > 0) {
        char sz[32];
        snprintf(sz, sizeof sz, "%lld", (long long)disk);
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

bool cow_store_has_user_xattrs(int dirfd)
{
    cleanup_close int d = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    return d >= 0 && upper_has_user_xattrs(d);
}

int cow_mount_child(int64_t disk, bool caller_upper, int lower_tree, int upper_tree,
                    const char *stage, int *ovl_fd, int fds[3], struct fb_err *err)
{
    return cow_mount_child_seeded(disk, caller_upper, lower_tree, upper_tree, -1, stage, ovl_fd,
                                  fds, err);
}

int cow_mount_child_seeded(int64_t disk, bool caller_upper, int lower_tree, int upper_tree,
                           int seed, const char *stage, int *ovl_fd, int fds[3],
                           struct fb_err *err)
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
        cleanup_close int t = upper_tmpfs(disk, err);
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
        if (caller_upper)
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
    if (fb_set_ids_raw(c->inside_uid, c->inside_gid) < 0) {
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
    if (cow_mount_child_seeded(c->disk, false, lower, -1, seed, stage, &ovl, fds, &err) < 0)
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
    return cow_adopt_layer(c, newfd, seed < 0, err);
}

int cow_reset(struct fb_cow *c, struct fb_err *err)
{
    if (c->upper < 0)
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: no upper layer");
    if (c->userns >= 0 && c->mntns >= 0 && !c->persistent)
        return reset_live(c, -1, err);
    /* Not mounted any more (run mode), or the caller's own directory: empty
     * it in place. */
    return cow_empty_in_place(c, err);
}

int cow_restore(struct fb_cow *c, int seed, struct fb_err *err)
{
    if (c->upper < 0 || c->userns < 0 || c->mntns < 0 || c->persistent)
        return fb_errf(err, FB_EXIT_SETUP, "copy-on-write: only a live session's layer can be restored");
    return reset_live(c, seed, err);
}
