/* dev_kmsg: the kernel log. Reading it leaks kernel addresses and host
 * activity (dmesg_restrict); opening /dev/kmsg for writing lets a sandbox
 * forge kernel log lines. Tries /dev/kmsg both ways (writing nothing) and
 * syslog(2). */
#include "probe.h"
#include <sys/klog.h>

static void probe_attempt(struct probe_res *r)
{
    int fd = open("/dev/kmsg", O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0) {
        char buf[1024];
        ssize_t n = read(fd, buf, sizeof(buf));
        if (n > 0)
            res_escape(r, "read the kernel log from /dev/kmsg");
        else
            res_note(r, "/dev/kmsg opened, read: %s", n < 0 ? ename(errno) : "empty");
        close(fd);
    } else {
        res_note(r, "/dev/kmsg read: %s", ename(errno));
    }
    fd = open("/dev/kmsg", O_WRONLY | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "/dev/kmsg open for writing");
    } else {
        res_note(r, "/dev/kmsg write: %s", ename(errno));
    }
    char buf[256];
    int n = klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf, sizeof(buf));
    if (n > 0)
        res_escape(r, "syslog(READ_ALL) returned %d bytes", n);
    else
        res_note(r, "syslog: %s", n < 0 ? ename(errno) : "empty");
}

PROBE_MAIN("dev_kmsg")
