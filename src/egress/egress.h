/* egress.h — the supervisor side of the network allowlist: a DNS responder
 * that hands out synthetic addresses for allowed names, a relay that maps a
 * connection to a synthetic address back to its name, checks SNI / Host,
 * resolves and connects on the host and copies bytes both ways, an optional
 * HTTP CONNECT proxy, and the audit log. Hosts of secrets and HTTP rules are
 * inspected: TLS terminated with a per-run CA, every request read, checked
 * and rewritten (docs/secrets.md).
 *
 * It runs inside the supervisor's event loop: egress_fd() is an epoll fd that
 * becomes readable when egress has work; the supervisor then calls
 * egress_dispatch(), which never blocks. Design, limits and threat model:
 * docs/network.md. */
#ifndef FB_EGRESS_H
#define FB_EGRESS_H

#include "policy.h"
#include "report.h"

struct fb_egress;
struct tls_ca;

/* The per-run CA of inspected connections (docs/secrets.md), made by the
 * supervisor before the sandbox's root is built (its certificate goes into
 * the sandbox's trust store); egress_adopt_ca() hands it to the relay.
 * NULL (and 0) when the policy needs none. Names constrained to the
 * policy's secrets' and rules' hosts unless p->tls_ca. */
int egress_ca_new(const struct fb_policy *p, struct tls_ca **out, struct fb_err *err);
const char *egress_ca_pem(const struct tls_ca *ca);
unsigned long egress_ca_hash(const struct tls_ca *ca);
void egress_ca_free(struct tls_ca *ca);
void egress_adopt_ca(struct fb_egress *e, struct tls_ca *ca);

/* Rules changed while the sandbox runs (session.grant / session.revoke),
 * from any thread: safe against the relay's loop and its inspecting
 * threads. Recorded in the net log. spec is as on the command line:
 *   FB_GRANT_ALLOW   an --allow-net pattern (its port must be one the
 *                    sandbox listens on: 80/443 or one allowed at start)
 *   FB_GRANT_HTTP    an --allow-http rule (its host allowed, inspected)
 *   FB_GRANT_SECRET  NAME:HOST[,HOST...] with the value; a NAME the sandbox
 *                    already has keeps its stand-in (new value and hosts),
 *                    a new NAME gets one: egress_standin() says which, for
 *                    the caller to pass inside
 * Revoking: the same specs; FB_GRANT_SECRET "NAME" revokes all of it (the
 * value is wiped; its stand-in is refused from then on), "NAME:HOSTS"
 * those hosts. ttl_ms > 0: the grant lapses then. 0 or -1 with err. */
struct fb_grant {
    enum { FB_GRANT_ALLOW, FB_GRANT_HTTP, FB_GRANT_SECRET } kind;
    const char *spec;
    const char *value;
    size_t value_len;
    int64_t ttl_ms;
};
int egress_grant(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err);
int egress_revoke(struct fb_egress *e, const struct fb_grant *g, struct fb_err *err);
/* The stand-in of secret name into buf, or NULL when there is none. */
const char *egress_standin(struct fb_egress *e, const char *name, char *buf, size_t cap);

/* Start serving the sockets net_setup_child() created (takes ownership of
 * fds, in any order: each socket is recognised by its type and address).
 * p must outlive e. The thread that calls egress_dispatch() should keep
 * SIGPIPE blocked (as the supervisor does) so the relay can use splice();
 * otherwise it copies through buffers. */
int egress_start(const struct fb_policy *p, const int *fds, size_t nfds,
                 struct fb_egress **out, struct fb_err *err);
int egress_fd(const struct fb_egress *e);
void egress_dispatch(struct fb_egress *e);

/* A supervisor with many relays (the server: one per session) can have
 * them watch their descriptors in its own epoll instead of one epoll each
 * (one descriptor less per sandbox): egress_share_epoll moves them there
 * (egress_fd is then of no use). Its loop tells the relay's events by the
 * first int behind the event's pointer, FB_EGRESS_HANDLE_KIND or above
 * (its own pointers' first ints must stay below), hands each to
 * egress_event, and after the batch calls egress_flush once (what the
 * events closed is freed there, not during the batch). egress_detach takes
 * them out again before the relay goes: egress_free of a detached relay
 * must then wait until the batch is over (events of it already fetched are
 * ignored until then). All on one thread. */
#define FB_EGRESS_HANDLE_KIND 64
int egress_share_epoll(struct fb_egress *e, int ep);
void egress_event(void *handle, uint32_t events);
void egress_flush(void);
void egress_detach(struct fb_egress *e);
/* An idle sandbox's relay need not hold its listening sockets (the
 * resolver's two, the proxy's, one per allowed port): when the sandbox's
 * init keeps copies of them and watches them, egress_park closes the
 * relay's (a shared relay with no connection; returns how many), and init
 * hands them back at the first query or connection, which egress_unpark
 * serves again (fds taken, in any order, each recognised as in
 * egress_start; -1 with err for one that is not a parked listener's, which
 * is closed). A server holds one descriptor per idle session instead of 3. */
int egress_park(struct fb_egress *e);
int egress_unpark(struct fb_egress *e, const int *fds, size_t nfds, struct fb_err *err);
void egress_summary(const struct fb_egress *e, struct fb_net_summary *s);
/* The one line (without "fluebox: ") that says what the allowlist denied
 * and how to allow it; false when nothing was. */
bool egress_denial_note(const struct fb_net_summary *s, char *buf, size_t cap);
void egress_free(struct fb_egress *e);
/* --record: every DNS query and connection from now on is recorded too,
 * through the net log's rate limit and aggregation (netlog.h); NULL: no
 * more (before rec is closed, when e outlives it). rec must outlive e or be
 * detached. Called before the sandbox runs anything (nothing is dispatched
 * before the supervisor's loop). */
struct fb_record;
void egress_set_record(struct fb_egress *e, struct fb_record *rec);

#endif
