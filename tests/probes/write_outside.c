/* write_outside: create a file in a host directory that is not bound into the
 * sandbox, and in the system trees that must be read-only (/usr and the
 * merged /bin /lib links). Nothing is left behind: the host file is unlinked
 * at once, and the system trees are probed with O_TMPFILE, which creates an
 * unnamed file that vanishes on close. */
#include "probe.h"

static void try_tmpfile(struct probe_res *r, const char *dir)
{
    int fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "O_TMPFILE in %s worked", dir);
        return;
    }
    int e = errno;
    if (e == EOPNOTSUPP || e == EISDIR) {
        /* No O_TMPFILE on that filesystem: ask the kernel instead. */
        if (syscall(SYS_faccessat, AT_FDCWD, dir, W_OK) == 0)
            res_escape(r, "%s writable (faccessat)", dir);
        else
            res_note(r, "%s: %s", dir, ename(errno));
        return;
    }
    res_note(r, "%s: %s", dir, ename(e));
}

static void probe_attempt(struct probe_res *r)
{
    const char *outside = parg("outside");
    if (outside) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/written-by-probe-%d", outside, (int)getpid());
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd >= 0) {
            close(fd);
            unlink(path);
            res_escape(r, "created %s", path);
        } else {
            res_note(r, "%s: %s", outside, ename(errno));
        }
    } else {
        res_note(r, "no outside= given");
    }
    static const char *const sys[] = {"/usr", "/usr/bin", "/usr/lib", "/bin", "/lib"};
    for (size_t i = 0; i < sizeof(sys) / sizeof(sys[0]); i++)
        try_tmpfile(r, sys[i]);
}

PROBE_MAIN("write_outside")
