/* profile_builtin.c — the built-in profiles (profile.h): their JSON,
 * embedded from profiles/ *.json, and their precompiled effective policies
 * (build/profiles-policy.c, when the build has them), copied into a policy
 * instead of parsing the JSON; and the check that both give the same
 * policy (`fluebox profile check`, run by the build on every built-in). */
#include "profile_int.h"

#include "seccomp.h"

#include <string.h>

/* Generated from profiles/ *.json by scripts/embed-profiles.sh. */
struct fb_builtin_profile {
    const char *name;
    const char *json;
};
extern const struct fb_builtin_profile fb_builtin_profiles[];

const char *const *profile_builtin_names(void)
{
    static const char *names[16];
    size_t n = 0;
    for (const struct fb_builtin_profile *b = fb_builtin_profiles; b->name && n < 15; b++)
        names[n++] = b->name;
    names[n] = NULL;
    return names;
}

const char *builtin_json(const char *name)
{
    for (const struct fb_builtin_profile *b = fb_builtin_profiles; b->name; b++)
        if (!strcmp(b->name, name))
            return b->json;
    return NULL;
}

const struct fb_builtin_policy *builtin_policy(const char *name)
{
    if (!fb_builtin_policies)
        return NULL;
    for (const struct fb_builtin_policy *b = fb_builtin_policies; b->name; b++)
        if (!strcmp(b->name, name))
            return b;
    return NULL;
}

/* ---- the precompiled built-ins ---- */

/* Copy built-in b's precompiled policy into p, which leaves p as loading
 * b's JSON over a policy fresh from policy_init() does (lists append and
 * the rules replace, as for JSON, but p has none yet). Every field a profile
 * can set is copied; profile_builtin_verify() compares the result with the
 * JSON's, through profile_to_json(), which prints every such field. */
void apply_precompiled(struct fb_policy *p, const struct fb_builtin_policy *b)
{
    const struct fb_policy *s = b->policy;
    free(p->profile_extends);
    p->profile_extends = fb_xstrdup(s->profile_extends);
    free(p->description);
    p->description = fb_xstrdup(s->description);
    for (size_t i = 0; i < s->nmounts; i++) {
        const struct fb_mount *m = &s->mounts[i];
        policy_add_mount(p, m->kind, m->src, m->dst, m->size);
        p->mounts[p->nmounts - 1].optional = m->optional;
    }
    p->workspace_ro = s->workspace_ro;
    p->bind_interpreter = s->bind_interpreter;
    for (size_t i = 0; i < s->nenv_set; i++)
        policy_add_env_set(p, s->env_set[i]);
    for (size_t i = 0; i < s->nenv_pass; i++)
        policy_add_env_pass(p, s->env_pass[i]);
    p->uid = s->uid;
    p->gid = s->gid;
    free(p->hostname);
    p->hostname = fb_xstrdup(s->hostname);
    p->namespaces = s->namespaces;
    p->isolation = s->isolation;
    p->limits = s->limits;
    p->net = s->net;
    p->net_host_allowed = s->net_host_allowed;
    if (s->nallow) {
        p->allow = fb_xrealloc(p->allow, (p->nallow + s->nallow) * sizeof *p->allow);
        for (size_t i = 0; i < s->nallow; i++) {
            p->allow[p->nallow] = s->allow[i];
            p->allow[p->nallow++].name = fb_xstrdup(s->allow[i].name);
        }
    }
    p->seccomp.default_action = s->seccomp.default_action;
    p->seccomp.default_errno = s->seccomp.default_errno;
    /* The rules are not copied: ~160 rules with their names and comments
     * were 40-50 KiB of heap in every session a server keeps. */
    policy_clear_rules(p);
    p->seccomp.rules = (struct fb_sc_rule *)b->rules;
    p->seccomp.nrules = b->nrules;
    p->seccomp.rules_borrowed = true;
}

/* The first line where texts a and b differ, in out (cut, one line). */
static size_t first_diff(const char *a, const char *b, char *out, size_t cap)
{
    size_t line = 1;
    const char *la = a, *lb = b;
    while (*a && *a == *b) {
        if (*a == '\n') {
            line++;
            la = a + 1;
            lb = b + 1;
        }
        a++;
        b++;
    }
    snprintf(out, cap, "%.*s | %.*s", (int)strcspn(la, "\n"), la, (int)strcspn(lb, "\n"), lb);
    return line;
}

int profile_builtin_verify(const char *name, struct fb_err *err)
{
    if (is_file_ref(name) || !builtin_json(name))
        return fb_errf(err, FB_EXIT_SETUP, "%s: not a built-in profile", name);
    if (!builtin_policy(name))
        return 1;
    struct fb_policy js, pre;
    policy_init(&js);
    policy_init(&pre);
    int rc = -1;
    if (profile_load_from(&js, name, FB_BUILTIN_JSON, err) < 0 ||
        profile_load_from(&pre, name, FB_BUILTIN_PRECOMPILED, err) < 0)
        goto out;
    char *a = profile_to_json(&js), *b = profile_to_json(&pre);
    if (strcmp(a, b)) {
        char where[300];
        size_t line = first_diff(a, b, where, sizeof where);
        fb_errf(err, FB_EXIT_SETUP,
                "%s: the precompiled policy differs from its JSON's (profile show, line %zu, "
                "JSON | precompiled: %s); rebuild fluebox",
                name, line, where);
    } else if (seccomp_policy_key(&js) != seccomp_policy_key(&pre)) {
        fb_errf(err, FB_EXIT_SETUP,
                "%s: the precompiled seccomp rules differ from its JSON's; rebuild fluebox", name);
    } else {
        rc = 0;
    }
    free(a);
    free(b);
out:
    policy_free(&js);
    policy_free(&pre);
    return rc;
}
