/* client.h — what the command-line clients of `fluebox serve` share
 * (client.c has the connection and the session/exec subcommands,
 * client_ws.c the session subcommands for workspaces, ports, forks and
 * snapshots, client_cp.c `fluebox cp`): one blocking connection speaking the
 * wire protocol, and the options every subcommand takes. */
#ifndef FB_CLIENT_H
#define FB_CLIENT_H

#include "options.h"
#include "proto.h"

struct cli {
    int fd;
    struct fb_buf in;
    int64_t next_id;
    const char *path;
};

/* Connect to the server at sock (NULL: the default path), checking that it
 * runs as us, root or FLUEBOX_SERVER_UID. */
int cli_connect(struct cli *c, const char *sock, struct fb_err *err);
void cli_close(struct cli *c);
/* Send one request (steals params); *id is its id. */
int cli_send(struct cli *c, const char *method, json_t *params, int64_t *id, struct fb_err *err);
/* The same with descriptors (SCM_RIGHTS, at most 8) sent along. */
int cli_send_fds(struct cli *c, const char *method, json_t *params, const int *fds, size_t nfds,
                 int64_t *id, struct fb_err *err);
/* Next message from the server (a new reference), or NULL on EOF/error. */
json_t *cli_recv(struct cli *c, struct fb_err *err);
/* One request, wait for its response; events are ignored. Returns the
 * result (new reference) or NULL with err (the server's message and code). */
json_t *cli_call(struct cli *c, const char *method, json_t *params, struct fb_err *err);
/* session.create params: each "--secret SPEC" of "options" becomes an
 * element of "secrets" with the value read from our environment or FILE
 * (the server never reads its own for us). -1 with err (nothing is left). */
int cli_lift_secrets(json_t *params, struct fb_err *err);
/* One --secret SPEC as {"name", "hosts", "value"}, the value read here (our
 * environment or FILE), or NULL with err. */
json_t *cli_secret_json(const char *spec, struct fb_err *err);
/* err from a response's error object (exit code 125). */
void err_from(json_t *er, struct fb_err *err);
void print_json(json_t *j);
/* session.create's "warnings", one fluebox: line each on stderr. */
void cli_print_warnings(json_t *res);
/* A policy option's value as the server must see it: host paths made
 * absolute (the server resolves them from its own directory). Allocated. */
char *cli_fix_path_opt(const struct fb_opt *o, const char *v);
/* exec -i, run --server: the next piece of our stdin for the command
 * (exec.write, request id *wid), or at its end exec.closeStdin. One request
 * at a time: the next read waits for its answer, so a command that does not
 * read holds us up. Returns 1 when stdin ended (closeStdin sent), 0 after a
 * write, -1 on error. */
int cli_feed_stdin(struct cli *c, const char *sid, const char *xid, int64_t *wid,
                   struct fb_err *err);
/* True when m is the answer to the exec.write *wid waits for: then the next
 * piece may go (*wid = 0), an error ends the feeding (*feeding = false), and
 * m is released. */
bool cli_feed_answered(json_t *m, int64_t *wid, bool *feeding);
/* Decode base64 and write it to fd. */
int write_decoded(int fd, const char *b64, size_t n);


/* The options every client subcommand shares, and their values. */
struct copts {
    const char *sock;
    bool json;
    int64_t ttl, idle;
    const char *cwd;
    json_t *env;
    int64_t timeout;
    bool want_stdin, parents, recursive, any_uid, force, patch, tty;
    json_t *publish; /* session create --publish */
    json_t *allow_hosts; /* --allow-host: the publish's Host allowlist */
    const char *label;
};

int set_socket(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err);
int set_json(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err);

/* A macro, not a const object: C wants constants in initialisers. */
#define SOCKET_OPT                                                                               \
    {"socket", 0, FB_ARG_HOST_PATH, "PATH", FB_OPT_ANY, set_socket,                              \
     "the server's socket (default: as fluebox serve, docs/protocol.md)", NULL}

/* Parse a client subcommand's options (anywhere on the line with
 * FB_PARSE_PERMUTE); 1 = --help (printed), -1 = error (printed). */
int client_opts(const char *cmd, const char *usage, const struct fb_opt *opts, size_t n,
                struct copts *co, int argc, char **argv, unsigned mode, struct fb_parsed *parsed);

/* fluebox session publish|unpublish|diff|commit|reset|fork|snapshot|restore
 * (client_ws.c); argv[0] is the subcommand. -1: not one of them. */
int client_session_more(int argc, char **argv);
/* session create --publish [HOSTPORT:]PORT */
int set_publish(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err);
/* --allow-host NAME (session publish, session create): the published
 * ports' Host allowlist; publish_add_hosts puts it on each --publish. */
int set_allow_host(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err);
void publish_add_hosts(struct copts *co);
#define ALLOW_HOST_OPT                                                                           \
    {"allow-host", 0, FB_ARG_VALUE, "NAME", FB_OPT_ANY, set_allow_host,                          \
     "publish: relay only HTTP requests whose Host is NAME (repeatable; *.NAME too)", NULL}

/* `fluebox run --server [SOCKET]` or FLUEBOX_SERVER (client_run.c): when
 * the run is to be served by a server, runs it there and returns 1 with
 * *code set; 0: a cold run (not asked for). */
int client_run_maybe(int argc, char **argv, int *code);

#endif
