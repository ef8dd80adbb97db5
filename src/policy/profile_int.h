/* profile_int.h — what the files of the profile loader share: the state of
 * one profile being loaded (struct ld), the JSON walking helpers and value
 * parsers (profile_json.c), the sections (profile_sections.c,
 * profile_rules.c), the built-ins (profile_builtin.c) and the few helpers
 * loading, showing and `fluebox profile` have in common. Not for other
 * files: they use profile.h. */
#ifndef FB_PROFILE_INT_H
#define FB_PROFILE_INT_H

#include "profile.h"

/* At most this many values in one condition's list. */
#define MAX_VALUES 256

/* One profile being loaded. */
struct ld {
    const char *label;   /* how errors name this profile: the path or built-in name */
    char *dir;           /* the file's directory (relative paths), NULL for built-ins */
    struct fb_err *err;
    bool files_ok;       /* may "extends" name files */
    char **chain;        /* identities of the profiles being loaded (cycles) */
    char **labels;       /* their labels, for the cycle message */
    size_t nchain;
    bool builtin;        /* one of the compiled-in profiles (checked at build time) */
    enum fb_builtin_src src; /* where built-ins come from */
};

/* ---- profile_json.c ---- */

/* An error naming l's profile and the JSON path (NULL or "": none). */
__attribute__((format(printf, 3, 4))) int perr(struct ld *l, const char *path,
                                                 const char *fmt, ...);
/* "an object", "a string", ... */
const char *jtype(const json_t *j);
/* "path.key" and "path[i]", cut at cap. */
void key_path(char *out, size_t cap, const char *path, const char *key);
void idx_path(char *out, size_t cap, const char *path, size_t i);
/* j must be of type t (JSON_TRUE: a boolean); what names it in the error. */
int want_type(struct ld *l, const char *path, const json_t *j, json_type t, const char *what);
int check_keys(struct ld *l, const char *path, json_t *obj, const char *const *keys);
int get_comment(struct ld *l, const char *path, json_t *obj, char **out);
int parse_action(const char *s, enum fb_sc_action *a, int *e, bool *has_errno);
int get_size(struct ld *l, const char *path, json_t *j, int64_t *out);
int get_count(struct ld *l, const char *path, json_t *j, int64_t min, int64_t *out);
int get_value(struct ld *l, const char *path, json_t *j, uint64_t *out);
char *inside_path(struct ld *l, const char *path, const char *s);

/* ---- the sections: profile_sections.c, profile_rules.c ---- */

int apply_filesystem(struct ld *l, struct fb_policy *p, json_t *fs);
int apply_environment(struct ld *l, struct fb_policy *p, json_t *env);
int apply_limits(struct ld *l, struct fb_policy *p, json_t *lim);
int apply_network(struct ld *l, struct fb_policy *p, json_t *net);
int apply_namespaces(struct ld *l, struct fb_policy *p, json_t *ns);
int apply_seccomp(struct ld *l, struct fb_policy *p, json_t *sc);

/* ---- profile_builtin.c ---- */

/* The JSON of built-in name, NULL if there is none. */
const char *builtin_json(const char *name);
/* Its precompiled policy, NULL if the build has none. */
const struct fb_builtin_policy *builtin_policy(const char *name);
void apply_precompiled(struct fb_policy *p, const struct fb_builtin_policy *b);

/* ---- profile.c, profile_show.c ---- */

/* Does ref name a file (a '/' or .json) rather than a built-in? */
bool is_file_ref(const char *ref);
/* "allow", "errno(EPERM)", ... (malloc'ed). */
char *action_str(enum fb_sc_action a, int e);

#endif
