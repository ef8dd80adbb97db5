/* probe.h — the little framework every escape probe is built on.
 *
 * A probe is one static program that tries one way out of the sandbox and
 * prints exactly one line:
 *
 *     VERDICT name: detail
 *
 * where VERDICT is BLOCKED (every attempt failed), ESCAPED (at least one
 * attempt worked), SKIP (a precondition is missing, the reason follows) or
 * ERROR (the probe itself misbehaved; the runner counts it as a failure).
 *
 * Host context (the path of a secret file, a host pid, a loopback port, ...)
 * arrives as key=value arguments from tests/probes/run.sh; parg("key") reads
 * one. Every probe must be able to report ESCAPED when it runs with no
 * sandbox at all: the runner checks that.
 *
 * The attempt runs in a forked child so that a seccomp filter which kills the
 * offending process (SIGSYS) still lets the parent print a verdict, and so
 * that whatever the attempt changes about its own process (namespaces, root,
 * personality) dies with it. The child writes its result into a shared
 * anonymous mapping.
 *
 * Header-only on purpose: each probe is a single translation unit. */
#ifndef FLUEBOX_PROBE_H
#define FLUEBOX_PROBE_H

#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

enum { PV_BLOCKED, PV_ESCAPED, PV_SKIP, PV_ERROR };

struct probe_res {
    int verdict;
    bool skip;      /* set by res_skip: wins over BLOCKED, not over ESCAPED */
    bool error;     /* set by res_error: wins over everything but ESCAPED */
    size_t len;
    char detail[1500];
};

static int probe_argc;
static char **probe_argv;

/* Value of key=value among the arguments, or NULL. */
static inline const char *parg(const char *key)
{
    size_t k = strlen(key);
    for (int i = 1; i < probe_argc; i++)
        if (strncmp(probe_argv[i], key, k) == 0 && probe_argv[i][k] == '=')
            return probe_argv[i] + k + 1;
    return NULL;
}

static inline long parg_long(const char *key, long dflt)
{
    const char *v = parg(key);
    if (!v || !*v)
        return dflt;
    char *end;
    errno = 0;
    long n = strtol(v, &end, 0);
    return (errno || *end) ? dflt : n;
}

/* Symbolic errno name ("EPERM"), for details the runner can read at a glance. */
static inline const char *ename(int e)
{
    const char *n = strerrorname_np(e);
    return n ? n : "E?";
}

static inline void res_vadd(struct probe_res *r, const char *fmt, va_list ap)
{
    if (r->len >= sizeof(r->detail) - 1)
        return;
    if (r->len > 0) {
        int n = snprintf(r->detail + r->len, sizeof(r->detail) - r->len, "; ");
        if (n > 0)
            r->len += (size_t)n;
        if (r->len >= sizeof(r->detail))
            r->len = sizeof(r->detail) - 1;
    }
    int n = vsnprintf(r->detail + r->len, sizeof(r->detail) - r->len, fmt, ap);
    if (n > 0)
        r->len += (size_t)n;
    if (r->len >= sizeof(r->detail))
        r->len = sizeof(r->detail) - 1;
}

/* A note about an attempt that did not get anywhere. */
__attribute__((format(printf, 2, 3))) static inline void res_note(struct probe_res *r,
                                                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    res_vadd(r, fmt, ap);
    va_end(ap);
}

/* An attempt that worked: the verdict becomes ESCAPED. */
__attribute__((format(printf, 2, 3))) static inline void res_escape(struct probe_res *r,
                                                                    const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->verdict = PV_ESCAPED;
    res_vadd(r, fmt, ap);
    va_end(ap);
}

/* A precondition is missing (say which). */
__attribute__((format(printf, 2, 3))) static inline void res_skip(struct probe_res *r,
                                                                  const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->skip = true;
    res_vadd(r, fmt, ap);
    va_end(ap);
}

/* The probe could not do its job (not an escape, not a block). */
__attribute__((format(printf, 2, 3))) static inline void res_error(struct probe_res *r,
                                                                   const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    r->error = true;
    res_vadd(r, fmt, ap);
    va_end(ap);
}

/* Run fn in a child process with a wall-clock limit. Returns the child's wait
 * status in *status; the child's notes land in *r. Used by probe_main for the
 * whole attempt, and by probes that need a second, throw-away process. */
static inline void probe_fork(void (*fn)(struct probe_res *, void *), void *arg,
                              struct probe_res *r, int timeout_s, int *status)
{
    struct probe_res *shared = mmap(NULL, sizeof(*shared), PROT_READ | PROT_WRITE,
                                    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    *status = -1;
    if (shared == MAP_FAILED) {
        res_error(r, "mmap: %s", ename(errno));
        return;
    }
    memset(shared, 0, sizeof(*shared));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        res_error(r, "fork: %s", ename(errno));
        munmap(shared, sizeof(*shared));
        return;
    }
    if (pid == 0) {
        alarm((unsigned)timeout_s);
        fn(shared, arg);
        _exit(0);
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    *status = st;
    /* Merge what the child found. */
    if (shared->verdict == PV_ESCAPED)
        r->verdict = PV_ESCAPED;
    r->skip |= shared->skip;
    r->error |= shared->error;
    if (shared->len)
        res_note(r, "%s", shared->detail);
    munmap(shared, sizeof(*shared));
}

static const char *probe_name;
static pid_t probe_launcher; /* the process that started the probe */
static void probe_attempt(struct probe_res *r);

static inline void probe_attempt_trampoline(struct probe_res *r, void *arg)
{
    (void)arg;
    probe_attempt(r);
}

static inline int probe_main(const char *name, int argc, char **argv)
{
    probe_name = name;
    probe_launcher = getppid();
    probe_argc = argc;
    probe_argv = argv;
    setvbuf(stdout, NULL, _IOLBF, 0);
    struct probe_res r;
    memset(&r, 0, sizeof(r));
    int status;
    probe_fork(probe_attempt_trampoline, NULL, &r, (int)parg_long("timeout", 20), &status);
    if (status != -1 && WIFSIGNALED(status)) {
        int sig = WTERMSIG(status);
        if (sig == SIGSYS)
            res_note(&r, "attempt killed by SIGSYS (seccomp)");
        else if (sig == SIGALRM)
            res_error(&r, "attempt timed out");
        else
            res_error(&r, "attempt died of signal %d (%s)", sig, sigabbrev_np(sig));
    }
    const char *v = "BLOCKED";
    if (r.verdict == PV_ESCAPED)
        v = "ESCAPED";
    else if (r.error)
        v = "ERROR";
    else if (r.skip)
        v = "SKIP";
    for (size_t i = 0; i < r.len; i++) /* one line, whatever the details hold */
        if (r.detail[i] == '\n' || r.detail[i] == '\t' || r.detail[i] == '\r')
            r.detail[i] = ' ';
    printf("%s %s: %s\n", v, name, r.len ? r.detail : "-");
    return 0;
}

/* Each probe defines probe_attempt() and ends with PROBE_MAIN("name"). */
#define PROBE_MAIN(name)                                                            \
    int main(int argc, char **argv) { return probe_main(name, argc, argv); }

/* ---- small helpers shared by several probes ---- */

/* Read up to cap-1 bytes of a file into buf (NUL-terminated). -1/errno. */
static inline ssize_t read_small(const char *path, char *buf, size_t cap)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, cap - 1);
    int e = errno;
    close(fd);
    if (n < 0) {
        errno = e;
        return -1;
    }
    buf[n] = 0;
    return n;
}

/* Read a file that is expected to hold the runner's secret marker; true if it
 * does. *err gets the errno of the failure, 0 if it was read but differs. */
static inline bool read_secret_at(int dirfd, const char *path, int *err)
{
    char buf[256];
    *err = 0;
    int fd = openat(dirfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    if (fd < 0) {
        *err = errno;
        return false;
    }
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    if (n < 0)
        *err = errno;
    close(fd);
    if (n <= 0)
        return false;
    buf[n] = 0;
    return strstr(buf, "FLUEBOX-SECRET-") != NULL;
}

/* The inode number of one of our own namespaces ("net", "uts", ...), 0 if unknown. */
static inline unsigned long own_ns_inode(const char *ns)
{
    char path[64];
    struct stat st;
    snprintf(path, sizeof(path), "/proc/self/ns/%s", ns);
    if (stat(path, &st) < 0)
        return 0;
    return (unsigned long)st.st_ino;
}

/* Does /proc/PID/cmdline contain needle (arguments are NUL-separated)? */
static inline bool cmdline_has(pid_t pid, const char *needle)
{
    char path[64], buf[4096];
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    ssize_t n = read_small(path, buf, sizeof(buf));
    if (n <= 0)
        return false;
    for (ssize_t i = 0; i < n; i++)
        if (buf[i] == 0)
            buf[i] = ' ';
    return strstr(buf, needle) != NULL;
}

/* The string the runner's host helper carries in its argv. The probe builds it
 * from the marker so that the probe's own argv (and that of a sandbox process
 * that copies it) never contains it. */
static inline const char *sleeper_tag(void)
{
    static char tag[128];
    const char *m = parg("marker");
    snprintf(tag, sizeof(tag), "fluebox-host-sleeper-%s", m ? m : "none");
    return tag;
}

/* Is this the runner's host helper? Either by pid or by the tag in its argv. */
static inline bool is_host_helper(pid_t pid)
{
    return cmdline_has(pid, sleeper_tag());
}

/* Is pid known to be a process of the sandbox's own (its /proc entry there
 * and readable, without the helper's tag)? An entry the sandbox may not
 * read (--isolation landlock hides other processes' /proc) proves nothing:
 * the pid may be the helper's, so the attack is tried. */
static inline bool is_own_process(pid_t pid)
{
    char path[64], buf[64];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (access(path, F_OK) != 0)
        return false;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    if (read_small(path, buf, sizeof(buf)) < 0)
        return false;
    return !is_host_helper(pid);
}

#endif
