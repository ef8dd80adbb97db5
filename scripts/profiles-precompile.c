/* profiles-precompile.c — build-time generator of build/profiles-policy.c:
 * the built-in profiles' effective policies as static data, so that
 * `fluebox run` with a built-in profile copies its policy instead of
 * parsing the profile's JSON on every start (profile.h). Each built-in is
 * loaded here from its JSON by the same code as at run time (profile.c),
 * and every field a profile can set is written out; the fluebox binary
 * then compares, in `fluebox profile check`, which the build runs, the
 * policy it copies with the one it loads from the JSON.
 *
 * A built-in whose policy depends on the machine that loads it is left out
 * (it is loaded from its JSON at run time): bind mounts, whose sources are
 * resolved with realpath(), and "extends" of a file.
 *
 * Usage: profiles-precompile > build/profiles-policy.c */
#include "profile.h"

#include <inttypes.h>
#include <string.h>

/* ---- strings: each distinct one written once, as s<N> ---- */

static char **strs;
static size_t nstrs;

static size_t intern(const char *s)
{
    for (size_t i = 0; i < nstrs; i++)
        if (!strcmp(strs[i], s))
            return i;
    strs = fb_xrealloc(strs, (nstrs + 1) * sizeof *strs);
    strs[nstrs] = fb_xstrdup(s);
    return nstrs++;
}

/* A C expression for s: NULL or (char *)s<N>. */
static const char *str_ref(const char *s, char *buf, size_t cap)
{
    if (!s)
        return "NULL";
    snprintf(buf, cap, "(char *)s%zu", intern(s));
    return buf;
}

static void put_literal(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\' || *c == '?')
            fprintf(f, "\\%c", *c);
        else if (*c < 0x20 || *c >= 0x7f)
            fprintf(f, "\\%03o", *c);
        else
            fputc(*c, f);
    }
    fputc('"', f);
}

/* ---- one profile ---- */

static bool machine_independent(const struct fb_policy *p, const char *name)
{
    for (size_t i = 0; i < p->nmounts; i++)
        if (p->mounts[i].kind == FB_MNT_RO_BIND || p->mounts[i].kind == FB_MNT_BIND) {
            fprintf(stderr, "profiles-precompile: %s has bind mounts, resolved where fluebox runs: "
                            "left to run time\n", name);
            return false;
        }
    if (p->profile_extends) {
        /* "a < b < c": every label a built-in's name. */
        char *chain = fb_xstrdup(p->profile_extends), *save = NULL;
        bool builtin_only = true;
        for (char *t = strtok_r(chain, " <", &save); t && builtin_only;
             t = strtok_r(NULL, " <", &save)) {
            builtin_only = false;
            for (const char *const *n = profile_builtin_names(); *n; n++)
                builtin_only |= !strcmp(*n, t);
        }
        free(chain);
        if (!builtin_only) {
            fprintf(stderr, "profiles-precompile: %s extends a file: left to run time\n", name);
            return false;
        }
    }
    return true;
}

static void emit(FILE *f, size_t k, const struct fb_policy *p)
{
    char b1[32], b2[32];
    /* Seccomp rules, as the policy holds them: a policy borrows this
     * read-only table (policy.h, rules_borrowed) instead of copying it. */
    fprintf(f, "\nstatic const struct fb_sc_rule rules%zu[] = {\n", k);
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        const struct fb_sc_rule *r = &p->seccomp.rules[i];
        fprintf(f, "    {%s, %d, %d, {", str_ref(r->name, b1, sizeof b1), (int)r->action, r->errno_val);
        for (unsigned a = 0; a < r->nargs; a++) {
            const struct fb_sc_arg *c = &r->args[a];
            fprintf(f, "%s{%u, %d, 0x%" PRIx64 "ull, 0x%" PRIx64 "ull}", a ? ", " : "", c->index,
                    (int)c->op, c->value, c->mask);
        }
        fprintf(f, "}, %u, %s},\n", r->nargs, str_ref(r->comment, b2, sizeof b2));
    }
    fprintf(f, "    {NULL, 0, 0, {{0, 0, 0, 0}}, 0, NULL},\n};\n");

    /* The lists. */
    fprintf(f, "static const struct fb_mount mounts%zu[] = {\n", k);
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        fprintf(f, "    {%d, %s, ", (int)m->kind, str_ref(m->src, b1, sizeof b1));
        fprintf(f, "%s, INT64_C(%" PRId64 "), %d},\n", str_ref(m->dst, b2, sizeof b2), m->size,
                m->optional);
    }
    fprintf(f, "    {0, NULL, NULL, 0, 0},\n};\nstatic char *const env_set%zu[] = {\n", k);
    for (size_t i = 0; i < p->nenv_set; i++)
        fprintf(f, "    %s,\n", str_ref(p->env_set[i], b1, sizeof b1));
    fprintf(f, "    NULL,\n};\nstatic char *const env_pass%zu[] = {\n", k);
    for (size_t i = 0; i < p->nenv_pass; i++)
        fprintf(f, "    %s,\n", str_ref(p->env_pass[i], b1, sizeof b1));
    fprintf(f, "    NULL,\n};\nstatic const struct fb_allow allow%zu[] = {\n", k);
    for (size_t i = 0; i < p->nallow; i++)
        fprintf(f, "    {%s, %d, %u},\n", str_ref(p->allow[i].name, b1, sizeof b1),
                p->allow[i].wildcard, p->allow[i].port);
    fprintf(f, "    {NULL, 0, 0},\n};\n");

    /* Every field of struct fb_policy a profile can set (profile.c's
     * apply_root and what it calls), as apply_precompiled() copies them. */
    const struct fb_limits *l = &p->limits;
    fprintf(f, "static const struct fb_policy policy%zu = {\n", k);
    fprintf(f, "    .profile_extends = %s,\n", str_ref(p->profile_extends, b1, sizeof b1));
    fprintf(f, "    .description = %s,\n", str_ref(p->description, b1, sizeof b1));
    fprintf(f, "    .mounts = (struct fb_mount *)mounts%zu,\n    .nmounts = %zu,\n", k, p->nmounts);
    fprintf(f, "    .workspace_ro = %d,\n    .bind_interpreter = %d,\n", p->workspace_ro,
            p->bind_interpreter);
    fprintf(f, "    .env_set = (char **)env_set%zu,\n    .nenv_set = %zu,\n", k, p->nenv_set);
    fprintf(f, "    .env_pass = (char **)env_pass%zu,\n    .nenv_pass = %zu,\n", k, p->nenv_pass);
    fprintf(f, "    .uid = %u,\n    .gid = %u,\n", (unsigned)p->uid, (unsigned)p->gid);
    fprintf(f, "    .hostname = %s,\n", str_ref(p->hostname, b1, sizeof b1));
    fprintf(f, "    .namespaces = 0x%x,\n", p->namespaces);
    fprintf(f, "    .isolation = %d,\n", (int)p->isolation);
    fprintf(f, "    .limits = {.mem = INT64_C(%" PRId64 "), .cpus = %a, .pids = INT64_C(%" PRId64 "),\n",
            l->mem, l->cpus, l->pids);
    fprintf(f, "               .disk = INT64_C(%" PRId64 "), .timeout_ms = INT64_C(%" PRId64 "),\n",
            l->disk, l->timeout_ms);
    fprintf(f, "               .nofile = INT64_C(%" PRId64 "), .fsize = INT64_C(%" PRId64 "), "
               ".require = %d},\n", l->nofile, l->fsize, l->require);
    fprintf(f, "    .net = %d,\n    .net_host_allowed = %d,\n", (int)p->net, p->net_host_allowed);
    fprintf(f, "    .allow = (struct fb_allow *)allow%zu,\n    .nallow = %zu,\n", k, p->nallow);
    fprintf(f, "    .seccomp = {.default_action = %d, .default_errno = %d},\n",
            (int)p->seccomp.default_action, p->seccomp.default_errno);
    fprintf(f, "};\n");
}

int main(void)
{
    /* The profiles go to a buffer first: their strings are written before them. */
    char *body = NULL, *table = NULL;
    size_t body_len = 0, table_len = 0;
    FILE *bf = open_memstream(&body, &body_len), *tf = open_memstream(&table, &table_len);
    if (!bf || !tf)
        return 1;
    size_t k = 0;
    for (const char *const *n = profile_builtin_names(); *n; n++) {
        struct fb_policy p;
        struct fb_err err = {0};
        policy_init(&p);
        if (profile_load_from(&p, *n, FB_BUILTIN_JSON, &err) < 0) {
            fprintf(stderr, "profiles-precompile: %s\n", err.msg);
            return 1;
        }
        if (machine_independent(&p, *n)) {
            fprintf(bf, "\n/* %s: %zu seccomp rules */", *n, p.seccomp.nrules);
            emit(bf, k, &p);
            fprintf(tf, "    {\"%s\", &policy%zu, rules%zu, %zu},\n", *n, k, k, p.seccomp.nrules);
            k++;
        }
        policy_free(&p);
    }
    fclose(bf);
    fclose(tf);

    printf("/* generated by scripts/profiles-precompile.c from profiles/ *.json; do not edit */\n"
           "#include \"profile.h\"\n\n#include <stdint.h>\n\n");
    for (size_t i = 0; i < nstrs; i++) {
        printf("static const char s%zu[] = ", i);
        put_literal(stdout, strs[i]);
        printf(";\n");
    }
    fputs(body, stdout);
    printf("\nconst struct fb_builtin_policy fb_builtin_policies[] = {\n%s"
           "    {NULL, NULL, NULL, 0},\n};\n", table);
    free(body);
    free(table);
    return 0;
}
