/* mcp_tools.c — the tools of `fluebox mcp` (docs/mcp.md): exec, read_file,
 * write_file, edit_file, list_dir and, with --cow, diff. Owns their JSON
 * Schemas (inputSchema, outputSchema), the check of a call's arguments
 * against its inputSchema, and each tool's mapping to requests of the wire
 * protocol (docs/protocol.md) and of their answers to a CallToolResult:
 * text content for the model, structuredContent with the fields. Every path
 * goes to the session's init, which resolves it inside the sandbox: a tool
 * reaches what the policy binds and nothing else. */
#include "mcp.h"

#include <stdarg.h>
#include <string.h>

struct tool;
typedef int (*start_fn)(struct mcp *m, struct mcp_op *op, char *why, size_t cap);
typedef void (*reply_fn)(struct mcp *m, struct mcp_op *op, json_t *res);

struct tool {
    const char *name, *title, *desc;
    const char *input, *output; /* JSON Schemas */
    bool read_only, cow_only, commit_only;
    start_fn start;
    reply_fn reply; /* called with the result object; errors end the call first */
};

json_t *mcp_jstr(const unsigned char *p, size_t n)
{
    if (utf8_valid(p, n))
        return json_stringn((const char *)p, n);
    char *fixed = fb_xmalloc(3 * n + 1);
    size_t k = utf8_repair(p, n, fixed, true, NULL);
    json_t *s = json_stringn(fixed, k);
    free(fixed);
    return s;
}

static json_t *jtext(const char *s) { return mcp_jstr((const unsigned char *)s, strlen(s)); }

/* A result: one text block (more may be appended) and the structured fields. */
static json_t *result(json_t *text, json_t *structured, bool is_error)
{
    json_t *r = json_pack("{s:[{s:s, s:o}]}", "content", "type", "text", "text",
                          text ? text : json_string(""));
    if (structured)
        json_object_set_new(r, "structuredContent", structured);
    if (is_error)
        json_object_set_new(r, "isError", json_true());
    return r;
}

static void add_note(json_t *res, const char *note)
{
    json_array_append_new(json_object_get(res, "content"),
                          json_pack("{s:s, s:o}", "type", "text", "text", jtext(note)));
}

/* The decoded bytes of a string in encoding ("base64" or text). */
static unsigned char *decoded(json_t *s, const char *encoding, size_t *n)
{
    const char *v = json_string_value(s);
    size_t len = json_string_length(s);
    unsigned char *out = fb_xmalloc(b64_decoded_max(len) + len + 1);
    if (!v) {
        *n = 0;
    } else if (encoding && !strcmp(encoding, "base64")) {
        ssize_t k = b64_decode(v, len, out);
        *n = k < 0 ? 0 : (size_t)k;
    } else {
        memcpy(out, v, len);
        *n = len;
    }
    return out;
}

static char *b64(const unsigned char *p, size_t n, size_t *len)
{
    char *s = fb_xmalloc(b64_encoded_len(n) + 1);
    *len = b64_encode(p, n, s);
    s[*len] = 0;
    return s;
}

static const char *arg_str(struct mcp_op *op, const char *k)
{
    return json_string_value(json_object_get(op->args, k));
}

static json_t *session_params(struct mcp *m) { return json_pack("{s:s}", "session", m->sid); }

/* ---- exec ---- */

static int exec_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *cmd = json_object_get(op->args, "command"), *av = json_object_get(op->args, "argv");
    if (!cmd == !av) {
        snprintf(why, cap, "exec: give exactly one of \"command\" (a shell line) and \"argv\"");
        return -1;
    }
    static unsigned long seq;
    snprintf(op->xid, sizeof op->xid, "mcp-%lu", ++seq);
    json_t *p = session_params(m);
    json_object_set(p, cmd ? "command" : "argv", cmd ? cmd : av);
    const char *keys[][2] = {{"cwd", "cwd"}, {"env", "env"}, {"stdin", "stdin"}};
    for (size_t i = 0; i < FB_ARRAY_LEN(keys); i++)
        if (json_object_get(op->args, keys[i][0]))
            json_object_set(p, keys[i][1], json_object_get(op->args, keys[i][0]));
    json_t *t = json_object_get(op->args, "timeout_ms");
    if (t)
        json_object_set(p, "timeoutMs", t);
    else if (m->timeout_ms > 0)
        json_object_set_new(p, "timeoutMs", json_integer(m->timeout_ms));
    json_object_set_new(p, "maxOutputBytes", json_integer((json_int_t)m->max_output));
    json_object_set_new(p, "execId", json_string(op->xid));
    mcp_srv_send(m, op, "exec", p);
    return 0;
}

/* stdout/stderr of the result as text (the server may have sent base64). */
static json_t *exec_stream(json_t *res, const char *k, struct fb_buf *text)
{
    size_t n;
    unsigned char *b = decoded(json_object_get(res, k),
                               json_string_value(json_object_get(res, "encoding")), &n);
    json_t *s = mcp_jstr(b, n);
    free(b);
    if (json_string_length(s)) {
        if (text->len && text->data[text->len - 1] != '\n')
            buf_append(text, "\n", 1);
        if (!strcmp(k, "stderr"))
            buf_append(text, "[stderr]\n", 9);
        buf_append(text, json_string_value(s), json_string_length(s));
    }
    return s;
}

static void exec_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    struct fb_buf text = {0};
    json_t *out = exec_stream(res, "stdout", &text);
    json_t *err = exec_stream(res, "stderr", &text);
    json_int_t code = json_integer_value(json_object_get(res, "exitCode"));
    json_t *sig = json_object_get(res, "signal");
    bool timed = json_is_true(json_object_get(res, "timedOut"));
    bool tout = json_is_true(json_object_get(res, "stdoutTruncated"));
    bool terr = json_is_true(json_object_get(res, "stderrTruncated"));
    /* Cut by the server's memory budget (rare, the load of other requests)
     * rather than by maxOutputBytes: say so. */
    bool by_mem = !strcmp(json_string_value(json_object_get(res, "truncatedBy")) ?: "", "memory");
    char tail[320];
    snprintf(tail, sizeof tail, "%s[exit code %lld%s%s%s%s%s%s]",
             text.len && text.data[text.len - 1] != '\n' ? "\n" : "", (long long)code,
             json_is_string(sig) ? ", killed by " : "", json_string_value(sig) ?: "",
             timed ? ", timed out" : "", tout ? ", stdout truncated" : "",
             terr ? ", stderr truncated" : "",
             by_mem ? " (the server's memory budget was full)" : "");
    buf_append(&text, tail, strlen(tail));
    json_t *st = json_pack(
        "{s:I, s:O, s:b, s:o, s:o, s:b, s:b, s:I}", "exit_code", code, "signal",
        json_is_string(sig) ? sig : json_null(), "timed_out", timed, "stdout", out, "stderr",
        err, "stdout_truncated", tout, "stderr_truncated", terr, "duration_ms",
        json_integer_value(json_object_get(res, "durationMs")));
    mcp_op_done(m, op,
                result(mcp_jstr((unsigned char *)text.data, text.len), st, code != 0 || timed));
    buf_free(&text);
}

/* ---- read_file, write_file ---- */

static int read_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *p = session_params(m);
    json_object_set(p, "path", json_object_get(op->args, "path"));
    json_int_t len = (json_int_t)m->max_output;
    json_t *l = json_object_get(op->args, "length");
    if (l && json_integer_value(l) < len)
        len = json_integer_value(l);
    json_t *off = json_object_get(op->args, "offset");
    json_object_set_new(p, "offset", json_integer(off ? json_integer_value(off) : 0));
    json_object_set_new(p, "length", json_integer(len));
    json_object_set_new(p, "encoding", json_string("base64"));
    mcp_srv_send(m, op, "file.read", p);
    return 0;
}

static void read_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    size_t n;
    unsigned char *b = decoded(json_object_get(res, "data"),
                               json_string_value(json_object_get(res, "encoding")), &n);
    json_int_t size = json_integer_value(json_object_get(res, "size"));
    json_t *o = json_object_get(op->args, "offset");
    json_int_t off = o ? json_integer_value(o) : 0;
    bool eof = json_is_true(json_object_get(res, "eof"));
    /* A piece cut in the middle of a character is still text: end it at the
     * last whole one (the next read starts there). */
    bool text = !memchr(b, 0, n) && utf8_valid(b, n);
    for (size_t k = 1; !text && !eof && k <= 3 && k < n; k++)
        if (!memchr(b, 0, n - k) && utf8_valid(b, n - k)) {
            n -= k;
            text = true;
        }
    size_t blen = 0;
    char *enc = text ? NULL : b64(b, n, &blen);
    json_t *content = text ? json_stringn((char *)b, n) : json_stringn(enc, blen);
    json_t *st = json_pack("{s:O, s:O, s:s, s:I, s:I, s:I, s:b}", "path",
                           json_object_get(op->args, "path"), "content", content, "encoding",
                           text ? "utf8" : "base64", "size", size, "offset", off, "bytes_read",
                           (json_int_t)n, "eof", eof);
    json_t *r = result(content, st, false);
    char note[256];
    if (!text) {
        snprintf(note, sizeof note, "binary data: %zu bytes, shown above in base64", n);
        add_note(r, note);
    }
    if (!eof) {
        snprintf(note, sizeof note,
                 "read %zu bytes from offset %lld of %lld: read_file with offset %lld for more",
                 n, (long long)off, (long long)size, (long long)off + (long long)n);
        add_note(r, note);
    }
    free(b);
    free(enc);
    mcp_op_done(m, op, r);
}

static int write_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *p = session_params(m);
    json_object_set(p, "path", json_object_get(op->args, "path"));
    json_object_set(p, "data", json_object_get(op->args, "content"));
    const char *enc = arg_str(op, "encoding");
    json_object_set_new(p, "encoding", json_string(enc ? enc : "utf8"));
    json_object_set_new(p, "parents", json_true());
    mcp_srv_send(m, op, "file.write", p);
    return 0;
}

static void write_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    json_int_t n = json_integer_value(json_object_get(res, "bytesWritten"));
    char msg[4200];
    snprintf(msg, sizeof msg, "wrote %lld bytes to %s", (long long)n, arg_str(op, "path"));
    mcp_op_done(m, op,
                result(jtext(msg),
                       json_pack("{s:O, s:I}", "path", json_object_get(op->args, "path"),
                                 "bytes_written", n),
                       false));
}

/* ---- edit_file: read, one exact unique match, write ---- */

static int edit_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *o = json_object_get(op->args, "old_string");
    if (!json_string_length(o)) {
        snprintf(why, cap, "edit_file: old_string must not be empty");
        return -1;
    }
    if (json_equal(o, json_object_get(op->args, "new_string"))) {
        snprintf(why, cap, "edit_file: old_string and new_string are the same");
        return -1;
    }
    json_t *p = session_params(m);
    json_object_set(p, "path", json_object_get(op->args, "path"));
    json_object_set_new(p, "length", json_integer(MCP_EDIT_MAX));
    json_object_set_new(p, "encoding", json_string("base64"));
    mcp_srv_send(m, op, "file.read", p);
    return 0;
}

static void edit_read(struct mcp *m, struct mcp_op *op, json_t *res)
{
    const char *path = arg_str(op, "path");
    if (!json_is_true(json_object_get(res, "eof"))) {
        mcp_op_fail(m, op, "%s is over %d MiB: too large for edit_file", path, MCP_EDIT_MAX >> 20);
        return;
    }
    size_t n;
    unsigned char *b = decoded(json_object_get(res, "data"),
                               json_string_value(json_object_get(res, "encoding")), &n);
    json_t *os = json_object_get(op->args, "old_string"), *ns = json_object_get(op->args, "new_string");
    size_t ol = json_string_length(os), nl = json_string_length(ns);
    const unsigned char *first = NULL;
    size_t count = 0;
    for (const unsigned char *p = b; (size_t)(p - b) + ol <= n;) {
        const unsigned char *hit = memmem(p, n - (size_t)(p - b), json_string_value(os), ol);
        if (!hit)
            break;
        if (!count++)
            first = hit;
        p = hit + ol;
    }
    if (count != 1) {
        free(b);
        if (!count)
            mcp_op_fail(m, op,
                        "old_string was not found in %s (it must match exactly, whitespace and "
                        "indentation included); nothing was changed",
                        path);
        else
            mcp_op_fail(m, op,
                        "old_string occurs %zu times in %s: include more of the surrounding "
                        "lines to make it unique; nothing was changed",
                        count, path);
        return;
    }
    size_t at = (size_t)(first - b), total = n - ol + nl;
    unsigned char *out = fb_xmalloc(total + 1);
    memcpy(out, b, at);
    memcpy(out + at, json_string_value(ns), nl);
    memcpy(out + at + nl, b + at + ol, n - at - ol);
    size_t line = 1;
    for (size_t i = 0; i < at; i++)
        line += b[i] == '\n';
    op->idx = line;
    size_t elen;
    char *enc = b64(out, total, &elen);
    free(out);
    free(b);
    json_t *p = session_params(m);
    json_object_set(p, "path", json_object_get(op->args, "path"));
    json_object_set_new(p, "data", json_stringn(enc, elen));
    json_object_set_new(p, "encoding", json_string("base64"));
    free(enc);
    op->step = 1;
    mcp_srv_send(m, op, "file.write", p);
}

static void edit_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    if (op->step == 0) {
        edit_read(m, op, res);
        return;
    }
    char msg[4200];
    snprintf(msg, sizeof msg, "edited %s: 1 replacement at line %zu", arg_str(op, "path"),
             op->idx);
    mcp_op_done(m, op,
                result(jtext(msg),
                       json_pack("{s:O, s:i, s:I}", "path", json_object_get(op->args, "path"),
                                 "replacements", 1, "line", (json_int_t)op->idx),
                       false));
}

/* ---- list_dir: readdir, then each entry's size (lstat) ---- */

static const char *list_path(struct mcp_op *op)
{
    const char *p = arg_str(op, "path");
    return p ? p : ".";
}

static void list_next(struct mcp *m, struct mcp_op *op);

static int list_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *p = session_params(m);
    json_object_set_new(p, "path", json_string(list_path(op)));
    mcp_srv_send(m, op, "file.readdir", p);
    return 0;
}

static void list_done(struct mcp *m, struct mcp_op *op)
{
    struct fb_buf text = {0};
    size_t i;
    json_t *e;
    json_array_foreach(op->acc, i, e)
    {
        char line[64];
        json_t *sz = json_object_get(e, "size");
        const char *type = json_string_value(json_object_get(e, "type"));
        if (sz)
            snprintf(line, sizeof line, "%-8s %12lld  ", type, (long long)json_integer_value(sz));
        else
            snprintf(line, sizeof line, "%-8s %12s  ", type, "-");
        buf_append(&text, line, strlen(line));
        json_t *name = json_object_get(e, "name");
        buf_append(&text, json_string_value(name), json_string_length(name));
        buf_append(&text, "\n", 1);
    }
    bool trunc = op->step == 2;
    if (trunc) {
        char note[96];
        snprintf(note, sizeof note, "(only the first %d entries)\n", MCP_MAX_LIST);
        buf_append(&text, note, strlen(note));
    }
    if (!text.len)
        buf_append(&text, "(empty directory)\n", 18);
    json_t *st = json_pack("{s:s, s:O, s:b}", "path", list_path(op), "entries", op->acc,
                           "truncated", trunc);
    mcp_op_done(m, op, result(mcp_jstr((unsigned char *)text.data, text.len), st, false));
    buf_free(&text);
}

static void list_next(struct mcp *m, struct mcp_op *op)
{
    if (op->idx >= json_array_size(op->acc)) {
        list_done(m, op);
        return;
    }
    const char *dir = list_path(op);
    const char *name = json_string_value(json_object_get(json_array_get(op->acc, op->idx), "name"));
    size_t dl = strlen(dir);
    json_t *path = json_sprintf("%s%s%s", dir, dl && dir[dl - 1] == '/' ? "" : "/", name);
    json_t *p = json_pack("{s:s, s:o, s:b}", "session", m->sid, "path", path, "follow", 0);
    mcp_srv_send(m, op, "file.stat", p);
}

static void list_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    if (!op->acc) { /* the listing */
        json_t *ents = json_object_get(res, "entries");
        op->acc = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(ents, i, e)
        {
            if (i >= MCP_MAX_LIST) {
                op->step = 2;
                break;
            }
            json_array_append_new(op->acc, json_pack("{s:O, s:O}", "name", json_object_get(e, "name"),
                                                     "type", json_object_get(e, "type")));
        }
    } else { /* a stat (an entry gone meanwhile has no size) */
        json_t *sz = json_object_get(res, "size");
        if (json_is_integer(sz))
            json_object_set(json_array_get(op->acc, op->idx), "size", sz);
        op->idx++;
    }
    list_next(m, op);
}

/* ---- diff (--cow): the workspace's changes ---- */

static int diff_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *p = json_pack("{s:s, s:s, s:b}", "session", m->sid, "format", "json", "diffs", 1);
    if (json_object_get(op->args, "paths"))
        json_object_set(p, "paths", json_object_get(op->args, "paths"));
    mcp_srv_send(m, op, "workspace.diff", p);
    return 0;
}

/* One change as patch text: headers, then the hunks the server rendered. */
static void diff_entry(struct fb_buf *b, json_t *c)
{
    const char *path = json_string_value(json_object_get(c, "path"));
    const char *st = json_string_value(json_object_get(c, "status"));
    const char *type = json_string_value(json_object_get(c, "type"));
    const char *from = json_string_value(json_object_get(c, "from"));
    json_t *d = json_object_get(c, "diff");
    char h[8400];
    if (!path || !st || !type)
        return;
    if (!strcmp(st, "renamed"))
        snprintf(h, sizeof h, "renamed %s -> %s\n", from ? from : "?", path);
    else if (strcmp(type, "file") || json_is_true(json_object_get(c, "binary")) || !d)
        snprintf(h, sizeof h, "%s %s%s: %s\n", st, strcmp(type, "file") ? type : "file",
                 json_is_true(json_object_get(c, "binary")) ? " (binary)" : "", path);
    else
        snprintf(h, sizeof h, "--- %s%s\n+++ %s%s\n", !strcmp(st, "added") ? "" : "a/",
                 !strcmp(st, "added") ? "/dev/null" : path, !strcmp(st, "deleted") ? "" : "b/",
                 !strcmp(st, "deleted") ? "/dev/null" : path);
    buf_append(b, h, strlen(h));
    if (d && !strcmp(type, "file")) {
        buf_append(b, json_string_value(d), json_string_length(d));
        if (json_string_length(d) && json_string_value(d)[json_string_length(d) - 1] != '\n')
            buf_append(b, "\n", 1);
    }
}

static void diff_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    struct fb_buf text = {0};
    json_t *list = json_array();
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(res, "changes"), i, c)
    {
        diff_entry(&text, c);
        json_t *e = json_pack("{s:O, s:O, s:O}", "path", json_object_get(c, "path"), "status",
                              json_object_get(c, "status"), "type", json_object_get(c, "type"));
        const char *keys[][2] = {{"from", "from"},
                                 {"lines_added", "lines_added"},
                                 {"lines_removed", "lines_removed"},
                                 {"binary", "binary"}};
        for (size_t k = 0; k < FB_ARRAY_LEN(keys); k++)
            if (json_object_get(c, keys[k][0]))
                json_object_set(e, keys[k][1], json_object_get(c, keys[k][0]));
        json_array_append_new(list, e);
    }
    bool trunc = text.len > m->max_output;
    if (trunc)
        text.len = m->max_output;
    json_t *patch = mcp_jstr((unsigned char *)text.data, text.len);
    buf_free(&text);
    json_t *counts = json_object_get(res, "counts");
    json_t *st = json_pack("{s:o, s:o, s:O, s:b}", "changes", list, "counts",
                           counts ? json_incref(counts) : json_object(), "diff", patch,
                           "truncated", trunc);
    json_t *r = result(json_array_size(list) ? patch : jtext("no changes"), st, false);
    if (!json_array_size(list))
        json_decref(patch);
    if (trunc)
        add_note(r, "the diff was cut at --max-output: ask for fewer paths");
    mcp_op_done(m, op, r);
}

/* ---- commit (--cow --mcp-allow-commit): the changes onto the host ---- */

static int commit_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    json_t *p = session_params(m);
    if (json_object_get(op->args, "paths"))
        json_object_set(p, "paths", json_object_get(op->args, "paths"));
    mcp_srv_send(m, op, "workspace.commit", p); /* never forced: the host's changes win */
    return 0;
}

static void commit_reply(struct mcp *m, struct mcp_op *op, json_t *res)
{
    bool done = json_is_true(json_object_get(res, "committed"));
    json_t *conf = json_object_get(res, "conflicts");
    const char *reason = json_string_value(json_object_get(res, "reason"));
    const char *error = json_string_value(json_object_get(res, "error"));
    json_int_t applied = json_integer_value(json_object_get(res, "applied"));
    struct fb_buf text = {0};
    char head[512];
    snprintf(head, sizeof head, "%s: %lld change(s) applied to the host workspace%s%s\n",
             done ? "committed" : "not committed", (long long)applied,
             reason || error ? "; " : "", reason ? reason : error ? error : "");
    buf_append(&text, head, strlen(head));
    size_t i;
    json_t *c;
    json_array_foreach(conf, i, c)
    {
        char line[8400];
        snprintf(line, sizeof line, "conflict: %s: %s\n",
                 json_string_value(json_object_get(c, "path")) ?: "?",
                 json_string_value(json_object_get(c, "reason")) ?: "?");
        buf_append(&text, line, strlen(line));
    }
    json_t *st = json_pack("{s:b, s:I, s:o}", "committed", done, "applied", applied, "conflicts",
                           json_is_array(conf) ? json_incref(conf) : json_array());
    if (reason || error)
        json_object_set_new(st, "reason", json_string(reason ? reason : error));
    mcp_op_done(m, op, result(mcp_jstr((unsigned char *)text.data, text.len), st, !done));
    buf_free(&text);
}

/* ---- the table ---- */

#define PATH_DESC "a path inside the sandbox: absolute, or relative to /workspace"

static const struct tool tools[] = {
    {"exec", "Run a command",
     "Runs a command in the sandbox (a shell line in `command`, or `argv`) and returns its "
     "output and exit status. The sandbox persists between calls: files, /tmp and processes "
     "left running in the background stay. A non-zero exit is reported as an error with the "
     "output kept.",
     "{\"type\":\"object\",\"properties\":{"
     "\"command\":{\"type\":\"string\",\"description\":\"a shell command line, run by /bin/sh -c\"},"
     "\"argv\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},\"minItems\":1,"
     "\"description\":\"the program and its arguments (instead of command)\"},"
     "\"cwd\":{\"type\":\"string\",\"description\":\"working directory (default /workspace)\"},"
     "\"env\":{\"type\":\"object\",\"additionalProperties\":{\"type\":\"string\"},"
     "\"description\":\"environment variables to add\"},"
     "\"stdin\":{\"type\":\"string\",\"description\":\"standard input (then end of file)\"},"
     "\"timeout_ms\":{\"type\":\"integer\",\"minimum\":1,\"description\":\"kill the command "
     "after this many milliseconds\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"exit_code\":{\"type\":\"integer\"},"
     "\"signal\":{\"type\":[\"string\",\"null\"]},\"timed_out\":{\"type\":\"boolean\"},"
     "\"stdout\":{\"type\":\"string\"},\"stderr\":{\"type\":\"string\"},"
     "\"stdout_truncated\":{\"type\":\"boolean\"},\"stderr_truncated\":{\"type\":\"boolean\"},"
     "\"duration_ms\":{\"type\":\"integer\"}},\"required\":[\"exit_code\",\"signal\","
     "\"timed_out\",\"stdout\",\"stderr\",\"stdout_truncated\",\"stderr_truncated\","
     "\"duration_ms\"]}",
     false, false, false, exec_start, exec_reply},
    {"read_file", "Read a file",
     "Reads a file in the sandbox: text as is, binary data as base64. Long files are read in "
     "pieces with offset and length.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"" PATH_DESC "\"},"
     "\"offset\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"first byte (default 0)\"},"
     "\"length\":{\"type\":\"integer\",\"minimum\":0,\"description\":\"bytes to read (default "
     "and most: the server's --max-output)\"}},\"required\":[\"path\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"content\":{\"type\":\"string\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf8\",\"base64\"]},\"size\":{\"type\":\"integer\"},"
     "\"offset\":{\"type\":\"integer\"},\"bytes_read\":{\"type\":\"integer\"},\"eof\":{\"type\":\"boolean\"}},"
     "\"required\":[\"path\",\"content\",\"encoding\",\"size\",\"offset\",\"bytes_read\",\"eof\"]}",
     true, false, false, read_start, read_reply},
    {"write_file", "Write a file",
     "Writes a whole file in the sandbox (replacing it atomically), creating missing parent "
     "directories.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"" PATH_DESC "\"},"
     "\"content\":{\"type\":\"string\",\"description\":\"the new content\"},"
     "\"encoding\":{\"type\":\"string\",\"enum\":[\"utf8\",\"base64\"],\"description\":\"of content "
     "(default utf8)\"}},\"required\":[\"path\",\"content\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"bytes_written\":{\"type\":\"integer\"}},"
     "\"required\":[\"path\",\"bytes_written\"]}",
     false, false, false, write_start, write_reply},
    {"edit_file", "Edit a file",
     "Replaces old_string by new_string in a file of the sandbox. old_string must occur exactly "
     "once (whitespace included); otherwise nothing is changed and the error says why.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"" PATH_DESC "\"},"
     "\"old_string\":{\"type\":\"string\",\"description\":\"the exact text to replace\"},"
     "\"new_string\":{\"type\":\"string\",\"description\":\"its replacement\"}},"
     "\"required\":[\"path\",\"old_string\",\"new_string\"],\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"replacements\":{\"type\":\"integer\"},"
     "\"line\":{\"type\":\"integer\"}},\"required\":[\"path\",\"replacements\",\"line\"]}",
     false, false, false, edit_start, edit_reply},
    {"list_dir", "List a directory",
     "Lists a directory of the sandbox: each entry's name, type and size.",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\",\"description\":\"" PATH_DESC
     " (default /workspace)\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"path\":{\"type\":\"string\"},\"entries\":{\"type\":\"array\","
     "\"items\":{\"type\":\"object\",\"properties\":{\"name\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"},"
     "\"size\":{\"type\":\"integer\"}},\"required\":[\"name\",\"type\"]}},\"truncated\":{\"type\":\"boolean\"}},"
     "\"required\":[\"path\",\"entries\",\"truncated\"]}",
     true, false, false, list_start, list_reply},
    {"diff", "Show the workspace's changes",
     "Shows what the sandbox changed in the copy-on-write /workspace, as a unified diff and a "
     "list. The host decides what is committed.",
     "{\"type\":\"object\",\"properties\":{\"paths\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
     "\"description\":\"only these workspace paths (default: all)\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"changes\":{\"type\":\"array\",\"items\":{\"type\":\"object\","
     "\"properties\":{\"path\":{\"type\":\"string\"},\"status\":{\"type\":\"string\"},\"type\":{\"type\":\"string\"}},"
     "\"required\":[\"path\",\"status\",\"type\"]}},\"counts\":{\"type\":\"object\"},\"diff\":{\"type\":\"string\"},"
     "\"truncated\":{\"type\":\"boolean\"}},\"required\":[\"changes\",\"counts\",\"diff\",\"truncated\"]}",
     true, true, false, diff_start, diff_reply},
    {"commit", "Commit the workspace's changes",
     "Applies the sandbox's changes to the copy-on-write /workspace onto the host directory "
     "(all, or the paths given). Nothing is applied when the host changed a file meanwhile.",
     "{\"type\":\"object\",\"properties\":{\"paths\":{\"type\":\"array\",\"items\":{\"type\":\"string\"},"
     "\"description\":\"only these workspace paths (default: all)\"}},\"additionalProperties\":false}",
     "{\"type\":\"object\",\"properties\":{\"committed\":{\"type\":\"boolean\"},\"applied\":{\"type\":\"integer\"},"
     "\"conflicts\":{\"type\":\"array\",\"items\":{\"type\":\"object\"}},\"reason\":{\"type\":\"string\"}},"
     "\"required\":[\"committed\",\"applied\",\"conflicts\"]}",
     false, true, true, commit_start, commit_reply},
};

int mcp_tool_find(const struct mcp *m, const char *name)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(tools); i++)
        if (!strcmp(tools[i].name, name) && (!tools[i].cow_only || m->cow) &&
            (!tools[i].commit_only || m->allow_commit))
            return (int)i;
    return -1;
}

json_t *mcp_tools_list(const struct mcp *m)
{
    json_t *list = json_array();
    for (size_t i = 0; i < FB_ARRAY_LEN(tools); i++) {
        const struct tool *t = &tools[i];
        if ((t->cow_only && !m->cow) || (t->commit_only && !m->allow_commit))
            continue;
        json_t *e = json_pack("{s:s, s:s, s:o}", "name", t->name, "description", t->desc,
                              "inputSchema", json_loads(t->input, 0, NULL));
        if (mcp_version_at_least(m, "2025-06-18")) {
            json_object_set_new(e, "title", json_string(t->title));
            json_object_set_new(e, "outputSchema", json_loads(t->output, 0, NULL));
        }
        if (mcp_version_at_least(m, "2025-03-26"))
            json_object_set_new(e, "annotations",
                                json_pack("{s:s, s:b, s:b, s:b}", "title", t->title,
                                          "readOnlyHint", t->read_only, "destructiveHint",
                                          !t->read_only, "openWorldHint", 0));
        json_array_append_new(list, e);
    }
    return list;
}

/* ---- arguments against the inputSchema ---- */

/* The JSON Schema types our schemas use: string (enum), integer (minimum),
 * array of strings (minItems), object of strings. */
static bool fits(json_t *v, json_t *sch, const char *key, char *why, size_t cap)
{
    const char *type = json_string_value(json_object_get(sch, "type"));
    const char *want = type;
    bool ok = true;
    if (!strcmp(type, "string")) {
        ok = json_is_string(v);
        json_t *en = json_object_get(sch, "enum");
        size_t i;
        json_t *e;
        bool in = !en;
        json_array_foreach(en, i, e) in = in || (ok && json_equal(e, v));
        if (ok && !in) {
            snprintf(why, cap, "\"%s\" must be one of utf8, base64", key);
            return false;
        }
    } else if (!strcmp(type, "integer")) {
        ok = json_is_integer(v);
        json_t *min = json_object_get(sch, "minimum");
        if (ok && min && json_integer_value(v) < json_integer_value(min)) {
            snprintf(why, cap, "\"%s\" must be at least %lld", key,
                     (long long)json_integer_value(min));
            return false;
        }
    } else if (!strcmp(type, "array")) {
        want = "array of strings";
        ok = json_is_array(v) && (!json_object_get(sch, "minItems") || json_array_size(v));
        size_t i;
        json_t *e;
        json_array_foreach(v, i, e) ok = ok && json_is_string(e);
        if (json_object_get(sch, "minItems"))
            want = "non-empty array of strings";
    } else if (!strcmp(type, "object")) {
        want = "object whose values are strings";
        ok = json_is_object(v);
        const char *k;
        json_t *e;
        json_object_foreach(v, k, e) ok = ok && json_is_string(e);
    }
    if (!ok)
        snprintf(why, cap, "\"%s\" must be a%s %s", key, strchr("aeiou", want[0]) ? "n" : "",
                 want);
    return ok;
}

static bool check_args(const struct tool *t, json_t *args, char *why, size_t cap)
{
    json_t *schema = json_loads(t->input, 0, NULL);
    json_t *props = json_object_get(schema, "properties");
    char msg[400] = "";
    bool ok = true;
    const char *k;
    json_t *v;
    json_object_foreach(args, k, v)
    {
        json_t *sch = json_object_get(props, k);
        if (!sch) {
            snprintf(msg, sizeof msg, "unknown argument \"%.80s\"", k);
            ok = false;
            break;
        }
        if (!(ok = fits(v, sch, k, msg, sizeof msg)))
            break;
    }
    size_t i;
    json_array_foreach(json_object_get(schema, "required"), i, v)
    {
        if (ok && !json_object_get(args, json_string_value(v))) {
            snprintf(msg, sizeof msg, "missing argument \"%s\"", json_string_value(v));
            ok = false;
        }
    }
    if (!ok)
        snprintf(why, cap, "%s: %s", t->name, msg);
    json_decref(schema);
    return ok;
}

int mcp_tool_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap)
{
    const struct tool *t = &tools[op->tool];
    if (!check_args(t, op->args, why, cap))
        return -1;
    if (!m->sid || m->srv_gone) {
        mcp_op_fail(m, op, "the sandbox's server stopped: the session is gone");
        return 0;
    }
    return t->start(m, op, why, cap);
}

/* The server's error as one line: "message (CODE)". */
static void fail_from(struct mcp *m, struct mcp_op *op, json_t *er)
{
    const char *code = json_string_value(json_object_get(er, "code"));
    const char *msg = json_string_value(json_object_get(er, "message"));
    mcp_op_fail(m, op, "%s: %s (%s)", tools[op->tool].name, msg ? msg : "failed",
                code ? code : "error");
}

void mcp_tool_reply(struct mcp *m, struct mcp_op *op, json_t *msg)
{
    json_t *er = json_object_get(msg, "error");
    json_t *res = json_object_get(msg, "result");
    if (op->cancelled) {
        mcp_op_done(m, op, NULL);
        return;
    }
    if (er && tools[op->tool].reply == list_reply && op->acc) {
        op->idx++; /* an entry that could not be stat'ed: no size */
        list_next(m, op);
        return;
    }
    if (er || !json_is_object(res)) {
        fail_from(m, op, er);
        return;
    }
    tools[op->tool].reply(m, op, res);
}
