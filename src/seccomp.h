/* seccomp.h — turns policy->seccomp into a BPF filter and loads it; the
 * supervisor's side of user notifications (--seccomp-log, learn) is in
 * scnotify.h.
 *
 * Semantics (docs/profiles.md): the rules are an ordered list; the first rule
 * for the syscall whose conditions all hold decides; otherwise the default
 * action. Before the profile's rules come fixed ones that no profile can
 * change: non-native ABIs (i386, x32) are killed, clone3 fails with ENOSYS
 * (libc falls back to clone, whose flags a filter can see), clone/unshare
 * with a namespace flag, ioctl TIOCSTI/TIOCLINUX, and making set-user-ID or
 * set-group-ID files (chmod, creating with such a mode) fail with EPERM,
 * openat2 (whose mode a filter cannot see) and syscalls newer than this build
 * knows fail with ENOSYS. */
#ifndef FB_SECCOMP_H
#define FB_SECCOMP_H

#include "policy.h"

#include <linux/filter.h>
#include <linux/seccomp.h>

/* How the profile's denials are turned into the filter. */
enum fb_sc_mode {
    FB_SCM_ENFORCE, /* as written */
    FB_SCM_LOG,     /* denials (errno) and "log" rules become user notifications;
                       the supervisor answers with the same errno and counts */
    FB_SCM_LEARN,   /* every denial and kill becomes a user notification that
                       the supervisor lets through ("continue") and records */
    FB_SCM_AUDIT,   /* denials also go to the kernel audit log (no supervisor) */
};

/* A compiled filter: the flattened first-match rule list. */
struct fb_sc_prog;

/* Compile p->seccomp (fixed rules first) for mode. Errors name the rule. */
int seccomp_compile(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_prog **out,
                    struct fb_err *err);
void seccomp_prog_free(struct fb_sc_prog *prog);

/* The decision the filter makes for d (SECCOMP_RET_* with data), computed
 * from the rule list directly: the reference the BPF is tested against, and
 * how the supervisor learns which errno a notified denial stands for. */
uint32_t seccomp_eval(const struct fb_sc_prog *prog, const struct seccomp_data *d);

/* The BPF program for prog (malloc'ed array of *n instructions). */
int seccomp_bpf(const struct fb_sc_prog *prog, struct sock_filter **insns, size_t *n,
                struct fb_err *err);

/* Does prog contain user-notification actions (needs a listener)? */
bool seccomp_prog_notifies(const struct fb_sc_prog *prog);

/* For learn mode: bit i is set when some rule of the policy for syscall nr
 * has a condition on argument i (the "argument class" learned rules keep). */
unsigned seccomp_arg_classes(const struct fb_policy *p, int nr);
/* Is argument idx of syscall name compared on its low 32 bits only (the
 * kernel declares it int or unsigned int)? */
bool seccomp_arg_is32(const char *name, unsigned idx);

/* Build the filter for the mode the policy asks for and load it into the
 * calling thread (no_new_privs must be set). In run mode pass the control
 * socket as ctl: when the filter needs a supervisor (--seccomp-log, learn)
 * the listener fd is sent over it (FB_MSG_SECCOMP_FD) before this returns.
 * With ctl < 0, --seccomp-log falls back to the kernel audit log and learn
 * mode is an error. */
int seccomp_apply_ctl(const struct fb_policy *p, int ctl, struct fb_err *err);
/* seccomp_apply_ctl(p, -1, err). */
int seccomp_apply(const struct fb_policy *p, struct fb_err *err);

/* Check every rule: known syscall, errno range, argument indices, values
 * that fit the argument; conditions fluebox's own init needs are allowed.
 * Messages name the rule: "seccomp.rules[3].name: unknown syscall \"opn\"". */
int seccomp_validate(const struct fb_policy *p, struct fb_err *err);

/* Syscall names and numbers of the native architecture, including a few
 * newer than libseccomp's table. nr: -1 unknown name, -2 known but not on
 * this architecture. name: NULL when unknown. */
int seccomp_syscall_nr(const char *name);
const char *seccomp_syscall_name(int nr, char *buf, size_t cap);

/* Symbolic constants used in profiles (AF_INET, TIOCSTI, CLONE_NEWUSER,
 * PR_SET_NAME, ...): "A|B" sums. Returns 0 or -1. */
int seccomp_const_parse(const char *s, uint64_t *out);
/* A name for value v as argument idx of syscall name (e.g. "AF_INET" for
 * socket's 0), or NULL. */
const char *seccomp_const_name(const char *syscall, unsigned idx, uint64_t v);

/* What the supervisor saw through user notifications (report, learn). */
#define FB_SC_SEEN_MAX 128
struct fb_sc_seen {
    int nr;
    char name[32];
    unsigned class_args; /* bitmask: arguments that tell this entry's class */
    uint64_t args[6];    /* the first call's arguments (numbers only) */
    int64_t count;
    int errno_val;       /* what the caller got; 0 = let through (learn, log) */
    int pid;             /* first caller, as the supervisor sees it */
    char comm[16];
};

struct fb_sc_report {
    bool active;          /* notifications were handled: the counts are exact */
    int64_t total;        /* every notified call */
    int64_t denied;       /* of which answered with an errno */
    size_t n;
    bool truncated;       /* more distinct entries than FB_SC_SEEN_MAX */
    struct fb_sc_seen seen[FB_SC_SEEN_MAX];
};

#endif
