/* proc_kcore: /proc files that leak kernel memory or state and that container
 * runtimes mask: kcore (physical memory as an ELF core), kallsyms (kernel
 * symbol addresses), keys (keyrings), timer_list (kernel pointers and host
 * timer activity), sched_debug. Escaped when any of them yields data. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    static const char *const files[] = {"/proc/kcore", "/proc/kallsyms", "/proc/keys",
                                        "/proc/timer_list", "/proc/sched_debug"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        int fd = open(files[i], O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            res_note(r, "%s: %s", files[i], ename(errno));
            continue;
        }
        char buf[512];
        ssize_t n = read(fd, buf, sizeof(buf));
        close(fd);
        if (n > 0)
            res_escape(r, "%s readable", files[i]);
        else
            res_note(r, "%s: %s", files[i], n < 0 ? ename(errno) : "empty");
    }
}

PROBE_MAIN("proc_kcore")
