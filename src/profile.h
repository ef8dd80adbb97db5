/* profile.h — security profiles: the built-in ones compiled into the binary
 * (profiles/ *.json) and profile files, loaded with jansson into a policy.
 * Errors name the file and the JSON path of the bad field:
 *     my-agent.json: seccomp.rules[3].name: unknown syscall "opn"
 * The format is documented in docs/profiles.md. */
#ifndef FB_PROFILE_H
#define FB_PROFILE_H

#include "policy.h"

#include <jansson.h>

#define FB_DEFAULT_PROFILE "standard"

/* Apply a built-in profile by name, or a profile file by path (anything
 * containing '/' or ending in .json), following "extends": the extended
 * profile is applied first, then this one over it. */
int profile_load(struct fb_policy *p, const char *name_or_path, struct fb_err *err);

/* The same from text in memory (label names it in errors). "extends" may
 * name built-in profiles only. For tests and the fuzzer. */
int profile_load_text(struct fb_policy *p, const char *label, const char *text, size_t len,
                      struct fb_err *err);

/* Names of the built-in profiles, NULL-terminated. */
const char *const *profile_builtin_names(void);

/* The effective policy as JSON text in the profile format (malloc'ed), for
 * `profile show`; loading it again gives the same policy. */
char *profile_to_json(const struct fb_policy *p);

/* Rules as the profile format writes them (consecutive unconditional rules
 * with the same action and comment grouped under "names"). */
json_t *profile_rules_json(const struct fb_sc_rule *rules, size_t n);

/* Value of an errno name ("EPERM") or number; -1 if neither. */
int profile_errno_parse(const char *s);

#endif
