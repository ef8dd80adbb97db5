/* client_run.c — `fluebox run --server [SOCKET]` (or FLUEBOX_SERVER=1 or a
 * socket path): a one-shot run served by a running `fluebox serve` instead of
 * a cold start. Over one connection it creates a session with the run's
 * options (the same rows, the same checks as `session create`: an option a
 * session cannot honour is refused, never dropped), runs the command there
 * as a streamed exec, forwards SIGINT/SIGTERM/SIGHUP/SIGQUIT to it
 * (exec.kill), and destroys the session. Exit status as a cold run: the
 * command's, 124 timeout, 126/127, 128+N, 125 for fluebox's own errors.
 * Standard input is streamed (exec.write, exec.closeStdin at its end).
 * docs/server.md says what differs from a cold run. */
#include "policy_opts.h"
#include "client.h"
#include "toolchain.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/signalfd.h>

/* A session whose client vanished (killed) is removed after this long. */
#define RUN_IDLE_MS 60000

/* Is the run to be served, and where? Scans the options before "--" (values
 * of options that take one are skipped, so "--env --server" is a value) and
 * removes --server [SOCKET] / --server=SOCKET from them. FLUEBOX_SERVER: "1"
 * the default socket, "0" or empty not at all, anything else a socket path. */
static bool wants_server(int argc, char **argv, char **out, int *outc, const char **sock,
                         struct fb_err *err)
{
    bool want = false;
    const char *env = getenv("FLUEBOX_SERVER");
    if (env && *env && strcmp(env, "0")) {
        want = true;
        *sock = strcmp(env, "1") ? env : NULL;
    }
    int n = 0, i = 0;
    for (; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            break;
        if (!strcmp(a, "--server")) {
            want = true;
            *sock = NULL;
            if (i + 1 < argc && argv[i + 1][0] && argv[i + 1][0] != '-')
                *sock = argv[++i];
            continue;
        }
        if (!strncmp(a, "--server=", 9)) {
            want = true;
            *sock = a + 9;
            if (!**sock) {
                fb_errf(err, FB_EXIT_SETUP, "--server=: empty socket path");
                return true;
            }
            continue;
        }
        out[n++] = argv[i];
        if (a[0] != '-') {
            i++;
            break; /* an operand: the parser says what is wrong with it */
        }
        if (a[1] == '-' && !strchr(a, '=')) {
            const struct fb_opt *o = opt_find(cli_policy_opts, cli_npolicy_opts, a + 2);
            if (o && o->arg && i + 1 < argc)
                out[n++] = argv[++i];
        }
    }
    for (; i < argc; i++) /* "--" and the command */
        out[n++] = argv[i];
    out[n] = NULL;
    *outc = n;
    return want;
}

/* The run's options as session.create's "options" (host paths absolute) and
 * its command; -1 with err, 1 for --help. */
static int parse_run(int argc, char **argv, json_t **opts, json_t **av, struct fb_err *err)
{
    struct fb_policy dummy; /* the rows' context; nothing is applied here */
    struct fb_parsed parsed;
    int r = cli_parse(argc, argv, &dummy, NULL, FB_OPT_SESSION, "run", &parsed, err);
    if (r == 1) {
        fputs(cli_run_usage, stdout);
        struct fb_optset set = {cli_policy_opts, cli_npolicy_opts, NULL};
        opt_help(stdout, &set, 1, FB_OPT_SESSION);
        return 1;
    }
    if (r < 0) {
        /* Valid for a cold run: say that it is --server that cannot do it. */
        struct fb_parsed p2;
        struct fb_err e2 = {0};
        if (cli_parse(argc, argv, &dummy, NULL, FB_OPT_RUN, "run", &p2, &e2) == 0) {
            opt_parsed_free(&p2);
            char what[sizeof err->msg];
            snprintf(what, sizeof what, "%s", err->msg);
            char *rest = strstr(what, " is not available");
            if (rest)
                *rest = 0;
            return fb_errf(err, FB_EXIT_SETUP,
                           "%s is not available with --server (a session cannot honour it); "
                           "run without --server",
                           what);
        }
        return -1;
    }
    if (!parsed.dashdash || !parsed.nargs || !parsed.args[0][0]) {
        r = !parsed.dashdash && parsed.nargs
                ? fb_errf(err, FB_EXIT_SETUP,
                          "unexpected argument \"%s\": put the command after \"--\"",
                          parsed.args[0])
            : !parsed.dashdash ? fb_errf(err, FB_EXIT_SETUP, "missing \"--\" before the command")
                               : fb_errf(err, FB_EXIT_SETUP, "no command after \"--\"");
        opt_parsed_free(&parsed);
        return r;
    }
    *opts = json_array();
    for (size_t i = 0; i < parsed.n; i++) {
        const struct fb_optval *v = &parsed.v[i];
        json_array_append_new(*opts, json_sprintf("--%s", v->o->name));
        if (v->val) {
            char *fixed = cli_fix_path_opt(v->o, v->val);
            json_array_append_new(*opts, json_string(fixed));
            free(fixed);
        }
    }
    *av = json_array();
    for (int k = 0; k < parsed.nargs; k++)
        json_array_append_new(*av, json_string(parsed.args[k]));
    opt_parsed_free(&parsed);
    return 0;
}

/* Stream the exec (already sent as request id) to its end: output to 1 and
 * 2; once it has started, our stdin fed to it and signals from sfd
 * forwarded. Its exit code, or 125. */
static int stream_exec(struct cli *c, int64_t id, const char *sid, const char *xid, int sfd)
{
    struct fb_err err = {0};
    bool started = false, feeding = true;
    int pending_sig = 0;
    int64_t wid = 0; /* the exec.write waiting for its answer, 0 when none */
    for (;;) {
        if (started && pending_sig) {
            int64_t kid;
            json_t *kp = json_pack("{s:s, s:s, s:i}", "session", sid, "execId", xid, "signal",
                                   pending_sig);
            pending_sig = 0;
            if (cli_send(c, "exec.kill", kp, &kid, &err) < 0)
                fb_warn("forwarding a signal: %s", err.msg);
        }
        const char *h = buf_head(&c->in);
        size_t n = buf_pending(&c->in);
        if (!n || !memchr(h, '\n', n)) {
            struct pollfd pf[3] = {{c->fd, POLLIN, 0}, {sfd, POLLIN, 0}, {-1, POLLIN, 0}};
            if (started && feeding && !wid)
                pf[2].fd = 0;
            if (poll(pf, 3, -1) < 0) {
                if (errno == EINTR)
                    continue;
                fb_warn("poll: %s", strerror(errno));
                return FB_EXIT_SETUP;
            }
            if (pf[2].revents) {
                int fr = cli_feed_stdin(c, sid, xid, &wid, &err);
                if (fr != 0)
                    feeding = false;
                if (fr < 0)
                    fb_warn("%s", err.msg);
            }
            if (sfd >= 0 && pf[1].revents) {
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                    pending_sig = (int)si.ssi_signo;
            }
            if (!pf[0].revents)
                continue;
        }
        json_t *m = cli_recv(c, &err);
        if (!m) {
            fb_warn("%s", err.msg);
            return FB_EXIT_SETUP;
        }
        if (cli_feed_answered(m, &wid, &feeding))
            continue;
        json_t *mid = json_object_get(m, "id");
        if (!json_is_integer(mid) || json_integer_value(mid) != id) {
            json_t *er = json_object_get(m, "error");
            if (er && !json_is_integer(mid)) { /* the connection refused */
                err_from(er, &err);
                fb_warn("%s", err.msg);
                json_decref(m);
                return FB_EXIT_SETUP;
            }
            json_decref(m);
            continue; /* exec.kill's answer */
        }
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (ev) {
            json_t *d = json_object_get(m, "data");
            if (!strcmp(ev, "start"))
                started = true;
            else if (json_is_string(d) && (!strcmp(ev, "stdout") || !strcmp(ev, "stderr")))
                write_decoded(!strcmp(ev, "stdout") ? 1 : 2, json_string_value(d),
                              json_string_length(d));
            json_decref(m);
            continue;
        }
        int rc = FB_EXIT_SETUP;
        json_t *er = json_object_get(m, "error");
        const char *code = json_string_value(json_object_get(er, "code"));
        const char *msg = json_string_value(json_object_get(er, "message"));
        if (er && code && msg && !strcmp(code, "session_dead") && strstr(msg, "OOM killer")) {
            /* The OOM killer chose the session's init rather than the
             * command: for a one-shot run that is the run's OOM kill. */
            fb_warn("the command ran out of memory and was killed by the OOM killer; exit 137");
            rc = FB_EXIT_OOM;
        } else if (er) {
            err_from(er, &err);
            fb_warn("%s", err.msg);
        } else {
            /* A timeout is said on the command's stderr by the server. */
            rc = (int)json_integer_value(
                json_object_get(json_object_get(m, "result"), "exitCode"));
        }
        json_decref(m);
        return rc;
    }
}

static const char oom_note[] =
    "the command ran out of memory and was killed by the OOM killer; exit 137";

/* The warm run in one request (`run` with passFds): the server takes a
 * sandbox (from its pool when the options fit), gives the command our own
 * stdin, stdout and stderr, answers with its exit and destroys the session.
 * Signals from sfd are forwarded once it has started. *old: the server does
 * not know `run` (nothing was done; the caller goes the long way). */
static int run_passed(struct cli *c, json_t *params, json_t *av, int sfd, bool *old)
{
    struct fb_err err = {0};
    char xid[48];
    snprintf(xid, sizeof xid, "run-%d", (int)getpid());
    json_t *rp = json_pack("{s:O, s:{s:O, s:s, s:s}, s:b}", "create", params, "exec", "argv", av,
                           "execId", xid, "encoding", "base64", "passFds", 1);
    static const int stdio[3] = {0, 1, 2};
    int64_t id;
    if (cli_send_fds(c, "run", rp, stdio, 3, &id, &err) < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    char sid[64] = "";
    bool started = false;
    int pending_sig = 0;
    for (;;) {
        if (started && pending_sig && sid[0]) {
            int64_t kid;
            json_t *kp = json_pack("{s:s, s:s, s:i}", "session", sid, "execId", xid, "signal",
                                   pending_sig);
            pending_sig = 0;
            if (cli_send(c, "exec.kill", kp, &kid, &err) < 0)
                fb_warn("forwarding a signal: %s", err.msg);
        }
        const char *h = buf_head(&c->in);
        size_t n = buf_pending(&c->in);
        if (!n || !memchr(h, '\n', n)) {
            struct pollfd pf[2] = {{c->fd, POLLIN, 0}, {sfd, POLLIN, 0}};
            if (poll(pf, 2, -1) < 0) {
                if (errno == EINTR)
                    continue;
                fb_warn("poll: %s", strerror(errno));
                return FB_EXIT_SETUP;
            }
            if (sfd >= 0 && pf[1].revents) {
                struct signalfd_siginfo si;
                if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                    pending_sig = (int)si.ssi_signo;
            }
            if (!pf[0].revents)
                continue;
        }
        json_t *m = cli_recv(c, &err);
        if (!m) {
            fb_warn("%s", err.msg);
            return FB_EXIT_SETUP;
        }
        json_t *mid = json_object_get(m, "id");
        if (!json_is_integer(mid) || json_integer_value(mid) != id) {
            json_t *er = json_object_get(m, "error");
            if (er && !json_is_integer(mid)) { /* the connection refused */
                err_from(er, &err);
                fb_warn("%s", err.msg);
                json_decref(m);
                return FB_EXIT_SETUP;
            }
            json_decref(m);
            continue; /* exec.kill's answer */
        }
        const char *ev = json_string_value(json_object_get(m, "event"));
        if (ev) {
            json_t *d = json_object_get(m, "data");
            if (!strcmp(ev, "session")) {
                snprintf(sid, sizeof sid, "%s",
                         json_string_value(json_object_get(m, "session")) ?: "");
                cli_print_warnings(m);
            } else if (!strcmp(ev, "start")) {
                started = true;
            } else if (json_is_string(d) && (!strcmp(ev, "stdout") || !strcmp(ev, "stderr"))) {
                write_decoded(!strcmp(ev, "stdout") ? 1 : 2, json_string_value(d),
                              json_string_length(d));
            }
            json_decref(m);
            continue;
        }
        int rc = FB_EXIT_SETUP;
        json_t *er = json_object_get(m, "error");
        const char *code = json_string_value(json_object_get(er, "code"));
        const char *msg = json_string_value(json_object_get(er, "message"));
        json_t *res = json_object_get(m, "result");
        if (er && code && !strcmp(code, "method_not_found") && !sid[0]) {
            *old = true;
        } else if (er && code && msg && !strcmp(code, "session_dead") && strstr(msg, "OOM killer")) {
            fb_warn("%s", oom_note);
            rc = FB_EXIT_OOM;
        } else if (er) {
            err_from(er, &err);
            fb_warn("%s", err.msg);
        } else {
            rc = (int)json_integer_value(json_object_get(res, "exitCode"));
            if (json_is_true(json_object_get(res, "oomKilled")))
                fb_warn("%s", oom_note);
        }
        json_decref(m);
        return rc;
    }
}

/* Are 0, 1 and 2 open (they can be passed)? */
static bool stdio_open(void)
{
    for (int fd = 0; fd < 3; fd++)
        if (fcntl(fd, F_GETFD) < 0)
            return false;
    return true;
}

/* Create the session, run, destroy it. */
static int serve_run(const char *sock, json_t *opts, json_t *av)
{
    struct fb_err err = {0};
    json_t *params = json_pack("{s:o, s:i, s:s}", "options", opts, "idleTimeoutMs", RUN_IDLE_MS,
                               "label", "fluebox-run");
    char cwd[4096];
    struct fb_callenv ce;
    callenv_self(&ce, cwd, sizeof cwd);
    json_object_set_new(params, "caller", callenv_to_json(&ce));
    if (cli_lift_secrets(params, &err) < 0) {
        fb_warn("%s", err.msg);
        json_decref(params);
        json_decref(av);
        return FB_EXIT_SETUP;
    }
    /* Signals wait in the signalfd from here on: one that comes before the
     * command starts is forwarded as soon as it has, and the session is
     * destroyed whatever happens. */
    sigset_t set, old;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGQUIT);
    sigprocmask(SIG_BLOCK, &set, &old);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    struct cli c;
    int rc = FB_EXIT_SETUP;
    if (cli_connect(&c, sock, &err) < 0) {
        fb_warn("%s", err.msg);
        json_decref(params);
        goto out;
    }
    /* One request, our own stdio passed, where the server knows how
     * (FLUEBOX_RUN_NO_PASS=1: the long way, for comparison). */
    const char *np = getenv("FLUEBOX_RUN_NO_PASS");
    if (stdio_open() && !(np && *np && strcmp(np, "0"))) {
        bool unknown = false;
        rc = run_passed(&c, params, av, sfd, &unknown);
        if (!unknown) {
            json_decref(params);
            goto close;
        }
        rc = FB_EXIT_SETUP;
    }
    json_t *res = cli_call(&c, "session.create", params, &err);
    if (!res) {
        fb_warn("%s", err.msg);
        goto close;
    }
    cli_print_warnings(res);
    char *sid = fb_xstrdup(json_string_value(json_object_get(res, "session")));
    json_decref(res);
    char xid[48];
    snprintf(xid, sizeof xid, "run-%d", (int)getpid());
    json_t *ep = json_pack("{s:s, s:o, s:b, s:s, s:s}", "session", sid, "argv", av, "stream", 1,
                           "encoding", "base64", "execId", xid);
    av = NULL;
    json_object_set_new(ep, "stdinOpen", json_true());
    int64_t id;
    if (cli_send(&c, "exec", ep, &id, &err) < 0)
        fb_warn("%s", err.msg);
    else
        rc = stream_exec(&c, id, sid, xid, sfd);
    /* As a cold run, say when the OOM killer ended it (the exec's result
     * cannot tell a SIGKILL of the OOM killer from another). */
    if (rc == FB_EXIT_OOM) {
        json_t *info = cli_call(&c, "session.info", json_pack("{s:s}", "session", sid), &err);
        json_t *ook = json_object_get(json_object_get(info, "usage"), "oomKills");
        if (json_integer_value(ook) > 0)
            fb_warn("%s", oom_note);
        json_decref(info);
    }
    /* Nothing is left behind: a session that cannot be destroyed is an error
     * of ours (its idle timeout removes it later). */
    res = cli_call(&c, "session.destroy", json_pack("{s:s}", "session", sid), &err);
    if (!res) {
        fb_warn("destroying session %s: %s", sid, err.msg);
        rc = FB_EXIT_SETUP;
    }
    json_decref(res);
    free(sid);
close:
    cli_close(&c);
out:
    json_decref(av);
    if (sfd >= 0)
        close(sfd);
    sigprocmask(SIG_SETMASK, &old, NULL);
    return rc;
}

int client_run_maybe(int argc, char **argv, int *code)
{
    struct fb_err err = {0};
    const char *sock = NULL;
    char **rest = fb_xcalloc((size_t)argc + 1, sizeof *rest);
    int n = 0;
    if (!wants_server(argc, argv, rest, &n, &sock, &err)) {
        free(rest);
        return 0;
    }
    json_t *opts = NULL, *av = NULL;
    int r = err.msg[0] ? -1 : parse_run(n, rest, &opts, &av, &err);
    free(rest);
    if (r) {
        if (r < 0)
            fb_warn("%s", err.msg);
        *code = r > 0 ? 0 : FB_EXIT_SETUP;
        return 1;
    }
    *code = serve_run(sock, opts, av);
    return 1;
}
