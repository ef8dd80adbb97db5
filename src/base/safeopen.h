/* safeopen.h — opening a path without following /proc "magic" links
 * (/proc/PID/fd/N, cwd, root, exe, map_files/, ns/): what
 * openat2(RESOLVE_NO_MAGICLINKS) does, for a process whose seccomp filter
 * answers openat2 with ENOSYS (every process in a sandbox: the fixed filter,
 * seccomp_fixed.c). The session init's file operations use it (sess_init.c).
 *
 * The path is walked one component at a time from descriptors (O_PATH,
 * O_NOFOLLOW), so nothing swapped in behind it changes the walk; a symlink
 * is read through its own descriptor and its target walked in turn (at most
 * 40, then ELOOP). A symlink that lives on procfs and whose target is not a
 * relative path is a magic link (the kernel's readlink of those gives an
 * absolute path or "type:[inode]"; procfs's plain links, "self",
 * "thread-self", "mounts", "net", give relative ones): ELOOP. */
#ifndef FB_SAFEOPEN_H
#define FB_SAFEOPEN_H

#include "fb.h"

/* openat(AT_FDCWD, path, flags, mode) without magic links. With O_PATH in
 * flags and follow_last false, the last component is not followed (for
 * lstat). Returns the fd, or -1 with errno (ELOOP for a magic link). */
int safe_open(const char *path, int flags, mode_t mode, bool follow_last);

#endif
