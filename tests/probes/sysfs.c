/* sysfs: /sys exposes host devices, cgroup control files (the release_agent
 * escape, CVE-2022-0492, starts there) and kernel tunables; the sandbox has
 * none. Escaped when /sys lists anything or a kernel file under it opens. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    DIR *d = opendir("/sys");
    if (d) {
        int n = 0;
        struct dirent *de;
        while ((de = readdir(d)))
            if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
                n++;
        closedir(d);
        if (n)
            res_escape(r, "/sys lists %d entries", n);
        else
            res_note(r, "/sys is empty");
    } else {
        res_note(r, "/sys: %s", ename(errno));
    }
    char buf[64];
    if (read_small("/sys/kernel/uevent_helper", buf, sizeof(buf)) >= 0)
        res_escape(r, "/sys/kernel/uevent_helper readable");
    if (read_small("/sys/fs/cgroup/cgroup.controllers", buf, sizeof(buf)) >= 0 ||
        read_small("/sys/fs/cgroup/memory/memory.limit_in_bytes", buf, sizeof(buf)) >= 0)
        res_escape(r, "cgroup files under /sys/fs/cgroup readable");
}

PROBE_MAIN("sysfs")
