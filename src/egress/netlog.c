/* netlog.c — the network audit log (see netlog.h).
 *
 * What a sandbox can repeat cheaply — DNS queries, and connections refused
 * at once — cannot be allowed to flood the log (the host's disk) or to bury
 * what matters. Such events go through a rate limit (a token bucket per
 * kind: BURST lines, then RATE per second) and an aggregation table: the
 * first occurrence of an event (all its fields but the time) in an interval
 * of AGG_MS is written as its own line while the bucket has tokens; every
 * other occurrence is counted under its fields, and at the end of the
 * interval (and at the end of the run) one "dns_aggregate" /
 * "connect_aggregate" line per distinct event carries the count and the
 * first and last times. More than AGG_MAX distinct events in an interval,
 * or DNS lines past DNS_LINES_MAX, are only counted, in one overflow line per
 * interval. Connections that were relayed or failed upstream are never
 * aggregated: each gets its own line. The last line of a run ("end") says how
 * much was aggregated.
 *
 * A write that fails (a full disk) is ignored: it must not stop the sandbox,
 * and the report still counts everything. */
#include "netlog.h"

#include "nametab.h"
#include "record.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <jansson.h>
#include <string.h>
#include <time.h>

#define BURST 1000             /* lines written at once before the rate applies */
#define RATE 100               /* lines per second after that, per kind */
#define AGG_MS 10000           /* aggregation interval */
#define AGG_MAX 2048           /* distinct aggregated events per interval */
#define DNS_LINES_MAX 200000   /* DNS lines of a run; then only counted */

enum kind { K_DNS, K_CONN, K_NKINDS };
static const char *const agg_event[K_NKINDS] = {"dns_aggregate", "connect_aggregate"};

struct agg {
    json_t *rec; /* the event's fields, without the time */
    int64_t count;
    char first[32], last[32];
};

struct bucket {
    double tokens;
    uint64_t at_ns;
};

/* One kind's distinct events of this interval. */
struct aggtab {
    struct nametab keys; /* the events' JSON */
    struct agg *aggs;    /* parallel to keys.v */
    size_t cap;
};

struct fb_audit {
    int fd;                /* --net-log, or -1 */
    struct fb_record *rec; /* --record, or NULL: gets the same lines */
    struct bucket bucket[K_NKINDS];
    struct aggtab tab[K_NKINDS];
    int64_t overflow[K_NKINDS];
    char ofirst[K_NKINDS][32], olast[K_NKINDS][32];
    uint64_t interval_end_ns; /* 0: nothing pending */
    int64_t dns_lines;
    struct audit_stats st;
};

/* The same event in the flight record (which has its own time): every
 * line but the log's "start" (the record's own start says the mode). */
static void to_record(struct fb_audit *a, json_t *o)
{
    const char *ev = json_string_value(json_object_get(o, "event"));
    if (!a->rec || !ev || !strcmp(ev, "start"))
        return;
    json_t *r = json_copy(o);
    if (!strcmp(ev, "end"))
        json_object_set_new(r, "event", json_string("net_end"));
    record_event(a->rec, r);
}

/* Write {"time": now, ...o} as one line; consumes o. */
static void write_line(struct fb_audit *a, json_t *o)
{
    to_record(a, o);
    a->st.lines++;
    if (a->fd < 0) {
        json_decref(o);
        return;
    }
    char t[40];
    fb_iso_time(t, sizeof t);
    json_t *line = json_object();
    json_object_set_new(line, "time", json_string(t));
    json_object_update(line, o);
    json_decref(o);
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

struct fb_audit *audit_open(const char *path, struct fb_err *err)
{
    int fd = path ? open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC | O_NOCTTY, 0600) : -1;
    if (path && fd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "--net-log %s", path);
        return NULL;
    }
    struct fb_audit *a = fb_xcalloc(1, sizeof *a);
    a->fd = fd;
    uint64_t now = fb_now_ns();
    for (int k = 0; k < K_NKINDS; k++)
        a->bucket[k] = (struct bucket){BURST, now};
    return a;
}

/* Write what this interval aggregated and start a new one. */
static void flush(struct fb_audit *a)
{
    for (int k = 0; k < K_NKINDS; k++) {
        struct aggtab *t = &a->tab[k];
        for (size_t i = 0; i < t->keys.n; i++) {
            struct agg *g = &t->aggs[i];
            if (g->count) {
                json_t *o = json_deep_copy(g->rec);
                json_object_set_new(o, "event", json_string(agg_event[k]));
                json_object_set_new(o, "count", json_integer(g->count));
                json_object_set_new(o, "first", json_string(g->first));
                json_object_set_new(o, "last", json_string(g->last));
                if (k == K_DNS)
                    a->dns_lines++;
                write_line(a, o);
            }
            json_decref(g->rec);
        }
        nametab_free(&t->keys);
    }
    for (int k = 0; k < K_NKINDS; k++) {
        if (!a->overflow[k])
            continue;
        json_t *o = json_pack("{s:s, s:n, s:I, s:s, s:s, s:s}", "event", agg_event[k], "name",
                              "count", (json_int_t)a->overflow[k], "first", a->ofirst[k], "last",
                              a->olast[k], "reason",
                              k == K_DNS && a->dns_lines >= DNS_LINES_MAX
                                  ? "the log holds no more DNS lines for this run: only counted"
                                  : "too many different events at once: only counted");
        write_line(a, o);
        a->overflow[k] = 0;
    }
    a->interval_end_ns = 0;
}

/* An event of a kind that may be aggregated; consumes o. extra (consumed,
 * may be NULL) are fields that vary between occurrences (a duration): on
 * the event's own line only. */
static void limited(struct fb_audit *a, enum kind k, json_t *o, json_t *extra)
{
    uint64_t now = fb_now_ns();
    if (a->interval_end_ns && now >= a->interval_end_ns)
        flush(a);
    struct bucket *b = &a->bucket[k];
    b->tokens += (double)(now - b->at_ns) * RATE / 1e9;
    if (b->tokens > BURST)
        b->tokens = BURST;
    b->at_ns = now;
    if (!a->interval_end_ns)
        a->interval_end_ns = now + AGG_MS * 1000000ull;
    bool room = k != K_DNS || a->dns_lines < DNS_LINES_MAX;
    char *key = room ? json_dumps(o, JSON_COMPACT | JSON_SORT_KEYS | JSON_ENSURE_ASCII) : NULL;
    struct aggtab *t = &a->tab[k];
    long i = key ? nametab_find(&t->keys, key) : -1;
    if (i < 0 && key && t->keys.n < AGG_MAX) {
        /* First time in this interval: remember it, and write it out if
         * the rate allows. */
        i = (long)nametab_add(&t->keys, key);
        if ((size_t)i >= t->cap) {
            t->cap = t->cap ? t->cap * 2 : 64;
            t->aggs = fb_xrealloc(t->aggs, t->cap * sizeof *t->aggs);
        }
        t->aggs[i] = (struct agg){.rec = json_incref(o)};
        if (b->tokens >= 1) {
            b->tokens -= 1;
            if (k == K_DNS)
                a->dns_lines++;
            free(key);
            json_t *line = json_copy(o); /* o stays the table's record */
            json_decref(o);
            if (extra)
                json_object_update(line, extra);
            json_decref(extra);
            write_line(a, line);
            return;
        }
    }
    free(key);
    json_decref(o);
    json_decref(extra);
    char now_s[32];
    fb_iso_time(now_s, sizeof now_s);
    if (i >= 0) {
        struct agg *g = &t->aggs[i];
        if (!g->count++)
            memcpy(g->first, now_s, sizeof now_s);
        memcpy(g->last, now_s, sizeof now_s);
    } else {
        if (!a->overflow[k]++)
            memcpy(a->ofirst[k], now_s, sizeof now_s);
        memcpy(a->olast[k], now_s, sizeof now_s);
    }
    if (k == K_DNS)
        a->st.dns_aggregated++;
    else
        a->st.conns_aggregated++;
}

void audit_set_record(struct fb_audit *a, struct fb_record *rec)
{
    if (a)
        a->rec = rec;
}

bool audit_pending(const struct fb_audit *a) { return a && a->interval_end_ns; }

void audit_tick(struct fb_audit *a)
{
    if (a && a->interval_end_ns && fb_now_ns() >= a->interval_end_ns)
        flush(a);
}

void audit_stats(const struct fb_audit *a, struct audit_stats *st)
{
    if (a)
        *st = a->st;
    else
        memset(st, 0, sizeof *st);
}

void audit_close(struct fb_audit *a, const struct fb_net_summary *s)
{
    if (!a)
        return;
    flush(a);
    json_t *o = json_pack("{s:s, s:I, s:I, s:I, s:I, s:I, s:I}", "event", "end", "dns_queries",
                          (json_int_t)s->dns_queries, "dns_aggregated",
                          (json_int_t)a->st.dns_aggregated, "connections",
                          (json_int_t)s->conns, "connections_aggregated",
                          (json_int_t)a->st.conns_aggregated, "bytes_out",
                          (json_int_t)s->bytes_out, "bytes_in", (json_int_t)s->bytes_in);
    write_line(a, o);
    if (a->fd >= 0)
        close(a->fd);
    for (int k = 0; k < K_NKINDS; k++)
        free(a->tab[k].aggs);
    free(a);
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
    write_line(a, o);
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
    limited(a, K_DNS, o, NULL);
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
    json_t *dur = json_pack("{s:I}", "duration_ms", (json_int_t)r->duration_ms);
    /* Refused connections (nothing was relayed) may be aggregated; one that
     * was relayed or failed upstream always gets its own line. */
    if (!strcmp(r->verdict, "deny")) {
        limited(a, K_CONN, o, dur);
        return;
    }
    json_object_update(o, dur);
    json_decref(dur);
    write_line(a, o);
}

void audit_http(struct fb_audit *a, const struct audit_http *r)
{
    if (!a)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string("http"));
    json_object_set_new(o, "name", jstr(r->name));
    json_object_set_new(o, "port", json_integer(r->port));
    json_object_set_new(o, "method", jstr(r->method));
    json_object_set_new(o, "path", jstr(r->path));
    json_object_set_new(o, "status", r->status ? json_integer(r->status) : json_null());
    json_t *names = json_array();
    for (const char *p = r->secrets; p && *p;) {
        size_t n = strcspn(p, ",");
        json_array_append_new(names, json_stringn(p, n));
        p += n + (p[n] == ',');
    }
    json_object_set_new(o, "secrets", names);
    json_object_set_new(o, "verdict", json_string(r->verdict));
    json_object_set_new(o, "reason", jstr(r->reason));
    json_object_set_new(o, "bytes_out", json_integer(r->bytes_out));
    json_object_set_new(o, "bytes_in", json_integer(r->bytes_in));
    write_line(a, o);
}

void audit_grant(struct fb_audit *a, const char *action, const char *kind, const char *spec,
                 int64_t ttl_ms)
{
    if (!a)
        return;
    json_t *o = json_object();
    json_object_set_new(o, "event", json_string(action));
    json_object_set_new(o, "kind", json_string(kind));
    json_object_set_new(o, "spec", jstr(spec));
    json_object_set_new(o, "ttl_ms", ttl_ms ? json_integer(ttl_ms) : json_null());
    write_line(a, o);
}
