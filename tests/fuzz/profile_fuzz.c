/* profile_fuzz.c — libFuzzer target for the profile parser and the seccomp
 * compiler (make fuzz; a short run is part of make check).
 *
 * For each input:
 *   - loading it either fails with one line that names the profile, or
 *     succeeds;
 *   - a loaded profile compiles, in every mode, to a BPF program that makes
 *     exactly the decisions seccomp_eval() makes from the rule list, on
 *     system calls and arguments chosen around the profile's own values
 *     (bpf_run.h runs the program in user space);
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
    switch (rnd() % 11) {
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
    default: return rnd();
    }
}

/* One test input: for rule r (NULL: anything), or a random syscall. */
static void make_data(struct seccomp_data *d, uint32_t arch, const struct fb_sc_rule *r)
{
    memset(d, 0, sizeof *d);
    d->arch = arch;
    int nr = r ? seccomp_syscall_nr(r->name) : -1;
    switch (rnd() % 8) {
    case 0: d->nr = (int)(rnd() % 480); break;
    case 1: d->nr = (int)(0x40000000u + rnd() % 600); break;
    case 2: d->nr = rnd() % 2 ? -1 : (int)(460 + rnd() % 20); break;
    default: d->nr = nr >= 0 ? nr : (int)(rnd() % 480); break;
    }
    for (int k = 0; k < 6; k++)
        d->args[k] = rnd() % 4 ? 0 : rnd();
    if (r)
        for (unsigned k = 0; k < r->nargs; k++)
            d->args[r->args[k].index] =
                near(rnd() % 2 ? r->args[k].value : r->args[k].value & r->args[k].mask);
}

static void compare_modes(const struct fb_policy *p)
{
    static const enum fb_sc_mode modes[] = {FB_SCM_ENFORCE, FB_SCM_LOG, FB_SCM_LEARN, FB_SCM_AUDIT};
    uint32_t arch = seccomp_arch_native();
    for (size_t m = 0; m < sizeof modes / sizeof *modes; m++) {
        struct fb_sc_prog *g = NULL;
        struct fb_err err = {0};
        CHECK(seccomp_compile(p, modes[m], &g, &err) == 0, "compile: %s", err.msg);
        struct sock_filter *ins = NULL;
        size_t n = 0;
        if (seccomp_bpf(g, &ins, &n, &err) < 0) {
            /* only "too large" may fail, and then in every mode alike */
            CHECK(strstr(err.msg, "too large"), "bpf: %s", err.msg);
            seccomp_prog_free(g);
            continue;
        }
        /* Every rule gets a few inputs around its own values, then random ones. */
        size_t nr_rules = p->seccomp.nrules < 4000 ? p->seccomp.nrules : 4000;
        size_t tests = nr_rules * 6 + 200;
        for (size_t t = 0; t < tests; t++) {
            struct seccomp_data d;
            const struct fb_sc_rule *r = t < nr_rules * 6 ? &p->seccomp.rules[t / 6] : NULL;
            make_data(&d, t == tests - 1 ? arch ^ 1 : arch, r);
            uint32_t want = seccomp_eval(g, &d);
            uint32_t got = bpf_run(ins, n, &d);
            CHECK(want == got, "mode %zu nr %d args %llx %llx %llx: eval %#x, bpf %#x", m, d.nr,
                  (unsigned long long)d.args[0], (unsigned long long)d.args[1],
                  (unsigned long long)d.args[2], want, got);
        }
        free(ins);
        seccomp_prog_free(g);
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
