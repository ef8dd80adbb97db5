/* run_record.c — the events of `fluebox run --record` (see run_record.h):
 * turning the policy, the result and the change list into the record's JSON
 * objects. Environment variables are recorded by name only: their values
 * may be secrets. */
#include "run_record.h"

#include "changes.h"
#include "seccomp.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define CHANGES_MAX 1000 /* paths listed in "changes"; the counts are exact */
#define ARG_MAX_REC 4096 /* bytes of one argument kept */

static json_t *opt_int(int64_t v) { return v < 0 ? json_null() : json_integer(v); }
static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

static json_t *limits_json(const struct fb_limits *l)
{
    return json_pack("{s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "memory_bytes", opt_int(l->mem),
                     "cpus", l->cpus > 0 ? json_real(l->cpus) : json_null(), "pids",
                     opt_int(l->pids), "disk_bytes", opt_int(l->disk), "timeout_ms",
                     opt_int(l->timeout_ms), "nofile", opt_int(l->nofile), "fsize_bytes",
                     opt_int(l->fsize));
}

static json_t *mounts_json(const struct fb_policy *p)
{
    static const char *const kinds[] = {"ro-bind", "bind", "tmpfs", "hide"};
    json_t *a = json_array();
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        json_array_append_new(a, json_pack("{s:s, s:o, s:s}", "kind", kinds[m->kind], "src",
                                           str_or_null(m->src), "dst", m->dst));
    }
    for (size_t i = 0; i < p->ntool_binds; i++)
        json_array_append_new(a, json_pack("{s:s, s:o, s:o}", "kind", "ro-bind", "src",
                                           str_or_null(p->tool_binds[i].src), "dst",
                                           str_or_null(p->tool_binds[i].dst)));
    return a;
}

static json_t *network_json(const struct fb_policy *p)
{
    static const char *const modes[] = {"none", "allow", "host"};
    json_t *allow = json_array(), *resolve = json_array();
    for (size_t i = 0; i < p->nallow; i++) {
        const struct fb_allow *a = &p->allow[i];
        char port[16] = "";
        if (a->port)
            snprintf(port, sizeof port, ":%u", a->port);
        char *s = fb_xasprintf("%s%s%s", a->wildcard ? "*." : "", a->name, port);
        json_array_append_new(allow, json_string(s));
        free(s);
    }
    for (size_t i = 0; i < p->nresolve; i++)
        json_array_append_new(resolve, json_pack("{s:s, s:s}", "name", p->resolve[i].name,
                                                 "addr", p->resolve[i].addr));
    return json_pack("{s:s, s:o, s:o, s:o}", "mode", modes[p->net], "allow", allow, "resolve",
                     resolve, "proxy_port", p->proxy_port ? json_integer(p->proxy_port)
                                                          : json_null());
}

/* Names of the variables set or passed in: never their values. */
static json_t *env_names(const struct fb_policy *p)
{
    json_t *a = json_array();
    for (size_t i = 0; i < p->nenv_set; i++)
        json_array_append_new(a, json_stringn(p->env_set[i], strcspn(p->env_set[i], "=")));
    for (size_t i = 0; i < p->nenv_pass; i++)
        json_array_append_new(a, json_string(p->env_pass[i]));
    return a;
}

/* An option as given, without the value of an --env (it may be a secret). */
static json_t *override_json(const char *ov)
{
    const char *eq = strchr(ov, '=');
    if (strncmp(ov, "--env ", 6) || !eq)
        return json_string(ov);
    char *s = fb_xasprintf("%.*s=(value not recorded)", (int)(eq - ov), ov);
    json_t *j = json_string(s);
    free(s);
    return j;
}

static json_t *policy_json(const struct fb_policy *p)
{
    json_t *ov = json_array();
    for (size_t i = 0; i < p->noverrides; i++)
        json_array_append_new(ov, override_json(p->overrides[i]));
    const char *ws = !p->workspace ? NULL : p->cow ? "cow" : p->workspace_ro ? "ro" : "rw";
    json_t *o = json_pack("{s:o, s:o, s:o, s:s, s:i, s:o, s:o}", "profile",
                          str_or_null(p->profile_name), "extends", str_or_null(p->profile_extends),
                          "overrides", ov, "isolation",
                          p->isolation == FB_ISO_LANDLOCK ? "landlock" : "namespaces", "uid",
                          (int)p->uid, "workspace", str_or_null(p->workspace), "workspace_mode",
                          str_or_null(ws));
    json_object_set_new(o, "mounts", mounts_json(p));
    json_object_set_new(o, "limits", limits_json(&p->limits));
    json_object_set_new(o, "network", network_json(p));
    json_object_set_new(o, "seccomp", json_pack("{s:b, s:i, s:b}", "enabled", p->seccomp.enabled,
                                                "rules", (int)p->seccomp.nrules, "log_denied",
                                                p->seccomp.log_denied));
    json_object_set_new(o, "env_names", env_names(p));
    return o;
}

/* Is dir (real) at or under host path w? */
static bool under(const char *dir, const char *w)
{
    char rw[PATH_MAX];
    if (!w || !realpath(w, rw))
        return false;
    size_t n = strlen(rw);
    return !strncmp(dir, rw, n) && (dir[n] == 0 || dir[n] == '/' || (n == 1 && rw[0] == '/'));
}

/* The record's directory must not be one the sandbox can write: it could
 * remove or replace the record (an unsigned one undetectably). */
static int check_out_of_reach(const struct fb_policy *p, struct fb_err *err)
{
    char *slash = strrchr(p->record, '/');
    cleanup_free char *d = !slash ? fb_xstrdup(".")
                           : slash == p->record ? fb_xstrdup("/")
                                                : fb_xstrndup(p->record, (size_t)(slash - p->record));
    char dir[PATH_MAX];
    if (!realpath(d, dir))
        return fb_errno(err, FB_EXIT_SETUP, "--record %s", p->record);
    const char *hit = NULL;
    if (p->workspace && !p->cow && !p->workspace_ro && under(dir, p->workspace))
        hit = p->workspace;
    for (size_t i = 0; !hit && i < p->nmounts; i++)
        if (p->mounts[i].kind == FB_MNT_BIND && under(dir, p->mounts[i].src))
            hit = p->mounts[i].src;
    if (hit)
        return fb_errf(err, FB_EXIT_SETUP, "--record %s: its directory is inside %s, which the "
                       "sandbox can write: put the record elsewhere", p->record, hit);
    return 0;
}

int run_record_open(const struct fb_policy *p, struct fb_record **out, struct fb_err *err)
{
    *out = NULL;
    if (!p->record)
        return 0;
    if (check_out_of_reach(p, err) < 0)
        return -1;
    struct fb_record *r = record_open(p->record, p->record_key, err);
    if (!r)
        return -1;
    record_event(r, json_pack("{s:s, s:s, s:o}", "event", "start", "command", "run", "policy",
                              policy_json(p)));
    *out = r;
    return 0;
}

void run_record_exec(struct fb_record *r, const struct fb_policy *p)
{
    if (!r)
        return;
    json_t *argv = json_array();
    for (char **a = p->argv; a && *a; a++) {
        json_t *s = json_stringn(*a, strnlen(*a, ARG_MAX_REC));
        json_array_append_new(argv, s ? s : json_string("(not UTF-8)"));
    }
    record_event(r, json_pack("{s:s, s:o, s:o, s:o}", "event", "exec", "argv", argv, "path",
                              str_or_null(p->exec_path), "cwd",
                              str_or_null(p->cwd ? p->cwd : "/workspace")));
}

void run_record_limit(struct fb_record *r, const char *limit, const char *detail)
{
    if (r)
        record_event(r, json_pack("{s:s, s:s, s:s}", "event", "limit", "limit", limit, "detail",
                                  detail));
}

static void record_seccomp(struct fb_record *r, const struct fb_sc_report *sc)
{
    if (!sc->active || !sc->denied)
        return;
    json_t *calls = json_array();
    for (size_t i = 0; i < sc->n; i++) {
        const struct fb_sc_seen *s = &sc->seen[i];
        if (!s->errno_val)
            continue;
        json_array_append_new(calls, json_pack("{s:s, s:s, s:I, s:s}", "syscall", s->name,
                                               "errno", strerrorname_np(s->errno_val) ?: "?",
                                               "count", (json_int_t)s->count, "comm", s->comm));
    }
    record_event(r, json_pack("{s:s, s:I, s:o, s:b}", "event", "seccomp", "denied",
                              (json_int_t)sc->denied, "calls", calls, "truncated",
                              sc->truncated));
}

void run_record_result(struct fb_record *r, const struct fb_policy *p, const struct fb_result *res)
{
    if (!r)
        return;
    if (res->oom_killed)
        run_record_limit(r, "memory", "the OOM killer killed a process (--mem)");
    if (res->cg.pids_max_hits > 0) {
        char d[96];
        snprintf(d, sizeof d, "%lld fork(s) refused at the pids limit (--pids)",
                 (long long)res->cg.pids_max_hits);
        run_record_limit(r, "pids", d);
    }
    record_seccomp(r, &res->seccomp);
    const char *abbrev = res->signal ? sigabbrev_np(res->signal) : NULL;
    char signame[32];
    snprintf(signame, sizeof signame, "SIG%s", abbrev ? abbrev : "");
    json_t *o = json_pack("{s:s, s:i, s:o, s:o, s:b, s:b, s:I}", "event", "exit", "exit_code",
                          res->exit_code, "status",
                          res->status_code >= 0 ? json_integer(res->status_code) : json_null(),
                          "signal", abbrev ? json_string(signame) : json_null(), "timed_out",
                          res->timed_out, "oom_killed", res->oom_killed, "wall_ms",
                          (json_int_t)res->wall_ms);
    json_object_set_new(o, "user_ms", opt_int(res->user_ms));
    json_object_set_new(o, "sys_ms", opt_int(res->sys_ms));
    json_object_set_new(o, "memory_peak_bytes", opt_int(res->cg.mem_peak));
    json_object_set_new(o, "pids_peak", opt_int(res->cg.pids_peak));
    json_object_set_new(o, "disk_used_bytes", opt_int(res->disk_used));
    json_object_set_new(o, "setup_failed", json_boolean(res->setup_failed));
    json_object_set_new(o, "error", res->error[0] ? json_string(res->error) : json_null());
    record_event(r, o);
    (void)p;
}

static const char *status_name(enum fb_chg_status s)
{
    switch (s) {
    case FB_CHG_ADDED: return "added";
    case FB_CHG_MODIFIED: return "modified";
    case FB_CHG_DELETED: return "deleted";
    case FB_CHG_RENAMED: return "renamed";
    }
    return "?";
}

void run_record_changes(struct fb_record *r, struct fb_cow *c)
{
    if (!r || !c)
        return;
    struct fb_changes ch;
    struct fb_err err = {0};
    if (changes_scan(c, &ch, NULL, &err) < 0) {
        record_event(r, json_pack("{s:s, s:s}", "event", "changes", "error", err.msg));
        return;
    }
    int64_t counts[4] = {0};
    json_t *list = json_array();
    for (size_t i = 0; i < ch.n; i++) {
        const struct fb_change *x = &ch.v[i];
        counts[x->status]++;
        if (i >= CHANGES_MAX)
            continue;
        char kind[2] = {x->kind, 0};
        json_t *e = json_pack("{s:s, s:s, s:s}", "path", x->path, "status",
                              status_name(x->status), "kind", kind);
        if (!e) {
            json_array_append_new(list, json_pack("{s:s}", "path", "(not UTF-8)"));
            continue;
        }
        if (x->from)
            json_object_set_new(e, "from", json_string(x->from));
        if (x->size >= 0)
            json_object_set_new(e, "size", json_integer(x->size));
        json_array_append_new(list, e);
    }
    json_t *o = json_pack("{s:s, s:{s:I, s:I, s:I, s:I}, s:o, s:b, s:b}", "event", "changes",
                          "counts", "added", (json_int_t)counts[0], "modified",
                          (json_int_t)counts[1], "deleted", (json_int_t)counts[2], "renamed",
                          (json_int_t)counts[3], "changes", list, "truncated",
                          ch.n > CHANGES_MAX, "upper_full", ch.upper_full);
    changes_free(&ch);
    record_event(r, o);
}

int run_record_close(struct fb_record *r, int exit_code, struct fb_err *err)
{
    if (!r)
        return 0;
    return record_close(r, json_pack("{s:i}", "exit_code", exit_code), err);
}
