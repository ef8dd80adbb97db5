/* shims.h — version managers' shims: which real program a shim on the
 * caller's PATH would run for the caller (pyenv, asdf, rustup, volta), read
 * from the same settings the manager reads (its environment variables, the
 * version files from the caller's directory upwards, its global setting).
 * No shim is ever run. */
#ifndef FB_SHIMS_H
#define FB_SHIMS_H

#include "toolchain.h"

enum shim_kind {
    SHIM_NONE,     /* not a shim: the candidate is the program */
    SHIM_RESOLVED, /* path is the real program */
    SHIM_SYSTEM,   /* the manager defers to the system: keep searching PATH */
    SHIM_UNKNOWN,  /* a shim fluebox cannot resolve; why says what is missing */
};

struct shim_res {
    char *path; /* SHIM_RESOLVED */
    char *why;  /* SHIM_RESOLVED: "pyenv version 3.11.7 (set by /x/.python-version)";
                   SHIM_UNKNOWN: the reason */
};

/* cand: an executable file found on the caller's PATH for name. */
enum shim_kind shim_resolve(const char *cand, const char *name, const struct fb_callenv *ce,
                            struct shim_res *out);
void shim_res_free(struct shim_res *r);

#endif
