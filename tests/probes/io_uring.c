/* io_uring: its operations bypass the system-call path a seccomp filter sees,
 * and it has had many privilege-escalation bugs (e.g. CVE-2022-29582);
 * container runtimes block io_uring_setup. */
#include "probe.h"
#include <linux/io_uring.h>

static void probe_attempt(struct probe_res *r)
{
    struct io_uring_params p;
    memset(&p, 0, sizeof(p));
    int fd = (int)syscall(SYS_io_uring_setup, 2, &p);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "io_uring_setup worked");
    } else {
        res_note(r, "io_uring_setup: %s", ename(errno));
    }
}

PROBE_MAIN("io_uring")
