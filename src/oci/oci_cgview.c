/* oci_cgview.c — what a container sees at /sys/fs/cgroup: its own cgroup,
 * read-only.
 *
 * Docker and CRI put a "cgroup" mount at /sys/fs/cgroup in every spec, and
 * what runs inside sizes itself from it (a JVM's heap, Node's, Go's
 * GOMAXPROCS from the CPU quota). The container has its own cgroup
 * namespace rooted at its cgroup (spawn.c unshares it once init is in the
 * cgroup), so a cgroup filesystem mounted from inside shows that cgroup as
 * its root and nothing above it: with cgroup v2 the cgroup2 filesystem,
 * with v1 a small tmpfs holding one mount per hierarchy (named as the
 * controllers, "cpu,cpuacct" with a link per controller, as runc lays it
 * out). Every mount is read-only, nosuid, nodev and noexec: the container
 * reads its limits and counters and changes nothing (its limits are the
 * runtime's, `update`). Without a cgroup namespace of its own (the spec
 * joins one by path) the mount would show the host's hierarchy: then, and
 * when the kernel refuses the mount, the view is an empty read-only tmpfs
 * as before. A v1 hierarchy the kernel will not mount, or one whose view
 * would be the host's root cgroup (the container is not in a cgroup of its
 * own there), stays an empty directory. */
#include "oci.h"

#include "mount.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC)

/* A new detached mount of type with the comma-separated options (key=value
 * or flags) and name= (v1's named hierarchies), or -1 with errno. */
static int fs_mount(const char *type, const char *opts, const char *name, uint64_t attrs)
{
    int fs = fsopen(type, FSOPEN_CLOEXEC);
    if (fs < 0)
        return -1;
    cleanup_free char *copy = fb_xstrdup(opts ? opts : "");
    char *save = NULL;
    int rc = 0;
    for (char *o = strtok_r(copy, ",", &save); o && rc == 0; o = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(o, '=');
        if (eq) {
            *eq = 0;
            rc = fsconfig(fs, FSCONFIG_SET_STRING, o, eq + 1, 0);
        } else {
            rc = fsconfig(fs, FSCONFIG_SET_FLAG, o, NULL, 0);
        }
    }
    if (rc == 0 && name)
        rc = fsconfig(fs, FSCONFIG_SET_STRING, "name", name, 0);
    if (rc == 0)
        rc = fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0);
    int m = rc == 0 ? fsmount(fs, FSMOUNT_CLOEXEC, attrs) : -1;
    int e = errno;
    close(fs);
    errno = e;
    return m;
}

static int attach(int mfd, int target, const char *what, struct fb_err *err)
{
    if (move_mount(mfd, "", target, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting %s", what);
    return 0;
}

int oci_empty_ro(const char *what, struct fb_err *err)
{
    int m = fs_mount("tmpfs", "size=4k,nr_inodes=16,mode=0555", NULL, RO_ATTRS);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: an empty tmpfs", what);
    return m;
}

int oci_sysfs_stub(const char *what, struct fb_err *err)
{
    int m = fs_mount("tmpfs", "size=4k,nr_inodes=16,mode=0555", NULL,
                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (m < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: a tmpfs for /sys", what);
    struct mount_attr a = {.attr_set = MOUNT_ATTR_RDONLY};
    if ((mkdirat(m, "fs", 0555) < 0 && errno != EEXIST) ||
        (mkdirat(m, "fs/cgroup", 0555) < 0 && errno != EEXIST) ||
        mount_setattr(m, "", AT_EMPTY_PATH, &a, sizeof a) < 0) {
        int e = errno;
        close(m);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "%s: a tmpfs for /sys", what);
    }
    return m;
}

/* One v1 hierarchy (its controllers, or name=NAME) at dir/NAME, and a link
 * per controller when there are several. A refusal leaves the directory. */
static void v1_hierarchy(int dir, const char *ctrls)
{
    bool named = !strncmp(ctrls, "name=", 5);
    const char *dname = named ? ctrls + 5 : ctrls;
    if (!*dname || strchr(dname, '/') || dname[0] == '.')
        return;
    if (mkdirat(dir, dname, 0555) < 0 && errno != EEXIST)
        return;
    int m = named ? fs_mount("cgroup", "none", dname, RO_ATTRS)
                  : fs_mount("cgroup", ctrls, NULL, RO_ATTRS);
    if (m < 0)
        return;
    /* A hierarchy the container's cgroup is not in (still at the host's
     * root when its namespace was made) would show the host's whole tree:
     * the root-only file release_agent says so, and it stays empty. */
    struct stat st;
    if (fstatat(m, "release_agent", &st, AT_SYMLINK_NOFOLLOW) == 0 || errno != ENOENT) {
        close(m);
        return;
    }
    int t = openat(dir, dname, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (t >= 0) {
        move_mount(m, "", t, "", MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH);
        close(t);
    }
    close(m);
    if (named || !strchr(ctrls, ','))
        return;
    cleanup_free char *copy = fb_xstrdup(ctrls);
    char *save = NULL;
    for (char *c = strtok_r(copy, ",", &save); c; c = strtok_r(NULL, ",", &save))
        if (*c != '.' && !strchr(c, '/'))
            symlinkat(dname, dir, c);
}

/* The hierarchies of v1 (and "0::" alone for v2) from /proc/self/cgroup. */
static int v1_view(int rootfd, const char *dst, const char *lines, struct fb_err *err)
{
    cleanup_close int tmp = fs_mount("tmpfs", "mode=0755,size=64k,nr_inodes=256", NULL,
                                     MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC);
    if (tmp < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: a tmpfs for the cgroup hierarchies", dst);
    {
        cleanup_close int t = mount_open_in_root(rootfd, dst, 1, err);
        if (t < 0 || attach(tmp, t, dst, err) < 0)
            return -1;
    }
    cleanup_close int top = mount_open_in_root(rootfd, dst, 1, err);
    if (top < 0)
        return -1;
    cleanup_close int dir = openat(top, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dir < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", dst);
    cleanup_free char *copy = fb_xstrdup(lines);
    char *save = NULL;
    for (char *l = strtok_r(copy, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        char *a = strchr(l, ':');
        char *b = a ? strchr(a + 1, ':') : NULL;
        if (!b || b == a + 1)
            continue; /* "0::path", the v2 part of a hybrid */
        *b = 0;
        v1_hierarchy(dir, a + 1);
    }
    struct mount_attr ra = {.attr_set = MOUNT_ATTR_RDONLY};
    if (mount_setattr(dir, "", AT_EMPTY_PATH, &ra, sizeof ra) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: read-only", dst);
    return 0;
}

int oci_cgroup_view(int rootfd, const char *dst, bool own_ns, struct fb_err *err)
{
    char lines[4096] = "";
    ssize_t n = own_ns ? fb_read_file("/proc/self/cgroup", lines, sizeof lines) : -1;
    bool v1 = false;
    if (n > 0) {
        lines[n < (ssize_t)sizeof lines ? n : (ssize_t)sizeof lines - 1] = 0;
        for (char *l = lines; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
            char *a = strchr(l, ':');
            if (a && a[1] != ':')
                v1 = true;
        }
    }
    if (n > 0 && v1)
        return v1_view(rootfd, dst, lines, err);
    cleanup_close int m = n > 0 ? fs_mount("cgroup2", NULL, NULL, RO_ATTRS) : -1;
    if (m < 0)
        m = oci_empty_ro(dst, err);
    if (m < 0)
        return -1;
    cleanup_close int t = mount_open_in_root(rootfd, dst, 1, err);
    if (t < 0)
        return -1;
    return attach(m, t, dst, err);
}
