/* cgroup.c — resource limits through cgroups: v2 where the unified hierarchy
 * has the controller, v1 otherwise, rlimits where neither can be used.
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
 * SIGKILLed fluebox left (sweep_parent). Nothing here mounts, unmounts or
 * rebinds a hierarchy; other software on the machine relies on them.
 *
 * Choosing the backend, per controller (memory, pids, cpu):
 *   - v2 when fluebox's own cgroup on the unified mount lists it in
 *     cgroup.controllers (it is available to pass down);
 *   - else v1 when a v1 hierarchy with it is mounted;
 *   - else it is not applied, and the reason is kept for the warning and the
 *     report. FLUEBOX_CGROUP=v1|v2|none|auto (default auto) forces a choice;
 *     "v2" creates the v2 group even when it holds no controller, which is
 *     how the v2 code path is exercised on machines whose controllers are v1.
 *
 * Finding the hierarchies: the conventional /sys/fs/cgroup layout is checked
 * with statfs() (discover_conventional); anything else is read from
 * /proc/self/mountinfo, which costs tens of µs more in a fresh process.
 * FLUEBOX_CGROUP_MOUNTINFO=1 forces the latter (tests).
 *
 * cgroup v2 and the "no internal processes" rule: the controllers reach the
 * run's directory only when fluebox enables them in its own cgroup's
 * cgroup.subtree_control, and a non-root cgroup may not both hold processes
 * and pass domain controllers (memory) down. Threaded ones (pids, cpu) can
 * be written there, but that turns the cgroup into a thread root whose new
 * children are "domain invalid": the caller's cgroup would be broken. So
 * fluebox never writes cgroup.subtree_control of a cgroup that holds
 * processes (v2_delegate): when fluebox is the only process there (a scope or
 * a service with Delegate=yes made for it), it first moves itself into a leaf
 * of its own, <own>/fluebox/fluebox-<pid>-self; when others are there too,
 * the limits are reported as not applied with the reason. A write that
 * fails is undone, and what fluebox enabled and its own move are undone when
 * its last run ends (v2_restore): the caller's cgroup is left as it was. The
 * root cgroup may hold processes and pass controllers down; what fluebox
 * enables there stays (other cgroups may be using it by then).
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

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/resource.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <time.h>

static const char *const ctrl_name[C_N] = {"memory", "pids", "cpu"};

/* ---- discovery (once per process) ---- */

static struct hier hiers[6];
static size_t nhiers;
static bool discovered;
static unsigned swept; /* bit per hiers[] index: stale entries already swept */

static char *unescape_mnt(const char *s)
{
    /* mountinfo escapes space, tab, newline and backslash as \ooo. */
    char *out = fb_xmalloc(strlen(s) + 1), *o = out;
    while (*s) {
        if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7' &&
            s[3] >= '0' && s[3] <= '7') {
            *o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
            s += 4;
        } else {
            *o++ = *s++;
        }
    }
    *o = 0;
    return out;
}

static bool has_token(const char *list, const char *tok)
{
    size_t tl = strlen(tok);
    for (const char *s = list; *s;) {
        size_t l = strcspn(s, ",");
        if (l == tl && !strncmp(s, tok, tl))
            return true;
        s += l;
        if (*s == ',')
            s++;
    }
    return false;
}

/* The path of our cgroup in the hierarchy whose /proc/self/cgroup line
 * matches: v2 is "0::/path", v1 "N:ctrl,ctrl:/path". */
static char *own_path(const char *procself, int version, const char *ctrl)
{
    for (const char *line = procself; *line;) {
        size_t len = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (c2) {
            char ctrls[128];
            size_t cl = (size_t)(c2 - c1 - 1);
            if (cl < sizeof ctrls) {
                memcpy(ctrls, c1 + 1, cl);
                ctrls[cl] = 0;
                bool match = version == 2 ? (cl == 0 && !strncmp(line, "0:", 2))
                                          : (cl > 0 && has_token(ctrls, ctrl));
                if (match)
                    return fb_xstrndup(c2 + 1, len - (size_t)(c2 + 1 - line));
            }
        }
        line += len;
        if (*line)
            line++;
    }
    return NULL;
}

/* mnt + (path relative to the mount's root), or NULL when our cgroup lies
 * outside what is mounted there. */
static char *join_own(const char *mnt, const char *root, const char *path)
{
    size_t rl = strlen(root);
    if (!strcmp(root, "/"))
        rl = 0;
    else if (strncmp(path, root, rl) || (path[rl] && path[rl] != '/'))
        return NULL;
    const char *rest = path + rl;
    if (!strcmp(rest, "/"))
        rest = "";
    return fb_xasprintf("%s%s", mnt, rest);
}

static void hiers_reset(void)
{
    for (size_t i = 0; i < nhiers; i++) {
        free(hiers[i].mnt);
        free(hiers[i].own);
        free(hiers[i].self_leaf);
    }
    memset(hiers, 0, sizeof hiers);
    nhiers = 0;
}

/* Add the hierarchy mounted at mnt (root "/") for a /proc/self/cgroup line,
 * if our cgroup directory is there. */
static bool add_conventional(int version, unsigned ctrls, bool cpuacct, const char *mnt,
                             const char *path)
{
    struct statfs sf;
    if (statfs(mnt, &sf) < 0 ||
        sf.f_type != (version == 2 ? CGROUP2_SUPER_MAGIC : CGROUP_SUPER_MAGIC))
        return false;
    char *own = join_own(mnt, "/", path);
    struct stat st;
    if (stat(own, &st) < 0 || !S_ISDIR(st.st_mode)) {
        free(own);
        return false;
    }
    hiers[nhiers++] = (struct hier){
        .version = version, .ctrls = ctrls, .cpuacct = cpuacct, .mnt = fb_xstrdup(mnt), .own = own};
    return true;
}

/* The fast way, without reading /proc/self/mountinfo (tens of µs in a fresh
 * process): the conventional layout, /sys/fs/cgroup a cgroup2 mount, or a
 * tmpfs with one directory per v1 hierarchy named after its controllers
 * (plus "unified" on hybrid systems), each checked with statfs() and our own
 * cgroup directory checked to exist. false: use mountinfo. (A hierarchy
 * found at the wrong place could only make the limit writes fail, and
 * fail loudly: each file is controller-specific.) */
static bool discover_conventional(const char *self)
{
    struct statfs sf;
    if (statfs("/sys/fs/cgroup", &sf) < 0)
        return false;
    if (sf.f_type == CGROUP2_SUPER_MAGIC) {
        cleanup_free char *path = own_path(self, 2, NULL);
        return path && add_conventional(2, 0, false, "/sys/fs/cgroup", path);
    }
    if (sf.f_type != TMPFS_MAGIC)
        return false;
    for (const char *line = self; *line;) {
        size_t len = strcspn(line, "\n");
        const char *c1 = memchr(line, ':', len);
        const char *c2 = c1 ? memchr(c1 + 1, ':', len - (size_t)(c1 + 1 - line)) : NULL;
        if (!c2)
            return false;
        char ctrls[128];
        size_t cl = (size_t)(c2 - c1 - 1);
        cleanup_free char *path = fb_xstrndup(c2 + 1, len - (size_t)(c2 + 1 - line));
        if (cl >= sizeof ctrls || nhiers >= FB_ARRAY_LEN(hiers))
            return false;
        memcpy(ctrls, c1 + 1, cl);
        ctrls[cl] = 0;
        if (cl == 0) {
            /* "0::/path": the unified hierarchy, if mounted (hybrid). */
            if (statfs("/sys/fs/cgroup/unified", &sf) == 0 && sf.f_type == CGROUP2_SUPER_MAGIC &&
                !add_conventional(2, 0, false, "/sys/fs/cgroup/unified", path))
                return false;
        } else {
            unsigned bits = 0;
            for (int c = 0; c < C_N; c++)
                if (has_token(ctrls, ctrl_name[c]))
                    bits |= BIT(c);
            if (bits) {
                char mnt[160];
                snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", ctrls);
                if (!add_conventional(1, bits, has_token(ctrls, "cpuacct"), mnt, path))
                    return false;
            }
        }
        line += len;
        if (*line)
            line++;
    }
    return true;
}

static void discover(void)
{
    if (discovered)
        return;
    discovered = true;
    char self[4096];
    if (fb_read_file("/proc/self/cgroup", self, sizeof self) < 0)
        return;
    if (!getenv("FLUEBOX_CGROUP_MOUNTINFO") && discover_conventional(self))
        return;
    hiers_reset();
    FILE *f = fopen("/proc/self/mountinfo", "re");
    if (!f)
        return;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0 && nhiers < FB_ARRAY_LEN(hiers)) {
        /* id parent maj:min root mountpoint opts [optional...] - fstype source superopts */
        char *fields[6] = {0};
        char *save = NULL, *tok = strtok_r(line, " \n", &save);
        int i = 0;
        for (; tok && i < 5; i++, tok = strtok_r(NULL, " \n", &save))
            fields[i] = tok;
        while (tok && strcmp(tok, "-"))
            tok = strtok_r(NULL, " \n", &save);
        char *fstype = tok ? strtok_r(NULL, " \n", &save) : NULL;
        char *source = fstype ? strtok_r(NULL, " \n", &save) : NULL;
        char *super = source ? strtok_r(NULL, " \n", &save) : NULL;
        if (i < 5 || !fstype || !super)
            continue;
        struct hier h = {0};
        if (!strcmp(fstype, "cgroup2")) {
            for (size_t k = 0; k < nhiers; k++)
                if (hiers[k].version == 2)
                    goto next; /* the first cgroup2 mount wins */
            h.version = 2;
        } else if (!strcmp(fstype, "cgroup")) {
            for (int c = 0; c < C_N; c++)
                if (has_token(super, ctrl_name[c]))
                    h.ctrls |= BIT(c);
            if (!h.ctrls)
                continue;
            for (size_t k = 0; k < nhiers; k++)
                if (hiers[k].version == 1 && (hiers[k].ctrls & h.ctrls))
                    goto next; /* the same hierarchy mounted twice */
            h.version = 1;
            h.cpuacct = has_token(super, "cpuacct");
        } else {
            continue;
        }
        {
            cleanup_free char *root = unescape_mnt(fields[3]);
            h.mnt = unescape_mnt(fields[4]);
            cleanup_free char *path =
                own_path(self, h.version, h.version == 1 ? ctrl_name[__builtin_ctz(h.ctrls)] : NULL);
            h.own = path ? join_own(h.mnt, root, path) : NULL;
            hiers[nhiers++] = h;
        }
    next:;
    }
    free(line);
    fclose(f);
}

static struct hier *find_v2(void)
{
    for (size_t i = 0; i < nhiers; i++)
        if (hiers[i].version == 2)
            return &hiers[i];
    return NULL;
}

static struct hier *find_v1(int c)
{
    for (size_t i = 0; i < nhiers; i++)
        if (hiers[i].version == 1 && (hiers[i].ctrls & BIT(c)))
            return &hiers[i];
    return NULL;
}

/* ---- helpers ---- */

static void sleep_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
        ;
}

static void add_reason(struct fb_cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void add_reason(struct fb_cgroup *cg, const char *fmt, ...)
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

static void set_cause(struct fb_cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_cause(struct fb_cgroup *cg, const char *fmt, ...)
{
    if (cg->cause[0])
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cg->cause, sizeof cg->cause, fmt, ap);
    va_end(ap);
}

/* The short cause of a failed mkdir/write/attach on cgroupfs. */
static void cause_errno(struct fb_cgroup *cg, int e)
{
    if (e == EACCES || e == EPERM)
        set_cause(cg, "uid %d may not create or join cgroups here (no cgroup delegation)",
                  (int)geteuid());
    else if (e == EROFS)
        set_cause(cg, "the cgroup filesystem is mounted read-only");
    else
        set_cause(cg, "cgroup set-up failed: %s", strerror(e));
}

static void names_of(unsigned bits, char *buf, size_t cap)
{
    size_t o = 0;
    buf[0] = 0;
    for (int c = 0; c < C_N; c++)
        if (bits & BIT(c))
            o += (size_t)snprintf(buf + o, cap - o, "%s%s", o ? "," : "", ctrl_name[c]);
}

/* Is the process that created a fluebox-<pid>-* directory still there? A
 * zombie counts as gone. EPERM means it exists under another uid. */
static bool pid_alive(pid_t pid)
{
    if (pid <= 0)
        return false;
    if (kill(pid, 0) < 0 && errno == ESRCH)
        return false;
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (fb_read_file(path, buf, sizeof buf) < 0)
        return errno != ENOENT;
    const char *rp = strrchr(buf, ')');
    return !(rp && rp[1] == ' ' && (rp[2] == 'Z' || rp[2] == 'X'));
}

/* Remove empty fluebox-<pid>-* directories under parent whose creator is
 * gone (a fluebox that was SIGKILLed). Non-empty ones stay: rmdir refuses. */
static void sweep_parent(const char *parent)
{
    DIR *d = opendir(parent);
    if (!d)
        return;
    /* A session server owns many directories: check each creator once. */
    int seen_pid[8] = {0};
    bool seen_alive[8] = {0};
    size_t nseen = 0;
    struct dirent *e;
    while ((e = readdir(d))) {
        int pid;
        if (e->d_type != DT_DIR || sscanf(e->d_name, "fluebox-%d-", &pid) != 1)
            continue;
        if (pid == getpid())
            continue;
        size_t k = 0;
        while (k < nseen && seen_pid[k] != pid)
            k++;
        if (k == nseen) {
            k = nseen < FB_ARRAY_LEN(seen_pid) ? nseen++ : nseen - 1;
            seen_pid[k] = pid;
            seen_alive[k] = pid_alive(pid);
        }
        if (!seen_alive[k])
            unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

int cg_rmdir_retry(const char *path)
{
    /* A cgroup whose last task has just exited can be busy for a moment. */
    for (int i = 0; i < 200; i++) {
        if (rmdir(path) == 0 || errno == ENOENT)
            return 0;
        if (errno != EBUSY)
            return -1;
        sleep_ms(1);
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
        sleep_ms(1);
    }
}

static void v2_restore(struct hier *h);

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
    /* One of this file's hierarchies (cgroup_at.c has its own): its last run
     * puts back what v2_delegate changed. */
    if (d->h >= hiers && d->h < hiers + nhiers) {
        struct hier *h = &hiers[d->h - hiers];
        if (h->users && !--h->users && h->version == 2 &&
            (h->self_leaf || h->own_added || h->parent_added))
            v2_restore(h);
    }
}

/* ---- limits ---- */

static int write_i64(int fd, const char *file, int64_t v, const char *unlimited)
{
    char buf[32];
    if (v < 0)
        snprintf(buf, sizeof buf, "%s", unlimited);
    else
        snprintf(buf, sizeof buf, "%lld", (long long)v);
    return fb_write_fileat(fd, file, buf);
}

/* v1 memory: limit_in_bytes and, with swap accounting, memsw.limit_in_bytes
 * at the same value (no swap). memsw must stay >= limit at every step, so
 * the order depends on the direction of the change: retry the other way. */
static int v1_memory(struct fb_cgroup *cg, int fd, int64_t mem)
{
    int rc = write_i64(fd, "memory.limit_in_bytes", mem, "-1");
    if (rc < 0 && errno == EINVAL) {
        if (write_i64(fd, "memory.memsw.limit_in_bytes", mem, "-1") < 0)
            return -1;
        rc = write_i64(fd, "memory.limit_in_bytes", mem, "-1");
    }
    if (rc < 0)
        return -1;
    if (write_i64(fd, "memory.memsw.limit_in_bytes", mem, "-1") == 0)
        return 0;
    if (errno != ENOENT)
        return -1;
    /* No swap accounting (swapaccount=0): keep the group out of swap. */
    if (mem > 0 && fb_write_fileat(fd, "memory.swappiness", "0") < 0)
        add_reason(cg, "memory: swap accounting is off and memory.swappiness cannot be set, "
                       "so the sandbox may swap");
    return 0;
}

static int write_cpu(int version, int fd, double cpus)
{
    const long period = 100000; /* µs, the kernel's default */
    long quota = cpus > 0 ? (long)(cpus * (double)period + 0.5) : -1;
    if (quota > 0 && quota < 1000)
        quota = 1000; /* the kernel's minimum */
    char buf[48];
    if (version == 2) {
        if (quota < 0)
            snprintf(buf, sizeof buf, "max %ld", period);
        else
            snprintf(buf, sizeof buf, "%ld %ld", quota, period);
        return fb_write_fileat(fd, "cpu.max", buf);
    }
    snprintf(buf, sizeof buf, "%ld", quota);
    return fb_write_fileat(fd, "cpu.cfs_quota_us", buf);
}

/* Write the limits of the controllers held in d; returns the bits applied. */
unsigned cg_write_limits(struct fb_cgroup *cg, struct cg_dir *d, const struct fb_limits *l)
{
    unsigned ok = 0;
    int v = d->h->version;
    if (d->ctrls & BIT(C_MEM)) {
        int rc;
        if (v == 2) {
            rc = write_i64(d->fd, "memory.max", l->mem, "max");
            /* Swap off. No memory.swap.max means no swap accounting. */
            if (rc == 0 && fb_write_fileat(d->fd, "memory.swap.max", l->mem < 0 ? "max" : "0") < 0 &&
                errno != ENOENT)
                rc = -1;
        } else {
            rc = v1_memory(cg, d->fd, l->mem);
        }
        if (rc == 0)
            ok |= BIT(C_MEM);
        else {
            cause_errno(cg, errno);
            add_reason(cg, "memory: %s: %s", d->path, strerror(errno));
        }
    }
    if (d->ctrls & BIT(C_PIDS)) {
        if (write_i64(d->fd, "pids.max", l->pids, "max") == 0)
            ok |= BIT(C_PIDS);
        else {
            cause_errno(cg, errno);
            add_reason(cg, "pids: %s: %s", d->path, strerror(errno));
        }
    }
    if (d->ctrls & BIT(C_CPU)) {
        if (write_cpu(v, d->fd, l->cpus) == 0)
            ok |= BIT(C_CPU);
        else {
            cause_errno(cg, errno);
            add_reason(cg, "cpu: %s: %s", d->path, strerror(errno));
        }
    }
    return ok;
}

/* ---- creation ---- */

static unsigned seq;

/* The controllers (C_* bits) listed in the cgroup.subtree_control of the v2
 * cgroup at dir; -1 if it cannot be read. */
static int v2_enabled(const char *dir)
{
    char cur[256];
    cleanup_free char *f = fb_xasprintf("%s/cgroup.subtree_control", dir);
    if (fb_read_file(f, cur, sizeof cur) < 0)
        return -1;
    unsigned bits = 0;
    /* cgroup.subtree_control is a space-separated list. */
    for (char *s = cur; *s;) {
        size_t l = strcspn(s, " \n");
        for (int c = 0; c < C_N; c++)
            if (l == strlen(ctrl_name[c]) && !strncmp(s, ctrl_name[c], l))
                bits |= BIT(c);
        s += l;
        s += strspn(s, " \n");
    }
    return (int)bits;
}

/* Write "+memory +pids" (sign '+') or "-memory -pids" (sign '-') for the
 * controllers in bits to the cgroup.subtree_control of the v2 cgroup at dir. */
static int v2_write_control(const char *dir, char sign, unsigned bits)
{
    char want[64];
    size_t o = 0;
    want[0] = 0;
    for (int c = 0; c < C_N; c++)
        if (bits & BIT(c))
            o += (size_t)snprintf(want + o, sizeof want - o, "%s%c%s", o ? " " : "", sign,
                                  ctrl_name[c]);
    cleanup_free char *f = fb_xasprintf("%s/cgroup.subtree_control", dir);
    return fb_write_file(f, want);
}

/* Enable the controllers in bits for the children of the v2 cgroup at dir;
 * *added gets those that were not enabled before. On failure whatever part
 * of the write took effect is disabled again, and errno is the write's. */
static int v2_enable(const char *dir, unsigned bits, unsigned *added)
{
    *added = 0;
    int before = v2_enabled(dir);
    if (before < 0)
        return -1;
    unsigned missing = bits & ~(unsigned)before;
    if (!missing)
        return 0;
    if (v2_write_control(dir, '+', missing) < 0) {
        int e = errno;
        int now = v2_enabled(dir);
        if (now > 0 && ((unsigned)now & missing))
            v2_write_control(dir, '-', (unsigned)now & missing);
        errno = e;
        return -1;
    }
    *added = missing;
    return 0;
}

/* The pids in the v2 cgroup at dir: 0 none, 1 only fluebox, 2 others too;
 * -1 if cgroup.procs cannot be read. */
static int v2_occupants(const char *dir)
{
    char buf[4096];
    cleanup_free char *f = fb_xasprintf("%s/cgroup.procs", dir);
    if (fb_read_file(f, buf, sizeof buf) < 0)
        return -1;
    int n = 0;
    for (char *s = buf; *s;) {
        char *end;
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid != getpid())
            return 2;
        n = 1;
        s = end + strspn(end, "\n");
    }
    return n;
}

/* Is the v2 cgroup at dir the hierarchy's root (which has no cgroup.type)? */
static bool v2_is_root(const char *dir)
{
    cleanup_free char *f = fb_xasprintf("%s/cgroup.type", dir);
    return access(f, F_OK) < 0 && errno == ENOENT;
}

/* Undo what v2_delegate changed in hierarchy h: disable the controllers it
 * enabled (in <own>/fluebox first: a controller a child passes down cannot be
 * disabled above it), move fluebox back into its own cgroup, remove its leaf
 * and the fluebox/ parent if empty. Best effort: what cannot be undone (a
 * concurrent fluebox using the same cgroups) stays, and a later run's sweep
 * removes the leaf once this process is gone. */
static void v2_restore(struct hier *h)
{
    cleanup_free char *parent = fb_xasprintf("%s/fluebox", h->own);
    if (h->parent_added && v2_write_control(parent, '-', h->parent_added) == 0)
        h->parent_added = 0;
    if (h->own_added && !h->parent_added && v2_write_control(h->own, '-', h->own_added) == 0)
        h->own_added = 0;
    if (h->self_leaf && !h->own_added) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        cleanup_free char *procs = fb_xasprintf("%s/cgroup.procs", h->own);
        if (fb_write_file(procs, pid) == 0 && rmdir(h->self_leaf) == 0) {
            free(h->self_leaf);
            h->self_leaf = NULL;
        }
    }
    rmdir(parent); /* only if empty */
}

/* v2: make the controllers in bits available to the children of parent
 * (<own>/fluebox): enabled in own's and parent's cgroup.subtree_control,
 * without ever writing that of a cgroup that holds processes (see the top of
 * this file). */
static int v2_delegate(struct fb_cgroup *cg, struct hier *h, const char *parent, unsigned bits)
{
    unsigned added;
    int have = v2_enabled(h->own);
    if (have < 0) {
        cause_errno(cg, errno);
        add_reason(cg, "cgroup v2: reading %s/cgroup.subtree_control: %s", h->own, strerror(errno));
        return -1;
    }
    if (bits & ~(unsigned)have) {
        int occ = v2_is_root(h->own) ? 0 : v2_occupants(h->own);
        if (occ == 2) {
            set_cause(cg, "fluebox's cgroup v2 holds other processes too, so it cannot pass "
                          "controllers down");
            add_reason(cg, "cgroup v2: %s holds other processes besides fluebox, so it cannot "
                           "pass controllers down (the \"no internal processes\" rule); start "
                           "fluebox in a cgroup of its own, e.g. systemd-run --user --scope -p "
                           "Delegate=yes",
                       h->own);
            errno = EBUSY;
            return -1;
        }
        if (occ == 1) {
            /* Alone here: into a leaf of our own first. */
            cleanup_free char *leaf = fb_xasprintf("%s/fluebox-%d-self", parent, (int)getpid());
            cleanup_free char *procs = fb_xasprintf("%s/cgroup.procs", leaf);
            char pid[16];
            snprintf(pid, sizeof pid, "%d", (int)getpid());
            if ((mkdir(leaf, 0755) < 0 && errno != EEXIST) || fb_write_file(procs, pid) < 0) {
                int e = errno;
                rmdir(leaf);
                errno = e;
                cause_errno(cg, e);
                add_reason(cg, "cgroup v2: moving fluebox into %s: %s", leaf, strerror(e));
                return -1;
            }
            h->self_leaf = fb_steal_ptr(leaf);
        } else if (occ < 0) {
            cause_errno(cg, errno);
            add_reason(cg, "cgroup v2: reading %s/cgroup.procs: %s", h->own, strerror(errno));
            return -1;
        }
        if (v2_enable(h->own, bits, &added) < 0) {
            int e = errno;
            cause_errno(cg, e);
            add_reason(cg, "cgroup v2: enabling controllers in %s/cgroup.subtree_control: %s",
                       h->own, strerror(e));
            if (!h->users)
                v2_restore(h);
            errno = e;
            return -1;
        }
        if (!v2_is_root(h->own))
            h->own_added |= added;
    }
    if (v2_enable(parent, bits, &added) < 0) {
        int e = errno;
        cause_errno(cg, e);
        add_reason(cg, "cgroup v2: enabling controllers in %s/cgroup.subtree_control: %s", parent,
                   strerror(e));
        if (!h->users)
            v2_restore(h);
        errno = e;
        return -1;
    }
    /* Only a fluebox/ parent of our own is put back; one in the root cgroup
     * may serve other fluebox processes at the same time. */
    if (h->self_leaf)
        h->parent_added |= added;
    return 0;
}

/* Create <own>/fluebox/fluebox-PID-SEQ in hierarchy h for the controllers in
 * bits. Returns 0 and fills d, or -1 with the reason recorded. */
static int make_dir(struct fb_cgroup *cg, struct hier *h, unsigned bits, struct cg_dir *d)
{
    char names[32];
    names_of(bits, names, sizeof names);
    memset(d, 0, sizeof *d);
    d->h = h;
    d->fd = d->tasks_fd = -1;
    if (!h->own) {
        set_cause(cg, "fluebox's own cgroup is not visible under %s", h->mnt);
        add_reason(cg, "%s: fluebox's own cgroup is not visible under %s", names, h->mnt);
        return -1;
    }
    d->parent = fb_xasprintf("%s/fluebox", h->own);
    size_t hi = (size_t)(h - hiers);
    if (!(swept & (1u << hi))) {
        swept |= 1u << hi;
        sweep_parent(d->parent);
    }
    /* A concurrent fluebox may remove the (empty) parent between our mkdir
     * of it and of the child: then ENOENT, and we go round again. */
    bool parent_ok = h->version == 1; /* v1: try the child first, the parent is often there */
    for (int attempt = 0;; attempt++) {
        if (!parent_ok) {
            if (mkdir(d->parent, 0755) < 0 && errno != EEXIST)
                goto fail;
            if (h->version == 2 && bits && v2_delegate(cg, h, d->parent, bits) < 0) {
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
    cause_errno(cg, errno);
    add_reason(cg, "%s: cannot create a cgroup under %s: %s", names, d->parent, strerror(errno));
fail_quiet:
    free(d->path);
    d->path = NULL;
    if (d->parent)
        rmdir(d->parent); /* only if empty */
    free(d->parent);
    d->parent = NULL;
    if (h->version == 2 && !h->users && (h->self_leaf || h->own_added || h->parent_added))
        v2_restore(h);
    return -1;
}

void cg_finish_strings(struct fb_cgroup *cg)
{
    names_of(cg->applied, cg->applied_s, sizeof cg->applied_s);
    names_of(cg->wanted & ~cg->applied, cg->not_applied_s, sizeof cg->not_applied_s);
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
static void warn_missing(const struct fb_cgroup *cg)
{
    char fb[96] = "";
    if (cg->fallback)
        snprintf(fb, sizeof fb, "; per process instead: %s%s%s",
                 cg->fallback & BIT(C_MEM) ? "RLIMIT_DATA" : "",
                 (cg->fallback & BIT(C_MEM)) && (cg->fallback & BIT(C_PIDS)) ? ", " : "",
                 cg->fallback & BIT(C_PIDS) ? "RLIMIT_NPROC" : "");
    char key[224];
    snprintf(key, sizeof key, "cgroup %s: %s", cg->not_applied_s, cg->cause[0] ? cg->cause : "?");
    fb_warn_once(key, "warning: limits not applied: %s: %s%s; --require-limits makes this an error "
                 "(said once per boot; --report has it every run; fluebox doctor says how to "
                 "delegate cgroups)",
                 cg->not_applied_s, cg->cause[0] ? cg->cause : cg->reason, fb);
}

/* The controllers fluebox's own v2 cgroup offers (its cgroup.controllers),
 * read once. */
static unsigned v2_controllers(const struct hier *v2)
{
    static unsigned avail;
    static bool read;
    if (read || !v2 || !v2->own)
        return avail;
    read = true;
    char ctl[256] = "";
    cleanup_free char *f = fb_xasprintf("%s/cgroup.controllers", v2->own);
    fb_read_file(f, ctl, sizeof ctl);
    for (char *s = ctl; *s; s += strcspn(s, " \n"), s += strspn(s, " \n"))
        for (int c = 0; c < C_N; c++)
            if (strcspn(s, " \n") == strlen(ctrl_name[c]) &&
                !strncmp(s, ctrl_name[c], strlen(ctrl_name[c])))
                avail |= BIT(c);
    return avail;
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
    discover();
    struct hier *v2 = find_v2();
    return v2 && v2->own && (v2_controllers(v2) & wanted) == wanted;
}

int cgroup_create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err)
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
        set_cause(cg, "cgroups disabled by FLUEBOX_CGROUP=none");
        add_reason(cg, "cgroups disabled by FLUEBOX_CGROUP=none");
    } else if (!force_v1 && !force_v2 && strcmp(mode, "auto")) {
        free(cg);
        return fb_errf(err, FB_EXIT_SETUP, "FLUEBOX_CGROUP=%s: expected auto, v1, v2 or none",
                       mode);
    } else {
        discover();
        /* Which hierarchy holds each controller. */
        struct hier *v2 = force_v1 ? NULL : find_v2();
        unsigned v2_avail = cg->wanted || force_v2 ? v2_controllers(v2) : 0;
        unsigned on_v2 = 0, unavailable = 0;
        struct hier *v1_of[C_N] = {0};
        for (int c = 0; c < C_N; c++) {
            if (!(cg->wanted & BIT(c)))
                continue;
            if (v2_avail & BIT(c))
                on_v2 |= BIT(c);
            else if (!force_v2 && (v1_of[c] = find_v1(c)))
                ;
            else
                unavailable |= BIT(c);
        }
        if (unavailable) {
            char n[32];
            names_of(unavailable, n, sizeof n);
            set_cause(cg, "%s offers the %s controller%s", force_v2 ? "no cgroup2 hierarchy here" :
                          "no usable cgroup hierarchy", n, strchr(n, ',') ? "s" : "");
            if (force_v2 && !v2)
                add_reason(cg, "%s: no cgroup2 hierarchy is mounted", n);
            else if (force_v2 || (v2 && v2->own && !find_v1(__builtin_ctz(unavailable))))
                add_reason(cg, "%s: not available in %s/cgroup.controllers", n,
                           v2 && v2->own ? v2->own : "the cgroup2 hierarchy");
            else
                add_reason(cg, "%s: no cgroup hierarchy has this controller", n);
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
        warn_missing(cg);
    *out = cg;
    return 0;
}

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
    cause_errno(cg, errno);
    add_reason(cg, "joining %s: %s", d->path, strerror(errno));
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
    fb_warn_once(key, "warning: limits not applied: %s: %s (said once per boot; --report has "
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

/* ---- usage ---- */

static int64_t read_i64(int fd, const char *file)
{
    char buf[64];
    if (fb_read_fileat(fd, file, buf, sizeof buf) <= 0)
        return -1;
    char *end;
    long long v = strtoll(buf, &end, 10);
    return end == buf ? -1 : (int64_t)v;
}

/* "key value" lines (memory.events, pids.events, cpu.stat, oom_control). */
static int64_t read_key(int fd, const char *file, const char *key)
{
    char buf[2048];
    if (fb_read_fileat(fd, file, buf, sizeof buf) <= 0)
        return -1;
    size_t kl = strlen(key);
    for (char *s = buf; *s;) {
        if (!strncmp(s, key, kl) && s[kl] == ' ')
            return strtoll(s + kl + 1, NULL, 10);
        s += strcspn(s, "\n");
        if (*s)
            s++;
    }
    return -1;
}

/* cpuacct.stat counts in USER_HZ ticks. */
static int64_t ticks_us(int64_t t)
{
    long hz = sysconf(_SC_CLK_TCK);
    return t < 0 || hz <= 0 ? -1 : t * (1000000 / hz);
}

void cgroup_usage(struct fb_cgroup *cg, struct fb_cg_usage *u)
{
    u->mem_peak = u->mem_current = u->pids_peak = u->cpu_usage_us = u->oom_kills = -1;
    u->pids_max_hits = u->cpu_throttled_us = u->cpu_user_us = u->cpu_system_us = -1;
    u->oom_killed = false;
    for (size_t i = 0; i < cg->ndirs; i++) {
        const struct cg_dir *d = &cg->dirs[i];
        if (d->h->version == 2) {
            /* cpu.stat's usage is there without the cpu controller. */
            u->cpu_usage_us = read_key(d->fd, "cpu.stat", "usage_usec");
            u->cpu_user_us = read_key(d->fd, "cpu.stat", "user_usec");
            u->cpu_system_us = read_key(d->fd, "cpu.stat", "system_usec");
            if (d->ctrls & BIT(C_CPU))
                u->cpu_throttled_us = read_key(d->fd, "cpu.stat", "throttled_usec");
            if (d->ctrls & BIT(C_MEM)) {
                u->mem_peak = read_i64(d->fd, "memory.peak");
                u->mem_current = read_i64(d->fd, "memory.current");
                u->oom_kills = read_key(d->fd, "memory.events", "oom_kill");
            }
            if (d->ctrls & BIT(C_PIDS)) {
                u->pids_peak = read_i64(d->fd, "pids.peak");
                u->pids_max_hits = read_key(d->fd, "pids.events", "max");
            }
            continue;
        }
        if (d->ctrls & BIT(C_MEM)) {
            u->mem_peak = read_i64(d->fd, "memory.max_usage_in_bytes");
            u->mem_current = read_i64(d->fd, "memory.usage_in_bytes");
            u->oom_kills = read_key(d->fd, "memory.oom_control", "oom_kill");
            if (u->oom_kills < 0 && read_key(d->fd, "memory.oom_control", "under_oom") > 0)
                u->oom_kills = 1; /* kernels before 4.13 have no counter */
        }
        if (d->ctrls & BIT(C_PIDS)) {
            u->pids_peak = read_i64(d->fd, "pids.peak"); /* 6.13+ */
            u->pids_max_hits = read_key(d->fd, "pids.events", "max");
        }
        if (d->ctrls & BIT(C_CPU)) {
            int64_t ns = read_key(d->fd, "cpu.stat", "throttled_time");
            u->cpu_throttled_us = ns < 0 ? -1 : ns / 1000;
            if (d->h->cpuacct) {
                ns = read_i64(d->fd, "cpuacct.usage");
                u->cpu_usage_us = ns < 0 ? -1 : ns / 1000;
                u->cpu_user_us = ticks_us(read_key(d->fd, "cpuacct.stat", "user"));
                u->cpu_system_us = ticks_us(read_key(d->fd, "cpuacct.stat", "system"));
            }
        }
    }
    u->oom_killed = u->oom_kills > 0;
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

int cgroup_set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err)
{
    /* Only where a directory of this cgroup holds the controller can a limit
     * be changed, set or lifted; an rlimit fallback set on init cannot change
     * at all. Either way: -1, so that the caller spawns a fresh sandbox. */
    unsigned want = cg_wanted_of(l), held = 0;
    for (size_t i = 0; i < cg->ndirs; i++)
        held |= cg->dirs[i].ctrls;
    unsigned stuck = want & ~held;
    if ((cg->fallback & BIT(C_MEM)) && l->mem != cg->limits.mem)
        stuck |= BIT(C_MEM);
    if ((cg->fallback & BIT(C_PIDS)) && l->pids != cg->limits.pids)
        stuck |= BIT(C_PIDS);
    if (stuck) {
        char n[32];
        names_of(stuck, n, sizeof n);
        return fb_errf(err, FB_EXIT_SETUP,
                       "cannot change the %s limit of this sandbox: its cgroup was made without "
                       "that controller", n);
    }
    char keep_reason[sizeof cg->reason];
    memcpy(keep_reason, cg->reason, sizeof keep_reason);
    cg->reason[0] = 0;
    unsigned ok = 0;
    for (size_t i = 0; i < cg->ndirs; i++)
        if (cg->dirs[i].ctrls)
            ok |= cg_write_limits(cg, &cg->dirs[i], l);
    if (want & ~ok) {
        char n[32];
        names_of(want & ~ok, n, sizeof n);
        fb_errf(err, FB_EXIT_SETUP, "cannot change the %s limit of this sandbox: %s", n,
                cg->reason);
        for (size_t i = 0; i < cg->ndirs; i++) /* best effort: back as it was */
            if (cg->dirs[i].ctrls)
                cg_write_limits(cg, &cg->dirs[i], &cg->limits);
        memcpy(cg->reason, keep_reason, sizeof keep_reason);
        return -1;
    }
    cg->limits = *l;
    cg->wanted = want;
    cg->applied = want;
    if (!cg->reason[0])
        memcpy(cg->reason, keep_reason, sizeof keep_reason);
    cg_finish_strings(cg);
    return 0;
}

void cgroup_destroy(struct fb_cgroup *cg)
{
    if (!cg)
        return;
    for (size_t i = 0; i < cg->ndirs; i++)
        cg_dir_remove(&cg->dirs[i]);
    free(cg);
}

void cgroup_sweep_stale(void)
{
    discover();
    for (size_t i = 0; i < nhiers; i++) {
        if (!hiers[i].own || (swept & (1u << i)))
            continue;
        swept |= 1u << i;
        cleanup_free char *parent = fb_xasprintf("%s/fluebox", hiers[i].own);
        sweep_parent(parent);
        rmdir(parent); /* only if empty */
    }
}
