/* oci_mount.c — the container's root, built from the bundle and the spec.
 *
 * The rootfs cannot simply be bound: it belongs to host root (an image
 * unpacked by containerd), the container's root is an unprivileged host id,
 * and containerd's rootfs is an overlay mount, which cannot be idmapped. So
 * the root is built as --cow builds a workspace (cow.c), one level up:
 *
 *   supervisor (host root)               child (its user namespace, inside root)
 *   each layer of the rootfs, idmapped   a staging tmpfs; the layers attached
 *   read-only: the rootfs itself, or     under it, an overlay over them with
 *   the upper and lower directories of   an upper layer on a tmpfs of --disk
 *   the overlay mounted there            size (userxattr); the spec's mounts
 *   each read-only bind source,          in order inside it, resolved with
 *   idmapped where its filesystem can    RESOLVE_IN_ROOT; the default devices
 *                                        (bound from the host), /proc hardened
 *                                        as in every sandbox, sysctls, masked
 *                                        and read-only paths; pivot_root.
 *
 * The idmapping is the container's own (0..65535 to its host range), so the
 * image's files keep their owners inside and root inside can change them;
 * its writes land in the upper tmpfs and go with the container (they never
 * reach the bundle or containerd's snapshot). Before Linux 6.6 tmpfs has no
 * user xattrs, which an overlay in a user namespace needs: the supervisor
 * then gives an ext4 of the same size on a loop device instead
 * (oci_upper.c), which goes with the container. Read-write binds are not
 * idmapped: the container writes there as its host ids, never as host root
 * (a file capability written through an idmapped mount would be one host
 * root honours). Every mount is nosuid and,
 * but for devpts and the bound device nodes, nodev. sysfs is the container's
 * own, read-only, with /sys/firmware and /sys/kernel covered (in a network
 * namespace not the container's own, an empty read-only tmpfs with only
 * the fs/cgroup mount point); a "cgroup" mount is the container's own
 * cgroup, read-only, through its cgroup namespace (oci_cgview.c): nothing
 * above it of the host's hierarchies is visible. */
#include "oci.h"

#include "ctl.h"
#include "mount.h"
#include "mountinfo.h"
#include "netns.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <linux/openat2.h>
#include <sched.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <termios.h>

#include "userns.h"

static int new_fs(const char *type, const char *source, const char *data, uint64_t attrs,
                  const char *what, struct fb_err *err);

/* ---- supervisor side ---- */

/* The super options of the overlay mounted at path (the topmost mount
 * there), or NULL when it is not an overlay mount point. */
static char *overlay_opts(const char *path)
{
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return NULL;
    char *line = NULL, *found = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        struct mountinfo_ent e;
        if (!mountinfo_split(line, &e))
            continue;
        cleanup_free char *mp = mountinfo_unescape(e.mnt);
        if (strcmp(mp, path))
            continue;
        free(found);
        found = !strcmp(e.fstype, "overlay") ? mountinfo_unescape(e.super) : NULL;
    }
    free(line);
    fclose(f);
    return found;
}

/* The value of key= in a comma-separated option list (malloc'ed). */
static char *opt_value(const char *opts, const char *key)
{
    size_t kl = strlen(key);
    for (const char *s = opts; *s;) {
        size_t l = strcspn(s, ",");
        if (l > kl && !strncmp(s, key, kl) && s[kl] == '=')
            return fb_xstrndup(s + kl + 1, l - kl - 1);
        s += l;
        if (*s == ',')
            s++;
    }
    return NULL;
}

static int idmapped(const char *src, int usernsfd, uint64_t attrs, bool recursive,
                    bool must, struct fb_err *err)
{
    int fd = open_tree(AT_FDCWD, src,
                       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", src);
    unsigned flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);
    struct mount_attr a = {.attr_set = attrs | MOUNT_ATTR_IDMAP, .userns_fd = (uint64_t)usernsfd};
    if (mount_setattr(fd, "", flags, &a, sizeof a) == 0)
        return fd;
    if (must) {
        fb_errno(err, FB_EXIT_SETUP, "%s: this filesystem cannot do idmapped mounts", src);
        close(fd);
        return -1;
    }
    /* Without the idmapping its files show as nobody inside. */
    struct mount_attr b = {.attr_set = attrs};
    if (mount_setattr(fd, "", flags, &b, sizeof b) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "%s: setting mount flags", src);
        close(fd);
        return -1;
    }
    return fd;
}

static int plain_tree(const char *src, uint64_t attrs, bool recursive, struct fb_err *err)
{
    int fd = open_tree(AT_FDCWD, src,
                       OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | (recursive ? AT_RECURSIVE : 0));
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", src);
    struct mount_attr a = {.attr_set = attrs};
    if (mount_setattr(fd, "", AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0), &a, sizeof a) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "%s: setting mount flags", src);
        close(fd);
        return -1;
    }
    return fd;
}

#define LAYER_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

static int layers(const struct oci_spec *s, int ns, struct oci_child *c, struct fb_err *err)
{
    struct stat st;
    if (stat(s->root, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "root.path %s", s->root);
    if (!S_ISDIR(st.st_mode))
        return fb_errf(err, FB_EXIT_SETUP, "root.path %s: not a directory", s->root);
    char real[4096];
    if (!realpath(s->root, real))
        return fb_errno(err, FB_EXIT_SETUP, "root.path %s", s->root);
    cleanup_free char *ovl = overlay_opts(real);
    if (!ovl) {
        int fd = idmapped(real, ns, LAYER_ATTRS, true, true, err);
        if (fd < 0)
            return -1;
        c->lower_fds[c->nlower++] = fd;
        return 0;
    }
    /* containerd's snapshot: an overlay. Its layers, top first. */
    cleanup_free char *upper = opt_value(ovl, "upperdir");
    cleanup_free char *lower = opt_value(ovl, "lowerdir");
    if (!lower)
        return fb_errf(err, FB_EXIT_SETUP, "root.path %s: an overlay without lowerdir", real);
    if (upper) {
        int fd = idmapped(upper, ns, LAYER_ATTRS, false, true, err);
        if (fd < 0)
            return -1;
        c->lower_fds[c->nlower++] = fd;
    }
    char *save = NULL;
    for (char *l = strtok_r(lower, ":", &save); l; l = strtok_r(NULL, ":", &save)) {
        if (c->nlower >= FB_ARRAY_LEN(c->lower_fds))
            return fb_errf(err, FB_EXIT_SETUP, "root.path %s: more than %zu layers", real,
                           FB_ARRAY_LEN(c->lower_fds));
        int fd = idmapped(l, ns, LAYER_ATTRS, false, true, err);
        if (fd < 0)
            return -1;
        c->lower_fds[c->nlower++] = fd;
    }
    return 0;
}

int oci_mount_prepare(const struct oci_spec *s, const char *uid_map, const char *gid_map,
                      struct oci_child *c, struct fb_err *err)
{
    c->nlower = 0;
    c->idmap_ns = userns_map_fd(uid_map, gid_map, err);
    if (c->idmap_ns < 0)
        return -1;
    return layers(s, c->idmap_ns, c, err);
}

/* A procfs of the pid namespace the supervisor's children go to (a joined
 * one, a pod's): made by a helper forked into it, as root. The child cannot
 * mount it: that pid namespace is not its user namespace's. */
static int proc_of_joined_pidns(const struct oci_mount *m, struct fb_err *err)
{
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socketpair");
    pid_t pid = fork();
    if (pid < 0) {
        close(sv[0]);
        close(sv[1]);
        return fb_errno(err, FB_EXIT_SETUP, "%s: forking into the joined pid namespace", m->dst);
    }
    if (pid == 0) {
        close(sv[0]);
        struct fb_err e2 = {0};
        int fd = new_fs("proc", m->src, NULL,
                        MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, m->dst, &e2);
        struct fb_msg r = {.type = FB_MSG_OCI_BIND};
        if (fd < 0)
            ctl_sendf(sv[1], FB_MSG_ERR, 1, "%s", e2.msg);
        else
            ctl_send(sv[1], &r, &fd, 1);
        _exit(0);
    }
    close(sv[1]);
    struct fb_msg r;
    int fd = -1;
    size_t nfd = 1;
    int rc = ctl_recv(sv[0], &r, &fd, &nfd);
    close(sv[0]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    if (rc > 0 && r.type == FB_MSG_OCI_BIND && nfd == 1)
        return fd;
    if (rc > 0 && nfd == 1)
        close(fd);
    return fb_errf(err, FB_EXIT_SETUP, "%s", rc > 0 ? r.text : "mounting proc failed");
}

int oci_mount_source(const struct oci_spec *s, int ns, size_t i, struct fb_err *err)
{
    if (!s->mounts[i].bind)
        return proc_of_joined_pidns(&s->mounts[i], err);
    {
        const struct oci_mount *m = &s->mounts[i];
        uint64_t attrs = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV;
        if (m->flags & MS_RDONLY)
            attrs |= MOUNT_ATTR_RDONLY;
        if (m->flags & MS_NOEXEC)
            attrs |= MOUNT_ATTR_NOEXEC;
        /* Read-only binds are idmapped, so their files show their owners.
         * Read-write ones are not: through an idmapped mount the container's
         * root would write as host root (files, owners, file capabilities
         * that host root would honour), so it writes there as its own host
         * ids, as a rootless container does. */
        int fd;
        if (attrs & MOUNT_ATTR_RDONLY)
            fd = idmapped(m->src, ns, attrs, m->recursive, false, err);
        else
            fd = plain_tree(m->src, attrs, m->recursive, err);
        if (fd < 0)
            return fb_err_wrap(err, "mounts[%zu] (%s)", i, m->dst);
        return fd;
    }
}

void oci_mount_release(const struct oci_spec *s, struct oci_child *c)
{
    (void)s;
    for (size_t i = 0; i < c->nlower; i++)
        close(c->lower_fds[i]);
    c->nlower = 0;
    if (c->idmap_ns >= 0)
        close(c->idmap_ns);
    c->idmap_ns = -1;
    if (c->upper_fd >= 0)
        close(c->upper_fd);
    c->upper_fd = -1;
}

/* ---- child side ---- */

/* Ask the supervisor for the source of mounts[i] (a bind's tree, a joined
 * pid namespace's proc). */
static int bind_source(int ctl, size_t i, const char *what, struct fb_err *err)
{
    struct fb_msg q = {.type = FB_MSG_OCI_BIND, .code = (int)i};
    if (ctl_send(ctl, &q, NULL, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: asking for the source", what);
    struct fb_msg m;
    int fd = -1;
    size_t nfd = 1;
    int r = ctl_recv(ctl, &m, &fd, &nfd);
    if (r <= 0 || m.type != FB_MSG_OCI_BIND || nfd != 1) {
        if (r > 0 && nfd == 1)
            close(fd);
        /* The supervisor reports its own error and ends the spawn. */
        _exit(FB_EXIT_SETUP);
    }
    return fd;
}

static void fs_why(int fs, char *buf, size_t cap)
{
    buf[0] = 0;
    char line[256];
    ssize_t n;
    while ((n = read(fs, line, sizeof line - 1)) > 0) {
        line[n] = 0;
        const char *t = line + (n > 2 && line[1] == ' ' ? 2 : 0);
        size_t l = strlen(t);
        if (l >= cap)
            l = cap - 1;
        memcpy(buf, t, l);
        buf[l] = 0;
    }
}

static int fs_set(int fs, const char *key, const char *val, const char *what, struct fb_err *err)
{
    int rc = val ? fsconfig(fs, FSCONFIG_SET_STRING, key, val, 0)
                 : fsconfig(fs, FSCONFIG_SET_FLAG, key, NULL, 0);
    if (rc < 0) {
        int e = errno;
        char why[200];
        fs_why(fs, why, sizeof why);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "%s: option %s%s%s%s%s", what, key, val ? "=" : "",
                        val ? val : "", why[0] ? " " : "", why);
    }
    return 0;
}

/* A new filesystem of type as a detached mount: the comma-separated data
 * options one by one, then fsmount with attrs. -1 with errno kept. */
static int new_fs(const char *type, const char *source, const char *data, uint64_t attrs,
                  const char *what, struct fb_err *err)
{
    cleanup_close int fs = fsopen(type, FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: %s is not available", what, type);
    if (source && fs_set(fs, "source", source, what, err) < 0)
        return -1;
    cleanup_free char *copy = fb_xstrdup(data ? data : "");
    char *save = NULL;
    for (char *o = strtok_r(copy, ",", &save); o; o = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(o, '=');
        if (eq)
            *eq = 0;
        if (fs_set(fs, o, eq ? eq + 1 : NULL, what, err) < 0)
            return -1;
    }
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        int e = errno;
        char why[200];
        fs_why(fs, why, sizeof why);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "%s: mounting %s%s%s", what, type, why[0] ? ": " : "",
                        why);
    }
    int m = fsmount(fs, FSMOUNT_CLOEXEC, (unsigned)attrs);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: fsmount %s", what, type);
    return m;
}

static int attach_fd(int mfd, int target, const char *what, struct fb_err *err)
{
    if (move_mount(mfd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting %s", what);
    return 0;
}

static uint64_t attrs_of(const struct oci_mount *m, bool nodev)
{
    uint64_t a = MOUNT_ATTR_NOSUID | (nodev ? MOUNT_ATTR_NODEV : 0);
    if (m->flags & MS_RDONLY)
        a |= MOUNT_ATTR_RDONLY;
    if (m->flags & MS_NOEXEC)
        a |= MOUNT_ATTR_NOEXEC;
    if (m->flags & MS_NOATIME)
        a |= MOUNT_ATTR_NOATIME;
    else if (m->flags & MS_STRICTATIME)
        a |= MOUNT_ATTR_STRICTATIME;
    if (m->flags & MS_NODIRATIME)
        a |= MOUNT_ATTR_NODIRATIME;
    return a;
}

static int mask_path(int rootfd, const char *path, struct fb_err *err)
{
    struct fb_err e2;
    cleanup_close int t = mount_open_in_root(rootfd, path, 0, &e2);
    if (t < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : fb_errf(err, FB_EXIT_SETUP, "%s", e2.msg);
    struct stat st;
    if (fstat(t, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "masking %s", path);
    cleanup_close int m = -1;
    if (S_ISDIR(st.st_mode)) {
        m = oci_empty_ro(path, err);
    } else {
        m = open_tree(rootfd, "dev/null", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (m < 0)
            return fb_errno(err, FB_EXIT_SETUP, "masking %s: /dev/null", path);
    }
    if (m < 0)
        return -1;
    return attach_fd(m, t, path, err);
}

static int readonly_path(int rootfd, const char *path, struct fb_err *err)
{
    struct fb_err e2;
    cleanup_close int t = mount_open_in_root(rootfd, path, 0, &e2);
    if (t < 0)
        return errno == ENOENT || errno == ENOTDIR ? 0 : fb_errf(err, FB_EXIT_SETUP, "%s", e2.msg);
    cleanup_close int m = open_tree(t, "", OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE |
                                              AT_EMPTY_PATH);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "read-only %s", path);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV};
    if (mount_setattr(m, "", AT_EMPTY_PATH | AT_RECURSIVE, &a, sizeof a) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "read-only %s", path);
    return attach_fd(m, t, path, err);
}

/* One mount of the spec at its destination in the root being built. */
static int spec_mount(const struct fb_policy *p, const struct oci_child *c, int ctl, int rootfd,
                      size_t i, struct fb_err *err)
{
    const struct oci_mount *m = &c->spec->mounts[i];
    char what[300];
    snprintf(what, sizeof what, "mounts[%zu] (%s)", i, m->dst);
    cleanup_close int mfd = -1;
    int leaf = 1;
    if (m->bind) {
        mfd = bind_source(ctl, i, what, err);
        struct stat st;
        if (mfd < 0 || fstat(mfd, &st) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "%s: no source", what);
        leaf = S_ISDIR(st.st_mode) ? 1 : 2;
    } else if (!strcmp(m->type, "proc")) {
        mfd = new_fs("proc", m->src, NULL, attrs_of(m, true) | MOUNT_ATTR_NOEXEC, what, err);
        if (mfd < 0 && errno == EPERM) /* a pid namespace not ours: the supervisor's */
            mfd = bind_source(ctl, i, what, err);
    } else if (!strcmp(m->type, "sysfs")) {
        mfd = new_fs("sysfs", m->src, NULL,
                     attrs_of(m, true) | MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOEXEC, what, err);
        if (mfd < 0 && errno == EPERM) /* a network namespace not ours: /sys is empty but */
            mfd = oci_sysfs_stub(what, err); /* for /sys/fs/cgroup, which engines mount */
    } else if (!strcmp(m->type, "tmpfs")) {
        mfd = new_fs("tmpfs", m->src, m->data, attrs_of(m, true), what, err);
    } else if (!strcmp(m->type, "devpts")) {
        mfd = new_fs("devpts", m->src, m->data, attrs_of(m, false), what, err);
    } else if (!strcmp(m->type, "mqueue")) {
        mfd = new_fs("mqueue", m->src, NULL, attrs_of(m, true), what, err);
        if (mfd < 0 && errno == EPERM) /* an ipc namespace not ours */
            mfd = new_fs("tmpfs", m->src, "mode=1777,size=1m", attrs_of(m, true), what, err);
    } else if (!strcmp(m->type, "cgroup") || !strcmp(m->type, "cgroup2")) {
        return oci_cgroup_view(rootfd, m->dst, (p->namespaces & FB_NS_CGROUP) != 0, err);
    } else {
        return fb_errf(err, FB_EXIT_SETUP, "%s: mounts of type \"%s\" are not supported", what,
                       m->type);
    }
    if (mfd < 0)
        return -1;
    cleanup_close int t = mount_open_in_root(rootfd, m->dst, leaf, err);
    if (t < 0)
        return -1;
    return attach_fd(mfd, t, what, err);
}

/* /dev: the default devices bound from the host, ptmx and the links. */
static int default_devices(int rootfd, bool terminal, struct fb_err *err)
{
    for (size_t i = 0; i < mount_ndev_nodes; i++) {
        char host[64], in[64];
        snprintf(host, sizeof host, "/dev/%s", mount_dev_nodes[i]);
        snprintf(in, sizeof in, "/dev/%s", mount_dev_nodes[i]);
        cleanup_close int src = open_tree(AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        if (src < 0)
            continue;
        struct mount_attr a = {.attr_set = MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC};
        mount_setattr(src, "", AT_EMPTY_PATH, &a, sizeof a);
        cleanup_close int t = mount_open_in_root(rootfd, in, 2, err);
        if (t < 0)
            return -1;
        if (attach_fd(src, t, in, err) < 0)
            return -1;
    }
    static const char *const links[][2] = {{"/proc/self/fd", "dev/fd"},
                                           {"/proc/self/fd/0", "dev/stdin"},
                                           {"/proc/self/fd/1", "dev/stdout"},
                                           {"/proc/self/fd/2", "dev/stderr"},
                                           {"pts/ptmx", "dev/ptmx"}};
    cleanup_close int dev = mount_open_in_root(rootfd, "/dev", 1, err);
    if (dev < 0)
        return -1;
    cleanup_close int devdir = openat(dev, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (devdir < 0)
        return fb_errno(err, FB_EXIT_SETUP, "/dev");
    for (size_t i = 0; i < FB_ARRAY_LEN(links); i++) {
        const char *name = links[i][1] + 4;
        if (!strcmp(name, "ptmx"))
            unlinkat(devdir, name, 0); /* a node from the image */
        if (symlinkat(links[i][0], devdir, name) < 0 && errno != EEXIST)
            return fb_errno(err, FB_EXIT_SETUP, "creating /%s", links[i][1]);
    }
    if (terminal) {
        int f = openat(devdir, "console", O_CREAT | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (f >= 0)
            close(f);
    }
    return 0;
}

/* linux.devices: fifos are made; a device node only when it is one of the
 * default ones (the same node the host has at that path, bound from it).
 * Inside a user namespace mknod of a device is refused by the kernel, and
 * fluebox gives containers no host devices beyond the defaults. */
static int spec_devices(const struct oci_spec *s, int rootfd, struct fb_err *err)
{
    for (size_t i = 0; json_is_array(s->devices) && i < json_array_size(s->devices); i++) {
        json_t *d = json_array_get(s->devices, i);
        const char *path = json_string_value(json_object_get(d, "path"));
        char type = json_string_value(json_object_get(d, "type"))[0];
        json_t *fm = json_object_get(d, "fileMode");
        mode_t mode = json_is_integer(fm) ? (mode_t)json_integer_value(fm) & 07777 : 0666;
        if (type == 'p') {
            char parent[4096];
            snprintf(parent, sizeof parent, "%s", path);
            char *slash = strrchr(parent, '/');
            *slash = 0;
            cleanup_close int dir = mount_open_in_root(rootfd, parent[0] ? parent : "/", 1, err);
            if (dir < 0)
                return -1;
            cleanup_close int rdir = openat(dir, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
            if (rdir < 0 || (mkfifoat(rdir, slash + 1, mode) < 0 && errno != EEXIST) ||
                fchmodat(rdir, slash + 1, mode, 0) < 0)
                return fb_errno(err, FB_EXIT_SETUP, "linux.devices[%zu] (%s)", i, path);
            json_t *u = json_object_get(d, "uid"), *g = json_object_get(d, "gid");
            if ((json_is_integer(u) || json_is_integer(g)) &&
                fchownat(rdir, slash + 1, json_is_integer(u) ? (uid_t)json_integer_value(u) : (uid_t)-1,
                         json_is_integer(g) ? (gid_t)json_integer_value(g) : (gid_t)-1,
                         AT_SYMLINK_NOFOLLOW) < 0)
                return fb_errno(err, FB_EXIT_SETUP, "linux.devices[%zu] (%s)", i, path);
            continue;
        }
        struct stat st;
        long major = (long)json_integer_value(json_object_get(d, "major"));
        long minor = (long)json_integer_value(json_object_get(d, "minor"));
        bool dflt = false;
        for (size_t k = 0; k < mount_ndev_nodes; k++) {
            char host[64];
            snprintf(host, sizeof host, "/dev/%s", mount_dev_nodes[k]);
            if (!strcmp(path, host) && stat(host, &st) == 0 &&
                (long)major(st.st_rdev) == major && (long)minor(st.st_rdev) == minor)
                dflt = true;
        }
        if (!dflt)
            return fb_errf(err, FB_EXIT_SETUP, "linux.devices[%zu] (%s, %c %ld:%ld): fluebox gives "
                           "containers no host devices beyond the default ones", i, path, type,
                           major, minor);
    }
    return 0;
}

/* The highest group id mapped in the container's user namespace, from
 * its gid_map (the container's proc, under rootfd); -1 if unreadable. */
static long long top_gid(int rootfd)
{
    struct open_how how = {.flags = O_RDONLY | O_CLOEXEC,
                           .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
    int fd = (int)syscall(SYS_openat2, rootfd, "proc/self/gid_map", &how, sizeof how);
    if (fd < 0)
        return -1;
    char buf[1024];
    ssize_t n = fb_read_full(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    long long top = -1;
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        unsigned long long in, out, len;
        if (sscanf(l, "%llu %llu %llu", &in, &out, &len) == 3 && len > 0 &&
            (long long)(in + len - 1) > top)
            top = (long long)(in + len - 1);
    }
    return top;
}

/* net.ipv4.ping_group_range: Docker asks for "0 2147483647" (every group)
 * in every spec, and the kernel refuses a group that is not mapped in the
 * container's user namespace (fluebox maps 65,536 ids, not 2^31). No
 * process of the container can hold an unmapped group, so the range cut
 * at the last mapped gid allows exactly the same processes: that is what
 * is written. A range that starts past the mapping allows nobody: "1 0",
 * the kernel's own "nobody". */
static const char *ping_range(const char *v, int rootfd, char *buf, size_t cap)
{
    unsigned long long lo, hi;
    char extra;
    long long top = top_gid(rootfd);
    if (top < 0 || sscanf(v, "%llu %llu %c", &lo, &hi, &extra) != 2 || hi <= (unsigned long long)top)
        return v;
    if (lo > (unsigned long long)top || lo > hi)
        snprintf(buf, cap, "1 0");
    else
        snprintf(buf, cap, "%llu %lld", lo, top);
    return buf;
}

/* Namespaced sysctls only (runc's list): kernel.{msg*,sem,shm*},
 * fs.mqueue.*, kernel.hostname/domainname, and net.* in the container's own
 * network namespace. */
static int sysctls(const struct fb_policy *p, const struct oci_spec *s, int rootfd,
                   struct fb_err *err)
{
    const char *key;
    json_t *val;
    json_object_foreach(s->sysctl, key, val) {
        const char *v = json_string_value(val);
        if (!v)
            return fb_errf(err, FB_EXIT_SETUP, "linux.sysctl.%s: expected a string", key);
        bool ok = !strncmp(key, "kernel.msg", 10) || !strcmp(key, "kernel.sem") ||
                  !strncmp(key, "kernel.shm", 10) || !strncmp(key, "fs.mqueue.", 10) ||
                  !strcmp(key, "kernel.domainname") || !strcmp(key, "kernel.hostname");
        if (!strncmp(key, "net.", 4))
            ok = (p->namespaces & FB_NS_NET) != 0;
        if (!ok || strstr(key, ".."))
            return fb_errf(err, FB_EXIT_SETUP, "linux.sysctl.%s: not a sysctl of the container's "
                           "own namespaces", key);
        char path[512];
        snprintf(path, sizeof path, "proc/sys/%s", key);
        for (char *c = path + 9; *c; c++)
            if (*c == '.')
                *c = '/';
        struct open_how how = {.flags = O_WRONLY | O_CLOEXEC,
                               .resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS};
        char pr[64];
        if (!strcmp(key, "net.ipv4.ping_group_range"))
            v = ping_range(v, rootfd, pr, sizeof pr);
        int fd = (int)syscall(SYS_openat2, rootfd, path, &how, sizeof how);
        if (fd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "linux.sysctl.%s", key);
        int rc = fb_write_all(fd, v, strlen(v));
        close(fd);
        if (rc < 0)
            return fb_errno(err, FB_EXIT_SETUP, "linux.sysctl.%s=%s", key, v);
    }
    return 0;
}

/* With the allowlist, names resolve through the supervisor's DNS at
 * FB_NET_DNS_ADDR (netns.h): that is the container's /etc/resolv.conf, bound
 * read-only over what the image or the spec's binds put there. */
static int allowlist_resolv(const struct fb_policy *p, const char *stage, int rootfd,
                            struct fb_err *err)
{
    if (p->net != FB_NET_ALLOW)
        return 0;
    char path[300];
    snprintf(path, sizeof path, "%s/resolv.conf", stage);
    static const char text[] = "nameserver " FB_NET_DNS_ADDR "\noptions attempts:1\n";
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -1 : fb_write_all(fd, text, sizeof text - 1);
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing the container's resolv.conf");
    cleanup_close int src = open_tree(AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                                       MOUNT_ATTR_NOEXEC};
    if (src < 0 || mount_setattr(src, "", AT_EMPTY_PATH, &a, sizeof a) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "the container's resolv.conf");
    cleanup_close int t = mount_open_in_root(rootfd, "/etc/resolv.conf", 2, err);
    if (t < 0)
        return -1;
    return attach_fd(src, t, "/etc/resolv.conf", err);
}

/* Not /sys/fs/cgroup: sysfs has only an empty mount point there, and a
 * cgroup mount of the spec is the container's own view (oci_cgview.c). */
static const char *const sys_masks[] = {"/sys/firmware", "/sys/kernel", "/sys/power",
                                        "/sys/devices/virtual/powercap"};

/* The layers and the upper tmpfs under stage, the overlay at stage/root. */
static int overlay(const struct fb_policy *p, const struct oci_child *c, int ctl,
                   const char *stage, struct fb_err *err)
{
    size_t cap = 64 + c->nlower * 64;
    cleanup_free char *lower = fb_xmalloc(cap);
    size_t o = 0;
    lower[0] = 0;
    for (size_t i = 0; i < c->nlower; i++) {
        char dir[300];
        snprintf(dir, sizeof dir, "%s/l%zu", stage, i);
        if (mkdir(dir, 0700) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "staging %s", dir);
        if (move_mount(c->lower_fds[i], "", AT_FDCWD, dir, MOVE_MOUNT_F_EMPTY_PATH) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "attaching the rootfs layer %zu", i);
        o += (size_t)snprintf(lower + o, cap - o, "%s%s", i ? ":" : "", dir);
    }
    char store[300], upper[320], work[320], root[300];
    snprintf(store, sizeof store, "%s/store", stage);
    snprintf(upper, sizeof upper, "%s/upper", store);
    snprintf(work, sizeof work, "%s/work", store);
    snprintf(root, sizeof root, "%s/root", stage);
    char data[64] = "mode=0755";
    if (p->limits.disk > 0)
        snprintf(data, sizeof data, "mode=0755,size=%lld", (long long)p->limits.disk);
    cleanup_close int t = c->upper_fd >= 0 ? dup(c->upper_fd)
                                            : new_fs("tmpfs", "tmpfs", data,
                                                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
                                                     "the root's upper layer", err);
    if (c->upper_fd >= 0 && t < 0)
        return fb_errno(err, FB_EXIT_SETUP, "the root's upper layer");
    if (t < 0)
        return -1;
    /* The supervisor measures it for the report (disk_used_bytes), as it
     * does a sandbox's scratch space: fstatfs only. */
    struct fb_msg sm = {.type = FB_MSG_SCRATCH};
    if (ctl_send(ctl, &sm, &t, 1) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "passing the root's upper layer");
    if (mkdir(store, 0700) < 0 || mkdir(root, 0755) < 0 ||
        move_mount(t, "", AT_FDCWD, store, MOVE_MOUNT_F_EMPTY_PATH) < 0 ||
        mkdir(upper, 0755) < 0 || mkdir(work, 0700) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "staging the root's upper layer");
    /* The overlay's root takes the upper directory's mode and owner: the
     * top layer's. */
    char top[300];
    snprintf(top, sizeof top, "%s/l0", stage);
    struct stat st;
    if (stat(top, &st) == 0) {
        chmod(upper, st.st_mode & 07777);
        if (chown(upper, st.st_uid, st.st_gid) < 0 && errno != EINVAL)
            return fb_errno(err, FB_EXIT_SETUP, "the root's upper layer");
    }
    cleanup_close int fs = fsopen("overlay", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "overlayfs is not available");
    if (fs_set(fs, "source", "fluebox-oci", "root", err) < 0 ||
        fs_set(fs, "lowerdir", lower, "root", err) < 0 ||
        fs_set(fs, "upperdir", upper, "root", err) < 0 ||
        fs_set(fs, "workdir", work, "root", err) < 0 ||
        fs_set(fs, "userxattr", NULL, "root", err) < 0)
        return -1;
    if (fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0) {
        int e = errno;
        char why[200];
        fs_why(fs, why, sizeof why);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "the container's root overlay%s%s (overlayfs in a "
                        "user namespace over idmapped layers needs Linux 5.19, with a tmpfs upper "
                        "layer 6.6: FLUEBOX_OCI_UPPER=disk puts it on a loop device)",
                        why[0] ? ": " : "", why);
    }
    cleanup_close int ovl = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (ovl < 0 || move_mount(ovl, "", AT_FDCWD, root, MOVE_MOUNT_F_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting the container's root");
    return 0;
}

int oci_mount_root(const struct fb_policy *p, const struct oci_child *c, int ctl,
                   int *pty_master, struct fb_err *err)
{
    const struct oci_spec *s = c->spec;
    *pty_master = -1;
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "making mounts private");
    const char *stage = access("/tmp", F_OK) == 0 ? "/tmp" : "/mnt";
    if (mount("tmpfs", stage, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC, "mode=0700,size=64k") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting the staging tmpfs on %s", stage);
    if (overlay(p, c, ctl, stage, err) < 0)
        return -1;
    char root[300];
    snprintf(root, sizeof root, "%s/root", stage);
    if (chdir(root) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "entering the container's root");
    cleanup_close int rootfd = open(".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (rootfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "opening the container's root");
    for (size_t i = 0; i < s->nmounts; i++)
        if (spec_mount(p, c, ctl, rootfd, i, err) < 0)
            return -1;
    if (default_devices(rootfd, c->terminal, err) < 0 || spec_devices(s, rootfd, err) < 0)
        return -1;
    if (sysctls(p, s, rootfd, err) < 0 || allowlist_resolv(p, stage, rootfd, err) < 0)
        return -1;
    /* fluebox's own hardening of every procfs and sysfs the spec mounted. */
    for (size_t i = 0; i < s->nmounts; i++) {
        const struct oci_mount *m = &s->mounts[i];
        if (!strcmp(m->type, "proc") && !m->bind) {
            if (mount_proc_harden(m->dst + 1, -1, err) < 0)
                return -1;
        } else if (!strcmp(m->type, "sysfs") && !m->bind && !strcmp(m->dst, "/sys")) {
            for (size_t k = 0; k < FB_ARRAY_LEN(sys_masks); k++)
                if (mask_path(rootfd, sys_masks[k], err) < 0)
                    return -1;
        }
    }
    for (size_t i = 0; i < s->nmasked; i++)
        if (mask_path(rootfd, s->masked[i], err) < 0)
            return -1;
    for (size_t i = 0; i < s->nreadonly; i++)
        if (readonly_path(rootfd, s->readonly[i], err) < 0)
            return -1;
    if (c->terminal) {
        /* The terminal: a pty of the container's own devpts, its slave
         * bound on /dev/console; the master goes to the console socket. */
        int master = openat(rootfd, "dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        if (master < 0)
            return fb_errno(err, FB_EXIT_SETUP, "process.terminal: opening /dev/pts/ptmx (is "
                            "devpts mounted at /dev/pts?)");
        int unlock = 0, n = -1;
        if (ioctl(master, TIOCSPTLCK, &unlock) < 0 || ioctl(master, TIOCGPTN, &n) < 0) {
            close(master);
            return fb_errno(err, FB_EXIT_SETUP, "process.terminal: unlocking the pty");
        }
        if (s->proc.rows && s->proc.cols) {
            struct winsize ws = {.ws_row = (unsigned short)s->proc.rows,
                                 .ws_col = (unsigned short)s->proc.cols};
            ioctl(master, TIOCSWINSZ, &ws);
        }
        char slave[64];
        snprintf(slave, sizeof slave, "dev/pts/%d", n);
        int sfd = open_tree(rootfd, slave, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
        cleanup_close int con = mount_open_in_root(rootfd, "/dev/console", 2, err);
        if (sfd < 0 || con < 0 || attach_fd(sfd, con, "/dev/console", err) < 0) {
            if (sfd >= 0)
                close(sfd);
            close(master);
            return err->msg[0] ? -1 : fb_errno(err, FB_EXIT_SETUP, "binding /dev/console");
        }
        close(sfd);
        *pty_master = master;
    }
    if (syscall(SYS_pivot_root, ".", ".") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pivot_root");
    if (umount2(".", MNT_DETACH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "detaching the old root");
    if (chdir("/") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "chdir /");
    if (s->rootfs_propagation &&
        mount(NULL, "/", NULL, s->rootfs_propagation, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "linux.rootfsPropagation");
    if (s->root_ro) {
        struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
        if (mount_setattr(AT_FDCWD, "/", 0, &ro, sizeof ro) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "making the root read-only");
    }
    return 0;
}
