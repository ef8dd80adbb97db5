/* seccomp.c — policy->seccomp as libseccomp filters: compiling them (each
 * syscall's rules checked, pruned and bounded first), exporting them, the
 * build-time table of compiled filters and its key, and `profile bpf`.
 * The rest is in the files beside it: seccomp_names.c (syscall names,
 * constants, 32-bit arguments), seccomp_terms.c (conditions as terms),
 * seccomp_fixed.c (the fixed rules), seccomp_profile.c (the profile filter
 * and the rules' meaning computed directly, for the supervisor's answers to
 * notifications, the checks and the tests), seccomp_job.c (passing to the
 * sandbox and loading) and seccomp_check.c (the checks).
 *
 * libseccomp generates every BPF program fluebox loads. Its model decides
 * the profile format (docs/profiles.md):
 *   - per syscall, one unconditional rule or conditional rules: libseccomp
 *     lets an unconditional rule absorb the conditional ones of the same
 *     syscall, so fluebox refuses the mix;
 *   - conditional rules are OR'ed and must not overlap (which rule of two
 *     actions would win is libseccomp's internal order; and on rules of one
 *     action that overlap, libseccomp 2.5's tree pruning takes time out of
 *     all proportion and leaks memory), which fluebox checks exactly;
 *   - a rule compares each argument once; a call no rule matches gets the
 *     filter's default action; a rule with the default action is not added
 *     (libseccomp refuses it; it changes nothing).
 * Every condition is given to libseccomp as MASKED_EQ comparisons ("terms",
 * (argument & mask) == value): eq and masked_eq are one term, a range or ne
 * the few aligned blocks that cover it. That is the only way to compare a
 * 32-bit argument on its low 32 bits as the kernel reads it (ioctl(fd,
 * TIOCSTI | 1UL << 32) is TIOCSTI), and the only comparison libseccomp 2.5
 * combines correctly across several rules of one syscall: with ranges and
 * ne it merges rules of one syscall wrongly (tests/fuzz checks this).
 *
 * Two filters, because the kernel runs every filter and the stricter answer
 * wins, so nothing in a profile can relax the fixed rules:
 *   fixed (default allow): other ABIs are killed (libseccomp's bad-arch
 *     action, x32 numbers on x86_64 included); clone3 and openat2 (flags and
 *     mode in memory, out of a filter's sight: libc falls back to clone and
 *     openat) and syscall numbers above the last one this build has reviewed
 *     fail with ENOSYS; clone/unshare with any namespace flag, ioctl TIOCSTI
 *     and TIOCLINUX, making set-user-ID or set-group-ID files (chmod family;
 *     open/openat with O_CREAT or O_TMPFILE, creat, mknod with either bit)
 *     and personality other than PER_LINUX, PER_LINUX32 and the query fail
 *     with EPERM;
 *   profile: seccomp.default and seccomp.rules, and the fixed ENOSYS rules.
 * Load order: the fixed filter first, because loading the second filter is
 * a seccomp() call that the first must allow (strict does not). When both
 * answer with an errno the kernel takes the last loaded filter's, the
 * profile's: so the fixed ENOSYS answers are in the profile filter too
 * (clone3 under a default-deny profile must stay ENOSYS for libc to fall
 * back to clone). With --seccomp-log and learn the profile filter has the
 * listener (a task may have one, and the filter that answers last on a tie
 * is the one whose listener is asked): its errno rules become
 * notifications; with --seccomp-log the fixed EPERM rules are merged into
 * it as notifications too (the profile's rules restricted to the calls
 * those rules do not cover), so that the supervisor sees and counts them;
 * the fixed filter still returns a notification for them, which without a
 * listener fails the call: nothing the fixed rules deny gets through even
 * if the merge were wrong.
 *
 * Built-in profiles' filters are compiled at build time (the table
 * fb_sc_precompiled); others by a helper process the supervisor starts
 * first thing in sandbox_spawn (seccomp_job_start), so that libseccomp's
 * milliseconds overlap the sandbox's creation. */
#include "seccomp.h"
#include "seccomp_int.h"

#include <string.h>
#include <sys/mman.h>

/* ---- libseccomp ---- */

static bool srules_same(const struct srule *a, const struct srule *b)
{
    return a->nr == b->nr && a->act == b->act && srule_within(a, b) && srule_within(b, a);
}

/* Each syscall's rules must be consistent before libseccomp sees them (it
 * would not say): an unconditional rule alone, the others disjoint. */
static int sfilter_consistent(const struct sfilter *f, struct fb_err *err)
{
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < i; j++) {
            const struct srule *a = &f->r[j], *b = &f->r[i];
            if (a->nr != b->nr || srules_same(a, b))
                continue;
            bool bad = (!a->n || !b->n) ? (a->n != b->n || a->act != b->act)
                                        : srules_overlap(a, b);
            if (bad) {
                char buf[64];
                const char *name = seccomp_syscall_name(a->nr, buf, sizeof buf);
                return fb_errf(err, FB_EXIT_SETUP,
                               "seccomp: rules for %s contradict each other (internal error)",
                               name ? name : "?");
            }
        }
    return 0;
}

static int by_nr(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* No syscall gets more than MAX_PER_SYSCALL libseccomp rules. */
static int sfilter_bounded(const struct sfilter *f, struct fb_err *err)
{
    int *nrs = fb_xcalloc(f->n ? f->n : 1, sizeof *nrs);
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->r[i].act != f->def)
            nrs[n++] = f->r[i].nr;
    qsort(nrs, n, sizeof *nrs, by_nr);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t e = i + 1;
        while (e < n && nrs[e] == nrs[i])
            e++;
        if (e - i > MAX_PER_SYSCALL) {
            char buf[64];
            const char *name = seccomp_syscall_name(nrs[i], buf, sizeof buf);
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "seccomp: the rules for %s make %zu comparisons (at most %d): use fewer "
                         "ranges, or compare the argument the fixed rules check",
                         name ? name : "?", e - i, MAX_PER_SYSCALL);
        }
        i = e;
    }
    free(nrs);
    return rc;
}

/* Rules that another rule of the same action covers change nothing: leave
 * them out (less work for libseccomp, which also leaks memory on some of
 * them). */
static void sfilter_prune(struct sfilter *f)
{
    size_t o = 0;
    for (size_t i = 0; i < f->n; i++) {
        bool redundant = false;
        for (size_t j = 0; j < f->n && !redundant; j++)
            redundant = j != i && f->r[j].nr == f->r[i].nr && f->r[j].act == f->r[i].act &&
                        srule_within(&f->r[i], &f->r[j]) &&
                        (!srule_within(&f->r[j], &f->r[i]) || j < i);
        if (!redundant)
            f->r[o++] = f->r[i];
    }
    f->n = o;
}

static int sfilter_compile(struct sfilter *f, scmp_filter_ctx *out, struct fb_err *err)
{
    sfilter_prune(f);
    if (sfilter_bounded(f, err) < 0 || sfilter_consistent(f, err) < 0)
        return -1;
    scmp_filter_ctx ctx = seccomp_init(f->def);
    if (!ctx)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp cannot make a filter");
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); /* binary search on nr */
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        const struct srule *r = &f->r[i];
        if (r->act == f->def)
            continue; /* libseccomp refuses it; it would change nothing */
        struct scmp_arg_cmp c[6];
        for (unsigned k = 0; k < r->n; k++)
            c[k] = r->c[k].mask == ~(uint64_t)0
                       ? (struct scmp_arg_cmp){r->c[k].arg, SCMP_CMP_EQ, r->c[k].val, 0}
                       : (struct scmp_arg_cmp){r->c[k].arg, SCMP_CMP_MASKED_EQ, r->c[k].mask,
                                               r->c[k].val};
        rc = seccomp_rule_add_exact_array(ctx, r->act, r->nr, r->n, c);
        if (rc < 0) {
            char buf[64];
            const char *name = seccomp_syscall_name(r->nr, buf, sizeof buf);
            seccomp_release(ctx);
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp refuses a rule for %s: %s",
                           name ? name : "?", strerror(-rc));
        }
    }
    if (rc < 0) {
        seccomp_release(ctx);
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp: %s", strerror(-rc));
    }
    *out = ctx;
    return 0;
}

/* Build filter (fixed, or p's profile filter) for mode into a libseccomp
 * context. */
int build_ctx(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                     scmp_filter_ctx *ctx, struct fb_err *err)
{
    struct sfilter f = {0};
    int rc;
    if (is_fixed) {
        fixed_filter(mode == FB_SCM_LOG ? FB_SCM_LOG : FB_SCM_ENFORCE, &f);
        rc = 0;
    } else {
        rc = profile_filter(p, mode == FB_SCM_AUDIT ? FB_SCM_ENFORCE : mode, &f, err);
    }
    if (rc == 0)
        rc = sfilter_compile(&f, ctx, err);
    free(f.r);
    return rc;
}

int new_memfd(struct fb_err *err)
{
    int fd = memfd_create("fluebox-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "seccomp: memfd_create");
    return fd;
}

/* libseccomp's program for ctx, written to the (empty) file fd. */
int export_into(scmp_filter_ctx ctx, int fd, struct fb_err *err)
{
    int rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: exporting the filter: %s", strerror(-rc));
    off_t sz = lseek(fd, 0, SEEK_END);
    if (sz <= 0 || sz % (off_t)sizeof(struct sock_filter))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp exported %lld bytes",
                       (long long)sz);
    if (sz > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
        return fb_errf(err, FB_EXIT_SETUP,
                       "seccomp: the rules make a filter of %lld instructions, more than the "
                       "kernel takes (%d)",
                       (long long)(sz / (off_t)sizeof(struct sock_filter)), BPF_MAXINSNS);
    return 0;
}

/* libseccomp's program for ctx, into a new memfd. */
static int export_fd(scmp_filter_ctx ctx, struct fb_err *err)
{
    int fd = new_memfd(err);
    if (fd < 0)
        return -1;
    if (export_into(ctx, fd, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

const struct fb_sc_precompiled *precompiled(bool is_fixed, uint64_t key, int mode)
{
    if (!fb_sc_precompiled)
        return NULL;
    for (const struct fb_sc_precompiled *e = fb_sc_precompiled; e->prog; e++)
        if (e->fixed == is_fixed && e->mode == mode && (is_fixed || e->key == key))
            return e;
    return NULL;
}

/* The mode whose program a filter uses (audit loads enforce's with a flag;
 * the fixed filter differs only under --seccomp-log). */
int prog_mode(bool is_fixed, enum fb_sc_mode mode)
{
    if (mode == FB_SCM_AUDIT)
        return FB_SCM_ENFORCE;
    if (is_fixed && mode != FB_SCM_LOG)
        return FB_SCM_ENFORCE;
    return mode;
}

static int program_fd(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                      uint64_t key, bool *was_pre, struct fb_err *err)
{
    const struct fb_sc_precompiled *e = precompiled(is_fixed, key, prog_mode(is_fixed, mode));
    if (e) {
        int fd = new_memfd(err);
        if (fd < 0)
            return -1;
        size_t len = (size_t)e->len * sizeof *e->prog;
        if (fb_write_all(fd, e->prog, len) < 0) {
            close(fd);
            return fb_errno(err, FB_EXIT_SETUP, "seccomp: writing the filter");
        }
        *was_pre = true;
        return fd;
    }
    scmp_filter_ctx ctx;
    if (build_ctx(p, is_fixed, mode, &ctx, err) < 0)
        return -1;
    int fd = export_fd(ctx, err);
    seccomp_release(ctx);
    return fd;
}

int seccomp_programs(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_progs *out,
                     struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->fd[0] = out->fd[1] = -1;
    uint64_t key = seccomp_policy_key(p);
    /* Load order: see the header comment. */
    static const bool order_fixed[2] = {true, false};
    for (size_t i = 0; i < 2; i++) {
        bool was_pre = false;
        int fd = program_fd(p, order_fixed[i], mode, key, &was_pre, err);
        if (fd < 0) {
            seccomp_programs_close(out);
            return -1;
        }
        unsigned flags = 0;
        if (mode == FB_SCM_AUDIT)
            flags |= SECCOMP_FILTER_FLAG_LOG;
        if (!order_fixed[i] && profile_notifies(p, mode))
            flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
        if (!order_fixed[i])
            out->precompiled = was_pre;
        out->fd[i] = fd;
        out->flags[i] = flags;
        out->n = i + 1;
    }
    return 0;
}

void seccomp_programs_close(struct fb_sc_progs *pr)
{
    for (size_t i = 0; i < FB_SC_NPROG; i++)
        if (pr->fd[i] >= 0) {
            close(pr->fd[i]);
            pr->fd[i] = -1;
        }
    pr->n = 0;
}

int seccomp_export_one(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                       struct sock_filter **prog, size_t *len, struct fb_err *err)
{
    scmp_filter_ctx ctx;
    if (build_ctx(p, is_fixed, mode, &ctx, err) < 0)
        return -1;
    int fd = export_fd(ctx, err);
    seccomp_release(ctx);
    if (fd < 0)
        return -1;
    off_t sz = lseek(fd, 0, SEEK_END);
    *prog = fb_xmalloc((size_t)sz);
    ssize_t r = pread(fd, *prog, (size_t)sz, 0);
    close(fd);
    if (r != sz) {
        free(*prog);
        *prog = NULL;
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: reading the exported filter");
    }
    *len = (size_t)sz / sizeof(struct sock_filter);
    return 0;
}

int seccomp_dump(const struct fb_policy *p, enum fb_sc_mode mode, int fd, struct fb_err *err)
{
    static const bool order_fixed[2] = {true, false};
    for (size_t i = 0; i < 2; i++) {
        scmp_filter_ctx ctx;
        if (build_ctx(p, order_fixed[i], mode, &ctx, err) < 0)
            return -1;
        dprintf(fd, "# filter %zu of 2 (loaded %s): the %s filter\n", i + 1,
                i ? "last" : "first", order_fixed[i] ? "fixed" : "profile");
        int rc = seccomp_export_pfc(ctx, fd);
        seccomp_release(ctx);
        if (rc < 0)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: %s", strerror(-rc));
    }
    return 0;
}

/* ---- the key of the build-time table ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

uint64_t seccomp_policy_key(const struct fb_policy *p)
{
    const struct fb_seccomp *s = &p->seccomp;
    uint64_t h = 0xcbf29ce484222325ull;
    int32_t hdr[3] = {s->enabled, (int32_t)s->default_action,
                      s->default_action == FB_SC_ERRNO ? s->default_errno : 0};
    h = fnv(h, hdr, sizeof hdr);
    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        h = fnv(h, r->name, strlen(r->name) + 1);
        int32_t rh[3] = {(int32_t)r->action, r->action == FB_SC_ERRNO ? r->errno_val : 0,
                         (int32_t)r->nargs};
        h = fnv(h, rh, sizeof rh);
        for (unsigned k = 0; k < r->nargs && k < 6; k++) {
            uint64_t a[4] = {r->args[k].index, (uint64_t)r->args[k].op, r->args[k].value,
                             r->args[k].op == FB_SC_MASKED_EQ ? r->args[k].mask : 0};
            h = fnv(h, a, sizeof a);
        }
    }
    return h;
}
