/* changes.h — what the sandbox changed in a copy-on-write workspace, and
 * applying it to the host (commit.c).
 *
 * changes_scan() compares the overlay's upper layer with the host directory
 * as it is now: every entry of the upper layer is an addition, a
 * modification (content or mode), a deletion (a whiteout, or an opaque
 * directory hiding host entries) or nothing (a copy-up that ended up equal,
 * such as `touch`). A deleted and an added file with the same content
 * become one rename. Results are sorted by path; paths are relative to the
 * workspace, without "./". Contents are not kept: they are read again from
 * the upper layer and the host when rendered or committed. */
#ifndef FB_CHANGES_H
#define FB_CHANGES_H

#include "cow.h"
#include "udiff.h"

#include <jansson.h>

enum fb_chg_status {
    FB_CHG_ADDED,
    FB_CHG_MODIFIED, /* content and/or mode */
    FB_CHG_DELETED,
    FB_CHG_RENAMED,  /* from -> path, same content; the mode may change too */
};

enum fb_chg_kind { FB_K_FILE = 'f', FB_K_LINK = 'l', FB_K_DIR = 'd', FB_K_OTHER = '?' };

struct fb_change {
    char *path;
    char *from;                /* FB_CHG_RENAMED: the old path */
    enum fb_chg_status status;
    char kind;                 /* FB_K_*: the new entry (the old one for deletions) */
    mode_t mode, old_mode;     /* permission bits (07777); 0 when absent */
    int64_t size, old_size;    /* -1 when absent */
    bool content;              /* the content differs (modified) */
    bool copied_up;            /* the upper entry was copied up from the host */
};

struct fb_changes {
    struct fb_change *v;
    size_t n;
    char **skipped;            /* upper entries that cannot be represented
                                  (fifos, sockets, devices), "path: why" */
    size_t nskipped;
    bool upper_full;           /* the upper layer ran out of space */
};

/* Scan the upper layer of c against the host workspace (prog: see
 * struct fb_cow_progress, NULL for none). */
int changes_scan(struct fb_cow *c, struct fb_changes *out, const struct fb_cow_progress *prog,
                 struct fb_err *err);
void changes_free(struct fb_changes *ch);

/* Does path fall under one of sel (a selected path selects itself and all
 * below it; a rename is selected by either of its paths)? nsel 0 = all. */
bool changes_selected(const struct fb_change *x, char *const *sel, size_t nsel);

/* Rendering options. */
struct fb_changes_opts {
    bool diffs;                /* include per-file unified diff text in the JSON */
    size_t max_diff;           /* per-file cap on the diff text, bytes (0 = 1 MiB) */
    char *const *sel;          /* only these paths (see changes_selected) */
    size_t nsel;
    const struct fb_cow_progress *progress; /* NULL: none */
};

/* The changes as a JSON object: {"changes": [...], "counts": {...}, ...};
 * NULL when cancelled through o->progress. */
json_t *changes_json(struct fb_cow *c, const struct fb_changes *ch,
                     const struct fb_changes_opts *o);

/* The changes as a patch that `git apply` (run in the workspace) accepts:
 * text diffs, binary files as "GIT binary patch" literals, modes, renames,
 * symlinks. Directories are not part of a patch (git tracks none). */
int changes_patch(struct fb_cow *c, const struct fb_changes *ch, const struct fb_changes_opts *o,
                  struct fb_text *out, struct fb_err *err);

/* Read a whole entry's content (a file's bytes, a symlink's target) from
 * the upper layer or the host, never following a symlink, never blocking
 * on a fifo. Returns 0, or -1 with errno. */
int changes_read_upper(struct fb_cow *c, const char *path, char kind, struct fb_text *out);
/* Open an upper-layer file the same way (flags get O_NOFOLLOW). */
int changes_open_upper(struct fb_cow *c, const char *path, int flags);
/* Give back the modes of upper-layer directories that had to be opened up
 * for reading (fluebox unprivileged, the sandbox made them unsearchable);
 * call when a whole operation (scan, render, commit) is done. */
void changes_restore_modes(struct fb_cow *c);
int changes_read_host(struct fb_cow *c, const char *path, char kind, struct fb_text *out);

/* ---- commit.c ---- */

struct fb_conflict {
    char *path;
    char *reason;
};

struct fb_commit {
    size_t applied;            /* changes applied */
    struct fb_conflict *conflicts;
    size_t nconflicts;
    char error[512];           /* set when applying stopped half way */
};

/* Apply the selected changes to the host workspace. Every change is checked
 * first; with a conflict (the host entry changed since the session started,
 * or a path that cannot be reached without crossing a symlink or a mount)
 * nothing is applied unless force. Each file is replaced atomically (a new
 * inode renamed over the old one). Returns 0 when everything selected was
 * applied, -1 otherwise (conflicts listed in res, or err set). */
int commit_apply(struct fb_cow *c, const struct fb_changes *ch, char *const *sel, size_t nsel,
                 bool force, const struct fb_cow_progress *prog, struct fb_commit *res,
                 struct fb_err *err);
void commit_free(struct fb_commit *res);
json_t *commit_json(const struct fb_commit *res);

/* Open a path below dirfd without ever following a symlink or leaving the
 * tree (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_XDEV).
 * "" or "." opens dirfd itself. */
int changes_open_beneath(int dirfd, const char *path, int flags, mode_t mode);

/* Split "a/b/c" into a parent ("a/b", or "") and a name ("c"); parent has
 * room for cap bytes. */
void changes_split_path(const char *path, char *parent, size_t cap, const char **name);

#endif
