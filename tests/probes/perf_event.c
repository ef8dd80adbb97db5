/* perf_event_open: a software counter on ourselves, user space only, the
 * least privileged use there is. perf is a frequent source of kernel bugs and
 * side channels (e.g. CVE-2013-2094); sandboxes deny it. */
#include "probe.h"
#include <linux/perf_event.h>

static void probe_attempt(struct probe_res *r)
{
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.size = sizeof(a);
    a.type = PERF_TYPE_SOFTWARE;
    a.config = PERF_COUNT_SW_TASK_CLOCK;
    a.disabled = 1;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "perf_event_open worked");
    } else {
        res_note(r, "perf_event_open: %s", ename(errno));
    }
    char buf[16];
    if (read_small("/proc/sys/kernel/perf_event_paranoid", buf, sizeof(buf)) > 0)
        res_note(r, "paranoid=%ld", strtol(buf, NULL, 10));
}

PROBE_MAIN("perf_event")
