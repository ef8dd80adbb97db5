/* server_file.c — the file.* methods (docs/protocol.md): each becomes a
 * record to the session's init (sess_init.c), which does the operation
 * inside the sandbox (sess_files.c); contents and listings larger than a
 * record travel through a pipe passed with it. Replies from init are untrusted and checked. */
#include "server.h"

#include <fcntl.h>
#include <signal.h>
#include <string.h>

static void file_read_size(struct op *o, int64_t n);

/* ---- file ops: results ---- */

static int cmp_entry(const void *a, const void *b)
{
    const char *x = *(const char *const *)a, *y = *(const char *const *)b;
    return strcmp(x + 1, y + 1);
}

static json_t *str_repaired(const char *s, size_t n)
{
    char *out = fb_xmalloc(3 * n + 1);
    size_t used;
    size_t l = utf8_repair((const unsigned char *)s, n, out, true, &used);
    json_t *j = json_stringn_nocheck(out, l);
    free(out);
    return j;
}

static const char *type_of(char t)
{
    switch (t) {
    case 'f': return "file";
    case 'd': return "dir";
    case 'l': return "symlink";
    case 'p': return "fifo";
    case 's': return "socket";
    case 'c': return "char";
    case 'b': return "block";
    default: return "unknown";
    }
}

static json_t *listing_json(const char *p, size_t n)
{
    size_t cnt = 0;
    for (size_t i = 0; i < n; i++)
        if (!p[i])
            cnt++;
    const char **ents = fb_xcalloc(cnt ? cnt : 1, sizeof *ents);
    size_t k = 0, i = 0;
    while (i < n && k < cnt) {
        const char *e = p + i;
        size_t l = strnlen(e, n - i);
        if (l < 1 || i + l >= n)
            break;
        ents[k++] = e;
        i += l + 1;
    }
    qsort(ents, k, sizeof *ents, cmp_entry);
    json_t *arr = json_array();
    for (size_t j = 0; j < k; j++) {
        const char *e = ents[j];
        json_array_append_new(arr, json_pack("{s:o, s:s}", "name", str_repaired(e + 1, strlen(e + 1)),
                                             "type", type_of(e[0])));
    }
    free(ents);
    return json_pack("{s:o}", "entries", arr);
}

/* The answer is written straight from the data: base64 when asked for, or
 * when the text form would be larger (control bytes take 6 each as JSON
 * text); "encoding" says which. */
static void file_read_result(struct op *o)
{
    json_t *r = o->result;
    o->result = NULL;
    json_int_t size = json_integer_value(json_object_get(r, "size"));
    json_decref(r);
    size_t n = buf_pending(&o->data);
    if (o->c) {
        struct blob b = {"data", (const unsigned char *)buf_head(&o->data), n};
        bool b64 = o->base64 || blobs_b64_smaller(&b, 1);
        json_t *small = json_pack("{s:s, s:I, s:I, s:b}", "encoding", b64 ? "base64" : "utf8",
                                  "bytesRead", (json_int_t)n, "size", size, "eof",
                                  o->offset + (int64_t)n >= size);
        size_t len;
        char *line = result_line_blobs(o->id, small, &b, 1, b64, &len);
        buf_free(&o->data);
        op_mem_sync(o);
        conn_send(o->c, line, len);
    }
    op_finish(o);
}

static void file_bulk_done(struct op *o)
{
    if (o->fop == F_READ) {
        if (o->expect >= 0 && (int64_t)buf_pending(&o->data) > o->expect)
            o->data.len = o->data.off + (size_t)o->expect;
        file_read_result(o);
    } else { /* F_READDIR */
        json_decref(o->result);
        o->result = NULL;
        send_result(o->c, o->id, listing_json(buf_head(&o->data), buf_pending(&o->data)));
        op_finish(o);
    }
}

void on_bulk_pipe(struct op *o)
{
    if (o->fop == F_WRITE) {
        while (buf_pending(&o->data)) {
            ssize_t n = write(o->wbulk.fd, buf_head(&o->data), buf_pending(&o->data));
            if (n < 0 && errno == EINTR)
                continue;
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                return;
            if (n <= 0)
                break; /* init ended the transfer: its reply says why */
            buf_consume(&o->data, (size_t)n);
            op_mem_sync(o);
        }
        buf_free(&o->data);
        op_mem_sync(o);
        w_close(o->srv, &o->wbulk);
        return;
    }
    char buf[CHUNK];
    for (int k = 0; k < 16; k++) {
        ssize_t n = read(o->wbulk.fd, buf, sizeof buf);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return;
        if (n <= 0) {
            w_close(o->srv, &o->wbulk);
            o->bulk_done = true;
            if (o->replied)
                file_bulk_done(o);
            return;
        }
        if ((int64_t)(buf_pending(&o->data) + (size_t)n) > o->max) {
            w_close(o->srv, &o->wbulk);
            send_errf(o->c, o->id, "too_large", "%s: the listing is larger than %lld bytes",
                      o->path, (long long)o->max);
            op_finish(o);
            return;
        }
        buf_append(&o->data, buf, (size_t)n);
        op_mem_sync(o);
    }
}

static void send_errno(struct op *o, int e)
{
    struct proto_err pe = {0};
    if (e == E2BIG) {
        perr_set(&pe, "too_large", "%s: larger than %lld bytes", o->path ? o->path : "",
                 (long long)o->max);
    } else {
        pe.code = proto_errno_name(e);
        snprintf(pe.message, sizeof pe.message, "%s: %s", o->path ? o->path : "", strerror(e));
        pe.path = o->path ? fb_xstrdup(o->path) : NULL;
    }
    send_error(o->c, o->id, &pe);
}

/* A reply from init for a file op. Untrusted: check every field. */
void on_file_reply(struct op *o, json_t *h, const char *payload, size_t plen)
{
    json_t *ej = json_object_get(h, "errno");
    if (ej) {
        json_int_t e = json_integer_value(ej);
        send_errno(o, e > 0 && e < 4096 ? (int)e : EIO);
        op_finish(o);
        return;
    }
    json_t *res = json_object_get(h, "result");
    if (!json_is_object(res)) {
        send_errf(o->c, o->id, "internal", "bad reply from the session");
        op_finish(o);
        return;
    }
    o->replied = true;
    switch (o->fop) {
    case F_READ:
    case F_READDIR: {
        json_t *bulk = json_object_get(res, "bulk");
        o->result = json_incref(res);
        if (json_is_integer(bulk)) {
            json_int_t b = json_integer_value(bulk);
            if (b < 0 || b > o->max) {
                send_errf(o->c, o->id, "internal", "bad reply from the session");
                op_finish(o);
                return;
            }
            o->expect = b;
            if (o->fop == F_READ)
                file_read_size(o, b);
            if (o->bulk_done)
                file_bulk_done(o);
            return;
        }
        w_close(o->srv, &o->wbulk);
        if ((int64_t)plen > o->max)
            plen = (size_t)o->max;
        buf_append(&o->data, payload, plen);
        op_mem_sync(o);
        file_bulk_done(o);
        return;
    }
    case F_STAT: {
        json_t *r = json_deep_copy(res);
        if (plen)
            json_object_set_new(r, "target", str_repaired(payload, plen));
        send_result(o->c, o->id, r);
        break;
    }
    case F_WRITE:
        w_close(o->srv, &o->wbulk);
        send_result(o->c, o->id, json_deep_copy(res));
        break;
    default:
        send_result(o->c, o->id, json_deep_copy(res));
        break;
    }
    op_finish(o);
}

/* init's name of each operation (the enum fop of methods.h's entries). */
static const char *const fop_names[F_COUNT] = {
    [F_READ] = "read",   [F_WRITE] = "write", [F_STAT] = "stat", [F_EXISTS] = "exists",
    [F_READDIR] = "readdir", [F_MKDIR] = "mkdir", [F_RM] = "rm", [F_RENAME] = "rename",
};

/* A file request being built. */
struct freq {
    json_t *h;               /* the record for init */
    bool b64;
    int64_t offset;
    unsigned char *wdata;    /* file.write: the decoded data */
    size_t wlen;
    char *abs2;              /* file.rename: the target */
};

/* file.write's parameters into the record. */
static int write_params(json_t *params, struct freq *f, struct proto_err *e)
{
    const char *data;
    bool append, parents, excl;
    unsigned mode;
    size_t dl;
    if (pget_bytes(params, "data", &data, &dl, true, e) < 0 ||
        pget_encoding(params, "encoding", &f->b64, e) < 0 ||
        pget_bool(params, "append", &append, false, e) < 0 ||
        pget_bool(params, "parents", &parents, false, e) < 0 ||
        pget_bool(params, "exclusive", &excl, false, e) < 0 ||
        pget_mode(params, "mode", &mode, 0644, e) < 0)
        return -1;
    if (f->b64) {
        f->wdata = fb_xmalloc(b64_decoded_max(dl));
        ssize_t n = b64_decode(data, dl, f->wdata);
        if (n < 0)
            return perr_param(e, "data", "data is not valid base64");
        f->wlen = (size_t)n;
    } else {
        f->wdata = fb_xmalloc(dl + 1);
        memcpy(f->wdata, data, dl);
        f->wlen = dl;
    }
    json_t *h = f->h;
    json_object_set_new(h, "append", json_boolean(append));
    json_object_set_new(h, "parents", json_boolean(parents));
    json_object_set_new(h, "exclusive", json_boolean(excl));
    json_object_set_new(h, "mode", json_integer(mode));
    json_object_set_new(h, "size", json_integer((json_int_t)f->wlen));
    json_object_set_new(h, "inline", json_boolean(f->wlen <= SREC_INLINE));
    return 0;
}

/* The operation's own parameters into the record. */
static int fop_params(struct srv *srv, enum fop fop, json_t *params, struct sess *ss,
                      const char *abs, struct freq *f, struct proto_err *e)
{
    json_t *h = f->h;
    bool b1, b2;
    unsigned mode;
    switch (fop) {
    case F_READ: {
        int64_t length;
        if (pget_int(params, "offset", &f->offset, 0, 0, INT64_MAX / 2, e) < 0 ||
            pget_int(params, "length", &length, -1, 0, INT64_MAX / 2, e) < 0 ||
            pget_encoding(params, "encoding", &f->b64, e) < 0)
            return -1;
        if (length > srv->lim.max_output)
            return perr_set(e, "too_large", "length is above maxReadBytes (%lld)",
                            (long long)srv->lim.max_output);
        json_object_set_new(h, "offset", json_integer(f->offset));
        json_object_set_new(h, "length", json_integer(length));
        json_object_set_new(h, "max", json_integer(srv->lim.max_output));
        return 0;
    }
    case F_READDIR:
        json_object_set_new(h, "max", json_integer(srv->lim.max_output));
        return 0;
    case F_WRITE:
        return write_params(params, f, e);
    case F_STAT:
    case F_EXISTS:
        if (pget_bool(params, "follow", &b1, true, e) < 0)
            return -1;
        json_object_set_new(h, "follow", json_boolean(b1));
        return 0;
    case F_MKDIR:
        if (pget_bool(params, "recursive", &b1, false, e) < 0 ||
            pget_mode(params, "mode", &mode, 0755, e) < 0)
            return -1;
        json_object_set_new(h, "recursive", json_boolean(b1));
        json_object_set_new(h, "mode", json_integer(mode));
        return 0;
    case F_RM:
        if (pget_bool(params, "recursive", &b1, false, e) < 0 ||
            pget_bool(params, "force", &b2, false, e) < 0)
            return -1;
        json_object_set_new(h, "recursive", json_boolean(b1));
        json_object_set_new(h, "force", json_boolean(b2));
        return 0;
    case F_RENAME: {
        const char *to;
        if (pget_path(params, "to", &to, e) < 0 || join_path(ss, to, &f->abs2, e, "to") < 0 ||
            pget_bool(params, "overwrite", &b1, true, e) < 0)
            return -1;
        json_object_del(h, "path");
        json_object_set_new(h, "from", json_string(abs));
        json_object_set_new(h, "to", json_string(f->abs2));
        json_object_set_new(h, "overwrite", json_boolean(b1));
        return 0;
    }
    case F_COUNT:
        break;
    }
    return perr_set(e, "internal", "no such file operation");
}

void file_timed_out(struct op *o)
{
    /* Init stops whatever it does for it (a transfer, a removal) and
     * answers no more for this tag (an answer that crossed this is
     * dropped: the op is gone). */
    if (o->ss)
        sess_send(o->ss,
                  json_pack("{s:s, s:I, s:I, s:i}", "op", "kill", "t", (json_int_t)0, "target",
                            (json_int_t)o->tag, "sig", SIGKILL),
                  NULL, 0, NULL, 0);
    struct proto_err e = {0};
    e.code = "ETIMEDOUT";
    snprintf(e.message, sizeof e.message,
             "%s: the file operation took longer than %lld ms (--file-timeout) and was ended",
             o->path ? o->path : "", (long long)o->srv->lim.file_timeout_ms);
    e.path = o->path ? fb_xstrdup(o->path) : NULL;
    send_error(o->c, o->id, &e);
    op_finish(o);
}

/* The room an answer of n bytes takes (base64 and the line around it). */
static int64_t answer_room(int64_t n)
{
    return (int64_t)b64_encoded_len((size_t)n) + 4096;
}

/* Before init has opened the file its size is unknown: what an answer
 * without a bulk transfer can take (SREC_INLINE, less when `length` says
 * so). The room for a larger file is taken when init has found its size
 * (file_read_size), not maxReadBytes' worth for every read: a dozen reads
 * of small files in flight filled a uid's budget that way, and the exec
 * output collected meanwhile was cut to nothing. */
int64_t file_read_reserve(struct srv *srv, json_t *params)
{
    json_t *l = json_object_get(params, "length");
    int64_t n = SREC_INLINE < srv->lim.max_output ? SREC_INLINE : srv->lim.max_output;
    if (json_is_integer(l) && json_integer_value(l) >= 0 && json_integer_value(l) < n)
        n = json_integer_value(l);
    return answer_room(n);
}

static bool read_fits(struct op *o, int64_t need)
{
    struct conn *c = o->c;
    int64_t more = need - o->reserve;
    if (!c || more <= 0 || !conn_over(c, more))
        return true;
    /* Alone on its connection: it may pass the connection's budget (not the
     * uid's), as a read admitted alone may. */
    int64_t uid_room = c->ua ? c->srv->lim.uid_mem - c->ua->mem : more;
    return c->nops == 1 && !buf_pending(&c->out) && more <= uid_room;
}

static void park(struct op *o, bool on)
{
    if (o->parked == on)
        return;
    o->parked = on;
    if (on)
        o->srv->nparked++;
    else
        o->srv->nparked--;
    if (o->wbulk.fd >= 0)
        w_set(o->srv, &o->wbulk, on ? 0 : EPOLLIN);
}

/* init found the file and will send n bytes (the pipe is read only from
 * now on, so no data is held before its room is): room for the answer, or
 * the read waits (its pipe not read; init's transfer waits on the full
 * pipe) until memory of the connection or uid is freed, or its deadline. */
static void file_read_size(struct op *o, int64_t n)
{
    int64_t need = answer_room(n);
    if (need <= o->reserve || o->bulk_done || read_fits(o, need)) {
        if (need > o->reserve) {
            o->reserve = need;
            op_mem_sync(o);
        }
        if (o->wbulk.fd >= 0)
            w_set(o->srv, &o->wbulk, EPOLLIN);
        return;
    }
    o->reserve_want = need;
    park(o, true);
}

void file_unpark_forget(struct op *o)
{
    if (o->parked) {
        o->parked = false;
        o->srv->nparked--;
    }
}

void file_unpark(struct srv *srv)
{
    for (struct sess *ss = srv->sesss; ss && srv->nparked; ss = ss->next) {
        for (struct op *o = ss->ops, *nx; o; o = nx) {
            nx = o->snext;
            if (o->kind != OP_FILE || !o->parked || o->dead || !read_fits(o, o->reserve_want))
                continue;
            o->reserve = o->reserve_want;
            op_mem_sync(o);
            park(o, false);
            on_bulk_pipe(o); /* what waits in the pipe */
        }
    }
}

void m_file(struct conn *c, const struct method *m, json_t *id, json_t *params, struct sess *ss)
{
    struct srv *srv = c->srv;
    struct proto_err e = {0};
    if (m->arg < 0 || m->arg >= F_COUNT || !fop_names[m->arg])
        return send_errf(c, id, "internal", "%s has no file operation", m->name);
    enum fop fop = (enum fop)m->arg;
    const char *path;
    const char *pkey = fop == F_RENAME ? "from" : "path";
    char *abs = NULL;
    if (pget_path(params, pkey, &path, &e) < 0 || join_path(ss, path, &abs, &e, pkey) < 0)
        return send_error(c, id, &e);
    struct freq f = {.h = json_pack("{s:s, s:s}", "op", fop_names[fop], "path", abs)};
    int pipefd[2] = {-1, -1}, fds[1] = {-1};
    size_t nfds = 0;
    if (fop_params(srv, fop, params, ss, abs, &f, &e) < 0)
        goto bad;
    bool need_pipe = fop == F_READ || fop == F_READDIR || (fop == F_WRITE && f.wlen > SREC_INLINE);
    if (need_pipe) {
        bool server_reads = fop != F_WRITE;
        if (mkpipe(pipefd, server_reads) < 0) {
            int er = errno;
            if (er == EMFILE || er == ENFILE) {
                json_decref(f.h);
                free(f.wdata);
                free(abs);
                free(f.abs2);
                return send_out_of_fds(c, id, "the file operation cannot be done");
            }
            perr_set(&e, proto_errno_name(er), "cannot create a pipe: %s", strerror(er));
            goto bad;
        }
        /* Larger pipes: fewer wake-ups for big transfers (best effort). */
        if (fop != F_READDIR)
            fcntl(pipefd[0], F_SETPIPE_SZ, 1 << 20);
        fds[0] = server_reads ? pipefd[1] : pipefd[0];
        nfds = 1;
    }
    struct op *o = op_new(OP_FILE, c, id, ss);
    o->fop = fop;
    o->path = fb_xstrdup(path);
    o->base64 = f.b64;
    o->offset = f.offset;
    o->max = srv->lim.max_output;
    o->deadline_ns = now_ns() + (uint64_t)srv->lim.file_timeout_ms * 1000000ull;
    timers_note(ss);
    if (fop == F_READ)
        o->reserve = file_read_reserve(srv, params);
    if (need_pipe) {
        o->wbulk.fd = fop == F_WRITE ? pipefd[1] : pipefd[0];
        if (fop == F_WRITE)
            buf_append(&o->data, f.wdata, f.wlen);
        op_mem_sync(o);
        /* A read's pipe is watched once init has said how much comes
         * (file_read_size). */
        uint32_t ev = fop == F_WRITE ? EPOLLOUT : fop == F_READ ? 0 : EPOLLIN;
        if (w_set(srv, &o->wbulk, ev) < 0) {
            int er = errno;
            close(fds[0]);
            json_decref(f.h);
            send_errf(c, id, "internal", "cannot watch a pipe: %s", strerror(er));
            op_finish(o);
            goto done;
        }
    }
    json_object_set_new(f.h, "t", json_integer((json_int_t)o->tag));
    bool inline_data = fop == F_WRITE && f.wlen <= SREC_INLINE;
    int sr = sess_send(ss, f.h, inline_data ? f.wdata : NULL, inline_data ? f.wlen : 0, fds, nfds);
    if (sr < 0) {
        if (sr == -1)
            send_errf(c, id, "too_large", "the request is too large");
        else
            send_errf(c, id, "session_dead", "the session is not running");
        op_finish(o);
    }
done:
    free(f.wdata);
    free(abs);
    free(f.abs2);
    return;
bad:
    json_decref(f.h);
    free(f.wdata);
    free(abs);
    free(f.abs2);
    send_error(c, id, &e);
}
