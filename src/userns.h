/* userns.h — user namespace id maps and idmapped mounts. */
#ifndef FB_USERNS_H
#define FB_USERNS_H

#include "policy.h"

/* The host ids the sandbox's inside ids map to: the caller's own when
 * rootless, p->host_id when fluebox runs as root (never 0). */
struct fb_ids {
    bool root;       /* fluebox runs with euid 0 */
    uid_t host_uid;
    gid_t host_gid;
};
void userns_host_ids(const struct fb_policy *p, struct fb_ids *ids);

/* Write /proc/PID/{setgroups,uid_map,gid_map} for a freshly cloned child:
 * one line each, inside id -> host id. */
int userns_write_maps(pid_t pid, const struct fb_policy *p, const struct fb_ids *ids,
                      struct fb_err *err);

/* As root: a detached clone of the directory src whose files owned by
 * (from_uid, from_gid) appear owned by ids->host_{uid,gid}, with nosuid,nodev
 * (and rdonly when ro). Returns the mount fd for move_mount(), or -1 with
 * errno EINVAL/EPERM when the filesystem cannot do idmapped mounts (err
 * says so). */
/* A user namespace with the given uid_map and gid_map text, as an fd for
 * MOUNT_ATTR_IDMAP (as root). -1 with err on failure. */
int userns_map_fd(const char *uid_map, const char *gid_map, struct fb_err *err);

int userns_idmapped_tree(const char *src, uid_t from_uid, gid_t from_gid,
                         const struct fb_ids *ids, bool ro, struct fb_err *err);

#endif
