/* server_stdin.c — streaming stdin (docs/protocol.md, exec.write and
 * exec.closeStdin): an exec started with "stdinOpen": true keeps its stdin
 * pipe after the initial "stdin" data, and the connection that started it
 * feeds it while it runs.
 *
 * Backpressure, as for output: what a request writes is queued behind what
 * is already pending (the op's inbuf, written by on_exec_pipe when the pipe
 * has room) and the request is answered only once its last byte is in the
 * pipe, so a client that waits for each answer never has more than one
 * request's worth buffered here. At most STDIN_PENDING bytes may wait at
 * once (limit_exceeded beyond). exec.closeStdin is answered once
 * everything before it was written and the pipe closed. The waiting
 * requests of an exec that ends are answered with EPIPE. */
#include "server.h"

#include <string.h>

#define STDIN_PENDING (4 * 1024 * 1024)

struct stdin_wait {
    json_t *id;
    uint64_t end;    /* answered once in_written reaches it */
    bool close;      /* exec.closeStdin */
    struct stdin_wait *next;
};

static void wait_add(struct op *o, json_t *id, uint64_t end, bool close)
{
    struct stdin_wait *w = fb_xcalloc(1, sizeof *w);
    w->id = json_incref(id);
    w->end = end;
    w->close = close;
    struct stdin_wait **tail = &o->stdin_waits;
    while (*tail)
        tail = &(*tail)->next;
    *tail = w;
}

void stdin_progress(struct op *o, bool closed)
{
    while (o->stdin_waits) {
        struct stdin_wait *w = o->stdin_waits;
        bool done = w->close ? closed && !o->stdin_broken : w->end <= o->in_written;
        if (!done && !closed)
            break;
        o->stdin_waits = w->next;
        if (o->c) {
            if (done)
                send_result(o->c, w->id,
                            w->close ? json_object()
                                     : json_pack("{s:I}", "written", (json_int_t)o->in_written));
            else
                send_errf(o->c, w->id, "EPIPE",
                          "exec %s: its stdin is closed (the command closed it or ended)",
                          o->exec_id);
        }
        json_decref(w->id);
        free(w);
    }
}

void stdin_forget(struct op *o)
{
    o->stdin_broken = true;
    stdin_progress(o, true);
}

/* The running exec named by params' execId, started by c with stdinOpen and
 * not closed yet; NULL after answering id. */
static struct op *stdin_target(struct conn *c, json_t *id, json_t *params, struct sess *ss)
{
    struct proto_err e = {0};
    const char *xid;
    if (pget_str(params, "execId", &xid, NULL, true, 64, &e) < 0) {
        send_error(c, id, &e);
        return NULL;
    }
    struct op *o = exec_by_id(ss, xid);
    if (!o || o->exited || o->c != c) {
        send_errf(c, id, "not_found", "no running exec %s of this connection in session %s", xid,
                  ss->s->id);
        return NULL;
    }
    if (!o->stdin_open) {
        perr_param(&e, "execId", "exec %s was not started with stdinOpen", xid);
        send_error(c, id, &e);
        return NULL;
    }
    /* A terminal's input is there once the exec started (till then, what
     * is written waits). */
    bool later = o->tty && !o->started;
    if (o->stdin_closing || o->stdin_broken || (o->win.fd < 0 && !later)) {
        send_errf(c, id, "EPIPE", "exec %s: its stdin is closed", xid);
        return NULL;
    }
    return o;
}

void m_exec_write(struct conn *c, const struct method *m, json_t *id, json_t *params,
                  struct sess *ss)
{
    struct proto_err e = {0};
    const char *data;
    size_t len;
    bool b64;
    if (pget_bytes(params, "data", &data, &len, true, &e) < 0 ||
        pget_encoding(params, "encoding", &b64, &e) < 0)
        return send_error(c, id, &e);
    struct op *o = stdin_target(c, id, params, ss);
    if (!o)
        return;
    struct fb_buf add = {0};
    if (b64) {
        unsigned char *d = fb_xmalloc(b64_decoded_max(len));
        ssize_t dl = b64_decode(data, len, d);
        if (dl < 0) {
            free(d);
            perr_param(&e, "data", "data is not valid base64");
            return send_error(c, id, &e);
        }
        buf_append(&add, d, (size_t)dl);
        free(d);
    } else {
        buf_append(&add, data, len);
    }
    size_t n = buf_pending(&add);
    if (buf_pending(&o->inbuf) + n > STDIN_PENDING) {
        buf_free(&add);
        perr_set(&e, "limit_exceeded",
                 "exec %s: more than %d bytes of stdin waiting (wait for the answers of earlier "
                 "exec.write requests)", o->exec_id, STDIN_PENDING);
        snprintf(e.limit, sizeof e.limit, "stdinPendingBytes");
        return send_error(c, id, &e);
    }
    buf_append(&o->inbuf, buf_head(&add), n);
    buf_free(&add);
    op_mem_sync(o);
    o->in_queued += n;
    wait_add(o, id, o->in_queued, false);
    if (w_set(o->srv, &o->win, EPOLLOUT) < 0) {
        stdin_forget(o);
        return;
    }
    if (!n)
        stdin_progress(o, false);
}

void m_exec_close_stdin(struct conn *c, const struct method *m, json_t *id, json_t *params,
                        struct sess *ss)
{
    struct op *o = stdin_target(c, id, params, ss);
    if (!o)
        return;
    o->stdin_closing = true;
    wait_add(o, id, o->in_queued, true);
    /* on_exec_pipe writes what is left, closes the pipe and answers. */
    if (w_set(o->srv, &o->win, EPOLLOUT) < 0)
        stdin_forget(o);
}
