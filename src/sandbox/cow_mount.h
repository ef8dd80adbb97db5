/* cow_mount.h — the overlay of a copy-on-write workspace, mounted by the
 * sandbox (cow_mount.c); the layer's state is cow.h's. */
#ifndef FB_COW_MOUNT_H
#define FB_COW_MOUNT_H

#include "cow.h"
#include "mount.h"

/* Supervisor, as root: the lower layer as a read-only idmapped tree (the
 * workspace owner's files appear as the sandbox's host id, so the sandbox
 * can copy them up), and the --cow-upper directory idmapped likewise.
 * Fills pre->workspace_fd and pre->cow_upper_fd where it can. */
int cow_premounts(const struct fb_policy *p, const struct fb_ids *ids, struct fb_premounts *pre,
                  struct fb_err *err);

/* Child, in its own user and mount namespace with private propagation and
 * its inside ids: mount a small staging tmpfs on `stage` (the new root is
 * mounted over it later and the old root detached, so nothing of it stays
 * visible), attach lower_tree and the upper storage (upper_tree, or a new
 * tmpfs of disk bytes, <= 0 unlimited; caller_upper: upper_tree is the
 * caller's --cow-upper, for the error that names it), and create the
 * overlay. Returns the detached overlay in *ovl_fd and, in fds[0..2], what
 * the supervisor keeps: the upper storage directory, the user namespace and
 * the mount namespace. */
int cow_mount_child(int64_t disk, bool caller_upper, int lower_tree, int upper_tree,
                    const char *stage, int *ovl_fd, int fds[3], struct fb_err *err);
/* The same with a new upper layer that starts as a copy of the directory
 * seed (a snapshot; -1: empty). */
int cow_mount_child_seeded(int64_t disk, bool caller_upper, int lower_tree, int upper_tree,
                           int seed, const char *stage, int *ovl_fd, int fds[3],
                           struct fb_err *err);

/* Child: can the directory (or detached tree) fd hold the user.* extended
 * attributes the overlay keeps its markers in? (tmpfs: from Linux 6.6.) */
bool cow_store_has_user_xattrs(int dirfd);

/* Discard every change: a fresh upper layer. In a live session (namespaces
 * known) a helper process joins the sandbox's namespaces and replaces the
 * overlay at /workspace; otherwise the upper directory is emptied. */
int cow_reset(struct fb_cow *c, struct fb_err *err);

/* A live session: replace the overlay at /workspace by one whose upper
 * layer is a copy of the directory seed (a snapshot, sess_snapshot.c), as
 * cow_reset does with an empty one. The conflict baseline stays (the
 * restored changes are still compared with the host as of the start). */
int cow_restore(struct fb_cow *c, int seed, struct fb_err *err);

#endif
