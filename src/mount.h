/* mount.h — the sandbox's filesystem: everything about what is mounted where
 * is decided in mount.c. */
#ifndef FB_MOUNT_H
#define FB_MOUNT_H

#include "policy.h"

/* Detached mount trees the supervisor prepared on the host side (idmapped
 * binds when running as root), indexed like p->mounts; -1 = none. */
struct fb_premounts {
    int workspace_fd;   /* idmapped (or cow) workspace, or -1 */
    int *bind_fds;      /* p->nmounts entries, or NULL */
    int cow_upper_fd;   /* idmapped --cow-upper directory, or -1 */
};

struct fb_layout; /* opaque: the sources opened in phase 1 */

/* Phase 1, in the child before it changes its ids: open (clone) every bind
 * source, while host permissions still apply to fluebox's own ids. */
int mount_prepare(const struct fb_policy *p, const struct fb_premounts *pre,
                  struct fb_layout **out, struct fb_err *err);

/* Phase 2, in the child with its inside ids and full capabilities in its
 * user namespace: build the new root on a tmpfs, pivot_root into it, detach
 * the old root and make the root read-only. Frees the layout. */
int mount_build(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err);

/* Between the phases, with --cow (cow.c): build the overlay whose lower
 * layer is the workspace opened in phase 1, send the supervisor its upper
 * layer (FB_MSG_COW on ctl), and make the overlay what phase 2 mounts at
 * /workspace. In the child with its inside ids, before mount_build. */
int mount_cow(const struct fb_policy *p, struct fb_layout *l, int ctl, struct fb_err *err);

void mount_layout_free(struct fb_layout *l);

#endif
