/* setns: join another process's namespaces: the host helper's (by host pid,
 * through /proc and through a pidfd), pid 1's, and our own (with the mount
 * namespace, joining your own resets root and cwd: a chroot breakout). */
#include "probe.h"
#include <sched.h>

static const char *const kinds[] = {"mnt", "net", "uts", "ipc", "pid", "cgroup", "user", "time"};

static void try_path(struct probe_res *r, const char *label, pid_t pid, int *opened)
{
    char path[64];
    for (size_t i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++) {
        if (pid)
            snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, kinds[i]);
        else
            snprintf(path, sizeof(path), "/proc/self/ns/%s", kinds[i]);
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        (*opened)++;
        if (setns(fd, 0) == 0)
            res_escape(r, "setns(%s %s)", label, kinds[i]);
        else if (errno != EPERM && errno != EINVAL)
            res_note(r, "%s %s: %s", label, kinds[i], ename(errno));
        close(fd);
    }
}

static void probe_attempt(struct probe_res *r)
{
    int opened = 0;
    long hp = parg_long("hostpid", 0);
    if (hp > 1) {
        if (!is_own_process((pid_t)hp))
            try_path(r, "hostpid", (pid_t)hp, &opened);
        int pfd = (int)syscall(SYS_pidfd_open, (pid_t)hp, 0);
        if (pfd >= 0) {
            if (!is_own_process((pid_t)hp)) {
                if (setns(pfd, CLONE_NEWNET | CLONE_NEWUTS | CLONE_NEWIPC) == 0)
                    res_escape(r, "setns(pidfd of host pid, net|uts|ipc)");
                else
                    res_note(r, "pidfd setns: %s", ename(errno));
            }
            close(pfd);
        } else {
            res_note(r, "pidfd_open(host pid): %s", ename(errno));
        }
    }
    if (getpid() != 1)
        try_path(r, "pid1", 1, &opened);
    try_path(r, "self", 0, &opened);
    res_note(r, "%d namespace files opened, others EPERM/EINVAL", opened);
}

PROBE_MAIN("setns")
