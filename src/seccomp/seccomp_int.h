/* seccomp_int.h — what the files of the seccomp filters share (seccomp.c
 * and seccomp_*.c): the syscall numbering's limits, the terms and the
 * libseccomp rules made of them, the fixed rules, the profile filter and
 * the compiled programs. Not for other files: they use seccomp.h. */
#ifndef FB_SECCOMP_INT_H
#define FB_SECCOMP_INT_H

#include "seccomp.h"

#include <linux/sched.h>
#include <seccomp.h>
#include <sys/ioctl.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif
#ifndef SECCOMP_FILTER_FLAG_LOG
#define SECCOMP_FILTER_FLAG_LOG (1UL << 1)
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

/* The last syscall number this build knows; anything above is answered
 * ENOSYS, as an older kernel would, so libc falls back and a deny list is
 * never asked to judge a syscall nobody has reviewed (the table of newer
 * syscalls in seccomp_names.c ends with it). */
#define LAST_KNOWN_NR 469

/* seccomp_names.c: does the table of syscalls newer than libseccomp hold
 * for this architecture? */
bool newer_table_applies(void);

/* ---- terms: seccomp_terms.c ---- */

/* A condition on one argument is a union of terms: (arg & mask) == val. */
struct term {
    uint64_t mask, val;
};

/* A range of 64-bit values is covered by at most 2 * 64 aligned blocks. */
#define MAX_TERMS 130
/* At most this many libseccomp rules come from one profile rule (the
 * product of its conditions' term counts: one range), and from all the
 * rules of one syscall: libseccomp's time grows faster than the number of
 * rules (seconds for ten thousand comparisons of several arguments). */
#define MAX_EXPAND 128
#define MAX_PER_SYSCALL 1024

/* One libseccomp rule: all its comparisons hold. */
struct cmp {
    unsigned arg;
    uint64_t mask, val;
};

struct srule {
    int nr;
    uint32_t act; /* SCMP_ACT_* */
    unsigned n;
    struct cmp c[6];
};

/* One filter as libseccomp will get it. */
struct sfilter {
    uint32_t def;
    struct srule *r;
    size_t n, cap;
};

/* Aligned blocks covering [lo, hi] (lo <= hi <= wmask), appended at out[n]. */
size_t range_terms(uint64_t lo, uint64_t hi, uint64_t wmask, struct term *out, size_t n);
/* Does condition a hold for argument value x (as the kernel reads it)? */
bool cond_holds(const struct fb_sc_arg *a, bool is32, uint64_t x);
struct srule *sf_add(struct sfilter *f, int nr, uint32_t act);
/* r and (arg & t.mask) == t.val; false when no call satisfies both. */
bool srule_and(struct srule *r, unsigned arg, struct term t);
bool srules_overlap(const struct srule *a, const struct srule *b);
/* Does every call that matches a match b? */
bool srule_within(const struct srule *a, const struct srule *b);
/* The terms of each condition of rule r; returns the number of libseccomp
 * rules they make (the product), saturating above MAX_EXPAND. */
size_t rule_terms(const struct fb_sc_rule *r, struct term (*t)[MAX_TERMS], size_t *nt);
/* Append rule r's libseccomp rules to f. Returns how many, or -1 when more
 * than MAX_EXPAND. */
long expand_rule(const struct fb_sc_rule *r, int nr, uint32_t act, struct sfilter *f);

/* ---- the fixed rules: seccomp_fixed.c ---- */

/* Resolve the fixed rules' syscall numbers and the architecture (once). */
void fixed_ready(void);
uint32_t fixed_native_arch(void);
/* Is d a call of another ABI than the native one (killed)? */
bool fixed_other_abi(const struct seccomp_data *d);
/* The fixed filter for mode into f. */
void fixed_filter(enum fb_sc_mode mode, struct sfilter *f);
/* The fixed rules in the profile filter f: the ENOSYS ones always, the
 * EPERM ones as notifications under --seccomp-log. */
void merge_fixed_enosys(struct sfilter *f);
void merge_fixed_notify(struct sfilter *f);

/* ---- the profile filter: seccomp_profile.c ---- */

int profile_filter(const struct fb_policy *p, enum fb_sc_mode mode, struct sfilter *f,
                   struct fb_err *err);
/* Does the profile filter of p in mode have notifications (a listener)? */
bool profile_notifies(const struct fb_policy *p, enum fb_sc_mode mode);

/* ---- compiling and the programs: seccomp.c ---- */

/* Build filter (fixed, or p's profile filter) for mode into a libseccomp
 * context. */
int build_ctx(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
              scmp_filter_ctx *ctx, struct fb_err *err);
int new_memfd(struct fb_err *err);
/* libseccomp's program for ctx, written to the (empty) file fd. */
int export_into(scmp_filter_ctx ctx, int fd, struct fb_err *err);
/* The build-time program of a filter, NULL if there is none. */
const struct fb_sc_precompiled *precompiled(bool is_fixed, uint64_t key, int mode);
/* The mode whose program a filter uses. */
int prog_mode(bool is_fixed, enum fb_sc_mode mode);

#endif
