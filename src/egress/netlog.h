/* netlog.h — the network audit log (--net-log FILE): one JSON object per line
 * for each DNS query and each connection, appended to FILE (created 0600).
 * It only formats and writes; egress decides what happened. Repeated DNS
 * queries and refused connections are rate-limited and aggregated (see
 * netlog.c); relayed connections always get their own line. A NULL struct
 * fb_audit (no --net-log) is valid everywhere and writes nothing. The
 * format is documented in docs/network.md. */
#ifndef FB_AUDIT_H
#define FB_AUDIT_H

#include "report.h"

struct fb_audit;

/* One connection, when it ends (or is refused). NULL strings are null. */
struct audit_conn {
    const char *name;
    unsigned port;        /* 0: null */
    const char *via;      /* "transparent" or "proxy" */
    const char *dest;     /* what the sandbox connected to */
    const char *verdict;  /* "allow", "deny", "error" */
    const char *reason;
    const char *protocol; /* "tls", "tls+ech", "http", "opaque" */
    const char *upstream; /* host-side address */
    int64_t bytes_out, bytes_in, duration_ms;
};

/* One request on an inspected connection (docs/secrets.md): never
 * aggregated. secrets: the names (never the values) of the secrets swapped
 * in, comma-separated ("" none). status 0: no response. */
struct audit_http {
    const char *name;
    unsigned port;
    const char *method;
    const char *path;     /* the query's values left out */
    int status;
    const char *secrets;
    const char *verdict;  /* "allow", "deny", "error" */
    const char *reason;
    int64_t bytes_out, bytes_in;
};

/* What the log aggregated instead of writing line by line. */
struct audit_stats {
    int64_t lines;            /* lines written */
    int64_t dns_aggregated;   /* DNS queries counted in aggregate lines */
    int64_t conns_aggregated; /* refused connections counted in aggregate lines */
};

/* Open (append to) path; NULL: no file (the lines go only to the record). */
struct fb_audit *audit_open(const char *path, struct fb_err *err);
/* Every line from now on goes to the flight record too (NULL: no more),
 * rate-limited and aggregated the same way, so a flood cannot bury it. */
struct fb_record;
void audit_set_record(struct fb_audit *a, struct fb_record *rec);
/* The first line of a run: {"event":"start","mode":MODE,"note":NOTE}. */
void audit_start(struct fb_audit *a, const char *mode, const char *note);
/* One DNS query: name as shown (NULL: unreadable), type ("A", ...; NULL when
 * unknown), transport "udp"/"tcp", a4 the answer (network order) or NULL. */
void audit_dns(struct fb_audit *a, const char *name, const char *type, const char *transport,
               const char *verdict, const char *reason, const uint32_t *a4);
void audit_conn(struct fb_audit *a, const struct audit_conn *r);
void audit_http(struct fb_audit *a, const struct audit_http *r);
/* A run-time rule change (egress_grant / egress_revoke). */
void audit_grant(struct fb_audit *a, const char *action, const char *kind, const char *spec,
                 int64_t ttl_ms);
/* Aggregated events are waiting for the end of their interval: call
 * audit_tick() about once a second until this is false. */
bool audit_pending(const struct fb_audit *a);
void audit_tick(struct fb_audit *a);
void audit_stats(const struct fb_audit *a, struct audit_stats *st);
/* Write what is pending and the "end" line (with s's totals), close. */
void audit_close(struct fb_audit *a, const struct fb_net_summary *s);

#endif
