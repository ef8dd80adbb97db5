/* dos.h — cross-sandbox denial of service probes: one sandbox (the
 * attacker) takes a kernel resource that is counted per user, and another
 * sandbox, or the host user, is the victim.
 *
 * A probe of this kind runs twice at once, driven by `fbhost pair` (see
 * helper/fbhost.c and run.sh): with role=hold it takes as much of the
 * resource as it can (up to a cap), prints "HOLDING <what>" and keeps it
 * until its stdin closes; with role=victim it tries to use the resource
 * once and reports ESCAPED when that fails the way the attacker's grab
 * makes it fail. The pair helper prints the verdict: ESCAPED when a victim
 * was hurt. Without a sandbox (as root) both run as one throwaway uid, so
 * the victim shares the attacker's counters and must be hurt: that shows
 * the probe can see its escape without touching anyone else's quota. */
#ifndef FLUEBOX_DOS_H
#define FLUEBOX_DOS_H

#include "probe.h"

/* Tell the pair helper we hold the resource, then wait until it closes our
 * stdin (or the probe's own alarm fires). */
static inline void dos_hold(struct probe_res *r, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static inline void dos_hold(struct probe_res *r, const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof what, fmt, ap);
    va_end(ap);
    printf("HOLDING %s\n", what);
    fflush(stdout);
    char c;
    for (;;) {
        ssize_t n = read(0, &c, 1);
        if (n > 0 || (n < 0 && errno == EINTR))
            continue;
        break;
    }
    res_note(r, "held %s", what);
}

static inline bool dos_is_holder(void)
{
    const char *role = parg("role");
    return role && strcmp(role, "hold") == 0;
}

#endif
