/* userfaultfd: lets a process stall the kernel at a chosen page fault, the
 * standard tool for winning kernel races in exploits. Tried with and without
 * UFFD_USER_MODE_ONLY, and through /dev/userfaultfd. */
#include "probe.h"
#include <linux/userfaultfd.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

static void probe_attempt(struct probe_res *r)
{
    int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "userfaultfd() worked");
    } else {
        res_note(r, "userfaultfd: %s", ename(errno));
    }
    fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "userfaultfd(USER_MODE_ONLY) worked");
    } else {
        res_note(r, "userfaultfd(user-only): %s", ename(errno));
    }
    fd = open("/dev/userfaultfd", O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "/dev/userfaultfd opened");
    } else {
        res_note(r, "/dev/userfaultfd: %s", ename(errno));
    }
}

PROBE_MAIN("userfaultfd")
