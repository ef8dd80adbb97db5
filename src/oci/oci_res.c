/* oci_res.c — linux.resources (create) and `update --resources` into the
 * files of the container's cgroup (cgroup_at.c): memory (limit, swap,
 * reservation, swappiness, disableOOMKiller), cpu (shares, quota, period,
 * realtime, cpus, mems) and pids, in the names of cgroup v1 or v2,
 * whichever holds the controller. What the spec does not mention is left
 * as it is. */
#include "oci.h"

#include "cgroup.h"

#include <string.h>

static bool num(json_t *o, const char *k, int64_t *v)
{
    json_t *j = json_object_get(o, k);
    if (json_is_integer(j)) {
        *v = json_integer_value(j);
        return true;
    }
    if (json_is_real(j)) { /* not from oci_json_load, which reads those as -1 */
        *v = -1;
        return true;
    }
    return false;
}

static int put(struct fb_cgroup *cg, const char *ctrl, const char *file, int64_t v,
               struct fb_err *err)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    return cgroup_set_file(cg, ctrl, file, buf, err);
}

static int put_max(struct fb_cgroup *cg, const char *ctrl, const char *file, int64_t v,
                   struct fb_err *err)
{
    if (v < 0)
        return cgroup_set_file(cg, ctrl, file, "max", err);
    return put(cg, ctrl, file, v, err);
}

static int memory(struct fb_cgroup *cg, json_t *m, struct fb_err *err)
{
    int64_t limit = 0, swap = 0, v;
    bool has_limit = num(m, "limit", &limit), has_swap = num(m, "swap", &swap);
    if (has_limit && limit == 0)
        has_limit = false;
    if (cgroup_version_of(cg, "memory") == 2) {
        if (has_limit && put_max(cg, "memory", "memory.max", limit, err) < 0)
            return -1;
        if (has_swap) {
            /* v2 counts swap alone; the spec's swap is memory + swap. */
            int64_t s = swap < 0 ? -1 : (has_limit && limit > 0 ? swap - limit : swap);
            if (s < -1)
                return fb_errf(err, FB_EXIT_SETUP, "linux.resources.memory.swap is below the "
                               "limit");
            if (put_max(cg, "memory", "memory.swap.max", s, err) < 0)
                return -1;
        }
        if (num(m, "reservation", &v) && put_max(cg, "memory", "memory.low", v, err) < 0)
            return -1;
        return 0;
    }
    if (cgroup_version_of(cg, "memory") != 1)
        return has_limit ? fb_errf(err, FB_EXIT_SETUP, "no memory cgroup") : 0;
    if (has_limit) {
        /* memsw >= limit at every step: grow memsw first when it is below. */
        if (put(cg, "memory", "memory.limit_in_bytes", limit, err) < 0) {
            struct fb_err e2;
            if (put(cg, "memory", "memory.memsw.limit_in_bytes", has_swap ? swap : limit, &e2) < 0 ||
                put(cg, "memory", "memory.limit_in_bytes", limit, err) < 0)
                return -1;
        }
    }
    if (has_swap || has_limit) {
        struct fb_err e2;
        char cur[32];
        /* No memsw file: no swap accounting on this kernel; nothing to do. */
        if (cgroup_get_file(cg, "memory", "memory.memsw.limit_in_bytes", cur, sizeof cur) >= 0 &&
            put(cg, "memory", "memory.memsw.limit_in_bytes", has_swap ? swap : limit, &e2) < 0 &&
            has_swap)
            return fb_errf(err, FB_EXIT_SETUP, "linux.resources.memory.swap: %s", e2.msg);
    }
    if (num(m, "reservation", &v) && put(cg, "memory", "memory.soft_limit_in_bytes", v, err) < 0)
        return -1;
    if (num(m, "swappiness", &v) && v >= 0 && v <= 100 &&
        put(cg, "memory", "memory.swappiness", v, err) < 0)
        return -1;
    if (json_is_true(json_object_get(m, "disableOOMKiller")) &&
        cgroup_set_file(cg, "memory", "memory.oom_control", "1", err) < 0)
        return -1;
    return 0;
}

static int cpu(struct fb_cgroup *cg, json_t *c, struct fb_err *err)
{
    int64_t v, quota = 0, period = 0;
    bool hq = num(c, "quota", &quota), hp = num(c, "period", &period);
    const char *s;
    if ((s = json_string_value(json_object_get(c, "cpus"))) && *s &&
        cgroup_set_file(cg, "cpuset", "cpuset.cpus", s, err) < 0)
        return -1;
    if ((s = json_string_value(json_object_get(c, "mems"))) && *s &&
        cgroup_set_file(cg, "cpuset", "cpuset.mems", s, err) < 0)
        return -1;
    if (cgroup_version_of(cg, "cpu") == 2) {
        if (num(c, "shares", &v) && v > 0) {
            int64_t w = 1 + ((v - 2) * 9999) / 262142;
            if (put(cg, "cpu", "cpu.weight", w < 1 ? 1 : w > 10000 ? 10000 : w, err) < 0)
                return -1;
        }
        if (hq || hp) {
            char buf[64];
            if (hq && quota > 0)
                snprintf(buf, sizeof buf, "%lld %lld", (long long)quota,
                         (long long)(hp && period > 0 ? period : 100000));
            else
                snprintf(buf, sizeof buf, "max %lld", (long long)(hp && period > 0 ? period : 100000));
            if (cgroup_set_file(cg, "cpu", "cpu.max", buf, err) < 0)
                return -1;
        }
        return 0;
    }
    if (num(c, "shares", &v) && v > 0 && put(cg, "cpu", "cpu.shares", v, err) < 0)
        return -1;
    if (hp && period > 0 && put(cg, "cpu", "cpu.cfs_period_us", period, err) < 0)
        return -1;
    if (hq && put(cg, "cpu", "cpu.cfs_quota_us", quota > 0 ? quota : -1, err) < 0)
        return -1;
    if (num(c, "realtimePeriod", &v) && v > 0 && put(cg, "cpu", "cpu.rt_period_us", v, err) < 0)
        return -1;
    if (num(c, "realtimeRuntime", &v) && v != 0 &&
        put(cg, "cpu", "cpu.rt_runtime_us", v, err) < 0)
        return -1;
    return 0;
}

int oci_resources_apply(struct fb_cgroup *cg, json_t *res, struct fb_err *err)
{
    if (!json_is_object(res))
        return 0;
    json_t *m = json_object_get(res, "memory");
    if (json_is_object(m) && memory(cg, m, err) < 0)
        return -1;
    json_t *c = json_object_get(res, "cpu");
    if (json_is_object(c) && cpu(cg, c, err) < 0)
        return -1;
    int64_t v;
    json_t *p = json_object_get(res, "pids");
    if (json_is_object(p) && num(p, "limit", &v) &&
        put_max(cg, "pids", "pids.max", v > 0 ? v : -1, err) < 0)
        return -1;
    return 0;
}
