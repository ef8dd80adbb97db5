/* egress.h — the supervisor side of the network allowlist: a DNS responder
 * that hands out synthetic addresses for allowed names, a relay that maps a
 * connection to a synthetic address back to its name, checks SNI / Host,
 * resolves and connects on the host and copies bytes both ways, an optional
 * HTTP CONNECT proxy, and the audit log.
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

/* Start serving the sockets net_setup_child() created (takes ownership of
 * fds, in any order: each socket is recognised by its type and address).
 * p must outlive e. The thread that calls egress_dispatch() should keep
 * SIGPIPE blocked (as the supervisor does) so the relay can use splice();
 * otherwise it copies through buffers. */
int egress_start(const struct fb_policy *p, const int *fds, size_t nfds,
                 struct fb_egress **out, struct fb_err *err);
int egress_fd(const struct fb_egress *e);
void egress_dispatch(struct fb_egress *e);
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
