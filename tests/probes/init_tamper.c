/* init_tamper: the process that started us inside the sandbox (fluebox's
 * pid-1 init, or whatever launched the probe) may hold more than we do:
 * descriptors to the supervisor, a weaker seccomp filter, privileges it has
 * not dropped yet. Taking it over is a way up (runc CVE-2016-9962: the
 * container's init could be ptraced while it still held host descriptors).
 * Tries PTRACE_SEIZE (which does not stop it), opening its /proc/PID/mem for
 * writing (nothing is written), reading its memory, copying one of its fds
 * with pidfd_getfd, and opening its fds through /proc. */
#include "probe.h"
#include <sys/ptrace.h>
#include <sys/uio.h>

static void probe_attempt(struct probe_res *r)
{
    pid_t t = probe_launcher;
    if (t <= 0) {
        res_note(r, "launcher is outside our pid namespace (ppid 0)");
        t = 1;
    }
    if (t == getpid()) {
        res_skip(r, "we are our own launcher");
        return;
    }
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)t);
    if (read_small(path, buf, sizeof(buf)) > 0) {
        char *sc = strstr(buf, "Seccomp:");
        char *uid = strstr(buf, "Uid:");
        int mode = -1, u = -1;
        if (sc)
            sscanf(sc, "Seccomp: %d", &mode);
        if (uid)
            sscanf(uid, "Uid: %d", &u);
        res_note(r, "launcher pid %d: seccomp mode %d, uid %d", (int)t, mode, u);
    }
    if (ptrace(PTRACE_SEIZE, t, NULL, NULL) == 0)
        res_escape(r, "PTRACE_SEIZE on the launcher (pid %d)", (int)t);
    else
        res_note(r, "ptrace: %s", ename(errno));

    snprintf(path, sizeof(path), "/proc/%d/mem", (int)t);
    int fd = open(path, O_RDWR | O_CLOEXEC);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "%s open for writing", path);
    } else {
        res_note(r, "mem: %s", ename(errno));
    }

    /* Read a word of its memory at the start of its first mapping. */
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)t);
    unsigned long start = 0;
    if (read_small(path, buf, sizeof(buf)) > 0 && sscanf(buf, "%lx-", &start) == 1) {
        char word[8];
        struct iovec l = {.iov_base = word, .iov_len = sizeof(word)};
        struct iovec rm = {.iov_base = (void *)start, .iov_len = sizeof(word)};
        if (process_vm_readv(t, &l, 1, &rm, 1, 0) == (ssize_t)sizeof(word))
            res_escape(r, "read the launcher's memory");
        else
            res_note(r, "process_vm_readv: %s", ename(errno));
    } else {
        res_note(r, "maps: %s", ename(errno));
    }

    /* pidfd_getfd: copy a descriptor out of it, without /proc. */
    int pfd = (int)syscall(SYS_pidfd_open, t, 0);
    if (pfd >= 0) {
        int got = -1, err = 0;
        for (int fd = 0; fd < 64 && got < 0; fd++) {
            got = (int)syscall(SYS_pidfd_getfd, pfd, fd, 0);
            if (got < 0 && errno != EBADF)
                err = errno;
        }
        if (got >= 0) {
            close(got);
            res_escape(r, "pidfd_getfd copied one of the launcher's descriptors");
        } else {
            res_note(r, "pidfd_getfd: %s", ename(err ? err : EBADF));
        }
        close(pfd);
    } else {
        res_note(r, "pidfd_open: %s", ename(errno));
    }

    snprintf(path, sizeof(path), "/proc/%d/fd", (int)t);
    DIR *d = opendir(path);
    if (!d) {
        res_note(r, "fds: %s", ename(errno));
        return;
    }
    int opened = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue;
        char fdp[300];
        snprintf(fdp, sizeof(fdp), "/proc/%d/fd/%s", (int)t, de->d_name);
        int f = open(fdp, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (f >= 0) {
            opened++;
            close(f);
        }
    }
    closedir(d);
    if (opened)
        res_escape(r, "opened %d of the launcher's descriptors", opened);
    else
        res_note(r, "launcher's fd directory listed, none opened");
}

PROBE_MAIN("init_tamper")
