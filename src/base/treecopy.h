/* treecopy.h — copying and emptying directory trees that a sandbox wrote
 * (session.fork, session.snapshot / session.restore): everything is done
 * relative to directory descriptors, one component at a time, never
 * following a symlink (a symlink is data: it is copied as a symlink), never
 * leaving the source's filesystem, so a tree the sandbox controls cannot
 * lead the copy anywhere else, whoever runs it.
 *
 * What is copied: directories, regular files, symlinks, fifos and overlayfs
 * whiteouts (character devices 0/0); permission bits (set-id bits dropped,
 * the sticky bit kept), owners (shifted from one sandbox's host ids to
 * another's), modification times, and user.* extended attributes (the
 * user.overlay.* markers of a copy-on-write layer among them). Not copied:
 * other device nodes and sockets, hard links between files (each name gets
 * its own copy). */
#ifndef FB_TREECOPY_H
#define FB_TREECOPY_H

#include "fb.h"

#include <sys/types.h>

/* Host ids of one sandbox: inside id N is host id base + N for N < count
 * (count 0: no shift). */
struct tree_ids {
    uid_t uid_base;
    gid_t gid_base;
    uint32_t count;
};

struct tree_copy_opts {
    struct tree_ids from, to; /* owners are shifted from -> to; equal: kept */
    bool chown;               /* set owners at all (false: whoever copies owns) */
};

/* Copy what is inside src (a directory fd) into dst (an existing directory
 * fd): entries already in dst are replaced (a directory is merged). The
 * directory dst itself gets src's mode, owner and xattrs. 0, or -1 with err
 * naming the entry that failed (ENOSPC: the destination is full). */
int tree_copy(int src, int dst, const struct tree_copy_opts *o, struct fb_err *err);

/* Remove everything below dir (not dir itself), never following a symlink
 * and never descending into another filesystem. 0, or -1 with errno. */
int tree_empty(int dir);

/* Bytes and entries a tree holds (regular files' sizes), for reports. */
void tree_measure(int dir, int64_t *bytes, int64_t *entries);

#endif
