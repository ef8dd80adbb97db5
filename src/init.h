/* init.h — the sandbox's pid 1. */
#ifndef FB_INIT_H
#define FB_INIT_H

#include "policy.h"
#include "spawn.h"

/* Runs as pid 1 of the sandbox once the filesystem is built: new session,
 * rlimits, drops every capability, no_new_privs, loads seccomp, tells the
 * supervisor READY, then
 *   FB_MODE_RUN:     forks and execs p->argv, forwards signals to it, reaps
 *                    orphans, reports the command's wait status (FB_MSG_EXIT)
 *                    and exits, which kills whatever is left in the sandbox;
 *   FB_MODE_SESSION: hands over to sinit_main() (sinit.c).
 * Never returns. */
__attribute__((noreturn)) void init_main(const struct fb_policy *p, enum fb_mode mode, int ctl,
                                         bool nproc_fallback);

/* Session-mode pid 1 loop, provided by sinit.c. */
__attribute__((noreturn)) void sinit_main(const struct fb_policy *p, int ctl);

/* Used by init and by session execs: in a freshly forked child, reset signal
 * state, make a process group, chdir, close inherited fds (close-on-exec)
 * and exec argv with env. On failure prints "fluebox: CMD: reason" on
 * stderr, sends FB_MSG_EXEC_ERR on report_fd (if >= 0) and _exits 126/127. */
__attribute__((noreturn)) void init_exec_child(const struct fb_policy *p, char **argv,
                                               char **env, const char *cwd, int report_fd);

#endif
