/* userdir.c — the user's private runtime directory and once-per-boot
 * warnings (see userdir.h). */
#include "userdir.h"

#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

int fb_user_dir_check(const char *dir, uid_t uid, struct fb_err *err)
{
    struct stat st;
    if (dir[0] != '/')
        return fb_errf(err, FB_EXIT_SETUP, "%s: not an absolute path", dir);
    if (lstat(dir, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", dir);
    if (!S_ISDIR(st.st_mode))
        return fb_errf(err, FB_EXIT_SETUP, "%s is not a directory: refusing to use it", dir);
    if (st.st_uid != uid)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s is owned by uid %u, not by uid %u: refusing to use it", dir,
                       (unsigned)st.st_uid, (unsigned)uid);
    if (st.st_mode & 077)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s has mode %04o; it must be 0700 (others could replace what is in "
                       "it): refusing to use it",
                       dir, (unsigned)(st.st_mode & 07777));
    return 0;
}

/* The name uid has one user namespace up, from /proc/self/uid_map: in a
 * user namespace (`unshare -r`, a sandbox), uid 0 is someone else outside,
 * and a directory named for it in a /tmp shared with that namespace would
 * take the name of the real root's (or another user's) directory. The
 * identity map (the initial namespace) gives uid back. */
uid_t fb_outer_uid(uid_t uid)
{
    char map[4096];
    if (fb_read_file("/proc/self/uid_map", map, sizeof map) <= 0)
        return uid;
    for (char *line = map; *line;) {
        char *next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        unsigned long in, out, count;
        if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 && uid >= in &&
            uid - in < count)
            return (uid_t)(out + (uid - in));
        if (!next)
            break;
        line = next;
    }
    return uid;
}

int fb_user_dir(char *out, size_t cap, bool create, struct fb_err *err)
{
    uid_t uid = geteuid();
    /* Directories are named for the uid outside (see fb_outer_uid); their
     * owner, as this process sees it, must still be uid. */
    uid_t name = fb_outer_uid(uid);
    struct fb_err ignored;
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    if (xdg && *xdg && strlen(xdg) < cap && strlen(xdg) < 200 &&
        fb_user_dir_check(xdg, uid, &ignored) == 0) {
        snprintf(out, cap, "%s", xdg);
        return 0;
    }
    char d[64];
    snprintf(d, sizeof d, "/run/user/%u", (unsigned)name);
    if (fb_user_dir_check(d, uid, &ignored) == 0) {
        snprintf(out, cap, "%s", d);
        return 0;
    }
    snprintf(d, sizeof d, "/tmp/fluebox-%u", (unsigned)name);
    if (create && mkdir(d, 0700) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "creating %s", d);
    struct stat st;
    if (create && lstat(d, &st) == 0 && S_ISDIR(st.st_mode) && st.st_uid == uid &&
        (st.st_mode & 077) && chmod(d, 0700) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "chmod %s", d); /* ours: made private again */
    if (fb_user_dir_check(d, uid, err) < 0)
        return -1;
    snprintf(out, cap, "%s", d);
    return 0;
}

/* Has key been warned about since boot? Marks it when not. */
static bool said_before(const char *key)
{
    char boot[64];
    if (fb_read_file("/proc/sys/kernel/random/boot_id", boot, sizeof boot) <= 0)
        return false;
    boot[strcspn(boot, "\n")] = 0;
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (const char *c = key; *c; c++)
        h = (h ^ (unsigned char)*c) * 1099511628211ull;
    char dir[256], path[320], old[64];
    if (fb_user_dir(dir, sizeof dir, true, NULL) < 0)
        return false;
    snprintf(path, sizeof path, "%s/.fluebox-said-%016llx", dir, (unsigned long long)h);
    int fd = open(path, O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return false;
    ssize_t n = fb_read_full(fd, old, sizeof old - 1);
    old[n > 0 ? n : 0] = 0;
    bool said = !strcmp(old, boot);
    if (!said && (ftruncate(fd, 0) < 0 || pwrite(fd, boot, strlen(boot), 0) < 0))
        said = false;
    close(fd);
    return said;
}

void fb_note_once(struct fb_err *err, const char *key, const char *fmt, ...)
{
    if (said_before(key))
        return;
    char buf[1000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    fb_note(err, "%s", buf);
}
