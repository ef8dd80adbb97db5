/* cgroup.c — resource limits through cgroups: v2 where the unified hierarchy
 * has the controller, v1 otherwise, rlimits where neither can be used. This
 * file makes and removes the run's cgroup (cgroup_create, cgroup_destroy)
 * and keeps what it says about limits not applied; the rest is in
 *
 *     cgroup_hier.c     finding the hierarchies, sweeping what a killed fluebox left
 *     cgroup_v2.c       passing v2 controllers down to the run (delegation)
 *     cgroup_limits.c   writing limits (v1 and v2), changing them, reading usage
 *     cgroup_attach.c   putting the sandbox into its cgroup, rlimit fallbacks
 *     cgroup_at.c       a cgroup at a given path, for fluebox oci
 *
 * sharing cgroup_int.h.
 *
 * Layout. Every run gets one directory per hierarchy it needs, named
 * fluebox-<creator pid>-<seq>, under "<fluebox's own cgroup>/fluebox":
 *
 *     /sys/fs/cgroup/memory/<own>/fluebox/fluebox-4242-1     (v1, memory)
 *     /sys/fs/cgroup/pids/<own>/fluebox/fluebox-4242-1       (v1, pids)
 *     /sys/fs/cgroup/<own>/fluebox/fluebox-4242-1            (v2: all of them)
 *
 * Nested under our own cgroup, as delegation expects, and never at a
 * hierarchy's root. Only the controllers that have a limit are touched: each
 * v1 hierarchy costs a mkdir, a few writes and an rmdir on the cold-start
 * path. The creator's pid in the name lets a later run remove what a
 * SIGKILLed fluebox left (cgroup_hier.c). Nothing here mounts, unmounts or
 * rebinds a hierarchy; other software on the machine relies on them.
 *
 * Choosing the backend, per controller (memory, pids, cpu):
 *   - v2 when fluebox's own cgroup on the unified mount lists it in
 *     cgroup.controllers (it is available to pass down: cgroup_v2.c);
 *   - else v1 when a v1 hierarchy with it is mounted;
 *   - else it is not applied, and the reason is kept for the warning and the
 *     report. FLUEBOX_CGROUP=v1|v2|none|auto (default auto) forces a choice;
 *     "v2" creates the v2 group even when it holds no controller, which is
 *     how the v2 code path is exercised on machines whose controllers are v1.
 *
 * Rootless (no delegation): mkdir fails with EACCES; the run goes on, the
 * pids limit becomes RLIMIT_NPROC and the memory limit RLIMIT_DATA (per
 * process, a weaker bound), set on init with prlimit() before it starts, and
 * one warning names what is missing. --require-limits turns that into exit
 * 125 before anything runs.
 *
 * Threads: creation and removal use process-wide state (the mounts found,
 * the sweep, the sequence number) and must come from one thread at a time
 * (the session server does every spawn and release on one worker thread);
 * cgroup_usage and cgroup_set_limits touch only their own cgroup. */
#include "cgroup.h"
#include "cgroup_int.h"

#include "userdir.h"

#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

/* ---- reasons ---- */

void cg_sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

void cg_add_reason(struct fb_cgroup *cg, const char *fmt, ...)
{
    size_t l = strlen(cg->reason);
    if (l + 3 >= sizeof cg->reason)
        return;
    if (l) {
        strcpy(cg->reason + l, "; ");
        l += 2;
    }
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cg->reason + l, sizeof cg->reason - l, fmt, ap);
    va_end(ap);
}

void cg_set_cause(struct fb_cgroup *cg, const char *fmt, ...)
{
    if (cg->cause[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cg->cause, sizeof cg->cause, fmt, ap);
    va_end(ap);
}

/* The short cause of a failed mkdir/write/attach on cgroupfs. */
void cg_cause_errno(struct fb_cgroup *cg, int e)
{
    if (e == EACCES || e == EPERM) {
        /* In a user namespace (`unshare -r`), name the uid outside too: that
         * is the one a delegation would be for. */
        uid_t u = geteuid(), out = fb_outer_uid(u);
        char who[64];
        if (out != u)
            snprintf(who, sizeof who, "uid %d (uid %d outside its user namespace)", (int)u, (int)out);
        else
            snprintf(who, sizeof who, "uid %d", (int)u);
        cg_set_cause(cg, "%s may not create or join cgroups here (no cgroup delegation)", who);
    }
    else if (e == EROFS)
        cg_set_cause(cg, "the cgroup filesystem is mounted read-only");
    else
        cg_set_cause(cg, "cgroup set-up failed: %s", strerror(e));
}

void cg_names_of(unsigned bits, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int c = 0; c < C_N; c++)
        if (bits & BIT(c))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", cg_ctrl_name[c]);
}

/* ---- removal ---- */

int cg_rmdir_retry(const char *path)
{
    /* A cgroup whose last task has just exited can be busy for a moment. */
    for (int i = 0; i < 200; i++) {
        if (rmdir(path) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        cg_sleep_ms(1);
    }
    return -1;
}

/* Kill whatever is still in the directory: cgroup.kill on v2 (5.14+),
 * otherwise the pids in cgroup.procs until it reads empty. */
void cg_kill_all(const struct cg_dir *d)
{
    if (d->h->version == 2 && fb_write_fileat(d->fd, "cgroup.kill", "1") == 0)
        return;
    for (int round = 0; round < 100; round++) {
        char buf[4096];
        if (fb_read_fileat(d->fd, "cgroup.procs", buf, sizeof buf) <= 0)
            return;
        for (char *s = buf; *s;) {
            long pid = strtol(s, &s, 10);
            if (pid > 0)
                kill((pid_t)pid, SIGKILL);
            while (*s == '\n')
                s++;
        }
        cg_sleep_ms(1);
    }
}

void cg_dir_remove(struct cg_dir *d)
{
    if (d->tasks_fd >= 0)
        close(d->tasks_fd);
    d->tasks_fd = -1;
    if (d->fd >= 0) {
        cg_kill_all(d);
        close(d->fd);
        d->fd = -1;
    }
    if (d->path && cg_rmdir_retry(d->path) < 0)
        fb_warn("warning: cannot remove cgroup %s: %s", d->path, strerror(errno));
    /* A cgroup at a given path (cgroup_at.c): the empty directories above
     * it that it made itself go too, up to top. */
    if (d->path && d->top) {
        size_t tl = strlen(d->top);
        for (char *s = strrchr(d->path, '/'); s && (size_t)(s - d->path) >= tl; s = strrchr(d->path, '/')) {
            *s = 0;
            if (rmdir(d->path) < 0)
                break;
        }
    }
    free(d->top);
    d->top = NULL;
    /* The shared parent goes too once it is empty; a concurrent fluebox
     * recreates it (see make_dir). */
    if (d->parent)
        rmdir(d->parent);
    free(d->path);
    free(d->parent);
    d->path = d->parent = NULL;
    /* One of cgroup_hier.c's hierarchies (cgroup_at.c has its own): its
     * last run puts back what cg_v2_delegate changed. */
    struct hier *h = cg_own_hier(d->h);
    if (h && h->users && !--h->users && h->version == 2 &&
        (h->self_leaf || h->own_added || h->parent_added))
        cg_v2_restore(h);
}

/* ---- creation ---- */

static unsigned seq;

/* Create <own>/fluebox/fluebox-PID-SEQ in hierarchy h for the controllers in
 * bits. Returns 0 and fills d, or -1 with the reason recorded. */
static int make_dir(struct fb_cgroup *cg, struct hier *h, unsigned bits, struct cg_dir *d)
{
    char names[32];
    cg_names_of(bits, names, sizeof names);
    memset(d, 0, sizeof *d);
    d->h = h;
    d->fd = d->tasks_fd = -1;
    if (!h->own) {
        cg_set_cause(cg, "fluebox's own cgroup is not visible under %s", h->mnt);
        cg_add_reason(cg, "%s: fluebox's own cgroup is not visible under %s", names, h->mnt);
        return -1;
    }
    d->parent = fb_xasprintf("%s/fluebox", h->own);
    cg_sweep_once(h, d->parent);
    /* ...and every other hierarchy: a SIGKILLed `run --cpus` left its cpu
     * cgroup, which a run that never uses cpu would otherwise keep. */
    cgroup_sweep_stale();
    /* A concurrent fluebox may remove the (empty) parent between our mkdir
     * of it and of the child: then ENOENT, and we go round again. */
    bool parent_ok = h->version == 1; /* v1: try the child first, the parent is often there */
    for (int attempt = 0;; attempt++) {
        if (!parent_ok) {
            if (mkdir(d->parent, 0755) < 0 && errno != EEXIST)
                goto fail;
            if (h->version == 2 && bits && cg_v2_delegate(cg, h, d->parent, bits) < 0) {
                if (errno == ENOENT && attempt < 5)
                    continue;
                goto fail_quiet;
            }
            parent_ok = true;
        }
        free(d->path);
        d->path = fb_xasprintf("%s/fluebox-%d-%u", d->parent, (int)getpid(), cg->seq);
        if (mkdir(d->path, 0755) == 0)
            break;
        if ((errno == ENOENT || errno == EEXIST) && attempt < 16) {
            if (errno == EEXIST) /* a leftover of an earlier process with our pid */
                cg->seq = ++seq;
            else
                parent_ok = false; /* not there yet, or a concurrent fluebox removed it */
            continue;
        }
        goto fail;
    }
    d->fd = open(d->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (d->fd < 0) {
        int e = errno;
        rmdir(d->path);
        errno = e;
        goto fail;
    }
    /* v1: the child joins by itself (cgroup_join_self); if this cannot be
     * opened, cgroup_attach moves it instead. */
    if (h->version == 1)
        d->tasks_fd = openat(d->fd, "tasks", O_WRONLY | O_CLOEXEC);
    d->ctrls = bits;
    h->users++;
    return 0;
fail:
    cg_cause_errno(cg, errno);
    cg_add_reason(cg, "%s: cannot create a cgroup under %s: %s", names, d->parent, strerror(errno));
fail_quiet:
    free(d->path);
    d->path = NULL;
    if (d->parent)
        rmdir(d->parent); /* only if empty */
    free(d->parent);
    d->parent = NULL;
    if (h->version == 2 && !h->users && (h->self_leaf || h->own_added || h->parent_added))
        cg_v2_restore(h);
    return -1;
}

void cg_finish_strings(struct fb_cgroup *cg)
{
    cg_names_of(cg->applied, cg->applied_s, sizeof cg->applied_s);
    cg_names_of(cg->wanted & ~cg->applied, cg->not_applied_s, sizeof cg->not_applied_s);
    size_t o = 0;
    cg->fallback_s[0] = 0;
    if (cg->fallback & BIT(C_MEM))
        o += (size_t)snprintf(cg->fallback_s + o, sizeof cg->fallback_s - o, "memory:RLIMIT_DATA");
    if (cg->fallback & BIT(C_PIDS))
        snprintf(cg->fallback_s + o, sizeof cg->fallback_s - o, "%spids:RLIMIT_NPROC",
                 o ? "," : "");
}

unsigned cg_wanted_of(const struct fb_limits *l)
{
    unsigned w = 0;
    if (l->mem > 0)
        w |= BIT(C_MEM);
    if (l->pids > 0)
        w |= BIT(C_PIDS);
    if (l->cpus > 0)
        w |= BIT(C_CPU);
    return w;
}

/* Limits that have a per-process rlimit to stand in. Not RLIMIT_DATA in a
 * sanitizer build: init is fluebox's own code there, and the sanitizer's
 * shadow-memory reservations count as data, so init itself would fail. */
#if defined(__SANITIZE_ADDRESS__)
#define FB_NO_DATA_FALLBACK 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define FB_NO_DATA_FALLBACK 1
#endif
#endif
#ifdef FB_NO_DATA_FALLBACK
static const unsigned fallback_ok = BIT(C_PIDS);
#else
static const unsigned fallback_ok = BIT(C_MEM) | BIT(C_PIDS);
#endif

/* The one warning of a run whose limits are not all enforced: which, why
 * (short; the report's limits_note has the details) and what stands in. */
static void warn_missing(const struct fb_cgroup *cg, struct fb_err *err)
{
    char fb[96] = "";
    if (cg->fallback)
        snprintf(fb, sizeof fb, "; per process instead: %s%s%s",
                 cg->fallback & BIT(C_MEM) ? "RLIMIT_DATA" : "",
                 (cg->fallback & BIT(C_MEM)) && (cg->fallback & BIT(C_PIDS)) ? ", " : "",
                 cg->fallback & BIT(C_PIDS) ? "RLIMIT_NPROC" : "");
    char key[224];
    snprintf(key, sizeof key, "cgroup %s: %s", cg->not_applied_s, cg->cause[0] ? cg->cause : "?");
    fb_note_once(err, key, "warning: limits not applied: %s: %s%s; --require-limits makes this an error "
                 "(said once per boot; --report has it every run; fluebox doctor says how to "
                 "delegate cgroups)",
                 cg->not_applied_s, cg->cause[0] ? cg->cause : cg->reason, fb);
}

bool cgroup_before_clone(const struct fb_policy *p)
{
    /* --require-limits: a limit that cannot be applied is an error said
     * before anything starts (no mount prepared, no warning printed). */
    if (p->limits.require)
        return true;
    const char *mode = getenv("FLUEBOX_CGROUP");
    if (mode && (!strcmp(mode, "v1") || !strcmp(mode, "none")))
        return false;
    if (mode && *mode && strcmp(mode, "auto"))
        return true; /* "v2", or a bad value cgroup_create reports before anything starts */
    unsigned wanted = cg_wanted_of(&p->limits);
    if (!wanted)
        return false;
    cg_discover();
    struct hier *v2 = cg_find_v2();
    return v2 && v2->own && (cg_v2_controllers(v2) & wanted) == wanted;
}

/* Creating and removing cgroups changes what this file and the hierarchies
 * share (the sequence number, a hierarchy's users, the sweep): one thread
 * at a time (a server spawns on several). */
static pthread_mutex_t cg_mu = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP; /* a failed create
                                                                       destroys what it made */

static int create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err);

int cgroup_create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err)
{
    pthread_mutex_lock(&cg_mu);
    int rc = create(p, out, err);
    pthread_mutex_unlock(&cg_mu);
    return rc;
}

static int create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err)
{
    *out = NULL;
    struct fb_cgroup *cg = fb_xcalloc(1, sizeof *cg);
    for (size_t i = 0; i < FB_ARRAY_LEN(cg->dirs); i++)
        cg->dirs[i].fd = cg->dirs[i].tasks_fd = -1;
    cg->limits = p->limits;
    /* RLIMIT_NPROC counts every process of the uid in its user namespace:
     * under --isolation landlock (no user namespace of its own) the
     * caller's other processes too, so it would limit the user, not the
     * sandbox. pids is then simply not applied. */
    cg->fallback_ok = fallback_ok & (p->isolation == FB_ISO_LANDLOCK ? ~BIT(C_PIDS) : ~0u);
    cg->wanted = cg_wanted_of(&p->limits);
    cg->seq = ++seq;

    const char *mode = getenv("FLUEBOX_CGROUP");
    if (!mode || !*mode)
        mode = "auto";
    bool force_v1 = !strcmp(mode, "v1"), force_v2 = !strcmp(mode, "v2");
    if (!strcmp(mode, "none")) {
        cg_set_cause(cg, "cgroups disabled by FLUEBOX_CGROUP=none");
        cg_add_reason(cg, "cgroups disabled by FLUEBOX_CGROUP=none");
    } else if (!force_v1 && !force_v2 && strcmp(mode, "auto")) {
        free(cg);
        return fb_errf(err, FB_EXIT_SETUP, "FLUEBOX_CGROUP=%s: expected auto, v1, v2 or none",
                       mode);
    } else {
        cg_discover();
        /* Which hierarchy holds each controller. */
        struct hier *v2 = force_v1 ? NULL : cg_find_v2();
        unsigned v2_avail = cg->wanted || force_v2 ? cg_v2_controllers(v2) : 0;
        unsigned on_v2 = 0, unavailable = 0;
        struct hier *v1_of[C_N] = {0};
        for (int c = 0; c < C_N; c++) {
            if (!(cg->wanted & BIT(c)))
                continue;
            if (v2_avail & BIT(c))
                on_v2 |= BIT(c);
            else if (!force_v2 && (v1_of[c] = cg_find_v1(c)))
                ;
            else
                unavailable |= BIT(c);
        }
        if (unavailable) {
            char n[32];
            cg_names_of(unavailable, n, sizeof n);
            cg_set_cause(cg, "%s offers the %s controller%s",
                         force_v2 ? "no cgroup2 hierarchy here" : "no usable cgroup hierarchy", n,
                         strchr(n, ',') ? "s" : "");
            if (force_v2 && !v2)
                cg_add_reason(cg, "%s: no cgroup2 hierarchy is mounted", n);
            else if (force_v2 || (v2 && v2->own && !cg_find_v1(__builtin_ctz(unavailable))))
                cg_add_reason(cg, "%s: not available in %s/cgroup.controllers", n,
                              v2 && v2->own ? v2->own : "the cgroup2 hierarchy");
            else
                cg_add_reason(cg, "%s: no cgroup hierarchy has this controller", n);
        }
        /* The v2 directory (also when it holds nothing, if forced). */
        if (v2 && (on_v2 || force_v2)) {
            struct cg_dir *d = &cg->dirs[cg->ndirs];
            if (make_dir(cg, v2, on_v2, d) == 0) {
                cg->ndirs++;
                cg->applied |= cg_write_limits(cg, d, &p->limits);
            }
        }
        /* One directory per v1 hierarchy in use (cpu and cpuacct may share one). */
        for (int c = 0; c < C_N; c++) {
            if (!v1_of[c])
                continue;
            unsigned bits = 0;
            for (int k = c; k < C_N; k++)
                if (v1_of[k] == v1_of[c]) {
                    bits |= BIT(k);
                    if (k != c)
                        v1_of[k] = NULL;
                }
            struct cg_dir *d = &cg->dirs[cg->ndirs];
            if (make_dir(cg, v1_of[c], bits, d) == 0) {
                cg->ndirs++;
                cg->applied |= cg_write_limits(cg, d, &p->limits);
            }
        }
    }
    unsigned missing = cg->wanted & ~cg->applied;
    cg->fallback = missing & cg->fallback_ok;
    cg->need_prlimit = cg->fallback != 0;
    cg_finish_strings(cg);
    if (missing && p->limits.require) {
        fb_errf(err, FB_EXIT_SETUP,
                "--require-limits: cannot apply the %s limit%s (%s): %s (see fluebox doctor)",
                cg->not_applied_s, strchr(cg->not_applied_s, ',') ? "s" : "", cg->cause,
                cg->reason);
        cgroup_destroy(cg);
        return -1;
    }
    if (missing && !p->quiet)
        warn_missing(cg, err);
    *out = cg;
    return 0;
}

const char *cgroup_applied(const struct fb_cgroup *cg) { return cg->applied_s; }
const char *cgroup_not_applied(const struct fb_cgroup *cg) { return cg->not_applied_s; }
const char *cgroup_fallbacks(const struct fb_cgroup *cg) { return cg->fallback_s; }
const char *cgroup_reason(const struct fb_cgroup *cg) { return cg->reason; }

const char *cgroup_backend(const struct fb_cgroup *cg)
{
    bool v1 = false, v2 = false;
    for (size_t i = 0; i < cg->ndirs; i++) {
        if (cg->dirs[i].h->version == 2)
            v2 = true;
        else
            v1 = true;
    }
    return v1 && v2 ? "v1+v2" : v2 ? "v2" : v1 ? "v1" : "none";
}

/* Held from cg_unpark to cg_repark: the descriptors opened are the
 * cgroup's own, and two threads may use one cgroup (a server's loop reads
 * a session's usage while a worker freezes it for a fork). */
static pthread_mutex_t park_mu = PTHREAD_MUTEX_INITIALIZER;

bool cg_unpark(struct fb_cgroup *cg)
{
    if (!cg || !cg->parked)
        return false;
    pthread_mutex_lock(&park_mu);
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->fd < 0 && d->path)
            d->fd = open(d->path, O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    return true;
}

void cg_repark(struct fb_cgroup *cg, bool was)
{
    if (!was)
        return;
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->fd >= 0)
            close(d->fd);
        d->fd = -1;
    }
    pthread_mutex_unlock(&park_mu);
}

void cgroup_park(struct fb_cgroup *cg)
{
    if (!cg || cg->parked)
        return;
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (!d->path || d->tasks_fd >= 0)
            return; /* not made by path, or still joining: keep it as it is */
    }
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->fd >= 0)
            close(d->fd);
        d->fd = -1;
    }
    cg->parked = true;
}

void cgroup_destroy(struct fb_cgroup *cg)
{
    if (!cg)
        return;
    bool parked = cg_unpark(cg); /* the fds are closed as the directories go */
    pthread_mutex_lock(&cg_mu);
    for (size_t i = 0; i < cg->ndirs; i++)
        cg_dir_remove(&cg->dirs[i]);
    pthread_mutex_unlock(&cg_mu);
    if (parked)
        pthread_mutex_unlock(&park_mu);
    free(cg);
}
