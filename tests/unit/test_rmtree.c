/* Unit tests of rmtree (src/base/rmtree.c): a tree removed a few entries per
 * step, symlinks removed and never followed (a link to a directory outside
 * keeps that directory's files), a cancelled removal leaves the rest, and
 * an error is reported while the rest is still removed. Runs on the host
 * in a directory of its own under /tmp. */
#include "rmtree.h"
#include "unit.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void touch(const char *dir, const char *name)
{
    char p[1100];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
    if (fd >= 0)
        close(fd);
}

/* dir/t with files, nested directories and a link to dir/outside. */
static void make_tree(const char *dir)
{
    char p[512], q[512];
    snprintf(p, sizeof p, "%s/t", dir);
    mkdir(p, 0755);
    for (int i = 0; i < 50; i++) {
        snprintf(q, sizeof q, "f%d", i);
        touch(p, q);
    }
    snprintf(p, sizeof p, "%s/t/a", dir);
    mkdir(p, 0755);
    snprintf(p, sizeof p, "%s/t/a/b", dir);
    mkdir(p, 0755);
    for (int i = 0; i < 20; i++) {
        snprintf(q, sizeof q, "g%d", i);
        touch(p, q);
    }
    snprintf(p, sizeof p, "%s/t/a/out", dir);
    snprintf(q, sizeof q, "%s/outside", dir);
    (void)!symlink(q, p);
}

static int run(const char *path, unsigned budget, unsigned *steps)
{
    struct stat st;
    int e = 0;
    if (lstat(path, &st) < 0)
        return errno;
    struct rmtree *t = rmtree_start(path, st.st_dev, &e);
    if (!t)
        return e;
    *steps = 1;
    while (!rmtree_step(t, budget))
        ++*steps;
    return rmtree_free(t);
}

void unit_rmtree(void)
{
    char dir[] = "/tmp/fbunit-rmtree.XXXXXX";
    if (!mkdtemp(dir)) {
        CHECK(0, "rmtree: mkdtemp");
        return;
    }
    char p[512], q[512];
    snprintf(q, sizeof q, "%s/outside", dir);
    mkdir(q, 0755);
    touch(q, "keep");
    make_tree(dir);
    snprintf(p, sizeof p, "%s/t", dir);
    unsigned steps = 0;
    int e = run(p, 4, &steps);
    CHECK(e == 0 && access(p, F_OK) < 0 && errno == ENOENT && steps > 10,
          "rmtree: a tree of 75 entries removed 4 at a time (%u steps, error %d)", steps, e);
    snprintf(q, sizeof q, "%s/outside/keep", dir);
    CHECK(access(q, F_OK) == 0, "rmtree: a symlink to a directory outside is removed, not followed");

    /* Cancelled after a step: the rest stays. */
    make_tree(dir);
    struct stat st;
    lstat(p, &st);
    struct rmtree *t = rmtree_start(p, st.st_dev, &e);
    bool done = t ? rmtree_step(t, 8) : true;
    CHECK(t && !done && rmtree_free(t) == 0 && access(p, F_OK) == 0,
          "rmtree: freed half way, the tree's rest stays");
    CHECK(run(p, 1000, &steps) == 0 && access(p, F_OK) < 0, "rmtree: ... and can be removed later");

    /* An entry that cannot be removed (a directory without write
     * permission, as a non-root user; root: skipped): its error, the rest
     * removed. */
    if (geteuid() != 0) {
        make_tree(dir);
        snprintf(q, sizeof q, "%s/t/a/b", dir);
        chmod(q, 0555);
        e = run(p, 16, &steps);
        snprintf(q, sizeof q, "%s/t/f0", dir);
        CHECK(e == EACCES && access(q, F_OK) < 0, "rmtree: the first error reported (%d), the rest removed", e);
        snprintf(q, sizeof q, "%s/t/a/b", dir);
        chmod(q, 0755);
    }
    CHECK(run("/nonexistent-fbunit", 1, &steps) == ENOENT, "rmtree: a missing directory (ENOENT)");

    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    (void)!system(cmd);
}
