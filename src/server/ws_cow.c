/* ws_cow.c — the workspace.* methods of a copy-on-write session
 * (docs/protocol.md, "Copy-on-write workspaces"): workspace.diff,
 * workspace.commit, workspace.reset. The server calls cow_session_method()
 * with the session's struct fb_cow (sandbox.cow); everything here works on
 * the upper layer's fd and the host workspace's fd, never on paths inside
 * the sandbox, so it does not involve the session's init. */
#include "changes.h"
#include "cow_mount.h"
#include "proto.h"

#include <string.h>

#define MAX_PATCH (64 << 20) /* a workspace.diff answer larger than this is too_large */

/* params.paths: an optional array of workspace-relative paths. */
static int get_paths(json_t *params, char ***out, size_t *n, struct proto_err *e)
{
    *out = NULL;
    *n = 0;
    json_t *arr = NULL;
    if (pget_strarray(params, "paths", &arr, true, e) < 0)
        return -1;
    if (!arr)
        return 0;
    size_t k = json_array_size(arr);
    char **v = fb_xcalloc(k + 1, sizeof *v);
    for (size_t i = 0; i < k; i++) {
        const char *s = json_string_value(json_array_get(arr, i));
        /* "/workspace/x", "./x" and "x" all name x. */
        if (!strncmp(s, "/workspace/", 11))
            s += 11;
        else if (!strcmp(s, "/workspace"))
            s = ".";
        while (s[0] == '.' && s[1] == '/')
            s += 2;
        if (s[0] == '/' || strstr(s, "/../") || !strncmp(s, "../", 3) || !strcmp(s, "..")) {
            for (size_t j = 0; j < i; j++)
                free(v[j]);
            free(v);
            return perr_param(e, "paths", "paths are relative to the workspace (or under /workspace)");
        }
        v[i] = fb_xstrdup(s);
    }
    *out = v;
    *n = k;
    return 0;
}

static void free_paths(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

/* An error of the copy-on-write layer. A cancelled operation is
 * "cancelled": the caller that cancelled it knows why and answers with its
 * own code (session_dead, shutting_down). */
static void cow_error(struct proto_err *e, const struct fb_err *err)
{
    if (err->code == FB_ERR_CANCELLED)
        perr_set(e, "cancelled", "the operation was cancelled");
    else
        perr_set(e, "internal", "%s", err->msg);
}

static json_t *m_diff(struct fb_cow *c, json_t *params, const struct fb_cow_progress *prog,
                      struct proto_err *e)
{
    const char *format;
    bool diffs;
    char **sel;
    size_t nsel;
    if (pget_str(params, "format", &format, "json", false, 16, e) < 0 ||
        pget_bool(params, "diffs", &diffs, true, e) < 0)
        return NULL;
    if (strcmp(format, "json") && strcmp(format, "patch")) {
        perr_param(e, "format", "format is \"json\" or \"patch\"");
        return NULL;
    }
    if (get_paths(params, &sel, &nsel, e) < 0)
        return NULL;
    struct fb_changes ch;
    struct fb_err err = {0};
    json_t *r = NULL;
    if (changes_scan(c, &ch, prog, &err) < 0) {
        cow_error(e, &err);
        free_paths(sel, nsel);
        return NULL;
    }
    struct fb_changes_opts o = {.diffs = diffs, .sel = sel, .nsel = nsel, .progress = prog};
    if (!strcmp(format, "json")) {
        r = changes_json(c, &ch, &o);
        if (!r)
            perr_set(e, "cancelled", "the operation was cancelled");
    } else {
        struct fb_text t = {0};
        if (changes_patch(c, &ch, &o, &t, &err) < 0) {
            cow_error(e, &err);
        } else if (t.len > MAX_PATCH) {
            perr_set(e, "too_large", "the patch is larger than %d bytes", MAX_PATCH);
        } else {
            r = json_object();
            const char *s = t.p ? t.p : "";
            if (utf8_valid((const unsigned char *)s, t.len)) {
                json_object_set_new(r, "patch", json_stringn(s, t.len));
                json_object_set_new(r, "encoding", json_string("utf8"));
            } else {
                /* A text diff of a file that is not UTF-8: bytes, as base64. */
                char *b = fb_xmalloc(b64_encoded_len(t.len) + 1);
                size_t n = b64_encode((const unsigned char *)s, t.len, b);
                json_object_set_new(r, "patch", json_stringn(b, n));
                json_object_set_new(r, "encoding", json_string("base64"));
                free(b);
            }
            json_object_set_new(r, "upper_full", json_boolean(ch.upper_full));
        }
        text_free(&t);
    }
    changes_free(&ch);
    changes_restore_modes(c);
    free_paths(sel, nsel);
    return r;
}

static json_t *m_commit(struct fb_cow *c, json_t *params, const struct fb_cow_progress *prog,
                        struct proto_err *e)
{
    bool force;
    char **sel;
    size_t nsel;
    if (pget_bool(params, "force", &force, false, e) < 0 || get_paths(params, &sel, &nsel, e) < 0)
        return NULL;
    if (c->readonly) {
        perr_set(e, "permission_denied", "the session's profile makes the workspace read-only");
        free_paths(sel, nsel);
        return NULL;
    }
    struct fb_changes ch;
    struct fb_err err = {0};
    if (changes_scan(c, &ch, prog, &err) < 0) {
        cow_error(e, &err);
        free_paths(sel, nsel);
        return NULL;
    }
    struct fb_commit res;
    memset(&res, 0, sizeof res);
    json_t *r;
    if (ch.upper_full) {
        r = commit_json(&res);
        json_object_set_new(r, "committed", json_false());
        json_object_set_new(r, "reason",
                            json_string("the copy-on-write layer ran out of space (limits.disk)"));
    } else {
        int rc = commit_apply(c, &ch, sel, nsel, force, prog, &res, &err);
        r = commit_json(&res);
        json_object_set_new(r, "committed", json_boolean(rc == 0));
        json_object_set_new(r, "reason", rc == 0 ? json_null() : json_string(err.msg));
    }
    commit_free(&res);
    changes_free(&ch);
    changes_restore_modes(c);
    free_paths(sel, nsel);
    return r;
}

json_t *cow_session_call(struct fb_cow *c, const char *method, json_t *params,
                         const struct fb_cow_progress *prog, struct proto_err *e)
{
    if (!c) {
        perr_set(e, "not_supported", "%s: the session was not created with \"cow\": true", method);
        return NULL;
    }
    if (!strcmp(method, "workspace.diff"))
        return m_diff(c, params, prog, e);
    if (!strcmp(method, "workspace.commit"))
        return m_commit(c, params, prog, e);
    if (!strcmp(method, "session.snapshot"))
        return cow_snapshot(c, params, e);
    if (!strcmp(method, "session.restore"))
        return cow_snapshot_restore(c, params, e);
    if (!strcmp(method, "workspace.reset")) {
        struct fb_err err = {0};
        if (cow_reset(c, &err) < 0) {
            perr_set(e, "internal", "%s", err.msg);
            return NULL;
        }
        return json_pack("{s:b}", "reset", 1);
    }
    perr_set(e, "method_not_found", "unknown method %s", method);
    return NULL;
}

json_t *cow_session_method(struct fb_cow *c, const char *method, json_t *params,
                           struct proto_err *e)
{
    return cow_session_call(c, method, params, NULL, e);
}
