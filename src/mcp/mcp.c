/* mcp.c — `fluebox mcp`: the Model Context Protocol over stdio (docs/mcp.md).
 * Owns the JSON-RPC 2.0 side: newline-delimited messages on stdin and
 * stdout, initialize and protocol version negotiation, ping, tools/list and
 * tools/call dispatch, progress notifications for a call that gave a
 * progressToken, notifications/cancelled, the command line, and the single-threaded poll loop
 * that keeps every queue bounded: a request line is at most MCP_MAX_LINE
 * (longer: an error, the line skipped), at most MCP_MAX_PENDING calls are in
 * flight (more wait in the pipe), and above MCP_OUT_HIGH bytes queued for a
 * client that does not read, neither stdin nor the server is read (the
 * server then stops the commands' pipes). When stdin ends, or on SIGTERM,
 * SIGINT or SIGHUP, the session is destroyed and the process exits. */
#include "mcp.h"

#include "policy_opts.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>

/* Newest first; the first is answered to a client asking for another. */
static const char *const versions[] = {"2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"};

enum { RPC_PARSE = -32700, RPC_INVALID = -32600, RPC_NOMETHOD = -32601, RPC_PARAMS = -32602 };

int64_t mcp_now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

bool mcp_version_at_least(const struct mcp *m, const char *v)
{
    return m->version && strcmp(m->version, v) >= 0; /* dates compare as strings */
}

void mcp_emit(struct mcp *m, json_t *msg)
{
    json_object_set_new(msg, "jsonrpc", json_string("2.0"));
    char *s = json_dumps(msg, JSON_COMPACT);
    json_decref(msg);
    if (!s)
        s = fb_xstrdup("{\"jsonrpc\":\"2.0\",\"id\":null,\"error\":{\"code\":-32603,"
                       "\"message\":\"internal error: cannot encode the answer\"}}");
    if (!m->out_gone) {
        buf_append(&m->out, s, strlen(s));
        buf_append(&m->out, "\n", 1);
    }
    free(s);
}

static void rpc_error(struct mcp *m, json_t *id, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void rpc_error(struct mcp *m, json_t *id, int code, const char *fmt, ...)
{
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mcp_emit(m, json_pack("{s:O, s:{s:i, s:s%}}", "id", id ? id : json_null(), "error", "code",
                          code, "message", msg, strlen(msg)));
}

/* ---- tool calls in flight ---- */

static void op_free(struct mcp *m, struct mcp_op *op)
{
    for (struct mcp_op **pp = &m->ops; *pp; pp = &(*pp)->next)
        if (*pp == op) {
            *pp = op->next;
            m->nops--;
            break;
        }
    json_decref(op->rpc_id);
    json_decref(op->token);
    json_decref(op->args);
    json_decref(op->acc);
    free(op);
}

void mcp_op_done(struct mcp *m, struct mcp_op *op, json_t *result)
{
    if (!op->cancelled && !result) /* an encoding failed: still one answer */
        mcp_emit(m, json_pack("{s:O, s:{s:i, s:s}}", "id", op->rpc_id, "error", "code", -32603,
                              "message", "internal error: cannot encode the result"));
    if (!op->cancelled && result) {
        if (!mcp_version_at_least(m, "2025-06-18"))
            json_object_del(result, "structuredContent"); /* not in older revisions */
        mcp_emit(m, json_pack("{s:O, s:o}", "id", op->rpc_id, "result", result));
    } else {
        json_decref(result);
    }
    op_free(m, op);
}

void mcp_op_fail(struct mcp *m, struct mcp_op *op, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    mcp_op_done(m, op, json_pack("{s:[{s:s, s:o}], s:b}", "content", "type", "text", "text",
                                 mcp_jstr((const unsigned char *)msg, strlen(msg)), "isError", 1));
}

/* A message from the server: the answer (or an event) of an op's request. */
void mcp_srv_message(struct mcp *m, json_t *msg)
{
    json_t *id = json_object_get(msg, "id");
    if (!json_is_integer(id) || json_object_get(msg, "event"))
        return; /* events (workspace.diff's progress) and refusals with no id */
    for (struct mcp_op *op = m->ops; op; op = op->next)
        if (op->srv_id == json_integer_value(id)) {
            op->srv_id = 0;
            mcp_tool_reply(m, op, msg);
            return;
        }
}

/* Every 1 s of a call with a progressToken, until it is answered. */
static void send_progress(struct mcp *m, int64_t now)
{
    for (struct mcp_op *op = m->ops; op; op = op->next) {
        if (!op->token || op->cancelled || now < op->next_progress_ms)
            continue;
        op->next_progress_ms = now + 1000;
        op->progress++;
        char msg[64];
        snprintf(msg, sizeof msg, "running for %lld s",
                 (long long)((now - op->started_ms) / 1000));
        mcp_emit(m, json_pack("{s:s, s:{s:O, s:I, s:s}}", "method", "notifications/progress",
                              "params", "progressToken", op->token, "progress",
                              (json_int_t)op->progress, "message", msg));
    }
}

/* ---- requests from the client ---- */

static void do_initialize(struct mcp *m, json_t *id, json_t *params)
{
    const char *want = json_string_value(json_object_get(params, "protocolVersion"));
    if (!want) {
        rpc_error(m, id, RPC_PARAMS, "initialize: params.protocolVersion (a string) is missing");
        return;
    }
    m->version = versions[0];
    for (size_t i = 0; i < FB_ARRAY_LEN(versions); i++)
        if (!strcmp(want, versions[i]))
            m->version = versions[i];
    json_t *info = json_pack("{s:s, s:s}", "name", "fluebox", "version", FB_VERSION);
    if (mcp_version_at_least(m, "2025-06-18"))
        json_object_set_new(info, "title", json_string("fluebox sandbox"));
    char ins[640];
    snprintf(ins, sizeof ins,
             "Every tool runs in one fluebox sandbox kept for this connection: files, /tmp "
             "and background processes persist between calls. Paths are inside the sandbox; "
             "relative ones are relative to /workspace.%s The policy (network, mounts, "
             "limits) was fixed by the host and cannot be changed from here.",
             !m->cow           ? ""
             : m->allow_commit ? " /workspace is copy-on-write: `diff` shows what changed and "
                                 "`commit` applies it to the host directory."
                               : " /workspace is copy-on-write: `diff` shows what changed; the "
                                 "host directory is not changed.");
    mcp_emit(m, json_pack("{s:O, s:{s:s, s:{s:{s:b}}, s:o, s:s}}", "id", id, "result",
                          "protocolVersion", m->version, "capabilities", "tools", "listChanged",
                          0, "serverInfo", info, "instructions", ins));
}

/* The token of params._meta.progressToken (a string or an integer). */
static json_t *progress_token(json_t *params)
{
    json_t *t = json_object_get(json_object_get(params, "_meta"), "progressToken");
    return json_is_string(t) || json_is_integer(t) ? json_incref(t) : NULL;
}

static void do_call(struct mcp *m, json_t *id, json_t *params)
{
    json_t *jname = json_object_get(params, "name");
    const char *name = json_string_value(jname);
    json_t *args = json_object_get(params, "arguments");
    if (!name || strlen(name) != json_string_length(jname)) {
        rpc_error(m, id, RPC_PARAMS, "tools/call: params.name (a string) is missing");
        return;
    }
    int tool = mcp_tool_find(m, name);
    if (tool < 0) {
        rpc_error(m, id, RPC_PARAMS, "unknown tool: %s", name);
        return;
    }
    if (args && !json_is_object(args)) {
        rpc_error(m, id, RPC_PARAMS, "tools/call: params.arguments must be an object");
        return;
    }
    struct mcp_op *op = fb_xcalloc(1, sizeof *op);
    op->rpc_id = json_incref(id);
    op->token = progress_token(params);
    op->tool = tool;
    op->args = args ? json_incref(args) : json_object();
    op->started_ms = mcp_now_ms();
    op->next_progress_ms = op->started_ms + 1000;
    op->next = m->ops;
    m->ops = op;
    m->nops++;
    char why[512];
    if (mcp_tool_start(m, op, why, sizeof why) < 0) {
        /* 2025-11-25: arguments that do not fit are a tool error the model
         * can correct; earlier revisions: invalid params. */
        if (mcp_version_at_least(m, "2025-11-25")) {
            mcp_op_fail(m, op, "%s", why);
        } else {
            op->cancelled = true;
            mcp_op_done(m, op, NULL);
            rpc_error(m, id, RPC_PARAMS, "%s", why);
        }
    }
}

static void do_cancelled(struct mcp *m, json_t *params)
{
    json_t *rid = json_object_get(params, "requestId");
    for (struct mcp_op *op = m->ops; op && rid; op = op->next)
        if (json_equal(op->rpc_id, rid) && !op->cancelled) {
            op->cancelled = true;
            if (op->xid[0] && op->srv_id) /* a running exec: kill it */
                mcp_srv_send(m, NULL, "exec.kill",
                             json_pack("{s:s, s:s}", "session", m->sid, "execId", op->xid));
            return;
        }
}

static void dispatch(struct mcp *m, const char *method, json_t *id, json_t *params)
{
    if (!id) { /* a notification: never answered */
        if (!strcmp(method, "notifications/cancelled"))
            do_cancelled(m, params);
        return;
    }
    if (!strcmp(method, "initialize"))
        do_initialize(m, id, params);
    else if (!strcmp(method, "ping"))
        mcp_emit(m, json_pack("{s:O, s:{}}", "id", id, "result"));
    else if (!strcmp(method, "tools/list"))
        mcp_emit(m, json_pack("{s:O, s:{s:o}}", "id", id, "result", "tools", mcp_tools_list(m)));
    else if (!strcmp(method, "tools/call"))
        do_call(m, id, params);
    else
        rpc_error(m, id, RPC_NOMETHOD, "method not found: %s", method);
}

/* One line from the client. */
static void handle_line(struct mcp *m, const char *line, size_t n)
{
    while (n && (line[n - 1] == '\r' || line[n - 1] == ' ' || line[n - 1] == '\t'))
        n--;
    if (!n)
        return;
    json_error_t je;
    json_t *msg = json_loadb(line, n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
    if (!msg) {
        rpc_error(m, NULL, RPC_PARSE, "parse error: %s (at byte %d)", je.text, je.position);
        return;
    }
    json_t *id = json_object_get(msg, "id");
    json_t *method = json_object_get(msg, "method");
    json_t *params = json_object_get(msg, "params");
    if (json_is_array(msg))
        rpc_error(m, NULL, RPC_INVALID, "invalid request: batches are not supported");
    else if (!json_is_object(msg))
        rpc_error(m, NULL, RPC_INVALID, "invalid request: not a JSON object");
    else if (!method && (json_object_get(msg, "result") || json_object_get(msg, "error")))
        ; /* a response: we send no requests, so nothing waits for it */
    else if (id && !json_is_string(id) && !json_is_integer(id))
        rpc_error(m, NULL, RPC_INVALID, "invalid request: id must be a string or an integer");
    else if (!json_is_string(method) ||
             strlen(json_string_value(method)) != json_string_length(method) ||
             strcmp(json_string_value(json_object_get(msg, "jsonrpc")) ?: "", "2.0"))
        rpc_error(m, id, RPC_INVALID,
                  "invalid request: needs \"jsonrpc\": \"2.0\" and a string \"method\"");
    else if (params && !json_is_object(params))
        rpc_error(m, id, RPC_PARAMS, "invalid params: params must be an object");
    else
        dispatch(m, json_string_value(method), id, params);
    json_decref(msg);
}

/* Whole lines of stdin; a line over MCP_MAX_LINE is answered and skipped. */
static void client_lines(struct mcp *m)
{
    while (m->nops < MCP_MAX_PENDING) {
        const char *h = buf_head(&m->in);
        size_t n = buf_pending(&m->in);
        const char *nl = n ? memchr(h, '\n', n) : NULL;
        if (!nl) {
            if (n > MCP_MAX_LINE) {
                if (!m->skipping)
                    rpc_error(m, NULL, RPC_INVALID,
                              "invalid request: a line over %d bytes (skipped)", MCP_MAX_LINE);
                m->skipping = true;
                buf_reset(&m->in);
            }
            break;
        }
        size_t len = (size_t)(nl - h);
        if (m->skipping)
            m->skipping = false;
        else
            handle_line(m, h, len);
        buf_consume(&m->in, len + 1);
    }
    if (!buf_pending(&m->in))
        buf_reset(&m->in);
}

static void read_stdin(struct mcp *m)
{
    char buf[65536];
    ssize_t n = read(0, buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        m->in_eof = true;
        return;
    }
    buf_append(&m->in, buf, (size_t)n);
}

static void write_stdout(struct mcp *m)
{
    while (buf_pending(&m->out)) {
        ssize_t n = write(1, buf_head(&m->out), buf_pending(&m->out));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return;
        if (n <= 0) { /* the client is gone */
            m->out_gone = true;
            buf_reset(&m->out);
            return;
        }
        buf_consume(&m->out, (size_t)n);
    }
    buf_reset(&m->out);
}

/* The server went away: every call in flight fails. */
static void server_gone(struct mcp *m)
{
    while (m->ops) {
        struct mcp_op *op = m->ops;
        mcp_op_fail(m, op, "the sandbox's server stopped: the session is gone");
    }
}

static int loop(struct mcp *m, int sfd)
{
    for (;;) {
        bool full = buf_pending(&m->out) > MCP_OUT_HIGH;
        client_lines(m);
        if (m->srv_gone && m->ops)
            server_gone(m);
        if (m->in_eof || m->out_gone)
            return 0;
        struct pollfd pf[5] = {
            {m->nops < MCP_MAX_PENDING && !full ? 0 : -1, POLLIN, 0},
            {m->srv_gone ? -1 : m->c.fd,
             (short)((full ? 0 : POLLIN) | (buf_pending(&m->srv_out) ? POLLOUT : 0)), 0},
            {buf_pending(&m->out) ? 1 : -1, POLLOUT, 0},
            {sfd, POLLIN, 0},
            {m->logfd, POLLIN, 0}};
        int64_t now = mcp_now_ms(), next = now + 60000;
        for (struct mcp_op *op = m->ops; op; op = op->next)
            if (op->token && op->next_progress_ms < next)
                next = op->next_progress_ms;
        int r = poll(pf, 5, next > now ? (int)(next - now) : 0);
        if (r < 0 && errno != EINTR) {
            fb_warn("mcp: poll: %s", strerror(errno));
            return FB_EXIT_SETUP;
        }
        if (r > 0 && pf[3].revents)
            return 0; /* SIGTERM, SIGINT, SIGHUP */
        if (r > 0 && pf[0].revents)
            read_stdin(m);
        if (r > 0 && pf[4].revents)
            mcp_backend_log(m);
        if (r > 0 && pf[1].revents & (POLLOUT | POLLERR | POLLHUP))
            mcp_srv_flush(m);
        if (r > 0 && pf[1].revents & (POLLIN | POLLERR | POLLHUP))
            mcp_srv_read(m);
        send_progress(m, mcp_now_ms());
        if (r > 0 && pf[2].revents)
            write_stdout(m);
        else if (buf_pending(&m->out))
            write_stdout(m);
    }
}

/* ---- the command ---- */

static int set_max_output(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    if (fb_parse_size(v, &n) < 0 || n < 1024 || n > (64 << 20))
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a size from 1K to 64M", o->name, v);
    ((struct mcp *)ctx)->max_output = (size_t)n;
    return 0;
}

static int set_allow_commit(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct mcp *)ctx)->allow_commit = true;
    return 0;
}

const struct fb_opt mcp_opts[] = {
    {"max-output", 0, FB_ARG_VALUE, "SIZE", FB_OPT_ANY, set_max_output,
     "bytes kept of each exec output stream and of one read_file (default 1M)", NULL},
    {"mcp-allow-commit", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_allow_commit,
     "with --cow: a commit tool, so the agent may apply its changes to the host directory",
     NULL},
};
const size_t mcp_opts_n = FB_ARRAY_LEN(mcp_opts);

static const char mcp_usage[] =
    "Usage: fluebox mcp [OPTIONS]\n"
    "Serves one sandbox session as a Model Context Protocol server on stdin and\n"
    "stdout (JSON-RPC 2.0, one message a line), for an agent that starts it:\n"
    "    claude mcp add fluebox -- fluebox mcp --workspace \"$PWD\" --cow\n"
    "Tools: exec, read_file, write_file, edit_file, list_dir; with --cow diff (and\n"
    "commit with --mcp-allow-commit: else the host alone applies the changes).\n"
    "The options below fix the sandbox's policy (those of `fluebox session\n"
    "create`); no tool can change it. --timeout sets each exec's default timeout\n"
    "(else 10 minutes). The session is created at start and destroyed, with\n"
    "everything it runs, when stdin ends. See docs/mcp.md.\n"
    "\n";

/* The command line: the policy options as session.create's "options". */
static int parse_args(struct mcp *m, int argc, char **argv, json_t **options)
{
    struct fb_policy dummy; /* the rows' context; nothing is applied here */
    struct fb_optset own = {mcp_opts, FB_ARRAY_LEN(mcp_opts), m};
    struct fb_parsed parsed;
    struct fb_err err = {0};
    int r = cli_parse(argc, argv, &dummy, &own, FB_OPT_SESSION, "mcp", &parsed, &err);
    if (r == 1) {
        fputs(mcp_usage, stdout);
        struct fb_optset sets[2] = {own, {cli_policy_opts, cli_npolicy_opts, NULL}};
        opt_help(stdout, sets, 2, FB_OPT_SESSION);
        return 1;
    }
    if (r == 0 && parsed.nargs) {
        r = fb_errf(&err, FB_EXIT_SETUP, "mcp takes no command or argument (got \"%s\")",
                    parsed.args[0]);
        opt_parsed_free(&parsed);
    }
    if (r < 0 || opt_apply(&parsed, m, &err) < 0) {
        if (r == 0)
            opt_parsed_free(&parsed);
        fb_warn("%s", err.msg);
        return -1;
    }
    *options = json_array();
    for (size_t i = 0; i < parsed.n; i++) {
        const struct fb_optval *v = &parsed.v[i];
        if (v->ctx != &dummy)
            continue;
        if (!strcmp(v->o->name, "cow"))
            m->cow = true;
        if (!strcmp(v->o->name, "timeout"))
            m->timeout_ms = -1; /* the session's default applies */
        json_array_append_new(*options, json_sprintf("--%s", v->o->name));
        if (v->val) {
            char *fixed = cli_fix_path_opt(v->o, v->val);
            json_array_append_new(*options, json_string(fixed));
            free(fixed);
        }
    }
    opt_parsed_free(&parsed);
    if (m->allow_commit && !m->cow) {
        json_decref(*options);
        fb_warn("--mcp-allow-commit needs --cow (without it the agent writes the host "
                "directory directly)");
        return -1;
    }
    return 0;
}

int cmd_mcp(int argc, char **argv)
{
    struct mcp m = {.max_output = MCP_DEFAULT_OUTPUT, .timeout_ms = MCP_DEFAULT_TIMEOUT_MS,
                    .logfd = -1};
    m.c.fd = -1;
    json_t *options = NULL;
    int r = parse_args(&m, argc, argv, &options);
    if (r)
        return r > 0 ? 0 : FB_EXIT_SETUP;
    signal(SIGPIPE, SIG_IGN);
    struct fb_err err = {0};
    if (mcp_backend_start(&m, options, &err) < 0) {
        json_decref(options);
        fb_warn("%s", err.msg);
        mcp_backend_stop(&m);
        return FB_EXIT_SETUP;
    }
    json_decref(options);
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigprocmask(SIG_BLOCK, &set, NULL);
    int sfd = signalfd(-1, &set, SFD_CLOEXEC);
    /* stdout never blocks us: a client that does not read is met by
     * reading less, not by a stuck process. */
    int fl = fcntl(1, F_GETFL);
    if (fl >= 0)
        fcntl(1, F_SETFL, fl | O_NONBLOCK);
    r = loop(&m, sfd);
    /* What is answered already still goes out, for at most 2 s. */
    for (int64_t until = mcp_now_ms() + 2000; buf_pending(&m.out) && !m.out_gone;) {
        struct pollfd pf = {1, POLLOUT, 0};
        int64_t left = until - mcp_now_ms();
        if (left <= 0 || (poll(&pf, 1, (int)left) < 0 && errno != EINTR))
            break;
        write_stdout(&m);
    }
    while (m.ops) {
        m.ops->cancelled = true;
        mcp_op_done(&m, m.ops, NULL);
    }
    mcp_backend_stop(&m);
    if (fl >= 0)
        fcntl(1, F_SETFL, fl);
    if (sfd >= 0)
        close(sfd);
    buf_free(&m.in);
    buf_free(&m.out);
    return r;
}
