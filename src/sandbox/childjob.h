/* childjob.h — running a piece of work in a short-lived child process:
 * inside a sandbox's cgroup, so that what it allocates (the tmpfs pages of
 * a copy into the sandbox's scratch space) is charged to the sandbox and
 * bounded by its limits, not by the server's; and so that a thread of the
 * server never changes its own credentials or cgroup. */
#ifndef FB_CHILDJOB_H
#define FB_CHILDJOB_H

#include "cgroup.h"

/* A child process in cg (NULL: where the caller is) runs fn(arg, err) and
 * exits; its error message comes back in err. Returns fn's 0 / -1, or -1
 * when the child could not run or died (err says so). The child is a raw
 * clone of the calling thread (not glibc's fork(), which cannot clone into
 * a cgroup): in a multi-threaded caller a lock another thread held at that
 * moment (malloc's, stdio's) stays held in it, so fn must not allocate
 * memory or use stdio (treecopy.h's functions do neither). */
int childjob_run(const struct fb_cgroup *cg, int (*fn)(void *arg, struct fb_err *err), void *arg,
                 struct fb_err *err);

/* In a child process running as root: create files as uid/gid (a
 * sandbox's user: its tmpfs belongs to its user namespace, where host root
 * is not mapped, EOVERFLOW), keeping the capabilities that read any file
 * (treecopy.h's walks never follow a link). */
int childjob_write_as(uid_t uid, gid_t gid, struct fb_err *err);

#endif
