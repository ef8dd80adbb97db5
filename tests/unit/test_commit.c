/* Unit tests of committing a copy-on-write layer (src/cow/commit.c) on plain
 * directories: a "host" workspace and an "upper" layer built by hand (a
 * whiteout is an empty file with user.overlay.whiteout, as overlayfs's
 * userxattr mode writes it). The progress hook is the hold point: it runs
 * between the checks and each rename, and there it edits host files the
 * way an editor saving during the commit would. */
#include "changes.h"
#include "unit.h"

#include <fcntl.h>
#include <ftw.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <time.h>

struct fixture {
    char root[64], host[96], upper[96];
    struct fb_cow *c;
};

static void put(const char *dir, const char *name, const char *text, mode_t mode)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);
    if (fd >= 0) {
        (void)!write(fd, text, strlen(text));
        fchmod(fd, mode);
        close(fd);
    }
}

static const char *get(const char *dir, const char *name)
{
    static char buf[256];
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    int fd = open(p, O_RDONLY | O_CLOEXEC);
    ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
    if (fd >= 0)
        close(fd);
    buf[n > 0 ? n : 0] = 0;
    return fd >= 0 ? buf : "(missing)";
}

/* A deletion in the upper layer. */
static bool whiteout(const char *dir, const char *name)
{
    char p[256];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    put(dir, name, "", 0644);
    if (setxattr(p, "user.overlay.whiteout", "", 0, 0) == 0)
        return true;
    unlink(p);
    return mknod(p, S_IFCHR | 0600, makedev(0, 0)) == 0;
}

/* The layer's history starts now: what the host has so far predates it,
 * and (once the coarse clock that file times come from has passed the
 * start) anything changed later is newer. Waits for that condition. */
static void start_now(struct fb_cow *c)
{
    clock_gettime(CLOCK_REALTIME, &c->start);
    for (;;) {
        struct timespec now;
        clock_gettime(CLOCK_REALTIME_COARSE, &now);
        if (now.tv_sec > c->start.tv_sec ||
            (now.tv_sec == c->start.tv_sec && now.tv_nsec >= c->start.tv_nsec))
            return;
        struct timespec nap = {0, 200000};
        nanosleep(&nap, NULL);
    }
}

static bool setup(struct fixture *f)
{
    snprintf(f->root, sizeof f->root, "/tmp/fbunit-commit.XXXXXX");
    if (!mkdtemp(f->root))
        return false;
    snprintf(f->host, sizeof f->host, "%s/host", f->root);
    snprintf(f->upper, sizeof f->upper, "%s/upper", f->root);
    mkdir(f->host, 0755);
    mkdir(f->upper, 0755);
    f->c = fb_xcalloc(1, sizeof *f->c);
    f->c->workspace = fb_xstrdup(f->host);
    f->c->host = open(f->host, O_PATH | O_DIRECTORY | O_CLOEXEC);
    f->c->upper = open(f->upper, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    f->c->store = f->c->userns = f->c->mntns = -1;
    f->c->owner_uid = getuid();
    f->c->owner_gid = getgid();
    return f->c->host >= 0 && f->c->upper >= 0;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(p) < 0 ? 0 : 0;
}

static void teardown(struct fixture *f)
{
    cow_free(f->c);
    nftw(f->root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* No temporary file of the commit is left in the host directory. */
static bool no_leftovers(const char *dir)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "ls -A '%s' | grep -q fluebox-commit", dir);
    return system(cmd) != 0;
}

static bool has_conflict(const struct fb_commit *r, const char *path, const char *why)
{
    for (size_t i = 0; i < r->nconflicts; i++)
        if (!strcmp(r->conflicts[i].path, path) && strstr(r->conflicts[i].reason, why))
            return true;
    return false;
}

struct hold {
    const char *host;
    size_t calls; /* "commit" steps seen */
};

/* The hold point: before the first rename, the host saves b.txt and
 * e.txt (which the commit modifies and deletes). */
static bool edit_on_host(void *arg, const char *phase, size_t done, size_t total)
{
    struct hold *h = arg;
    (void)done, (void)total;
    if (strcmp(phase, "commit"))
        return true;
    if (h->calls++ == 0) {
        put(h->host, "b.txt", "saved on the host\n", 0644);
        put(h->host, "e.txt", "saved on the host\n", 0644);
    }
    return true;
}

/* Cancel at the 100th step of applying. */
static bool stop_at_100(void *arg, const char *phase, size_t done, size_t total)
{
    size_t *calls = arg;
    (void)done, (void)total;
    return strcmp(phase, "commit") || ++*calls < 100;
}

static void edit_during_commit(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(0, "commit: test set-up");
        return;
    }
    const char *names[] = {"a.txt", "b.txt", "c.txt", "e.txt", "f.txt"};
    for (size_t i = 0; i < FB_ARRAY_LEN(names); i++)
        put(f.host, names[i], "old\n", 0644);
    start_now(f.c);
    put(f.upper, "a.txt", "A\n", 0644);
    put(f.upper, "b.txt", "B\n", 0644);
    put(f.upper, "c.txt", "C\n", 0644);
    put(f.upper, "new.txt", "N\n", 0644);
    bool wo = whiteout(f.upper, "e.txt") && whiteout(f.upper, "f.txt");
    struct fb_changes ch;
    struct fb_err err = {0};
    struct fb_commit res;
    struct hold h = {.host = f.host};
    struct fb_cow_progress prog = {edit_on_host, &h};
    int rc = -1;
    if (changes_scan(f.c, &ch, NULL, &err) == 0) {
        rc = commit_apply(f.c, &ch, NULL, 0, false, &prog, &res, &err);
        changes_free(&ch);
    }
    CHECK(rc < 0 && has_conflict(&res, "b.txt", "changed on the host during the commit") &&
              (!wo || has_conflict(&res, "e.txt", "changed on the host during the commit")) &&
              res.nconflicts == (wo ? 2u : 1u) && strstr(err.msg, "during the commit"),
          "commit: files the host saved during the commit are conflicts (%zu: %s)",
          res.nconflicts, err.msg);
    CHECK(!strcmp(get(f.host, "b.txt"), "saved on the host\n") &&
              (!wo || !strcmp(get(f.host, "e.txt"), "saved on the host\n")),
          "commit: the host's saves during the commit are kept");
    CHECK(!strcmp(get(f.host, "a.txt"), "A\n") && !strcmp(get(f.host, "c.txt"), "C\n") &&
              !strcmp(get(f.host, "new.txt"), "N\n") &&
              (!wo || !strcmp(get(f.host, "f.txt"), "(missing)")) &&
              res.applied == (wo ? 4u : 3u) && no_leftovers(f.host),
          "commit: everything else is committed (%zu applied), no temporary file left",
          res.applied);
    commit_free(&res);
    teardown(&f);
}

static void cancel(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(0, "commit: test set-up");
        return;
    }
    start_now(f.c);
    char name[16];
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "n%03d", i);
        put(f.upper, name, "new\n", 0644);
    }
    struct fb_changes ch;
    struct fb_err err = {0};
    struct fb_commit res;
    size_t calls = 0;
    struct fb_cow_progress prog = {stop_at_100, &calls};
    int rc = -1;
    if (changes_scan(f.c, &ch, NULL, &err) == 0) {
        rc = commit_apply(f.c, &ch, NULL, 0, false, &prog, &res, &err);
        changes_free(&ch);
    }
    size_t there = 0;
    for (int i = 0; i < 200; i++) {
        snprintf(name, sizeof name, "n%03d", i);
        there += strcmp(get(f.host, name), "(missing)") != 0;
    }
    CHECK(rc < 0 && strstr(res.error, "cancelled") && res.applied == 99 && there == 99 &&
              no_leftovers(f.host),
          "commit: cancelled through the progress hook, it stops between two files (%zu applied, "
          "%zu there, %s)",
          res.applied, there, res.error);
    commit_free(&res);
    teardown(&f);
}

static void mode_only_hard_link(void)
{
    struct fixture f;
    if (!setup(&f)) {
        CHECK(0, "commit: test set-up");
        return;
    }
    put(f.root, "outside.txt", "shared\n", 0644);
    char out[160], in[160];
    snprintf(out, sizeof out, "%s/outside.txt", f.root);
    snprintf(in, sizeof in, "%s/tool", f.host);
    bool linked = link(out, in) == 0;
    start_now(f.c);
    put(f.upper, "tool", "shared\n", 0755);
    struct fb_changes ch;
    struct fb_err err = {0};
    struct fb_commit res;
    int rc = -1;
    bool mode_only = false;
    if (changes_scan(f.c, &ch, NULL, &err) == 0) {
        mode_only = ch.n == 1 && ch.v[0].status == FB_CHG_MODIFIED && !ch.v[0].content;
        rc = commit_apply(f.c, &ch, NULL, 0, false, NULL, &res, &err);
        changes_free(&ch);
        commit_free(&res);
    }
    struct stat so, si;
    CHECK(linked && mode_only && rc == 0 && stat(out, &so) == 0 && stat(in, &si) == 0 &&
              (so.st_mode & 07777) == 0644 && (si.st_mode & 07777) == 0755 &&
              so.st_nlink == 1 && !strcmp(get(f.host, "tool"), "shared\n"),
          "commit: a mode-only change makes a new inode; the hard-linked file outside keeps its "
          "mode (%o)",
          (unsigned)(so.st_mode & 07777));
    teardown(&f);
}

void unit_commit(void)
{
    edit_during_commit();
    cancel();
    mode_only_hard_link();
}
