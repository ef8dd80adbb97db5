/* cgroup_at.c — a cgroup at a path someone else chose: fluebox oci puts a
 * container in the spec's linux.cgroupsPath itself, because containerd's
 * shim, kubelet and cAdvisor read that directory (stats, OOM events, the
 * pids of `ctr task ps`) and containers of one pod share its parent.
 *
 * The path follows runc's cgroupfs driver: "/a/b" lies below the root of
 * every hierarchy, "a/b" below the caller's own cgroup. The directory is
 * made in every mounted hierarchy (each v1 controller, named ones like
 * name=systemd, and the unified one), the way runc makes it, so that the
 * container is in it everywhere and nothing of it is in the caller's
 * cgroups; missing directories above it are made too and removed again
 * with it when empty. On cgroup v2 the controllers are enabled in
 * cgroup.subtree_control along the path.
 *
 * The limits of the policy (memory, pids, cpu) are written as
 * cgroup_create() writes them; anything else the spec sets (cpu shares,
 * cpusets, memory reservations) goes through cgroup_set_file(). */
#include "cgroup_int.h"
#include "mountinfo.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

static struct hier all[16];
static size_t nall;
static bool all_found;

/* Our cgroup in the hierarchy of a /proc/self/cgroup line whose controller
 * list shares a name with opts (v1), or the "0::" line (v2). */
static char *own_of(const char *self, int version, const char *opts)
{
    for (const char *line = self; *line;) {
        size_t len = strcspn(line, "\n");
        char buf[512];
        snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
        char *c1 = strchr(buf, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (c2) {
            *c2 = 0;
            const char *ctrls = c1 + 1;
            bool match = false;
            if (version == 2)
                match = !*ctrls;
            else
                for (const char *s = ctrls; *s && !match;) {
                    size_t l = strcspn(s, ",");
                    char tok[64];
                    snprintf(tok, sizeof tok, "%.*s", (int)(l < sizeof tok ? l : sizeof tok - 1), s);
                    match = *tok && cg_has_token(opts, tok);
                    s += l;
                    if (*s == ',')
                        s++;
                }
            if (match)
                return fb_xstrdup(c2 + 1);
        }
        line += len;
        if (*line)
            line++;
    }
    return NULL;
}

/* Every cgroup hierarchy mounted, from /proc/self/mountinfo (its mount
 * root must be "/": a hierarchy mounted from a subdirectory cannot hold an
 * absolute path). */
static void find_all(void)
{
    if (all_found)
        return;
    all_found = true;
    char self[4096];
    if (fb_read_file("/proc/self/cgroup", self, sizeof self) < 0)
        return;
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && nall < FB_ARRAY_LEN(all)) {
        struct mountinfo_ent e;
        if (!mountinfo_split(line, &e) || strcmp(e.root, "/"))
            continue;
        const char *fstype = e.fstype, *super = e.super;
        char *mnt = e.mnt;
        int version = !strcmp(fstype, "cgroup2") ? 2 : !strcmp(fstype, "cgroup") ? 1 : 0;
        if (!version)
            continue;
        bool dup = false;
        for (size_t k = 0; k < nall; k++)
            dup |= all[k].version == version && (version == 2 || !strcmp(all[k].names, super));
        if (dup || strchr(mnt, '\\'))
            continue;
        struct hier h = {.version = version, .mnt = fb_xstrdup(mnt),
                         .names = fb_xstrdup(version == 1 ? super : "")};
        if (version == 1) {
            if (cg_has_token(super, "memory"))
                h.ctrls |= BIT(C_MEM);
            if (cg_has_token(super, "pids"))
                h.ctrls |= BIT(C_PIDS);
            if (cg_has_token(super, "cpu"))
                h.ctrls |= BIT(C_CPU);
            h.cpuacct = cg_has_token(super, "cpuacct");
        } else {
            char ctl[256] = "";
            cleanup_free char *cf = fb_xasprintf("%s/cgroup.controllers", h.mnt);
            fb_read_file(cf, ctl, sizeof ctl);
            for (char *s = ctl; *s; s += strcspn(s, " \n"), s += strspn(s, " \n")) {
                size_t l = strcspn(s, " \n");
                if (l == 6 && !strncmp(s, "memory", 6))
                    h.ctrls |= BIT(C_MEM);
                else if (l == 4 && !strncmp(s, "pids", 4))
                    h.ctrls |= BIT(C_PIDS);
                else if (l == 3 && !strncmp(s, "cpu", 3))
                    h.ctrls |= BIT(C_CPU);
            }
        }
        cleanup_free char *own = own_of(self, version, super);
        if (own)
            h.own = fb_xasprintf("%s%s", h.mnt, strcmp(own, "/") ? own : "");
        all[nall++] = h;
    }
    free(line);
    fclose(f);
}

/* path made absolute in hierarchy h, or NULL. */
static char *path_in(const struct hier *h, const char *path)
{
    if (path[0] == '/')
        return fb_xasprintf("%s%s", h->mnt, strcmp(path, "/") ? path : "");
    if (!h->own)
        return NULL;
    return fb_xasprintf("%s/%s", h->own, path);
}

/* cgroup v2: enable the controllers h holds in every cgroup.subtree_control
 * from the hierarchy's root down to the parent of dir. */
static void v2_enable(const struct hier *h, const char *dir)
{
    char want[64] = "";
    size_t o = 0;
    static const char *const names[] = {"memory", "pids", "cpu", "cpuset"};
    char avail[256] = "";
    cleanup_free char *cf = fb_xasprintf("%s/cgroup.controllers", h->mnt);
    fb_read_file(cf, avail, sizeof avail);
    for (size_t i = 0; i < FB_ARRAY_LEN(names); i++) {
        bool have = false;
        for (char *s = avail; *s; s += strcspn(s, " \n"), s += strspn(s, " \n"))
            have |= strcspn(s, " \n") == strlen(names[i]) && !strncmp(s, names[i], strlen(names[i]));
        if (have)
            o += (size_t)snprintf(want + o, sizeof want - o, "%s+%s", o ? " " : "", names[i]);
    }
    if (!o)
        return;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s", dir);
    size_t ml = strlen(h->mnt);
    for (char *s = buf + ml; (s = strchr(s, '/')); s++) {
        *s = 0;
        cleanup_free char *sc = fb_xasprintf("%s/cgroup.subtree_control", buf);
        fb_write_file(sc, want); /* best effort: a limit that cannot be set says so */
        *s = '/';
    }
}

/* v1 cpuset: a new directory starts with empty cpus and mems, and a task
 * cannot join it until they are set: copy them from the parent. */
static void cpuset_init(const char *dir)
{
    static const char *const files[] = {"cpuset.cpus", "cpuset.mems"};
    for (size_t i = 0; i < FB_ARRAY_LEN(files); i++) {
        char cur[256] = "", par[256] = "";
        cleanup_free char *f = fb_xasprintf("%s/%s", dir, files[i]);
        if (fb_read_file(f, cur, sizeof cur) < 0 || (cur[0] && cur[0] != '\n'))
            continue;
        cleanup_free char *pf = fb_xasprintf("%.*s/%s", (int)(strrchr(dir, '/') - dir), dir,
                                             files[i]);
        if (fb_read_file(pf, par, sizeof par) > 0)
            fb_write_file(f, par);
    }
}

/* mkdir -p dir below the mount mnt; *top is set to the highest directory
 * made (NULL when it existed). v1 cpuset directories get cpus and mems. */
static int mkdir_path(const struct hier *h, const char *dir, char **top)
{
    *top = NULL;
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", dir) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    bool cpuset = h->version == 1 && cg_has_token(h->names, "cpuset");
    for (char *s = buf + strlen(h->mnt) + 1;; s++) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = 0;
        if (mkdir(buf, 0755) == 0) {
            if (!*top)
                *top = fb_xstrdup(buf);
            if (cpuset)
                cpuset_init(buf);
        } else if (errno != EEXIST) {
            return -1;
        }
        if (!slash)
            return 0;
        *slash = '/';
        s = slash;
    }
}

static int open_dir(struct cg_dir *d, const struct hier *h, char *dir)
{
    memset(d, 0, sizeof *d);
    d->h = h;
    d->path = dir;
    d->tasks_fd = -1;
    d->fd = open(dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
    return d->fd < 0 ? -1 : 0;
}

static int check_path(const char *path, struct fb_err *err)
{
    if (!*path || strstr(path, "/../") || !strncmp(path, "../", 3) ||
        (strlen(path) >= 3 && !strcmp(path + strlen(path) - 3, "/..")) || !strcmp(path, ".."))
        return fb_errf(err, FB_EXIT_SETUP, "cgroup path \"%s\": empty or with \"..\"", path);
    if (strchr(path, ':') && path[0] != '/')
        return fb_errf(err, FB_EXIT_SETUP,
                       "cgroup path \"%s\" is a systemd slice: fluebox uses cgroupfs paths "
                       "(set SystemdCgroup = false)", path);
    return 0;
}

int cgroup_create_at(const struct fb_policy *p, const char *path, struct fb_cgroup **out,
                     struct fb_err *err)
{
    *out = NULL;
    if (check_path(path, err) < 0)
        return -1;
    find_all();
    struct fb_cgroup *cg = fb_xcalloc(1, sizeof *cg);
    for (size_t i = 0; i < FB_ARRAY_LEN(cg->dirs); i++)
        cg->dirs[i].fd = cg->dirs[i].tasks_fd = -1;
    cg->limits = p->limits;
    cg->wanted = cg_wanted_of(&p->limits);
    for (size_t i = 0; i < nall && cg->ndirs < FB_ARRAY_LEN(cg->dirs); i++) {
        const struct hier *h = &all[i];
        char *dir = path_in(h, path);
        if (!dir)
            continue;
        char *top = NULL;
        if (mkdir_path(h, dir, &top) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "creating the cgroup %s", dir);
            free(dir);
            goto fail;
        }
        if (h->version == 2)
            v2_enable(h, dir);
        struct cg_dir *d = &cg->dirs[cg->ndirs];
        if (open_dir(d, h, dir) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "opening the cgroup %s", dir);
            d->top = top;
            cg->ndirs++;
            goto fail;
        }
        d->top = top;
        cg->ndirs++;
        if (h->version == 1)
            d->tasks_fd = openat(d->fd, "tasks", O_WRONLY | O_CLOEXEC);
        d->ctrls = h->ctrls & cg->wanted;
        if (d->ctrls)
            cg->applied |= cg_write_limits(cg, d, &p->limits);
    }
    if (!cg->ndirs) {
        fb_errf(err, FB_EXIT_SETUP, "no cgroup hierarchy to put the cgroup %s in", path);
        goto fail;
    }
    if (cg->wanted & ~cg->applied) {
        cg_finish_strings(cg);
        fb_errf(err, FB_EXIT_SETUP, "cannot apply the %s limit to the cgroup %s: %s",
                cg->not_applied_s, path, cg->reason);
        goto fail;
    }
    cg_finish_strings(cg);
    *out = cg;
    return 0;
fail:
    cgroup_destroy(cg);
    return -1;
}

int cgroup_open_at(const char *path, struct fb_cgroup **out, struct fb_err *err)
{
    *out = NULL;
    if (check_path(path, err) < 0)
        return -1;
    find_all();
    struct fb_cgroup *cg = fb_xcalloc(1, sizeof *cg);
    for (size_t i = 0; i < FB_ARRAY_LEN(cg->dirs); i++)
        cg->dirs[i].fd = cg->dirs[i].tasks_fd = -1;
    for (size_t i = 0; i < nall && cg->ndirs < FB_ARRAY_LEN(cg->dirs); i++) {
        char *dir = path_in(&all[i], path);
        if (!dir)
            continue;
        struct cg_dir *d = &cg->dirs[cg->ndirs];
        if (open_dir(d, &all[i], dir) < 0) {
            free(dir);
            d->path = NULL;
            continue;
        }
        d->ctrls = all[i].ctrls;
        cg->ndirs++;
    }
    if (!cg->ndirs) {
        free(cg);
        return fb_errf(err, FB_EXIT_SETUP, "the cgroup %s does not exist", path);
    }
    *out = cg;
    return 0;
}

size_t cgroup_tops(const struct fb_cgroup *cg, const char **tops, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < cg->ndirs && n < cap; i++)
        if (cg->dirs[i].top)
            tops[n++] = cg->dirs[i].top;
    return n;
}

void cgroup_set_tops(struct fb_cgroup *cg, const char *const *tops, size_t n)
{
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        for (size_t k = 0; k < n; k++) {
            size_t l = strlen(tops[k]);
            if (!strncmp(d->path, tops[k], l) && (d->path[l] == '/' || !d->path[l])) {
                free(d->top);
                d->top = fb_xstrdup(tops[k]);
            }
        }
    }
}

static const struct cg_dir *dir_of(const struct fb_cgroup *cg, const char *ctrl)
{
    for (size_t i = 0; i < cg->ndirs; i++) {
        const struct cg_dir *d = &cg->dirs[i];
        if (d->h->version == 1 && d->h->names && cg_has_token(d->h->names, ctrl))
            return d;
    }
    for (size_t i = 0; i < cg->ndirs; i++)
        if (cg->dirs[i].h->version == 2)
            return &cg->dirs[i];
    return NULL;
}

int cgroup_version_of(const struct fb_cgroup *cg, const char *ctrl)
{
    const struct cg_dir *d = dir_of(cg, ctrl);
    return d ? d->h->version : 0;
}

int cgroup_set_file(const struct fb_cgroup *cg, const char *ctrl, const char *file,
                    const char *value, struct fb_err *err)
{
    const struct cg_dir *d = dir_of(cg, ctrl);
    if (!d)
        return fb_errf(err, FB_EXIT_SETUP, "no %s cgroup to write %s in", ctrl, file);
    if (fb_write_fileat(d->fd, file, value) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing \"%s\" to %s/%s", value, d->path, file);
    return 0;
}

ssize_t cgroup_get_file(const struct fb_cgroup *cg, const char *ctrl, const char *file,
                        char *buf, size_t cap)
{
    const struct cg_dir *d = dir_of(cg, ctrl);
    if (!d) {
        errno = ENOENT;
        return -1;
    }
    return fb_read_fileat(d->fd, file, buf, cap);
}

int cgroup_procs(const struct fb_cgroup *cg, pid_t **out, size_t *n)
{
    *out = NULL;
    *n = 0;
    /* The memory hierarchy's (or the first's) cgroup.procs: every process of
     * the container is in every directory. */
    const struct cg_dir *d = dir_of(cg, "memory");
    if (!d)
        d = &cg->dirs[0];
    int fd = openat(d->fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    FILE *f = fdopen(fd, "r");
    if (!f) {
        close(fd);
        return -1;
    }
    long v;
    size_t cap = 0;
    while (fscanf(f, "%ld", &v) == 1) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 32;
            *out = fb_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[(*n)++] = (pid_t)v;
    }
    fclose(f);
    return 0;
}

int cgroup_signal_all(const struct fb_cgroup *cg, int sig)
{
    pid_t *pids;
    size_t n;
    if (cgroup_procs(cg, &pids, &n) < 0)
        return -1;
    for (size_t i = 0; i < n; i++)
        kill(pids[i], sig);
    free(pids);
    return 0;
}

static void nap(void)
{
    struct timespec ts = {0, 1000000};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static int freeze(const struct fb_cgroup *cg, bool frozen, struct fb_err *err);

int cgroup_freeze(const struct fb_cgroup *cg, bool frozen, struct fb_err *err)
{
    bool parked = cg_unpark((struct fb_cgroup *)cg);
    int rc = freeze(cg, frozen, err);
    cg_repark((struct fb_cgroup *)cg, parked);
    return rc;
}

static int freeze(const struct fb_cgroup *cg, bool frozen, struct fb_err *err)
{
    const struct cg_dir *d = dir_of(cg, "freezer");
    if (!d || (d->h->version == 1 && !cg_has_token(d->h->names, "freezer")))
        return fb_errf(err, FB_EXIT_SETUP, "no freezer cgroup: cannot %s",
                       frozen ? "pause" : "resume");
    bool v2 = d->h->version == 2;
    const char *file = v2 ? "cgroup.freeze" : "freezer.state";
    const char *val = v2 ? (frozen ? "1" : "0") : (frozen ? "FROZEN" : "THAWED");
    /* v1 may report FREEZING for a while; v2 says "frozen 1" in
     * cgroup.events once every task stopped. Poll for it, bounded. */
    for (int i = 0; i < 5000; i++) {
        if (fb_write_fileat(d->fd, file, val) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "writing %s/%s", d->path, file);
        if (cgroup_frozen(cg) == frozen)
            return 0;
        nap();
    }
    return fb_errf(err, FB_EXIT_SETUP, "the cgroup %s did not %s", d->path,
                   frozen ? "freeze" : "thaw");
}

int cgroup_frozen(const struct fb_cgroup *cg)
{
    const struct cg_dir *d = dir_of(cg, "freezer");
    if (!d)
        return 0;
    char buf[256];
    if (d->h->version == 1) {
        if (!cg_has_token(d->h->names, "freezer") ||
            fb_read_fileat(d->fd, "freezer.state", buf, sizeof buf) <= 0)
            return 0;
        return !strncmp(buf, "FROZEN", 6);
    }
    if (fb_read_fileat(d->fd, "cgroup.events", buf, sizeof buf) <= 0)
        return 0;
    const char *s = strstr(buf, "frozen ");
    return s && s[7] == '1';
}

void cgroup_close(struct fb_cgroup *cg)
{
    if (!cg)
        return;
    for (size_t i = 0; i < cg->ndirs; i++) {
        struct cg_dir *d = &cg->dirs[i];
        if (d->fd >= 0)
            close(d->fd);
        if (d->tasks_fd >= 0)
            close(d->tasks_fd);
        free(d->path);
        free(d->parent);
        free(d->top);
    }
    free(cg);
}
