/* userns.c — user namespace maps and idmapped mounts.
 *
 * The sandbox's user namespace maps exactly one uid and one gid: the inside
 * ids (default 1000, or 0 with --uid 0) to
 *   - the caller's own uid/gid when fluebox runs unprivileged, or
 *   - an unprivileged host id (p->host_id) when fluebox runs as root.
 * Host root is never mapped. That matters: a process whose kernel uid is 0
 * passes the owner check on root-owned files even from inside a user
 * namespace, which is how a sandbox that maps host root leaves
 * /proc/sys/kernel/core_pattern writable. With root unmapped, everything
 * owned by host root is "nobody" inside and writable only through "other"
 * permission bits.
 *
 * The price is that a root-owned workspace would be read-only for the
 * sandbox. An idmapped mount (mount_setattr(MOUNT_ATTR_IDMAP)) fixes that
 * without touching the files: on that mount, files owned by the workspace's
 * owner appear owned by the sandbox's host id, and files the sandbox
 * creates are stored with the owner's ids. */
#include "userns.h"

#include <fcntl.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/syscall.h>
#include <sys/wait.h>

void userns_host_ids(const struct fb_policy *p, struct fb_ids *ids)
{
    ids->root = geteuid() == 0;
    if (ids->root) {
        ids->host_uid = p->host_id;
        ids->host_gid = (gid_t)p->host_id;
    } else {
        ids->host_uid = geteuid();
        ids->host_gid = getegid();
    }
}

static int write_map(pid_t pid, const char *file, unsigned inside, unsigned outside,
                     struct fb_err *err)
{
    char path[64], line[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    snprintf(line, sizeof line, "%u %u 1\n", inside, outside);
    if (fb_write_file(path, line) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing %s \"%u %u 1\"", file, inside, outside);
    return 0;
}

int userns_write_maps(pid_t pid, const struct fb_policy *p, const struct fb_ids *ids,
                      struct fb_err *err)
{
    /* Unprivileged: setgroups must be denied before gid_map can be written.
     * As root we keep setgroups so the child can drop root's supplementary
     * groups (it calls setgroups(0, NULL)). */
    if (!ids->root) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
        if (fb_write_file(path, "deny") < 0 && errno != ENOENT)
            return fb_errno(err, FB_EXIT_SETUP, "writing %s", path);
    }
    if (write_map(pid, "uid_map", p->uid, ids->host_uid, err) < 0 ||
        write_map(pid, "gid_map", p->gid, ids->host_gid, err) < 0)
        return -1;
    return 0;
}

/* Made by a short-lived child that unshares and waits; we write its maps,
 * open its namespace, and let it go. */
int userns_map_fd(const char *uid_map, const char *gid_map, struct fb_err *err)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "creating the idmap user namespace");
    }
    if (pid == 0) {
        char c;
        close(pipefd[1]);
        while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(pipefd[0]);
    int fd = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if (fb_write_file(path, uid_map) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "idmap uid_map");
        goto out;
    }
    snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
    if (fb_write_file(path, gid_map) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "idmap gid_map");
        goto out;
    }
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fb_errno(err, FB_EXIT_SETUP, "opening %s", path);
out:
    close(pipefd[1]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return fd;
}

int userns_idmapped_tree(const char *src, uid_t from_uid, gid_t from_gid,
                         const struct fb_ids *ids, bool ro, struct fb_err *err)
{
    char um[64], gm[64];
    snprintf(um, sizeof um, "%u %u 1\n", from_uid, ids->host_uid);
    snprintf(gm, sizeof gm, "%u %u 1\n", from_gid, ids->host_gid);
    cleanup_close int ns = userns_map_fd(um, gm, err);
    if (ns < 0)
        return -1;
    cleanup_close int tree = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
    if (tree < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: open_tree", src);
    struct mount_attr attr = {
        .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                    (ro ? MOUNT_ATTR_RDONLY : 0),
        .userns_fd = (uint64_t)ns,
    };
    if (mount_setattr(tree, "", AT_EMPTY_PATH, &attr, sizeof attr) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: this filesystem cannot do idmapped mounts", src);
    return fb_steal_fd(tree);
}
