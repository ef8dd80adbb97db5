/* seccomp_terms.c — what libseccomp is given (seccomp_int.h): every
 * condition as "terms", (argument & mask) == value (eq and masked_eq one
 * term, a range or ne the aligned blocks that cover it), a profile rule as
 * the libseccomp rules its terms make, and the operations on those rules
 * the filters and the checks need (and, overlap, inclusion). */
#include "seccomp_int.h"

#include <string.h>

/* ---- terms: what libseccomp is given ---- */

static uint64_t width_mask(bool is32) { return is32 ? 0xffffffffu : ~(uint64_t)0; }

/* Aligned blocks covering [lo, hi] (lo <= hi <= wmask), appended at out[n]. */
size_t range_terms(uint64_t lo, uint64_t hi, uint64_t wmask, struct term *out, size_t n)
{
    for (;;) {
        unsigned k = lo ? (unsigned)__builtin_ctzll(lo) : (wmask == ~(uint64_t)0 ? 64 : 32);
        uint64_t span;
        for (;; k--) {
            span = k >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1;
            if (span <= hi - lo)
                break;
        }
        out[n++] = (struct term){wmask & ~span, lo};
        if (hi - lo == span)
            return n;
        lo += span + 1;
    }
}

/* The terms of one condition on an argument of width wmask; 0 = never holds. */
static size_t cond_terms(const struct fb_sc_arg *a, bool is32, struct term *out)
{
    uint64_t w = width_mask(is32), v = a->value & w;
    switch (a->op) {
    case FB_SC_EQ:
        out[0] = (struct term){w, v};
        return 1;
    case FB_SC_MASKED_EQ:
        out[0] = (struct term){a->mask & w, v & a->mask};
        return 1;
    case FB_SC_NE: {
        /* x != v: x agrees with v above bit k and differs at bit k, for
         * exactly one k. */
        size_t n = 0;
        for (int k = is32 ? 31 : 63; k >= 0; k--) {
            uint64_t m = w & ~(((uint64_t)1 << k) - 1);
            out[n++] = (struct term){m, (v & m) ^ ((uint64_t)1 << k)};
        }
        return n;
    }
    case FB_SC_LT: return v ? range_terms(0, v - 1, w, out, 0) : 0;
    case FB_SC_LE: return range_terms(0, v, w, out, 0);
    case FB_SC_GT: return v < w ? range_terms(v + 1, w, w, out, 0) : 0;
    case FB_SC_GE: return range_terms(v, w, w, out, 0);
    }
    return 0;
}

/* Does condition a hold for argument value x (as the kernel reads it)? */
bool cond_holds(const struct fb_sc_arg *a, bool is32, uint64_t x)
{
    uint64_t w = width_mask(is32), v = a->value & w;
    x &= w;
    switch (a->op) {
    case FB_SC_EQ: return x == v;
    case FB_SC_NE: return x != v;
    case FB_SC_LT: return x < v;
    case FB_SC_LE: return x <= v;
    case FB_SC_GT: return x > v;
    case FB_SC_GE: return x >= v;
    case FB_SC_MASKED_EQ: return (x & a->mask) == (v & a->mask);
    }
    return false;
}

struct srule *sf_add(struct sfilter *f, int nr, uint32_t act)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 128;
        f->r = fb_xrealloc(f->r, f->cap * sizeof *f->r);
    }
    struct srule *r = &f->r[f->n++];
    memset(r, 0, sizeof *r);
    r->nr = nr;
    r->act = act;
    return r;
}

/* r and (arg & t.mask) == t.val; false when no call satisfies both. */
bool srule_and(struct srule *r, unsigned arg, struct term t)
{
    if (!t.mask)
        return true;
    for (unsigned i = 0; i < r->n; i++) {
        struct cmp *c = &r->c[i];
        if (c->arg != arg)
            continue;
        if ((c->val ^ t.val) & c->mask & t.mask)
            return false;
        c->mask |= t.mask;
        c->val |= t.val & t.mask;
        return true;
    }
    r->c[r->n++] = (struct cmp){arg, t.mask, t.val & t.mask};
    return true;
}

bool srules_overlap(const struct srule *a, const struct srule *b)
{
    for (unsigned i = 0; i < a->n; i++)
        for (unsigned j = 0; j < b->n; j++)
            if (a->c[i].arg == b->c[j].arg &&
                ((a->c[i].val ^ b->c[j].val) & a->c[i].mask & b->c[j].mask))
                return false;
    return true;
}

/* Does every call that matches a match b? */
bool srule_within(const struct srule *a, const struct srule *b)
{
    for (unsigned j = 0; j < b->n; j++) {
        bool covered = false;
        for (unsigned i = 0; i < a->n && !covered; i++)
            covered = a->c[i].arg == b->c[j].arg && (a->c[i].mask & b->c[j].mask) == b->c[j].mask &&
                      !((a->c[i].val ^ b->c[j].val) & b->c[j].mask);
        if (!covered)
            return false;
    }
    return true;
}

/* The terms of each condition of rule r; returns the number of libseccomp
 * rules they make (the product), saturating above MAX_EXPAND. */
size_t rule_terms(const struct fb_sc_rule *r, struct term (*t)[MAX_TERMS], size_t *nt)
{
    size_t total = 1;
    for (unsigned k = 0; k < r->nargs && k < 6; k++) {
        nt[k] = cond_terms(&r->args[k], seccomp_arg_is32(r->name, r->args[k].index), t[k]);
        total *= nt[k];
        if (total > MAX_EXPAND)
            total = MAX_EXPAND + 1;
    }
    return total;
}

/* Append rule r's libseccomp rules (the cross product of its conditions'
 * terms) to f. Returns how many, or -1 when more than MAX_EXPAND. */
long expand_rule(const struct fb_sc_rule *r, int nr, uint32_t act, struct sfilter *f)
{
    static __thread struct term t[6][MAX_TERMS];
    size_t nt[6] = {0}, pos[6] = {0};
    size_t total = rule_terms(r, t, nt);
    if (total > MAX_EXPAND)
        return -1;
    for (size_t i = 0; i < total; i++) {
        struct srule *s = sf_add(f, nr, act);
        bool ok = true;
        for (unsigned k = 0; k < r->nargs; k++)
            ok = ok && srule_and(s, r->args[k].index, t[k][pos[k]]);
        if (!ok)
            f->n--; /* cannot happen: one comparison per argument */
        for (unsigned k = 0; k < r->nargs; k++) {
            if (++pos[k] < nt[k])
                break;
            pos[k] = 0;
        }
    }
    return (long)total;
}
