/* cow.h — copy-on-write workspaces (--cow, session "cow": true).
 *
 * The sandbox sees /workspace as an overlay: the host workspace is the
 * read-only lower layer, every write lands in an upper layer on a tmpfs of
 * --disk size (or in the caller's --cow-upper DIR). The child builds the
 * overlay in its own user and mount namespaces and hands the supervisor a
 * directory fd of the upper storage over the control socket (FB_MSG_COW);
 * that fd keeps the tmpfs alive after the sandbox is gone, and the
 * supervisor reads it with openat() relative to it. changes.c turns the
 * upper layer into a list of changes, commit.c applies them to the host.
 *
 * Who calls what:
 *   supervisor: cow_begin (before the clone), cow_premounts (root: idmapped
 *               lower, sandbox/cow_mount.c), cow_attach (FB_MSG_COW), then
 *               cow_run_finish (run/run_cow.c) or the workspace.* session
 *               methods (server/ws_cow.c).
 *   child:      cow_mount_child (sandbox/cow_mount.c, called by mount.c
 *               after the ids are mapped).
 */
#ifndef FB_COW_H
#define FB_COW_H

#include "policy.h"
#include "userns.h"

#include <jansson.h>
#include <sys/stat.h>
#include <time.h>

struct fb_premounts;

/* A long workspace operation (scan, render, commit) whose caller wants to
 * follow or stop it (the server runs them on a worker thread): step() is
 * called from the thread doing the work before each item, with the phase
 * ("scan", "diff", "commit"), the items done so far and the items there are
 * (0 while not known). Returning false cancels: the operation stops there,
 * between two files, never inside one, and fails saying "cancelled". */
struct fb_cow_progress {
    bool (*step)(void *arg, const char *phase, size_t done, size_t total);
    void *arg;
};

/* fb_err.code of an operation cancelled through its progress hook (not an
 * exit code). */
#define FB_ERR_CANCELLED 1000

static inline bool cow_step(const struct fb_cow_progress *p, const char *phase, size_t done,
                            size_t total)
{
    return !p || !p->step || p->step(p->arg, phase, done, total);
}

/* A path committed by this session: the host inode and ctime it had right
 * after fluebox wrote it, so a later commit does not take fluebox's own
 * write for a change made on the host. */
struct fb_cow_base {
    char *path;
    dev_t dev;
    ino_t ino;
    struct timespec ctime;
};

/* An upper-layer directory opened up for reading (changes.c). */
struct fb_cow_fix {
    int dirfd;
    char *name;
    mode_t mode;
};

struct fb_cow {
    char *workspace;         /* host path, for messages */
    int host;                /* O_PATH directory fd of the host workspace */
    int store;               /* upper storage root (holds upper/ and work/), or -1 */
    int upper;               /* upper/ directory fd, or -1 until attached */
    int userns, mntns;       /* the sandbox's namespaces (reset), or -1 */
    bool persistent;         /* --cow-upper: the caller's directory */
    bool staged;             /* --cow-upper with --disk: the layer lives in the
                                scratch tmpfs while the sandbox runs (sized by
                                the kernel) and is copied back into the
                                caller's directory after (cow_persist) */
    uid_t sandbox_uid;       /* the sandbox user's host ids (its files in a staged layer) */
    gid_t sandbox_gid;
    uid_t dir_uid;           /* the owner of --cow-upper DIR (its files in DIR) */
    gid_t dir_gid;
    bool start_pending;      /* --cow-upper: its start file is written once the layer is made */
    char *upper_dir;         /* --cow-upper DIR (host path), or NULL */
    bool root;               /* fluebox runs as root */
    bool readonly;           /* the profile makes the workspace read-only: no commit */
    uid_t owner_uid;         /* owner of the host workspace: commit writes as it */
    gid_t owner_gid;
    uid_t inside_uid;        /* the sandbox's ids (reset remounts as them) */
    gid_t inside_gid;
    int64_t disk;            /* upper tmpfs size, bytes; <= 0 unlimited */
    bool over_disk;          /* a --cow-upper layer was found at --disk */
    struct timespec start;   /* host files changed at or after this conflict */
    struct fb_cow_base *base; /* paths committed by this session (commit.c) */
    size_t nbase;
    size_t *bidx, bcap;       /* their hash index (cow.c) */
    struct fb_cow_fix *fix;
    size_t nfix;
    /* A session's (set by spawn.c, borrowed from the sandbox): */
    int scratch;             /* the scratch tmpfs, where snapshots live, or -1 */
    const struct fb_cgroup *cg; /* the sandbox's cgroup: copies are charged there */
};

/* Supervisor, before the clone: open the host workspace and take the start
 * time that conflict detection compares against. */
int cow_begin(const struct fb_policy *p, const struct fb_ids *ids, struct fb_cow **out,
              struct fb_err *err);

/* Empty the upper layer in place (a layer no longer mounted, or the
 * caller's --cow-upper directory): a fresh layer whose history starts now. */
int cow_empty_in_place(struct fb_cow *c, struct fb_err *err);
/* Take newfd, a new upper storage directory (holding upper/), in place of
 * the old one: fresh (a reset: nothing committed from it yet, its history
 * starts now) or a restored snapshot (the same history as before). */
int cow_adopt_layer(struct fb_cow *c, int newfd, bool fresh, struct fb_err *err);

/* Supervisor: take the fds of FB_MSG_COW (always consumed). */
int cow_attach(struct fb_cow *c, int *fds, size_t nfds, struct fb_err *err);

void cow_free(struct fb_cow *c);

/* session.snapshot / session.restore of a copy-on-write session
 * (sess_snapshot.c; reached through cow_session_call) and the names of its
 * snapshots for session.info (NULL: none, or not a cow session). */
struct proto_err;
json_t *cow_snapshot(struct fb_cow *c, json_t *params, struct proto_err *e);
json_t *cow_snapshot_restore(struct fb_cow *c, json_t *params, struct proto_err *e);
json_t *cow_snapshots_json(const struct fb_cow *c);

/* --cow-upper DIR with --disk: put the staged layer (c->staged) back into
 * DIR, in place of DIR/upper, once the sandbox is gone: copied to a new
 * directory there, then exchanged with the old one (a crash leaves DIR/upper
 * old or new, never mixed). Refused, keeping DIR/upper as it was, when the
 * copy would take more than --disk and its slack there (hard links are
 * copied as separate files, a directory takes a block, which tmpfs does not
 * count). 0 also when there is nothing to do. */
int cow_persist(struct fb_cow *c, struct fb_err *err);
#define COW_PERSIST_SLACK_DIV 8 /* the slack: --disk / 8 */

/* Has the upper layer run out of space or inodes? (A --cow-upper layer:
 * has it reached --disk?) */
bool cow_upper_full(const struct fb_cow *c);

/* --disk on a --cow-upper layer kept in DIR (not staged: Linux before 6.6),
 * which no file system limit enforces: the bytes the layer's directory
 * takes (counting stops past limit, -1 = no limit), and whether it has
 * reached --disk (remembered once true). For a tmpfs layer, staged or not,
 * cow_upper_over() is always false: the kernel enforces it. */
int64_t cow_upper_usage(const struct fb_cow *c, int64_t limit);
bool cow_upper_over(struct fb_cow *c);


/* The session methods workspace.diff, workspace.commit and workspace.reset
 * (ws_cow.c, docs/protocol.md): the result object, or NULL with e
 * filled. c is the session's sandbox.cow; NULL answers not_supported. */
struct proto_err;
json_t *cow_session_method(struct fb_cow *c, const char *method, json_t *params,
                           struct proto_err *e);
/* The same, for a caller that runs it on a worker thread and wants to
 * follow or stop it (struct fb_cow_progress). Safe on any one thread as
 * long as no other operation on the same c runs meanwhile (calls on one
 * session must be serialized; different sessions are independent: the
 * ids a commit writes with are set per thread, setfsuid). A cancelled call
 * returns NULL with e->code "cancelled", which the caller replaces with
 * its own reason. */
json_t *cow_session_call(struct fb_cow *c, const char *method, json_t *params,
                         const struct fb_cow_progress *prog, struct proto_err *e);

/* Conflict baseline (commit.c). */
void cow_base_set(struct fb_cow *c, const char *path, const struct stat *st);
const struct fb_cow_base *cow_base_get(const struct fb_cow *c, const char *path);

#endif
