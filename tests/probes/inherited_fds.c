/* inherited_fds: descriptors the caller left open cross into the sandbox
 * unless they are closed: a directory fd is a way out of any mount namespace
 * (runc's CVE-2024-21626 leaked one), a file fd a read of a host file. The
 * runner opens the host secret and the directory holding it as fds= (e.g.
 * 7,8); the probe also looks at every other fd above 2. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    const char *secret = parg("secret");
    const char *base = secret ? strrchr(secret, '/') : NULL;
    base = base ? base + 1 : "secret";
    int open_fds = 0;
    for (int fd = 3; fd < 1024; fd++) {
        if (fcntl(fd, F_GETFD) < 0)
            continue;
        open_fds++;
        char link[64], target[512] = "?";
        snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
        ssize_t n = readlink(link, target, sizeof(target) - 1);
        if (n > 0)
            target[n] = 0;
        struct stat st;
        if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
            int e;
            if (read_secret_at(fd, base, &e))
                res_escape(r, "fd %d is a host directory (%s): read the secret through it", fd,
                           target);
            else
                res_escape(r, "fd %d (directory %s) inherited", fd, target);
        } else {
            char buf[128];
            ssize_t got = pread(fd, buf, sizeof(buf) - 1, 0);
            if (got > 0) {
                buf[got] = 0;
                res_escape(r, "fd %d (%s) inherited%s", fd, target,
                           strstr(buf, "FLUEBOX-SECRET-") ? ", holds the host secret" : "");
            } else {
                res_escape(r, "fd %d (%s) inherited", fd, target);
            }
        }
    }
    const char *want = parg("fds");
    if (!open_fds)
        res_note(r, "no fd above 2 (expected from the runner: %s)", want ? want : "none");
}

PROBE_MAIN("inherited_fds")
