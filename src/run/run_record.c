/* run_record.c — the events of `fluebox run --record` (see run_record.h):
 * turning the result and the change list into the record's JSON objects
 * (the policy's summary is policy_summary.c's). */
#include "run_record.h"

#include "changes.h"
#include "policy_set.h"
#include "policy_summary.h"
#include "seccomp.h"

#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

#define CHANGES_MAX 1000 /* paths listed in "changes"; the counts are exact */

static json_t *opt_int(int64_t v) { return v < 0 ? json_null() : json_integer(v); }
static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

int run_record_open(const struct fb_policy *p, struct fb_record **out, struct fb_err *err)
{
    *out = NULL;
    if (!p->record)
        return 0;
    if (policy_record_reach(p, p->record, err) < 0)
        return -1;
    struct fb_record *r = record_open(p->record, p->record_key, err);
    if (!r)
        return -1;
    record_event(r, json_pack("{s:s, s:s, s:o}", "event", "start", "command", "run", "policy",
                              policy_summary_json(p)));
    *out = r;
    return 0;
}

void run_record_exec(struct fb_record *r, const struct fb_policy *p)
{
    if (!r)
        return;
    json_t *argv = json_array();
    for (char **a = p->argv; a && *a; a++) {
        json_t *s = json_stringn(*a, strnlen(*a, FB_RECORD_ARG_MAX));
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
