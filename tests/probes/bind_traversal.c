/* bind_traversal: leave a bind through "..", through symlinks that point out
 * of it (relative and absolute, planted on the host by the runner), and by
 * hard-linking a file from another bind into the writable workspace.
 * The secret sits on the host next to the workspace directory, so
 * "../secret" from the workspace is the host file when nothing isolates. */
#include "probe.h"

static void try_read(struct probe_res *r, int dirfd, const char *dirname, const char *path)
{
    int e;
    if (read_secret_at(dirfd, path, &e))
        res_escape(r, "read the secret via %s/%s", dirname, path);
    else
        res_note(r, "%s/%s: %s", dirname, path, e ? ename(e) : "not the secret");
}

static void probe_attempt(struct probe_res *r)
{
    const char *data = parg("data");
    const char *secret = parg("secret");
    if (!data || !secret) {
        res_skip(r, "need data= and secret=");
        return;
    }
    /* The workspace is the cwd: the runner planted "up" -> ../secret and
     * "abs" -> the secret's absolute host path in it, and the same two in the
     * read-only bind. */
    try_read(r, AT_FDCWD, ".", "../secret");
    try_read(r, AT_FDCWD, ".", "up");
    try_read(r, AT_FDCWD, ".", "abs");

    int dfd = open(data, O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        res_note(r, "%s: %s", data, ename(errno));
    } else {
        try_read(r, dfd, data, "../secret");
        try_read(r, dfd, data, "up");
        try_read(r, dfd, data, "abs");
        /* Climb as far as ".." goes, then walk the host path down. */
        char deep[4096] = "";
        for (int i = 0; i < 16; i++)
            strcat(deep, "../");
        strncat(deep, secret[0] == '/' ? secret + 1 : secret, sizeof(deep) - strlen(deep) - 1);
        try_read(r, dfd, data, deep);
        close(dfd);
    }

    /* Hard link from the read-only bind into the workspace: links never cross
     * mounts, so this must fail with EXDEV inside a sandbox. */
    char src[4096];
    snprintf(src, sizeof(src), "%s/data.txt", data);
    if (link(src, "hardlink-by-probe") == 0) {
        unlink("hardlink-by-probe");
        res_escape(r, "hard-linked %s into the workspace", src);
    } else {
        res_note(r, "link: %s", ename(errno));
    }
}

PROBE_MAIN("bind_traversal")
