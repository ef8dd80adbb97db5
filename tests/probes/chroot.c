/* chroot: change our root directory (only this throw-away child's). With
 * CAP_SYS_CHROOT a process can chroot into a subdirectory and use a still-open
 * directory fd above it to walk out; being able to chroot at all is the
 * privilege this probe looks for. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    if (chroot(".") == 0)
        res_escape(r, "chroot(\".\") worked");
    else
        res_note(r, "chroot: %s", ename(errno));
}

PROBE_MAIN("chroot")
