/* spawn.h — creating a sandbox: clone3 into new namespaces, the
 * parent/child handshake, and handing the result to whoever supervises it
 * (supervise.c for `run`, session.c for the server). */
#ifndef FB_SPAWN_H
#define FB_SPAWN_H

#include "cgroup.h"
#include "cow.h"
#include "egress.h"
#include "policy.h"
#include "userns.h"

enum fb_mode {
    FB_MODE_RUN,     /* init runs p->argv and exits with it */
    FB_MODE_SESSION, /* init serves requests on the control socket */
};

struct fb_sandbox {
    pid_t pid;               /* init, as seen from the supervisor */
    int pidfd;               /* readable when init exits */
    int ctl;                 /* control socket to init */
    struct fb_cgroup *cg;    /* NULL when no cgroup limits are in use */
    struct fb_egress *egress;/* allow-mode network, else NULL */
    int seccomp_fd;          /* seccomp listener (--seccomp-log, learn) or -1 */
    struct fb_cow *cow;      /* --cow: the upper layer and conflict baseline (cow.h) */
    struct fb_ids ids;
    uint64_t start_ns;
    bool nproc_fallback;     /* pids limit applied as RLIMIT_NPROC */
};

/* Build a sandbox for p. On success init is running (FB_MSG_READY was
 * received) and sb is filled in. On failure nothing is left behind: no
 * process, no cgroup; err carries the child's own message. */
int sandbox_spawn(const struct fb_policy *p, enum fb_mode mode, struct fb_sandbox *sb,
                  struct fb_err *err);

/* Called just before (true) and after (false) the clone3() in sandbox_spawn,
 * in the parent. The child is a copy of the calling thread only: a lock
 * that another thread held at that instant (malloc's, stdio's) stays locked
 * in it forever. A multi-threaded caller (the server, session.c) uses this
 * to hold its other threads still during the clone. NULL: nothing. */
extern void (*sandbox_clone_guard)(bool before);

/* Kill the sandbox (SIGKILL to init empties its pid namespace). */
void sandbox_kill(struct fb_sandbox *sb);

/* Reap init if needed, close fds, remove the cgroup, free egress. */
void sandbox_release(struct fb_sandbox *sb);

#endif
