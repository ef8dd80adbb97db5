/* dos_inotify: take every inotify instance the kernel lets us have, so that
 * another sandbox, or the host user, cannot create one (inotify_init1 fails
 * with EMFILE). Instances are counted per user namespace level: the
 * sandbox's own namespace, then its owner's at the host level — before
 * fluebox gave each sandbox its own host ids and namespace owner, every
 * sandbox started as root counted against host root's 128. The holder
 * stops at inotify_cap= instances (default 1024). Needs a partner: run.sh
 * drives it through `fbhost pair` (dos.h). */
#include "dos.h"
#include <sys/inotify.h>

static void probe_attempt(struct probe_res *r)
{
    if (dos_is_holder()) {
        long cap = parg_long("inotify_cap", 1024);
        long n = 0;
        int e = 0;
        while (n < cap) {
            if (inotify_init1(IN_CLOEXEC) < 0) {
                e = errno;
                break;
            }
            n++;
        }
        dos_hold(r, "%ld inotify instances (then %s)", n, e ? ename(e) : "the cap");
        return;
    }
    int fd = inotify_init1(IN_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        res_note(r, "the victim got an inotify instance");
    } else if (errno == EMFILE || errno == ENFILE || errno == ENOSPC) {
        res_escape(r, "the victim cannot create an inotify instance: %s", ename(errno));
    } else {
        res_note(r, "victim: inotify_init1: %s", ename(errno));
    }
}

PROBE_MAIN("dos_inotify")
