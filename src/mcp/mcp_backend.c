/* mcp_backend.c — what `fluebox mcp` stands on: a private `fluebox serve`
 * started as a child of this process on a socket of its own (in a fresh
 * 0700 directory, never the user's shared socket), the one session created
 * there with the command line's policy, and the connection to it, written
 * and read without blocking so that neither side can wedge the other.
 *
 * Why a child server rather than the session code in this process: the
 * server already owns everything a session needs (the worker thread that
 * builds sandboxes, init's control socket, exec pipes, timeouts, memory
 * budgets, cleanup on SIGTERM); this process stays a single-threaded
 * translator. The child is started with --exit-with-parent (our death, even
 * by SIGKILL, is its SIGTERM: it destroys the session) and --remove-dir (it
 * removes the socket's directory as it stops), so nothing outlives us. */
#include "mcp.h"

#include "callenv.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* A directory for the socket: under XDG_RUNTIME_DIR when it is ours, else
 * /tmp; mkdtemp makes it 0700. */
static int make_dir(struct mcp *m, struct fb_err *err)
{
    const char *base = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (!base || base[0] != '/' || lstat(base, &st) < 0 || !S_ISDIR(st.st_mode) ||
        st.st_uid != getuid() || (st.st_mode & 077) || strlen(base) > 64)
        base = "/tmp";
    snprintf(m->dir, sizeof m->dir, "%s/fluebox-mcp-XXXXXX", base);
    if (!mkdtemp(m->dir)) {
        m->dir[0] = 0;
        return fb_errno(err, FB_EXIT_SETUP, "mcp: cannot make a directory for the server in %s",
                        base);
    }
    snprintf(m->sock, sizeof m->sock, "%s/s", m->dir);
    return 0;
}

static void exec_server(struct mcp *m, int ready_w, int log_w)
{
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
    signal(SIGPIPE, SIG_DFL);
    int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (nul < 0 || dup2(nul, 0) < 0 || dup2(nul, 1) < 0 || dup2(log_w, 2) < 0 ||
        dup2(ready_w, 3) < 0)
        _exit(127);
    /* --max-output is also the largest file.read: room for edit_file. The
     * exec output an agent gets is cut at m->max_output per exec. */
    char out[32];
    snprintf(out, sizeof out, "%zu", m->max_output > MCP_EDIT_MAX ? m->max_output : MCP_EDIT_MAX);
    /* stdout is the MCP channel: the server must never write to it. */
    execl("/proc/self/exe", "fluebox", "serve", "--socket", m->sock, "--ready-fd", "3",
          "--exit-with-parent", "--remove-dir", "--max-output", out, "--max-message", "40M",
          "--max-conns", "4", "--log-format", "json", (char *)NULL);
    _exit(127);
}

/* Start the child and wait for its "ready" (or its end). */
static int spawn_server(struct mcp *m, struct fb_err *err)
{
    int p[2], l[2];
    if (pipe2(p, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mcp: pipe");
    if (pipe2(l, O_CLOEXEC | O_NONBLOCK) < 0) {
        close(p[0]);
        close(p[1]);
        return fb_errno(err, FB_EXIT_SETUP, "mcp: pipe");
    }
    m->child = fork();
    if (m->child < 0) {
        close(p[0]);
        close(p[1]);
        close(l[0]);
        close(l[1]);
        m->child = 0;
        return fb_errno(err, FB_EXIT_SETUP, "mcp: fork");
    }
    if (m->child == 0) {
        int fl = fcntl(l[1], F_GETFL);
        fcntl(l[1], F_SETFL, fl & ~O_NONBLOCK);
        exec_server(m, p[1], l[1]);
    }
    close(p[1]);
    close(l[1]);
    m->logfd = l[0];
    char buf[16];
    size_t got = 0;
    int64_t deadline = mcp_now_ms() + 60000;
    while (got < 6) {
        struct pollfd pf = {p[0], POLLIN, 0};
        int64_t left = deadline - mcp_now_ms();
        int r = left > 0 ? poll(&pf, 1, (int)left) : 0;
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        ssize_t n = read(p[0], buf + got, sizeof buf - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    close(p[0]);
    if (got < 6 || memcmp(buf, "ready\n", 6))
        return fb_errf(err, FB_EXIT_SETUP,
                       "mcp: the private fluebox server did not start (see the lines above)");
    return 0;
}

static json_t *session_params(json_t *options)
{
    json_t *params = json_pack("{s:O, s:i, s:s, s:b}", "options", options, "idleTimeoutMs", 0,
                               "label", "fluebox-mcp", "pool", 0);
    /* As `session create`: the session's exec finds what our PATH finds. */
    char cwd[4096];
    struct fb_callenv ce;
    callenv_self(&ce, cwd, sizeof cwd);
    json_object_set_new(params, "caller", callenv_to_json(&ce));
    return params;
}

int mcp_backend_start(struct mcp *m, json_t *options, struct fb_err *err)
{
    m->c.fd = -1;
    if (make_dir(m, err) < 0 || spawn_server(m, err) < 0 ||
        cli_connect(&m->c, m->sock, err) < 0)
        return -1;
    /* --secret: the value is ours (the environment the MCP client gave us,
     * or the file), sent in "secrets"; the sandbox gets a stand-in. */
    json_t *params = session_params(options);
    if (cli_lift_secrets(params, err) < 0) {
        json_decref(params);
        return -1;
    }
    json_t *res = cli_call(&m->c, "session.create", params, err);
    if (!res)
        return -1;
    const char *sid = json_string_value(json_object_get(res, "session"));
    if (!sid) {
        json_decref(res);
        return fb_errf(err, FB_EXIT_SETUP, "mcp: the server's answer names no session");
    }
    m->sid = fb_xstrdup(sid);
    json_decref(res);
    int fl = fcntl(m->c.fd, F_GETFL);
    if (fl < 0 || fcntl(m->c.fd, F_SETFL, fl | O_NONBLOCK) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mcp: fcntl");
    return 0;
}

/* The server's stderr: its warnings (plain lines) go on to ours; its log
 * of session events (JSON lines, --log-format json) is routine and dropped,
 * so a client's log shows what went wrong and not every session made. */
void mcp_backend_log(struct mcp *m)
{
    char buf[4096];
    for (;;) {
        ssize_t n = m->logfd >= 0 ? read(m->logfd, buf, sizeof buf) : 0;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (n == 0 && m->logfd >= 0) {
                close(m->logfd);
                m->logfd = -1;
            }
            break;
        }
        buf_append(&m->log, buf, (size_t)n);
        for (;;) {
            const char *h = buf_head(&m->log);
            size_t len = buf_pending(&m->log);
            const char *nl = len ? memchr(h, '\n', len) : NULL;
            if (!nl && len < 65536)
                break;
            size_t k = nl ? (size_t)(nl - h) + 1 : len;
            if (h[0] != '{')
                (void)!fb_write_all(2, h, k); /* failing: nowhere to say it */
            buf_consume(&m->log, k);
        }
    }
    if (!buf_pending(&m->log))
        buf_reset(&m->log);
}

/* SIGTERM to the server: it destroys the session (everything in it is
 * killed, its cgroup removed), removes the socket and its directory, and
 * exits. One that does not within 20 s is killed; its sandbox dies with it
 * (the session's init has the server's death as its own). */
void mcp_backend_stop(struct mcp *m)
{
    if (m->c.fd >= 0) {
        close(m->c.fd);
        m->c.fd = -1;
    }
    if (m->child > 0) {
        /* Woken by the child's exit (its pidfd), not by a clock. */
        int pfd = (int)syscall(SYS_pidfd_open, m->child, 0);
        kill(m->child, SIGTERM);
        int64_t deadline = mcp_now_ms() + 20000;
        for (;;) {
            pid_t r = waitpid(m->child, NULL, WNOHANG);
            if (r == m->child || (r < 0 && errno != EINTR))
                break;
            int64_t left = deadline - mcp_now_ms();
            if (left <= 0) {
                kill(m->child, SIGKILL);
                while (waitpid(m->child, NULL, 0) < 0 && errno == EINTR)
                    ;
                break;
            }
            struct pollfd pf = {pfd, POLLIN, 0};
            if (pfd < 0 || poll(&pf, 1, (int)left) < 0)
                poll(NULL, 0, 5); /* no pidfd (or EINTR): look again shortly */
        }
        if (pfd >= 0)
            close(pfd);
        m->child = 0;
    }
    if (m->logfd >= 0) {
        /* The server is gone: what it said is all in the pipe. */
        int fl = fcntl(m->logfd, F_GETFL);
        fcntl(m->logfd, F_SETFL, fl & ~O_NONBLOCK);
        mcp_backend_log(m);
    }
    buf_free(&m->log);
    if (m->dir[0]) {
        /* Left only when the server could not start or was killed. */
        char lock[320];
        snprintf(lock, sizeof lock, "%s.lock", m->sock);
        unlink(m->sock);
        unlink(lock);
        rmdir(m->dir);
        m->dir[0] = 0;
    }
    buf_free(&m->c.in);
    buf_free(&m->srv_out);
    free(m->sid);
    m->sid = NULL;
}

void mcp_srv_send(struct mcp *m, struct mcp_op *op, const char *method, json_t *params)
{
    int64_t id = ++m->c.next_id;
    if (op)
        op->srv_id = id;
    json_t *req = json_pack("{s:I, s:s, s:o}", "id", (json_int_t)id, "method", method, "params",
                            params);
    char *s = req ? json_dumps(req, JSON_COMPACT) : NULL;
    json_decref(req);
    if (!s) {
        if (op) {
            op->srv_id = 0;
            mcp_op_fail(m, op, "internal error: cannot encode the request");
        }
        return;
    }
    buf_append(&m->srv_out, s, strlen(s));
    buf_append(&m->srv_out, "\n", 1);
    free(s);
    mcp_srv_flush(m);
}

int mcp_srv_flush(struct mcp *m)
{
    while (!m->srv_gone && buf_pending(&m->srv_out)) {
        ssize_t n = write(m->c.fd, buf_head(&m->srv_out), buf_pending(&m->srv_out));
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            return 0;
        if (n <= 0) {
            m->srv_gone = true;
            return -1;
        }
        buf_consume(&m->srv_out, (size_t)n);
    }
    if (!buf_pending(&m->srv_out))
        buf_reset(&m->srv_out);
    return m->srv_gone ? -1 : 0;
}

/* Whole lines from the server, each handed on. */
static void srv_lines(struct mcp *m)
{
    for (;;) {
        const char *h = buf_head(&m->c.in);
        size_t n = buf_pending(&m->c.in);
        const char *nl = n ? memchr(h, '\n', n) : NULL;
        if (!nl)
            break;
        json_t *msg = json_loadb(h, (size_t)(nl - h), 0, NULL);
        buf_consume(&m->c.in, (size_t)(nl - h) + 1);
        if (json_is_object(msg))
            mcp_srv_message(m, msg);
        json_decref(msg);
    }
    if (!buf_pending(&m->c.in))
        buf_reset(&m->c.in);
}

int mcp_srv_read(struct mcp *m)
{
    char buf[65536];
    for (int i = 0; i < 16 && !m->srv_gone; i++) {
        ssize_t n = read(m->c.fd, buf, sizeof buf);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0 && errno == EAGAIN)
            break;
        if (n <= 0) {
            m->srv_gone = true;
            break;
        }
        buf_append(&m->c.in, buf, (size_t)n);
        srv_lines(m);
    }
    return m->srv_gone ? -1 : 0;
}
