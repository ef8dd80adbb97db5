/* seccomp_check.c — the checks of a profile's rules (seccomp.h): rules of
 * one syscall that contradict or overlap (with an example call), rules that
 * make too many comparisons, a profile that denies what fluebox's init
 * needs, and `profile check`'s comparison of the built-in filters with what
 * libseccomp makes of the rules now. */
#include "seccomp_int.h"

#include <signal.h>
#include <string.h>

/* ---- checks ---- */

unsigned seccomp_arg_classes(const struct fb_policy *p, int nr)
{
    unsigned m = 0;
    char buf[64];
    const char *name = seccomp_syscall_name(nr, buf, sizeof buf);
    if (!name)
        return 0;
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        const struct fb_sc_rule *r = &p->seccomp.rules[i];
        if (strcmp(r->name, name))
            continue;
        for (unsigned k = 0; k < r->nargs; k++)
            m |= 1u << r->args[k].index;
    }
    return m;
}

static void action_name(enum fb_sc_action a, int e, char *buf, size_t cap)
{
    const char *en;
    switch (a) {
    case FB_SC_ALLOW: snprintf(buf, cap, "allow"); return;
    case FB_SC_KILL: snprintf(buf, cap, "kill"); return;
    case FB_SC_LOG: snprintf(buf, cap, "log"); return;
    case FB_SC_TRACE: snprintf(buf, cap, "trace"); return;
    case FB_SC_ERRNO:
        en = strerrorname_np(e);
        if (en)
            snprintf(buf, cap, "errno(%s)", en);
        else
            snprintf(buf, cap, "errno(%d)", e);
        return;
    }
    snprintf(buf, cap, "?");
}

static bool same_action(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    return a->action == b->action && (a->action != FB_SC_ERRNO || a->errno_val == b->errno_val);
}

/* a and b (expanded to libseccomp rules fa, fb) overlap; *ex gets one call
 * both match. */
static bool overlap_example(const struct sfilter *fa, const struct sfilter *fb, uint64_t ex[6])
{
    for (size_t i = 0; i < fa->n; i++)
        for (size_t j = 0; j < fb->n; j++)
            if (srules_overlap(&fa->r[i], &fb->r[j])) {
                memset(ex, 0, 6 * sizeof *ex);
                for (unsigned k = 0; k < fa->r[i].n; k++)
                    ex[fa->r[i].c[k].arg] |= fa->r[i].c[k].val;
                for (unsigned k = 0; k < fb->r[j].n; k++)
                    ex[fb->r[j].c[k].arg] |= fb->r[j].c[k].val;
                return true;
            }
    return false;
}

bool seccomp_rules_overlap(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    struct sfilter fa = {0}, fb = {0};
    uint64_t ex[6];
    bool r = expand_rule(a, 0, 0, &fa) >= 0 && expand_rule(b, 0, 0, &fb) >= 0 &&
             overlap_example(&fa, &fb, ex);
    free(fa.r);
    free(fb.r);
    return r;
}

static bool same_rule(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    if (!same_action(a, b) || a->nargs != b->nargs)
        return false;
    for (unsigned k = 0; k < a->nargs; k++)
        if (a->args[k].index != b->args[k].index || a->args[k].op != b->args[k].op ||
            a->args[k].value != b->args[k].value ||
            (a->args[k].op == FB_SC_MASKED_EQ && a->args[k].mask != b->args[k].mask))
            return false;
    return true;
}

static int by_name(const void *x, const void *y, void *arg)
{
    const struct fb_sc_rule *r = arg;
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    int c = strcmp(r[i].name, r[j].name);
    return c ? c : (i > j) - (i < j);
}

/* The call, up to the last argument either rule compares. */
static void call_example(const struct fb_sc_rule *a, const struct fb_sc_rule *b,
                         const uint64_t ex[6], char *call, size_t cap)
{
    unsigned last = 0;
    for (unsigned k = 0; k < a->nargs; k++)
        last = a->args[k].index > last ? a->args[k].index : last;
    for (unsigned k = 0; k < b->nargs; k++)
        last = b->args[k].index > last ? b->args[k].index : last;
    size_t at = 0;
    call[0] = 0;
    for (unsigned k = 0; k <= last && at < cap; k++)
        at += (size_t)snprintf(call + at, cap - at, ex[k] < 256 ? "%s%llu" : "%s%#llx",
                               k ? ", " : "", (unsigned long long)ex[k]);
}

/* Where rule i is ("seccomp.rules[3]: ") and which rule j is, in errors
 * (idx: the rules' indexes in the file, or NULL). */
#define WHERE(i)                                                                          \
    (idx ? (snprintf(where, sizeof where, "seccomp.rules[%zu]: ", idx[i]), where) : "seccomp: ")
#define OTHER(j)                                                                          \
    (idx ? (snprintf(other, sizeof other, "rules[%zu]", idx[j]), other)                   \
         : (snprintf(other, sizeof other, "another rule"), other))

/* Rules ia and ib (a first) of one syscall, each expanded in ex: 0 if they
 * can stand together, else -1 and err says why. */
static int check_pair(const struct fb_sc_rule *r, const size_t *idx, size_t ia, size_t ib,
                      const struct sfilter *ex, struct fb_err *err)
{
    char where[48], other[32], an[32], bn[32], call[160];
    const struct fb_sc_rule *a = &r[ia], *b = &r[ib];
    uint64_t exv[6];
    int rc = 0;
    if (same_rule(a, b))
        return 0; /* the same rule twice changes nothing */
    if (!a->nargs && !b->nargs) {
        rc = fb_errf(err, FB_EXIT_SETUP,
                     "%s\"%s\" already has an unconditional rule with another "
                     "action (%s)",
                     WHERE(ib), b->name, OTHER(ia));
    } else if (!a->nargs) {
        rc = fb_errf(err, FB_EXIT_SETUP,
                     "%s\"%s\" has an unconditional rule (%s); conditional rules for "
                     "it would be ignored",
                     WHERE(ib), b->name, OTHER(ia));
    } else if (!b->nargs) {
        rc = fb_errf(err, FB_EXIT_SETUP,
                     "%s\"%s\" has conditional rules (%s); an unconditional rule "
                     "for it would replace them",
                     WHERE(ib), b->name, OTHER(ia));
    } else if (overlap_example(&ex[ia], &ex[ib], exv)) {
        call_example(a, b, exv, call, sizeof call);
        if (same_action(a, b)) {
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "%s\"%s\": this rule and %s both match %s(%s); the rules "
                         "of a syscall must exclude each other",
                         WHERE(ib), b->name, OTHER(ia), b->name, call);
        } else {
            action_name(b->action, b->errno_val, bn, sizeof bn);
            action_name(a->action, a->errno_val, an, sizeof an);
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "%s\"%s\": this rule (%s) and %s (%s) both match %s(%s); "
                         "the rules of a syscall must exclude each other",
                         WHERE(ib), b->name, bn, OTHER(ia), an, b->name, call);
        }
    }
    return rc;
}

int seccomp_check_rules(const struct fb_sc_rule *r, size_t n, const size_t *idx,
                        struct fb_err *err)
{
    static __thread struct term t[6][MAX_TERMS];
    char where[48];
    size_t *cost = fb_xcalloc(n ? n : 1, sizeof *cost);
    for (size_t i = 0; i < n; i++) {
        size_t nt[6];
        cost[i] = rule_terms(&r[i], t, nt);
        if (cost[i] > MAX_EXPAND) {
            free(cost);
            return fb_errf(err, FB_EXIT_SETUP,
                           "%s\"%s\": the conditions make more than %d comparisons (use "
                           "at most one range or ne per rule)",
                           WHERE(i), r[i].name, MAX_EXPAND);
        }
    }
    /* Rules grouped by syscall, in their order within each group. */
    size_t *o = fb_xcalloc(n ? n : 1, sizeof *o);
    struct sfilter *ex = fb_xcalloc(n ? n : 1, sizeof *ex); /* each rule's comparisons */
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    qsort_r(o, n, sizeof *o, by_name, (void *)r);
    int rc = 0;
    for (size_t g = 0; g < n && rc == 0;) {
        size_t e = g + 1;
        while (e < n && !strcmp(r[o[e]].name, r[o[g]].name))
            e++;
        size_t sum = 0;
        for (size_t x = g; x < e; x++)
            sum += cost[o[x]];
        if (sum > MAX_PER_SYSCALL) {
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "%s\"%s\": the rules for it make %zu comparisons (at most %d)",
                         WHERE(o[e - 1]), r[o[g]].name, sum, MAX_PER_SYSCALL);
            break;
        }
        for (size_t x = g; x < e && e - g > 1; x++)
            expand_rule(&r[o[x]], 0, 0, &ex[o[x]]);
        for (size_t x = g + 1; x < e && rc == 0; x++)
            for (size_t y = g; y < x && rc == 0; y++)
                rc = check_pair(r, idx, o[y], o[x], ex, err);
        g = e;
    }
#undef WHERE
#undef OTHER
    for (size_t i = 0; i < n; i++)
        free(ex[i].r);
    free(ex);
    free(o);
    free(cost);
    return rc;
}

/* What fluebox's init does under the filters before and while it runs the
 * command (init.c): read its signalfd, fork (clone without namespace
 * flags), wait, forward signals, talk to the supervisor, and in the child
 * reset signals, setpgid, chdir, close_range and execve. A profile that
 * denies one of these could never start anything. */
static const struct {
    const char *name;
    uint64_t a0;
} init_needs[] = {
    {"read", 0},          {"write", 0},        {"close", 0},           {"sendmsg", 0},
    {"recvmsg", 0},       {"wait4", 0},        {"kill", 0},            {"exit_group", 0},
    {"rt_sigprocmask", 0}, {"rt_sigaction", 0}, {"setpgid", 0},         {"chdir", 0},
    {"close_range", 0},   {"execve", 0},       {"brk", 0},             {"mmap", 0},
    {"munmap", 0},        {"clone", SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID},
};

int seccomp_validate(const struct fb_policy *p, struct fb_err *err)
{
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        const struct fb_sc_rule *r = &p->seccomp.rules[i];
        if (seccomp_syscall_nr(r->name) == -1)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp.rules[%zu].name: unknown syscall \"%s\"",
                           i, r->name);
        if (r->nargs > 6)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s has %u conditions",
                           r->name, r->nargs);
        for (unsigned k = 0; k < r->nargs; k++)
            if (r->args[k].index > 5 || (unsigned)r->args[k].op > FB_SC_MASKED_EQ)
                return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s: bad condition %u",
                               r->name, k);
    }
    /* The rules' consistency is checked file by file while loading
     * (profile_rules.c): every syscall's rules come from one file. */
    uint32_t arch = fixed_native_arch();
    for (size_t i = 0; i < FB_ARRAY_LEN(init_needs); i++) {
        int nr = seccomp_syscall_nr(init_needs[i].name);
        if (nr < 0)
            continue;
        struct seccomp_data d = {.nr = nr, .arch = arch};
        d.args[0] = init_needs[i].a0;
        uint32_t act = seccomp_decision(p, &d) & SECCOMP_RET_ACTION_FULL;
        if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_LOG)
            return fb_errf(err, FB_EXIT_SETUP,
                           "seccomp: the profile denies %s, which fluebox's init needs to run "
                           "the command",
                           init_needs[i].name);
    }
    return 0;
}

static bool same_prog(const struct sock_filter *a, size_t na, const struct sock_filter *b,
                      size_t nb)
{
    return na == nb && !memcmp(a, b, na * sizeof *a);
}

int seccomp_check_compile(const struct fb_policy *p, struct fb_err *err)
{
    if (seccomp_validate(p, err) < 0 ||
        seccomp_check_rules(p->seccomp.rules, p->seccomp.nrules, NULL, err) < 0)
        return -1;
    uint64_t key = seccomp_policy_key(p);
    for (int m = 0; m < FB_SCM_COUNT; m++)
        for (int f = 0; f < 2; f++) {
            struct sock_filter *prog;
            size_t len;
            if (seccomp_export_one(p, f, (enum fb_sc_mode)m, &prog, &len, err) < 0)
                return -1;
            const struct fb_sc_precompiled *e = precompiled(f, key, prog_mode(f, m));
            bool differs = e && !same_prog(prog, len, e->prog, e->len);
            free(prog);
            if (differs)
                return fb_errf(err, FB_EXIT_SETUP,
                               "seccomp: the %s filter built into fluebox differs from what "
                               "libseccomp makes of the rules now (rebuild fluebox)",
                               f ? "fixed" : "profile");
        }
    return 0;
}
