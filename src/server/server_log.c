/* server_log.c — the server's log of session events (docs/server.md): one
 * line on stderr per event (created, destroyed, died, expired, forked,
 * published, snapshot, restored, ...), as text or, with
 * `fluebox serve --log-format json`, as one JSON object per line:
 *
 *   {"time":"2026-12-01T23:59:01.123Z","event":"session.created",
 *    "session":"s-...","uid":1000, ...fields}
 *
 * Each line is written with a single write(2), so lines of concurrent
 * writers (the worker thread's warnings) never interleave within a line. */
#include "server.h"

#include <string.h>
#include <time.h>

/* "k=v k2=v2" of the fields, for the text format. */
static void text_fields(json_t *fields, struct fb_buf *b)
{
    const char *k;
    json_t *v;
    json_object_foreach(fields, k, v)
    {
        char *s = json_is_string(v) ? fb_xstrdup(json_string_value(v))
                                    : json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY);
        buf_append(b, " ", 1);
        buf_append(b, k, strlen(k));
        buf_append(b, "=", 1);
        if (s)
            buf_append(b, s, strlen(s));
        free(s);
    }
}

void srv_log(struct srv *srv, const char *event, const char *session, uid_t uid, json_t *fields)
{
    if (!fields)
        fields = json_object();
    struct fb_buf b = {0};
    char t[48];
    fb_iso_time(t, sizeof t);
    if (srv->log_json) {
        json_t *o = json_object();
        json_object_set_new(o, "time", json_string(t));
        json_object_set_new(o, "event", json_string(event));
        if (session) {
            json_object_set_new(o, "session", json_string(session));
            json_object_set_new(o, "uid", json_integer(uid));
        }
        json_object_update_missing(o, fields);
        char *s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
        json_decref(o);
        if (s)
            buf_append(&b, s, strlen(s));
        free(s);
    } else {
        char head[160];
        int n = session ? snprintf(head, sizeof head, "fluebox: %s %s: session %s uid=%u", t, event,
                                   session, (unsigned)uid)
                        : snprintf(head, sizeof head, "fluebox: %s %s:", t, event);
        buf_append(&b, head, (size_t)n);
        text_fields(fields, &b);
    }
    json_decref(fields);
    buf_append(&b, "\n", 1);
    (void)!write(2, buf_head(&b), buf_pending(&b));
    buf_free(&b);
}

void srv_log_event(struct sess *ss, const char *event, json_t *fields)
{
    char name[64];
    snprintf(name, sizeof name, "session.%s", event);
    srv_log(ss->srv, name, ss->s->id, ss->s->uid, fields);
}

static struct srv *warn_srv;

static void warning_line(const char *msg, size_t len)
{
    json_t *m = json_stringn(msg, len);
    if (!m) { /* not UTF-8 (a path): its other bytes as '?' */
        char *c = fb_xmalloc(len + 1);
        for (size_t i = 0; i < len; i++)
            c[i] = (unsigned char)msg[i] < 0x80 ? msg[i] : '?';
        m = json_stringn(c, len);
        free(c);
    }
    srv_log(warn_srv, "warning", NULL, 0, json_pack("{s:o*}", "message", m));
}

void srv_log_warnings(struct srv *srv)
{
    warn_srv = srv;
    fb_warn_sink(warning_line);
}
