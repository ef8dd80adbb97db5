/* proc_self_exe: CVE-2019-5736 (runc). A process in the sandbox grabs
 * /proc/PID/exe of itself, of the sandbox's init and of its parent, and checks
 * whether the binary behind it could be written: directly, or later through
 * the O_PATH descriptor once the binary stops running (the runc attack).
 * Nothing is ever written: write permission is asked with faccessat(), which
 * checks permissions and read-only mounts without ETXTBSY getting in the way. */
#include "probe.h"

/* Open for writing (nothing is written) a regular file in the directory of
 * the file behind fdpath that is not running: 0 when it opens (or there is
 * none to ask), else the errno. */
static int beside(const char *fdpath)
{
    char target[4096];
    ssize_t n = readlink(fdpath, target, sizeof(target) - 1);
    if (n <= 0)
        return 0;
    target[n] = 0;
    char *slash = strrchr(target, '/');
    if (!slash || slash == target)
        return 0;
    *slash = 0;
    DIR *d = opendir(target);
    if (!d)
        return 0;
    int result = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (!strcmp(de->d_name, slash + 1) || de->d_type != DT_REG)
            continue;
        char path[4096 + 256];
        snprintf(path, sizeof(path), "%s/%s", target, de->d_name);
        int fd = open(path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
        if (fd >= 0) {
            close(fd);
            result = 0;
            break;
        }
        if (errno == ETXTBSY)
            continue;
        result = errno;
        break;
    }
    closedir(d);
    return result;
}

static void try_exe(struct probe_res *r, const char *label, pid_t pid)
{
    char path[64], fdpath[64];
    if (pid)
        snprintf(path, sizeof(path), "/proc/%d/exe", (int)pid);
    else
        snprintf(path, sizeof(path), "/proc/self/exe");
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        res_note(r, "%s: %s", label, ename(errno));
        return;
    }
    snprintf(fdpath, sizeof(fdpath), "/proc/self/fd/%d", fd);
    int wfd = open(fdpath, O_WRONLY | O_CLOEXEC);
    if (wfd >= 0) {
        close(wfd);
        res_escape(r, "%s opened for writing", label);
    } else if (errno == ETXTBSY && syscall(SYS_faccessat, AT_FDCWD, fdpath, W_OK) == 0) {
        /* The permission bits allow it. A security module (Landlock) is
         * asked only after the running binary's ETXTBSY, and access(2)
         * does not ask it: a file beside it that is not running tells. */
        int e = beside(fdpath);
        if (e)
            res_note(r, "%s: ETXTBSY; a file beside it: %s, so not writable either", label,
                     ename(e));
        else
            res_escape(r, "%s is writable once it stops running (open: ETXTBSY)", label);
    } else if (syscall(SYS_faccessat, AT_FDCWD, fdpath, W_OK) == 0) {
        res_escape(r, "%s is writable once it stops running (open: %s)", label,
                   ename(errno));
    } else {
        res_note(r, "%s: %s", label, ename(errno));
    }
    close(fd);
}

static void probe_attempt(struct probe_res *r)
{
    try_exe(r, "self", 0);
    if (getpid() != 1)
        try_exe(r, "pid1", 1);
    pid_t pp = getppid();
    if (pp > 1)
        try_exe(r, "parent", pp);
    pid_t gp = 0;
    char path[64], buf[1024];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pp);
    if (pp > 1 && read_small(path, buf, sizeof(buf)) > 0) {
        char *p = strrchr(buf, ')');
        int ppid2;
        if (p && sscanf(p + 1, " %*c %d", &ppid2) == 1)
            gp = ppid2;
    }
    if (gp > 1)
        try_exe(r, "grandparent", gp);
}

PROBE_MAIN("proc_self_exe")
