/* personality: ADDR_NO_RANDOMIZE turns address-space randomisation off for
 * whatever this process runs next, READ_IMPLIES_EXEC makes readable memory
 * executable: both help exploits, and container seccomp profiles allow only a
 * few harmless personality values. Only this throw-away child is changed. */
#include "probe.h"
#include <sys/personality.h>

static void try_flag(struct probe_res *r, unsigned long flag, const char *name)
{
    int before = personality(0xffffffff);
    if (before == -1) {
        res_note(r, "query: %s", ename(errno));
        return;
    }
    if (personality((unsigned long)before | flag) == -1) {
        res_note(r, "%s: %s", name, ename(errno));
        return;
    }
    int after = personality(0xffffffff);
    if (after != -1 && ((unsigned long)after & flag))
        res_escape(r, "%s set", name);
    else
        res_note(r, "%s did not stick", name);
    personality((unsigned long)before);
}

static void probe_attempt(struct probe_res *r)
{
    try_flag(r, ADDR_NO_RANDOMIZE, "ADDR_NO_RANDOMIZE");
    try_flag(r, READ_IMPLIES_EXEC, "READ_IMPLIES_EXEC");
}

PROBE_MAIN("personality")
