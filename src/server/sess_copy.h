/* sess_copy.h — what session.fork copies from a session into the new
 * sandbox being built for its fork (docs/protocol.md, session.fork): the
 * home, /tmp, and the workspace: the copy-on-write layer of a cow session,
 * or the whole /workspace of a session whose workspace is in its scratch
 * space. Running processes are not copied (the fork starts with none), nor
 * /dev/shm, published ports or snapshots.
 *
 * The copy is made into the new sandbox's scratch tmpfs before anything is
 * built on it (spawn.h, struct fb_seed), so the fork's overlay is mounted
 * over a layer that is complete, by a child process that has joined the
 * fork's cgroup (childjob.h): the fork's memory and --disk limits bound it.
 * The original is frozen (its cgroup's freezer) while it is copied, so the
 * copy is of one moment; where there is no freezer it keeps running and a
 * file being written then may be copied half-written. Files change owner
 * from the original's host ids to the fork's (as root each sandbox has a
 * range of its own). The copy is a real copy (tmpfs has no reflink): its
 * cost is the size of what the session wrote, not of the host workspace. */
#ifndef FB_SESSION_FORK_H
#define FB_SESSION_FORK_H

#include "spawn.h"

struct fb_fork;

/* On the server's thread, at the moment of the request: take what the copy
 * needs from the original (duplicates of its descriptors, its ids, its
 * cgroup for the freeze, which must stay valid until the spawn is done).
 * NULL with err when the original cannot be forked. */
struct fb_fork *fork_prepare(const struct fb_sandbox *orig, const struct fb_policy *p,
                             struct fb_err *err);
/* The seed of the fork's spawn (sandbox_spawn_seeded). */
void fork_seed(struct fb_fork *f, struct fb_seed *seed);
/* Milliseconds the copy took (with the freeze), after the spawn. */
int64_t fork_copy_ms(const struct fb_fork *f);
void fork_free(struct fb_fork *f);

#endif
