/* run_record.h — what `fluebox run --record FILE` puts in the flight record
 * (record.h writes it): the start with a summary of the policy, the command,
 * the limits that ended it, what seccomp denied, the copy-on-write changes
 * and how it ended. Each function is one event (or a few, for the result);
 * a NULL record is valid and records nothing. Field by field: docs/record.md. */
#ifndef FB_RUN_RECORD_H
#define FB_RUN_RECORD_H

#include "cow.h"
#include "record.h"
#include "report.h"

/* Open p->record (NULL when not asked for: returns 0) and write "start". */
int run_record_open(const struct fb_policy *p, struct fb_record **out, struct fb_err *err);
/* "exec": the command, once the sandbox runs it. */
void run_record_exec(struct fb_record *r, const struct fb_policy *p);
/* "limit": a limit fluebox enforced as it was hit (timeout, disk). */
void run_record_limit(struct fb_record *r, const char *limit, const char *detail);
/* After the sandbox ended: "limit" for OOM and pids hits, "seccomp" for what
 * was denied, "exit" for how the command ended and what it used. */
void run_record_result(struct fb_record *r, const struct fb_policy *p, const struct fb_result *res);
/* --cow: "changes", the change list of the upper layer (before a commit). */
void run_record_changes(struct fb_record *r, struct fb_cow *c);
/* "end" (signed), with fluebox's exit code; closes. -1 when the record is
 * incomplete (a write failed): the run then fails as a missing report does. */
int run_record_close(struct fb_record *r, int exit_code, struct fb_err *err);

#endif
