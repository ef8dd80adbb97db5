/* server.h — the session server's objects and the interfaces between its
 * files (`fluebox serve`, docs/protocol.md, docs/server.md):
 *
 *   server.c          the event loop: start-up, epoll, timers, the
 *                     graveyard, shutdown; owns struct srv
 *   server_conn.c     client connections: accept, framing of request lines,
 *                     queued replies, flow control
 *   server_methods.c  the dispatch table (from methods.h) and server.info
 *   sess_table.c      sessions and the warm pool: create/destroy/list/info,
 *                     the control socket to each session's init (records,
 *                     their send queue), the spawn worker's results
 *   server_exec.c     exec and exec.kill: pipes, streaming, results
 *   server_run.c      run: a one-shot command in a fresh session, with the
 *                     caller's own descriptors when it passes them
 *   server_file.c     file.* operations: requests to init, bulk pipes
 *   server_ws.c       workspace.* operations (copy-on-write sessions)
 *   server_port.c     published ports: host listeners relayed into sessions
 *   server_log.c      the log of session events (--log-format)
 *   sess_secrets.c    secrets, HTTP rules and upstream CA of session.create
 *   server_grant.c    session.grant / session.revoke
 *
 * Objects: a conn per client connection; a sess (server state of one
 * fb_session, sess_sandbox.c) per session; an op per request that cannot be
 * answered at once (session.create/destroy, exec, file operations). An op is
 * linked to its conn (NULL once the client is gone) and to its session.
 * Everything referenced from epoll is freed only at the end of a loop
 * iteration (the graveyard), so a handler never sees freed memory. All
 * state lives in one struct srv, reached from every object. */
#ifndef FB_SERVER_H
#define FB_SERVER_H

#include "proto.h"
#include "sess_sandbox.h"

#include <pthread.h>
#include <sys/epoll.h>

/* ---- limits (docs/protocol.md section 5) ---- */

struct srv_limits {
    int64_t max_message;
    int64_t max_sessions;
    int64_t max_execs;
    int64_t max_output;
    int64_t max_conns;
    int64_t max_conns_uid; /* connections of one uid other than the server's */
    int64_t pool;
    int64_t conn_mem;   /* memory budget of a connection (bytes) */
    int64_t uid_mem;    /* memory budget of all connections of a uid */
    int64_t file_timeout_ms; /* deadline of a file operation */
};

/* Memory held for a connection (struct conn.mem): its unparsed input, its
 * queued replies, and its requests' buffers (collected output, stdin not
 * yet taken, file data, reservations for file.read answers). At the
 * budget: collected output is cut (reported as truncated), file.read waits
 * (or is refused when nothing of the connection's is in flight), stdin and
 * file.write data are refused; docs/protocol.md section 5. */
#define OUT_PAUSE (4u << 20)   /* queued replies: stop reading requests and output */
#define OUT_RESUME (1u << 20)  /* ... until they drain to this */
#define MAX_INFLIGHT 256
#define EXEC_SPEC_MAX (128 * 1024)
#define GRACE_NS (100 * 1000000ull)
#define CHUNK 65536
#define OUTPUT_FLOOR (64 * 1024) /* collected exec output kept per stream whatever the budget */
#define SECRET_VALUE_MAX (64 * 1024) /* a secret's value (the engine's limit too) */
#define CONN_RXFDS 6 /* descriptors a connection may have sent ahead of its request */

/* ---- objects ---- */

enum wkind { W_LISTEN = 1, W_SIG, W_WORKER, W_CONN, W_CTL, W_PIDFD, W_REAP, W_PIPE, W_WS, W_PORT,
             W_RELAY };

struct watch {
    enum wkind kind;
    int sub;   /* W_PIPE: 0 stdout, 1 stderr, 2 stdin, 3 bulk */
    void *ptr;
    int fd;
    uint32_t ev; /* current epoll events; 0 = not registered */
};

struct srv;
struct op;
struct wsjob;
struct pub;
struct relay;

/* What the connections of one uid hold. */
struct uacct {
    uid_t uid;
    int64_t mem;
    unsigned conns;
    struct uacct *next;
};

struct conn {
    struct srv *srv;
    struct watch w;
    int fd;
    uid_t uid;
    pid_t pid;
    struct uacct *ua;
    int64_t mem;     /* bytes held for it (see above) */
    int64_t need;    /* a request waits until this much more fits; 0 = none */
    struct fb_buf in, out;
    size_t scan;     /* bytes of `in` already searched for a newline */
    bool discard;    /* dropping the rest of an oversized line */
    bool rd_eof;     /* client shut down its side: finish and close */
    bool dead;
    struct op *ops;  /* in flight */
    unsigned nops;
    int rxfds[CONN_RXFDS]; /* descriptors received, not yet taken by a request */
    unsigned nrx;
    struct conn *next, *prev;
};

struct outrec {
    char *rec;
    size_t len;
    int fds[4];
    size_t nfds;
    struct outrec *next;
};

struct sess {
    struct srv *srv;
    struct fb_session *s;
    struct watch wctl, wpid; /* (its network relay's sockets are watched by
                                the relay itself, in the server's epoll) */
    struct watch wreap; /* dying: the loop's own copy of init's pidfd, so a
                           destroy is answered when init is gone (W_REAP) */
    struct op *ops;  /* waiting on init, or on this session */
    struct outrec *qhead, *qtail;
    uint64_t send_retry_ns; /* the kernel had no memory for a record: retry then */
    uint64_t next_tag;
    uint64_t total_execs;
    unsigned running_execs;
    bool dying;      /* destroy requested / expired */
    bool gone;       /* dying and its init reaped: destroy answered, not
                        found or counted any more; clean-up under way */
    bool in_pool;
    struct wsjob *ws;   /* the workspace operation running, or NULL */
    bool release_wait;  /* released once it is done */
    bool dead;       /* freed at the end of the iteration */
    struct pub *pubs;     /* published ports (server_port.c) */
    struct relay *relays; /* their connections */
    unsigned forking;     /* forks being copied from it (server_fork.c) */
    bool release_after_fork; /* its release waits for them */
    struct sess *fork_parent; /* being built as a fork of this one */
    bool run_once;        /* made by `run`: destroyed once its exec is answered */
    struct sess *next, *prev;
    struct sess *idx_next;   /* in srv->idx, filed under idx_key */
    char idx_key[24];        /* "" when not filed */
};

enum opkind { OP_CREATE, OP_DESTROY, OP_EXEC, OP_FILE, OP_WS };
enum fop { F_READ, F_WRITE, F_STAT, F_EXISTS, F_READDIR, F_MKDIR, F_RM, F_RENAME, F_COUNT };

struct xstream {
    struct watch w;
    struct fb_buf buf;  /* collect mode */
    unsigned char carry[4];
    size_t ncarry;
    bool eof, truncated;
    bool cut_mem; /* collect mode: cut by the memory budget, not maxOutputBytes */
};

struct op {
    struct srv *srv;
    enum opkind kind;
    json_t *id;
    struct conn *c;
    struct op *cnext, *cprev;
    struct sess *ss;
    struct op *snext, *sprev;
    uint64_t tag;
    bool dead;
    bool replied; /* init answered (file ops) */
    int64_t mem;     /* bytes of its buffers charged to its connection */
    int64_t reserve; /* file.read: room kept for the answer */
    bool parked;     /* file.read: its answer does not fit yet; the pipe is not read */
    int64_t reserve_want; /* ... the room it waits for */
    /* file ops */
    enum fop fop;
    char *path;
    struct watch wbulk;
    struct fb_buf data;   /* read: collected; write: to send (data.off = sent) */
    int64_t expect;       /* bulk bytes announced, -1 = until EOF */
    bool bulk_done;
    json_t *result;       /* init's reply, waiting for bulk data */
    bool base64;
    int64_t offset, max;
    /* exec */
    char exec_id[72];
    pid_t pid;
    bool started, exited, timed_out, stream, paused;
    int status;
    int64_t oom_before; /* the session's OOM kills when it started, -1 unknown */
    bool oom_killed;    /* SIGKILLed while the session's memory cgroup OOM-killed */
    struct xstream xs[2];
    int64_t out_bytes[2]; /* stdout, stderr: bytes the command wrote (the record) */
    struct watch win;
    struct fb_buf inbuf;
    /* streaming stdin (server_stdin.c) */
    bool stdin_open;     /* started with stdinOpen: the pipe stays after inbuf */
    bool stdin_closing;  /* exec.closeStdin: close once inbuf is written */
    bool stdin_broken;   /* the pipe is gone (EPIPE, the exec ended) */
    uint64_t in_queued, in_written; /* bytes ever put in inbuf / into the pipe */
    struct stdin_wait *stdin_waits; /* exec.write/closeStdin requests to answer */
    bool tty;            /* "tty": output and input through a pseudo-terminal */
    int ptm;             /* its master, from init's "started" record, until used */
    int64_t max_out;
    uint64_t start_ns, end_ns, deadline_ns, grace_ns;
    /* create */
    struct fb_session *pending; /* being spawned */
    /* workspace */
    struct wsjob *ws;
    /* run (server_run.c): the exec to start once the session is made */
    struct runreq *run;
};

/* The graveyard: freed at the end of each loop iteration. */
enum grave_kind { GRAVE_CONN, GRAVE_SESS, GRAVE_OP, GRAVE_EGRESS /* a detached relay */,
                  GRAVE_FREE /* one free() */ };
struct grave {
    enum grave_kind kind;
    void *p;
    struct grave *next;
};

/* The whole server. */
struct srv {
    struct srv_limits lim;
    int ep;                    /* the epoll instance */
    struct conn *conns;
    size_t nconns;
    struct sess *sesss;
    struct sess **idx;       /* sessions by id, chained (sess_find, sess_table.c) */
    size_t idx_cap, idx_n;
    size_t nsess;            /* sessions in sesss, of any state and user */
    int pool_ready, pool_pending;
    uint64_t pool_retry_ns;
    uint64_t timer_due_ns;   /* the earliest a session's timer is due (server.c) */
    uint64_t timer_sweep_ns; /* ... and the next walk of all of them regardless */
    uint64_t pool_defer_ns; /* a refill put off after a take (sess_table.c), 0 = none */
    bool pool_warned;          /* the pool's "not applied" note was shown */
    struct fb_tool_bind *pool_binds; /* the pool's shape (server_pool.c) */
    size_t npool_binds;
    bool pool_reshape;         /* ready sandboxes of another shape to release */
    bool stopping;
    int64_t sandbox_nofile;    /* RLIMIT_NOFILE of sessions that set none */
    struct uacct *uaccts;
    char sock_path[108];
    char *recbuf;              /* SREC_MAX bytes: one record from an init */
    struct grave *graves;
    struct watch wlisten, wsig, wworker, wws;
    pthread_mutex_t ws_mu;     /* guards ws_done */
    struct wsjob *ws_done;     /* finished workspace operations (server_ws.c) */
    uint64_t listen_paused_until;
    size_t nparked;            /* file.reads waiting for memory (server_file.c) */
    uint64_t ports_paused_until; /* published ports out of descriptors (server_port.c) */
    int lock_fd;
    int ready_fd;
    bool exit_with_parent;
    bool remove_dir;           /* --remove-dir: the socket's directory goes with us */
    bool log_json;             /* --log-format json */
    struct foreign_rules foreign; /* what other uids may ask for (--foreign-*) */
};

/* ---- server.c: epoll and the graveyard ---- */
/* Watch w->fd for ev (0: not at all). 0, or -1 with errno (reported). */
int w_set(struct srv *srv, struct watch *w, uint32_t ev);
void w_init(struct watch *w, enum wkind kind, int sub, void *ptr, int fd);
void w_close(struct srv *srv, struct watch *w);
void bury(struct srv *srv, enum grave_kind kind, void *p);
static inline uint64_t now_ns(void) { return fb_now_ns(); }

/* ---- server_conn.c ---- */
void on_accept(struct srv *srv);
void on_conn(struct conn *c, uint32_t events);
void conn_process(struct conn *c);
bool conn_paused(struct conn *c);
/* Has c requests in flight or replies queued? */
bool conn_busy(struct conn *c);
void conn_close(struct conn *c);
void conn_after_op(struct conn *c);
/* Take the n oldest descriptors the client sent (-1: fewer came). */
int conn_take_fds(struct conn *c, int *fds, unsigned n);
/* Queue a line (takes ownership of line). */
void conn_send(struct conn *c, char *line, size_t len);
/* Memory accounting (see above). */
void conn_mem(struct conn *c, int64_t delta);
/* Would `more` bytes take c or its uid over budget? */
bool conn_over(struct conn *c, int64_t more);
/* Bytes c may still take, for itself and its uid. */
int64_t conn_room(struct conn *c);
/* Recount o's buffers and charge the difference to its connection. */
void op_mem_sync(struct op *o);
/* A result line with big strings written straight from buffers, as text
 * (JSON-escaped UTF-8) or base64; small holds the other fields (stolen). */
struct blob {
    const char *name;
    const unsigned char *p;
    size_t n;
};
char *result_line_blobs(json_t *id, json_t *small, const struct blob *b, size_t nb, bool b64,
                        size_t *len);
/* Is base64 the more compact form of these bytes? */
bool blobs_b64_smaller(const struct blob *b, size_t nb);
void send_result(struct conn *c, json_t *id, json_t *result);
void send_error(struct conn *c, json_t *id, struct proto_err *e);
void send_errf(struct conn *c, json_t *id, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
void send_event(struct conn *c, json_t *id, const char *event, json_t *fields);

/* ---- server_methods.c ---- */
enum method_scope { SCOPE_NONE, SCOPE_DYING, SCOPE_ANY, SCOPE_LIVE }; /* methods.h */
struct method;
typedef void method_fn(struct conn *c, const struct method *m, json_t *id, json_t *params,
                       struct sess *ss);
struct method {
    const char *name;
    method_fn *fn;
    enum method_scope scope;
    int arg; /* file.*: the enum fop */
};
/* The table entry of a method, or NULL. */
const struct method *server_method(const char *name);
/* 0: handled; 1: it must wait until c->need bytes fit (nothing done). */
int handle_line(struct conn *c, const char *line, size_t len);

/* The handlers (the table lists them, methods.h). */
method_fn m_session_create, m_session_destroy, m_session_list, m_session_info, m_exec,
    m_exec_kill, m_file, m_server_info, m_workspace, m_workspace_cancel, m_session_publish,
    m_session_unpublish, m_session_fork, m_exec_write, m_exec_close_stdin, m_exec_resize,
    m_session_grant, m_session_revoke, m_run;

/* ---- ops (sess_table.c) ---- */
struct op *op_new(enum opkind kind, struct conn *c, json_t *id, struct sess *ss);
void op_unlink_conn(struct op *o);
/* The op is answered or abandoned: close its fds and bury it. */
void op_finish(struct op *o);
void op_free(struct op *o);

/* ---- sess_table.c ---- */
struct sess *sess_new(struct srv *srv, struct fb_session *s); /* linked into srv */
struct sess *sess_find(struct srv *srv, uid_t uid, const char *id);
/* uid has lim.max_sessions sessions (walks them only when the server holds
 * that many in all). */
bool at_session_limit(struct srv *srv, uid_t uid);
unsigned sessions_of(struct srv *srv, uid_t uid);
/* Send a record to init; takes the fds (closed once sent). Returns -1 when
 * the record is too large, -2 when the session is not running (fds closed). */
int sess_send(struct sess *ss, json_t *hdr, const void *payload, size_t plen, int *fds,
              size_t nfds);
void sess_destroy(struct sess *ss);
void sess_gone(struct sess *ss);
/* Something the server needs of the session failed (errno says what):
 * kill it, fail what waits on it. */
void sess_broken(struct sess *ss, const char *why);
void sess_unwatch(struct sess *ss);
void sess_free(struct sess *ss);
void outq_flush(struct sess *ss);
void outq_free(struct sess *ss);
/* Give the sandbox back (via the worker), closing its published ports;
 * waits for a workspace operation and for forks being copied from it. */
void sess_release(struct sess *ss);
void on_ctl(struct sess *ss);
void spawn_done(struct srv *srv, struct fb_session *s);
void reaped_done(struct srv *srv, struct fb_session *s);
void release_done(struct srv *srv, struct fb_session *s);
/* server_pool.c */
void pool_take_or_spawn(struct conn *c, json_t *id, struct fb_policy *p,
                        struct session_params *sp, json_t *params, json_t *publish,
                        struct runreq *run);
void pool_spawned(struct sess *ss);
void pool_reshape(struct srv *srv);
void pool_refill(struct srv *srv);
int sess_watch(struct sess *ss);
void sess_log_created(struct sess *ss);
json_t *sess_info(struct sess *ss, json_t *running);
/* Relative paths are relative to the session's cwd. */
int join_path(struct sess *ss, const char *p, char **out, struct proto_err *e, const char *param);
int mkpipe(int fds[2], bool server_reads);
/* Descriptors the server may still open (and how many are open, of what
 * limit). server.c. */
int fds_free(int64_t *in_use, int64_t *limit);
/* One of ss's timers may now be due earlier than the loop thinks (a new
 * exec or file operation with a deadline, an exec's end, a session made
 * or taken from the pool, a record to send again, a workspace job). */
void timers_note(struct sess *ss);
/* Descriptors a session holds in the server at most (control socket, pidfd,
 * the relay's sockets once init handed them over, cgroup and copy-on-write
 * directories) plus what building it takes,
 * and what the server keeps free for connections and requests. */
#define FDS_PER_SESSION 32
#define FDS_RESERVE 64
/* Answer "out of file descriptors" (errno EMFILE/ENFILE) plainly. */
void send_out_of_fds(struct conn *c, json_t *id, const char *what);

/* ---- server_run.c ---- */
struct runreq;
void run_free(struct runreq *r);
/* The session of a run is ready (info: its session.create answer, stolen):
 * start the exec; the session goes once it is answered. */
void run_begin(struct sess *ss, struct conn *c, json_t *id, struct runreq *r, json_t *info);
/* The run's exec is answered (or failed): destroy its session. NULL, or
 * not a run's session: nothing. */
void run_end(struct sess *ss);
/* session.create for c (sess_table.c); with r, a run's (r taken). */
void session_create_for(struct conn *c, json_t *id, json_t *params, struct runreq *r);

/* ---- server_exec.c ---- */
/* Start an exec for request id. passed: the caller's stdin, stdout and
 * stderr (taken, closed on failure), given to the command as its own; NULL:
 * pipes through the server. NULL when it failed (answered). */
struct op *exec_start(struct conn *c, json_t *id, json_t *params, struct sess *ss, int *passed);
void exec_kill(struct op *o, int sig);
/* Stop or go on reading the command's output. -1/errno when it cannot. */
int exec_pause(struct op *o, bool pause);
void exec_maybe_finish(struct op *o, bool force);
void on_exec_pipe(struct op *o, int sub);
/* The exec of ss named xid (running or not), or NULL. */
struct op *exec_by_id(struct sess *ss, const char *xid);
/* ---- server_stdin.c ---- */
/* Answer the exec.write / exec.closeStdin requests the pipe has taken
 * (closed: the pipe is closed now; what it did not take gets EPIPE). */
void stdin_progress(struct op *o, bool closed);
void stdin_forget(struct op *o);               /* the exec is ending */
/* A tty exec's "started" record brought its terminal's master (ours now). */
void exec_take_pty(struct op *o, int fd);

/* A record from init about an exec ("started", "exit", "reply"). */
void on_exec_record(struct op *o, const char *opn, json_t *h);

/* ---- server_ws.c ---- */
int ws_start(struct srv *srv, struct fb_err *err);
void ws_on_done(struct srv *srv);          /* its eventfd is readable */
void ws_cancel(struct wsjob *j);
void ws_forget_op(struct op *o);           /* the request is gone: stop its work */
/* Send a progress event when one is due; when the next one is. */
void ws_progress(struct sess *ss, uint64_t now);
uint64_t ws_next_progress(const struct sess *ss); /* UINT64_MAX: none */
void ws_shutdown(struct srv *srv);         /* cancel and join every operation */

/* ---- server_fork.c ---- */
/* The spawn of ss, a fork, is done (either way): the original may go. */
void fork_spawned(struct sess *ss);

/* ---- server_port.c ---- */
void on_port(struct pub *p);                   /* a listener is readable */
void on_relay(struct relay *r, int side, uint32_t ev);
/* init's answer to a "sock" record; true when tag was a relay's (fds taken). */
bool port_on_record(struct sess *ss, uint64_t tag, json_t *h, int *fds, size_t nfds);
/* session.create's "publish": open the listeners (before the sandbox runs). */
int ports_publish_all(struct sess *ss, json_t *list, struct proto_err *e);
int port_spec_parse(json_t *v, const char *param, int *port, int *host_port, bool *any_uid,
                    json_t **hosts, struct proto_err *e);
void ports_start(struct sess *ss);             /* the session is ready: accept */
void ports_resume(struct srv *srv);            /* ports_paused_until has come */
void ports_close(struct sess *ss);             /* close every listener and relay */
json_t *ports_json(struct sess *ss);           /* session.info's "ports" */

/* ---- server_log.c ---- */
/* One line on stderr (text, or JSON with --log-format json); steals fields. */
void srv_log(struct srv *srv, const char *event, const char *session, uid_t uid, json_t *fields);
/* --log-format json: every fb_warn line (of any layer, any thread: a
 * once-per-boot "limits not applied", a --ready-fd error) becomes a
 * {"event":"warning","message":...} line, not a line of text among them. */
void srv_log_warnings(struct srv *srv);
/* "session.EVENT" for ss. */
void srv_log_event(struct sess *ss, const char *event, json_t *fields);

/* ---- server_file.c ---- */
/* The room a file.read's answer needs (base64 of the bytes asked for). */
int64_t file_read_reserve(struct srv *srv, json_t *params);
/* file.reads parked for memory that fit now go on (the main loop, when
 * srv->nparked). */
void file_unpark(struct srv *srv);
void file_unpark_forget(struct op *o);
void on_bulk_pipe(struct op *o);
/* A file operation's deadline passed: answer ETIMEDOUT, end its helper. */
void file_timed_out(struct op *o);
/* A reply from init for a file op. */
void on_file_reply(struct op *o, json_t *h, const char *payload, size_t plen);

/* ---- sess_record.c: a session's flight record (docs/record.md) ---- */
struct fb_record;
/* session.create's "record"/"recordKey": open it (NULL when not asked). */
/* (and the options' --record, --record-key, taken out of pol) */
int sess_record_open(json_t *params, struct fb_policy *pol, bool foreign, struct fb_record **out,
                     struct proto_err *e);
void sess_record_start(struct sess *ss);                /* the session is ready */
void sess_record_exec(struct op *o, json_t *spec);      /* an exec was started */
void sess_record_exec_end(struct op *o, json_t *result); /* and answered */
void sess_record_end(struct sess *ss);                  /* the session ends */
/* A workspace method that changed the layer or the host (commit, reset,
 * snapshot, restore) succeeded: what it did. */
void sess_record_ws(struct sess *ss, const char *method, json_t *params, json_t *result);

#endif
