/* audit.c — the network audit log (see audit.h). A write that fails (a full
 * disk) is ignored: it must not stop the sandbox, and the report still
 * counts everything. */
#include "audit.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#define LOG_MAX_LINES 200000 /* then events are only counted */

struct fb_audit {
    int fd;
    int64_t lines;
};

struct fb_audit *audit_open(const char *path, struct fb_err *err)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "--net-log %s", path);
        return NULL;
    }
    struct fb_audit *a = fb_xcalloc(1, sizeof *a);
    a->fd = fd;
    return a;
}

void audit_close(struct fb_audit *a)
{
    if (!a)
        return;
    close(a->fd);
    free(a);
}

static void iso_time(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

/* Writes o as one line (and consumes it). */
static void log_event(struct fb_audit *a, json_t *o)
{
    if (a->lines > LOG_MAX_LINES) {
        json_decref(o);
        return;
    }
    char t[40];
    iso_time(t, sizeof t);
    json_t *line = json_object();
    json_object_set_new(line, "time", json_string(t));
    json_object_update(line, o);
    json_decref(o);
    if (++a->lines > LOG_MAX_LINES) {
        json_decref(line);
        line = json_pack("{s:s, s:s, s:s}", "time", t, "event", "log_limit", "reason",
                         "too many events: later ones are only counted in the report");
    }
    char *s = json_dumps(line, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(line);
    if (!s)
        return;
    size_t n = strlen(s);
    s[n] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
    if (fb_write_all(a->fd, s, n + 1) < 0) {
        /* a full disk must not stop the sandbox; the report still counts */
    }
    free(s);
}

/* json_string() needs UTF-8; names are already escaped to ASCII, reasons are
 * ours. This keeps a stray byte from dropping a field. */
static json_t *jstr(const char *s)
{
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    return j ? j : json_string("(not UTF-8)");
}

void audit_start(struct fb_audit *a, const char *mode, const char *note)
{
    if (!a)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("start"));
    json_object_set_new(o, "mode", json_string(mode));
    if (note)
        json_object_set_new(o, "note", json_string(note));
    log_event(a, o);
}

void audit_dns(struct fb_audit *a, const char *name, const char *type, const char *transport,
               const char *verdict, const char *reason, const uint32_t *a4)
{
    if (!a)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("dns"));
    json_object_set_new(o, "name", jstr(name));
    json_object_set_new(o, "type", jstr(type));
    json_object_set_new(o, "transport", json_string(transport));
    json_object_set_new(o, "verdict", json_string(verdict));
    json_object_set_new(o, "reason", jstr(reason));
    if (a4) {
        char ip[INET_ADDRSTRLEN];
        inet_ntop(AF_INET, a4, ip, sizeof ip);
        json_object_set_new(o, "answer", json_string(ip));
    }
    log_event(a, o);
}

void audit_conn(struct fb_audit *a, const struct audit_conn *r)
{
    if (!a)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("connect"));
    json_object_set_new(o, "name", jstr(r->name));
    json_object_set_new(o, "port", r->port ? json_integer(r->port) : json_null());
    json_object_set_new(o, "via", json_string(r->via));
    json_object_set_new(o, "dest", jstr(r->dest));
    json_object_set_new(o, "verdict", json_string(r->verdict));
    json_object_set_new(o, "reason", jstr(r->reason));
    json_object_set_new(o, "protocol", jstr(r->protocol));
    json_object_set_new(o, "upstream", jstr(r->upstream));
    json_object_set_new(o, "bytes_out", json_integer(r->bytes_out));
    json_object_set_new(o, "bytes_in", json_integer(r->bytes_in));
    json_object_set_new(o, "duration_ms", json_integer(r->duration_ms));
    log_event(a, o);
}
