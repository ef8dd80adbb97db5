/* server_exec.c — exec and exec.kill (docs/protocol.md): the request to
 * the session's init with the command's pipes, reading stdout/stderr
 * (collected up to maxOutputBytes, or streamed as events under the
 * connection's flow control), feeding stdin, deadlines and the result. */
#include "server.h"

#include "cgroup.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/wait.h>

/* ---- exec ---- */

static json_t *chunk_json(struct xstream *x, const char *data, size_t n, bool final, bool base64)
{
    if (base64) {
        if (!n)
            return NULL;
        char *b = fb_xmalloc(b64_encoded_len(n) + 1);
        size_t l = b64_encode((const unsigned char *)data, n, b);
        json_t *s = json_stringn_nocheck(b, l);
        free(b);
        return s;
    }
    /* utf8: prepend the carried partial sequence. */
    size_t tot = x->ncarry + n;
    if (!tot)
        return NULL;
    unsigned char *in = fb_xmalloc(tot);
    memcpy(in, x->carry, x->ncarry);
    if (n)
        memcpy(in + x->ncarry, data, n);
    char *out = fb_xmalloc(3 * tot + 1);
    size_t used;
    size_t ol = utf8_repair(in, tot, out, final, &used);
    x->ncarry = tot - used;
    if (x->ncarry > sizeof x->carry) {
        /* Cannot happen: an incomplete sequence is at most 3 bytes. */
        x->ncarry = 0;
    }
    memcpy(x->carry, in + used, x->ncarry);
    free(in);
    json_t *s = ol ? json_stringn_nocheck(out, ol) : NULL;
    free(out);
    return s;
}

int exec_pause(struct op *o, bool pause)
{
    if (o->paused == pause)
        return 0;
    o->paused = pause;
    for (int i = 0; i < 2; i++)
        if (o->xs[i].w.fd >= 0 && w_set(o->srv, &o->xs[i].w, pause ? 0 : EPOLLIN) < 0)
            return -1;
    return 0;
}

static const char *const stream_name[2] = {"stdout", "stderr"};

static void exec_deliver(struct op *o, int i, const char *data, size_t n)
{
    struct xstream *x = &o->xs[i];
    o->out_bytes[i] += (int64_t)n;
    if (!o->c)
        return; /* nobody listens */
    if (o->stream) {
        json_t *d = chunk_json(x, data, n, false, o->base64);
        if (d)
            send_event(o->c, o->id, stream_name[i], json_pack("{s:o}", "data", d));
        if (o->c && buf_pending(&o->c->out) >= OUT_PAUSE)
            exec_pause(o, true);
        return;
    }
    /* Collected: up to maxOutputBytes, and up to the memory budget of the
     * connection and its uid (beyond: cut, reported as truncated, and
     * truncatedBy says why). The first OUTPUT_FLOOR bytes of each stream
     * are kept whatever the budget: a loaded server never answers
     * `echo tok` with nothing. A client that does not read its replies
     * holds the command instead. */
    bool slow = buf_pending(&o->c->out) >= OUT_PAUSE;
    size_t have = buf_pending(&x->buf);
    size_t room = have < (size_t)o->max_out ? (size_t)o->max_out - have : 0;
    size_t by_mem = room;
    if (!slow && (int64_t)room > conn_room(o->c)) {
        by_mem = (size_t)conn_room(o->c);
        if (have + by_mem < OUTPUT_FLOOR)
            by_mem = OUTPUT_FLOOR - have;
        if (by_mem > room)
            by_mem = room;
    }
    if (n > by_mem) {
        x->truncated = true;
        x->cut_mem = x->cut_mem || by_mem < room;
        n = by_mem;
    }
    buf_append(&x->buf, data, n);
    op_mem_sync(o);
    if (slow)
        exec_pause(o, true);
}

static json_t *exec_result(struct op *o)
{
    json_t *r = json_object();
    json_object_set_new(r, "execId", json_string(o->exec_id));
    int code;
    const char *sig = NULL;
    bool timed = false;
    if (WIFSIGNALED(o->status)) {
        code = 128 + WTERMSIG(o->status);
        sig = proto_signal_name(WTERMSIG(o->status));
        if (o->timed_out) {
            code = FB_EXIT_TIMEOUT;
            timed = true;
        }
    } else if (WIFEXITED(o->status)) {
        code = WEXITSTATUS(o->status);
    } else {
        code = FB_EXIT_SETUP;
    }
    json_object_set_new(r, "exitCode", json_integer(code));
    json_object_set_new(r, "signal", sig ? json_string(sig) : json_null());
    json_object_set_new(r, "timedOut", json_boolean(timed));
    json_object_set_new(r, "oomKilled", json_boolean(o->oom_killed));
    json_object_set_new(r, "durationMs",
                        json_integer((json_int_t)((o->end_ns - o->start_ns) / 1000000ull)));
    return r;
}

/* The answer: collected output is written straight from its buffers, as
 * base64 when asked for or when the text would be larger. */
static void exec_reply(struct op *o)
{
    json_t *r = exec_result(o);
    sess_record_exec_end(o, r);
    if (o->stream || !o->c) {
        send_result(o->c, o->id, r);
        return;
    }
    struct blob b[2];
    for (int i = 0; i < 2; i++) {
        struct xstream *x = &o->xs[i];
        b[i] = (struct blob){stream_name[i], (const unsigned char *)buf_head(&x->buf),
                             buf_pending(&x->buf)};
        char k[32];
        snprintf(k, sizeof k, "%sTruncated", stream_name[i]);
        json_object_set_new(r, k, json_boolean(x->truncated));
    }
    /* Why output was cut: maxOutputBytes (asked for), or the server's
     * memory budget (rare: the load of other requests of the user). */
    if (o->xs[0].truncated || o->xs[1].truncated)
        json_object_set_new(r, "truncatedBy",
                            json_string(o->xs[0].cut_mem || o->xs[1].cut_mem ? "memory"
                                                                             : "maxOutputBytes"));
    bool b64 = o->base64 || blobs_b64_smaller(b, 2);
    json_object_set_new(r, "encoding", json_string(b64 ? "base64" : "utf8"));
    size_t len;
    char *line = result_line_blobs(o->id, r, b, 2, b64, &len);
    for (int i = 0; i < 2; i++)
        buf_free(&o->xs[i].buf);
    op_mem_sync(o);
    conn_send(o->c, line, len);
}

void exec_maybe_finish(struct op *o, bool force)
{
    if (o->dead || !o->exited)
        return;
    if (!force && !(o->xs[0].eof && o->xs[1].eof))
        return;
    /* Drain whatever is already in the pipes (a background process may
     * still hold them open: we stop here, it keeps running). */
    bool timed = o->timed_out && WIFSIGNALED(o->status);
    for (int i = 0; i < 2; i++) {
        struct xstream *x = &o->xs[i];
        char buf[CHUNK];
        for (int k = 0; k < 16 && x->w.fd >= 0; k++) {
            ssize_t n = read(x->w.fd, buf, sizeof buf);
            if (n <= 0)
                break;
            exec_deliver(o, i, buf, (size_t)n);
        }
        if (o->stream && o->c) {
            json_t *d = chunk_json(x, NULL, 0, true, o->base64);
            if (d)
                send_event(o->c, o->id, stream_name[i], json_pack("{s:o}", "data", d));
        }
    }
    if (timed) {
        /* As `fluebox run` does: say so on stderr. */
        char note[128];
        int nl = snprintf(note, sizeof note, "fluebox: the command timed out after %lld ms and was killed\n",
                          (long long)((o->deadline_ns - o->start_ns) / 1000000ull));
        if (o->stream && o->c) {
            json_t *d = chunk_json(&o->xs[1], note, (size_t)nl, true, o->base64);
            send_event(o->c, o->id, "stderr", json_pack("{s:o}", "data", d));
        } else if (!o->stream) {
            buf_append(&o->xs[1].buf, note, (size_t)nl);
        }
    }
    if (o->ss)
        session_touch(o->ss->s);
    exec_reply(o);
    struct sess *ss = o->ss;
    op_finish(o);
    run_end(ss);
}

void exec_kill(struct op *o, int sig)
{
    if (!o->ss || o->exited)
        return;
    json_t *h = json_pack("{s:s, s:I, s:I, s:i}", "op", "kill", "t", (json_int_t)0, "target",
                          (json_int_t)o->tag, "sig", sig);
    sess_send(o->ss, h, NULL, 0, NULL, 0);
}

void on_exec_pipe(struct op *o, int sub)
{
    if (sub == 2) {
        /* stdin: write what is left */
        while (buf_pending(&o->inbuf)) {
            ssize_t n = write(o->win.fd, buf_head(&o->inbuf), buf_pending(&o->inbuf));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
                stdin_progress(o, false);
                return;
            }
            if (n <= 0) {
                buf_reset(&o->inbuf);
                o->stdin_broken = true;
                break;
            }
            buf_consume(&o->inbuf, (size_t)n);
            o->in_written += (uint64_t)n;
            op_mem_sync(o);
        }
        if (o->stdin_open && !o->stdin_closing && !o->stdin_broken) {
            /* Kept open for exec.write: nothing to wait for until then. */
            stdin_progress(o, false);
            w_set(o->srv, &o->win, 0);
            return;
        }
        buf_free(&o->inbuf);
        op_mem_sync(o);
        w_close(o->srv, &o->win);
        stdin_progress(o, true);
        return;
    }
    struct xstream *x = &o->xs[sub];
    char buf[CHUNK];
    ssize_t n = read(x->w.fd, buf, sizeof buf);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n <= 0) {
        x->eof = true;
        w_close(o->srv, &x->w);
        exec_maybe_finish(o, false);
        return;
    }
    exec_deliver(o, sub, buf, (size_t)n);
}

/* A record from init about an exec: "started", "exit", or "reply" (it
 * could not be started). Untrusted: fields are checked or clamped. */
void on_exec_record(struct op *o, const char *opn, json_t *h)
{
    if (!strcmp(opn, "started") && !o->started) {
        o->started = true;
        o->pid = (pid_t)json_integer_value(json_object_get(h, "pid"));
        o->oom_before = o->ss ? cgroup_oom_kills(o->ss->s->sb.cg) : -1;
        if (o->stream)
            send_event(o->c, o->id, "start",
                       json_pack("{s:s, s:i, s:s}", "execId", o->exec_id, "pid", (int)o->pid,
                                 "session", o->ss ? o->ss->s->id : ""));
        if (!o->c)
            exec_kill(o, SIGKILL); /* the client left before it started */
    } else if (!strcmp(opn, "exit") && o->started && !o->exited) {
        o->exited = true;
        o->status = (int)json_integer_value(json_object_get(h, "status"));
        /* An OOM kill is a SIGKILL: it was one when the session's memory
         * cgroup counted a kill while this command ran. */
        if (WIFSIGNALED(o->status) && WTERMSIG(o->status) == SIGKILL && !o->timed_out &&
            o->oom_before >= 0 && o->ss)
            o->oom_killed = cgroup_oom_kills(o->ss->s->sb.cg) > o->oom_before;
        o->end_ns = now_ns();
        o->grace_ns = o->end_ns + GRACE_NS;
        if (o->ss)
            timers_note(o->ss);
        exec_maybe_finish(o, false);
    } else if (!strcmp(opn, "reply")) {
        json_int_t e = json_integer_value(json_object_get(h, "errno"));
        if (e <= 0 || e >= 4096)
            e = EIO;
        struct proto_err pe = {0};
        pe.code = proto_errno_name((int)e);
        snprintf(pe.message, sizeof pe.message, "cannot start the command: %s",
                 strerror((int)e));
        send_error(o->c, o->id, &pe);
        struct sess *ss = o->ss;
        op_finish(o);
        run_end(ss);
    }
}

/* ---- requests ---- */

static bool exec_id_ok(const char *s)
{
    size_t l = strlen(s);
    if (l < 1 || l > 64)
        return false;
    for (size_t i = 0; i < l; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

struct op *exec_by_id(struct sess *ss, const char *xid)
{
    for (struct op *o = ss->ops; o; o = o->snext)
        if (o->kind == OP_EXEC && !o->dead && !strcmp(o->exec_id, xid))
            return o;
    return NULL;
}

/* An exec request, checked. */
struct xreq {
    json_t *argv, *env;
    const char *command, *cwd, *xid;
    int64_t timeout, maxout;
    bool stream, b64;
    bool stdin_open;  /* stdinOpen: exec.write feeds it (server_stdin.c) */
    bool tty;         /* a pseudo-terminal of rows x cols */
    int64_t rows, cols;
    struct fb_buf in; /* stdin, decoded */
};

/* "tty": true (24 x 80) or {"rows", "cols"}; false or absent: none. */
static int exec_tty_param(json_t *params, struct xreq *x, struct proto_err *e)
{
    json_t *t = json_object_get(params, "tty");
    x->rows = 24;
    x->cols = 80;
    if (!t || json_is_null(t) || json_is_false(t))
        return 0;
    x->tty = true;
    if (json_is_true(t))
        return 0;
    if (!json_is_object(t))
        return perr_param(e, "tty", "tty must be a boolean or {\"rows\", \"cols\"}");
    if (pget_int(t, "rows", &x->rows, 24, 1, 65535, e) < 0 ||
        pget_int(t, "cols", &x->cols, 80, 1, 65535, e) < 0) {
        snprintf(e->param, sizeof e->param, "tty");
        return -1;
    }
    return 0;
}

static int exec_params(struct sess *ss, json_t *params, struct xreq *x, struct proto_err *e)
{
    struct srv *srv = ss->srv;
    const char *stdin_s;
    size_t stdin_len;
    bool stdin_b64;
    if (pget_strarray(params, "argv", &x->argv, false, e) < 0 ||
        pget_str(params, "command", &x->command, NULL, false, 0, e) < 0 ||
        pget_str(params, "cwd", &x->cwd, NULL, false, 4095, e) < 0 ||
        pget_strmap(params, "env", &x->env, e) < 0 ||
        pget_bytes(params, "stdin", &stdin_s, &stdin_len, false, e) < 0 ||
        pget_encoding(params, "stdinEncoding", &stdin_b64, e) < 0 ||
        pget_int(params, "timeoutMs", &x->timeout, ss->s->exec_timeout_ms, 0,
                 INT64_MAX / 2000000, e) < 0 ||
        pget_int(params, "maxOutputBytes", &x->maxout, srv->lim.max_output, 0, INT64_MAX, e) < 0 ||
        pget_str(params, "execId", &x->xid, NULL, false, 64, e) < 0 ||
        pget_bool(params, "stream", &x->stream, false, e) < 0 ||
        pget_bool(params, "stdinOpen", &x->stdin_open, false, e) < 0 ||
        exec_tty_param(params, x, e) < 0 ||
        pget_encoding(params, "encoding", &x->b64, e) < 0)
        return -1;
    if (!!x->argv == !!x->command)
        return perr_param(e, "argv", "give exactly one of argv and command");
    if (x->argv && !json_array_size(x->argv))
        return perr_param(e, "argv", "argv must not be empty");
    if (x->argv && !json_string_length(json_array_get(x->argv, 0)))
        return perr_param(e, "argv", "argv[0] must not be empty");
    if (x->xid && !exec_id_ok(x->xid))
        return perr_param(e, "execId", "execId must be 1 to 64 characters of [A-Za-z0-9._-]");
    if (x->xid && exec_by_id(ss, x->xid))
        return perr_param(e, "execId", "execId %s is running already", x->xid);
    if ((int64_t)ss->running_execs >= srv->lim.max_execs) {
        perr_set(e, "limit_exceeded", "at most %lld execs run at once in a session",
                 (long long)srv->lim.max_execs);
        snprintf(e->limit, sizeof e->limit, "execsPerSession");
        return -1;
    }
    if (x->maxout > srv->lim.max_output)
        x->maxout = srv->lim.max_output;
    if (x->env) {
        const char *k;
        json_t *v;
        json_object_foreach(x->env, k, v)
        {
            if (!*k || strchr(k, '='))
                return perr_param(e, "env", "env: \"%.64s\" is not a variable name", k);
        }
    }
    if (stdin_s && stdin_b64) {
        unsigned char *d = fb_xmalloc(b64_decoded_max(stdin_len));
        ssize_t dl = b64_decode(stdin_s, stdin_len, d);
        if (dl < 0) {
            free(d);
            return perr_param(e, "stdin", "stdin is not valid base64");
        }
        buf_append(&x->in, d, (size_t)dl);
        free(d);
    } else if (stdin_s) {
        buf_append(&x->in, stdin_s, stdin_len);
    }
    return 0;
}

/* The record for init: argv, env (the session's, overridden by the
 * request's), cwd and limits. NULL with e filled when too large. */
static json_t *exec_spec(struct sess *ss, const struct xreq *x, struct proto_err *e)
{
    size_t total = 0;
    json_t *av = json_array();
    if (x->command) {
        json_array_append_new(av, json_string("/bin/sh"));
        json_array_append_new(av, json_string("-c"));
        json_array_append_new(av, json_string(x->command));
        total += strlen(x->command) + 16;
    } else {
        size_t i;
        json_t *it;
        json_array_foreach(x->argv, i, it)
        {
            json_array_append(av, it);
            total += json_string_length(it) + 1;
        }
    }
    json_t *ev = json_array();
    for (char **p = ss->s->env; p && *p; p++) {
        const char *eq = strchr(*p, '=');
        if (x->env && eq) {
            char k[256];
            size_t kl = (size_t)(eq - *p);
            if (kl < sizeof k) {
                memcpy(k, *p, kl);
                k[kl] = 0;
                if (json_object_get(x->env, k))
                    continue;
            }
        }
        json_array_append_new(ev, json_string(*p));
        total += strlen(*p) + 1;
    }
    if (x->env) {
        const char *k;
        json_t *v;
        json_object_foreach(x->env, k, v)
        {
            json_array_append_new(ev, json_sprintf("%s=%s", k, json_string_value(v)));
            total += strlen(k) + json_string_length(v) + 2;
        }
    }
    char *wd = NULL;
    if (join_path(ss, x->cwd ? x->cwd : ss->s->cwd, &wd, e, "cwd") < 0) {
        json_decref(av);
        json_decref(ev);
        return NULL;
    }
    total += strlen(wd);
    if (total > EXEC_SPEC_MAX) {
        json_decref(av);
        json_decref(ev);
        free(wd);
        perr_set(e, "too_large", "argv, env and cwd exceed %d bytes", EXEC_SPEC_MAX);
        return NULL;
    }
    const struct fb_limits *l = &ss->s->pol.limits;
    json_t *h = json_pack("{s:s, s:o, s:o, s:s, s:I, s:I}", "op", "exec", "argv", av, "env", ev,
                          "cwd", wd, "nofile", (json_int_t)(l->nofile > 0 ? l->nofile : 0),
                          "fsize", (json_int_t)(l->fsize > 0 ? l->fsize : 0));
    free(wd);
    return h;
}

static void close_fds(int *fds, size_t n)
{
    for (size_t k = 0; k < n; k++)
        if (fds[k] >= 0)
            close(fds[k]);
}

void m_exec(struct conn *c, const struct method *m, json_t *id, json_t *params, struct sess *ss)
{
    exec_start(c, id, params, ss, NULL);
}

struct op *exec_start(struct conn *c, json_t *id, json_t *params, struct sess *ss, int *passed)
{
    struct proto_err e = {0};
    struct xreq x = {0};
    json_t *h = NULL;
    if (exec_params(ss, params, &x, &e) < 0 || !(h = exec_spec(ss, &x, &e))) {
        buf_free(&x.in);
        if (passed)
            close_fds(passed, 3);
        send_error(c, id, &e);
        return NULL;
    }
    if (passed && (x.tty || buf_pending(&x.in) || x.stdin_open)) {
        buf_free(&x.in);
        json_decref(h);
        close_fds(passed, 3);
        perr_param(&e, "exec", "with passFds the command has the caller's own stdin and "
                               "terminal: no tty, stdin or stdinOpen");
        send_error(c, id, &e);
        return NULL;
    }
    /* A terminal is its own stdin: exec.write writes to it. */
    bool want_stdin = passed || (!x.tty && (buf_pending(&x.in) > 0 || x.stdin_open));
    /* po/pe: stdout, stderr (the server reads [0]); pi: stdin (it writes [1]).
     * Passed: the caller's own, handed on to init; nothing goes through
     * the server. */
    int p[6] = {-1, -1, -1, -1, -1, -1};
    int *po = p, *pe = p + 2, *pi = p + 4;
    if (passed) {
        po[1] = passed[1];
        pe[1] = passed[2];
        pi[0] = passed[0];
    } else if (mkpipe(po, true) < 0 || mkpipe(pe, true) < 0 ||
               (want_stdin && mkpipe(pi, false) < 0)) {
        int er = errno;
        close_fds(p, 6);
        json_decref(h);
        buf_free(&x.in);
        if (er == EMFILE || er == ENFILE)
            send_out_of_fds(c, id, "the command cannot be started");
        else
            send_errf(c, id, proto_errno_name(er), "cannot create pipes: %s", strerror(er));
        return NULL;
    }
    struct op *o = op_new(OP_EXEC, c, id, ss);
    if (x.xid)
        snprintf(o->exec_id, sizeof o->exec_id, "%s", x.xid);
    else
        snprintf(o->exec_id, sizeof o->exec_id, "x%llu", (unsigned long long)(ss->total_execs + 1));
    ss->total_execs++;
    ss->running_execs++;
    o->stream = x.stream || passed;
    o->base64 = x.b64;
    o->max_out = x.maxout;
    o->start_ns = now_ns();
    o->deadline_ns = x.timeout > 0 ? o->start_ns + (uint64_t)x.timeout * 1000000ull : 0;
    timers_note(ss);
    o->inbuf = x.in;
    o->stdin_open = x.stdin_open || x.tty;
    o->tty = x.tty;
    o->ptm = -1;
    o->in_queued = buf_pending(&o->inbuf);
    op_mem_sync(o);
    o->xs[0].w.fd = po[0];
    o->xs[1].w.fd = pe[0];
    o->win.fd = pi[1];
    o->xs[0].eof = o->xs[1].eof = passed != NULL; /* nothing to read here */
    int fds[3] = {po[1], pe[1], pi[0]};
    if (!passed && (w_set(o->srv, &o->xs[0].w, EPOLLIN) < 0 || w_set(o->srv, &o->xs[1].w, EPOLLIN) < 0 ||
                    (want_stdin && w_set(o->srv, &o->win, EPOLLOUT) < 0))) {
        int er = errno;
        close_fds(fds, 3);
        json_decref(h);
        send_errf(c, id, "internal", "cannot watch the command's pipes: %s", strerror(er));
        op_finish(o);
        return NULL;
    }
    json_object_set_new(h, "t", json_integer((json_int_t)o->tag));
    json_object_set_new(h, "stdin", json_boolean(want_stdin));
    if (x.tty)
        json_object_set_new(h, "tty", json_pack("{s:I, s:I}", "rows", (json_int_t)x.rows, "cols",
                                                (json_int_t)x.cols));
    json_t *spec = json_pack("{s:O, s:O}", "argv", json_object_get(h, "argv"), "cwd",
                             json_object_get(h, "cwd"));
    int sr = sess_send(ss, h, NULL, 0, fds, want_stdin ? 3 : 2);
    if (sr == 0)
        sess_record_exec(o, spec);
    json_decref(spec);
    if (sr < 0) {
        if (sr == -1)
            send_errf(c, id, "too_large", "the command is too large");
        else
            send_errf(c, id, "session_dead", "the session is not running");
        op_finish(o);
        return NULL;
    }
    return o;
}

void m_exec_kill(struct conn *c, const struct method *m, json_t *id, json_t *params,
                 struct sess *ss)
{
    struct proto_err e = {0};
    const char *xid;
    if (pget_str(params, "execId", &xid, NULL, true, 64, &e) < 0)
        return send_error(c, id, &e);
    json_t *sj = json_object_get(params, "signal");
    int sig = SIGKILL;
    if (sj && !json_is_null(sj) && (sig = proto_signal_parse(sj)) < 0) {
        perr_param(&e, "signal", "signal must be one of SIGTERM, SIGKILL, SIGINT, SIGHUP, SIGQUIT, "
                                 "SIGUSR1, SIGUSR2, SIGALRM, SIGSTOP, SIGCONT, SIGWINCH");
        return send_error(c, id, &e);
    }
    struct op *o = exec_by_id(ss, xid);
    if (!o || o->exited)
        return send_errf(c, id, "not_found", "no running exec %s in session %s", xid, ss->s->id);
    exec_kill(o, sig);
    send_result(c, id, json_object());
}

