/* mount: mount a filesystem, with mount(2) and with the new mount API
 * (fsopen, open_tree). Everything happens on a directory inside the
 * workspace and is unmounted at once, so a run without a sandbox changes
 * nothing lasting. */
#include "probe.h"
#include <sys/mount.h>

#ifndef OPEN_TREE_CLONE
#define OPEN_TREE_CLONE 1
#endif

static void probe_attempt(struct probe_res *r)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "mnt-by-probe-%d", (int)getpid());
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        res_error(r, "mkdir %s: %s", dir, ename(errno));
        return;
    }
    if (mount("fbprobe", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k") == 0) {
        umount2(dir, MNT_DETACH);
        res_escape(r, "mounted a tmpfs");
    } else {
        res_note(r, "mount tmpfs: %s", ename(errno));
    }
    if (mount("/", dir, NULL, MS_BIND | MS_REC, NULL) == 0) {
        umount2(dir, MNT_DETACH);
        res_escape(r, "bind-mounted /");
    } else {
        res_note(r, "bind /: %s", ename(errno));
    }
    rmdir(dir);

    int fs = (int)syscall(SYS_fsopen, "tmpfs", 0);
    if (fs >= 0) {
        close(fs);
        res_escape(r, "fsopen(tmpfs) worked");
    } else {
        res_note(r, "fsopen: %s", ename(errno));
    }
    int t = (int)syscall(SYS_open_tree, AT_FDCWD, "/", OPEN_TREE_CLONE);
    if (t >= 0) {
        close(t);
        res_escape(r, "open_tree(/, CLONE) worked");
    } else {
        res_note(r, "open_tree: %s", ename(errno));
    }
}

PROBE_MAIN("mount")
