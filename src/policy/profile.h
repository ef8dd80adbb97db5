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
 * profile is applied first, then this one over it. p is as policy_init()
 * left it (a built-in's precompiled policy is copied over it, below). */
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

/* ---- the built-in profiles, precompiled ----
 *
 * Parsing a built-in profile's JSON costs more than the rest of fluebox's
 * own start-up (strict: 11 KB, ~0.4 ms). Its effective policy never changes
 * after the build, so scripts/profiles-precompile.c loads each built-in
 * from its JSON at build time and writes it as static data
 * (build/profiles-policy.c); profile_load() copies that into the policy.
 * The build (`fluebox profile check` in the Makefile) and the tests compare
 * profile_to_json() of both for every built-in. Builds without the data
 * (the sanitizer build, unit tests, fuzzers) parse the JSON; so does any
 * build when FLUEBOX_CHECK_BUILTINS is set. */

/* A built-in's precompiled policy (build/profiles-policy.c); its seccomp
 * rules are one read-only table that policies borrow (policy.h). */
struct fb_builtin_policy {
    const char *name;              /* NULL ends the table */
    const struct fb_policy *policy; /* the fields a profile sets (seccomp rules: below) */
    const struct fb_sc_rule *rules; /* borrowed by every policy loaded from it */
    size_t nrules;
};

/* Generated; absent (NULL) in builds without it. */
extern const struct fb_builtin_policy fb_builtin_policies[] __attribute__((weak));

/* Where profile_load() takes a built-in from. */
enum fb_builtin_src {
    FB_BUILTIN_ANY,         /* the precompiled policy when there is one */
    FB_BUILTIN_JSON,        /* the JSON, with every check */
    FB_BUILTIN_PRECOMPILED, /* the precompiled policy; an error without one */
};
int profile_load_from(struct fb_policy *p, const char *name_or_path, enum fb_builtin_src src,
                      struct fb_err *err);

/* Does the precompiled policy of built-in name equal the one loaded from
 * its JSON (profile_to_json() and the seccomp filter key)? 0 if so, 1 if
 * there is no precompiled policy of it, -1 (err says where they differ). */
int profile_builtin_verify(const char *name, struct fb_err *err);

#endif
