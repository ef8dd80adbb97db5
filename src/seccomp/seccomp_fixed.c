/* seccomp_fixed.c — the fixed rules, which no profile can change (the
 * header comment of seccomp.c says which and why): their table, the fixed
 * filter made of them, their meaning computed directly
 * (seccomp_fixed_decision) and how they join the profile filter (the ENOSYS
 * rules always, the EPERM ones as notifications under --seccomp-log). */
#include "seccomp_int.h"

#include <fcntl.h>
#include <pthread.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/stat.h>

#define NS_FLAGS                                                                         \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |         \
     CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

/* Syscall numbers from LAST_KNOWN_NR + 1 to this one fail with ENOSYS. The
 * fixed filter names each one (libseccomp has no ranges of syscall
 * numbers, and every rule makes its compile slower: these 130 cost about
 * 0.3 ms in the fixed filter, the next 400 would cost 3 ms more). New
 * syscalls get the next free number, seven or eight a year since Linux 5.1,
 * so this covers the next fifteen years of kernels; numbers above the
 * kernel's own last syscall fail with ENOSYS anyway. */
#define RAW_ENOSYS_LAST 599

/* ---- the fixed rules ---- */

enum fx_kind {
    FX_ALL,    /* every call */
    FX_BITS,   /* any of bits set in arg */
    FX_BITS2,  /* any of bits set in arg, and any of bits2 in arg2 */
    FX_IN,     /* arg (32-bit) is one of set */
    FX_NOT_IN, /* arg (32-bit) is none of set */
};

struct fixed {
    const char *name;
    enum fx_kind kind;
    int err;
    unsigned arg;
    uint64_t bits;
    unsigned arg2;
    uint64_t bits2;
    const uint64_t *set;
    size_t nset;
};

#ifndef __O_TMPFILE
#define __O_TMPFILE (O_TMPFILE & ~O_DIRECTORY)
#endif
#define SETID_BITS ((uint64_t)(S_ISUID | S_ISGID))
#define CREATING ((uint64_t)(O_CREAT | __O_TMPFILE))

static const uint64_t tty_inject[] = {TIOCSTI, TIOCLINUX};
/* Sorted. PER_LINUX32 is what linux32/setarch use for 32-bit builds; no
 * flags (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ... weaken
 * the process against exploits, UNAME26 fakes the kernel version). */
static const uint64_t personas[] = {PER_LINUX, PER_LINUX32, 0xffffffffu};

static const struct fixed fixed[] = {
    {"clone3", FX_ALL, ENOSYS, 0, 0, 0, 0, NULL, 0},
    {"openat2", FX_ALL, ENOSYS, 0, 0, 0, 0, NULL, 0},
    {"clone", FX_BITS, EPERM, 0, NS_FLAGS, 0, 0, NULL, 0},
    {"unshare", FX_BITS, EPERM, 0, NS_FLAGS, 0, 0, NULL, 0},
    {"ioctl", FX_IN, EPERM, 1, 0, 0, 0, tty_inject, FB_ARRAY_LEN(tty_inject)},
    {"chmod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"fchmod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"fchmodat", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"fchmodat2", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"creat", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"mknod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"mknodat", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"open", FX_BITS2, EPERM, 1, CREATING, 2, SETID_BITS, NULL, 0},
    {"openat", FX_BITS2, EPERM, 2, CREATING, 3, SETID_BITS, NULL, 0},
    {"personality", FX_NOT_IN, EPERM, 0, 0, 0, 0, personas, FB_ARRAY_LEN(personas)},
};

static int fixed_nrs[FB_ARRAY_LEN(fixed)];
static uint32_t native_arch;
static bool x32_kill;     /* x86_64: numbers with the x32 bit are another ABI */
static bool raw_enosys;   /* the numbering above LAST_KNOWN_NR is known */
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

static void fixed_init(void)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        fixed_nrs[i] = seccomp_syscall_nr(fixed[i].name);
    native_arch = seccomp_arch_native();
    x32_kill = native_arch == SCMP_ARCH_X86_64;
    raw_enosys = newer_table_applies();
}

void fixed_ready(void) { pthread_once(&fixed_once, fixed_init); }

static bool in_set(const struct fixed *fx, uint64_t x)
{
    x &= 0xffffffffu;
    for (size_t i = 0; i < fx->nset; i++)
        if (fx->set[i] == x)
            return true;
    return false;
}

static bool fixed_matches(const struct fixed *fx, const struct seccomp_data *d)
{
    uint64_t x = d->args[fx->arg];
    switch (fx->kind) {
    case FX_ALL: return true;
    case FX_BITS: return x & fx->bits;
    case FX_BITS2: return (x & fx->bits) && (d->args[fx->arg2] & fx->bits2);
    case FX_IN: return in_set(fx, x);
    case FX_NOT_IN: return !in_set(fx, x);
    }
    return false;
}

/* The calls fx denies, as libseccomp rules with action act. */
static void fixed_rules(const struct fixed *fx, int nr, uint32_t act, struct sfilter *f)
{
    static __thread struct term t[MAX_TERMS];
    switch (fx->kind) {
    case FX_ALL:
        sf_add(f, nr, act);
        return;
    case FX_BITS: {
        /* "any of bits" as rules that exclude each other: the lowest set
         * bit of them is b */
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            srule_and(sf_add(f, nr, act), fx->arg, (struct term){below | bit, bit});
            below |= bit;
        }
        return;
    }
    case FX_BITS2: {
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            uint64_t below2 = 0;
            for (int c = 0; c < 64; c++) {
                uint64_t bit2 = (uint64_t)1 << c;
                if (!(fx->bits2 & bit2))
                    continue;
                struct srule *r = sf_add(f, nr, act);
                srule_and(r, fx->arg, (struct term){below | bit, bit});
                srule_and(r, fx->arg2, (struct term){below2 | bit2, bit2});
                below2 |= bit2;
            }
            below |= bit;
        }
        return;
    }
    case FX_IN:
        for (size_t i = 0; i < fx->nset; i++)
            srule_and(sf_add(f, nr, act), fx->arg, (struct term){0xffffffffu, fx->set[i]});
        return;
    case FX_NOT_IN: {
        /* The gaps between the (sorted) allowed values, as aligned blocks. */
        size_t n = 0;
        uint64_t lo = 0;
        for (size_t i = 0; i <= fx->nset; i++) {
            uint64_t hi = i < fx->nset ? fx->set[i] : (uint64_t)0x100000000;
            if (hi > lo)
                n = range_terms(lo, hi - 1, 0xffffffffu, t, n);
            lo = i < fx->nset ? fx->set[i] + 1 : lo;
        }
        for (size_t i = 0; i < n; i++)
            srule_and(sf_add(f, nr, act), fx->arg, t[i]);
        return;
    }
    }
}

/* One way for a call to be outside a fixed rule: all of its terms hold. */
struct alt {
    unsigned n;
    unsigned arg[2];
    struct term t[2];
};

static void alt_one(struct alt *a, unsigned arg, struct term t)
{
    a->n = 1;
    a->arg[0] = arg;
    a->t[0] = t;
}

/* The calls fx does not deny, as alternatives that exclude each other (so
 * that the rules they make never overlap: libseccomp 2.5 leaks memory on
 * rules of one action that overlap). Returns how many. */
static size_t fixed_complement(const struct fixed *fx, struct alt *out)
{
    size_t n = 0;
    switch (fx->kind) {
    case FX_ALL:
        return 0;
    case FX_BITS:
        alt_one(&out[n++], fx->arg, (struct term){fx->bits, 0});
        return n;
    case FX_BITS2: {
        /* none of bits; or the first set bit is b, and none of bits2 */
        alt_one(&out[n++], fx->arg, (struct term){fx->bits, 0});
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            struct alt *a = &out[n++];
            a->n = 2;
            a->arg[0] = fx->arg;
            a->t[0] = (struct term){below | bit, bit};
            a->arg[1] = fx->arg2;
            a->t[1] = (struct term){fx->bits2, 0};
            below |= bit;
        }
        return n;
    }
    case FX_IN: {
        static __thread struct term t[MAX_TERMS];
        uint64_t lo = 0;
        uint64_t sorted[8];
        size_t ns = fx->nset < 8 ? fx->nset : 8, nt = 0;
        memcpy(sorted, fx->set, ns * sizeof *sorted);
        for (size_t i = 1; i < ns; i++)
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                uint64_t x = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = x;
            }
        for (size_t i = 0; i <= ns; i++) {
            uint64_t hi = i < ns ? sorted[i] : (uint64_t)0x100000000;
            if (hi > lo)
                nt = range_terms(lo, hi - 1, 0xffffffffu, t, nt);
            lo = i < ns ? sorted[i] + 1 : lo;
        }
        for (size_t i = 0; i < nt; i++)
            alt_one(&out[n++], fx->arg, t[i]);
        return n;
    }
    case FX_NOT_IN:
        for (size_t i = 0; i < fx->nset; i++)
            alt_one(&out[n++], fx->arg, (struct term){0xffffffffu, fx->set[i]});
        return n;
    }
    return 0;
}

static uint32_t fixed_act(const struct fixed *fx, enum fb_sc_mode mode)
{
    if (fx->err == EPERM && mode == FB_SCM_LOG)
        return SCMP_ACT_NOTIFY;
    return SCMP_ACT_ERRNO((uint32_t)fx->err);
}

void fixed_filter(enum fb_sc_mode mode, struct sfilter *f)
{
    fixed_ready();
    f->def = SCMP_ACT_ALLOW;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        if (fixed_nrs[i] >= 0)
            fixed_rules(&fixed[i], fixed_nrs[i], fixed_act(&fixed[i], mode), f);
    if (raw_enosys)
        for (int nr = LAST_KNOWN_NR + 1; nr <= RAW_ENOSYS_LAST; nr++)
            sf_add(f, nr, SCMP_ACT_ERRNO(ENOSYS));
}

uint32_t fixed_native_arch(void)
{
    fixed_ready();
    return native_arch;
}

bool fixed_other_abi(const struct seccomp_data *d)
{
    fixed_ready();
    uint32_t nr = (uint32_t)d->nr;
    return d->arch != native_arch || (x32_kill && nr >= 0x40000000u && nr != 0xffffffffu);
}

uint32_t seccomp_fixed_decision(const struct seccomp_data *d)
{
    fixed_ready();
    uint32_t nr = (uint32_t)d->nr;
    if (fixed_other_abi(d))
        return SECCOMP_RET_KILL_PROCESS;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        if (fixed_nrs[i] >= 0 && (uint32_t)fixed_nrs[i] == nr && fixed_matches(&fixed[i], d))
            return SECCOMP_RET_ERRNO | (uint32_t)fixed[i].err;
    if (raw_enosys && nr > LAST_KNOWN_NR && nr <= RAW_ENOSYS_LAST)
        return SECCOMP_RET_ERRNO | ENOSYS;
    return SECCOMP_RET_ALLOW;
}

/* --seccomp-log: the fixed EPERM rules join the profile filter as
 * notifications. For each such syscall, the profile's rules keep their
 * action only on calls the fixed rule allows (each is intersected with the
 * complement's alternatives, so they stay apart from the new rules), and
 * the calls the fixed rule denies notify. */
void merge_fixed_notify(struct sfilter *f)
{
    static __thread struct alt ca[MAX_TERMS];
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++) {
        const struct fixed *fx = &fixed[i];
        int nr = fixed_nrs[i];
        if (nr < 0 || fx->err != EPERM)
            continue;
        bool covered = false;
        for (size_t k = 0; k < f->n; k++)
            if (f->r[k].nr == nr && !f->r[k].n && f->r[k].act == SCMP_ACT_NOTIFY)
                covered = true;
        if (covered)
            continue;
        size_t nc = fixed_complement(fx, ca);
        struct sfilter out = {.def = f->def};
        for (size_t k = 0; k < f->n; k++) {
            const struct srule *r = &f->r[k];
            if (r->nr != nr) {
                *sf_add(&out, r->nr, r->act) = *r;
                continue;
            }
            for (size_t a = 0; a < nc; a++) {
                struct srule *s = sf_add(&out, r->nr, r->act);
                *s = *r;
                bool ok = true;
                for (unsigned j = 0; j < ca[a].n && ok; j++)
                    ok = srule_and(s, ca[a].arg[j], ca[a].t[j]);
                if (!ok)
                    out.n--;
            }
        }
        fixed_rules(fx, nr, SCMP_ACT_NOTIFY, &out);
        free(f->r);
        *f = out;
    }
}

/* The fixed ENOSYS rules join the profile filter, replacing the profile's
 * rules for those syscalls: the profile filter is loaded last, and where
 * both filters answer with an errno the kernel takes the last one's, but
 * these must stay ENOSYS whatever the profile says (libc falls back to
 * clone and openat only on ENOSYS, and so do programs trying a syscall this
 * kernel may not have). The unreviewed numbers only matter when the
 * profile's default denies: otherwise the fixed filter's ENOSYS stands. */
void merge_fixed_enosys(struct sfilter *f)
{
    bool def_denies = f->def != SCMP_ACT_ALLOW && f->def != SCMP_ACT_LOG;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++) {
        int nr = fixed_nrs[i];
        if (nr < 0 || fixed[i].err != ENOSYS)
            continue;
        size_t o = 0;
        for (size_t k = 0; k < f->n; k++)
            if (f->r[k].nr != nr)
                f->r[o++] = f->r[k];
        f->n = o;
        fixed_rules(&fixed[i], nr, SCMP_ACT_ERRNO(ENOSYS), f);
    }
    if (raw_enosys && def_denies)
        for (int nr = LAST_KNOWN_NR + 1; nr <= RAW_ENOSYS_LAST; nr++)
            sf_add(f, nr, SCMP_ACT_ERRNO(ENOSYS));
}
