/* report.h — the result of a run and its JSON report (--report FILE|-).
 *
 * supervise.c fills a struct fb_result; report.c turns it into one JSON
 * object, the format documented field by field in the README. */
#ifndef FB_REPORT_H
#define FB_REPORT_H

#include "cgroup.h"
#include "policy.h"

struct fb_net_summary {
    int64_t dns_queries, dns_allowed, dns_denied;
    int64_t conns, conns_allowed, conns_denied;
    int64_t bytes_out, bytes_in;
};

struct fb_result {
    int exit_code;        /* what fluebox exits with */
    int status_code;      /* command's exit status, -1 if killed by a signal */
    int signal;           /* signal that killed the command, 0 if none */
    bool timed_out;
    bool oom_killed;
    bool setup_failed;    /* the sandbox never ran the command */
    char error[512];      /* set when setup_failed */
    int64_t wall_ms;
    int64_t user_ms, sys_ms;
    int64_t max_rss_kb;   /* from rusage (largest single process) */
    struct fb_cg_usage cg;
    const char *cg_backend;
    const char *limits_applied;
    const char *limits_not_applied;
    bool has_net;
    struct fb_net_summary net;
    int64_t seccomp_denials;  /* -1 when not counted */
};

/* Write the report for r under policy p to path ("-" = stderr). */
int report_write(const char *path, const struct fb_policy *p, const struct fb_result *r,
                 struct fb_err *err);

#endif
