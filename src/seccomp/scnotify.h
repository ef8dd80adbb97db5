/* scnotify.h — the supervisor's side of seccomp user notifications.
 *
 * With --seccomp-log or in learn mode the sandbox's profile filter answers
 * what the profile denies with SECCOMP_RET_USER_NOTIF (with --seccomp-log,
 * what the fixed rules deny with EPERM too), and init hands the listener fd
 * to the supervisor (FB_MSG_SECCOMP_FD). For each notification the
 * supervisor records the syscall (name, argument class, count, first caller)
 * and answers:
 *   --seccomp-log  with the errno the filters give without the flag
 *                  (seccomp_notified_errno: the fixed rules', else the
 *                  profile's), so the program sees exactly what it would
 *                  have seen, and the run report lists every denial;
 *   learn          "continue" (SECCOMP_USER_NOTIF_FLAG_CONTINUE): the call
 *                  runs as if allowed, and learn.c turns the records into
 *                  profile rules.
 * Nothing here reads the caller's memory: only the syscall number and the
 * six argument registers, which are plain numbers. */
#ifndef FB_SCNOTIFY_H
#define FB_SCNOTIFY_H

#include "seccomp.h"

#include <jansson.h>

struct fb_scn;

/* Take ownership of the listener fd. Returns NULL (and closes fd) on error. */
struct fb_scn *scnotify_new(const struct fb_policy *p, int fd, struct fb_err *err);
int scnotify_fd(const struct fb_scn *n);
/* Answer every pending notification (call when the fd is readable). */
void scnotify_dispatch(struct fb_scn *n);
/* Copy what was recorded into out (if non-NULL) and free n (may be NULL:
 * then out->active is false). */
void scnotify_finish(struct fb_scn *n, struct fb_sc_report *out);

/* The "seccomp" object of the run report. */
json_t *scnotify_report_json(const struct fb_sc_report *r, bool learn);

#endif
