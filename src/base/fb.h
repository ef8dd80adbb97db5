/* fb.h — things every fluebox source file needs: the error type that carries a
 * one-line message and an exit code up to main(), exit codes, cleanup
 * attributes and small I/O helpers that retry on EINTR and partial writes.
 * Nothing here knows about sandboxes. */
#ifndef FB_H
#define FB_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/types.h>
#include <unistd.h>

#define FB_VERSION "0.1.0"

/* Exit codes, following env(1), timeout(1) and the container runtimes. */
enum {
    FB_EXIT_TIMEOUT = 124,  /* --timeout expired */
    FB_EXIT_SETUP = 125,    /* fluebox itself failed: usage, policy, set-up */
    FB_EXIT_NOEXEC = 126,   /* command found but not executable */
    FB_EXIT_NOTFOUND = 127, /* command not found inside the sandbox */
    FB_EXIT_OOM = 137,      /* killed by the OOM killer (128 + SIGKILL) */
};

/* Warnings a lower layer has for whoever asked it to act: collected on the
 * way up, never printed by the layer itself. `fluebox run` prints them once,
 * at the top; `fluebox serve` hands them to the client whose request caused
 * them (session.create's "warnings"). One line each, without "fluebox: ". */
struct fb_notes {
    char text[2048]; /* the lines, each ending in '\n' */
    size_t len;
    unsigned n;       /* lines kept */
    unsigned dropped; /* lines that did not fit */
};

/* An error travels up as a message plus the exit code fluebox should use.
 * Functions return -1 and fill *err; the caller prints "fluebox: <msg>".
 * notes, when the caller set it, collects the warnings of the work the err
 * goes down with (fb_note); it is never touched by fb_errf and fb_errno. */
struct fb_err {
    int code;
    char msg[512];
    struct fb_notes *notes;
};

/* Set *err (if non-NULL) and return -1. printf-style. */
/* Does s hold a control character (below 0x20, or 0x7f)? */
bool fb_has_ctl(const char *s);
int fb_errf(struct fb_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, appending ": strerror(errno)" using the errno value at call time. */
int fb_errno(struct fb_err *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Adds context in front of the message already in *err, keeping its code:
 * "<context>: <message>" (what was being done, which path). Returns -1. */
int fb_err_wrap(struct fb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* A warning for whoever asked: one line added to err->notes. Where the
 * caller collects none (err or err->notes NULL) it goes to stderr at once,
 * as fb_warn. */
void fb_note(struct fb_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Prints every collected line as fb_warn does, and empties notes. */
void fb_notes_print(struct fb_notes *notes);

/* Prints "fluebox: <fmt>\n" on stderr. The top layer's (a command's) way to
 * say something; lower layers use fb_note. */
void fb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Where fb_warn's lines go instead of stderr (NULL: stderr again): the
 * message without "fluebox: " and the newline. Set once, before threads
 * start (`serve --log-format json` makes every line on stderr JSON). */
void fb_warn_sink(void (*sink)(const char *msg, size_t len));

/* I/O that handles EINTR and short transfers. Return 0 / bytes, or -1 with errno. */
int fb_write_all(int fd, const void *buf, size_t len);
ssize_t fb_read_full(int fd, void *buf, size_t len); /* until len or EOF */
/* Write a small string to a file (procfs, cgroupfs). Returns 0 or -1/errno. */
int fb_write_file(const char *path, const char *data);
int fb_write_fileat(int dirfd, const char *path, const char *data);
/* Write an output file (--report, --changes) whole or not at all: the data
 * goes to a new file in the same directory, is flushed, and then renamed
 * over path; a symlink is followed and its target replaced, an existing
 * file's mode (and, as root, owner) kept. A path that is not a regular file
 * (a terminal, a pipe, /dev/null, /dev/stdout), or an existing file in a
 * directory we may not create files in, is written in place. Returns
 * 0, or -1 with errno and path as it was, nothing left behind. */
int fb_write_output(const char *path, const void *data, size_t len);
/* Read up to cap-1 bytes of a small file into buf, NUL-terminated. -1/errno. */
ssize_t fb_read_file(const char *path, char *buf, size_t cap);
ssize_t fb_read_fileat(int dirfd, const char *path, char *buf, size_t cap);

/* Parsers shared by the CLI and profiles. Return 0 or -1 (no errno). */
int fb_parse_size(const char *s, int64_t *out);        /* 512M, 1G, 4096, "unlimited" -> -1 */
int fb_parse_duration_ms(const char *s, int64_t *out); /* 500ms, 30s, 5m, 1h, plain = seconds */
int fb_parse_u64(const char *s, uint64_t *out);

/* The process title shown in /proc/PID/cmdline. main() records where argv
 * lives (the one piece of process-wide state here: argv is process-wide);
 * the sandbox's init then replaces fluebox's command line, which may name
 * host paths and --env values, with a plain title. */
void fb_proctitle_init(int argc, char **argv);
void fb_proctitle_set(const char *title);

/* Monotonic clock in nanoseconds. */
uint64_t fb_now_ns(void);

/* Cleanup attributes (the crun style): variables released at scope exit. */
static inline void fb_freep(void *p) { free(*(void **)p); }
static inline void fb_closep(int *fd) {
    if (*fd >= 0) {
        int e = errno;
        close(*fd);
        errno = e;
    }
}
#define cleanup_free __attribute__((cleanup(fb_freep)))
#define cleanup_close __attribute__((cleanup(fb_closep)))

/* Take ownership out of a cleanup variable. */
#define fb_steal_fd(fd) ({ int _t = (fd); (fd) = -1; _t; })
#define fb_steal_ptr(p) ({ __typeof__(p) _t = (p); (p) = NULL; _t; })

#define FB_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

void *fb_xmalloc(size_t n);
void *fb_xcalloc(size_t n, size_t m);
void *fb_xrealloc(void *p, size_t n);
char *fb_xstrdup(const char *s);
char *fb_xstrndup(const char *s, size_t n);
char *fb_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
