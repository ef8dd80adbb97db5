/* userns.h — the sandbox's user namespace: which host ids it maps, who
 * creates it, its per-namespace limits, and idmapped mounts. */
#ifndef FB_USERNS_H
#define FB_USERNS_H

#include "idrange.h"
#include "policy.h"

/* The host ids a sandbox maps to.
 *   root:     a range of 65,536 host ids claimed for this sandbox alone
 *             (idrange.h); inside id N is host id range_uid + N, and the
 *             namespace is created by a thread running as range_uid.
 *   rootless: the inside user (p->uid) is the caller's own uid, so the
 *             caller's files stay theirs; the other inside ids 0..65535
 *             map to the caller's subordinate ids (/etc/subuid) through
 *             newuidmap/newgidmap when both exist, else nothing else is
 *             mapped (count 1). */
struct fb_ids {
    bool root;              /* fluebox runs with euid 0 and has more ids
                               than its own to map (not `unshare -r`) */
    uid_t host_uid;         /* host id of the sandbox user (p->uid inside) */
    gid_t host_gid;
    uint32_t count;         /* inside ids mapped: FB_IDRANGE_SIZE or 1 */
    uid_t range_uid;        /* root: inside 0's host id; rootless, full: first subordinate uid */
    gid_t range_gid;
    struct fb_idrange claim; /* root: the claim on the range (lock_fd -1 otherwise) */
};

/* True when this sandbox has a claimed range of its own (root in the
 * initial user namespace): its namespace is then created as the range's
 * first id, and the supervisor prepares the mounts (the child, born as that
 * id, could not reach what root can). */
static inline bool userns_own_range(const struct fb_ids *ids)
{
    return ids->root && idrange_held(&ids->claim);
}

/* Which ids a sandbox started by this process gets, from its euid and the
 * ids its user namespace maps (not from being uid 0 alone):
 *   RANGE   root in the initial user namespace, or in one that maps slots
 *           of the pool (idrange.h): a range of 65,536 of its own;
 *   LEGACY  root of a user namespace that maps FB_IDRANGE_LEGACY_ID but no
 *           slot of the pool: that one id, shared by every sandbox;
 *   OWN     an ordinary user, or uid 0 of a user namespace that maps
 *           neither (`unshare -r`, a rootless container's root): rootless,
 *           the sandbox user is this process's own id. */
enum fb_idmode { FB_IDMODE_RANGE, FB_IDMODE_LEGACY, FB_IDMODE_OWN };
enum fb_idmode userns_idmode(void);

/* What id in the parent user namespace id of ours is (/proc/self/uid_map
 * or gid_map, by map_file "uid_map"/"gid_map"), or -1 when unmapped. In
 * the initial namespace: id itself. */
int64_t userns_outer_id(const char *map_file, uint32_t id);

/* Decide the host ids for p; as root, claim a range (p->host_id pins its
 * first id). Release with userns_release_ids once the sandbox is gone. */
int userns_host_ids(const struct fb_policy *p, struct fb_ids *ids, struct fb_err *err);
void userns_release_ids(struct fb_ids *ids);

/* One id, nothing claimed (root: p->host_id, or FB_IDRANGE_LEGACY_ID), for
 * a caller that writes its own maps (FB_MODE_EXT). */
void userns_plain_ids(const struct fb_policy *p, struct fb_ids *ids);

/* As root, around the clone that creates the sandbox's user namespace: the
 * calling thread (only it: raw system calls, not glibc's process-wide
 * wrappers) runs as ids->range_uid/range_gid with its capabilities kept, so
 * the namespace belongs to that id and the kernel charges the per-user
 * counters of everything inside to it. Rootless, or root with no range
 * claimed (idrange_claim returned 1): nothing. */
struct fb_creator {
    bool active;
    int dumpable;
};
int userns_creator_enter(const struct fb_ids *ids, struct fb_creator *c, struct fb_err *err);
void userns_creator_leave(struct fb_creator *c);

/* Write /proc/PID/{setgroups,uid_map,gid_map} for a freshly cloned child
 * (rootless with subordinate ids: through newuidmap and newgidmap; when
 * they fail, a warning and the single id). */
int userns_write_maps(pid_t pid, const struct fb_policy *p, struct fb_ids *ids,
                      struct fb_err *err);

/* In the child, with its capabilities in its new user namespace: set that
 * namespace's /proc/sys/user/max_* limits (no nested user namespaces, a
 * quarter of the host's per-user inotify limits). sysfd: a directory
 * fd of a procfs's sys/ (the sandbox's new /proc, still writable). */
int userns_set_limits(int sysfd, struct fb_err *err);

/* A user namespace with the given uid_map and gid_map text, as an fd for
 * MOUNT_ATTR_IDMAP (as root). -1 with err on failure. */
int userns_map_fd(const char *uid_map, const char *gid_map, struct fb_err *err);

/* As root: a detached clone of the directory src whose files owned by
 * (from_uid, from_gid) appear owned by ids->host_{uid,gid}, with nosuid,nodev
 * (and rdonly when ro). Returns the mount fd for move_mount(), or -1 with
 * errno EINVAL/EPERM when the filesystem cannot do idmapped mounts (err
 * says so). */
int userns_idmapped_tree(const char *src, uid_t from_uid, gid_t from_gid,
                         const struct fb_ids *ids, bool ro, struct fb_err *err);

/* The same in two steps, so that one idmapping serves every bind of one
 * owner: the user namespace that maps (from_uid, from_gid) to the sandbox
 * user's host ids, as an fd; then a detached, idmapped clone of src with it
 * (recursive: submounts too, all of which must support idmapping). */
int userns_idmap_ns(uid_t from_uid, gid_t from_gid, const struct fb_ids *ids, struct fb_err *err);
int userns_idmapped_tree_ns(const char *src, int ns, bool ro, bool recursive, struct fb_err *err);

#endif
