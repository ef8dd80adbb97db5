/* seccomp_profile.c — the profile filter (seccomp_int.h): seccomp.default
 * and seccomp.rules as libseccomp rules in each mode (enforce, log, learn),
 * with the fixed rules merged in; and the same rules' meaning computed
 * directly (seccomp.h: the decisions, for the supervisor's answers to
 * notifications, the checks and the tests). */
#include "seccomp_int.h"

#include <string.h>

/* ---- the profile's rules ---- */

/* The action of a profile rule (or default) in mode, as SCMP_ACT_*. */
static uint32_t act_of(enum fb_sc_action a, int e, enum fb_sc_mode m)
{
    switch (a) {
    case FB_SC_ALLOW:
        return SCMP_ACT_ALLOW;
    case FB_SC_ERRNO:
        if (m == FB_SCM_LOG || m == FB_SCM_LEARN)
            return SCMP_ACT_NOTIFY;
        return SCMP_ACT_ERRNO((uint32_t)e & SECCOMP_RET_DATA);
    case FB_SC_KILL:
        return m == FB_SCM_LEARN ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS;
    case FB_SC_LOG:
        if (m == FB_SCM_LOG)
            return SCMP_ACT_NOTIFY;
        return m == FB_SCM_LEARN ? SCMP_ACT_ALLOW : SCMP_ACT_LOG;
    case FB_SC_TRACE:
        return SCMP_ACT_TRACE(0);
    }
    return SCMP_ACT_KILL_PROCESS;
}

int profile_filter(const struct fb_policy *p, enum fb_sc_mode mode, struct sfilter *f,
                          struct fb_err *err)
{
    const struct fb_seccomp *s = &p->seccomp;
    f->def = act_of(s->default_action, s->default_errno, mode);
    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        int nr = seccomp_syscall_nr(r->name);
        if (nr == -1)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: unknown syscall \"%s\"", r->name);
        if (nr < 0)
            continue; /* not a syscall of this architecture */
        if (r->nargs > 6 || expand_rule(r, nr, act_of(r->action, r->errno_val, mode), f) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s has too many comparisons",
                           r->name);
    }
    fixed_ready();
    merge_fixed_enosys(f);
    if (mode == FB_SCM_LOG)
        merge_fixed_notify(f);
    return 0;
}

/* Does the profile filter of p in mode have notifications (a listener)? */
bool profile_notifies(const struct fb_policy *p, enum fb_sc_mode mode)
{
    if (mode == FB_SCM_LOG)
        return true; /* the fixed EPERM rules at least */
    if (mode != FB_SCM_LEARN)
        return false;
    const struct fb_seccomp *s = &p->seccomp;
    if (act_of(s->default_action, s->default_errno, mode) == SCMP_ACT_NOTIFY)
        return true;
    for (size_t i = 0; i < s->nrules; i++)
        if (act_of(s->rules[i].action, s->rules[i].errno_val, mode) == SCMP_ACT_NOTIFY &&
            seccomp_syscall_nr(s->rules[i].name) >= 0)
            return true;
    return false;
}

static uint32_t ret_of_action(enum fb_sc_action a, int e)
{
    switch (a) {
    case FB_SC_ALLOW: return SECCOMP_RET_ALLOW;
    case FB_SC_ERRNO: return SECCOMP_RET_ERRNO | ((uint32_t)e & SECCOMP_RET_DATA);
    case FB_SC_KILL: return SECCOMP_RET_KILL_PROCESS;
    case FB_SC_LOG: return SECCOMP_RET_LOG;
    case FB_SC_TRACE: return SECCOMP_RET_TRACE;
    }
    return SECCOMP_RET_KILL_PROCESS;
}

static bool rule_matches(const struct fb_sc_rule *r, const struct seccomp_data *d)
{
    for (unsigned k = 0; k < r->nargs; k++)
        if (r->args[k].index > 5 ||
            !cond_holds(&r->args[k], seccomp_arg_is32(r->name, r->args[k].index),
                        d->args[r->args[k].index]))
            return false;
    return true;
}

uint32_t seccomp_profile_decision(const struct fb_policy *p, const struct seccomp_data *d)
{
    uint32_t nr = (uint32_t)d->nr;
    if (fixed_other_abi(d))
        return SECCOMP_RET_KILL_PROCESS;
    const struct fb_seccomp *s = &p->seccomp;
    char buf[64];
    const char *name = (int32_t)nr >= 0 ? seccomp_syscall_name((int)nr, buf, sizeof buf) : NULL;
    if (name)
        for (size_t i = 0; i < s->nrules; i++)
            if (!strcmp(s->rules[i].name, name) && rule_matches(&s->rules[i], d))
                return ret_of_action(s->rules[i].action, s->rules[i].errno_val);
    return ret_of_action(s->default_action, s->default_errno);
}

/* The kernel's choice between two filters' answers: the lower action value
 * (signed) is stricter; on a tie, the later loaded filter's. */
static uint32_t stricter(uint32_t first, uint32_t last)
{
    return (int32_t)(first & SECCOMP_RET_ACTION_FULL) < (int32_t)(last & SECCOMP_RET_ACTION_FULL)
               ? first
               : last;
}

uint32_t seccomp_decision(const struct fb_policy *p, const struct seccomp_data *d)
{
    uint32_t f = seccomp_fixed_decision(d);
    if (f == (SECCOMP_RET_ERRNO | ENOSYS))
        return f; /* in both filters (merge_fixed_enosys) */
    return stricter(f, seccomp_profile_decision(p, d));
}

int seccomp_notified_errno(const struct fb_policy *p, const struct seccomp_data *d)
{
    uint32_t r = seccomp_decision(p, d);
    switch (r & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ERRNO:
        return (int)(r & SECCOMP_RET_DATA);
    case SECCOMP_RET_ALLOW:
    case SECCOMP_RET_LOG:
        return 0;
    }
    /* A "kill" rule where a fixed rule denies: with --seccomp-log the fixed
     * rule's notification is what the filters return. */
    uint32_t f = seccomp_fixed_decision(d);
    return (f & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO ? (int)(f & SECCOMP_RET_DATA) : EPERM;
}

enum fb_sc_mode seccomp_mode(const struct fb_policy *p, bool run_mode)
{
    if (p->seccomp.learn)
        return FB_SCM_LEARN;
    if (p->seccomp.log_denied)
        return run_mode ? FB_SCM_LOG : FB_SCM_AUDIT;
    return FB_SCM_ENFORCE;
}
