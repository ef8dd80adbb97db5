/* harden.h — the last steps before a sandboxed program runs: capabilities,
 * no_new_privs, rlimits, the clean environment and the exec itself. */
#ifndef FB_HARDEN_H
#define FB_HARDEN_H

#include "policy.h"

/* Drop every capability from every set (bounding, ambient, inheritable,
 * permitted, effective) and set no_new_privs. */
int harden_drop_caps(struct fb_err *err);

/* RLIMIT_NOFILE, RLIMIT_FSIZE, RLIMIT_CORE=0 and, when no pids cgroup could
 * be applied (nproc_fallback), RLIMIT_NPROC. */
int harden_rlimits(const struct fb_policy *p, bool nproc_fallback, struct fb_err *err);

/* In the sandbox's init, on itself: the rlimits that stand in for cgroup
 * limits (cgroup_fallback_limits; 0 = none). Only ever lowers a limit. */
int harden_fallback_rlimits(int64_t nproc, int64_t data, struct fb_err *err);

/* The environment the command gets (NULL-terminated, malloc'ed). */
char **harden_build_env(const struct fb_policy *p);
void harden_free_env(char **env);

/* execve the command: p->exec_path, or a search of argv[0] on the sandbox's
 * PATH from env. Returns only on failure, with errno set and
 * *exit_code = 126 or 127. */
void harden_exec(const struct fb_policy *p, char **argv, char **env, int *exit_code);

#endif
