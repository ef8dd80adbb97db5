/* idrange.h — host id ranges for sandboxes started as root.
 *
 * Every sandbox fluebox starts as root maps its inside ids 0..65535 to a
 * range of 65,536 host ids that no other live sandbox uses, and its user
 * namespace is created by a thread running as the first id of that range
 * (userns.c). The kernel's per-user counters — inotify instances and
 * watches, file descriptors in flight over unix sockets, pipe buffer pages,
 * epoll watches, processes — are then charged to ids of that sandbox alone,
 * so one sandbox cannot use up another's, or host root's.
 *
 * The claim is an OFD lock (fcntl F_OFD_SETLK) on the bytes [base,
 * base+count) of one lock file, /run/fluebox/idranges.lock: byte offsets are
 * host ids, so the kernel itself refuses two claims that overlap, whoever
 * made them (another `fluebox run`, a server, a pinned --host-id), and
 * atomically. The lock belongs to the open file description behind
 * lock_fd: it goes away when the last descriptor of it is closed, which
 * includes the death of the process holding it — a SIGKILLed fluebox leaves
 * nothing to clean up, and /run is empty after a reboot anyway.
 *
 * Free ranges come from a pool of 4,094 slots of 65,536 ids from
 * 0x70000000 (1879048192) up to 0x7ffe0000: ids no distribution hands out
 * (systemd reserves nothing there; nspawn's container ranges end below it;
 * /etc/subuid ranges start at 100000 and are skipped anyway), below 2^31
 * where tools that treat uids as signed still work. Slots that overlap a
 * range of /etc/subuid or /etc/subgid or hold an id of /etc/passwd or
 * /etc/group, or ids that fluebox's own user namespace does not map, are
 * never handed out; a pinned range (--host-id) is refused on the same
 * grounds.
 *
 * Holding a range for longer than one process (a detached container
 * supervisor): keep lock_fd open in the process that must hold the claim,
 * or pass it on (fork inherits it; clear FD_CLOEXEC to keep it across
 * exec; SCM_RIGHTS passes it): the claim lasts until every copy of the
 * descriptor is closed. Never give it to a sandboxed process. */
#ifndef FB_IDRANGE_H
#define FB_IDRANGE_H

#include "fb.h"

#define FB_IDRANGE_SIZE 65536u
#define FB_IDRANGE_POOL_BASE 0x70000000u
#define FB_IDRANGE_POOL_SLOTS 4094u
#define FB_IDRANGE_LEGACY_ID 100000u /* see idrange_claim's return 1 */
#define FB_IDRANGE_LOCK_DIR "/run/fluebox"
#define FB_IDRANGE_LOCK_FILE FB_IDRANGE_LOCK_DIR "/idranges.lock"

struct fb_idrange {
    uint32_t base;  /* first host id of the range */
    uint32_t count; /* ids in it */
    int lock_fd;    /* holds the claim; -1 = nothing claimed; FB_IDRANGE_SHARED */
};

/* A range with nothing claimed (lock_fd -1). */
void idrange_init(struct fb_idrange *r);

/* Claim a range of count ids: any free pool slot (base 0, count
 * FB_IDRANGE_SIZE), or exactly [base, base+count) (--host-id). Needs root
 * (the lock file lives in /run/fluebox). Returns 0 when claimed; 1 when
 * fluebox runs in a user namespace that maps no slot of the pool (root of a
 * rootless container, `unshare -r`: nothing claimed, /run/fluebox not even
 * looked at); -1 with a one-line message when the pinned range, or every
 * slot, is in use, or the pinned range holds an id of /etc/passwd or
 * /etc/group or overlaps /etc/subuid or /etc/subgid (as the pool's slots
 * never do). */
int idrange_claim(uint32_t base, uint32_t count, struct fb_idrange *r, struct fb_err *err);

/* Is this process in the initial user namespace (/proc/self/ns/user)? */
bool idrange_initial_userns(void);

/* Are host ids [base, base+count) mapped in fluebox's own user namespace
 * (both /proc/self/uid_map and gid_map; every id in the initial one)? */
bool idrange_mapped(uint32_t base, uint32_t count);

/* How many of the pool's slots could be claimed here (mapped in our own
 * user namespace, clear of /etc/subuid and /etc/subgid), busy or not. */
size_t idrange_pool_usable(void);

/* Does [base, base+count) lie inside the pool (count 0: FB_IDRANGE_SIZE)? */
bool idrange_in_pool(uint32_t base, uint32_t count);

/* Give the claim up (closes lock_fd). NULL or unclaimed: nothing. */
void idrange_release(struct fb_idrange *r);

/* From now on, pool slots claimed by this process are locked through one
 * open file description shared by all its claims (lock_fd is then
 * FB_IDRANGE_SHARED; release unlocks the range): a server with thousands of
 * sandboxes holds one descriptor for them, not one each. The claims still
 * end with the process. Pinned ranges (--host-id) keep a descriptor each. */
void idrange_share(void);
#define FB_IDRANGE_SHARED (-2)

/* Does r hold a claim (its own descriptor, or the shared one)? */
static inline bool idrange_held(const struct fb_idrange *r)
{
    return r->lock_fd >= 0 || r->lock_fd == FB_IDRANGE_SHARED;
}

#endif
