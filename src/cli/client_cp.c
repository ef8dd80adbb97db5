/* client_cp.c — `fluebox cp` (docs/server.md): one file into or out of a
 * session through file.write / file.read, or with -r a directory as a tar
 * stream (tarstream.h): in, the tar is written into the session and
 * unpacked there by tar(1), inside the sandbox; out, tar(1) runs in the
 * session and its output is unpacked here by tarstream.c, which never
 * follows a link on the host and never writes outside the destination. */
#include "commands.h"

#include "client.h"
#include "tarstream.h"

#include <fcntl.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

/* ---- cp ---- */

static const char cp_usage[] =
    "Usage: fluebox cp [OPTIONS] SRC DST\n"
    "Copies one file into or out of a session. Exactly one of SRC and DST is\n"
    "SESSION:PATH (a relative PATH is relative to the session's /workspace);\n"
    "the other is a local path, or - for standard input / output. A DST that is\n"
    "a directory (or ends in /) receives the file under its own name.\n"
    "With -r, SRC may be a directory: it is copied with everything below it as a\n"
    "tar stream (symlinks stay symlinks, and are never followed; on the host,\n"
    "nothing is written outside DST or through a link). An existing directory DST\n"
    "receives it under its own name; otherwise DST is created with its contents.\n"
    "\n";

static int set_parents(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->parents = true;
    return 0;
}

static int set_recursive(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->recursive = true;
    return 0;
}

const struct fb_opt cp_opts[] = {
    SOCKET_OPT,
    {"parents", 'p', FB_ARG_NONE, NULL, FB_OPT_ANY, set_parents,
     "create missing parent directories in the session", NULL},
    {"recursive", 'r', FB_ARG_NONE, NULL, FB_OPT_ANY, set_recursive,
     "copy directories, with everything below them (a tar stream)", NULL},
};
const size_t cp_opts_n = FB_ARRAY_LEN(cp_opts);

/* "s-0123:path" -> id and path. A local path with a colon before any
 * slash needs "./". */
static bool split_remote(const char *a, char **id, const char **path)
{
    const char *colon = strchr(a, ':');
    if (!colon || colon == a)
        return false;
    for (const char *p = a; p < colon; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
              *p == '-' || *p == '_'))
            return false;
    *id = fb_xstrndup(a, (size_t)(colon - a));
    *path = colon + 1;
    return true;
}

static const char *base_name(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

#define CP_CHUNK (8u << 20)

static int cp_in(struct cli *c, const char *local, const char *sid, const char *rpath,
                 bool parents, struct fb_err *err)
{
    int fd = 0;
    mode_t mode = 0644;
    if (strcmp(local, "-")) {
        fd = open(local, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", local);
        struct stat st;
        if (fstat(fd, &st) == 0) {
            if (S_ISDIR(st.st_mode)) {
                close(fd);
                return fb_errf(err, FB_EXIT_SETUP, "%s: directories are not supported (use tar through fluebox exec)", local);
            }
            mode = st.st_mode & 0777;
        }
    }
    /* Into a directory? */
    cleanup_free char *target = NULL;
    size_t rl = strlen(rpath);
    if (!rl || rpath[rl - 1] == '/') {
        target = fb_xasprintf("%s%s", rl ? rpath : "", strcmp(local, "-") ? base_name(local) : "stdin");
    } else {
        json_t *st = cli_call(c, "file.stat", json_pack("{s:s, s:s}", "session", sid, "path", rpath), err);
        if (st && !strcmp(json_string_value(json_object_get(st, "type")) ?: "", "dir"))
            target = fb_xasprintf("%s/%s", rpath, strcmp(local, "-") ? base_name(local) : "stdin");
        else
            target = fb_xstrdup(rpath);
        json_decref(st);
    }
    unsigned char *buf = fb_xmalloc(CP_CHUNK);
    char *b64 = fb_xmalloc(b64_encoded_len(CP_CHUNK) + 1);
    bool first = true;
    int rc = 0;
    for (;;) {
        ssize_t n = fb_read_full(fd, buf, CP_CHUNK);
        if (n < 0) {
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", local);
            break;
        }
        if (n == 0 && !first)
            break;
        size_t bl = b64_encode(buf, (size_t)n, b64);
        json_t *p = json_pack("{s:s, s:s, s:s%, s:s, s:b, s:b, s:i}", "session", sid, "path", target,
                              "data", b64, bl, "encoding", "base64", "append", !first, "parents",
                              parents, "mode", (int)mode);
        json_t *res = cli_call(c, "file.write", p, err);
        if (!res) {
            rc = -1;
            break;
        }
        json_decref(res);
        first = false;
        if ((size_t)n < CP_CHUNK)
            break;
    }
    free(buf);
    free(b64);
    if (fd > 0)
        close(fd);
    return rc;
}

static int cp_out(struct cli *c, const char *sid, const char *rpath, const char *local,
                  struct fb_err *err)
{
    json_t *st = cli_call(c, "file.stat", json_pack("{s:s, s:s}", "session", sid, "path", rpath), err);
    if (!st)
        return -1;
    const char *type = json_string_value(json_object_get(st, "type"));
    mode_t mode = (mode_t)json_integer_value(json_object_get(st, "mode")) & 0777;
    bool dir = type && !strcmp(type, "dir");
    json_decref(st);
    if (dir)
        return fb_errf(err, FB_EXIT_SETUP, "%s: directories are not supported (use tar through fluebox exec)", rpath);
    int fd = 1;
    cleanup_free char *target = NULL;
    if (strcmp(local, "-")) {
        struct stat lst;
        size_t ll = strlen(local);
        if ((ll && local[ll - 1] == '/') || (stat(local, &lst) == 0 && S_ISDIR(lst.st_mode)))
            target = fb_xasprintf("%s/%s", local, base_name(rpath));
        else
            target = fb_xstrdup(local);
        fd = open(target, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode ? mode : 0644);
        if (fd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", target);
    }
    int64_t off = 0;
    int rc = 0;
    for (;;) {
        json_t *res = cli_call(c, "file.read",
                               json_pack("{s:s, s:s, s:I, s:s}", "session", sid, "path", rpath,
                                         "offset", (json_int_t)off, "encoding", "base64"),
                               err);
        if (!res) {
            rc = -1;
            break;
        }
        json_t *d = json_object_get(res, "data");
        int64_t got = json_integer_value(json_object_get(res, "bytesRead"));
        bool eof = json_is_true(json_object_get(res, "eof"));
        if (json_is_string(d) && write_decoded(fd, json_string_value(d), json_string_length(d)) < 0)
            rc = fb_errno(err, FB_EXIT_SETUP, "%s", target ? target : "stdout");
        json_decref(res);
        off += got;
        if (rc < 0 || eof || got <= 0)
            break;
    }
    if (fd > 1)
        close(fd);
    return rc;
}

/* ---- directories ---- */

/* "a/b/c" -> "a/b" and "c"; "c" -> "." and "c". */
static void split_dir(const char *p, char **dir, char **name)
{
    cleanup_free char *c = fb_xstrdup(p);
    size_t l = strlen(c);
    while (l > 1 && c[l - 1] == '/')
        c[--l] = 0;
    char *slash = strrchr(c, '/');
    if (!slash) {
        *dir = fb_xstrdup(".");
        *name = fb_xstrdup(c);
    } else {
        *name = fb_xstrdup(slash + 1);
        *dir = slash == c ? fb_xstrdup("/") : fb_xstrndup(c, (size_t)(slash - c));
    }
}

static bool remote_is_dir(struct cli *c, const char *sid, const char *path, bool *exists,
                          struct fb_err *err)
{
    json_t *st = cli_call(c, "file.stat", json_pack("{s:s, s:s}", "session", sid, "path", path), err);
    *exists = st != NULL;
    bool dir = st && !strcmp(json_string_value(json_object_get(st, "type")) ?: "", "dir");
    json_decref(st);
    return dir;
}

/* The tar stream into the session: collected in chunks written to a file
 * of the session's /tmp, appended one file.write at a time. */
struct upload {
    struct cli *c;
    const char *sid, *path;
    struct fb_buf buf;
    bool first;
    struct fb_err *err;
};

static int upload_flush(struct upload *u)
{
    if (!buf_pending(&u->buf) && !u->first)
        return 0;
    char *b64 = fb_xmalloc(b64_encoded_len(buf_pending(&u->buf)) + 1);
    size_t bl = b64_encode((const unsigned char *)buf_head(&u->buf), buf_pending(&u->buf), b64);
    json_t *p = json_pack("{s:s, s:s, s:s%, s:s, s:b, s:i}", "session", u->sid, "path", u->path,
                          "data", b64, bl, "encoding", "base64", "append", !u->first, "mode", 0600);
    free(b64);
    json_t *res = cli_call(u->c, "file.write", p, u->err);
    buf_reset(&u->buf);
    u->first = false;
    if (!res)
        return -1;
    json_decref(res);
    return 0;
}

static int upload_emit(void *ctx, const void *data, size_t len)
{
    struct upload *u = ctx;
    buf_append(&u->buf, data, len);
    return buf_pending(&u->buf) >= CP_CHUNK ? upload_flush(u) : 0;
}

static void cp_warn(void *ctx, const char *msg)
{
    fb_warn("cp: %s", msg);
}

/* Run argv in the session, its stdout to on_out (base64 decoded), its
 * stderr to ours. The command's exit status, or -1 with err. */
static int remote_run(struct cli *c, const char *sid, json_t *argv,
                      int (*on_out)(void *ctx, const void *d, size_t n, struct fb_err *err),
                      void *ctx, struct fb_err *err)
{
    int64_t id;
    json_t *params = json_pack("{s:s, s:o, s:b, s:s}", "session", sid, "argv", argv, "stream", 1,
                               "encoding", "base64");
    if (cli_send(c, "exec", params, &id, err) < 0)
        return -1;
    int rc = -1;
    bool failed = false;
    for (;;) {
        json_t *m = cli_recv(c, err);
        if (!m)
            return -1;
        json_t *mid = json_object_get(m, "id");
        if (!json_is_integer(mid) || json_integer_value(mid) != id) {
            json_decref(m);
            continue;
        }
        const char *ev = json_string_value(json_object_get(m, "event"));
        json_t *d = json_object_get(m, "data");
        if (ev && json_is_string(d) && !failed) {
            size_t n = json_string_length(d);
            unsigned char *raw = fb_xmalloc(b64_decoded_max(n));
            ssize_t l = b64_decode(json_string_value(d), n, raw);
            if (l > 0 && !strcmp(ev, "stdout") && on_out && on_out(ctx, raw, (size_t)l, err) < 0)
                failed = true; /* keep reading to the end of the exec */
            else if (l > 0 && !strcmp(ev, "stderr"))
                (void)!fb_write_all(2, raw, (size_t)l);
            free(raw);
        }
        if (ev) {
            json_decref(m);
            continue;
        }
        json_t *er = json_object_get(m, "error");
        if (er)
            err_from(er, err);
        else if (!failed)
            rc = (int)json_integer_value(json_object_get(json_object_get(m, "result"), "exitCode"));
        json_decref(m);
        return failed || er ? -1 : rc;
    }
}

static int cp_in_dir(struct cli *c, const char *local, const char *sid, const char *rpath,
                     bool parents, struct fb_err *err)
{
    cleanup_close int dfd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", local);
    /* Into an existing directory under its own name, else as rpath. */
    bool exists;
    bool into = remote_is_dir(c, sid, rpath, &exists, err);
    cleanup_free char *ldir = NULL, *lname = NULL;
    split_dir(local, &ldir, &lname);
    const char *prefix = into ? lname : ".";
    if (!strcmp(lname, ".") || !strcmp(lname, "..") || !strcmp(lname, "/"))
        prefix = ".";
    if (exists && !into)
        return fb_errf(err, FB_EXIT_SETUP, "%s: exists in the session and is not a directory", rpath);
    if (!exists) {
        json_t *r = cli_call(c, "file.mkdir",
                             json_pack("{s:s, s:s, s:b}", "session", sid, "path", rpath, "recursive", parents),
                             err);
        if (!r)
            return -1;
        json_decref(r);
    }
    unsigned char rnd[6] = {0};
    (void)!getrandom(rnd, sizeof rnd, GRND_NONBLOCK);
    char tmp[96];
    snprintf(tmp, sizeof tmp, "/tmp/.fluebox-cp-%d-%02x%02x%02x%02x%02x%02x.tar", (int)getpid(),
             rnd[0], rnd[1], rnd[2], rnd[3], rnd[4], rnd[5]);
    struct upload u = {.c = c, .sid = sid, .path = tmp, .first = true, .err = err};
    int rc = tar_write_dir(dfd, prefix, upload_emit, &u, cp_warn, err);
    if (rc == 0)
        rc = upload_flush(&u);
    buf_free(&u.buf);
    if (rc == 0) {
        json_t *argv = json_pack("[s, s, s, s, s, s, s]", "tar", "-x", "-p", "-f", tmp, "-C", rpath);
        int x = remote_run(c, sid, argv, NULL, NULL, err);
        if (x > 0)
            rc = fb_errf(err, FB_EXIT_SETUP, "tar in the session exited %d", x);
        else if (x < 0)
            rc = -1;
    }
    struct fb_err e2 = {0};
    json_decref(cli_call(c, "file.rm", json_pack("{s:s, s:s, s:b}", "session", sid, "path", tmp, "force", 1), &e2));
    return rc;
}

struct unpack {
    struct tar_reader *r;
};

static int unpack_out(void *ctx, const void *d, size_t n, struct fb_err *err)
{
    return tar_reader_feed(((struct unpack *)ctx)->r, d, n, err);
}

static int cp_out_dir(struct cli *c, const char *sid, const char *rpath, const char *local,
                      struct fb_err *err)
{
    struct stat st;
    bool into = stat(local, &st) == 0 && S_ISDIR(st.st_mode);
    if (!into && mkdir(local, 0755) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", local);
    cleanup_close int dfd = open(local, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", local);
    cleanup_free char *rdir = NULL, *rname = NULL;
    split_dir(rpath, &rdir, &rname);
    bool whole = into && strcmp(rname, ".") && strcmp(rname, "..") && strcmp(rname, "/");
    json_t *argv = whole ? json_pack("[s, s, s, s, s, s, s]", "tar", "-c", "--hard-dereference", "-f",
                                     "-", "-C", rdir)
                         : json_pack("[s, s, s, s, s, s, s]", "tar", "-c", "--hard-dereference", "-f",
                                     "-", "-C", rpath);
    json_array_append_new(argv, json_string(whole ? rname : "."));
    struct unpack up = {tar_reader_new(dfd, 0)};
    int x = remote_run(c, sid, argv, unpack_out, &up, err);
    size_t files = 0, skipped = 0;
    int rc = x < 0 ? -1 : tar_reader_finish(up.r, &files, &skipped, err);
    tar_reader_free(up.r);
    if (rc == 0 && x > 0)
        rc = fb_errf(err, FB_EXIT_SETUP, "tar in the session exited %d", x);
    if (rc == 0 && skipped)
        fb_warn("cp: %zu entr%s skipped (hard links, devices, fifos)", skipped, skipped == 1 ? "y" : "ies");
    return rc;
}

int cmd_cp(int argc, char **argv)
{
    struct copts co = {0};
    struct fb_parsed parsed;
    int r = client_opts("cp", cp_usage, cp_opts, FB_ARRAY_LEN(cp_opts), &co, argc, argv,
                        FB_PARSE_PERMUTE, &parsed);
    if (r)
        return r > 0 ? 0 : FB_EXIT_SETUP;
    const char *sock = co.sock;
    bool parents = co.parents;
    if (parsed.nargs != 2) {
        fb_warn("cp: expected SRC and DST (see fluebox cp --help)");
        opt_parsed_free(&parsed);
        return FB_EXIT_SETUP;
    }
    const char *args[2] = {parsed.args[0], parsed.args[1]}; /* strings of argv */
    opt_parsed_free(&parsed);
    cleanup_free char *sid0 = NULL;
    cleanup_free char *sid1 = NULL;
    const char *p0, *p1;
    bool r0 = split_remote(args[0], &sid0, &p0), r1 = split_remote(args[1], &sid1, &p1);
    if (r0 == r1) {
        fb_warn("cp: exactly one of SRC and DST must be SESSION:PATH");
        return FB_EXIT_SETUP;
    }
    struct fb_err err = {0};
    struct cli c;
    if (cli_connect(&c, sock, &err) < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    int rc;
    struct stat lst;
    bool ldir = r1 && strcmp(args[0], "-") && stat(args[0], &lst) == 0 && S_ISDIR(lst.st_mode);
    bool exists;
    bool rdir = r0 && remote_is_dir(&c, sid0, p0, &exists, &err);
    if ((ldir || rdir) && !co.recursive)
        rc = fb_errf(&err, FB_EXIT_SETUP, "%s is a directory (use cp -r)", args[0]);
    else if (ldir)
        rc = cp_in_dir(&c, args[0], sid1, p1, parents, &err);
    else if (rdir && !strcmp(args[1], "-"))
        rc = fb_errf(&err, FB_EXIT_SETUP, "cp -r: a directory cannot go to standard output");
    else if (rdir)
        rc = cp_out_dir(&c, sid0, p0, args[1], &err);
    else
        rc = r1 ? cp_in(&c, args[0], sid1, p1, parents, &err) : cp_out(&c, sid0, p0, args[1], &err);
    cli_close(&c);
    if (rc < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    return 0;
}
