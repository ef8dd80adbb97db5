/* seccomp.h — turns policy->seccomp into a BPF filter with libseccomp and
 * loads it. Always kills non-native ABIs, answers clone3 with ENOSYS (so libc
 * falls back to clone, whose flags the filter can see) and denies clone with
 * namespace flags. Loaded last, just before execve. */
#ifndef FB_SECCOMP_H
#define FB_SECCOMP_H

#include "policy.h"

/* Build and load the filter into the calling thread. */
int seccomp_apply(const struct fb_policy *p, struct fb_err *err);

/* Check that every rule names a known syscall etc. (used by profile check). */
int seccomp_validate(const struct fb_policy *p, struct fb_err *err);

#endif
