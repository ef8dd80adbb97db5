/* rmtree.h — removing a directory tree a bounded number of entries at a
 * time (rmtree.c), for a caller that must keep serving other work between
 * the steps (the session's init, sess_init.c). */
#ifndef FB_RMTREE_H
#define FB_RMTREE_H

#include <stdbool.h>
#include <sys/types.h>

struct rmtree;

/* Start removing the directory at path (relative to the working directory
 * when not absolute). Entries on a filesystem other than dev are not
 * crossed (EBUSY); symlinks are removed, never followed. NULL with *err set
 * when the directory cannot be opened. */
struct rmtree *rmtree_start(const char *path, dev_t dev, int *err);

/* Remove up to budget entries. True when the tree is done with (removed,
 * or what could be removed is). */
bool rmtree_step(struct rmtree *t, unsigned budget);

/* Close and free t, whether done or not (a cancelled removal leaves the
 * rest). Returns 0, or the first errno met on the way. */
int rmtree_free(struct rmtree *t);

#endif
