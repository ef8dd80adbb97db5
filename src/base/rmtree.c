/* rmtree.c — removing a directory tree a bounded number of entries at a
 * time (rmtree.h).
 *
 * The walk keeps one open directory per level, from the tree's root down to
 * where it is; each step reads one entry of the deepest: a file, symlink or
 * other non-directory is unlinked, a directory is opened and becomes the
 * deepest, and a directory read to its end is closed and removed from the
 * level above. Like rm -rf it goes on past an error and reports the first
 * one; a directory that keeps an entry then fails with ENOTEMPTY, which is
 * not reported over the first error. */
#include "rmtree.h"

#include "fb.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

struct rmlevel {
    DIR *d;
    char *name; /* in the level above (level 0: the path given) */
};

struct rmtree {
    dev_t dev;
    int first; /* the first error */
    struct rmlevel *lv;
    size_t n, cap;
};

static void note(struct rmtree *t, int e)
{
    if (!t->first)
        t->first = e;
}

/* The directory that holds level i's directory. */
static int parent_fd(struct rmtree *t, size_t i)
{
    return i == 0 ? AT_FDCWD : dirfd(t->lv[i - 1].d);
}

static int push(struct rmtree *t, int pfd, const char *name)
{
    int fd = openat(pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return errno;
    DIR *d = fdopendir(fd);
    if (!d) {
        int e = errno;
        close(fd);
        return e;
    }
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        t->lv = fb_xrealloc(t->lv, t->cap * sizeof *t->lv);
    }
    t->lv[t->n++] = (struct rmlevel){d, fb_xstrdup(name)};
    return 0;
}

struct rmtree *rmtree_start(const char *path, dev_t dev, int *err)
{
    struct rmtree *t = fb_xcalloc(1, sizeof *t);
    t->dev = dev;
    int e = push(t, AT_FDCWD, path);
    if (e) {
        free(t);
        *err = e;
        return NULL;
    }
    return t;
}

bool rmtree_step(struct rmtree *t, unsigned budget)
{
    while (t->n && budget--) {
        struct rmlevel *top = &t->lv[t->n - 1];
        int dfd = dirfd(top->d);
        errno = 0;
        struct dirent *de = readdir(top->d);
        if (!de) {
            /* Read to its end (or failed): close it, remove it. */
            if (errno)
                note(t, errno);
            char *name = top->name;
            closedir(top->d);
            t->n--;
            if (unlinkat(parent_fd(t, t->n), name, AT_REMOVEDIR) < 0)
                note(t, errno);
            free(name);
            continue;
        }
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        struct stat st;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            note(t, errno);
        } else if (!S_ISDIR(st.st_mode)) {
            if (unlinkat(dfd, de->d_name, 0) < 0)
                note(t, errno);
        } else if (st.st_dev != t->dev) {
            note(t, EBUSY); /* a mount point: never removed through */
        } else {
            int e = push(t, dfd, de->d_name);
            if (e)
                note(t, e);
        }
    }
    return t->n == 0;
}

int rmtree_free(struct rmtree *t)
{
    int e = t->first;
    while (t->n) {
        t->n--;
        closedir(t->lv[t->n].d);
        free(t->lv[t->n].name);
    }
    free(t->lv);
    free(t);
    return e;
}
