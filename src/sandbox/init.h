/* init.h — the sandbox's pid 1. */
#ifndef FB_INIT_H
#define FB_INIT_H

#include "policy.h"
#include "spawn.h"

#include <signal.h>

/* Runs as pid 1 of the sandbox once the filesystem is built: new session,
 * rlimits, drops every capability, no_new_privs, loads seccomp, tells the
 * supervisor READY, then
 *   FB_MODE_RUN:     forks and execs p->argv, forwards signals to it, reaps
 *                    orphans, reports the command's wait status (FB_MSG_EXIT)
 *                    and exits, which kills whatever is left in the sandbox;
 *   FB_MODE_SESSION: hands over to the session's loop (h->main, the
 *                    server's sess_init.c, given to sandbox_spawn_session),
 *                    in a fresh image of fluebox when h->image_fd says so
 *                    (spawn.h), seccomp then loaded by that image.
 * Never returns. */
__attribute__((noreturn)) void init_main(const struct fb_policy *p, enum fb_mode mode, int ctl,
                                         bool nproc_fallback, const struct fb_session_hooks *h);

/* Sent by the supervisor to init when the run must end (--timeout): init
 * kills every other process of the sandbox, reaps them, reports the
 * command's status and exits. Reaping them here, rather than leaving it to
 * the kernel when init dies, is what counts their CPU time in the report
 * (the kernel's pid-namespace teardown reaps without accounting). The
 * supervisor SIGKILLs init if it has not exited shortly after. */
#define FB_SIG_KILLALL (SIGRTMIN + 2)

/* Used by init and by session execs: in a freshly forked child, reset signal
 * state, make a process group, chdir, close inherited fds (close-on-exec)
 * and exec argv with env. On failure prints "fluebox: CMD: reason" on
 * stderr, sends FB_MSG_EXEC_ERR on report_fd (if >= 0) and _exits 126/127. */
__attribute__((noreturn)) void init_exec_child(const struct fb_policy *p, char **argv,
                                               char **env, const char *cwd, int report_fd);

#endif
