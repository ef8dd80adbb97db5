/* caps_left: every capability set of the sandboxed process must be empty:
 * effective, permitted, inheritable, ambient and the bounding set (a non-empty
 * bounding set lets a setuid or file-capability binary regain privileges). */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) {
        res_error(r, "/proc/self/status: %s", ename(errno));
        return;
    }
    char line[256];
    int seen = 0;
    while (fgets(line, sizeof(line), f)) {
        char set[8];
        unsigned long long v;
        if (sscanf(line, "Cap%7[A-Za-z]: %llx", set, &v) == 2) {
            seen++;
            if (v)
                res_escape(r, "Cap%s=%016llx", set, v);
        }
    }
    fclose(f);
    if (!seen)
        res_error(r, "no Cap* lines in /proc/self/status");
    else if (r->verdict != PV_ESCAPED)
        res_note(r, "all %d capability sets empty", seen);
}

PROBE_MAIN("caps_left")
