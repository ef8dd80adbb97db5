/* host_proc_see: can the sandbox see host processes? Looks for the runner's
 * host helper by its host pid and by the tag in its argv across /proc, and
 * counts what else is visible. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    long hp = parg_long("hostpid", 0);
    if (hp <= 0 || !parg("marker")) {
        res_skip(r, "need hostpid= and marker=");
        return;
    }
    if (is_host_helper((pid_t)hp))
        res_escape(r, "host helper visible as /proc/%ld", hp);
    else
        res_note(r, "/proc/%ld: not the helper", hp);

    DIR *d = opendir("/proc");
    if (!d) {
        res_note(r, "/proc: %s", ename(errno));
        return;
    }
    int visible = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        visible++;
        if (pid != hp && is_host_helper((pid_t)pid))
            res_escape(r, "host helper visible as /proc/%ld", pid);
    }
    closedir(d);
    res_note(r, "%d processes visible", visible);
}

PROBE_MAIN("host_proc_see")
