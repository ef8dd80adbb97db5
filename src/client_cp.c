/* client_cp.c — `fluebox cp` (docs/server.md): one file into or out of a
 * session through file.write / file.read, or with -r a directory as a tar
 * stream (tarstream.h): in, the tar is written into the session and
 * unpacked there by tar(1), inside the sandbox; out, tar(1) runs in the
 * session and its output is unpacked here by tarstream.c, which never
 * follows a link on the host and never writes outside the destination. */
#include "commands.h"

#include "client.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

/* ---- cp ---- */

static const char cp_usage[] =
    "Usage: fluebox cp [OPTIONS] SRC DST\n"
    "Copies one file into or out of a session. Exactly one of SRC and DST is\n"
    "SESSION:PATH (a relative PATH is relative to the session's /workspace);\n"
    "the other is a local path, or - for standard input / output. A DST that is\n"
    "a directory (or ends in /) receives the file under its own name.\n"
    "\n";

static int set_parents(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    ((struct copts *)ctx)->parents = true;
    return 0;
}

static const struct fb_opt cp_opts[] = {
    SOCKET_OPT,
    {"parents", 'p', FB_ARG_NONE, NULL, FB_OPT_ANY, set_parents,
     "create missing parent directories in the session", NULL},
};

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
    int rc = r1 ? cp_in(&c, args[0], sid1, p1, parents, &err) : cp_out(&c, sid0, p0, args[1], &err);
    cli_close(&c);
    if (rc < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    return 0;
}
