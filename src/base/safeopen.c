/* safeopen.c — path resolution without /proc magic links (see safeopen.h). */
#include "safeopen.h"

#include <fcntl.h>
#include <linux/magic.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>

#define MAX_LINKS 40

static bool on_proc(int dirfd)
{
    struct statfs sf;
    return fstatfs(dirfd, &sf) == 0 && sf.f_type == PROC_SUPER_MAGIC;
}

/* A symlink (linkfd, O_PATH) found in dirfd: its target, or NULL with errno
 * (ELOOP for a magic link). */
static char *link_target(int dirfd, int linkfd)
{
    char buf[4096];
    ssize_t n = readlinkat(linkfd, "", buf, sizeof buf - 1);
    if (n < 0)
        return NULL;
    if ((size_t)n >= sizeof buf - 1) {
        errno = ENAMETOOLONG;
        return NULL;
    }
    buf[n] = 0;
    if (on_proc(dirfd) && (buf[0] == '/' || strstr(buf, ":["))) {
        errno = ELOOP;
        return NULL;
    }
    return fb_xstrdup(buf);
}

int safe_open(const char *path, int flags, mode_t mode, bool follow_last)
{
    if (!*path) {
        errno = ENOENT;
        return -1;
    }
    /* rest: what is left to walk; it grows when a symlink is expanded. */
    char *rest = fb_xstrdup(path);
    char *p = rest;
    int links = 0, cur = -1, result = -1;
    int e = 0;
    cur = open(*p == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (cur < 0) {
        e = errno;
        goto out;
    }
    for (;;) {
        while (*p == '/')
            p++;
        size_t l = strcspn(p, "/");
        const char *after = p + l;
        while (*after == '/')
            after++;
        bool last = !*after;
        bool want_dir = last && p[l] == '/'; /* "dir/" */
        if (l == 0) {
            /* "/" itself, or a path that ends in slashes. */
            result = openat(cur, ".", (flags & ~O_CREAT) | O_CLOEXEC, mode);
            e = errno;
            goto out;
        }
        char name[256];
        if (l >= sizeof name) {
            e = ENAMETOOLONG;
            goto out;
        }
        memcpy(name, p, l);
        name[l] = 0;
        if (last && !want_dir && !follow_last) {
            result = openat(cur, name, flags | O_NOFOLLOW | O_CLOEXEC, mode);
            e = errno;
            goto out;
        }
        int nfd = openat(cur, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (nfd >= 0 && fstat(nfd, &st) < 0) {
            e = errno;
            close(nfd);
            goto out;
        }
        if (nfd >= 0 && S_ISLNK(st.st_mode)) {
            if (last && (flags & (O_CREAT | O_EXCL)) == (O_CREAT | O_EXCL)) {
                close(nfd); /* as open(2): O_EXCL does not follow a symlink */
                e = EEXIST;
                goto out;
            }
            if (++links > MAX_LINKS) {
                close(nfd);
                e = ELOOP;
                goto out;
            }
            char *target = link_target(cur, nfd);
            e = errno;
            close(nfd);
            if (!target)
                goto out;
            /* Walk the target, then what followed the link. */
            char *np = fb_xasprintf("%s%s%s", target, *after || want_dir ? "/" : "", after);
            if (target[0] == '/') {
                close(cur);
                cur = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
                if (cur < 0) {
                    e = errno;
                    free(target);
                    free(np);
                    goto out;
                }
            }
            free(target);
            free(rest);
            rest = p = np;
            continue;
        }
        if (last) {
            /* Not a symlink (or missing, for O_CREAT): open it for real;
             * O_NOFOLLOW in case a symlink was swapped in since. */
            if (nfd >= 0)
                close(nfd);
            result = openat(cur, name, flags | O_NOFOLLOW | O_CLOEXEC | (want_dir ? O_DIRECTORY : 0),
                            mode);
            e = errno;
            goto out;
        }
        if (nfd < 0) {
            e = errno;
            goto out;
        }
        if (!S_ISDIR(st.st_mode)) {
            close(nfd);
            e = ENOTDIR;
            goto out;
        }
        close(cur);
        cur = nfd;
        p = (char *)after;
    }
out:
    if (cur >= 0)
        close(cur);
    free(rest);
    if (result < 0)
        errno = e ? e : EIO;
    return result;
}
