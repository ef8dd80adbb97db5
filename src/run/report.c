/* report.c — the JSON run report (--report FILE|-): one object per run,
 * written at exit. Every field is documented in docs/report.md; a field is
 * never left out, it is null when its value is not known on this machine
 * (no cgroup, an older kernel), so consumers can rely on the shape. */
#include "report.h"

#include "landlock.h"
#include "scnotify.h"
#include "toolchain.h"

#include <fcntl.h>
#include <jansson.h>
#include <signal.h>
#include <string.h>

#define REPORT_VERSION 1

static json_t *opt_int(int64_t v) { return v < 0 ? json_null() : json_integer(v); }
static json_t *opt_ms(int64_t us) { return us < 0 ? json_null() : json_integer(us / 1000); }

void report_take_cgroup(struct fb_result *r, struct fb_cgroup *cg)
{
    struct fb_cg_usage *u = &r->cg;
    u->mem_peak = u->mem_current = u->pids_peak = u->cpu_usage_us = u->oom_kills = -1;
    u->pids_max_hits = u->cpu_throttled_us = u->cpu_user_us = u->cpu_system_us = -1;
    u->oom_killed = false;
    r->cg_backend[0] = r->limits_applied[0] = r->limits_not_applied[0] = 0;
    r->limits_fallback[0] = r->limits_reason[0] = 0;
    if (!cg)
        return;
    cgroup_usage(cg, u);
    snprintf(r->cg_backend, sizeof r->cg_backend, "%s", cgroup_backend(cg));
    snprintf(r->limits_applied, sizeof r->limits_applied, "%s", cgroup_applied(cg));
    snprintf(r->limits_not_applied, sizeof r->limits_not_applied, "%s", cgroup_not_applied(cg));
    snprintf(r->limits_fallback, sizeof r->limits_fallback, "%s", cgroup_fallbacks(cg));
    snprintf(r->limits_reason, sizeof r->limits_reason, "%s", cgroup_reason(cg));
}

static bool in_list(const char *list, const char *name)
{
    size_t nl = strlen(name);
    for (const char *s = list; *s;) {
        size_t l = strcspn(s, ",");
        if (l == nl && !strncmp(s, name, nl))
            return true;
        s += l + (s[l] == ',');
    }
    return false;
}

/* The effective limits, null = unlimited. */
static json_t *limits_obj(const struct fb_limits *l)
{
    json_t *o = json_object();
    json_object_set_new(o, "memory_bytes", opt_int(l->mem));
    json_object_set_new(o, "cpus", l->cpus > 0 ? json_real(l->cpus) : json_null());
    json_object_set_new(o, "pids", opt_int(l->pids));
    json_object_set_new(o, "disk_bytes", opt_int(l->disk));
    json_object_set_new(o, "timeout_ms", opt_int(l->timeout_ms));
    json_object_set_new(o, "nofile", opt_int(l->nofile));
    json_object_set_new(o, "fsize_bytes", opt_int(l->fsize));
    return o;
}

/* Which of the limits that are set are enforced, which are not. memory,
 * pids and cpu come from the cgroup; the others are mount options and
 * rlimits that fluebox always applies (a failure there fails the set-up). */
static void applied_lists(const struct fb_policy *p, const struct fb_result *r, json_t *applied,
                          json_t *missing)
{
    const struct fb_limits *l = &p->limits;
    static const char *const cg_names[] = {"memory", "cpu", "pids"};
    bool cg_set[] = {l->mem > 0, l->cpus > 0, l->pids > 0};
    for (size_t i = 0; i < FB_ARRAY_LEN(cg_names); i++) {
        if (!cg_set[i])
            continue;
        /* Set-up failed before the cgroup existed: neither. */
        if (in_list(r->limits_applied, cg_names[i]))
            json_array_append_new(applied, json_string(cg_names[i]));
        else if (!r->setup_failed || in_list(r->limits_not_applied, cg_names[i]))
            json_array_append_new(missing, json_string(cg_names[i]));
    }
    if (r->setup_failed)
        return;
    if (l->disk > 0) /* tmpfs sizes: no tmpfs under --isolation landlock */
        json_array_append_new(p->isolation == FB_ISO_LANDLOCK ? missing : applied,
                              json_string("disk"));
    if (l->timeout_ms > 0)
        json_array_append_new(applied, json_string("timeout"));
    if (l->nofile > 0)
        json_array_append_new(applied, json_string("nofile"));
    if (l->fsize > 0)
        json_array_append_new(applied, json_string("fsize"));
}

static json_t *fallback_obj(const char *list)
{
    /* "memory:RLIMIT_DATA,pids:RLIMIT_NPROC" -> {"memory":"RLIMIT_DATA",...} */
    json_t *o = json_object();
    for (const char *s = list; *s;) {
        size_t l = strcspn(s, ",");
        const char *colon = memchr(s, ':', l);
        if (colon) {
            char key[32];
            size_t kl = (size_t)(colon - s) < sizeof key ? (size_t)(colon - s) : sizeof key - 1;
            memcpy(key, s, kl);
            key[kl] = 0;
            json_object_set_new(o, key, json_stringn(colon + 1, l - (size_t)(colon + 1 - s)));
        }
        s += l + (s[l] == ',');
    }
    return o;
}

static json_t *network_obj(const struct fb_result *r)
{
    if (!r->has_net)
        return json_null();
    const struct fb_net_summary *n = &r->net;
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(n->mode == FB_NET_NONE ? "none" : "allow"));
    json_object_set_new(o, "dns_queries", json_integer(n->dns_queries));
    json_object_set_new(o, "dns_allowed", json_integer(n->dns_allowed));
    json_object_set_new(o, "dns_denied", json_integer(n->dns_denied));
    json_object_set_new(o, "connections", json_integer(n->conns));
    json_object_set_new(o, "connections_allowed", json_integer(n->conns_allowed));
    json_object_set_new(o, "connections_denied", json_integer(n->conns_denied));
    json_object_set_new(o, "bytes_out", json_integer(n->bytes_out));
    json_object_set_new(o, "bytes_in", json_integer(n->bytes_in));
    json_object_set_new(o, "relay_buffer_peak_bytes", json_integer(n->relay_peak));
    json_object_set_new(o, "relay_buffer_budget_bytes", json_integer(n->relay_budget));
    json_object_set_new(o, "dns_aggregated", json_integer(n->dns_aggregated));
    json_object_set_new(o, "connections_aggregated", json_integer(n->conns_aggregated));
    json_object_set_new(o, "names_denied", json_integer(n->names_denied));
    json_object_set_new(o, "connections_refused", json_integer(n->conns_refused));
    json_object_set_new(o, "http_requests", json_integer(n->http_requests));
    json_object_set_new(o, "http_denied", json_integer(n->http_denied));
    json_object_set_new(o, "http_secrets_injected", json_integer(n->http_injected));
    json_object_set_new(o, "tls_verify_failed", json_integer(n->tls_verify_failed));
    return o;
}

static json_t *report_json(const struct fb_policy *p, const struct fb_result *r)
{
    json_t *o = json_object();
    json_object_set_new(o, "report_version", json_integer(REPORT_VERSION));
    /* How it ended. */
    json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    json_object_set_new(o, "status", r->status_code >= 0 ? json_integer(r->status_code) : json_null());
    json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
    const char *abbrev = r->signal ? sigabbrev_np(r->signal) : NULL;
    char signame[32];
    snprintf(signame, sizeof signame, "SIG%s", abbrev ? abbrev : "");
    json_object_set_new(o, "signal_name", abbrev ? json_string(signame) : json_null());
    json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
    const char *eabbrev = r->end_signal ? sigabbrev_np(r->end_signal) : NULL;
    char endname[32];
    snprintf(endname, sizeof endname, "SIG%s", eabbrev ? eabbrev : "");
    json_object_set_new(o, "killed_after_signal", eabbrev ? json_string(endname) : json_null());
    json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
    json_object_set_new(o, "oom_kills", opt_int(r->cg.oom_kills));
    json_object_set_new(o, "setup_failed", json_boolean(r->setup_failed));
    json_object_set_new(o, "error", r->error[0] ? json_string(r->error) : json_null());
    /* What it used. */
    json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
    json_object_set_new(o, "user_ms", r->user_ms >= 0 ? json_integer(r->user_ms) : json_null());
    json_object_set_new(o, "sys_ms", r->sys_ms >= 0 ? json_integer(r->sys_ms) : json_null());
    json_object_set_new(o, "cpu_ms", opt_ms(r->cg.cpu_usage_us));
    json_object_set_new(o, "cpu_throttled_ms", opt_ms(r->cg.cpu_throttled_us));
    json_object_set_new(o, "memory_peak_bytes", opt_int(r->cg.mem_peak));
    json_object_set_new(o, "max_rss_bytes",
                        r->max_rss_kb > 0 ? json_integer(r->max_rss_kb * 1024) : json_null());
    json_object_set_new(o, "disk_used_bytes", opt_int(r->disk_used));
    json_object_set_new(o, "pids_peak", opt_int(r->cg.pids_peak));
    json_object_set_new(o, "pids_limit_hits", opt_int(r->cg.pids_max_hits));
    /* Under which limits. */
    json_object_set_new(o, "limits", limits_obj(&p->limits));
    json_t *applied = json_array(), *missing = json_array();
    applied_lists(p, r, applied, missing);
    json_object_set_new(o, "limits_applied", applied);
    json_object_set_new(o, "limits_not_applied", missing);
    json_object_set_new(o, "limits_fallback", fallback_obj(r->limits_fallback));
    json_object_set_new(o, "limits_note",
                        r->limits_reason[0] ? json_string(r->limits_reason) : json_null());
    json_object_set_new(o, "cgroup", r->cg_backend[0] ? json_string(r->cg_backend) : json_null());
    /* Which policy. */
    json_object_set_new(o, "profile", json_string(p->profile_name ? p->profile_name : ""));
    json_t *ov = json_array();
    for (size_t i = 0; i < p->noverrides; i++)
        json_array_append_new(ov, json_string(p->overrides[i]));
    json_object_set_new(o, "overrides", ov);
    json_object_set_new(o, "toolchain", toolchain_json(p));
    /* What the boundary was made of, and what it did not hold. */
    bool ll = p->isolation == FB_ISO_LANDLOCK;
    json_object_set_new(o, "isolation", json_string(ll ? "landlock" : "namespaces"));
    json_t *lost = json_array();
    if (ll) {
        const char *v[16];
        size_t n = landlock_lost(p, landlock_abi(NULL), v, FB_ARRAY_LEN(v));
        for (size_t i = 0; i < n; i++)
            json_array_append_new(lost, json_string(v[i]));
    }
    json_object_set_new(o, "guarantees_not_held", lost);
    json_object_set_new(o, "network", network_obj(r));
    json_object_set_new(o, "seccomp_denials", opt_int(r->seccomp_denials));
    if (r->seccomp.active)
        json_object_set_new(o, "seccomp", scnotify_report_json(&r->seccomp, p->seccomp.learn));
    return o;
}

int report_write(const char *path, const struct fb_policy *p, const struct fb_result *r,
                 struct fb_err *err)
{
    json_t *o = report_json(p, r);
    char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!s)
        return fb_errf(err, FB_EXIT_SETUP, "--report: cannot encode");
    char *line = fb_xasprintf("%s\n", s);
    free(s);
    /* A file is written whole or not at all (a full disk leaves no empty or
     * cut report behind); "-" is stderr. */
    int rc = strcmp(path, "-") ? fb_write_output(path, line, strlen(line))
                               : fb_write_all(2, line, strlen(line));
    free(line);
    return rc < 0 ? fb_errno(err, FB_EXIT_SETUP, "--report %s", path) : 0;
}
