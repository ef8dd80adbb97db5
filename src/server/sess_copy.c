/* sess_copy.c — the copy of a session into its fork (sess_copy.h). */
#include "sess_copy.h"

#include "childjob.h"
#include "cow.h"
#include "treecopy.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

struct fb_fork {
    int scratch;                  /* the original's scratch tmpfs (a duplicate) */
    int upper;                    /* its copy-on-write upper layer, or -1 */
    bool tmpfs_workspace;         /* /workspace is its scratch directory: copy it */
    struct tree_ids from;         /* the original's host ids */
    bool chown;                   /* as root: owners move to the fork's ids */
    const struct fb_cgroup *cg;   /* the original's, frozen during the copy */
    /* Filled by fork_fill, for the child process: */
    int dst;                      /* the fork's scratch tmpfs */
    struct tree_ids to;
    uid_t to_uid;                 /* the fork's sandbox user, host ids */
    gid_t to_gid;
    int64_t copy_ms;
};

/* Inside id N is host base + N (as root, a range of the sandbox's own);
 * rootless the maps are the same for every sandbox of the caller: no
 * shift. */
static struct tree_ids ids_of(const struct fb_ids *ids)
{
    struct tree_ids t = {0};
    if (ids->root && ids->count > 1) {
        t.uid_base = ids->range_uid;
        t.gid_base = ids->range_gid;
        t.count = ids->count;
    } else if (ids->root) {
        t.uid_base = ids->host_uid; /* one id: the sandbox user's */
        t.gid_base = ids->host_gid;
        t.count = 1;
    }
    return t;
}

struct fb_fork *fork_prepare(const struct fb_sandbox *orig, const struct fb_policy *p,
                             struct fb_err *err)
{
    int scratch = sandbox_scratch_open(orig);
    if (scratch < 0) {
        fb_errf(err, FB_EXIT_SETUP, "the session has no scratch space to copy");
        return NULL;
    }
    struct fb_fork *f = fb_xcalloc(1, sizeof *f);
    f->upper = f->dst = -1;
    f->scratch = scratch;
    if (orig->cow && orig->cow->upper >= 0)
        f->upper = fcntl(orig->cow->upper, F_DUPFD_CLOEXEC, 3);
    if (f->scratch < 0 || (orig->cow && f->upper < 0)) {
        fb_errno(err, FB_EXIT_SETUP, "fork: duplicating the session's descriptors");
        fork_free(f);
        return NULL;
    }
    f->tmpfs_workspace = !p->workspace;
    f->from = ids_of(&orig->ids);
    f->chown = orig->ids.root;
    f->cg = orig->cg;
    return f;
}

/* A directory of the fork's scratch space (made if missing, owned by its
 * sandbox user), opened. */
static int dst_dir(struct fb_fork *f, int at, const char *name, mode_t mode, struct fb_err *err)
{
    if (mkdirat(at, name, mode) == 0) {
        if (f->chown)
            fchownat(at, name, f->to_uid, f->to_gid, AT_SYMLINK_NOFOLLOW);
    } else if (errno != EEXIST) {
        return fb_errno(err, FB_EXIT_SETUP, "fork: creating %s", name);
    }
    int d = openat(at, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (d < 0)
        fb_errno(err, FB_EXIT_SETUP, "fork: opening %s", name);
    return d;
}

/* In the child process, in the fork's cgroup. */
static int fork_copy(void *arg, struct fb_err *err)
{
    struct fb_fork *f = arg;
    if (f->chown && childjob_write_as(f->to_uid, f->to_gid, err) < 0)
        return -1;
    struct tree_copy_opts o = {.from = f->from, .to = f->to, .chown = f->chown};
    const char *dirs[3] = {"home", "tmp", f->tmpfs_workspace ? "workspace" : NULL};
    for (size_t i = 0; i < 3 && dirs[i]; i++) {
        int src = openat(f->scratch, dirs[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (src < 0) {
            if (errno == ENOENT)
                continue;
            return fb_errno(err, FB_EXIT_SETUP, "fork: %s", dirs[i]);
        }
        int dst = dst_dir(f, f->dst, dirs[i], 0700, err);
        int rc = dst < 0 ? -1 : tree_copy(src, dst, &o, err);
        close(src);
        if (dst >= 0)
            close(dst);
        if (rc < 0)
            return -1;
    }
    if (f->upper >= 0) {
        /* The overlay the fork mounts takes cow/upper as its upper layer
         * (mount_cow): give it the original's. */
        int cow = dst_dir(f, f->dst, "cow", 0755, err);
        if (cow < 0)
            return -1;
        int up = dst_dir(f, cow, "upper", 0755, err);
        close(cow);
        if (up < 0)
            return -1;
        int rc = tree_copy(f->upper, up, &o, err);
        close(up);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* The seed's fill: freeze the original, copy, thaw. */
static int fork_fill(void *arg, int scratch, const struct fb_sandbox *sb, struct fb_err *err)
{
    struct fb_fork *f = arg;
    f->dst = scratch;
    f->to = ids_of(&sb->ids);
    f->to_uid = sb->ids.host_uid;
    f->to_gid = sb->ids.host_gid;
    uint64_t t0 = fb_now_ns();
    struct fb_err ferr = {0};
    bool frozen = f->cg && cgroup_freeze(f->cg, true, &ferr) == 0;
    int rc = childjob_run(sb->cg, fork_copy, f, err);
    if (frozen)
        cgroup_freeze(f->cg, false, &ferr);
    f->copy_ms = (int64_t)((fb_now_ns() - t0) / 1000000);
    if (rc < 0 && strncmp(err->msg, "fork:", 5))
        fb_err_wrap(err, "fork: copying the session");
    return rc;
}

void fork_seed(struct fb_fork *f, struct fb_seed *seed)
{
    seed->fill = fork_fill;
    seed->arg = f;
}

int64_t fork_copy_ms(const struct fb_fork *f)
{
    return f->copy_ms;
}

void fork_free(struct fb_fork *f)
{
    if (!f)
        return;
    if (f->scratch >= 0)
        close(f->scratch);
    if (f->upper >= 0)
        close(f->upper);
    free(f);
}
