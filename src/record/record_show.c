/* record_show.c — `fluebox record show FILE [--json]`: a short summary of a
 * flight record, fit to paste into a pull request: whether the record
 * checks out (record_check), what ran and how it ended, what changed, where
 * it talked, and what was refused (DNS names, connections, system calls,
 * limits). Aggregated network lines count as many times as they say. The
 * summary is built as JSON (--json prints it) and rendered from that. */
#include "record_check.h"

#include <stdio.h>
#include <string.h>

#define LIST_MAX 10 /* entries of a list shown in the text summary */

struct sum {
    json_t *o;       /* the summary */
    json_t *talked;  /* "name:port" -> {connections, bytes_out, bytes_in} */
    json_t *names;   /* allowed DNS names -> count */
    json_t *dns_denied;   /* name -> {count, reason} */
    json_t *conn_denied;  /* "name:port" -> {count, reason} */
};

static void bump(json_t *tab, const char *key, const char *field, int64_t by)
{
    json_t *e = json_object_get(tab, key);
    if (!e) {
        e = json_object();
        json_object_set_new(tab, key, e);
    }
    json_int_t v = json_integer_value(json_object_get(e, field));
    json_object_set_new(e, field, json_integer(v + by));
}

static const char *str(json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }

static void net_dns(struct sum *s, json_t *o, int64_t n)
{
    const char *name = str(o, "name") ?: "(unreadable)";
    const char *verdict = str(o, "verdict") ?: "";
    if (!strcmp(verdict, "allow")) {
        bump(s->names, name, "count", n);
    } else {
        bump(s->dns_denied, name, "count", n);
        if (str(o, "reason"))
            json_object_set(json_object_get(s->dns_denied, name), "reason",
                            json_object_get(o, "reason"));
    }
}

static void net_conn(struct sum *s, json_t *o, int64_t n)
{
    char key[300];
    json_t *port = json_object_get(o, "port");
    snprintf(key, sizeof key, "%s:%lld", str(o, "name") ?: str(o, "dest") ?: "?",
             json_is_integer(port) ? (long long)json_integer_value(port) : 0LL);
    const char *verdict = str(o, "verdict") ?: "";
    if (!strcmp(verdict, "allow")) {
        bump(s->talked, key, "connections", n);
        bump(s->talked, key, "bytes_out", json_integer_value(json_object_get(o, "bytes_out")));
        bump(s->talked, key, "bytes_in", json_integer_value(json_object_get(o, "bytes_in")));
    } else {
        bump(s->conn_denied, key, "count", n);
        if (str(o, "reason"))
            json_object_set(json_object_get(s->conn_denied, key), "reason",
                            json_object_get(o, "reason"));
    }
}

/* A session's exec ended: its command gets an "exit" as a run's has. */
static void exec_end(struct sum *s, json_t *o)
{
    json_t *cmds = json_object_get(s->o, "commands");
    const char *id = str(o, "exec_id");
    for (size_t i = json_array_size(cmds); id && i-- > 0;) {
        json_t *c = json_array_get(cmds, i);
        if (!str(c, "exec_id") || strcmp(str(c, "exec_id"), id))
            continue;
        json_t *sig = json_object_get(o, "signal");
        json_object_set_new(c, "exit",
                            json_pack("{s:O, s:O, s:O, s:O, s:O, s:O}", "status",
                                      json_is_string(sig) ? json_null() : json_object_get(o, "exit_code"),
                                      "signal", sig, "exit_code", json_object_get(o, "exit_code"),
                                      "wall_ms", json_object_get(o, "duration_ms"), "stdout_bytes",
                                      json_object_get(o, "stdout_bytes"), "stderr_bytes",
                                      json_object_get(o, "stderr_bytes")));
        return;
    }
}

static void each(void *arg, int64_t line, json_t *o)
{
    struct sum *s = arg;
    const char *ev = str(o, "event");
    json_t *count = json_object_get(o, "count");
    int64_t n = json_is_integer(count) ? json_integer_value(count) : 1;
    if (!strcmp(ev, "record")) {
        json_object_set(s->o, "fluebox", json_object_get(o, "fluebox"));
    } else if (!strcmp(ev, "start")) {
        json_object_set(s->o, "policy", json_object_get(o, "policy"));
    } else if (!strcmp(ev, "exec")) {
        json_t *c = json_pack("{s:O, s:O}", "argv", json_object_get(o, "argv"), "cwd",
                              json_object_get(o, "cwd"));
        if (str(o, "exec_id"))
            json_object_set(c, "exec_id", json_object_get(o, "exec_id"));
        json_array_append_new(json_object_get(s->o, "commands"), c);
    } else if (!strcmp(ev, "exec_end")) {
        exec_end(s, o);
    } else if (!strcmp(ev, "exit")) {
        json_t *cmds = json_object_get(s->o, "commands");
        json_t *c = json_array_get(cmds, json_array_size(cmds) - 1);
        if (c)
            json_object_set(c, "exit", o);
    } else if (!strcmp(ev, "changes")) {
        json_object_set(s->o, "changes", o);
    } else if (!strcmp(ev, "dns") || !strcmp(ev, "dns_aggregate")) {
        net_dns(s, o, n);
    } else if (!strcmp(ev, "connect") || !strcmp(ev, "connect_aggregate")) {
        net_conn(s, o, n);
    } else if (!strcmp(ev, "seccomp")) {
        json_object_set(json_object_get(s->o, "refused"), "syscalls", json_object_get(o, "calls"));
    } else if (!strcmp(ev, "limit")) {
        json_array_append_new(json_object_get(json_object_get(s->o, "refused"), "limits"),
                              json_pack("{s:O, s:O}", "limit", json_object_get(o, "limit"),
                                        "detail", json_object_get(o, "detail")));
    } else if (!strcmp(ev, "end")) {
        json_object_set(s->o, "exit_code", json_object_get(o, "exit_code"));
    }
    (void)line;
}

/* {"k": {...}} -> [{"name": k, ...}] */
static json_t *as_list(json_t *tab)
{
    json_t *a = json_array();
    const char *k;
    json_t *v;
    json_object_foreach(tab, k, v) {
        json_t *e = json_pack("{s:s}", "name", k);
        json_object_update(e, v);
        json_array_append_new(a, e);
    }
    return a;
}

static void print_list(const char *title, json_t *a, const char *count_field, const char *unit)
{
    size_t n = json_array_size(a);
    if (!n)
        return;
    printf("%s:", title);
    for (size_t i = 0; i < n && i < LIST_MAX; i++) {
        json_t *e = json_array_get(a, i);
        printf("%s %s", i ? "," : "", str(e, "name"));
        json_int_t c = json_integer_value(json_object_get(e, count_field));
        if (c > 1)
            printf(" (%lld %s)", (long long)c, unit);
        if (str(e, "reason") && i < 3)
            printf(" [%s]", str(e, "reason"));
    }
    if (n > LIST_MAX)
        printf(", and %zu more", n - LIST_MAX);
    printf("\n");
}

static void print_policy(json_t *pol)
{
    if (!pol)
        return;
    json_t *net = json_object_get(pol, "network");
    printf("Policy: profile %s, %s, network %s", str(pol, "profile") ?: "?",
           str(pol, "isolation") ?: "?", str(net, "mode") ?: "?");
    json_t *allow = json_object_get(net, "allow");
    for (size_t i = 0; i < json_array_size(allow); i++)
        printf("%s%s", i ? ", " : " (", json_string_value(json_array_get(allow, i)));
    printf("%s", json_array_size(allow) ? ")" : "");
    if (str(pol, "workspace"))
        printf(", workspace %s (%s)", str(pol, "workspace"), str(pol, "workspace_mode") ?: "?");
    printf("\n");
}

static void print_commands(json_t *cmds)
{
    for (size_t i = 0; i < json_array_size(cmds); i++) {
        json_t *c = json_array_get(cmds, i), *argv = json_object_get(c, "argv");
        printf("Ran:");
        for (size_t k = 0; k < json_array_size(argv) && k < 12; k++)
            printf(" %s", json_string_value(json_array_get(argv, k)));
        if (json_array_size(argv) > 12)
            printf(" ...");
        printf(" (in %s)", str(c, "cwd") ?: "?");
        json_t *x = json_object_get(c, "exit");
        if (x && str(x, "signal"))
            printf(": killed by %s", str(x, "signal"));
        else if (x && json_is_integer(json_object_get(x, "status")))
            printf(": exit %lld", (long long)json_integer_value(json_object_get(x, "status")));
        else if (x)
            printf(": %s", str(x, "error") ?: "did not run");
        if (x)
            printf(" after %lld ms", (long long)json_integer_value(json_object_get(x, "wall_ms")));
        printf("\n");
    }
}

static void print_changes(json_t *ch)
{
    if (!ch) {
        printf("Changed: not recorded (no --cow: the workspace was written in place, or not bound)\n");
        return;
    }
    json_t *c = json_object_get(ch, "counts"), *list = json_object_get(ch, "changes");
    printf("Changed: %lld added, %lld modified, %lld deleted, %lld renamed",
           (long long)json_integer_value(json_object_get(c, "added")),
           (long long)json_integer_value(json_object_get(c, "modified")),
           (long long)json_integer_value(json_object_get(c, "deleted")),
           (long long)json_integer_value(json_object_get(c, "renamed")));
    for (size_t i = 0; i < json_array_size(list) && i < LIST_MAX; i++)
        printf("%s %s (%s)", i ? "," : ":", str(json_array_get(list, i), "path"),
               str(json_array_get(list, i), "status"));
    printf("%s\n", json_array_size(list) > LIST_MAX ? ", ..." : "");
}

static void print_text(const char *path, json_t *o)
{
    json_t *rec = json_object_get(o, "record"), *ref = json_object_get(o, "refused");
    printf("Record %s: %s\n", path, str(rec, "verdict"));
    print_policy(json_object_get(o, "policy"));
    print_commands(json_object_get(o, "commands"));
    print_changes(json_object_get(o, "changes"));
    print_list("Talked to", json_object_get(o, "talked_to"), "connections", "connections");
    print_list("Refused DNS", json_object_get(ref, "dns"), "count", "times");
    print_list("Refused connections", json_object_get(ref, "connections"), "count", "times");
    json_t *sc = json_object_get(ref, "syscalls");
    for (size_t i = 0; i < json_array_size(sc) && i < LIST_MAX; i++) {
        json_t *e = json_array_get(sc, i);
        printf("%s %s (%s, %lld times, by %s)", i ? "," : "Refused system calls:",
               str(e, "syscall"), str(e, "errno"),
               (long long)json_integer_value(json_object_get(e, "count")), str(e, "comm"));
    }
    if (json_array_size(sc))
        printf("\n");
    json_t *lim = json_object_get(ref, "limits");
    for (size_t i = 0; i < json_array_size(lim); i++)
        printf("Limit hit: %s: %s\n", str(json_array_get(lim, i), "limit"),
               str(json_array_get(lim, i), "detail"));
    json_t *code = json_object_get(o, "exit_code");
    if (json_is_integer(code))
        printf("fluebox exited %lld\n", (long long)json_integer_value(code));
}

int record_show(const char *path, bool as_json)
{
    rc_init();
    struct sum s = {.o = json_object(), .talked = json_object(), .names = json_object(),
                    .dns_denied = json_object(), .conn_denied = json_object()};
    json_object_set_new(s.o, "commands", json_array());
    json_object_set_new(s.o, "refused", json_pack("{s:[]}", "limits"));
    struct fb_rec_verdict v;
    record_check(path, NULL, each, &s, &v);
    if (v.status == FB_REC_BAD) {
        fb_warn("record show: %s", v.msg);
        json_decref(s.o);
        json_decref(s.talked), json_decref(s.names), json_decref(s.dns_denied),
            json_decref(s.conn_denied);
        return FB_REC_BAD;
    }
    json_object_set_new(s.o, "record",
                        json_pack("{s:s, s:i, s:s, s:I, s:b}", "file", path, "status", v.status,
                                  "verdict", v.msg, "lines", (json_int_t)v.lines, "signed",
                                  v.is_signed));
    json_object_set_new(s.o, "talked_to", as_list(s.talked));
    json_object_set_new(s.o, "dns_allowed", as_list(s.names));
    json_t *ref = json_object_get(s.o, "refused");
    json_object_set_new(ref, "dns", as_list(s.dns_denied));
    json_object_set_new(ref, "connections", as_list(s.conn_denied));
    if (as_json) {
        char *t = json_dumps(s.o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
        printf("%s\n", t ? t : "null");
        free(t);
    } else {
        print_text(path, s.o);
    }
    json_decref(s.o);
    json_decref(s.talked), json_decref(s.names), json_decref(s.dns_denied),
        json_decref(s.conn_denied);
    return fflush(stdout) == 0 ? 0 : FB_REC_BAD;
}
