/* cgroup.c — PLACEHOLDER until the cgroup backends land: applies nothing and
 * says so. */
#include "cgroup.h"

#include <string.h>

struct fb_cgroup {
    char not_applied[64];
};

int cgroup_create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err)
{
    (void)err;
    struct fb_cgroup *cg = fb_xcalloc(1, sizeof *cg);
    snprintf(cg->not_applied, sizeof cg->not_applied, "%s%s%s", p->limits.mem > 0 ? "memory," : "",
             p->limits.pids > 0 ? "pids," : "", p->limits.cpus > 0 ? "cpu," : "");
    size_t l = strlen(cg->not_applied);
    if (l)
        cg->not_applied[l - 1] = 0;
    *out = cg;
    return 0;
}
int cgroup_clone_fd(const struct fb_cgroup *cg) { (void)cg; return -1; }
int cgroup_attach(struct fb_cgroup *cg, pid_t pid, struct fb_err *err) { (void)cg; (void)pid; (void)err; return 0; }
void cgroup_usage(struct fb_cgroup *cg, struct fb_cg_usage *u)
{
    (void)cg;
    u->mem_peak = u->mem_current = u->pids_peak = u->cpu_usage_us = u->oom_kills = -1;
    u->oom_killed = false;
}
const char *cgroup_applied(const struct fb_cgroup *cg) { (void)cg; return ""; }
const char *cgroup_not_applied(const struct fb_cgroup *cg) { return cg->not_applied; }
const char *cgroup_backend(const struct fb_cgroup *cg) { (void)cg; return "none"; }
int cgroup_set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err) { (void)cg; (void)l; (void)err; return 0; }
void cgroup_destroy(struct fb_cgroup *cg) { free(cg); }
void cgroup_sweep_stale(void) {}
