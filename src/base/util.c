/* util.c — error reporting, EINTR-safe I/O, size/duration parsing and
 * allocation helpers declared in fb.h. */
#include "fb.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>

/* An error or warning is one line whatever values it quotes: control
 * characters in buf (a newline in --hostname, an option's value) become
 * \n, \r, \t or \xHH, cut to cap bytes with the terminating NUL. */
static void one_line(char *buf, size_t cap)
{
    char out[1024];
    size_t o = 0;
    for (const unsigned char *c = (const unsigned char *)buf; *c && o + 5 < sizeof out; c++) {
        if (*c >= 0x20 && *c != 0x7f) {
            out[o++] = (char)*c;
            continue;
        }
        out[o++] = '\\';
        if (*c == '\n' || *c == '\r' || *c == '\t')
            out[o++] = *c == '\n' ? 'n' : *c == '\r' ? 'r' : 't';
        else
            o += (size_t)snprintf(out + o, sizeof out - o, "x%02x", *c);
    }
    if (o >= cap)
        o = cap - 1;
    memcpy(buf, out, o);
    buf[o] = 0;
}

bool fb_has_ctl(const char *s)
{
    for (const unsigned char *c = (const unsigned char *)s; *c; c++)
        if (*c < 0x20 || *c == 0x7f)
            return true;
    return false;
}

static int verrf(struct fb_err *err, int code, int errnum, const char *fmt, va_list ap)
{
    if (!err)
        return -1;
    err->code = code;
    int n = vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    if (errnum && n >= 0 && (size_t)n < sizeof err->msg)
        snprintf(err->msg + n, sizeof err->msg - (size_t)n, ": %s", strerror(errnum));
    one_line(err->msg, sizeof err->msg);
    return -1;
}

int fb_errf(struct fb_err *err, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verrf(err, code, 0, fmt, ap);
    va_end(ap);
    return -1;
}

int fb_errno(struct fb_err *err, int code, const char *fmt, ...)
{
    int e = errno;
    va_list ap;
    va_start(ap, fmt);
    verrf(err, code, e, fmt, ap);
    va_end(ap);
    errno = e;
    return -1;
}

int fb_err_wrap(struct fb_err *err, const char *fmt, ...)
{
    if (!err)
        return -1;
    char ctx[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(ctx, sizeof ctx, fmt, ap);
    va_end(ap);
    /* ctx, ": ", then as much of the old message as fits. */
    size_t cl = strnlen(ctx, sizeof ctx - 1), ol = strnlen(err->msg, sizeof err->msg - 1);
    if (ol && cl + 2 < sizeof err->msg) {
        size_t keep = ol < sizeof err->msg - 1 - cl - 2 ? ol : sizeof err->msg - 1 - cl - 2;
        memmove(err->msg + cl + 2, err->msg, keep);
        memcpy(err->msg, ctx, cl);
        err->msg[cl] = ':';
        err->msg[cl + 1] = ' ';
        err->msg[cl + 2 + keep] = 0;
    } else {
        memcpy(err->msg, ctx, cl);
        err->msg[cl] = 0;
    }
    one_line(err->msg, sizeof err->msg);
    if (!err->code)
        err->code = FB_EXIT_SETUP;
    return -1;
}

static void notes_add(struct fb_notes *n, const char *line)
{
    size_t l = strlen(line);
    /* One line always: a newline inside becomes a space. */
    if (n->len + l + 1 >= sizeof n->text) {
        n->dropped++;
        return;
    }
    for (size_t i = 0; i < l; i++)
        n->text[n->len + i] = line[i] == '\n' ? ' ' : line[i];
    n->len += l;
    n->text[n->len++] = '\n';
    n->text[n->len] = 0;
    n->n++;
}

void fb_note(struct fb_err *err, const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (err && err->notes)
        notes_add(err->notes, buf);
    else
        fb_warn("%s", buf);
}

void fb_notes_print(struct fb_notes *notes)
{
    if (!notes)
        return;
    char *line = notes->text, *end = notes->text + notes->len, *nl;
    while (line < end && (nl = memchr(line, '\n', (size_t)(end - line)))) {
        fb_warn("%.*s", (int)(nl - line), line);
        line = nl + 1;
    }
    if (notes->dropped)
        fb_warn("(%u more warnings not shown)", notes->dropped);
    notes->len = 0;
    notes->n = notes->dropped = 0;
    notes->text[0] = 0;
}

static void (*warn_sink)(const char *msg, size_t len);

void fb_warn_sink(void (*sink)(const char *msg, size_t len))
{
    warn_sink = sink;
}

void fb_warn(const char *fmt, ...)
{
    char buf[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    one_line(buf, sizeof buf - 1);
    n = (int)strlen(buf);
    if (warn_sink) {
        warn_sink(buf, (size_t)n);
        return;
    }
    buf[n++] = '\n';
    fb_write_all(STDERR_FILENO, "fluebox: ", 9);
    fb_write_all(STDERR_FILENO, buf, (size_t)n);
}

void fb_iso_time(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%03ldZ", ts.tv_nsec / 1000000L);
}

int fb_write_all(int fd, const void *buf, size_t len)
{
    const char *p = buf;
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0) {
            errno = EIO;
            return -1;
        }
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

/* A stream (not a regular file), or a file that cannot be replaced:
 * written in place. */
static int write_stream(const char *path, const void *data, size_t len)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_NOCTTY | O_CLOEXEC, 0666);
    if (fd < 0)
        return -1;
    int rc = fb_write_all(fd, data, len);
    int e = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    errno = e;
    return rc;
}

int fb_write_output(const char *path, const void *data, size_t len)
{
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && !S_ISREG(st.st_mode))
        return write_stream(path, data, len);
    /* The file to replace: path, or where its symlinks end. */
    char *real = NULL;
    struct stat lst;
    if (lstat(path, &lst) == 0 && S_ISLNK(lst.st_mode) && !(real = realpath(path, NULL)))
        return write_stream(path, data, len); /* dangling: created through it, as open() does */
    const char *target = real ? real : path;
    const char *slash = strrchr(target, '/');
    char tmp[4096];
    uint64_t r = fb_now_ns() ^ ((uint64_t)getpid() << 40);
    int n = snprintf(tmp, sizeof tmp, "%.*s.fluebox-%d-%016llx.tmp",
                     slash ? (int)(slash - target + 1) : 0, target, (int)getpid(),
                     (unsigned long long)r);
    if (n < 0 || (size_t)n >= sizeof tmp) {
        free(real);
        errno = ENAMETOOLONG;
        return -1;
    }
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        int e = errno;
        free(real);
        /* A writable file in a directory we may not write in: in place. */
        if (exists && (e == EACCES || e == EPERM || e == EROFS))
            return write_stream(path, data, len);
        errno = e;
        return -1;
    }
    if (exists) {
        fchmod(fd, st.st_mode & 07777);
        if (geteuid() == 0)
            (void)!fchown(fd, st.st_uid, st.st_gid);
    }
    int rc = fb_write_all(fd, data, len);
    if (rc == 0)
        rc = fdatasync(fd);
    int e = errno;
    if (close(fd) < 0 && rc == 0) {
        rc = -1;
        e = errno;
    }
    if (rc == 0 && rename(tmp, target) < 0) {
        rc = -1;
        e = errno;
    }
    if (rc < 0)
        unlink(tmp);
    free(real);
    errno = e;
    return rc;
}

ssize_t fb_read_full(int fd, void *buf, size_t len)
{
    char *p = buf;
    size_t got = 0;
    while (got < len) {
        ssize_t n = read(fd, p + got, len - got);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return -1;
        }
        if (n == 0)
            break;
        got += (size_t)n;
    }
    return (ssize_t)got;
}

int fb_write_fileat(int dirfd, const char *path, const char *data)
{
    int fd;
    do
        fd = openat(dirfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    /* One write() per value: procfs and cgroupfs parse each write separately. */
    size_t len = strlen(data);
    ssize_t n;
    do
        n = write(fd, data, len);
    while (n < 0 && errno == EINTR);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    if ((size_t)n != len) {
        errno = EIO;
        return -1;
    }
    return 0;
}

int fb_write_file(const char *path, const char *data)
{
    return fb_write_fileat(AT_FDCWD, path, data);
}

ssize_t fb_read_fileat(int dirfd, const char *path, char *buf, size_t cap)
{
    if (cap == 0) {
        errno = EINVAL;
        return -1;
    }
    int fd;
    do
        fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    while (fd < 0 && errno == EINTR);
    if (fd < 0)
        return -1;
    ssize_t n = fb_read_full(fd, buf, cap - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    buf[n] = 0;
    return n;
}

ssize_t fb_read_file(const char *path, char *buf, size_t cap)
{
    return fb_read_fileat(AT_FDCWD, path, buf, cap);
}

int fb_parse_u64(const char *s, uint64_t *out)
{
    if (!s || !*s || !isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *end)
        return -1;
    *out = v;
    return 0;
}

/* Sizes: a positive number with an optional K/M/G/T suffix (powers of 1024,
 * an optional trailing "B" or "iB"), or "unlimited"/"max" which gives -1. */
int fb_parse_size(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    if (!strcmp(s, "unlimited") || !strcmp(s, "max")) {
        *out = -1;
        return 0;
    }
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return -1;
    double mul = 1;
    switch (toupper((unsigned char)*end)) {
    case 0: break;
    case 'B': break;
    case 'K': mul = 1024.0; end++; break;
    case 'M': mul = 1024.0 * 1024; end++; break;
    case 'G': mul = 1024.0 * 1024 * 1024; end++; break;
    case 'T': mul = 1024.0 * 1024 * 1024 * 1024; end++; break;
    default: return -1;
    }
    if (mul > 1) {
        if (*end == 'i')
            end++;
        if (toupper((unsigned char)*end) == 'B')
            end++;
    } else if (toupper((unsigned char)*end) == 'B') {
        end++;
    }
    if (*end)
        return -1;
    v *= mul;
    if (v < 1 || v > 9.0e18)
        return -1;
    *out = (int64_t)v;
    return 0;
}

/* Durations: 500ms, 30s, 5m, 1h, 1.5s; a bare number is seconds. "none" = -1. */
int fb_parse_duration_ms(const char *s, int64_t *out)
{
    if (!s || !*s)
        return -1;
    if (!strcmp(s, "none") || !strcmp(s, "unlimited")) {
        *out = -1;
        return 0;
    }
    if (!isdigit((unsigned char)*s))
        return -1;
    errno = 0;
    char *end;
    double v = strtod(s, &end);
    if (errno || end == s || v <= 0)
        return -1;
    double ms;
    if (!*end || !strcmp(end, "s"))
        ms = v * 1000;
    else if (!strcmp(end, "ms"))
        ms = v;
    else if (!strcmp(end, "m") || !strcmp(end, "min"))
        ms = v * 60000;
    else if (!strcmp(end, "h"))
        ms = v * 3600000;
    else
        return -1;
    if (ms < 1 || ms > 9.0e15)
        return -1;
    *out = (int64_t)(ms + 0.5);
    return 0;
}

uint64_t fb_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static void oom(void)
{
    static const char m[] = "fluebox: out of memory\n";
    (void)!write(STDERR_FILENO, m, sizeof m - 1);
    _exit(FB_EXIT_SETUP);
}

void *fb_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p)
        oom();
    return p;
}

void *fb_xcalloc(size_t n, size_t m)
{
    void *p = calloc(n ? n : 1, m ? m : 1);
    if (!p)
        oom();
    return p;
}

void *fb_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q)
        oom();
    return q;
}

char *fb_xstrdup(const char *s)
{
    if (!s)
        return NULL;
    char *p = strdup(s);
    if (!p)
        oom();
    return p;
}

char *fb_xstrndup(const char *s, size_t n)
{
    char *p = strndup(s, n);
    if (!p)
        oom();
    return p;
}

char *fb_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        oom();
    return s;
}

static char *title_start, *title_end;

void fb_proctitle_init(int argc, char **argv)
{
    if (argc < 1 || !argv[0])
        return;
    title_start = argv[0];
    title_end = argv[argc - 1] + strlen(argv[argc - 1]) + 1;
}

void fb_proctitle_set(const char *title)
{
    if (!title_start || title_end <= title_start)
        return;
    size_t room = (size_t)(title_end - title_start);
    memset(title_start, 0, room);
    size_t n = strlen(title);
    memcpy(title_start, title, n < room - 1 ? n : room - 1);
}

int fb_set_ids_raw(uid_t uid, gid_t gid)
{
    if (syscall(SYS_setresgid, gid, gid, gid) < 0)
        return -1;
    return syscall(SYS_setresuid, uid, uid, uid) < 0 ? -1 : 0;
}

int fb_drop_groups_raw(void)
{
    return syscall(SYS_setgroups, 0, NULL) < 0 ? -1 : 0;
}

static int cmp_int(const void *a, const void *b)
{
    int x = *(const int *)a, y = *(const int *)b;
    return (x > y) - (x < y);
}

void fb_close_except(int *keep, size_t n)
{
    qsort(keep, n, sizeof *keep, cmp_int);
    unsigned from = 3;
    for (size_t i = 0; i < n; i++) {
        if (keep[i] < (int)from)
            continue;
        if ((unsigned)keep[i] > from)
            syscall(SYS_close_range, from, (unsigned)keep[i] - 1, 0);
        from = (unsigned)keep[i] + 1;
    }
    syscall(SYS_close_range, from, ~0U, 0);
}
