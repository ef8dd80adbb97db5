/* run_cow.h — `fluebox run --cow` after the command (run_cow.c). */
#ifndef FB_RUN_COW_H
#define FB_RUN_COW_H

#include "cow.h"

/* `fluebox run` after the command: compute the changes, write --changes,
 * commit with --commit when the command exited 0. Returns the exit code
 * fluebox should use (exit_code, or FB_EXIT_SETUP when a requested commit
 * did not happen or the changes could not be written). */
int cow_run_finish(const struct fb_policy *p, struct fb_cow *c, int exit_code, bool ran_ok);

#endif
