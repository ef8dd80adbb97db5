/* oci_upper.c — where a container's writes to its root go.
 *
 * The root is an overlay made inside the container's user namespace
 * (oci_mount.c), and such an overlay keeps its markers in user.* extended
 * attributes of the upper layer ("userxattr"). From Linux 6.6 a tmpfs of
 * run.fluebox.disk size has them, and the child makes that tmpfs itself.
 * Before 6.6 (Debian 12's 6.1) tmpfs has no user xattrs, so the upper layer
 * needs a filesystem on disk that has them, and it must still be bounded by
 * the container's disk budget and go with the container. That is an ext4
 * filesystem of exactly run.fluebox.disk bytes, made here by the supervisor
 * (as host root) for this container alone:
 *
 *   an unnamed file (O_TMPFILE) in /var/lib/fluebox-oci, sparse, of the
 *   budget's size  ->  a loop device with LO_FLAGS_AUTOCLEAR  ->  mke2fs
 *   (no journal, no reserved blocks, its root owned by the container's root
 *   host ids)  ->  mounted detached (fsmount, nosuid, nodev), never attached
 *   anywhere on the host; the child moves it under its staging directory.
 *
 * Filling it gives ENOSPC, as the tmpfs does. Nothing of it has a name on
 * the host: when the container's mount namespace goes (the container ended,
 * was deleted, or its supervisor was SIGKILLed and init killed it), the
 * last reference to the filesystem goes, the loop device clears itself and
 * the kernel frees the unnamed file. There is nothing to remove, whatever
 * was killed when. (On a filesystem without O_TMPFILE the file is named
 * for an instant, and a later create sweeps what a kill left in it.)
 *
 * FLUEBOX_OCI_UPPER=disk or =tmpfs overrides the choice by kernel version
 * (the tests use it to run this path on newer kernels). */
#include "oci.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/loop.h>
#include <linux/mount.h>
#include <spawn.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>

#define UPPER_DIR "/var/lib/fluebox-oci"

bool oci_upper_on_disk(void)
{
    const char *e = getenv("FLUEBOX_OCI_UPPER");
    if (e && !strcmp(e, "disk"))
        return true;
    if (e && !strcmp(e, "tmpfs"))
        return false;
    struct utsname u;
    int maj = 0, min = 0;
    if (uname(&u) < 0 || sscanf(u.release, "%d.%d", &maj, &min) != 2)
        return false;
    return maj < 6 || (maj == 6 && min < 6);
}

/* Where O_TMPFILE is not supported (overlayfs before 6.6, NFS), a named
 * file unlinked at once. A name can only outlive that instant if the
 * process is killed in it: every "upper.*" found later is such a leftover
 * (or another create's in that same instant, whose unlink then finds it
 * gone, which is harmless), and is removed. */
static void sweep(int dir)
{
    int fd = dup(dir);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d)))
        if (!strncmp(e->d_name, "upper.", 6))
            unlinkat(dir, e->d_name, 0);
    closedir(d);
}

static int named_then_unlinked(void)
{
    char path[] = UPPER_DIR "/upper.XXXXXX";
    int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0)
        return -1;
    if (unlink(path) < 0 && errno != ENOENT) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

/* The unnamed backing file of size bytes (all the free space there when the
 * budget is unlimited). */
static int backing_file(int64_t size, struct fb_err *err)
{
    if (mkdir(UPPER_DIR, 0700) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "creating %s", UPPER_DIR);
    int fd = open(UPPER_DIR, O_TMPFILE | O_RDWR | O_CLOEXEC, 0600);
    if (fd < 0 && (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL)) {
        cleanup_close int dir = open(UPPER_DIR, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (dir >= 0)
            sweep(dir);
        fd = named_then_unlinked();
    }
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "an unnamed file in %s for the container's upper "
                        "layer", UPPER_DIR);
    if (size <= 0) {
        struct statvfs sv;
        size = fstatvfs(fd, &sv) == 0 ? (int64_t)(sv.f_bavail * sv.f_frsize) : 0;
    }
    if (size <= 0 || ftruncate(fd, size) < 0) {
        if (size > 0)
            fb_errno(err, FB_EXIT_SETUP, "sizing the upper layer's file in %s", UPPER_DIR);
        else
            fb_errf(err, FB_EXIT_SETUP, "no free space in %s", UPPER_DIR);
        close(fd);
        return -1;
    }
    return fd;
}

/* A free loop device bound to file, clearing itself at its last close.
 * Returns its fd; *num its number. */
static int loop_attach(int file, int *num, struct fb_err *err)
{
    cleanup_close int ctl = open("/dev/loop-control", O_RDWR | O_CLOEXEC);
    if (ctl < 0)
        return fb_errno(err, FB_EXIT_SETUP, "/dev/loop-control (the upper layer on disk needs "
                        "a loop device)");
    /* Another process may take the free device between the two calls. */
    for (int tries = 0; tries < 16; tries++) {
        int n = ioctl(ctl, LOOP_CTL_GET_FREE);
        if (n < 0)
            return fb_errno(err, FB_EXIT_SETUP, "finding a free loop device");
        char path[32];
        snprintf(path, sizeof path, "/dev/loop%d", n);
        int fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", path);
        struct loop_config cfg;
        memset(&cfg, 0, sizeof cfg);
        cfg.fd = (uint32_t)file;
        cfg.info.lo_flags = LO_FLAGS_AUTOCLEAR;
        snprintf((char *)cfg.info.lo_file_name, sizeof cfg.info.lo_file_name, "fluebox-oci");
        if (ioctl(fd, LOOP_CONFIGURE, &cfg) == 0) {
            *num = n;
            return fd;
        }
        int e = errno;
        close(fd);
        if (e != EBUSY) {
            errno = e;
            return fb_errno(err, FB_EXIT_SETUP, "%s: LOOP_CONFIGURE", path);
        }
    }
    return fb_errf(err, FB_EXIT_SETUP, "no free loop device (every one was taken meanwhile)");
}

static const char *const mkfs_paths[] = {"/usr/sbin/mke2fs", "/sbin/mke2fs"};

/* mke2fs on the device: ext4 without a journal (the file is gone with the
 * container: nothing to recover), no blocks reserved for host root, the
 * root directory owned by the container's root. Its first line of output
 * goes into err when it fails. */
static int make_fs(const char *dev, uid_t uid, gid_t gid, struct fb_err *err)
{
    const char *tool = NULL;
    for (size_t i = 0; i < FB_ARRAY_LEN(mkfs_paths) && !tool; i++)
        if (access(mkfs_paths[i], X_OK) == 0)
            tool = mkfs_paths[i];
    if (!tool)
        return fb_errf(err, FB_EXIT_SETUP, "mke2fs not found (e2fsprogs): the upper layer on "
                       "disk is an ext4 filesystem");
    char ext[96];
    snprintf(ext, sizeof ext, "root_owner=%u:%u,nodiscard,lazy_itable_init=1", (unsigned)uid,
             (unsigned)gid);
    char *argv[] = {(char *)tool, "-q", "-F", "-t", "ext4", "-m", "0", "-O", "^has_journal",
                    "-E", ext, "-L", "fluebox-oci", (char *)dev, NULL};
    char *envp[] = {"PATH=/usr/sbin:/usr/bin:/sbin:/bin", NULL};
    int pf[2];
    if (pipe2(pf, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, pf[1], 1);
    posix_spawn_file_actions_adddup2(&fa, pf[1], 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, tool, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    close(pf[1]);
    char out[300];
    ssize_t n = rc ? 0 : fb_read_full(pf[0], out, sizeof out - 1);
    close(pf[0]);
    if (rc) {
        errno = rc;
        return fb_errno(err, FB_EXIT_SETUP, "starting %s", tool);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return fb_errno(err, FB_EXIT_SETUP, "waiting for %s", tool);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    out[n > 0 ? n : 0] = 0;
    out[strcspn(out, "\n")] = 0;
    return fb_errf(err, FB_EXIT_SETUP, "%s %s: %s", tool, dev, *out ? out : "failed");
}

int oci_upper_disk(int64_t size, uid_t uid, gid_t gid, struct fb_err *err)
{
    cleanup_close int file = backing_file(size, err);
    if (file < 0)
        return -1;
    int num = -1;
    cleanup_close int loop = loop_attach(file, &num, err);
    if (loop < 0)
        return -1;
    char dev[32];
    snprintf(dev, sizeof dev, "/dev/loop%d", num);
    if (make_fs(dev, uid, gid, err) < 0)
        return -1;
    cleanup_close int fs = fsopen("ext4", FSOPEN_CLOEXEC);
    if (fs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "ext4 is not available for the upper layer");
    /* noinit_itable: the inode tables of a fresh sparse file read as zeros
     * already; zeroing them would only fill the file. */
    if (fsconfig(fs, FSCONFIG_SET_STRING, "source", dev, 0) < 0 ||
        fsconfig(fs, FSCONFIG_SET_FLAG, "noinit_itable", NULL, 0) < 0 ||
        fsconfig(fs, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting the upper layer's ext4 (%s)", dev);
    int mnt = fsmount(fs, FSMOUNT_CLOEXEC, MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV);
    if (mnt < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting the upper layer's ext4 (%s)", dev);
    /* The filesystem holds the device now, the device the file: closing
     * ours leaves the mount as the only owner of all three. */
    return mnt;
}
