/* spawn.h — creating a sandbox: clone3 into new namespaces, the
 * parent/child handshake, and handing the result to whoever supervises it
 * (supervise.c for `run`, sess_sandbox.c for the server). */
#ifndef FB_SPAWN_H
#define FB_SPAWN_H

#include "cgroup.h"
#include "cow.h"
#include "ctl.h"
#include "egress.h"
#include "policy.h"
#include "userns.h"

enum fb_mode {
    FB_MODE_RUN,     /* init runs p->argv and exits with it */
    FB_MODE_SESSION, /* init serves requests on the control socket */
    FB_MODE_EXT,     /* the caller's x->child builds the root and runs init (fluebox oci) */
};

/* For a sandbox whose root and init are someone else's (fluebox oci, see
 * oci.h): how sandbox_spawn_ext() differs from sandbox_spawn(). The child
 * still does everything up to the network (cgroup, ids, hostname, loopback
 * or the allowlist's sockets); then it calls child() instead of building
 * fluebox's own root and running init_main(). */
struct fb_spawn_ext {
    unsigned long clone_flags; /* added to clone3's (CLONE_PARENT: init becomes
                                  the caller's parent's child) */
    bool no_pdeathsig;         /* init outlives the process that created it */
    const char *uid_map;       /* /proc/PID/uid_map and gid_map text, written
                                  instead of the single-id maps of userns.c */
    const char *gid_map;
    struct fb_ids *ids;        /* the host ids the caller decided (userns_host_ids),
                                  moved into the sandbox (its claim is released
                                  with it, or on failure); NULL: one plain id */
    const int *keep_fds;       /* descriptors the child keeps (close_inherited) */
    size_t nkeep;
    struct fb_cgroup *cg;      /* the cgroup to put the sandbox in, made by the
                                  caller (cgroup_create_at); destroyed on failure */
    __attribute__((noreturn)) void (*child)(const struct fb_policy *p, int ctl, void *arg);
    void *arg;
    /* The supervisor's side of messages the child sends before READY that
     * spawn.c does not know (fds: what came with it, to be closed by it).
     * -1 with err ends the spawn. */
    int (*on_msg)(void *arg, int ctl, const struct fb_msg *m, int *fds, size_t nfds,
                  struct fb_err *err);
};

struct fb_sandbox {
    pid_t pid;               /* init, as seen from the supervisor */
    int pidfd;               /* readable when init exits */
    int ctl;                 /* control socket to init */
    struct fb_cgroup *cg;    /* NULL when no cgroup limits are in use */
    struct fb_egress *egress;/* allow-mode network, else NULL */
    int seccomp_fd;          /* seccomp listener (--seccomp-log, learn) or -1 */
    struct fb_cow *cow;      /* --cow: the upper layer and conflict baseline (cow.h) */
    int scratch_fd;          /* the sandbox's scratch tmpfs (its root), or -1: for
                                fstatfs(), and for treecopy.h's walks (fork,
                                snapshots), which follow no link; never a path.
                                Use sandbox_scratch_open (it may be parked) */
    dev_t scratch_dev;       /* the scratch root's device and inode, recorded at */
    ino_t scratch_ino;       /* set-up: what a parked one is checked against */
    bool scratch_parked;     /* sandbox_scratch_park: init holds it */
    int scratch_init_fd;     /* the number of init's descriptor of it (READY), or -1 */
    bool net_in_init;        /* a session's init keeps and watches the network's
                                listening sockets (READY): egress_park may close
                                the supervisor's */
    struct fb_ids ids;
    uint64_t start_ns;
    bool nproc_fallback;     /* pids limit applied as RLIMIT_NPROC */
    struct fb_ll *ll;        /* --isolation landlock: the run's layout (landlock.h) */
};

/* Build a sandbox for p that runs p->argv (FB_MODE_RUN). On success init
 * is running (FB_MSG_READY was received) and sb is filled in. On failure
 * nothing is left behind: no process, no cgroup; err carries the child's
 * own message. */
int sandbox_spawn(const struct fb_policy *p, struct fb_sandbox *sb, struct fb_err *err);

/* A session whose scratch space starts with files of the supervisor's
 * choosing (session.fork): p->seed_scratch is set, and once the child has
 * made its scratch tmpfs and waits, fill() gets a descriptor of it (the
 * tmpfs's root, for openat; not the caller's to close) and the sandbox
 * being built (its ids and cgroup). Nothing of the sandbox's layout exists
 * on it yet: the home, /tmp and the copy-on-write layer are made from
 * whatever fill() put there. -1 from fill() (with err) ends the spawn. */
struct fb_seed {
    int (*fill)(void *arg, int scratch, const struct fb_sandbox *sb, struct fb_err *err);
    void *arg;
};

/* What the caller of a session sandbox (FB_MODE_SESSION: the server,
 * sess_sandbox.c) plugs in, so that nothing in this layer calls up into the
 * server by name:
 *   main         pid 1's loop once init has hardened itself and loaded
 *                seccomp (the server's sess_init.c); required;
 *   clone_guard  called in the parent just before (true) and after (false)
 *                the clone3(). The child is a copy of the calling thread
 *                only: a lock that another thread held at that instant
 *                (malloc's, stdio's) stays locked in it forever, so a
 *                multi-threaded caller holds its other threads still during
 *                the clone. NULL: nothing;
 *   wait         called around the waits for the child's messages while it
 *                builds its root (true before, false after): the calling
 *                thread holds no lock of its own there, so a caller with
 *                several spawning threads lets another one clone meanwhile
 *                (see clone_guard). NULL: nothing;
 *   seed         the scratch's seed (session.fork, above), or NULL;
 *   image_fd     when > 2: a descriptor of a static fluebox binary (opened
 *                by the caller from its own /proc/self/exe). init then
 *                runs its loop in a fresh image of it, exec'd just before
 *                it loads seccomp (FB_SESSION_IMAGE_CMD), instead of in the
 *                copy of the caller's address space the clone gave it: the
 *                caller's pages stop being shared with every session (no
 *                copy-on-write faults in the caller, no page tables of the
 *                caller's whole heap per session, nothing of the caller's
 *                memory left inside). An exec that fails falls back to main.
 *                0: none. */
struct fb_session_hooks {
    __attribute__((noreturn)) void (*main)(const struct fb_policy *p, int ctl);
    void (*clone_guard)(bool before);
    void (*wait)(bool begin);
    const struct fb_seed *seed;
    int image_fd;
};

/* The hidden command a session's init execs in its fresh image:
 * `fluebox __session-init CTL SCRATCH SECCOMP` (the control socket's and
 * the scratch's descriptor numbers, the latter -1 for none; SECCOMP 1 when
 * filters follow on CTL). main() hands it to the session loop before
 * anything else runs. */
#define FB_SESSION_IMAGE_CMD "__session-init"
int sandbox_spawn_session(const struct fb_policy *p, const struct fb_session_hooks *h,
                          struct fb_sandbox *sb, struct fb_err *err);

/* The same for FB_MODE_EXT: x says what differs. sb->pid is not the
 * caller's child when x->clone_flags has CLONE_PARENT (use sb->pidfd). */
int sandbox_spawn_ext(const struct fb_policy *p, const struct fb_spawn_ext *x,
                      struct fb_sandbox *sb, struct fb_err *err);

/* --isolation landlock (landlock_spawn.c): what sandbox_spawn() does for a
 * policy that asks for it, and what sandbox_release() adds: killing what
 * the command left running, removing the run's scratch directory. */
int landlock_spawn(const struct fb_policy *p, enum fb_mode mode, struct fb_sandbox *sb,
                   struct fb_err *err);
void landlock_release(struct fb_sandbox *sb);

/* Kill the sandbox (SIGKILL to init empties its pid namespace). */
void sandbox_kill(struct fb_sandbox *sb);

/* A new descriptor of the sandbox's scratch space (the caller closes it),
 * or -1. */
int sandbox_scratch_open(const struct fb_sandbox *sb);
/* A session sandbox (not --cow) whose supervisor holds many: close the
 * supervisor's descriptor of the scratch space; sandbox_scratch_open then
 * takes init's own (pidfd_getfd), checked against the directory recorded at
 * set-up. Nothing happens where that cannot be done. */
void sandbox_scratch_park(struct fb_sandbox *sb);
/* In a session's init: the descriptor of its scratch space it keeps for
 * sandbox_scratch_park (its loop must not close it), or -1. */
int sandbox_session_scratch(void);
/* In a session's init: the network's listening sockets it keeps (the
 * resolver's, the proxy's, the allowed ports'), and how many. */
size_t sandbox_session_netfds(const int **fds);
/* The longest list of them the fresh image's argv carries ("12,13,..."). */
#define FB_NETFDS_ARG_MAX (11 * FB_CTL_MAX_FDS + 2)
/* A session's READY: status bits, what init keeps; arg, the number of its
 * scratch descriptor. */
#define FB_READY_SCRATCH 1
#define FB_READY_NET 2

/* Bytes used in the sandbox's scratch space (--disk) now; -1 if unknown. */
int64_t sandbox_disk_used(const struct fb_sandbox *sb);

/* Wait for init to end and reap it (blocks). A namespaced sandbox has then
 * nothing left running: the kernel empties a pid namespace before its init
 * can be reaped. */
void sandbox_reap(struct fb_sandbox *sb);

/* Reap init if needed, close fds, remove the cgroup, free egress. */
void sandbox_release(struct fb_sandbox *sb);

#endif
