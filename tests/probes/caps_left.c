/* caps_left: every capability set of the sandboxed process must be empty:
 * effective, permitted, inheritable, ambient and the bounding set (a non-empty
 * bounding set lets a setuid or file-capability binary regain privileges). */
#include "probe.h"

#include <linux/capability.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

/* Without /proc/self (a sandbox may hide it: --isolation landlock), ask
 * the kernel directly: capget for three sets, prctl for the other two. */
static void from_syscalls(struct probe_res *r)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    memset(d, 0, sizeof d);
    if (syscall(SYS_capget, &hdr, d) < 0) {
        res_error(r, "capget: %s", ename(errno));
        return;
    }
    for (int i = 0; i < 2; i++) {
        if (d[i].effective)
            res_escape(r, "effective[%d]=%08x", i, d[i].effective);
        if (d[i].permitted)
            res_escape(r, "permitted[%d]=%08x", i, d[i].permitted);
        if (d[i].inheritable)
            res_escape(r, "inheritable[%d]=%08x", i, d[i].inheritable);
    }
    int bnd = 0, amb = 0;
    for (int cap = 0; cap < 64; cap++) {
        int b = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (b < 0)
            break;
        bnd += b == 1;
        amb += prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_IS_SET, cap, 0, 0) == 1;
    }
    if (bnd)
        res_escape(r, "%d capabilities in the bounding set", bnd);
    if (amb)
        res_escape(r, "%d ambient capabilities", amb);
    if (r->verdict != PV_ESCAPED)
        res_note(r, "/proc/self/status unreadable; capget and prctl: every set empty");
}

static void probe_attempt(struct probe_res *r)
{
    FILE *f = fopen("/proc/self/status", "re");
    if (!f) {
        from_syscalls(r);
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
