/* record_check.h — reading a flight record back and checking it: the chain
 * of hashes, the sequence numbers, the signatures (record_verify.c). Used by
 * `fluebox record verify` and by `fluebox record show`, which says first
 * whether what it summarises can be trusted. */
#ifndef FB_RECORD_CHECK_H
#define FB_RECORD_CHECK_H

#include "record_crypto.h"

#include <jansson.h>

/* The exit statuses of `fluebox record verify` (docs/record.md). */
enum {
    FB_REC_OK = 0,        /* intact, complete, signed by --key */
    FB_REC_TAMPERED = 1,  /* a line was changed, removed, moved, added */
    FB_REC_UNTRUSTED = 2, /* intact and complete, but unsigned, no --key, or another key */
    FB_REC_CUT = 3,       /* a valid prefix without its end line */
    FB_REC_BAD = 4,       /* not a record, unreadable, bad usage */
};

struct fb_rec_verdict {
    int status;           /* FB_REC_* */
    char msg[700];        /* one line, without "fluebox: " */
    int64_t lines;        /* lines that passed the checks */
    int64_t signed_upto;  /* last signed line that verified (0: none) */
    bool is_signed;       /* the first line names a public key */
    char pub[FB_ED25519_PUB_HEX];
};

/* Check the record in path; key (NULL: none given) is the public key the
 * caller trusts. each (may be NULL) is called with every line that passed
 * the checks, in order (its JSON borrowed). */
void record_check(const char *path, EVP_PKEY *key,
                  void (*each)(void *arg, int64_t line, json_t *o), void *arg,
                  struct fb_rec_verdict *v);

int cmd_record(int argc, char **argv); /* record_verify.c: verify and show */
int record_show(const char *path, bool json);  /* record_show.c */

#endif
