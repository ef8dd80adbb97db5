/* seccomp.c — compiles policy->seccomp into a BPF filter with libseccomp.
 *
 * Fixed parts, whatever the profile says:
 *   - every non-native ABI (i386 through int 0x80, x32) is killed: the filter
 *     only has the native architecture, and libseccomp's bad-arch action kills;
 *   - clone3 fails with ENOSYS, so libc falls back to clone(), whose flags a
 *     BPF filter can inspect (clone3 passes them in memory);
 *   - clone/unshare with any namespace flag fail with EPERM;
 *   - ioctl(TIOCSTI) and ioctl(TIOCLINUX) fail with EPERM.
 * Then each profile rule, then the default action. */
#include "seccomp.h"

#include <linux/sched.h>
#include <seccomp.h>
#include <string.h>
#include <sys/ioctl.h>

#define NS_FLAGS                                                                         \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |         \
     CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif

static uint32_t to_action(enum fb_sc_action a, int errno_val)
{
    switch (a) {
    case FB_SC_ALLOW: return SCMP_ACT_ALLOW;
    case FB_SC_ERRNO: return SCMP_ACT_ERRNO((uint32_t)errno_val);
    case FB_SC_KILL: return SCMP_ACT_KILL_PROCESS;
    case FB_SC_LOG: return SCMP_ACT_LOG;
    case FB_SC_TRACE: return SCMP_ACT_TRACE(0);
    }
    return SCMP_ACT_KILL_PROCESS;
}

static enum scmp_compare to_op(enum fb_sc_op op)
{
    switch (op) {
    case FB_SC_EQ: return SCMP_CMP_EQ;
    case FB_SC_NE: return SCMP_CMP_NE;
    case FB_SC_LT: return SCMP_CMP_LT;
    case FB_SC_LE: return SCMP_CMP_LE;
    case FB_SC_GT: return SCMP_CMP_GT;
    case FB_SC_GE: return SCMP_CMP_GE;
    case FB_SC_MASKED_EQ: return SCMP_CMP_MASKED_EQ;
    }
    return SCMP_CMP_EQ;
}

static void release(scmp_filter_ctx *ctx)
{
    if (*ctx)
        seccomp_release(*ctx);
}

/* Add a rule; libseccomp returns -EEXIST when the same syscall already has a
 * rule with a different action: the first rule for a syscall wins. */
static int add(scmp_filter_ctx ctx, uint32_t action, int nr, unsigned n,
               const struct scmp_arg_cmp *args, const char *name, struct fb_err *err)
{
    int rc = seccomp_rule_add_array(ctx, action, nr, n, args);
    if (rc == 0 || rc == -EEXIST)
        return 0;
    /* An action equal to the default is refused by libseccomp (-EACCES in
     * some versions, -EINVAL in others): nothing to add. */
    if (rc == -EACCES || rc == -EINVAL)
        return 0;
    errno = -rc;
    return fb_errno(err, FB_EXIT_SETUP, "seccomp rule for %s", name);
}

static int build(const struct fb_policy *p, scmp_filter_ctx ctx, struct fb_err *err)
{
    const struct fb_seccomp *s = &p->seccomp;
    uint32_t def = to_action(s->default_action, s->default_errno);

    /* clone3: ENOSYS so that libc uses clone. */
    int nr = seccomp_syscall_resolve_name("clone3");
    if (nr >= 0 && add(ctx, SCMP_ACT_ERRNO(ENOSYS), nr, 0, NULL, "clone3", err) < 0)
        return -1;
    /* clone / unshare with namespace flags. clone's flags are argument 0 on
     * x86_64 (and on every architecture fluebox builds for). */
    struct scmp_arg_cmp ns = SCMP_A0(SCMP_CMP_MASKED_EQ, NS_FLAGS, 0);
    struct scmp_arg_cmp has_ns[8];
    static const uint64_t ns_bits[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC, CLONE_NEWUSER,
                                       CLONE_NEWPID, CLONE_NEWNET, CLONE_NEWCGROUP, CLONE_NEWTIME};
    for (size_t i = 0; i < FB_ARRAY_LEN(ns_bits); i++)
        has_ns[i] = SCMP_A0(SCMP_CMP_MASKED_EQ, ns_bits[i], ns_bits[i]);
    const char *const nsc[] = {"clone", "unshare"};
    for (size_t c = 0; c < 2; c++) {
        nr = seccomp_syscall_resolve_name(nsc[c]);
        for (size_t i = 0; i < FB_ARRAY_LEN(ns_bits); i++)
            if (add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &has_ns[i], nsc[c], err) < 0)
                return -1;
        /* Without namespace flags: allowed for clone (threads, fork) when the
         * default would deny it; unshare of non-namespace bits is harmless. */
        if (def != SCMP_ACT_ALLOW && add(ctx, SCMP_ACT_ALLOW, nr, 1, &ns, nsc[c], err) < 0)
            return -1;
    }
    /* Terminal injection. */
    nr = seccomp_syscall_resolve_name("ioctl");
    struct scmp_arg_cmp sti = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCSTI);
    struct scmp_arg_cmp lin = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xffffffffu, TIOCLINUX);
    if (add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &sti, "ioctl", err) < 0 ||
        add(ctx, SCMP_ACT_ERRNO(EPERM), nr, 1, &lin, "ioctl", err) < 0)
        return -1;

    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        nr = seccomp_syscall_resolve_name(r->name);
        if (nr == __NR_SCMP_ERROR)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: unknown syscall \"%s\"", r->name);
        if (nr < 0)
            continue; /* a pseudo-syscall that this architecture does not have */
        /* The fixed rules above own these. */
        if (!strcmp(r->name, "clone3"))
            continue;
        if ((!strcmp(r->name, "clone") || !strcmp(r->name, "unshare")) && r->action == FB_SC_ALLOW &&
            r->nargs == 0) {
            if (add(ctx, SCMP_ACT_ALLOW, nr, 1, &ns, r->name, err) < 0)
                return -1;
            continue;
        }
        struct scmp_arg_cmp args[6];
        for (unsigned k = 0; k < r->nargs && k < 6; k++) {
            args[k].arg = r->args[k].index;
            args[k].op = to_op(r->args[k].op);
            if (r->args[k].op == FB_SC_MASKED_EQ) {
                args[k].datum_a = r->args[k].mask;
                args[k].datum_b = r->args[k].value;
            } else {
                args[k].datum_a = r->args[k].value;
                args[k].datum_b = 0;
            }
        }
        uint32_t act = to_action(r->action, r->errno_val);
        if (act == def)
            continue;
        if (add(ctx, act, nr, r->nargs, args, r->name, err) < 0)
            return -1;
    }
    return 0;
}

int seccomp_apply(const struct fb_policy *p, struct fb_err *err)
{
    if (!p->seccomp.enabled)
        return 0;
    const struct fb_seccomp *s = &p->seccomp;
    __attribute__((cleanup(release))) scmp_filter_ctx ctx =
        seccomp_init(to_action(s->default_action, s->default_errno));
    if (!ctx)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp_init failed");
    /* Only the native ABI: a syscall from any other is killed. */
    if (seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: cannot set the bad-arch action");
    /* no_new_privs is set by the caller before; do not let libseccomp do it
     * again, it costs a syscall. */
    seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0);
    if (s->log_denied)
        seccomp_attr_set(ctx, SCMP_FLTATR_CTL_LOG, 1);
    if (build(p, ctx, err) < 0)
        return -1;
    int rc = seccomp_load(ctx);
    if (rc < 0) {
        errno = -rc;
        return fb_errno(err, FB_EXIT_SETUP, "loading the seccomp filter");
    }
    return 0;
}

int seccomp_validate(const struct fb_policy *p, struct fb_err *err)
{
    for (size_t i = 0; i < p->seccomp.nrules; i++)
        if (seccomp_syscall_resolve_name(p->seccomp.rules[i].name) == __NR_SCMP_ERROR)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp.rules[%zu].name: unknown syscall \"%s\"",
                           i, p->seccomp.rules[i].name);
    return 0;
}
