/* cgroup_limits.c — what goes into and comes out of a run's controller
 * files: the memory, pids and cpu limits written in v1 or v2 form (at
 * creation, and changed in place for sessions taken from the warm pool),
 * and the usage counters read back for the report. */
#include "cgroup_int.h"

#include <string.h>

static int write_i64(int fd, const char *file, int64_t v, const char *unlimited)
{
    char buf[32];
    if (v < 0)
        snprintf(buf, sizeof buf, "%s", unlimited);
    else
        snprintf(buf, sizeof buf, "%lld", (long long)v);
    return fb_write_fileat(fd, file, buf);
}

/* The most a v1 memory cgroup's sockets may hold (memory.kmem.tcp). */
#define V1_TCP_MAX (64LL << 20)

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
    /* Socket buffers are charged to a v1 memory cgroup only once it has a
     * TCP limit (v2 charges them with the rest): a quarter of --mem, at
     * most V1_TCP_MAX, so connections the sandbox never reads cannot pin
     * host memory beyond it (past it TCP slows down: the kernel drops what
     * it cannot queue and the peer sends again). Kernels without the file
     * (or that refuse it) keep the old way. */
    int64_t tcp = mem > 0 ? (mem / 4 < V1_TCP_MAX ? mem / 4 : V1_TCP_MAX) : -1;
    write_i64(fd, "memory.kmem.tcp.limit_in_bytes", tcp, "-1");
    if (write_i64(fd, "memory.memsw.limit_in_bytes", mem, "-1") == 0)
        return 0;
    if (errno != ENOENT)
        return -1;
    /* No swap accounting (swapaccount=0): keep the group out of swap. */
    if (mem > 0 && fb_write_fileat(fd, "memory.swappiness", "0") < 0)
        cg_add_reason(cg, "memory: swap accounting is off and memory.swappiness cannot be set, "
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
            cg_cause_errno(cg, errno);
            cg_add_reason(cg, "memory: %s: %s", d->path, strerror(errno));
        }
    }
    if (d->ctrls & BIT(C_PIDS)) {
        if (write_i64(d->fd, "pids.max", l->pids, "max") == 0)
            ok |= BIT(C_PIDS);
        else {
            cg_cause_errno(cg, errno);
            cg_add_reason(cg, "pids: %s: %s", d->path, strerror(errno));
        }
    }
    if (d->ctrls & BIT(C_CPU)) {
        if (write_cpu(v, d->fd, l->cpus) == 0)
            ok |= BIT(C_CPU);
        else {
            cg_cause_errno(cg, errno);
            cg_add_reason(cg, "cpu: %s: %s", d->path, strerror(errno));
        }
    }
    return ok;
}

static int set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err);

int cgroup_set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err)
{
    bool parked = cg_unpark(cg);
    int rc = set_limits(cg, l, err);
    cg_repark(cg, parked);
    return rc;
}

static int set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err)
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
        cg_names_of(stuck, n, sizeof n);
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
        cg_names_of(want & ~ok, n, sizeof n);
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

int64_t cgroup_oom_kills(struct fb_cgroup *cg)
{
    bool parked = cg_unpark(cg);
    int64_t n = -1;
    for (size_t i = 0; cg && i < cg->ndirs; i++) {
        const struct cg_dir *d = &cg->dirs[i];
        if (!(d->ctrls & BIT(C_MEM)))
            continue;
        n = d->h->version == 2 ? read_key(d->fd, "memory.events", "oom_kill")
                               : read_key(d->fd, "memory.oom_control", "oom_kill");
        break;
    }
    cg_repark(cg, parked);
    return n;
}

static void usage(struct fb_cgroup *cg, struct fb_cg_usage *u);

void cgroup_usage(struct fb_cgroup *cg, struct fb_cg_usage *u)
{
    bool parked = cg_unpark(cg);
    usage(cg, u);
    cg_repark(cg, parked);
}

static void usage(struct fb_cgroup *cg, struct fb_cg_usage *u)
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
