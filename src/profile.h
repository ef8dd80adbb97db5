/* profile.h — security profiles: the built-in ones compiled into the binary
 * (profiles/ *.json) and profile files, loaded with jansson into a policy.
 * Errors name the file and the JSON path of the bad field. */
#ifndef FB_PROFILE_H
#define FB_PROFILE_H

#include "policy.h"

#define FB_DEFAULT_PROFILE "standard"

/* Apply a built-in profile by name, or a profile file by path (anything
 * containing '/' or ending in .json), following "extends". */
int profile_load(struct fb_policy *p, const char *name_or_path, struct fb_err *err);

/* Names of the built-in profiles, NULL-terminated. */
const char *const *profile_builtin_names(void);

/* The effective policy as JSON text (malloc'ed), for `profile show`. */
char *profile_to_json(const struct fb_policy *p);

#endif
