/* cgroup_attach.c — putting the sandbox into the cgroup made for it: by
 * clone3(CLONE_INTO_CGROUP), by the child joining its v1 directories itself,
 * or by moving it by pid; a directory it cannot join becomes a per-process
 * rlimit fallback (cgroup_fallback_limits), said once. */
#include "cgroup_int.h"

#include "userdir.h"

#include <string.h>

int cgroup_clone_fd(const struct fb_cgroup *cg)
{
    /* Only when one v2 directory holds everything and no rlimit fallback has
     * to be set on init (cgroup_attach does that). */
    if (cg->ndirs == 1 && cg->dirs[0].h->version == 2 && !cg->need_prlimit)
        return cg->dirs[0].fd;
    return -1;
}

int cgroup_join_self(const struct fb_cgroup *cg, struct fb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < cg->ndirs; i++) {
        const struct cg_dir *d = &cg->dirs[i];
        if (d->tasks_fd < 0)
            continue;
        ssize_t n;
        do
            n = write(d->tasks_fd, "0", 1);
        while (n < 0 && errno == EINTR);
        if (n != 1 && rc == 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "joining the cgroup %s", d->path);
        close(d->tasks_fd);
    }
    return rc;
}

int cgroup_enter(const struct fb_cgroup *cg, struct fb_err *err)
{
    /* v1: the task moves itself through "tasks" (cgroup_join_self says why);
     * the caller is single-threaded, so that is the whole process. */
    for (size_t i = 0; i < cg->ndirs; i++) {
        const struct cg_dir *d = &cg->dirs[i];
        const char *file = d->h->version == 1 ? "tasks" : "cgroup.procs";
        if (d->fd >= 0 && fb_write_fileat(d->fd, file, "0") < 0)
            return fb_errno(err, FB_EXIT_SETUP, "joining the cgroup %s", d->path);
    }
    return 0;
}

int cgroup_join_fds(const int *fds, size_t n, struct fb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < n; i++) {
        ssize_t w;
        do
            w = write(fds[i], "0", 1);
        while (w < 0 && errno == EINTR);
        if (w != 1 && rc == 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "joining the sandbox's cgroup");
    }
    return rc;
}

/* Move pid into d by writing its number to cgroup.procs. A directory that
 * cannot be joined (delegation rules) becomes "not applied". */
static int attach_pid(struct fb_cgroup *cg, struct cg_dir *d, pid_t pid, struct fb_err *err)
{
    char buf[16];
    snprintf(buf, sizeof buf, "%d", (int)pid);
    if (fb_write_fileat(d->fd, "cgroup.procs", buf) == 0)
        return 0;
    cg_cause_errno(cg, errno);
    cg_add_reason(cg, "joining %s: %s", d->path, strerror(errno));
    cg->applied &= ~d->ctrls;
    if (cg->limits.require) {
        cg_finish_strings(cg);
        return fb_errf(err, FB_EXIT_SETUP,
                       "--require-limits: cannot apply the %s limit: %s (see fluebox doctor)",
                       cg->not_applied_s, cg->reason);
    }
    cg->fallback |= d->ctrls & cg->fallback_ok;
    cg_finish_strings(cg);
    char key[96];
    snprintf(key, sizeof key, "cgroup join %s", cg->not_applied_s);
    fb_note_once(err, key, "warning: limits not applied: %s: %s (said once per boot; --report has "
                 "it every run; see fluebox doctor)",
                 cg->not_applied_s, cg->reason);
    return 0;
}

int cgroup_attach(struct fb_cgroup *cg, pid_t pid, struct fb_err *err)
{
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->tasks_fd >= 0) {
            /* The child joins this one itself (cgroup_join_self). */
            close(d->tasks_fd);
            d->tasks_fd = -1;
            continue;
        }
        if (attach_pid(cg, d, pid, err) < 0)
            return -1;
    }
    return 0;
}

int cgroup_attach_late(struct fb_cgroup *cg, pid_t pid, int *fds, size_t cap, size_t *n,
                       struct fb_err *err)
{
    *n = 0;
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->tasks_fd >= 0 && *n < cap) {
            fds[(*n)++] = d->tasks_fd; /* the child writes "0" to it */
            d->tasks_fd = -1;
            continue;
        }
        if (attach_pid(cg, d, pid, err) < 0) {
            for (size_t k = 0; k < *n; k++)
                close(fds[k]);
            *n = 0;
            return -1;
        }
    }
    return 0;
}

void cgroup_fallback_limits(const struct fb_cgroup *cg, int64_t *nproc, int64_t *data)
{
    /* Per-process fallbacks, set by init on itself before it runs anything:
     * every process of the sandbox inherits them. RLIMIT_NPROC is counted
     * per user namespace, so it bounds this sandbox's processes only. (The
     * supervisor cannot set them from outside: the child runs as another
     * host id, and prlimit() on it would need CAP_SYS_RESOURCE.) */
    *nproc = *data = 0;
    if (!cg)
        return;
    if ((cg->fallback & BIT(C_PIDS)) && cg->limits.pids > 0)
        *nproc = cg->limits.pids;
    if ((cg->fallback & BIT(C_MEM)) && cg->limits.mem > 0)
        *data = cg->limits.mem;
}
