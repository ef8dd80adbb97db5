/* umount: unmounting is how a sandbox would uncover what lies under its
 * mounts. The probe unmounts a directory that is not a mount point: the kernel
 * checks the privilege first, so EINVAL means "allowed, wrong argument"
 * (escape) while EPERM or ENOSYS means blocked. Nothing is unmounted either way. */
#include "probe.h"
#include <sys/mount.h>

static void probe_attempt(struct probe_res *r)
{
    char dir[64];
    snprintf(dir, sizeof(dir), "notmnt-by-probe-%d", (int)getpid());
    if (mkdir(dir, 0700) < 0 && errno != EEXIST) {
        res_error(r, "mkdir %s: %s", dir, ename(errno));
        return;
    }
    if (umount2(dir, 0) == 0)
        res_escape(r, "umount2 succeeded on a plain directory");
    else if (errno == EINVAL)
        res_escape(r, "umount2 reached the mount-point check (EINVAL): privileged");
    else
        res_note(r, "umount2: %s", ename(errno));
    rmdir(dir);
}

PROBE_MAIN("umount")
