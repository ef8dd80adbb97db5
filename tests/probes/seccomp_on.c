/* seccomp_on: is a seccomp filter installed at all? (Seccomp: 2 in
 * /proc/self/status.) Every other syscall probe assumes one. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) {
        res_error(r, "/proc/self/status: %s", ename(errno));
        return;
    }
    char line[256];
    int mode = -1, filters = -1;
    while (fgets(line, sizeof(line), f)) {
        sscanf(line, "Seccomp: %d", &mode);
        sscanf(line, "Seccomp_filters: %d", &filters);
    }
    fclose(f);
    if (mode == 2)
        res_note(r, "seccomp filter mode, %d filter(s)", filters);
    else if (mode == 0)
        res_escape(r, "no seccomp filter");
    else
        res_note(r, "Seccomp: %d", mode);
}

PROBE_MAIN("seccomp_on")
