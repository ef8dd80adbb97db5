/* seccomp_on: is a seccomp filter installed at all? (Seccomp: 2 in
 * /proc/self/status.) Every other syscall probe assumes one. */
#include "probe.h"

#include <sys/prctl.h>

static void probe_attempt(struct probe_res *r)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) {
        /* Without /proc/self (--isolation landlock hides it): the kernel's
         * own answer. A filter may refuse the question itself, which only
         * a filter can do. */
        int m = prctl(PR_GET_SECCOMP, 0, 0, 0, 0);
        if (m == 2)
            res_note(r, "/proc/self/status unreadable; PR_GET_SECCOMP: filter mode");
        else if (m < 0 && (errno == EPERM || errno == EACCES))
            res_note(r, "/proc/self/status unreadable; PR_GET_SECCOMP refused by a filter");
        else if (m == 0)
            res_escape(r, "no seccomp filter (PR_GET_SECCOMP)");
        else
            res_error(r, "/proc/self/status: %s; PR_GET_SECCOMP: %d %s", ename(errno), m,
                      m < 0 ? ename(errno) : "");
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
