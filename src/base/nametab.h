/* nametab.h — a set of strings with stable indices (0, 1, 2, ... in the
 * order they were added), found by hashing. The egress side uses it for the
 * names with a synthetic address (the index is the address), for the names
 * it denied, and for what the audit log aggregates. */
#ifndef FB_NAMETAB_H
#define FB_NAMETAB_H

#include "fb.h"

struct nametab {
    char **v;
    size_t n, cap;
    uint32_t *hash; /* open addressing: index + 1, 0 = empty */
    size_t hcap;
};

/* The index of s, or -1. */
long nametab_find(const struct nametab *t, const char *s);
/* The index of s, adding a copy of it when it is not there. */
size_t nametab_add(struct nametab *t, const char *s);
void nametab_free(struct nametab *t);

#endif
