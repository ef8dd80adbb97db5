/* Unit tests of safe_open (src/base/safeopen.c): /proc magic links are refused
 * with ELOOP, plain symlinks (procfs's own relative ones too) are followed,
 * and the walk behaves as open(2) otherwise. Runs on the host: /proc/self
 * here is this test process. */
#include "safeopen.h"
#include "unit.h"

#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static int try_open(const char *path, int flags)
{
    int fd = safe_open(path, flags | O_CLOEXEC, 0644, true);
    int e = fd < 0 ? errno : 0;
    if (fd >= 0)
        close(fd);
    return e;
}

void unit_safeopen(void)
{
    char dir[] = "/tmp/fbunit-safeopen.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "safe_open: mkdtemp");
        return;
    }
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/file", dir);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0) {
        (void)!write(fd, "x", 1);
        close(fd);
    }

    /* Magic links: refused, whatever they lead to. */
    CHECK(try_open("/proc/self/root/etc/hostname", O_RDONLY) == ELOOP,
          "safe_open: /proc/self/root/... is a magic link (ELOOP)");
    CHECK(try_open("/proc/self/cwd", O_RDONLY | O_DIRECTORY) == ELOOP,
          "safe_open: /proc/self/cwd is a magic link (ELOOP)");
    CHECK(try_open("/proc/self/fd/0", O_RDONLY) == ELOOP, "safe_open: /proc/self/fd/0 (ELOOP)");
    CHECK(try_open("/proc/self/exe", O_RDONLY) == ELOOP, "safe_open: /proc/self/exe (ELOOP)");
    snprintf(q, sizeof q, "%s/rootlink", dir);
    (void)!symlink("/proc/self/root/etc/hostname", q);
    CHECK(try_open(q, O_RDONLY) == ELOOP, "safe_open: a symlink to a magic link (ELOOP)");
    snprintf(q, sizeof q, "%s/rootlink", dir);
    int st_fd = safe_open(q, O_PATH | O_CLOEXEC, 0, false);
    struct stat st;
    CHECK(st_fd >= 0 && fstat(st_fd, &st) == 0 && S_ISLNK(st.st_mode),
          "safe_open: not following the last component gives the link itself");
    if (st_fd >= 0)
        close(st_fd);

    /* procfs's plain links (relative targets) are followed. */
    CHECK(try_open("/proc/self/status", O_RDONLY) == 0, "safe_open: /proc/self/status opens");
    CHECK(try_open("/proc/mounts", O_RDONLY) == 0, "safe_open: /proc/mounts (-> self/mounts) opens");

    /* Plain paths and symlinks behave as open(2). */
    CHECK(try_open(p, O_RDONLY) == 0, "safe_open: a regular file");
    snprintf(q, sizeof q, "%s/rel", dir);
    (void)!symlink("file", q);
    CHECK(try_open(q, O_RDONLY) == 0, "safe_open: a relative symlink");
    snprintf(q, sizeof q, "%s/abs", dir);
    (void)!symlink(p, q);
    CHECK(try_open(q, O_RDONLY) == 0, "safe_open: an absolute symlink");
    snprintf(q, sizeof q, "%s/./abs/", dir);
    CHECK(try_open(q, O_RDONLY) == ENOTDIR, "safe_open: a file with a trailing slash (ENOTDIR)");
    snprintf(q, sizeof q, "%s/loop", dir);
    (void)!symlink("loop", q);
    CHECK(try_open(q, O_RDONLY) == ELOOP, "safe_open: a symlink loop (ELOOP)");
    snprintf(q, sizeof q, "%s/dangling", dir);
    (void)!symlink("created", q);
    CHECK(try_open(q, O_WRONLY | O_CREAT | O_EXCL) == EEXIST,
          "safe_open: O_CREAT|O_EXCL on a symlink (EEXIST, as open(2))");
    CHECK(try_open(q, O_WRONLY | O_CREAT) == 0, "safe_open: O_CREAT through a dangling symlink");
    snprintf(q, sizeof q, "%s/created", dir);
    CHECK(access(q, F_OK) == 0, "safe_open: ... creates its target");
    snprintf(q, sizeof q, "%s/missing/x", dir);
    CHECK(try_open(q, O_RDONLY) == ENOENT, "safe_open: a missing directory (ENOENT)");
    snprintf(q, sizeof q, "%s/file/x", dir);
    CHECK(try_open(q, O_RDONLY) == ENOTDIR, "safe_open: through a file (ENOTDIR)");
    snprintf(q, sizeof q, "%s/../%s/file", dir, strrchr(dir, '/') + 1);
    CHECK(try_open(q, O_RDONLY) == 0, "safe_open: .. components");
    CHECK(try_open("", O_RDONLY) == ENOENT, "safe_open: an empty path (ENOENT)");

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)!system(cmd);
}
