/* sess_record.c — a session's flight record (session.create's "record" and
 * "recordKey", docs/record.md): opened with the create, "start" once the
 * session is ready (its policy; the relay's decisions from then on), one
 * "exec" and one "exec_end" per exec (argv, cwd; exit, signal, duration,
 * bytes of output), "end" when the session ends. Written by the server's
 * loop only: the relay is detached before the worker thread releases the
 * sandbox. Environment values are never recorded (they may be secrets). */
#include "server.h"

#include "policy_set.h"
#include "policy_summary.h"
#include "record.h"

#include <string.h>

/* The options' --record and --record-key (checked by policy_set_record)
 * become the params' record and recordKey; the policy keeps neither, and
 * no --seccomp-log (which a session does not take). */
static void from_options(json_t *params, struct fb_policy *p, json_t **path, json_t **key)
{
    if (p->record && !*path)
        *path = json_string(p->record);
    else
        *path = json_incref(*path);
    if (p->record_key && !*key)
        *key = json_string(p->record_key);
    else
        *key = json_incref(*key);
    if (p->record && !p->seccomp.learn)
        p->seccomp.log_denied = false;
    free(p->record);
    free(p->record_key);
    p->record = p->record_key = NULL;
}

static int open_paths(json_t *path, json_t *key, bool foreign, struct fb_record **out,
                      struct proto_err *e);

/* The params a session keeps (for session.fork) say nothing of the record:
 * a fork has none of its own, and would find the file existing. */
static void strip(json_t *params)
{
    json_object_del(params, "record");
    json_object_del(params, "recordKey");
    json_t *opts = json_object_get(params, "options");
    for (size_t i = 0; i < json_array_size(opts);) {
        const char *o = json_string_value(json_array_get(opts, i));
        bool sep = o && (!strcmp(o, "--record") || !strcmp(o, "--record-key"));
        bool joined = o && (!strncmp(o, "--record=", 9) || !strncmp(o, "--record-key=", 13));
        if (sep && i + 1 < json_array_size(opts))
            json_array_remove(opts, i + 1);
        if (sep || joined)
            json_array_remove(opts, i);
        else
            i++;
    }
}

int sess_record_open(json_t *params, struct fb_policy *pol, bool foreign, struct fb_record **out,
                     struct proto_err *e)
{
    *out = NULL;
    json_t *path = json_object_get(params, "record"), *key = json_object_get(params, "recordKey");
    if (json_is_null(path))
        path = NULL;
    if (json_is_null(key))
        key = NULL;
    from_options(params, pol, &path, &key);
    struct fb_err err = {0};
    int rc = 0;
    if (json_is_string(path) && policy_record_reach(pol, json_string_value(path), &err) < 0)
        rc = perr_param(e, "record", "%s", err.msg);
    else
        rc = open_paths(path, key, foreign, out, e);
    json_decref(path);
    json_decref(key);
    if (rc == 0)
        strip(params);
    return rc;
}

static int open_paths(json_t *path, json_t *key, bool foreign, struct fb_record **out,
                      struct proto_err *e)
{
    if (!path && !key)
        return 0;
    if (!path)
        return perr_param(e, "recordKey", "recordKey signs a record: it needs record");
    if (foreign) {
        perr_set(e, "permission_denied", "record: only the server's own uid and root may have "
                 "the server write a record on the host");
        snprintf(e->param, sizeof e->param, "record");
        return -1;
    }
    const char *p = json_string_value(path), *k = key ? json_string_value(key) : NULL;
    if (!p || p[0] != '/')
        return perr_param(e, "record", "record must be an absolute host path");
    if (key && (!k || k[0] != '/'))
        return perr_param(e, "recordKey", "recordKey must be an absolute host path");
    struct fb_err err = {0};
    *out = record_open(p, k, &err);
    if (!*out)
        return perr_param(e, key && strstr(err.msg, "--record-key") ? "recordKey" : "record",
                          "%s", err.msg);
    return 0;
}

void sess_record_start(struct sess *ss)
{
    struct fb_session *s = ss->s;
    if (!s->rec)
        return;
    record_event(s->rec, json_pack("{s:s, s:s, s:o, s:b, s:o}", "event", "start", "command",
                                   "session", "session", json_string(s->id), "pooled", s->pooled,
                                   "policy", policy_summary_json(&s->pol)));
    egress_set_record(s->sb.egress, s->rec);
}

void sess_record_exec(struct op *o, json_t *spec)
{
    struct fb_session *s = o->ss ? o->ss->s : NULL;
    if (!s || !s->rec)
        return;
    json_t *argv = json_array(), *it;
    size_t i;
    json_array_foreach(json_object_get(spec, "argv"), i, it)
    {
        const char *a = json_string_value(it);
        json_array_append_new(argv, json_stringn(a ? a : "", strnlen(a ? a : "", FB_RECORD_ARG_MAX)));
    }
    record_event(s->rec, json_pack("{s:s, s:s, s:o, s:O}", "event", "exec", "exec_id", o->exec_id,
                                   "argv", argv, "cwd", json_object_get(spec, "cwd")));
}

void sess_record_exec_end(struct op *o, json_t *result)
{
    struct fb_session *s = o->ss ? o->ss->s : NULL;
    if (!s || !s->rec)
        return;
    record_event(s->rec,
                 json_pack("{s:s, s:s, s:O, s:O, s:O, s:O, s:I, s:I}", "event", "exec_end",
                           "exec_id", o->exec_id, "exit_code", json_object_get(result, "exitCode"),
                           "signal", json_object_get(result, "signal"), "timed_out",
                           json_object_get(result, "timedOut"), "duration_ms",
                           json_object_get(result, "durationMs"), "stdout_bytes",
                           (json_int_t)o->out_bytes[0], "stderr_bytes",
                           (json_int_t)o->out_bytes[1]));
    if (json_is_true(json_object_get(result, "oomKilled")))
        record_event(s->rec, json_pack("{s:s, s:s, s:s, s:s}", "event", "limit", "limit", "memory",
                                       "exec_id", o->exec_id, "detail",
                                       "the OOM killer killed a process of this exec (--mem)"));
}

void sess_record_ws(struct sess *ss, const char *method, json_t *params, json_t *result)
{
    struct fb_session *s = ss->s;
    if (!s->rec || !result || !strcmp(method, "workspace.diff"))
        return;
    json_t *o = json_pack("{s:s, s:s}", "event", "workspace", "method", method);
    if (!strcmp(method, "workspace.commit")) {
        json_t *paths = json_object_get(params, "paths"), *conf = json_object_get(result, "conflicts");
        json_object_set(o, "paths", json_is_array(paths) ? paths : json_null());
        json_object_set_new(o, "force", json_boolean(json_is_true(json_object_get(params, "force"))));
        json_object_set_new(o, "committed", json_boolean(json_is_true(json_object_get(result, "committed"))));
        json_object_set(o, "applied", json_object_get(result, "applied") ?: json_null());
        json_object_set_new(o, "conflicts", json_integer((json_int_t)json_array_size(conf)));
    } else if (json_object_get(result, "name")) {
        json_object_set(o, "name", json_object_get(result, "name"));
    }
    record_event(s->rec, o);
}

void sess_record_end(struct sess *ss)
{
    struct fb_session *s = ss->s;
    if (!s->rec)
        return;
    egress_set_record(s->sb.egress, NULL); /* the worker frees the relay */
    struct fb_err err = {0};
    json_t *o = json_pack("{s:s, s:I}", "reason", s->death[0] ? s->death : "destroyed", "execs",
                          (json_int_t)ss->total_execs);
    if (record_close(fb_steal_ptr(s->rec), o, &err) < 0)
        srv_log_event(ss, "record_failed", json_pack("{s:s}", "error", err.msg));
}
