/* supervise.h — running one command in a sandbox to completion (`run`). */
#ifndef FB_SUPERVISE_H
#define FB_SUPERVISE_H

#include "policy.h"
#include "report.h"

/* After fluebox forwards SIGTERM, SIGINT or SIGHUP, the sandbox has this long
 * to end; then it is killed (a process tree that stopped itself with
 * SIGSTOP never sees the signal). A second such signal kills it at once. */
#define FB_SIGNAL_GRACE_MS 2000

/* Spawn, wait, account. res is always filled (res->exit_code is what fluebox
 * should exit with). Returns -1 when the sandbox could not be set up. */
int supervise_run(const struct fb_policy *p, struct fb_result *res, struct fb_err *err);

#endif
