/* run_cow.c — `fluebox run --cow` after the command (run_cow.h): the
 * changes computed, --changes written, --commit applied when the command
 * succeeded; what went wrong is said here, once, by the command itself. */
#include "run_cow.h"

#include "changes.h"
#include "cow_mount.h"

#include <string.h>

static bool ends_with(const char *s, const char *suf)
{
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

/* --changes FILE is written whole or not at all (a full disk leaves no cut
 * JSON or patch behind); "-" is stdout. */
static int write_out(const char *path, const char *data, size_t len, struct fb_err *err)
{
    int rc = strcmp(path, "-") ? fb_write_output(path, data, len) : fb_write_all(1, data, len);
    return rc < 0 ? fb_errno(err, FB_EXIT_SETUP, "--changes %s", path) : 0;
}

int cow_run_finish(const struct fb_policy *p, struct fb_cow *c, int exit_code, bool ran_ok)
{
    struct fb_err err = {0};
    struct fb_changes ch;
    int code = exit_code;
    if (!p->changes_out && !p->cow_commit)
        return exit_code; /* nobody asked: the layer just goes away */
    if (changes_scan(c, &ch, NULL, &err) < 0) {
        fb_warn("%s", err.msg);
        return p->cow_commit || p->changes_out ? FB_EXIT_SETUP : exit_code;
    }
    /* Rendered before committing: the old contents come from the host. */
    struct fb_changes_opts o = {.diffs = true};
    bool patch = p->changes_out &&
                 (ends_with(p->changes_out, ".patch") || ends_with(p->changes_out, ".diff"));
    struct fb_text text = {0};
    json_t *j = NULL;
    if (patch && changes_patch(c, &ch, &o, &text, &err) < 0) {
        fb_warn("%s", err.msg);
        code = FB_EXIT_SETUP;
        patch = false;
    } else if (p->changes_out && !patch) {
        j = changes_json(c, &ch, &o);
    }

    struct fb_commit res;
    memset(&res, 0, sizeof res);
    const char *not_committed = NULL;
    char why[600];
    bool committed = false;
    if (p->cow_commit) {
        if (ch.upper_full) {
            not_committed = "the copy-on-write layer ran out of space (--disk)";
        } else if (!ran_ok) {
            snprintf(why, sizeof why, "the command did not succeed (exit %d)", exit_code);
            not_committed = why;
        } else if (commit_apply(c, &ch, NULL, 0, false, NULL, &res, &err) < 0) {
            snprintf(why, sizeof why, "%s", res.nconflicts ? "conflicts with changes made on the host"
                                                         : err.msg);
            not_committed = why;
        } else {
            committed = true;
        }
        if (not_committed && ran_ok) {
            code = FB_EXIT_SETUP;
            fb_warn("--commit: %s", not_committed);
            for (size_t i = 0; i < res.nconflicts; i++)
                fb_warn("conflict: %s: %s", res.conflicts[i].path, res.conflicts[i].reason);
        } else if (not_committed && !p->quiet) {
            fb_warn("--commit: not committing: %s", not_committed);
        }
        /* The caller's persistent layer now holds nothing the host lacks. */
        if (committed && c->persistent && cow_reset(c, &err) < 0)
            fb_warn("%s", err.msg);
    }

    if (patch && write_out(p->changes_out, text.p ? text.p : "", text.len, &err) < 0) {
        fb_warn("%s", err.msg);
        code = FB_EXIT_SETUP;
    }
    if (j) {
        if (p->cow_commit) {
            json_t *cj = commit_json(&res);
            json_object_set_new(cj, "committed", json_boolean(committed));
            json_object_set_new(cj, "reason", not_committed ? json_string(not_committed) : json_null());
            json_object_set_new(j, "commit", cj);
        }
        char *s = json_dumps(j, JSON_COMPACT);
        char *line = s ? fb_xasprintf("%s\n", s) : NULL;
        if (!line || write_out(p->changes_out, line, strlen(line), &err) < 0) {
            fb_warn("%s", line ? err.msg : "--changes: cannot encode the changes");
            code = FB_EXIT_SETUP;
        }
        free(line);
        free(s);
        json_decref(j);
    }
    text_free(&text);
    commit_free(&res);
    changes_free(&ch);
    changes_restore_modes(c);
    return code;
}
