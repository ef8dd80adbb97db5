/* mount_ca.c — the per-run CA in the sandbox's trust store (mount.h,
 * docs/secrets.md). /etc/ssl/certs inside becomes a small read-only tmpfs
 * holding what the host's has (its links recreated, its small files
 * copied; subdirectories left out) with two changes: ca-certificates.crt
 * is the host's bundle followed by the CA, and fluebox-ca.crt is the CA
 * alone, named by its subject hash (HASH.0) for OpenSSL's hashed-directory
 * look-up. The CA's private key never comes here: only its certificate,
 * sent by the supervisor. Runs in the child, in the root being built. */
#include "mount.h"

#include <dirent.h>
#include <fcntl.h>
#include <linux/mount.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/syscall.h>

#define CERTS "etc/ssl/certs"
#define STAGE "fluebox-certs" /* in the new root, removed before it is done */
#define COPY_MAX (4 << 20)     /* a regular file larger than this is left out */
#define BUNDLE "ca-certificates.crt"

/* All of fd (from offset 0), malloc'ed and NUL-terminated; NULL on error. */
static char *read_fd(int fd, size_t max, size_t *len)
{
    size_t cap = 65536, n = 0;
    char *b = fb_xmalloc(cap + 1);
    for (;;) {
        if (n == cap) {
            if (cap >= max) {
                free(b);
                errno = EFBIG;
                return NULL;
            }
            cap *= 2;
            b = fb_xrealloc(b, cap + 1);
        }
        ssize_t r = pread(fd, b + n, cap - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            free(b);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    b[n] = 0;
    *len = n;
    return b;
}

static int write_file(const char *rel, const char *a, size_t al, const char *b, size_t bl)
{
    int fd = open(rel, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC | O_NOFOLLOW, 0644);
    if (fd < 0)
        return -1;
    int rc = fb_write_all(fd, a, al);
    if (rc == 0 && bl)
        rc = fb_write_all(fd, b, bl);
    int e = errno;
    close(fd);
    errno = e;
    return rc;
}

/* The host's entries into the stage: links as links, small files copied. */
static int copy_host(int dfd, struct fb_err *err)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return fb_errno(err, FB_EXIT_SETUP, "reading /" CERTS);
    }
    struct dirent *de;
    int rc = 0;
    while (rc == 0 && (de = readdir(d))) {
        const char *n = de->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, BUNDLE) ||
            !strcmp(n, "fluebox-ca.crt"))
            continue;
        struct stat st;
        if (fstatat(dirfd(d), n, &st, AT_SYMLINK_NOFOLLOW) < 0)
            continue;
        char dst[512];
        snprintf(dst, sizeof dst, STAGE "/%s", n);
        if (S_ISLNK(st.st_mode)) {
            char target[4096];
            ssize_t tl = readlinkat(dirfd(d), n, target, sizeof target - 1);
            if (tl <= 0)
                continue;
            target[tl] = 0;
            if (symlink(target, dst) < 0)
                rc = fb_errno(err, FB_EXIT_SETUP, "creating /" CERTS "/%s", n);
        } else if (S_ISREG(st.st_mode) && st.st_size <= COPY_MAX) {
            int fd = openat(dirfd(d), n, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
            size_t len;
            char *data = fd >= 0 ? read_fd(fd, COPY_MAX, &len) : NULL;
            if (fd >= 0)
                close(fd);
            if (data && write_file(dst, data, len, NULL, 0) < 0)
                rc = fb_errno(err, FB_EXIT_SETUP, "creating /" CERTS "/%s", n);
            free(data);
        }
    }
    closedir(d);
    return rc;
}

static int populate(int ca_fd, unsigned long hash, struct fb_err *err)
{
    size_t pl, hl = 0;
    cleanup_free char *pem = read_fd(ca_fd, 1 << 20, &pl);
    if (!pem)
        return fb_errno(err, FB_EXIT_SETUP, "reading the per-run CA");
    int dfd = open(CERTS, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    cleanup_free char *host = NULL;
    if (dfd >= 0) {
        int bfd = openat(dfd, BUNDLE, O_RDONLY | O_CLOEXEC);
        if (bfd >= 0) {
            host = read_fd(bfd, 64 << 20, &hl);
            close(bfd);
        }
        if (copy_host(dfd, err) < 0)
            return -1;
    }
    if (!host)
        host = fb_xstrdup("");
    /* The bundle: the host's, a line end if it lacks one, the CA. */
    bool nl = hl && host[hl - 1] != '\n';
    if (nl) {
        host = fb_xrealloc(host, hl + 2);
        host[hl++] = '\n';
        host[hl] = 0;
    }
    if (write_file(STAGE "/" BUNDLE, host, hl, pem, pl) < 0 ||
        write_file(STAGE "/fluebox-ca.crt", pem, pl, NULL, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing the per-run CA into /" CERTS);
    for (int i = 0; i < 10; i++) {
        char link[64];
        snprintf(link, sizeof link, STAGE "/%08lx.%d", hash, i);
        if (symlink("fluebox-ca.crt", link) == 0)
            return 0;
        if (errno != EEXIST)
            break;
    }
    return fb_errno(err, FB_EXIT_SETUP, "naming the per-run CA by its hash in /" CERTS);
}

int mount_ca_certs(int ca_fd, unsigned long hash, struct fb_err *err)
{
    struct stat st;
    if (stat(CERTS, &st) < 0) {
        /* No host certificate directory: make one in the root's /etc. */
        if (mkdir("etc/ssl", 0755) < 0 && errno != EEXIST)
            return fb_errno(err, FB_EXIT_SETUP, "creating /etc/ssl for the per-run CA");
        if (mkdir(CERTS, 0755) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "creating /" CERTS " for the per-run CA");
    }
    if (mkdir(STAGE, 0755) < 0 ||
        mount("tmpfs", STAGE, "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
              "mode=0755,size=64m,nr_inodes=8192") < 0)
        return fb_errno(err, FB_EXIT_SETUP, "a tmpfs for /" CERTS);
    if (populate(ca_fd, hash, err) < 0)
        return -1;
    struct mount_attr ro = {.attr_set = MOUNT_ATTR_RDONLY};
    if (syscall(SYS_mount_setattr, AT_FDCWD, STAGE, 0, &ro, sizeof ro) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "making /" CERTS " read-only");
    if (mount(STAGE, CERTS, NULL, MS_MOVE, NULL) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "mounting /" CERTS);
    if (rmdir(STAGE) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "removing the staging directory");
    return 0;
}
