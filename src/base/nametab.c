/* nametab.c — strings with stable indices (see nametab.h): an array and an
 * open-addressing hash of indices into it, kept at most half full. */
#include "nametab.h"

#include <string.h>

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u; /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

long nametab_find(const struct nametab *t, const char *s)
{
    if (!t->hcap)
        return -1;
    for (size_t i = hash_str(s) & (t->hcap - 1);; i = (i + 1) & (t->hcap - 1)) {
        uint32_t v = t->hash[i];
        if (!v)
            return -1;
        if (!strcmp(t->v[v - 1], s))
            return (long)v - 1;
    }
}

static void insert(struct nametab *t, size_t k)
{
    size_t i = hash_str(t->v[k]) & (t->hcap - 1);
    while (t->hash[i])
        i = (i + 1) & (t->hcap - 1);
    t->hash[i] = (uint32_t)k + 1;
}

size_t nametab_add(struct nametab *t, const char *s)
{
    long k = nametab_find(t, s);
    if (k >= 0)
        return (size_t)k;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->v = fb_xrealloc(t->v, t->cap * sizeof *t->v);
    }
    t->v[t->n++] = fb_xstrdup(s);
    if (t->n * 2 > t->hcap) {
        free(t->hash);
        t->hcap = t->hcap ? t->hcap * 2 : 64;
        t->hash = fb_xcalloc(t->hcap, sizeof *t->hash);
        for (size_t i = 0; i < t->n; i++)
            insert(t, i);
    } else {
        insert(t, t->n - 1);
    }
    return t->n - 1;
}

void nametab_free(struct nametab *t)
{
    for (size_t i = 0; i < t->n; i++)
        free(t->v[i]);
    free(t->v);
    free(t->hash);
    memset(t, 0, sizeof *t);
}
