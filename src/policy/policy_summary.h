/* policy_summary.h — a policy summarised as JSON for the flight record's
 * "start" event (policy_summary.c; the fields: docs/record.md). */
#ifndef FB_POLICY_SUMMARY_H
#define FB_POLICY_SUMMARY_H

#include "policy.h"

#include <jansson.h>

json_t *policy_summary_json(const struct fb_policy *p);

/* An argument as recorded: at most this many bytes of it. */
#define FB_RECORD_ARG_MAX 4096

#endif
