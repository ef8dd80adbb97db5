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

/* Phase 1, with fluebox's own ids, so that host permissions are checked
 * against them: open (clone) every bind source. As root in the supervisor
 * before the clone (the child then runs as the sandbox's host id and could
 * not reach what root can), rootless in the child before it changes ids.
 * Takes over the fds of pre (they are -1 afterwards). */
int mount_prepare(const struct fb_policy *p, struct fb_premounts *pre, struct fb_layout **out,
                  struct fb_err *err);

/* The descriptors a prepared layout holds, for the child to keep when it
 * closes what it inherited: up to cap of them into out; returns how many.
 * mount_layout_nfds() says how many there can be. NULL: none. */
size_t mount_layout_fds(const struct fb_layout *l, int *out, size_t cap);
size_t mount_layout_nfds(const struct fb_layout *l);

/* Phase 2, in the child with its inside ids and full capabilities in its
 * user namespace: build the new root on a tmpfs, pivot_root into it, detach
 * the old root and make the root read-only. Frees the layout. */
int mount_build(const struct fb_policy *p, struct fb_layout *l, struct fb_err *err);

/* Between the phases, in the child with its inside ids, before mount_cow:
 * make the scratch space (one tmpfs of --disk size with a bounded number of
 * inodes; see mount.c) and send the supervisor a descriptor of it
 * (FB_MSG_SCRATCH on ctl) to measure it. */
int mount_scratch(const struct fb_policy *p, struct fb_layout *l, int ctl, struct fb_err *err);

/* Between the phases, with --cow (cow.c): build the overlay whose lower
 * layer is the workspace opened in phase 1, send the supervisor its upper
 * layer (FB_MSG_COW on ctl), and make the overlay what phase 2 mounts at
 * /workspace. In the child with its inside ids, before mount_build. */
int mount_cow(const struct fb_policy *p, struct fb_layout *l, int ctl, struct fb_err *err);

void mount_layout_free(struct fb_layout *l);
/* The scratch tmpfs's root once mount_scratch made it (the layout's, not
 * the caller's to close), or -1. */
int mount_layout_scratch(const struct fb_layout *l);

/* The per-run CA (docs/secrets.md): fd a memfd of its PEM certificate
 * (the layout's from now), hash its subject hash. mount_build then covers
 * /etc/ssl/certs with a copy of the host's whose ca-certificates.crt
 * also holds the CA, and whose hashed entries name it (mount_ca.c). */
void mount_layout_set_ca(struct fb_layout *l, int fd, unsigned long hash);
/* In the new root being built (the current directory). */
int mount_ca_certs(int ca_fd, unsigned long hash, struct fb_err *err);

/* Pieces of the layout that fluebox oci (oci_mount.c) builds its own root
 * with. */

/* Resolve an absolute destination inside the root rootfd without ever
 * leaving it (openat2 RESOLVE_IN_ROOT), creating missing directories and,
 * when create_leaf says which kind (0 none, 1 directory, 2 file), the last
 * component. Returns an O_PATH fd, or -1 with err. */
int mount_open_in_root(int rootfd, const char *dst, int create_leaf, struct fb_err *err);

/* Harden a procfs mounted at proc (relative to the current directory):
 * /proc/sys, sysrq-trigger, irq, bus and fs read-only; kcore, keys,
 * timer_list, kallsyms ... covered (by the dev/null next to it for files;
 * for directories a read-only bind of empty_dir, an O_PATH descriptor of an
 * empty directory the caller removes afterwards, so that nothing can ever
 * be made in it, or with -1 an empty read-only tmpfs, one more superblock). */
int mount_proc_harden(const char *proc, int empty_dir, struct fb_err *err);

/* The device nodes every sandbox gets from the host (null, zero, ...). */
extern const char *const *const mount_dev_nodes;
extern const size_t mount_ndev_nodes;

#endif
