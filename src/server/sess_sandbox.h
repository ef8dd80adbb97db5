/* sess_sandbox.h — sessions on the supervisor (server) side: building a session's
 * policy from session.create parameters, the warm-pool match, spawning and
 * releasing sandboxes on a worker thread (so the server's event loop never
 * waits for a clone), the info object, and the record format spoken with the
 * session's init (sess_init.c) over the control socket once it is READY.
 *
 * Records (server <-> init), one SOCK_SEQPACKET message each:
 *   u32 header length (host order) | JSON header | raw payload
 * plus optional descriptors (SCM_RIGHTS). Every header has "op" and "t" (the
 * server's tag for the request). Server -> init ops: exec, kill, read, write,
 * stat, exists, readdir, mkdir, rm, rename. Init -> server: started, exit,
 * reply (result or errno), and net (no tag: the network's listening sockets
 * init kept, handed over at the first query or connection; the server
 * serves only those it gave up in egress_park, each checked by type and
 * address). Bulk data (file contents over SREC_INLINE bytes,
 * big listings) goes through a pipe the server passes with the request;
 * init moves it itself in chunks when the pipe is ready (non-blocking), so
 * it never blocks on a slow reader and code in the session (which cannot
 * signal the namespace's init) cannot hold it up. The server treats
 * everything init sends as untrusted input. */
#ifndef FB_SESSION_H
#define FB_SESSION_H

#include "policy.h"
#include "proto.h"
#include "spawn.h"

#define SREC_MAX (192 * 1024)   /* largest record */
#define SREC_INLINE (64 * 1024) /* payloads up to this travel inside the record */

/* Encode a record (steals hdr). Returns a malloc'ed buffer; NULL if too big. */
char *srec_encode(json_t *hdr, const void *payload, size_t plen, size_t *len);
/* Send an encoded record with fds; flags for sendmsg (MSG_DONTWAIT). 0 or -1/errno. */
int srec_send(int sock, const char *rec, size_t len, const int *fds, size_t nfds, int flags);
/* Receive one record into buf (cap SREC_MAX); fds (capacity *nfds) receive
 * descriptors (close-on-exec). Returns 1 and fills hdr (new reference),
 * payload; 0 on EOF; -1/errno (EAGAIN when nothing is there, EPROTO when
 * the record is malformed: its fds are closed). */
int srec_recv(int sock, char *buf, int flags, json_t **hdr, const char **payload, size_t *plen,
              int *fds, size_t *nfds);

enum session_state {
    SESS_POOL,     /* ready, in the warm pool, not owned by anyone */
    SESS_STARTING, /* the worker is spawning it */
    SESS_READY,
    SESS_DEAD,     /* init died; resources released or being released */
};

struct fb_session {
    char id[24];            /* "s-" + 16 hex */
    uid_t uid;
    struct fb_policy pol;   /* the session's policy (what session.info shows) */
    struct fb_sandbox sb;   /* valid in POOL and READY */
    enum session_state state;
    bool pooled;            /* came from the warm pool */
    bool spawned;           /* sb holds a live or unreaped sandbox */
    struct fb_notes notes;  /* warnings for the client that creates it (its policy's
                               and its sandbox's making), given once in the
                               session.create result's "warnings" */
    bool releasing;         /* the worker is releasing sb */
    char **env;             /* base environment of execs ("K=V", NULL-terminated) */
    char *cwd;              /* default working directory (absolute) */
    int64_t ttl_ms, idle_ms, exec_timeout_ms;
    int64_t created_ms, last_used_ms; /* wall clock, ms since the epoch */
    uint64_t created_ns, last_used_ns; /* monotonic */
    char death[128];        /* why it died */
    char *label;            /* the client's label, or NULL */
    json_t *params;         /* the session.create params it was made with (fork) */
    struct fb_fork *fork;   /* being built as a fork: what to copy (sess_copy.h) */
    char forked_from[24];   /* the original's id, or "" */
    struct fb_err spawn_err;
    int spawn_rc;
    /* A pool sandbox: the worker builds its policy (session_pool_policy)
     * before spawning it, off the server's loop; with these set over it. */
    bool pool_policy;
    bool pool_quiet;
    int64_t pool_nofile;
    struct fb_tool_bind *pool_binds; /* the pool's shape: the tool binds it carries */
    size_t npool_binds;
    void *srv;              /* the server's per-session state (struct sess, server.h) */
    uintptr_t queue_key;    /* whose spawn queue it waits in (the workers take turns
                               between them): its connection; 0 for the pool */
    struct fb_record *rec;  /* session.create's "record" (sess_record.c), or NULL */
};

/* Session parameters that live beside the policy. */
struct session_params {
    int64_t ttl_ms, idle_ms, exec_timeout_ms;
    json_t *env;     /* borrowed; NULL = none */
    const char *cwd; /* NULL = the policy's */
    const char *label; /* NULL = none */
    bool pool_ok;    /* may take from the pool (params match the pool's) */
    struct fb_notes notes; /* warnings of the policy's making (policy_finish) */
    struct fb_record *rec; /* the record to move into the session (session_apply_params) */
};

/* What the server lets other uids ask for (fluebox serve --foreign-*), when
 * its socket is opened to them: built-in profiles by name, the run options
 * (one flag per row of cli_policy_opts), and whether the host network. */
struct foreign_rules {
    char **profiles;
    size_t nprofiles;
    bool *opts;
    bool net_host;
};
/* strict and standard; the rows marked FB_OPT_FOREIGN; no host network. */
void foreign_rules_default(struct foreign_rules *r);
void foreign_rules_free(struct foreign_rules *r);
/* Comma-separated lists replacing the defaults ("none": nothing). 0, or -1
 * with a one-line error naming what is not allowed there. */
int foreign_rules_set_profiles(struct foreign_rules *r, const char *list, struct fb_err *err);
int foreign_rules_set_options(struct foreign_rules *r, const char *list, struct fb_err *err);

/* Build the policy for session.create params: the profile, the typed
 * parameters through the policy's typed setters (policy_set.h), then
 * "options" parsed with the run options' table, where only the rows a
 * session accepts are allowed (policy_opts.c). foreign: the rules for a peer that
 * is neither the server's uid nor root, NULL for those. Fills e
 * (invalid_params / permission_denied) on failure. */
int session_policy_from_params(json_t *params, const struct foreign_rules *foreign,
                               struct fb_policy *p, struct session_params *sp,
                               struct proto_err *e);
/* May the caller set the typed parameter param, which stands for the run
 * option opt (foreign: the rules for another uid, NULL for the server's own
 * uid and root)? 0, or -1 with permission_denied in e. */
int session_check_field(const struct foreign_rules *r, const char *param, const char *opt,
                        struct proto_err *e);
/* sess_secrets.c: session.create's "secrets" (names and hosts), "allowHttp"
 * and "upstreamCa" into p; then, once p is finished, the secrets' values
 * (the client's) into the engine's keeping. */
int sess_secret_fields(json_t *params, const struct foreign_rules *r, struct fb_policy *p,
                       struct proto_err *e);
int sess_secrets_load(json_t *params, struct fb_policy *p, struct proto_err *e);
/* Wipe and remove the real values a request's params carry ("secrets"[].value,
 * "value"). */
void sess_secrets_wipe(json_t *params);
/* A copy of a session's kept params with its secrets' values again, taken
 * from its policy (session.fork; a secret revoked whole is left out); wipe
 * it once the fork's policy is made. */
json_t *sess_secrets_refill(json_t *params, const struct fb_policy *orig);
/* The info object's "secrets" (names and hosts, never values) and
 * "allowHttp". */
void sess_secrets_info(const struct fb_policy *p, json_t *o);

/* The policy of a pool sandbox (the default one). */
int session_pool_policy(struct fb_policy *p, struct fb_err *err);

struct fb_session *session_new(void);
void session_set_id(struct fb_session *s);
/* Fill env/cwd/timeouts from the policy and params. */
void session_apply_params(struct fb_session *s, struct session_params *sp);
/* The session's warnings as session.create's "warnings" (an array of
 * strings) on info, then forgotten: a client is told once. */
void session_give_warnings(struct fb_session *s, json_t *info);
/* Take a pooled sandbox for policy p: apply p's cgroup limits. 0, or -1 when
 * the limits cannot be changed (the caller then spawns afresh). */
int session_adopt_limits(struct fb_session *s, const struct fb_policy *p);
void session_free(struct fb_session *s); /* sandbox must be released */
void session_touch(struct fb_session *s); /* a request named it */

/* The info object (docs/protocol.md 4.4). running: exec ids (stolen). */
json_t *session_info(struct fb_session *s, json_t *running, uint64_t total_execs);

/* The worker threads: spawn and release sandboxes (several at once). */
/* WJ_REAPED is never submitted: a release reports it when the sandbox's init
 * is reaped (nothing of the sandbox runs any more), before its clean-up. */
enum worker_job { WJ_SPAWN, WJ_RELEASE, WJ_REAPED };
int worker_start(struct fb_err *err);
int worker_fd(void); /* readable when jobs are done */
void worker_ack(void); /* reset worker_fd's readiness; then drain worker_done() */
/* Main thread, when worker_fd is readable, at a point where it holds no
 * lock: lets a pending clone3 happen (see sandbox_clone_guard). */
void worker_hold(void);
void worker_submit(struct fb_session *s, enum worker_job kind);
/* A finished job, or NULL. */
struct fb_session *worker_done(enum worker_job *kind);
void worker_stop(void); /* waits for queued jobs to finish */

/* pid 1's loop in a session sandbox (sess_init.c): handed to
 * sandbox_spawn_session() as its main, run by init once it has hardened
 * itself. */
__attribute__((noreturn)) void sess_init_main(const struct fb_policy *p, int ctl);

/* The same loop as the whole program of a fresh image (spawn.h, image_fd):
 * main() calls it for `fluebox __session-init CTL SCRATCH SECCOMP`. It makes
 * itself undumpable, loads the filters the server sends on CTL, and serves.
 * Returns (FB_EXIT_SETUP, a one-line message) only when its arguments are
 * not those init passes. */
int sess_init_image(int argc, char **argv);

#endif
