/* client.c — the command-line clients of `fluebox serve` (docs/server.md):
 *   fluebox session create [RUN OPTIONS] [--ttl D] [--idle-timeout D] [--json]
 *   fluebox session rm ID... | ls [--json] | info ID
 *   fluebox exec [--cwd DIR] [--env K=V]... [--timeout D] [-i] [-t] ID [--] CMD [ARGS...]
 *   fluebox cp [-p] [-r] SRC DST   (client_cp.c)
 * Each takes --socket PATH (default: as the server, docs/protocol.md 1).
 * They speak the wire protocol like any other client: one JSON line per
 * request, blocking I/O, one request at a time (exec streams). */
#include "commands.h"

#include "policy_opts.h"
#include "client.h"
#include "pty.h"
#include "sess_sandbox.h"
#include "toolchain.h"
#include "userdir.h"

#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* The server must be ours or root's, or FLUEBOX_SERVER_UID's (a server
 * another user opened to us): SO_PEERCRED says who called listen(). Anyone
 * else could have put a socket where we look and would receive what we send. */
static int check_peer(int fd, const char *sock, struct fb_err *err)
{
    struct ucred cr;
    socklen_t cl = sizeof cr;
    if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cr, &cl) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: SO_PEERCRED", sock);
    uid_t me = geteuid();
    if (cr.uid == me || cr.uid == 0)
        return 0;
    const char *env = getenv("FLUEBOX_SERVER_UID");
    uint64_t trusted;
    if (env && *env) {
        if (fb_parse_u64(env, &trusted) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "FLUEBOX_SERVER_UID=%s: expected a numeric uid", env);
        if (trusted == cr.uid)
            return 0;
    }
    return fb_errf(err, FB_EXIT_SETUP,
                   "refusing to talk to the server at %s: it runs as uid %u, not as you (uid %u) "
                   "or root (FLUEBOX_SERVER_UID=%u trusts it)",
                   sock, (unsigned)cr.uid, (unsigned)me, (unsigned)cr.uid);
}

/* Nothing listens at sock (or its directory does not exist): one line
 * that says so and how to start a server. */
static int no_server(const char *sock, struct fb_err *err)
{
    return fb_errf(err, FB_EXIT_SETUP,
                   "no `fluebox serve` is running at %s: start one with `fluebox serve &` "
                   "(or point FLUEBOX_SOCKET or --socket at a running one)",
                   sock);
}

int cli_connect(struct cli *c, const char *sock, struct fb_err *err)
{
    static char def[108];
    memset(c, 0, sizeof *c);
    c->fd = -1;
    if (!sock) {
        if (proto_default_socket(def, sizeof def, false, err) < 0) {
            /* No private directory yet: no server ever started here. */
            if (errno == ENOENT) {
                snprintf(def, sizeof def, "/tmp/fluebox-%u/fluebox.sock",
                         (unsigned)fb_outer_uid(geteuid()));
                return no_server(def, err);
            }
            return -1;
        }
        sock = def;
    }
    c->path = sock;
    /* A server that refuses us (too many connections) writes why and
     * closes: our next write fails with EPIPE, which must not kill us
     * before we can say so. */
    signal(SIGPIPE, SIG_IGN);
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(sock) >= sizeof sa.sun_path)
        return fb_errf(err, FB_EXIT_SETUP, "socket path too long: %s", sock);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", sock);
    c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (c->fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socket");
    if (connect(c->fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
        int e = errno;
        close(c->fd);
        c->fd = -1;
        errno = e;
        if (e == ENOENT || e == ECONNREFUSED)
            return no_server(sock, err);
        return fb_errno(err, FB_EXIT_SETUP, "cannot reach the server at %s (is `fluebox serve` running?)", sock);
    }
    if (check_peer(c->fd, sock, err) < 0) {
        close(c->fd);
        c->fd = -1;
        return -1;
    }
    return 0;
}

void cli_close(struct cli *c)
{
    if (c->fd >= 0)
        close(c->fd);
    buf_free(&c->in);
    c->fd = -1;
}

int cli_send(struct cli *c, const char *method, json_t *params, int64_t *id,
                    struct fb_err *err)
{
    *id = ++c->next_id;
    /* A request that may carry a secret's value: our copies go once sent. */
    bool secret = !strcmp(method, "session.create") || !strcmp(method, "session.grant");
    json_t *req = json_pack("{s:I, s:s, s:o}", "id", (json_int_t)*id, "method", method, "params",
                            params ? params : json_object());
    char *s = json_dumps(req, JSON_COMPACT);
    if (secret)
        sess_secrets_wipe(json_object_get(req, "params"));
    json_decref(req);
    if (!s)
        return fb_errf(err, FB_EXIT_SETUP, "cannot encode the request");
    size_t l = strlen(s);
    s[l] = '\n'; /* json_dumps leaves room for the NUL we overwrite */
    int r = fb_write_all(c->fd, s, l + 1);
    if (secret)
        explicit_bzero(s, l + 1);
    free(s);
    if (r < 0) {
        /* Refused or gone: the server may have said why before closing. */
        int e = errno;
        struct fb_err e2 = {0};
        json_t *m = (e == EPIPE || e == ECONNRESET) ? cli_recv(c, &e2) : NULL;
        json_t *er = json_object_get(m, "error");
        if (er) {
            err_from(er, err);
            json_decref(m);
            return -1;
        }
        json_decref(m);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "writing to the server");
    }
    return 0;
}

int cli_send_fds(struct cli *c, const char *method, json_t *params, const int *fds, size_t nfds,
                 int64_t *id, struct fb_err *err)
{
    *id = ++c->next_id;
    json_t *req = json_pack("{s:I, s:s, s:o}", "id", (json_int_t)*id, "method", method, "params",
                            params ? params : json_object());
    char *s = json_dumps(req, JSON_COMPACT);
    json_decref(req);
    if (!s)
        return fb_errf(err, FB_EXIT_SETUP, "cannot encode the request");
    size_t l = strlen(s);
    s[l++] = '\n';
    /* The descriptors go with the line's first bytes; the rest follows. */
    union {
        struct cmsghdr h;
        char b[CMSG_SPACE(8 * sizeof(int))];
    } cm;
    memset(&cm, 0, sizeof cm);
    struct iovec iov = {s, l};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cm.b,
                        .msg_controllen = CMSG_SPACE(nfds * sizeof(int))};
    struct cmsghdr *h = CMSG_FIRSTHDR(&mh);
    h->cmsg_level = SOL_SOCKET;
    h->cmsg_type = SCM_RIGHTS;
    h->cmsg_len = CMSG_LEN(nfds * sizeof(int));
    memcpy(CMSG_DATA(h), fds, nfds * sizeof(int));
    ssize_t n;
    while ((n = sendmsg(c->fd, &mh, MSG_NOSIGNAL)) < 0 && errno == EINTR)
        ;
    int r = n < 0 ? -1 : fb_write_all(c->fd, s + n, l - (size_t)n);
    free(s);
    if (r < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing to the server");
    return 0;
}

json_t *cli_recv(struct cli *c, struct fb_err *err)
{
    for (;;) {
        const char *h = buf_head(&c->in);
        size_t n = buf_pending(&c->in);
        const char *nl = n ? memchr(h, '\n', n) : NULL;
        if (nl) {
            json_t *m = json_loadb(h, (size_t)(nl - h), 0, NULL);
            buf_consume(&c->in, (size_t)(nl - h) + 1);
            if (!json_is_object(m)) {
                json_decref(m);
                fb_errf(err, FB_EXIT_SETUP, "the server sent something that is not a JSON object");
                return NULL;
            }
            return m;
        }
        char buf[65536];
        ssize_t r = read(c->fd, buf, sizeof buf);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            fb_errf(err, FB_EXIT_SETUP, "the server closed the connection");
            return NULL;
        }
        buf_append(&c->in, buf, (size_t)r);
    }
}

void err_from(json_t *er, struct fb_err *err)
{
    const char *code = json_string_value(json_object_get(er, "code"));
    const char *msg = json_string_value(json_object_get(er, "message"));
    fb_errf(err, FB_EXIT_SETUP, "%s (%s)", msg ? msg : "error", code ? code : "?");
}

/* One --secret SPEC as session.create's {name, hosts, value}: the value is
 * read here, from our own environment or FILE, with the checks `run` makes
 * (secrets_load), and goes to the server in the request. */
json_t *cli_secret_json(const char *spec, struct fb_err *err)
{
    struct fb_policy tmp;
    policy_init(&tmp);
    if (policy_add_secret(&tmp, spec, err) < 0 ||
        secrets_load(&tmp, (const char *const *)environ, err) < 0) {
        policy_free(&tmp);
        return NULL;
    }
    const struct fb_secret *sc = &tmp.secrets[0];
    json_t *hosts = json_array();
    for (size_t k = 0; k < sc->nhosts; k++) {
        const struct fb_allow *a = &sc->hosts[k];
        json_array_append_new(hosts, a->port ? json_sprintf("%s%s:%u", a->wildcard ? "*." : "",
                                                            a->name, a->port)
                                             : json_sprintf("%s%s", a->wildcard ? "*." : "", a->name));
    }
    size_t len;
    const uint8_t *v = secret_value(sc, &len);
    json_t *o = json_pack("{s:s, s:o, s:s%}", "name", sc->name, "hosts", hosts, "value",
                          (const char *)v, len);
    policy_free(&tmp);
    return o;
}

int cli_lift_secrets(json_t *params, struct fb_err *err)
{
    json_t *opts = json_object_get(params, "options"), *secrets = NULL;
    for (size_t i = 0; i < json_array_size(opts);) {
        const char *w = json_string_value(json_array_get(opts, i));
        if (!w || strcmp(w, "--secret") || i + 1 >= json_array_size(opts)) {
            i++;
            continue;
        }
        json_t *one = cli_secret_json(json_string_value(json_array_get(opts, i + 1)), err);
        if (!one) {
            sess_secrets_wipe(params);
            json_decref(secrets);
            return -1;
        }
        if (!secrets)
            secrets = json_array();
        json_array_append_new(secrets, one);
        json_array_remove(opts, i + 1);
        json_array_remove(opts, i);
    }
    if (secrets)
        json_object_set_new(params, "secrets", secrets);
    return 0;
}

json_t *cli_call(struct cli *c, const char *method, json_t *params, struct fb_err *err)
{
    int64_t id;
    if (cli_send(c, method, params, &id, err) < 0)
        return NULL;
    for (;;) {
        json_t *m = cli_recv(c, err);
        if (!m)
            return NULL;
        json_t *mid = json_object_get(m, "id");
        if (!json_is_integer(mid) || json_integer_value(mid) != id || json_object_get(m, "event")) {
            json_t *er = json_object_get(m, "error");
            if (json_is_null(mid) && er) {
                err_from(er, err);
                json_decref(m);
                return NULL;
            }
            json_decref(m);
            continue;
        }
        json_t *er = json_object_get(m, "error");
        if (er) {
            err_from(er, err);
            json_decref(m);
            return NULL;
        }
        json_t *res = json_incref(json_object_get(m, "result"));
        json_decref(m);
        if (!res)
            fb_errf(err, FB_EXIT_SETUP, "a response without a result");
        return res;
    }
}

static char *absolute(const char *p)
{
    if (p[0] == '/')
        return fb_xstrdup(p);
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return fb_xstrdup(p);
    return fb_xasprintf("%s/%s", cwd, p);
}

/* A policy option's value as the server must see it: host paths made
 * absolute (the server resolves them from its own working directory). */
char *cli_fix_path_opt(const struct fb_opt *o, const char *v)
{
    switch (o->arg) {
    case FB_ARG_HOST_PATH:
        return absolute(v);
    case FB_ARG_PROFILE: {
        size_t l = strlen(v);
        if (strchr(v, '/') || (l > 5 && !strcmp(v + l - 5, ".json")))
            return absolute(v);
        return fb_xstrdup(v);
    }
    case FB_ARG_HOST_BIND: {
        const char *colon = strchr(v, ':');
        cleanup_free char *src = colon ? fb_xstrndup(v, (size_t)(colon - v)) : fb_xstrdup(v);
        cleanup_free char *abs = absolute(src);
        return colon ? fb_xasprintf("%s%s", abs, colon) : fb_xstrdup(abs);
    }
    default:
        return fb_xstrdup(v);
    }
}

void cli_print_warnings(json_t *res)
{
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(res, "warnings"), i, w)
    {
        if (json_is_string(w))
            fb_warn("%s", json_string_value(w));
    }
}

void print_json(json_t *j)
{
    char *s = json_dumps(j, JSON_INDENT(2));
    if (s) {
        puts(s);
        free(s);
    }
}

int set_socket(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (!*v)
        return fb_errf(err, FB_EXIT_SETUP, "--socket: empty path");
    ((struct copts *)ctx)->sock = v;
    return 0;
}

int set_json(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->json = true;
    return 0;
}

static int set_lifetime(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t ms;
    if (!strcmp(v, "none") || !strcmp(v, "0"))
        ms = 0;
    else if (fb_parse_duration_ms(v, &ms) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a duration such as 30m, or none",
                       o->name, v);
    if (!strcmp(o->name, "ttl"))
        ((struct copts *)ctx)->ttl = ms;
    else
        ((struct copts *)ctx)->idle = ms;
    return 0;
}

const struct fb_opt create_opts[] = {
    SOCKET_OPT,
    {"ttl", 0, FB_ARG_VALUE, "DURATION", FB_OPT_ANY, set_lifetime,
     "destroy the session this long after creation (default: none)", NULL},
    {"idle-timeout", 0, FB_ARG_VALUE, "DURATION", FB_OPT_ANY, set_lifetime,
     "destroy it after this long unused (default 30m; 0 = never)", NULL},
    {"json", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_json, "print the session's info object",
     NULL},
    {"publish", 'p', FB_ARG_VALUE, "[HOSTPORT:]PORT", FB_OPT_ANY, set_publish,
     "relay 127.0.0.1:HOSTPORT on the host to PORT inside (repeatable; see session publish)",
     NULL},
    ALLOW_HOST_OPT,
};
const size_t create_opts_n = FB_ARRAY_LEN(create_opts);

static const char create_usage[] =
    "Usage: fluebox session create [OPTIONS]\n"
    "Creates a session on the server and prints its id. Takes the options of\n"
    "`fluebox run` that make sense for a session (below); --timeout becomes the\n"
    "default timeout of each exec. See docs/server.md.\n"
    "\n";

static int session_create(int argc, char **argv)
{
    struct copts co = {.idle = -1};
    struct fb_policy dummy; /* the rows' context; nothing is applied here */
    struct fb_optset own = {create_opts, FB_ARRAY_LEN(create_opts), &co};
    struct fb_parsed parsed;
    struct fb_err err = {0};
    int r = cli_parse(argc, argv, &dummy, &own, FB_OPT_SESSION, "session create", &parsed, &err);
    if (r == 1) {
        fputs(create_usage, stdout);
        struct fb_optset sets[2] = {own, {cli_policy_opts, cli_npolicy_opts, NULL}};
        opt_help(stdout, sets, 2, FB_OPT_SESSION);
        return 0;
    }
    if (r == 0 && parsed.nargs) {
        r = parsed.dashdash || parsed.nargs > 1
                ? fb_errf(&err, FB_EXIT_SETUP, "session create takes no command (use fluebox exec)")
                : fb_errf(&err, FB_EXIT_SETUP, "session create: unexpected argument \"%s\"",
                          parsed.args[0]);
        opt_parsed_free(&parsed);
    }
    if (r < 0 || opt_apply(&parsed, &co, &err) < 0) {
        opt_parsed_free(&parsed);
        json_decref(co.publish);
        json_decref(co.allow_hosts);
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    if (co.allow_hosts && !co.publish) {
        opt_parsed_free(&parsed);
        json_decref(co.allow_hosts);
        fb_warn("session create: --allow-host applies to --publish: give a port to publish");
        return FB_EXIT_SETUP;
    }
    publish_add_hosts(&co);
    json_decref(co.allow_hosts);
    json_t *opts = json_array();
    for (size_t i = 0; i < parsed.n; i++) {
        const struct fb_optval *v = &parsed.v[i];
        if (v->ctx != &dummy)
            continue;
        json_array_append_new(opts, json_sprintf("--%s", v->o->name));
        if (v->val) {
            char *fixed = cli_fix_path_opt(v->o, v->val);
            json_array_append_new(opts, json_string(fixed));
            free(fixed);
        }
    }
    opt_parsed_free(&parsed);
    json_t *params = json_pack("{s:o, s:I}", "options", opts, "ttlMs", (json_int_t)co.ttl);
    /* --secret: the value is ours (our environment or file), sent as "secrets". */
    if (cli_lift_secrets(params, &err) < 0) {
        json_decref(params);
        json_decref(co.publish);
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    /* The session's exec finds the python3, node, npm our PATH finds. */
    char cwd[4096];
    struct fb_callenv ce;
    callenv_self(&ce, cwd, sizeof cwd);
    json_object_set_new(params, "caller", callenv_to_json(&ce));
    if (co.idle >= 0)
        json_object_set_new(params, "idleTimeoutMs", json_integer(co.idle));
    if (co.publish)
        json_object_set_new(params, "publish", co.publish);
    struct cli c;
    if (cli_connect(&c, co.sock, &err) < 0) {
        json_decref(params);
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    json_t *res = cli_call(&c, "session.create", params, &err);
    cli_close(&c);
    if (!res) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    cli_print_warnings(res);
    if (co.json)
        print_json(res);
    else
        puts(json_string_value(json_object_get(res, "session")));
    json_decref(res);
    return 0;
}

static const char session_usage[] =
    "Usage: fluebox session create [RUN OPTIONS] [--ttl DURATION] [--idle-timeout DURATION]\n"
    "                              [--publish [HOSTPORT:]PORT]... [--json]\n"
    "       fluebox session rm ID...\n"
    "       fluebox session ls [--json]\n"
    "       fluebox session info ID\n"
    "       fluebox session publish [--any-uid] ID [HOSTPORT:]PORT | unpublish ID PORT\n"
    "       fluebox session diff [--json] ID [PATH...] | commit [--force] ID [PATH...] | reset ID\n"
    "       fluebox session fork [--label L] ID | snapshot ID NAME | restore ID NAME\n"
    "       fluebox session grant [--ttl DURATION] ID allow-net|allow-http|secret SPEC\n"
    "       fluebox session revoke ID allow-net|allow-http|secret SPEC\n"
    "All take --socket PATH; fluebox session SUBCOMMAND --help lists each one's options.\n"
    "See docs/server.md.\n";

const struct fb_opt session_opts[] = {
    SOCKET_OPT,
    {"json", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_json, "JSON output", NULL},
};
const size_t session_opts_n = FB_ARRAY_LEN(session_opts);

int client_opts(const char *cmd, const char *usage, const struct fb_opt *opts, size_t n,
                       struct copts *co, int argc, char **argv, unsigned mode,
                       struct fb_parsed *parsed)
{
    struct fb_optset set = {opts, n, co};
    struct fb_err err = {0};
    int r = opt_parse(argc, argv, &set, 1, FB_OPT_ANY | mode, cmd, parsed, &err);
    if (r == 1) {
        fputs(usage, stdout);
        opt_help(stdout, &set, 1, FB_OPT_ANY);
        return 1;
    }
    if (r < 0 || opt_apply(parsed, co, &err) < 0) {
        opt_parsed_free(parsed);
        fb_warn("%s", err.msg);
        return -1;
    }
    return 0;
}

int cmd_session(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(session_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? FB_EXIT_SETUP : 0;
    }
    const char *sub = argv[0];
    if (!strcmp(sub, "create"))
        return session_create(argc - 1, argv + 1);
    bool ls = !strcmp(sub, "ls") || !strcmp(sub, "list");
    bool info = !strcmp(sub, "info");
    int more = client_session_more(argc, argv);
    if (more >= 0)
        return more;
    if (!ls && !info && strcmp(sub, "rm") && strcmp(sub, "destroy")) {
        fb_warn("session: unknown subcommand \"%s\" (create, rm, ls, info, publish, unpublish, "
                "diff, commit, reset, fork, snapshot, restore, grant, revoke; see fluebox session "
                "--help)", sub);
        return FB_EXIT_SETUP;
    }
    char cmd[32], usage[160];
    snprintf(cmd, sizeof cmd, "session %s", sub);
    snprintf(usage, sizeof usage, "Usage: fluebox session %s%s\n\n", sub,
             ls ? " [OPTIONS]" : info ? " [OPTIONS] ID" : " [OPTIONS] ID...");
    struct copts co = {0};
    struct fb_parsed parsed;
    int r = client_opts(cmd, usage, session_opts, ls ? 2 : 1, &co, argc - 1, argv + 1,
                        FB_PARSE_PERMUTE, &parsed);
    if (r)
        return r > 0 ? 0 : FB_EXIT_SETUP;
    argc = parsed.nargs;
    argv = parsed.args;
    const char *sock = co.sock;
    bool as_json = co.json;
    struct fb_err err = {0};
    struct cli c;
    if ((ls && argc) || (!ls && argc < 1) || (info && argc != 1)) {
        if (argc && ls)
            fb_warn("session ls: unexpected argument %s", argv[0]);
        else
            fb_warn("session %s: expected %s (see fluebox session %s --help)", sub,
                    info ? "one session id" : "session ids", sub);
        opt_parsed_free(&parsed);
        return FB_EXIT_SETUP;
    }
    if (cli_connect(&c, sock, &err) < 0) {
        fb_warn("%s", err.msg);
        opt_parsed_free(&parsed);
        return FB_EXIT_SETUP;
    }
    int rc = 0;
    if (ls) {
        json_t *res = cli_call(&c, "session.list", NULL, &err);
        if (!res) {
            fb_warn("%s", err.msg);
            rc = FB_EXIT_SETUP;
        } else if (as_json) {
            print_json(json_object_get(res, "sessions"));
        } else {
            json_t *ss = json_object_get(res, "sessions"), *s;
            size_t i;
            printf("%-20s %-6s %-9s %-7s %-6s %s\n", "SESSION", "STATE", "PROFILE", "NETWORK",
                   "EXECS", "WORKSPACE");
            json_array_foreach(ss, i, s)
            {
                json_t *ws = json_object_get(s, "workspace");
                printf("%-20s %-6s %-9s %-7s %-6lld %s\n",
                       json_string_value(json_object_get(s, "session")),
                       json_string_value(json_object_get(s, "state")),
                       json_string_value(json_object_get(s, "profile")),
                       json_string_value(json_object_get(s, "network")),
                       (long long)json_integer_value(
                           json_object_get(json_object_get(s, "execs"), "total")),
                       json_is_string(ws) ? json_string_value(ws) : "(tmpfs)");
            }
        }
        json_decref(res);
    } else if (!strcmp(sub, "info")) {
        json_t *res = cli_call(&c, "session.info", json_pack("{s:s}", "session", argv[0]), &err);
        if (!res) {
            fb_warn("%s", err.msg);
            rc = FB_EXIT_SETUP;
        } else {
            print_json(res);
        }
        json_decref(res);
    } else {
        for (int i = 0; i < argc; i++) {
            json_t *res = cli_call(&c, "session.destroy", json_pack("{s:s}", "session", argv[i]), &err);
            if (!res) {
                fb_warn("%s: %s", argv[i], err.msg);
                rc = FB_EXIT_SETUP;
            }
            json_decref(res);
        }
    }
    cli_close(&c);
    opt_parsed_free(&parsed);
    return rc;
}

/* ---- exec ---- */

static const char exec_usage[] =
    "Usage: fluebox exec [OPTIONS] SESSION [--] CMD [ARGS...]\n"
    "Runs CMD in the session, streams its output, exits with its status.\n"
    "\n";

static int set_exec_cwd(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->cwd = v;
    return 0;
}

static int set_exec_env(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    const char *eq = strchr(v, '=');
    if (!eq || eq == v)
        return fb_errf(err, FB_EXIT_SETUP, "--env %s: expected K=V", v);
    cleanup_free char *k = fb_xstrndup(v, (size_t)(eq - v));
    json_object_set_new(((struct copts *)ctx)->env, k, json_string(eq + 1));
    return 0;
}

static int set_exec_timeout(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return opt_duration(o, v, &((struct copts *)ctx)->timeout, err);
}

static int set_stdin(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->want_stdin = true;
    return 0;
}

static int set_tty(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->tty = true;
    return 0;
}

const struct fb_opt exec_opts[] = {
    SOCKET_OPT,
    {"cwd", 0, FB_ARG_VALUE, "DIR", FB_OPT_ANY, set_exec_cwd,
     "working directory inside (default: the session's)", NULL},
    {"env", 'e', FB_ARG_VALUE, "K=V", FB_OPT_ANY, set_exec_env,
     "set a variable for this command (repeatable)", NULL},
    {"timeout", 0, FB_ARG_VALUE, "DURATION", FB_OPT_ANY, set_exec_timeout,
     "kill the command after this long (default: the session's)", NULL},
    {"stdin", 'i', FB_ARG_NONE, NULL, FB_OPT_ANY, set_stdin,
     "feed this process's standard input to the command as it comes", NULL},
    {"tty", 't', FB_ARG_NONE, NULL, FB_OPT_ANY, set_tty,
     "a terminal inside (-it from a terminal: raw mode, its size, Ctrl-C to the command)", NULL},
};
const size_t exec_opts_n = FB_ARRAY_LEN(exec_opts);

int write_decoded(int fd, const char *b64, size_t n)
{
    unsigned char *d = fb_xmalloc(b64_decoded_max(n));
    ssize_t l = b64_decode(b64, n, d);
    int r = l > 0 ? fb_write_all(fd, d, (size_t)l) : 0;
    free(d);
    return r;
}

int cli_feed_stdin(struct cli *c, const char *sid, const char *xid, int64_t *wid,
                   struct fb_err *err)
{
    unsigned char buf[65536];
    ssize_t n;
    do
        n = read(0, buf, sizeof buf);
    while (n < 0 && errno == EINTR);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    if (n <= 0) {
        json_t *p = json_pack("{s:s, s:s}", "session", sid, "execId", xid);
        return cli_send(c, "exec.closeStdin", p, wid, err) < 0 ? -1 : 1;
    }
    char *b = fb_xmalloc(b64_encoded_len((size_t)n) + 1);
    size_t bl = b64_encode(buf, (size_t)n, b);
    json_t *p = json_pack("{s:s, s:s, s:s%, s:s}", "session", sid, "execId", xid, "data", b, bl,
                          "encoding", "base64");
    free(b);
    return cli_send(c, "exec.write", p, wid, err) < 0 ? -1 : 0;
}

bool cli_feed_answered(json_t *m, int64_t *wid, bool *feeding)
{
    json_t *mid = json_object_get(m, "id");
    if (!*wid || !json_is_integer(mid) || json_integer_value(mid) != *wid)
        return false;
    /* An error: the command closed its stdin or ended. */
    *wid = 0;
    if (json_object_get(m, "error"))
        *feeding = false;
    json_decref(m);
    return true;
}

int cmd_exec(int argc, char **argv)
{
    struct copts co = {.timeout = -1, .env = json_object()};
    struct fb_parsed parsed;
    int r = client_opts("exec", exec_usage, exec_opts, FB_ARRAY_LEN(exec_opts), &co, argc, argv,
                        0, &parsed);
    if (r) {
        json_decref(co.env);
        return r > 0 ? 0 : FB_EXIT_SETUP;
    }
    const char *sock = co.sock, *cwd = co.cwd, *sid = NULL;
    int64_t timeout = co.timeout;
    bool want_stdin = co.want_stdin;
    json_t *env = co.env;
    argc = parsed.nargs;
    argv = parsed.args;
    int i = 0;
    if (i < argc && strcmp(argv[i], "--"))
        sid = argv[i++];
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (!sid || i >= argc) {
        fb_warn("exec: expected SESSION and a command (see fluebox exec --help)");
        json_decref(env);
        opt_parsed_free(&parsed);
        return FB_EXIT_SETUP;
    }
    json_t *av = json_array();
    for (; i < argc; i++)
        json_array_append_new(av, json_string(argv[i]));
    opt_parsed_free(&parsed);
    char xid[48];
    snprintf(xid, sizeof xid, "cli-%d", (int)getpid());
    json_t *params = json_pack("{s:s, s:o, s:o, s:b, s:s, s:s}", "session", sid, "argv", av, "env",
                               env, "stream", 1, "encoding", "base64", "execId", xid);
    if (cwd)
        json_object_set_new(params, "cwd", json_string(cwd));
    if (timeout >= 0)
        json_object_set_new(params, "timeoutMs", json_integer(timeout));
    struct fb_err err = {0};
    if (want_stdin)
        json_object_set_new(params, "stdinOpen", json_true());
    if (co.tty) {
        int rows = 24, cols = 80;
        fb_tty_size(&rows, &cols);
        json_object_set_new(params, "tty", json_pack("{s:i, s:i}", "rows", rows, "cols", cols));
        const char *term = getenv("TERM");
        if (term && *term && !json_object_get(env, "TERM"))
            json_object_set_new(env, "TERM", json_string(term));
    }
    struct cli c;
    if (cli_connect(&c, sock, &err) < 0) {
        json_decref(params);
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    /* Ctrl-C and friends go to the command (exec.kill), not to us. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    if (co.tty)
        sigaddset(&set, SIGWINCH); /* the caller's terminal was resized */
    sigprocmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    int64_t id;
    if (cli_send(&c, "exec", params, &id, &err) < 0) {
        fb_warn("%s", err.msg);
        cli_close(&c);
        return FB_EXIT_SETUP;
    }
    int rc = FB_EXIT_SETUP;
    /* -it from a terminal: every key goes to the terminal inside. */
    if (co.tty && want_stdin)
        fb_tty_raw(0);
    /* exec -i: stdin is fed while the command runs (one exec.write at a
     * time; wid is the one waiting for its answer, 0 when none). */
    bool feeding = want_stdin;
    int64_t wid = 0;
    for (;;) {
        /* Handle buffered messages first, then wait for more. */
        const char *h = buf_head(&c.in);
        size_t n = buf_pending(&c.in);
        if (!n || !memchr(h, '\n', n)) {
            struct pollfd pf[3] = {{c.fd, POLLIN, 0}, {sfd, POLLIN, 0}, {-1, POLLIN, 0}};
            if (feeding && !wid)
                pf[2].fd = 0;
            if (poll(pf, 3, -1) < 0 && errno != EINTR)
                break;
            if (pf[2].revents) {
                int fr = cli_feed_stdin(&c, sid, xid, &wid, &err);
                if (fr != 0)
                    feeding = false;
                if (fr < 0)
                    fb_warn("%s", err.msg);
            }
            if (sfd >= 0 && pf[1].revents) {
                struct signalfd_siginfo si = {0};
                int rows, cols;
                if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo == SIGWINCH) {
                    if (fb_tty_size(&rows, &cols)) {
                        int64_t rid;
                        cli_send(&c, "exec.resize",
                                 json_pack("{s:s, s:s, s:i, s:i}", "session", sid, "execId", xid,
                                           "rows", rows, "cols", cols),
                                 &rid, &err);
                    }
                } else if (si.ssi_signo) {
                    int64_t kid;
                    json_t *kp = json_pack("{s:s, s:s, s:i}", "session", sid, "execId", xid,
                                           "signal", (int)si.ssi_signo);
                    cli_send(&c, "exec.kill", kp, &kid, &err);
                }
            }
            if (!pf[0].revents)
                continue;
        }
        json_t *m = cli_recv(&c, &err);
        if (!m) {
            fb_warn("%s", err.msg);
            break;
        }
        if (cli_feed_answered(m, &wid, &feeding))
            continue;
        json_t *mid = json_object_get(m, "id");
        if (!json_is_integer(mid) || json_integer_value(mid) != id) {
            json_decref(m);
            continue; /* exec.kill's answer, or a stray error */
        }
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (ev) {
            json_t *d = json_object_get(m, "data");
            if (json_is_string(d) && (!strcmp(ev, "stdout") || !strcmp(ev, "stderr")))
                write_decoded(!strcmp(ev, "stdout") ? 1 : 2, json_string_value(d),
                              json_string_length(d));
            json_decref(m);
            continue;
        }
        json_t *er = json_object_get(m, "error");
        if (er) {
            err_from(er, &err);
            fb_warn("%s", err.msg);
        } else {
            json_t *res = json_object_get(m, "result");
            /* A timeout is said on the command's stderr by the server. */
            rc = (int)json_integer_value(json_object_get(res, "exitCode"));
        }
        json_decref(m);
        break;
    }
    fb_tty_restore();
    if (sfd >= 0)
        close(sfd);
    cli_close(&c);
    return rc;
}
