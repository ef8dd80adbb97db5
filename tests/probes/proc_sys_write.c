/* proc_sys_write: writable kernel settings. core_pattern and modprobe name
 * programs the kernel runs as host root (the classic container escape, and
 * what bwrap-as-root exposes), sysrq-trigger reboots or crashes the host.
 * Each file is only opened for writing; nothing is ever written. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    static const char *const files[] = {
        "/proc/sys/kernel/core_pattern", "/proc/sys/kernel/modprobe",
        "/proc/sys/vm/drop_caches",      "/proc/sys/kernel/hostname",
        "/proc/sysrq-trigger",           "/proc/sys/fs/binfmt_misc/register",
    };
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        int fd = open(files[i], O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            close(fd);
            res_escape(r, "%s open for writing", files[i]);
        } else {
            res_note(r, "%s: %s", files[i], ename(errno));
        }
    }
}

PROBE_MAIN("proc_sys_write")
