/* report.h — the result of a run and its JSON report (--report FILE|-).
 *
 * supervise.c fills a struct fb_result; report.c turns it into one JSON
 * object, the format documented field by field in docs/report.md. */
#ifndef FB_REPORT_H
#define FB_REPORT_H

#include "cgroup.h"
#include "policy.h"
#include "seccomp.h"

#define FB_NET_NOTE_MAX 3 /* names shown in the note on what was denied */

struct fb_net_summary {
    enum fb_net_mode mode;
    int64_t dns_queries, dns_allowed, dns_denied;
    int64_t conns, conns_allowed, conns_denied;
    int64_t bytes_out, bytes_in;
    /* The relay's kernel buffers (socket queues and pipes): most held at
     * once (as measured), and the budget they are kept under. */
    int64_t relay_peak, relay_budget;
    /* --net-log: events counted in aggregate lines instead of their own */
    int64_t dns_aggregated, conns_aggregated;
    /* What the allowlist refused that --allow-net could allow: names looked
     * up that are not on it, connections to a name or port not on it. The first
     * distinct ones are kept for the note at exit (n counts up to MAX + 1:
     * more than shown). */
    int64_t names_denied, conns_refused; /* distinct names; connections */
    bool names_denied_more;              /* more names than counted */
    char denied_names[FB_NET_NOTE_MAX][256];
    int ndenied_names;
    char refused[FB_NET_NOTE_MAX][264]; /* "name:port" */
    int nrefused;
    /* Inspected hosts (docs/secrets.md): requests seen, refused (403),
     * with a secret swapped in; upstream TLS that did not verify. */
    int64_t http_requests, http_denied, http_injected, tls_verify_failed;
};

struct fb_result {
    int exit_code;        /* what fluebox exits with */
    int status_code;      /* command's exit status, -1 if killed by a signal */
    int signal;           /* signal that killed the command, 0 if none */
    bool timed_out;
    int end_signal;       /* SIGTERM/SIGINT/SIGHUP fluebox forwarded, when the sandbox
                             then had to be killed after the grace period; else 0 */
    bool oom_killed;
    bool setup_failed;    /* the sandbox never ran the command */
    char error[512];      /* set when setup_failed */
    int64_t wall_ms;
    int64_t user_ms, sys_ms;
    int64_t max_rss_kb;   /* from rusage (largest single process) */
    int64_t disk_used;    /* bytes in the scratch space at the end; -1 unknown */
    /* From the cgroup (report_take_cgroup); copies, so they outlive it. */
    struct fb_cg_usage cg;
    char cg_backend[8];          /* "v1", "v2", "v1+v2", "none"; "" = no cgroup wanted */
    char limits_applied[32];     /* "memory,pids,cpu" */
    char limits_not_applied[32];
    char limits_fallback[64];    /* "memory:RLIMIT_DATA,pids:RLIMIT_NPROC" */
    char limits_reason[400];     /* why something was not applied */
    bool has_net;
    struct fb_net_summary net;
    int64_t seccomp_denials;  /* -1 when not counted */
    struct fb_sc_report seccomp; /* --seccomp-log / learn: what the supervisor saw (scnotify.c) */
};

/* Copy what the cgroup measured and which limits it holds into r. Call it
 * after the sandbox's init has been reaped and before cgroup_destroy().
 * cg may be NULL (no cgroup limit was asked for): the fields say "unknown". */
void report_take_cgroup(struct fb_result *r, struct fb_cgroup *cg);

/* Write the report for r under policy p to path ("-" = stderr). The format
 * is documented field by field in docs/report.md. */
int report_write(const char *path, const struct fb_policy *p, const struct fb_result *r,
                 struct fb_err *err);

#endif
