/* profile_fuzz.c — libFuzzer target for the profile parser and the seccomp
 * filters libseccomp makes of it (make fuzz; a short run is part of make
 * check).
 *
 * For each input:
 *   - loading it either fails with one line that names the profile, or
 *     succeeds;
 *   - for a loaded profile, in every mode, libseccomp's exported programs
 *     (the fixed filter and the profile filter, run in user space by the
 *     test interpreter in bpf_run.h) answer every call exactly as the rules
 *     mean (seccomp_fixed_decision / seccomp_profile_decision, computed from
 *     the rules without any BPF), on system calls and arguments chosen
 *     around the profile's own values: the check that fluebox's translation
 *     of the rules (ranges to aligned blocks, 32-bit arguments, lists, the
 *     --seccomp-log merge) and libseccomp together keep the documented
 *     meaning, the one libseccomp 2.5 breaks when given ranges across rules;
 *   - with both filters, the kernel's choice between them (the stricter; on
 *     equal errnos the later loaded) is seccomp_decision();
 *   - `profile show` output loads again into the same policy (round trip).
 * Any difference aborts, which libFuzzer reports as a crash. */
#include "profile.h"
#include "seccomp.h"

#include "bpf_run.h"

#include <seccomp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHECK(c, ...)                                                                    \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "profile_fuzz: check failed: %s: ", #c);                    \
            fprintf(stderr, __VA_ARGS__);                                                \
            fputc('\n', stderr);                                                         \
            abort();                                                                     \
        }                                                                                \
    } while (0)

static uint64_t rng_state;

static uint64_t rnd(void)
{
    /* splitmix64: deterministic per input, so a crash reproduces */
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/* A value near v: v itself, its neighbours (in each 32-bit half), v with
 * high bits, extremes, random. */
static uint64_t near(uint64_t v)
{
    switch (rnd() % 12) {
    case 0: return v;
    case 1: return v + 1;
    case 2: return v - 1;
    case 3: return v | (1ull << 32);
    case 4: return v ^ (1ull << (rnd() % 64));
    case 5: return 0xffffffffull;
    case 6: return (uint64_t)-1;
    case 7: return v + (1ull << 32);
    case 8: return v - (1ull << 32);
    case 9: return v & 0xffffffffull;
    case 10: return v | 0xffffffff00000000ull; /* sign-extended */
    default: return rnd();
    }
}

/* Values the fixed rules look at: namespace flags, set-id modes, creation
 * flags, TIOCSTI, personalities. */
static uint64_t fixed_value(void)
{
    static const uint64_t v[] = {0x10000000, 0x20000, 0x80, 0x4000000, 04000, 02000, 04755, 0100,
                                 020200000, 0x5412, 0x541c, 0x5413, 0, 8, 0xffffffff, 0x0040008,
                                 0x0020000, 1, 0x41};
    uint64_t x = v[rnd() % (sizeof v / sizeof *v)];
    return rnd() % 3 ? x : near(x);
}

/* One test input: for rule r (NULL: anything), or a random syscall. */
static void make_data(struct seccomp_data *d, uint32_t arch, const struct fb_sc_rule *r)
{
    static const char *const fixed_calls[] = {
        "clone", "unshare", "ioctl", "chmod", "fchmod", "fchmodat", "fchmodat2", "creat",
        "mknod", "mknodat", "open", "openat", "personality", "clone3", "openat2"};
    memset(d, 0, sizeof *d);
    d->arch = arch;
    int nr = r ? seccomp_syscall_nr(r->name) : -1;
    switch (rnd() % 10) {
    case 0: d->nr = (int)(rnd() % 480); break;
    case 1: d->nr = (int)(0x40000000u + rnd() % 600); break;
    case 2: d->nr = rnd() % 2 ? -1 : (int)(460 + rnd() % 160); break;
    case 3: d->nr = seccomp_syscall_nr(fixed_calls[rnd() % (sizeof fixed_calls / sizeof *fixed_calls)]); break;
    default: d->nr = nr >= 0 ? nr : (int)(rnd() % 480); break;
    }
    for (int k = 0; k < 6; k++)
        d->args[k] = rnd() % 3 ? 0 : rnd() % 2 ? fixed_value() : rnd();
    if (r)
        for (unsigned k = 0; k < r->nargs; k++)
            d->args[r->args[k].index] =
                near(rnd() % 2 ? r->args[k].value : r->args[k].value & r->args[k].mask);
}

static const char *syscall_name(int nr, char *buf, size_t cap)
{
    return nr >= 0 ? seccomp_syscall_name(nr, buf, cap) : NULL;
}

/* A profile action in mode, as the profile filter returns it. */
static uint32_t in_mode(uint32_t a, enum fb_sc_mode m)
{
    uint32_t act = a & SECCOMP_RET_ACTION_FULL;
    if (m == FB_SCM_LOG && (act == SECCOMP_RET_ERRNO || act == SECCOMP_RET_LOG))
        return SECCOMP_RET_USER_NOTIF;
    if (m == FB_SCM_LEARN && (act == SECCOMP_RET_ERRNO || act == SECCOMP_RET_KILL_PROCESS))
        return SECCOMP_RET_USER_NOTIF;
    if (m == FB_SCM_LEARN && act == SECCOMP_RET_LOG)
        return SECCOMP_RET_ALLOW;
    return a;
}

static bool denies(uint32_t a)
{
    a &= SECCOMP_RET_ACTION_FULL;
    return a != SECCOMP_RET_ALLOW && a != SECCOMP_RET_LOG;
}

/* What each program must answer for d in mode m (docs/profiles.md and the
 * header comment of seccomp.c). */
static void expected(const struct fb_policy *p, enum fb_sc_mode m, const struct seccomp_data *d,
                     uint32_t *fixed, uint32_t *prof)
{
    uint32_t f = seccomp_fixed_decision(d);
    uint32_t r = seccomp_profile_decision(p, d);
    *fixed = (m == FB_SCM_LOG && f == (SECCOMP_RET_ERRNO | EPERM)) ? SECCOMP_RET_USER_NOTIF : f;
    if (f == SECCOMP_RET_KILL_PROCESS) {
        *prof = SECCOMP_RET_KILL_PROCESS; /* another ABI: both kill */
        return;
    }
    char buf[64];
    const char *name = syscall_name(d->nr, buf, sizeof buf);
    if (f == (SECCOMP_RET_ERRNO | ENOSYS)) {
        bool always = name && (!strcmp(name, "clone3") || !strcmp(name, "openat2"));
        /* Unreviewed numbers: in the profile filter only when its default
         * denies (there are no rules for them). */
        uint32_t def = in_mode(r, m);
        *prof = always || denies(def) ? f : def;
        return;
    }
    if (m == FB_SCM_LOG && f == (SECCOMP_RET_ERRNO | EPERM)) {
        *prof = SECCOMP_RET_USER_NOTIF; /* the fixed EPERM rules, merged */
        return;
    }
    *prof = in_mode(r, m);
}

/* The kernel's choice: the lower action value (signed) wins; on a tie, the
 * later filter's. */
static uint32_t kernel_choice(uint32_t first, uint32_t last)
{
    return (int32_t)(first & SECCOMP_RET_ACTION_FULL) < (int32_t)(last & SECCOMP_RET_ACTION_FULL)
               ? first
               : last;
}

struct progs {
    struct sock_filter *ins[2]; /* fixed, profile */
    size_t n[2];
};

static struct progs fixed_cache[FB_SCM_COUNT];

static void compare_modes(const struct fb_policy *p)
{
    static const enum fb_sc_mode modes[] = {FB_SCM_ENFORCE, FB_SCM_LOG, FB_SCM_LEARN};
    uint32_t arch = seccomp_arch_native();
    for (size_t mi = 0; mi < sizeof modes / sizeof *modes; mi++) {
        enum fb_sc_mode m = modes[mi];
        struct fb_err err = {0};
        struct progs *fx = &fixed_cache[m];
        if (!fx->ins[0])
            CHECK(seccomp_export_one(p, true, m, &fx->ins[0], &fx->n[0], &err) == 0, "fixed: %s",
                  err.msg);
        struct sock_filter *ins = NULL;
        size_t n = 0;
        if (seccomp_export_one(p, false, m, &ins, &n, &err) < 0) {
            /* a filter longer than the kernel takes, or (merged with the
             * fixed rules for --seccomp-log) too many comparisons */
            CHECK(strstr(err.msg, "instructions") || strstr(err.msg, "comparisons"),
                  "profile filter: %s", err.msg);
            continue;
        }
        /* Every rule gets a few inputs around its own values, then random ones. */
        size_t nr_rules = p->seccomp.nrules < 2000 ? p->seccomp.nrules : 2000;
        size_t tests = nr_rules * 6 + 300;
        for (size_t t = 0; t < tests; t++) {
            struct seccomp_data d;
            const struct fb_sc_rule *r = t < nr_rules * 6 ? &p->seccomp.rules[t / 6] : NULL;
            make_data(&d, t == tests - 1 ? arch ^ 1 : arch, r);
            uint32_t want_f, want_p;
            expected(p, m, &d, &want_f, &want_p);
            uint32_t got_f = bpf_run(fx->ins[0], fx->n[0], &d);
            uint32_t got_p = bpf_run(ins, n, &d);
            CHECK(got_f == want_f && got_p == want_p,
                  "mode %d nr %d args %llx %llx %llx %llx: fixed %#x (want %#x), profile %#x "
                  "(want %#x)",
                  m, d.nr, (unsigned long long)d.args[0], (unsigned long long)d.args[1],
                  (unsigned long long)d.args[2], (unsigned long long)d.args[3], got_f, want_f,
                  got_p, want_p);
            if (m == FB_SCM_ENFORCE)
                CHECK(kernel_choice(got_f, got_p) == seccomp_decision(p, &d),
                      "nr %d: the kernel would answer %#x, seccomp_decision says %#x", d.nr,
                      kernel_choice(got_f, got_p), seccomp_decision(p, &d));
        }
        free(ins);
    }
}

static bool same_str(const char *a, const char *b)
{
    return (!a && !b) || (a && b && !strcmp(a, b));
}

static void compare_policies(const struct fb_policy *a, const struct fb_policy *b, const char *js)
{
    CHECK(a->seccomp.nrules == b->seccomp.nrules, "rules %zu vs %zu\n%s", a->seccomp.nrules,
          b->seccomp.nrules, js);
    CHECK(a->seccomp.default_action == b->seccomp.default_action &&
              (a->seccomp.default_action != FB_SC_ERRNO ||
               a->seccomp.default_errno == b->seccomp.default_errno),
          "default");
    for (size_t i = 0; i < a->seccomp.nrules; i++) {
        const struct fb_sc_rule *x = &a->seccomp.rules[i], *y = &b->seccomp.rules[i];
        CHECK(!strcmp(x->name, y->name) && x->action == y->action && x->nargs == y->nargs &&
                  (x->action != FB_SC_ERRNO || x->errno_val == y->errno_val) &&
                  same_str(x->comment, y->comment),
              "rule %zu (%s)", i, x->name);
        for (unsigned k = 0; k < x->nargs; k++)
            CHECK(x->args[k].index == y->args[k].index && x->args[k].op == y->args[k].op &&
                      x->args[k].value == y->args[k].value &&
                      (x->args[k].op != FB_SC_MASKED_EQ || x->args[k].mask == y->args[k].mask),
                  "rule %zu arg %u", i, k);
    }
    CHECK(seccomp_policy_key(a) == seccomp_policy_key(b), "key");
    CHECK(a->limits.mem == b->limits.mem && a->limits.pids == b->limits.pids &&
              a->limits.disk == b->limits.disk && a->limits.nofile == b->limits.nofile &&
              a->limits.fsize == b->limits.fsize && a->limits.timeout_ms == b->limits.timeout_ms &&
              a->limits.cpus == b->limits.cpus && a->limits.require == b->limits.require,
          "limits");
    CHECK(a->net == b->net && a->net_host_allowed == b->net_host_allowed && a->nallow == b->nallow,
          "network");
    CHECK(a->namespaces == b->namespaces && a->uid == b->uid && a->gid == b->gid &&
              a->workspace_ro == b->workspace_ro && a->bind_interpreter == b->bind_interpreter,
          "identity");
    CHECK(a->nmounts == b->nmounts && a->nenv_set == b->nenv_set && a->nenv_pass == b->nenv_pass,
          "lists");
    for (size_t i = 0; i < a->nmounts; i++)
        CHECK(a->mounts[i].kind == b->mounts[i].kind && same_str(a->mounts[i].src, b->mounts[i].src) &&
                  !strcmp(a->mounts[i].dst, b->mounts[i].dst) && a->mounts[i].size == b->mounts[i].size,
              "mount %zu", i);
    for (size_t i = 0; i < a->nenv_set; i++)
        CHECK(!strcmp(a->env_set[i], b->env_set[i]), "env %zu", i);
    if (a->namespaces & FB_NS_UTS)
        CHECK(same_str(a->hostname, b->hostname), "hostname");
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < size; i++)
        h = (h ^ data[i]) * 1099511628211ull;
    rng_state = h;

    struct fb_policy p;
    struct fb_err err = {0};
    policy_init(&p);
    if (profile_load_text(&p, "fuzz.json", (const char *)data, size, &err) < 0) {
        CHECK(err.msg[0] && !strchr(err.msg, '\n') && !strncmp(err.msg, "fuzz.json", 9),
              "error message: %s", err.msg);
        policy_free(&p);
        return 0;
    }
    compare_modes(&p);

    char *js = profile_to_json(&p);
    struct fb_policy q;
    policy_init(&q);
    struct fb_err e2 = {0};
    int rc = profile_load_text(&q, "fuzz.json", js, strlen(js), &e2);
    CHECK(rc == 0, "show output does not load: %s\n%s", e2.msg, js);
    compare_policies(&p, &q, js);
    free(js);
    policy_free(&q);
    policy_free(&p);
    return 0;
}
