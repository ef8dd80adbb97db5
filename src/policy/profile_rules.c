/* profile_rules.c — a profile's "seccomp" section (profile_int.h): the
 * default action and the rules, each with its argument conditions, parsed
 * into fb_sc_rules (a rule with "names" or a list of values makes several),
 * checked per file with seccomp_check_rules() so that errors name the rule,
 * and put in place of every inherited rule for the same syscalls. */
#include "profile_int.h"

#include "seccomp.h"

#include <string.h>

/* One value of a condition, checked against the argument's width and the
 * mask; a negative 32-bit value may be written sign-extended (-1). */
static int cond_value(struct ld *l, const char *vp, json_t *jv, const char *syscall,
                      struct fb_sc_arg *a, bool is32, uint64_t *out)
{
    if (get_value(l, vp, jv, out) < 0)
        return -1;
    if (is32 && (*out >> 32) == 0xffffffffu && (*out & 0x80000000u))
        *out &= 0xffffffffu;
    if (is32 && (*out >> 32))
        return perr(l, vp, "0x%llx does not fit argument %u of %s, which is 32 bits",
                    (unsigned long long)*out, a->index, syscall);
    if (a->op == FB_SC_MASKED_EQ && (*out & ~a->mask))
        return perr(l, vp, "value has bits outside mask: the condition could never hold");
    uint64_t max = is32 ? 0xffffffffu : ~(uint64_t)0;
    if ((a->op == FB_SC_LT && *out == 0) || (a->op == FB_SC_GT && *out == max))
        return perr(l, vp, "the condition could never hold");
    return 0;
}

/* One argument condition: {"index", "op", "value", "mask"}. "value" may be a
 * list (eq and masked_eq only): the condition holds for any of them, and the
 * rule becomes one rule per value. The values go to *vals (malloc'ed). */
static int parse_cond(struct ld *l, const char *path, json_t *j, const char *syscall,
                      struct fb_sc_arg *a, uint64_t **vals, size_t *nvals)
{
    static const char *const keys[] = {"index", "op", "value", "mask", "comment", NULL};
    *vals = NULL;
    *nvals = 0;
    if (want_type(l, path, j, JSON_OBJECT, "an object {\"index\", \"op\", \"value\"}") < 0 ||
        check_keys(l, path, j, keys) < 0 || get_comment(l, path, j, NULL) < 0)
        return -1;
    char sp[256];
    json_t *ji = json_object_get(j, "index"), *jo = json_object_get(j, "op"),
           *jv = json_object_get(j, "value"), *jm = json_object_get(j, "mask");
    key_path(sp, sizeof sp, path, "index");
    if (!ji)
        return perr(l, sp, "missing");
    if (!json_is_integer(ji) || json_integer_value(ji) < 0 || json_integer_value(ji) > 5)
        return perr(l, sp, "expected an argument index from 0 to 5");
    a->index = (unsigned)json_integer_value(ji);
    static const struct {
        const char *name;
        enum fb_sc_op op;
    } ops[] = {{"eq", FB_SC_EQ}, {"ne", FB_SC_NE}, {"lt", FB_SC_LT}, {"le", FB_SC_LE},
               {"gt", FB_SC_GT}, {"ge", FB_SC_GE}, {"masked_eq", FB_SC_MASKED_EQ}};
    key_path(sp, sizeof sp, path, "op");
    a->op = FB_SC_EQ;
    if (jo) {
        size_t i;
        for (i = 0; i < FB_ARRAY_LEN(ops); i++)
            if (json_is_string(jo) && !strcmp(json_string_value(jo), ops[i].name))
                break;
        if (i == FB_ARRAY_LEN(ops))
            return perr(l, sp, "expected one of eq, ne, lt, le, gt, ge, masked_eq");
        a->op = ops[i].op;
    }
    bool is32 = seccomp_arg_is32(syscall, a->index);
    a->mask = 0;
    key_path(sp, sizeof sp, path, "mask");
    if (a->op == FB_SC_MASKED_EQ) {
        if (!jm)
            return perr(l, sp, "missing (\"masked_eq\" compares (argument & mask) with value)");
        if (get_value(l, sp, jm, &a->mask) < 0)
            return -1;
        if (is32 && (a->mask >> 32) == 0xffffffffu && (a->mask & 0x80000000u))
            a->mask &= 0xffffffffu;
        if (is32 && (a->mask >> 32))
            return perr(l, sp, "does not fit argument %u of %s, which is 32 bits", a->index, syscall);
    } else if (jm) {
        return perr(l, sp, "only \"masked_eq\" takes a mask");
    }
    key_path(sp, sizeof sp, path, "value");
    if (!jv)
        return perr(l, sp, "missing");
    if (!json_is_array(jv)) {
        *vals = fb_xmalloc(sizeof **vals);
        if (cond_value(l, sp, jv, syscall, a, is32, *vals) < 0) {
            free(*vals);
            *vals = NULL;
            return -1;
        }
        *nvals = 1;
        a->value = **vals;
        return 0;
    }
    if (a->op != FB_SC_EQ && a->op != FB_SC_MASKED_EQ)
        return perr(l, sp, "a list of values needs \"eq\" or \"masked_eq\"");
    size_t n = json_array_size(jv);
    if (n == 0 || n > MAX_VALUES)
        return perr(l, sp, "expected from 1 to %d values", MAX_VALUES);
    *vals = fb_xcalloc(n, sizeof **vals);
    for (size_t i = 0; i < n; i++) {
        char vp[256];
        idx_path(vp, sizeof vp, sp, i);
        if (cond_value(l, vp, json_array_get(jv, i), syscall, a, is32, &(*vals)[i]) < 0) {
            free(*vals);
            *vals = NULL;
            return -1;
        }
    }
    *nvals = n;
    a->value = (*vals)[0];
    return 0;
}

static void rules_free(struct fb_sc_rule *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].name);
        free(r[i].comment);
    }
    free(r);
}

/* Rules parsed from one file, each with the index of the JSON rule it
 * came from (a rule with "names" or a list of values makes several). */
struct rule_list {
    struct fb_sc_rule *r;
    size_t *src;
    size_t n;
};

static void rule_list_add(struct rule_list *rl, const struct fb_sc_rule *r, size_t src)
{
    rl->r = fb_xrealloc(rl->r, (rl->n + 1) * sizeof *rl->r);
    rl->src = fb_xrealloc(rl->src, (rl->n + 1) * sizeof *rl->src);
    rl->r[rl->n] = *r;
    rl->src[rl->n] = src;
    rl->n++;
}

/* The conditions ("args") of a rule for syscall name into rr; the one
 * condition with a list of values gives *listp (malloc'ed: the rule becomes
 * one rule per value), *nlistp values and its index *klistp. */
static int parse_args(struct ld *l, const char *path, json_t *jargs, const char *name,
                      struct fb_sc_rule *rr, uint64_t **listp, size_t *nlistp, size_t *klistp)
{
    uint64_t *list = NULL;
    size_t nlist = 1, klist = 0;
    int rc = 0;
    size_t k;
    json_t *c;
    json_array_foreach(jargs, k, c) {
        char ap[256], cp[256];
        key_path(ap, sizeof ap, path, "args");
        idx_path(cp, sizeof cp, ap, k);
        uint64_t *vals;
        size_t nv;
        if (parse_cond(l, cp, c, name, &rr->args[k], &vals, &nv) < 0) {
            rc = -1;
            break;
        }
        for (size_t m = 0; m < k && rc == 0; m++)
            if (rr->args[m].index == rr->args[k].index) {
                char ip[256];
                key_path(ip, sizeof ip, cp, "index");
                rc = perr(l, ip,
                          "argument %u is already compared by args[%zu] (a rule compares "
                          "each argument once)",
                          rr->args[k].index, m);
            }
        if (rc == 0 && nv > 1 && list) {
            char vp[256];
            key_path(vp, sizeof vp, cp, "value");
            rc = perr(l, vp, "only one condition of a rule may list several values");
        }
        if (rc < 0) {
            free(vals);
            break;
        }
        if (nv > 1) {
            list = vals;
            nlist = nv;
            klist = k;
        } else {
            free(vals);
        }
    }
    if (rc < 0) {
        free(list);
        return -1;
    }
    rr->nargs = (unsigned)json_array_size(jargs);
    *listp = list;
    *nlistp = nlist;
    *klistp = klist;
    return 0;
}

/* A rule: {"name" | "names", "action", "errno", "args", "comment"}; one
 * fb_sc_rule per name and per value of a condition's list, appended to rl. */
static int parse_rule(struct ld *l, const char *path, json_t *j, size_t ji, struct rule_list *rl)
{
    static const char *const keys[] = {"name", "names", "action", "errno", "args", "comment", NULL};
    if (want_type(l, path, j, JSON_OBJECT, "an object {\"name\", \"action\"}") < 0 ||
        check_keys(l, path, j, keys) < 0)
        return -1;
    char sp[256];
    struct fb_sc_rule r;
    memset(&r, 0, sizeof r);
    json_t *jn = json_object_get(j, "name"), *jns = json_object_get(j, "names"),
           *ja = json_object_get(j, "action"), *je = json_object_get(j, "errno"),
           *jargs = json_object_get(j, "args");
    key_path(sp, sizeof sp, path, "action");
    if (!ja)
        return perr(l, sp, "missing");
    bool has_errno;
    if (!json_is_string(ja) ||
        parse_action(json_string_value(ja), &r.action, &r.errno_val, &has_errno) < 0)
        return perr(l, sp, "expected \"allow\", \"errno\", \"errno(ENAME)\", \"kill\" or \"log\"%s%s%s",
                    json_is_string(ja) ? ", got \"" : "", json_is_string(ja) ? json_string_value(ja) : "",
                    json_is_string(ja) ? "\"" : "");
    key_path(sp, sizeof sp, path, "errno");
    if (je) {
        if (r.action != FB_SC_ERRNO)
            return perr(l, sp, "only the \"errno\" action takes an errno");
        if (has_errno)
            return perr(l, sp, "the errno is already given in \"action\"");
        int v = json_is_string(je) ? profile_errno_parse(json_string_value(je))
                : json_is_integer(je) && json_integer_value(je) > 0 && json_integer_value(je) < 4096
                    ? (int)json_integer_value(je)
                    : -1;
        if (v < 0)
            return perr(l, sp, "expected an errno name such as \"EPERM\" or a number from 1 to 4095");
        r.errno_val = v;
    }
    if (jargs) {
        key_path(sp, sizeof sp, path, "args");
        if (want_type(l, sp, jargs, JSON_ARRAY, "an array of conditions") < 0)
            return -1;
        if (json_array_size(jargs) > 6)
            return perr(l, sp, "at most 6 conditions");
    }
    /* The names. */
    if (jn && jns)
        return perr(l, path, "give \"name\" or \"names\", not both");
    if (!jn && !jns) {
        key_path(sp, sizeof sp, path, "name");
        return perr(l, sp, "missing");
    }
    json_t *names = jns;
    json_t *one = NULL;
    if (jn) {
        one = json_array();
        json_array_append(one, jn);
        names = one;
    } else {
        key_path(sp, sizeof sp, path, "names");
        if (want_type(l, sp, jns, JSON_ARRAY, "an array of syscall names") < 0)
            return -1;
        if (!json_array_size(jns))
            return perr(l, sp, "empty");
    }
    char *comment = NULL;
    if (get_comment(l, path, j, &comment) < 0) {
        json_decref(one);
        return -1;
    }
    size_t i;
    json_t *e;
    int rc = 0;
    json_array_foreach(names, i, e) {
        if (jn)
            key_path(sp, sizeof sp, path, "name");
        else {
            char np[256];
            key_path(np, sizeof np, path, "names");
            idx_path(sp, sizeof sp, np, i);
        }
        if (!json_is_string(e)) {
            rc = perr(l, sp, "expected a syscall name, got %s", jtype(e));
            break;
        }
        const char *name = json_string_value(e);
        if (seccomp_syscall_nr(name) == -1) {
            rc = perr(l, sp, "unknown syscall \"%s\"", name);
            break;
        }
        struct fb_sc_rule rr = r;
        uint64_t *list = NULL; /* the one condition with several values */
        size_t nlist = 1, klist = 0;
        if (jargs && parse_args(l, path, jargs, name, &rr, &list, &nlist, &klist) < 0) {
            rc = -1;
            break;
        }
        for (size_t v = 0; v < nlist; v++) {
            struct fb_sc_rule one_rule = rr;
            if (list)
                one_rule.args[klist].value = list[v];
            one_rule.name = fb_xstrdup(name);
            one_rule.comment = comment ? fb_xstrdup(comment) : NULL;
            rule_list_add(rl, &one_rule, ji);
        }
        free(list);
    }
    free(comment);
    json_decref(one);
    return rc;
}

/* seccomp: "default" replaces; "rules" replace, syscall by syscall, every
 * rule inherited for the same syscall (docs/profiles.md). */
int apply_seccomp(struct ld *l, struct fb_policy *p, json_t *sc)
{
    static const char *const keys[] = {"default", "rules", "comment", NULL};
    if (want_type(l, "seccomp", sc, JSON_OBJECT, "an object") < 0 ||
        check_keys(l, "seccomp", sc, keys) < 0 || get_comment(l, "seccomp", sc, NULL) < 0)
        return -1;
    json_t *jd = json_object_get(sc, "default"), *jr = json_object_get(sc, "rules");
    if (jd) {
        bool has;
        enum fb_sc_action a;
        int e;
        if (!json_is_string(jd) || parse_action(json_string_value(jd), &a, &e, &has) < 0)
            return perr(l, "seccomp.default",
                        "expected \"allow\", \"errno\", \"errno(ENAME)\", \"kill\" or \"log\"");
        p->seccomp.default_action = a;
        p->seccomp.default_errno = e;
    }
    if (!jr)
        return 0;
    if (want_type(l, "seccomp.rules", jr, JSON_ARRAY, "an array of rules") < 0)
        return -1;
    struct rule_list mine = {0};
    size_t i;
    json_t *e;
    json_array_foreach(jr, i, e) {
        char ip[256];
        idx_path(ip, sizeof ip, "seccomp.rules", i);
        if (parse_rule(l, ip, e, i, &mine) < 0) {
            rules_free(mine.r, mine.n);
            free(mine.src);
            return -1;
        }
    }
    /* Built-in profiles (no directory) were checked when fluebox was built
     * (`fluebox profile check` runs the full check, and the build runs it on
     * every built-in): the check costs ~1 ms and ~1 MB on every start. */
    struct fb_err cerr = {0};
    if (!l->builtin && seccomp_check_rules(mine.r, mine.n, mine.src, &cerr) < 0) {
        rules_free(mine.r, mine.n);
        free(mine.src);
        return perr(l, NULL, "%s", cerr.msg);
    }
    free(mine.src);
    /* The inherited rules of every syscall this file has rules for go. */
    policy_own_rules(p);
    struct fb_sc_rule *all = fb_xcalloc(mine.n + p->seccomp.nrules + 1, sizeof *all);
    size_t n = 0;
    for (size_t k = 0; k < p->seccomp.nrules; k++) {
        struct fb_sc_rule *old = &p->seccomp.rules[k];
        bool replaced = false;
        for (size_t m = 0; m < mine.n && !replaced; m++)
            replaced = !strcmp(mine.r[m].name, old->name);
        if (replaced) {
            free(old->name);
            free(old->comment);
        } else {
            all[n++] = *old;
        }
    }
    if (mine.n)
        memcpy(all + n, mine.r, mine.n * sizeof *all);
    n += mine.n;
    free(mine.r);
    free(p->seccomp.rules);
    p->seccomp.rules = all;
    p->seccomp.nrules = n;
    return 0;
}
