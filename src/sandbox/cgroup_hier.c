/* cgroup_hier.c — the cgroup hierarchies cgroup.c can use (found once per
 * process: their mounts and fluebox's own cgroup in each), and the sweep of
 * the fluebox-<pid>-* directories a SIGKILLed fluebox left under
 * <own>/fluebox.
 *
 * Finding the hierarchies: the conventional /sys/fs/cgroup layout is checked
 * with statfs() (discover_conventional); anything else is read from
 * /proc/self/mountinfo, which costs tens of µs more in a fresh process.
 * FLUEBOX_CGROUP_MOUNTINFO=1 forces the latter (tests).
 *
 * The state here is process-wide: used from one thread at a time (see the
 * top of cgroup.c). */
#include "cgroup_int.h"
#include "mountinfo.h"

#include <dirent.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/vfs.h>

const char *const cg_ctrl_name[C_N] = {"memory", "pids", "cpu"};

static struct hier hiers[6];
static size_t nhiers;
static bool discovered;
static unsigned swept; /* bit per hiers[] index: stale entries already swept */

bool cg_has_token(const char *list, const char *tok)
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
                                          : (cl > 0 && cg_has_token(ctrls, ctrl));
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
                if (cg_has_token(ctrls, cg_ctrl_name[c]))
                    bits |= BIT(c);
            if (bits) {
                char mnt[160];
                snprintf(mnt, sizeof mnt, "/sys/fs/cgroup/%s", ctrls);
                if (!add_conventional(1, bits, cg_has_token(ctrls, "cpuacct"), mnt, path))
                    return false;
            }
        }
        line += len;
        if (*line)
            line++;
    }
    return true;
}

static void discover(void);

void cg_discover(void)
{
    /* Once per process, whichever thread asks first. */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&mu);
    if (!discovered) {
        discovered = true;
        discover();
    }
    pthread_mutex_unlock(&mu);
}

static void discover(void)
{
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
        struct mountinfo_ent e;
        if (!mountinfo_split(line, &e))
            continue;
        const char *fstype = e.fstype, *super = e.super;
        struct hier h = {0};
        if (!strcmp(fstype, "cgroup2")) {
            for (size_t k = 0; k < nhiers; k++)
                if (hiers[k].version == 2)
                    goto next; /* the first cgroup2 mount wins */
            h.version = 2;
        } else if (!strcmp(fstype, "cgroup")) {
            for (int c = 0; c < C_N; c++)
                if (cg_has_token(super, cg_ctrl_name[c]))
                    h.ctrls |= BIT(c);
            if (!h.ctrls)
                continue;
            for (size_t k = 0; k < nhiers; k++)
                if (hiers[k].version == 1 && (hiers[k].ctrls & h.ctrls))
                    goto next; /* the same hierarchy mounted twice */
            h.version = 1;
            h.cpuacct = cg_has_token(super, "cpuacct");
        } else {
            continue;
        }
        {
            cleanup_free char *root = mountinfo_unescape(e.root);
            h.mnt = mountinfo_unescape(e.mnt);
            cleanup_free char *path = own_path(
                self, h.version, h.version == 1 ? cg_ctrl_name[__builtin_ctz(h.ctrls)] : NULL);
            h.own = path ? join_own(h.mnt, root, path) : NULL;
            hiers[nhiers++] = h;
        }
    next:;
    }
    free(line);
    fclose(f);
}

struct hier *cg_find_v2(void)
{
    for (size_t i = 0; i < nhiers; i++)
        if (hiers[i].version == 2)
            return &hiers[i];
    return NULL;
}

struct hier *cg_find_v1(int c)
{
    for (size_t i = 0; i < nhiers; i++)
        if (hiers[i].version == 1 && (hiers[i].ctrls & BIT(c)))
            return &hiers[i];
    return NULL;
}

/* ---- what a SIGKILLed fluebox left ---- */

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

/* Is pid on its way out: exiting (PF_EXITING in /proc/PID/stat's flags),
 * SIGKILL pending, or gone already? */
static bool task_dying(long pid)
{
    char path[64], buf[4096]; /* status: ShdPnd is ~650 bytes in, after Groups */
    snprintf(path, sizeof path, "/proc/%ld/stat", pid);
    if (fb_read_file(path, buf, sizeof buf) < 0)
        return errno == ENOENT || errno == ESRCH;
    /* After the ")": state ppid pgrp session tty_nr tpgid flags. */
    const char *s = strrchr(buf, ')');
    unsigned long flags = 0;
    if (s && sscanf(s + 1, " %*c %*d %*d %*d %*d %*d %lu", &flags) == 1 && (flags & 0x4))
        return true;
    snprintf(path, sizeof path, "/proc/%ld/status", pid);
    if (fb_read_file(path, buf, sizeof buf) < 0)
        return errno == ENOENT || errno == ESRCH;
    static const char *const pend[] = {"\nShdPnd:", "\nSigPnd:"};
    for (size_t i = 0; i < FB_ARRAY_LEN(pend); i++) {
        const char *l = strstr(buf, pend[i]);
        if (l && (strtoull(l + strlen(pend[i]), NULL, 16) & (1ull << (SIGKILL - 1))))
            return true;
    }
    return false;
}

/* Remove the stale directory name under dirfd (its creator is gone), with
 * what it holds. Its sandbox dies with its supervisor, but not at once:
 * the next fluebox can come while the last tasks are still exiting, and
 * rmdir then says EBUSY. That is waited out (up to about half a second)
 * while the tasks still listed are dying (exiting, or SIGKILL pending); one
 * that does not start dying within about 100 ms keeps the directory.
 * Nothing is killed here: the pid in a name may be of another pid
 * namespace's fluebox. Sub-cgroups a sandbox made go first. */
static void remove_stale(int dirfd, const char *name, int depth)
{
    int live_rounds = 0;
    for (int round = 0; round < 500; round++) {
        if (unlinkat(dirfd, name, AT_REMOVEDIR) == 0 || errno != EBUSY || depth > 8)
            return;
        int fd = openat(dirfd, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
            return;
        char buf[4096];
        ssize_t n = fb_read_fileat(fd, "cgroup.procs", buf, sizeof buf);
        bool listed = false, live = false;
        for (char *s = buf; n > 0 && *s && !live;) {
            long pid = strtol(s, &s, 10);
            listed = true;
            live = pid <= 0 || !task_dying(pid);
            while (*s == '\n')
                s++;
        }
        if (!listed && round == 0) {
            /* Empty but busy: sub-cgroups. */
            int sub = dup(fd);
            DIR *d = sub >= 0 ? fdopendir(sub) : NULL;
            struct dirent *e;
            while (d && (e = readdir(d)))
                if (e->d_type == DT_DIR && strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                    remove_stale(fd, e->d_name, depth + 1);
            if (d)
                closedir(d);
            else if (sub >= 0)
                close(sub);
        }
        close(fd);
        /* Nothing listed yet still busy after the sub-cgroups were tried,
         * or a task not dying for 100 rounds: it stays. (A task can be
         * listed a moment before it is told to die: the pid namespace's
         * init leaves first, then kills the rest.) */
        if (n < 0 || (!listed && round > 0) || (live && ++live_rounds > 100))
            return;
        cg_sleep_ms(1);
    }
}

/* Remove the fluebox-<pid>-* directories under parent whose creator is
 * gone (a fluebox that was SIGKILLed). */
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
            remove_stale(dirfd(d), e->d_name, 0);
    }
    closedir(d);
}

/* Sweep parent (<own>/fluebox of h) the first time this process uses h. */
void cg_sweep_once(const struct hier *h, const char *parent)
{
    size_t hi = (size_t)(h - hiers);
    if (!(swept & (1u << hi))) {
        swept |= 1u << hi;
        sweep_parent(parent);
    }
}

struct hier *cg_own_hier(const struct hier *h)
{
    if (h >= hiers && h < hiers + nhiers)
        return &hiers[h - hiers];
    return NULL;
}

void cgroup_sweep_stale(void)
{
    cg_discover();
    for (size_t i = 0; i < nhiers; i++) {
        if (!hiers[i].own || (swept & (1u << i)))
            continue;
        swept |= 1u << i;
        cleanup_free char *parent = fb_xasprintf("%s/fluebox", hiers[i].own);
        sweep_parent(parent);
        rmdir(parent); /* only if empty */
    }
}
