/* mount.c — the sandbox's filesystem layout, decided here and nowhere else.
 *
 *   /                  tmpfs, read-only once built
 *   /usr               host /usr, read-only (recursive), nosuid, nodev
 *   /bin /sbin /lib*   the host's merged-/usr symlinks copied, or read-only binds
 *   /etc               generated passwd, group, hostname, hosts, resolv.conf,
 *                      plus read-only binds of what programs need to run
 *                      (ld.so cache, alternatives, ssl certificates, ...)
 *   /workspace         --workspace DIR read-write (idmapped when root), or a
 *                      scratch directory, or with --cow an overlay with DIR as
 *                      its lower layer (cow.c)
 *   /tmp               scratch directory, mode 1777
 *   /home/fluebox      the user's home (/root for uid 0): scratch directory
 *                      with the XDG directories
 *   /dev               a directory of the root with null zero full random
 *                      urandom tty bound from the host, a new devpts instance,
 *                      /dev/shm (scratch)
 *   /proc              new procfs for the pid namespace; /proc/sys, sysrq-trigger,
 *                      irq, bus read-only; kcore, keys, timer_list, kallsyms ...
 *                      covered by /dev/null, acpi and scsi by an empty directory
 *   programs           what the command and the caller's interpreters need when
 *                      they live outside /usr (a venv, a pyenv/nvm version
 *                      directory, a single file; toolchain.c), read-only
 *   --ro-bind/--bind/--tmpfs and profile binds, in order, last
 *   no /sys, nothing else of the host.
 *
 * The scratch space: one tmpfs of --disk size (and a bounded number of
 * inodes) holds everything the sandbox may write that is not a host bind:
 * /tmp, /dev/shm, the home, a tmpfs /workspace, the copy-on-write upper
 * layer and --tmpfs without a size, each a bind of one of its directories.
 * Filling any of them fills the one budget and gets ENOSPC; the supervisor
 * keeps a descriptor of it to report the bytes used (FB_MSG_SCRATCH).
 *
 * Two phases (see mount.h): sources are cloned with open_tree() before the
 * child changes ids; the tree is built on a tmpfs mounted over /tmp in the
 * child's private mount namespace, then pivot_root(".", ".") and a lazy
 * unmount of the old root. Flags are set with mount_setattr() on detached
 * trees, so locked flags of host mounts never need to be rediscovered, and
 * mounts become visible only once read-only. User-given destinations are
 * resolved with openat2(RESOLVE_IN_ROOT) so a symlink in the new tree cannot
 * point a mount at a host path. */
#include "mount.h"

#include "cow_mount.h"
#include "ctl.h"
#include "netns.h"
#include "userns.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* Host /etc entries a normal program expects, kept short because each bind
 * costs on every start: the ld.so cache, Debian's alternatives (cc, awk, ...
 * in /usr/bin point there), TLS certificates and openssl.cnf, the time zone,
 * name-service, protocol and service tables, Python's site hooks. Missing
 * ones are skipped; symlinks are recreated as symlinks (they point into
 * /usr). Profiles can add more with a filesystem "ro" entry. */
static const char *const etc_binds[] = {
    "ld.so.cache", "alternatives", "ssl", "localtime", "nsswitch.conf", "protocols",
    "services", "python3", "python3.11", "python3.12", "python3.13",
};

/* Top-level system trees: bound read-only, or recreated when they are the
 * merged-/usr symlinks. */
static const char *const sys_trees[] = {"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32"};

/* Device nodes bound from the host. */
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
const char *const *const mount_dev_nodes = dev_nodes;
const size_t mount_ndev_nodes = FB_ARRAY_LEN(dev_nodes);

/* /proc entries made read-only, and entries covered by /dev/null (files) or
 * an empty read-only tmpfs (directories). */
static const char *const proc_ro[] = {"sys", "sysrq-trigger", "irq", "bus", "fs"};
static const char *const proc_hide[] = {"kcore", "keys", "key-users", "timer_list", "kallsyms",
                                        "sched_debug", "latency_stats", "kmsg", "acpi",
                                        "scsi", "config.gz", "kpagecount", "kpageflags",
                                        "kpagecgroup", "vmallocinfo", "pagetypeinfo", "slabinfo"};
/* Which of them are directories (the others are files). */
static bool proc_hide_dir(const char *name)
{
    return !strcmp(name, "acpi") || !strcmp(name, "scsi");
}

enum entry_kind { E_TREE, E_SYMLINK };

struct entry {
    enum entry_kind kind;
    int fd;          /* E_TREE: detached mount from open_tree */
    char *dst;       /* path inside, relative to the new root ("usr", "etc/ssl") */
    char *target;    /* E_SYMLINK */
    bool is_dir;
    bool user;       /* from --bind/--ro-bind/profile: resolve dst in-root */
};

/* Every fd here belongs to the layout: mount_build closes each as it
 * attaches it, mount_layout_free whatever is left. */
struct fb_layout {
    struct entry *e;
    size_t n;
    int dev_fd[FB_ARRAY_LEN(dev_nodes)];
    int workspace_fd;
    int cow_upper_fd; /* --cow-upper directory tree, or -1 */
    int *user_fds;    /* per p->mounts index: detached tree or -1 */
    int *tool_fds;    /* per p->tool_binds index: detached tree or -1 */
    size_t ntool;
    size_t nuser;
    int scratch_fd;   /* the scratch tmpfs (detached), or -1 before mount_scratch */
    mode_t umask;     /* the caller's, while mount_scratch..mount_build clear it */
    bool umask_saved;
    int ca_fd;        /* the per-run CA's certificate (a memfd, PEM), or -1 */
    unsigned long ca_hash;
};

void mount_layout_set_ca(struct fb_layout *l, int fd, unsigned long hash)
{
    if (l->ca_fd >= 0)
        close(l->ca_fd);
    l->ca_fd = fd;
    l->ca_hash = hash;
}

int mount_layout_scratch(const struct fb_layout *l)
{
    return l ? l->scratch_fd : -1;
}

void mount_layout_free(struct fb_layout *l)
{
    if (!l)
        return;
    for (size_t i = 0; i < l->n; i++) {
        if (l->e[i].fd >= 0)
            close(l->e[i].fd);
        free(l->e[i].dst);
        free(l->e[i].target);
    }
    free(l->e);
    if (l->workspace_fd >= 0)
        close(l->workspace_fd);
    if (l->cow_upper_fd >= 0)
        close(l->cow_upper_fd);
    if (l->scratch_fd >= 0)
        close(l->scratch_fd);
    if (l->ca_fd >= 0)
        close(l->ca_fd);
    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++)
        if (l->dev_fd[i] >= 0)
            close(l->dev_fd[i]);
    for (size_t i = 0; i < l->nuser; i++)
        if (l->user_fds[i] >= 0)
            close(l->user_fds[i]);
    free(l->user_fds);
    for (size_t i = 0; l->tool_fds && i < l->ntool; i++)
        if (l->tool_fds[i] >= 0)
            close(l->tool_fds[i]);
    free(l->tool_fds);
    free(l);
}

size_t mount_layout_fds(const struct fb_layout *l, int *out, size_t cap)
{
    size_t n = 0;
#define KEEP(fd)                                                                                   \
    do {                                                                                           \
        if ((fd) >= 0 && n < cap)                                                                  \
            out[n++] = (fd);                                                                       \
    } while (0)
    if (!l)
        return 0;
    for (size_t i = 0; i < l->n; i++)
        KEEP(l->e[i].fd);
    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++)
        KEEP(l->dev_fd[i]);
    KEEP(l->workspace_fd);
    KEEP(l->cow_upper_fd);
    for (size_t i = 0; i < l->nuser; i++)
        KEEP(l->user_fds[i]);
    for (size_t i = 0; l->tool_fds && i < l->ntool; i++)
        KEEP(l->tool_fds[i]);
#undef KEEP
    return n;
}

size_t mount_layout_nfds(const struct fb_layout *l)
{
    return l ? l->n + FB_ARRAY_LEN(dev_nodes) + 2 + l->nuser + l->ntool : 0;
}

static struct entry *add_entry(struct fb_layout *l)
{
    l->e = fb_xrealloc(l->e, (l->n + 1) * sizeof *l->e);
    struct entry *e = &l->e[l->n++];
    memset(e, 0, sizeof *e);
    e->fd = -1;
    return e;
}

/* Clone a host path into a detached mount with the given attributes. */
static int clone_tree(const char *src, uint64_t attrs, struct fb_err *err)
{
    int fd = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", src);
    struct mount_attr a = {.attr_set = attrs};
    if (attrs && mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "%s: setting mount flags", src);
        close(fd);
        return -1;
    }
    return fd;
}

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define RW_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int add_host(struct fb_layout *l, const char *host, const char *dst, struct fb_err *err)
{
    struct stat st;
    if (lstat(host, &st) < 0)
        return 0; /* optional */
    if (S_ISLNK(st.st_mode)) {
        char buf[4096];
        ssize_t n = readlink(host, buf, sizeof buf - 1);
        if (n < 0)
            return 0;
        buf[n] = 0;
        struct entry *e = add_entry(l);
        e->kind = E_SYMLINK;
        e->dst = fb_xstrdup(dst);
        e->target = fb_xstrdup(buf);
        return 0;
    }
    int fd = clone_tree(host, RO_ATTRS, err);
    if (fd < 0)
        return -1;
    struct entry *e = add_entry(l);
    e->kind = E_TREE;
    e->fd = fd;
    e->dst = fb_xstrdup(dst);
    e->is_dir = S_ISDIR(st.st_mode);
    return 0;
}

int mount_prepare(const struct fb_policy *p, struct fb_premounts *pre, struct fb_layout **out,
                  struct fb_err *err)
{
    struct fb_layout *l = fb_xcalloc(1, sizeof *l);
    l->workspace_fd = -1;
    l->cow_upper_fd = -1;
    l->scratch_fd = -1;
    l->ca_fd = -1;
    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++)
        l->dev_fd[i] = -1;
    char path[4096];

    for (size_t i = 0; i < FB_ARRAY_LEN(sys_trees); i++) {
        snprintf(path, sizeof path, "/%s", sys_trees[i]);
        if (add_host(l, path, sys_trees[i], err) < 0)
            goto fail;
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(etc_binds); i++) {
        snprintf(path, sizeof path, "/etc/%s", etc_binds[i]);
        if (add_host(l, path, path + 1, err) < 0)
            goto fail;
    }
    if (p->net == FB_NET_HOST) {
        if (add_host(l, "/etc/resolv.conf", "etc/resolv.conf", err) < 0)
            goto fail;
    }
    /* The programs' binds are attached after /tmp and before the user's,
     * like theirs (a toolchain may live under /tmp on the host). */
    l->ntool = p->ntool_binds;
    l->tool_fds = fb_xcalloc(l->ntool ? l->ntool : 1, sizeof(int));
    for (size_t i = 0; i < l->ntool; i++)
        l->tool_fds[i] = -1;
    for (size_t i = 0; i < l->ntool; i++) {
        l->tool_fds[i] = clone_tree(p->tool_binds[i].src, RO_ATTRS, err);
        if (l->tool_fds[i] < 0)
            goto fail;
    }

    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++) {
        snprintf(path, sizeof path, "/dev/%s", dev_nodes[i]);
        int fd = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (fd < 0)
            continue; /* e.g. no /dev/tty on a headless host */
        struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
        mount_setattr(fd, "", AT_EMPTY_PATH, &a, sizeof a);
        l->dev_fd[i] = fd;
    }

    if (pre && pre->workspace_fd >= 0) {
        l->workspace_fd = fb_steal_fd(pre->workspace_fd);
    } else if (p->workspace) {
        /* With --cow the workspace is the overlay's lower layer: read-only. */
        l->workspace_fd = clone_tree(p->workspace, p->workspace_ro || p->cow ? RO_ATTRS : RW_ATTRS,
                                     err);
        if (l->workspace_fd < 0)
            goto fail;
    }
    if (p->cow && p->cow_upper) {
        if (pre && pre->cow_upper_fd >= 0) {
            l->cow_upper_fd = fb_steal_fd(pre->cow_upper_fd);
        } else {
            l->cow_upper_fd = clone_tree(p->cow_upper, RW_ATTRS, err);
            if (l->cow_upper_fd < 0)
                goto fail;
        }
    }

    l->user_fds = fb_xcalloc(p->nmounts ? p->nmounts : 1, sizeof(int));
    l->nuser = p->nmounts;
    for (size_t i = 0; i < p->nmounts; i++)
        l->user_fds[i] = -1;
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        if (m->kind != FB_MNT_RO_BIND && m->kind != FB_MNT_BIND)
            continue;
        if (pre && pre->bind_fds && pre->bind_fds[i] >= 0) {
            l->user_fds[i] = fb_steal_fd(pre->bind_fds[i]);
            continue;
        }
        int fd = clone_tree(m->src, m->kind == FB_MNT_RO_BIND ? RO_ATTRS : RW_ATTRS, err);
        if (fd < 0) {
            if (m->optional && errno == ENOENT)
                continue;
            fb_errno(err, FB_EXIT_SETUP, "%s %s", m->kind == FB_MNT_RO_BIND ? "--ro-bind" : "--bind",
                     m->src);
            goto fail;
        }
        l->user_fds[i] = fd;
    }
    *out = l;
    return 0;
fail:
    mount_layout_free(l);
    return -1;
}

/* ---- between the phases: the scratch space ---- */

/* Where the child stages things and builds the new root: a directory of the
 * old root, detached (with everything stacked on it) after pivot_root. */
static const char *build_base(void)
{
    return access("/tmp", F_OK) == 0 ? "/tmp" : "/mnt";
}


/* Bytes of scratch per inode allowed: 8 KiB, a generous average for source
 * trees and package caches (a 512M budget holds 65,536 files). */
#define SCRATCH_BYTES_PER_INODE 8192

static int fs_set(int fs, const char *key, const char *val, struct fb_err *err)
{
    if (fsconfig(fs, FSCONFIG_SET_STRING, key, val, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: tmpfs option %s=%s", key, val);
    return 0;
}

/* A directory of the scratch space with an exact mode (mount_scratch
 * clears the umask while the layout is built; mkdir keeps the sticky bit). */
static int scratch_dir(int scratch, const char *rel, mode_t mode, struct fb_err *err)
{
    if (mkdirat(scratch, rel, mode) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: creating %s", rel);
    return 0;
}

int mount_scratch(const struct fb_policy *p, struct fb_layout *l, int ctl, struct fb_err *err)
{
    /* Modes are exact until mount_build is done (it restores the umask the
     * command inherits). */
    l->umask = umask(0);
    l->umask_saved = true;
    cleanup_close int fs = fsopen("tmpfs", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: fsopen tmpfs");
    char v[32];
    if (fs_set(fs, "mode", "0755", err) < 0)
        return -1;
    if (p->limits.disk > 0) {
        int64_t inodes = p->limits.disk / SCRATCH_BYTES_PER_INODE;
        snprintf(v, sizeof v, "%lld", (long long)p->limits.disk);
        if (fs_set(fs, "size", v, err) < 0)
            return -1;
        snprintf(v, sizeof v, "%lld", (long long)(inodes < 1024 ? 1024 : inodes));
        if (fs_set(fs, "nr_inodes", v, err) < 0)
            return -1;
    }
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: creating the tmpfs");
    int m = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: fsmount");
    l->scratch_fd = m;
    /* Attached under the new root's staging place, so that it goes away
     * with the old root (a detached mount's last close would cost an RCU
     * grace period of its own). Nothing staged may propagate to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "making mounts private");
    if (move_mount(m, "", AT_FDCWD, build_base(), MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: staging it");
    /* The home with its XDG directories, /tmp and /dev/shm; the others are
     * made when they are bound. Owned by the inside user (we are it). */
    static const char *const home_dirs[] = {"home/.config", "home/.cache", "home/.local",
                                            "home/.local/share", "home/.local/state"};
    if (scratch_dir(m, "tmp", 01777, err) < 0 || scratch_dir(m, "shm", 01777, err) < 0 ||
        scratch_dir(m, "home", 0755, err) < 0)
        return -1;
    for (size_t i = 0; i < FB_ARRAY_LEN(home_dirs); i++)
        if (scratch_dir(m, home_dirs[i], 0755, err) < 0)
            return -1;
    /* The supervisor measures it at the end (the bytes used). */
    struct fb_msg msg = {.type = FB_MSG_SCRATCH};
    if (ctl_send(ctl, &msg, &m, 1) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "passing the scratch space");
    /* A fork: the supervisor copies the original's files in first, and says
     * GO when they are there (nothing of the layout is built on it yet). */
    if (p->seed_scratch) {
        struct fb_msg go;
        int r = ctl_recv(ctl, &go, NULL, NULL);
        if (r <= 0 || go.type != FB_MSG_GO)
            return fb_errf(err, FB_EXIT_SETUP, "scratch space: the supervisor did not fill it");
    }
    return 0;
}

/* A detached bind of the scratch directory rel (created with mode when
 * missing), with extra mount attributes. */
static int scratch_tree(struct fb_layout *l, const char *rel, mode_t mode, uint64_t attrs,
                        struct fb_err *err)
{
    if (scratch_dir(l->scratch_fd, rel, mode, err) < 0)
        return -1;
    int t = open_tree(l->scratch_fd, rel, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (t < 0)
        return fb_errno(err, FB_EXIT_SETUP, "scratch space: %s", rel);
    struct mount_attr a = {.attr_set = attrs};
    if (attrs && mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "scratch space: %s: mount flags", rel);
        close(t);
        return -1;
    }
    return t;
}

static int attach(int fd, const char *rel, bool is_dir, struct fb_err *err);

/* Mount the scratch directory rel on the new root's path dst. */
static int scratch_at(struct fb_layout *l, const char *rel, mode_t mode, uint64_t attrs,
                      const char *dst, struct fb_err *err)
{
    cleanup_close int t = scratch_tree(l, rel, mode, attrs, err);
    if (t < 0)
        return -1;
    return attach(t, dst, true, err);
}

/* ---- between the phases: the copy-on-write overlay ---- */

int mount_cow(const struct fb_policy *p, struct fb_layout *l, int ctl, struct fb_err *err)
{
    if (l->workspace_fd < 0)
        return fb_errf(err, FB_EXIT_SETUP, "--cow needs --workspace");
    /* Nothing staged here may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "making mounts private");
    /* Without --cow-upper, the upper layer is a directory of the scratch
     * space: it counts against --disk like everything else written. */
    if (l->cow_upper_fd < 0) {
        l->cow_upper_fd = scratch_tree(l, "cow", 0755, MOUNT_ATTR_NOEXEC, err);
        if (l->cow_upper_fd < 0)
            return -1;
    }
    /* --cow-upper DIR with --disk: no file system bounds DIR, so the layer
     * is staged in the scratch space (which the kernel sizes: a write past
     * --disk fails with ENOSPC at once), starting as a copy of DIR/upper;
     * the supervisor copies it back into DIR when the sandbox is gone
     * (cow.c, cow_persist). Where tmpfs cannot hold the overlay's user.*
     * markers (before Linux 6.6) the layer stays in DIR, measured. */
    int ovl, fds[3], seed = -1;
    bool staged = false;
    if (p->cow_upper && p->limits.disk > 0 && l->scratch_fd >= 0) {
        cleanup_close int t = scratch_tree(l, "cow", 0755, MOUNT_ATTR_NOEXEC, err);
        if (t < 0)
            return -1;
        if (cow_store_has_user_xattrs(t)) {
            seed = openat(l->cow_upper_fd, "upper", O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
            if (seed < 0 && errno != ENOENT)
                return fb_errno(err, FB_EXIT_SETUP, "--cow-upper %s: its upper/", p->cow_upper);
            close(l->cow_upper_fd);
            l->cow_upper_fd = fb_steal_fd(t);
            staged = true;
        }
    }
    /* Staged where mount_build then mounts the new root, on top of it. */
    int rc = cow_mount_child_seeded(p->limits.disk, p->cow_upper != NULL && !staged,
                                    l->workspace_fd, l->cow_upper_fd, seed, build_base(), &ovl,
                                    fds, err);
    if (seed >= 0)
        close(seed);
    if (rc < 0)
        return -1;
    close(l->workspace_fd);
    l->workspace_fd = ovl;
    if (l->cow_upper_fd >= 0)
        close(l->cow_upper_fd);
    l->cow_upper_fd = -1;
    /* code 1: the layer is staged in the scratch space (cow.h). */
    struct fb_msg m = {.type = FB_MSG_COW, .code = staged ? 1 : 0};
    rc = ctl_send(ctl, &m, fds, 3);
    for (int i = 0; i < 3; i++)
        close(fds[i]);
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "passing the copy-on-write layer");
    return 0;
}

/* ---- phase 2 ---- */

/* mkdir -p of a relative path under the current directory (the new root
 * being built, which only fluebox has written to so far). */
static int mkdir_p(const char *rel, mode_t mode)
{
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", rel);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = 0;
        if (mkdir(buf, mode) < 0 && errno != EEXIST)
            return -1;
        *s = '/';
    }
    if (mkdir(buf, mode) < 0 && errno != EEXIST)
        return -1;
    return 0;
}

static int make_parent(const char *rel)
{
    const char *slash = strrchr(rel, '/');
    if (!slash)
        return 0;
    char buf[4096];
    snprintf(buf, sizeof buf, "%.*s", (int)(slash - rel), rel);
    return mkdir_p(buf, 0755);
}

/* The mount point rel: a directory, or an empty file (mknod, which like
 * O_EXCL never follows a symlink); its parents only when missing. */
static int mount_point(const char *rel, bool is_dir)
{
    for (int round = 0; round < 2; round++) {
        int rc = is_dir ? mkdir(rel, 0755) : mknod(rel, S_IFREG | 0644, 0);
        if (rc == 0 || errno == EEXIST)
            return 0;
        if (errno != ENOENT || round > 0 || make_parent(rel) < 0)
            return -1;
    }
    return -1;
}

static int attach(int fd, const char *rel, bool is_dir, struct fb_err *err)
{
    if (mount_point(rel, is_dir) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating /%s", rel);
    if (move_mount(fd, "", AT_FDCWD, rel, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting /%s", rel);
    return 0;
}

static int write_text(const char *rel, const char *text, struct fb_err *err)
{
    int fd = open(rel, O_CREAT | O_TRUNC | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating /%s", rel);
    int rc = fb_write_all(fd, text, strlen(text));
    close(fd);
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing /%s", rel);
    return 0;
}

static int write_etc(const struct fb_policy *p, struct fb_err *err)
{
    char buf[1024];
    const char *name = p->uid == 0 ? "root" : "fluebox";
    int n = snprintf(buf, sizeof buf, "root:x:0:0:root:/root:/bin/sh\n");
    if (p->uid != 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "%s:x:%u:%u:fluebox sandbox:%s:/bin/sh\n",
                      name, p->uid, p->gid, policy_home(p));
    snprintf(buf + n, sizeof buf - (size_t)n, "nobody:x:65534:65534:nobody:/nonexistent:/usr/sbin/nologin\n");
    if (write_text("etc/passwd", buf, err) < 0)
        return -1;
    n = snprintf(buf, sizeof buf, "root:x:0:\n");
    if (p->gid != 0)
        n += snprintf(buf + n, sizeof buf - (size_t)n, "fluebox:x:%u:\n", p->gid);
    snprintf(buf + n, sizeof buf - (size_t)n, "nogroup:x:65534:\n");
    if (write_text("etc/group", buf, err) < 0)
        return -1;
    snprintf(buf, sizeof buf, "%s\n", p->hostname);
    if (write_text("etc/hostname", buf, err) < 0)
        return -1;
    snprintf(buf, sizeof buf,
             "127.0.0.1\tlocalhost\n127.0.1.1\t%s\n::1\tlocalhost ip6-localhost ip6-loopback\n",
             p->hostname);
    if (write_text("etc/hosts", buf, err) < 0)
        return -1;
    if (p->net != FB_NET_HOST) {
        /* none: nothing listens there, so lookups fail at once (ECONNREFUSED
         * on loopback) instead of timing out. allow: the supervisor's DNS. */
        if (write_text("etc/resolv.conf", "nameserver " FB_NET_DNS_ADDR "\noptions attempts:1\n",
                       err) < 0)
            return -1;
    }
    return 0;
}

static int setup_dev(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err)
{
    /* A directory of the root, not a tmpfs of its own: read-only with it.
     * Every superblock a sandbox mounts costs each memory cgroup of the
     * machine one more entry of the kernel's shrinker table, for as long
     * as the machine runs (docs/bench.md, "Density"). */
    if (mkdir("dev", 0755) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "creating /dev");
    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++) {
        if (l->dev_fd[i] < 0)
            continue;
        char rel[32];
        snprintf(rel, sizeof rel, "dev/%s", dev_nodes[i]);
        if (attach(l->dev_fd[i], rel, false, err) < 0)
            return -1;
        close(l->dev_fd[i]);
        l->dev_fd[i] = -1;
    }
    if (mkdir("dev/pts", 0755) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating /dev/pts");
    if (mount("devpts", "dev/pts", "devpts", MS_NOSUID | MS_NOEXEC,
              "newinstance,ptmxmode=0666,mode=620") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting devpts");
    if (symlink("pts/ptmx", "dev/ptmx") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating /dev/ptmx");
    if (mkdir("dev/shm", 0755) < 0 ||
        scratch_at(l, "shm", 01777, MOUNT_ATTR_NOEXEC, "dev/shm", err) < 0)
        return err->msg[0] ? -1 : fb_errno(err, FB_EXIT_SETUP, "creating /dev/shm");
    static const char *const links[][2] = {{"/proc/self/fd", "dev/fd"},
                                           {"/proc/self/fd/0", "dev/stdin"},
                                           {"/proc/self/fd/1", "dev/stdout"},
                                           {"/proc/self/fd/2", "dev/stderr"}};
    for (size_t i = 0; i < FB_ARRAY_LEN(links); i++)
        if (symlink(links[i][0], links[i][1]) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "creating /%s", links[i][1]);
    return 0;
}

#define EMPTY_DIR ".fluebox-empty"
static int make_empty_dir(struct fb_err *err);

/* Mounts the sandbox's /proc; *sysfd gets its sys/ while still writable
 * (mount_build sets the user namespace's limits through it at the end). */
static int setup_proc(int *sysfd, struct fb_err *err)
{
    if (mkdir("proc", 0555) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "creating /proc");
    if (mount("proc", "proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP,
                        "mounting /proc (a host that masks parts of its own /proc prevents this)");
    /* This mount's sys/ stays writable under the read-only one put on top
     * below (a host may mount its own /proc/sys read-only). */
    *sysfd = open("proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (*sysfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "/proc/sys");
    int empty = make_empty_dir(err);
    if (empty < 0)
        return -1;
    int rc = mount_proc_harden("proc", empty, err);
    close(empty);
    if (rmdir(EMPTY_DIR) < 0 && rc == 0)
        return fb_errno(err, FB_EXIT_SETUP, "removing the empty directory");
    return rc;
}

/* A read-only bind of the empty directory empty_dir at rel. ENOENT only
 * when rel does not exist (the caller skips what this kernel lacks). */
static int bind_empty(int empty_dir, const char *rel)
{
    int t = open_tree(empty_dir, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_EMPTY_PATH);
    if (t < 0) {
        if (errno == ENOENT)
            errno = EIO;
        return -1;
    }
    struct mount_attr a = {.attr_set = RO_ATTRS | MOUNT_ATTR_NOEXEC};
    int rc = mount_setattr(t, "", AT_EMPTY_PATH, &a, sizeof a);
    if (rc < 0 && errno == ENOENT)
        errno = EIO;
    if (rc == 0)
        rc = move_mount(t, "", AT_FDCWD, rel, MOVE_MOUNT_F_EMPTY_PATH);
    int e = errno;
    close(t);
    errno = e;
    return rc;
}

/* An O_PATH descriptor of EMPTY_DIR, made in the current directory: bound
 * read-only over what /proc hides, it costs no superblock. The caller
 * removes the name once the binds are made (they keep the directory, and
 * a removed directory can never get an entry). */
static int make_empty_dir(struct fb_err *err)
{
    if (mkdir(EMPTY_DIR, 0555) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating an empty directory");
    int fd = open(EMPTY_DIR, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "an empty directory");
        rmdir(EMPTY_DIR);
    }
    return fd;
}

int mount_proc_harden(const char *proc, int empty_dir, struct fb_err *err)
{
    char rel[4200];
    for (size_t i = 0; i < FB_ARRAY_LEN(proc_ro); i++) {
        snprintf(rel, sizeof rel, "%s/%s", proc, proc_ro[i]);
        int fd = open_tree(AT_FDCWD, rel, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
        if (fd < 0) {
            if (errno == ENOENT)
                continue;
            return fb_errno(err, FB_EXIT_SETUP, "/%s", rel);
        }
        struct mount_attr a = {.attr_set = RO_ATTRS | MOUNT_ATTR_NOEXEC};
        int rc = mount_setattr(fd, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a);
        if (rc == 0)
            rc = move_mount(fd, "", AT_FDCWD, rel, MOVE_MOUNT_F_EMPTY_PATH);
        close(fd);
        if (rc < 0)
            return fb_errno(err, FB_EXIT_SETUP, "making /%s read-only", rel);
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(proc_hide); i++) {
        snprintf(rel, sizeof rel, "%s/%s", proc, proc_hide[i]);
        /* Mounted on directly (what this kernel lacks fails with ENOENT);
         * a type other than expected is looked at. */
        bool dir = proc_hide_dir(proc_hide[i]);
        for (int round = 0; round < 2; round++) {
            int rc = !dir ? mount("dev/null", rel, NULL, MS_BIND, NULL)
                     : empty_dir >= 0
                         ? bind_empty(empty_dir, rel)
                         : mount("tmpfs", rel, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                 "size=0,mode=0555");
            if (rc == 0 || errno == ENOENT)
                break;
            struct stat st;
            if (round > 0 || lstat(rel, &st) < 0 || dir == S_ISDIR(st.st_mode))
                return fb_errno(err, FB_EXIT_SETUP, "hiding /%s", rel);
            dir = !dir;
        }
    }
    return 0;
}

int mount_open_in_root(int rootfd, const char *dst, int create_leaf, struct fb_err *err)
{
    struct open_how how = {.flags = O_PATH | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    const char *rel = dst;
    while (*rel == '/')
        rel++;
    int fd = (int)syscall(SYS_openat2, rootfd, rel, &how, sizeof how);
    if (fd >= 0 || errno != ENOENT || !create_leaf)
        return fd >= 0 ? fd : fb_errno(err, FB_EXIT_SETUP, "%s", dst);
    /* Walk and create. */
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", rel);
    int dir = dup(rootfd);
    char *save = NULL;
    char *comp = strtok_r(buf, "/", &save);
    while (comp) {
        char *next = strtok_r(NULL, "/", &save);
        bool leaf = next == NULL;
        struct open_how h = {.flags = O_PATH | O_CLOEXEC,
                             .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        /* RESOLVE_IN_ROOT is relative to dir, so re-resolve from the root
         * each time by keeping dir as the root of the walk. */
        (void)h;
        if (leaf && create_leaf == 2) {
            int f = openat(dir, comp, O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
            if (f < 0 && errno != EEXIST) {
                close(dir);
                return fb_errno(err, FB_EXIT_SETUP, "creating %s", dst);
            }
            if (f >= 0)
                close(f);
        } else if (mkdirat(dir, comp, 0755) < 0 && errno != EEXIST) {
            close(dir);
            return fb_errno(err, FB_EXIT_SETUP, "creating %s", dst);
        }
        struct open_how h2 = {.flags = O_PATH | O_CLOEXEC | (leaf ? 0 : O_DIRECTORY),
                              .resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS};
        int nd = (int)syscall(SYS_openat2, dir, comp, &h2, sizeof h2);
        close(dir);
        if (nd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", dst);
        dir = nd;
        comp = next;
    }
    return dir;
}

/* The binds toolchain.c derived for the programs, at the path they are
 * called by (resolved in the new root like the user's). */
static int tool_mounts(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err)
{
    cleanup_close int root = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return fb_errno(err, FB_EXIT_SETUP, "opening the new root");
    for (size_t i = 0; i < l->ntool; i++) {
        struct stat st;
        if (fstat(l->tool_fds[i], &st) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", p->tool_binds[i].src);
        cleanup_close int t =
            mount_open_in_root(root, p->tool_binds[i].dst, S_ISDIR(st.st_mode) ? 1 : 2, err);
        if (t < 0)
            return -1;
        if (move_mount(l->tool_fds[i], "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "mounting %s on %s", p->tool_binds[i].src,
                            p->tool_binds[i].dst);
        close(l->tool_fds[i]);
        l->tool_fds[i] = -1;
    }
    return 0;
}

static int user_mounts(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err)
{
    cleanup_close int root = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (root < 0)
        return fb_errno(err, FB_EXIT_SETUP, "opening the new root");
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        if (m->kind == FB_MNT_TMPFS) {
            cleanup_close int t = mount_open_in_root(root, m->dst, 1, err);
            if (t < 0)
                return -1;
            if (m->size <= 0) {
                /* No size of its own: a directory of the scratch space. */
                char rel[32];
                snprintf(rel, sizeof rel, "tmpfs-%zu", i);
                cleanup_close int tree = scratch_tree(l, rel, 0755, 0, err);
                if (tree < 0)
                    return -1;
                if (move_mount(tree, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
                    return fb_errno(err, FB_EXIT_SETUP, "--tmpfs %s", m->dst);
                continue;
            }
            char opts[64];
            snprintf(opts, sizeof opts, "size=%lld,mode=0755", (long long)m->size);
            char via[64];
            snprintf(via, sizeof via, "/proc/self/fd/%d", t);
            if (mount("tmpfs", via, "tmpfs", MS_NOSUID | MS_NODEV, opts) < 0)
                return fb_errno(err, FB_EXIT_SETUP, "--tmpfs %s", m->dst);
            continue;
        }
        if (m->kind == FB_MNT_HIDE) {
            cleanup_close int t = mount_open_in_root(root, m->dst, 0, err);
            if (t < 0) {
                if (errno == ENOENT)
                    continue;
                return -1;
            }
            struct stat st;
            if (fstat(t, &st) < 0)
                return fb_errno(err, FB_EXIT_SETUP, "hide %s", m->dst);
            char via[64];
            snprintf(via, sizeof via, "/proc/self/fd/%d", t);
            int rc = S_ISDIR(st.st_mode)
                         ? mount("tmpfs", via, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
                                 "size=0,mode=0555")
                         : mount("/dev/null", via, NULL, MS_BIND, NULL);
            if (rc < 0)
                return fb_errno(err, FB_EXIT_SETUP, "hide %s", m->dst);
            continue;
        }
        int fd = l->user_fds[i];
        if (fd < 0)
            continue; /* optional and missing */
        struct stat st;
        if (fstat(fd, &st) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", m->src);
        cleanup_close int t = mount_open_in_root(root, m->dst, S_ISDIR(st.st_mode) ? 1 : 2, err);
        if (t < 0)
            return -1;
        if (move_mount(fd, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "mounting %s on %s", m->src, m->dst);
        close(fd);
        l->user_fds[i] = -1;
    }
    return 0;
}

int mount_build(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err)
{
    int rc = -1;
    cleanup_close int sysfd = -1;
    /* Nothing we mount may propagate back to the host. */
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "making mounts private");
        goto out;
    }
    const char *base = build_base();
    /* The root only holds what fluebox writes while building it (the
     * generated /etc files, mount points, links), and is read-only after. */
    if (mount("tmpfs", base, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755,size=4m,nr_inodes=16384") < 0) {
        fb_errno(err, FB_EXIT_SETUP, "mounting the root tmpfs");
        goto out;
    }
    if (chdir(base) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "entering the new root");
        goto out;
    }
    for (size_t i = 0; i < l->n; i++) {
        struct entry *e = &l->e[i];
        if (e->kind == E_SYMLINK) {
            if (symlink(e->target, e->dst) < 0 &&
                (errno != ENOENT || make_parent(e->dst) < 0 || symlink(e->target, e->dst) < 0)) {
                fb_errno(err, FB_EXIT_SETUP, "creating /%s", e->dst);
                goto out;
            }
            continue;
        }
        if (attach(e->fd, e->dst, e->is_dir, err) < 0)
            goto out;
        close(e->fd);
        e->fd = -1;
    }
    if (mkdir_p("etc", 0755) < 0 || write_etc(p, err) < 0)
        goto out;
    if (l->ca_fd >= 0) {
        if (mount_ca_certs(l->ca_fd, l->ca_hash, err) < 0)
            goto out;
        close(l->ca_fd);
        l->ca_fd = -1;
    }

    if (l->workspace_fd >= 0) {
        if (attach(l->workspace_fd, "workspace", true, err) < 0)
            goto out;
        close(l->workspace_fd);
        l->workspace_fd = -1;
    } else if (scratch_at(l, "workspace", 0755, 0, "workspace", err) < 0) {
        goto out;
    }
    if (scratch_at(l, "tmp", 01777, 0, "tmp", err) < 0)
        goto out;
    const char *home = policy_home(p) + 1;
    if (scratch_at(l, "home", 0755, 0, home, err) < 0)
        goto out;
    if (setup_dev(p, l, err) < 0 || setup_proc(&sysfd, err) < 0)
        goto out;
    if (tool_mounts(p, l, err) < 0 || user_mounts(p, l, err) < 0)
        goto out;
    /* Everything not explicitly writable is read-only from here on (/dev
     * with the root). */
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_pivot_root, ".", ".") < 0) {
        fb_errno(err, FB_EXIT_SETUP, "pivot_root");
        goto out;
    }
    if (umount2(".", MNT_DETACH) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "detaching the old root");
        goto out;
    }
    if (chdir("/") < 0) {
        fb_errno(err, FB_EXIT_SETUP, "chdir /");
        goto out;
    }
    if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "making the root read-only");
        goto out;
    }
    /* Last, once every detached tree is attached (each counts as a mount
     * namespace until then): the user namespace's own limits. */
    if (userns_set_limits(sysfd, err) < 0)
        goto out;
    if (p->namespaces & FB_NS_NET)
        net_clamp_tcp_buffers(sysfd);
    rc = 0;
out:
    if (l->umask_saved)
        umask(l->umask);
    mount_layout_free(l);
    return rc;
}
