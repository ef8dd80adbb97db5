/* ctl.h — messages between the supervisor and the sandbox's init over a
 * SOCK_SEQPACKET socketpair: fixed-size records, optional fds (SCM_RIGHTS).
 * Set-up uses GO, CGROUP, SECCOMP_PROG, ERR, NETFDS and READY; a run adds EXEC_ERR,
 * EXIT and (run -t) TTY; sessions (sess_sandbox.c / sess_init.c) add their own types from
 * FB_MSG_SESSION. */
#ifndef FB_CTL_H
#define FB_CTL_H

#include "fb.h"

enum fb_msg_type {
    FB_MSG_GO = 1,     /* supervisor -> child: ids are mapped, go on */
    FB_MSG_ERR,        /* child -> supervisor: set-up failed: code, text */
    FB_MSG_NETFDS,     /* child -> supervisor: network sockets (fds) */
    FB_MSG_READY,      /* child -> supervisor: sandbox built, init running; a
                          session's init that keeps the scratch root sets
                          status 1 and arg to its descriptor's number there */
    FB_MSG_EXEC_ERR,   /* command could not be executed: code (126/127), text */
    FB_MSG_EXIT,       /* command finished: status (wait status) */
    FB_MSG_COW,        /* child -> supervisor, before READY: the copy-on-write
                          upper layer, user and mount namespace (fds); cow.h */
    FB_MSG_SECCOMP_FD, /* init -> supervisor, before READY: the seccomp listener
                          (--seccomp-log, learn); see scnotify.h */
    FB_MSG_SECCOMP_PROG, /* supervisor -> child, after GO: the seccomp filters
                          (memfds, code = how many, arg = load flags); seccomp.h */
    FB_MSG_SCRATCH,    /* child -> supervisor, before READY: the scratch tmpfs (fd),
                          measured for the report (mount.h) */
    FB_MSG_CGROUP,     /* supervisor -> child, after GO when the cgroup is made
                          after the clone: the v1 "tasks" files to join (fds),
                          code/arg the RLIMIT_NPROC/RLIMIT_DATA fallbacks as
                          in GO, status 1 when pids is such a fallback */
    FB_MSG_TTY,        /* init -> supervisor, after READY (run -t): the master
                          of the command's terminal (fd) */
    FB_MSG_SESSION = 100,
};

#define FB_CTL_MAX_FDS 32

struct fb_msg {
    uint32_t type;
    int32_t code;
    int32_t status;
    int32_t pid;
    int64_t arg;
    char text[488];
};

/* Raw record I/O with fd passing, shared with the session records
 * (sess_sandbox.c): send len bytes plus nfds fds in one message (MSG_NOSIGNAL |
 * flags); receive one message into buf, collecting at most *nfds fds (made
 * close-on-exec; extras are closed), setting *truncated when the record or
 * its fds did not fit. Return 0 / bytes, or -1 with errno. */
int ctl_sendmsg(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags);
ssize_t ctl_recvmsg(int sock, void *buf, size_t cap, int *fds, size_t *nfds, int flags,
                    bool *truncated);

/* Send m (and nfds fds). Returns 0 or -1/errno. */
int ctl_send(int sock, const struct fb_msg *m, const int *fds, size_t nfds);
/* Receive one message; fds (capacity *nfds) receive passed descriptors, which
 * are made close-on-exec; *nfds is set to how many came. Returns 1 on a
 * message, 0 on EOF, -1/errno on error. */
int ctl_recv(int sock, struct fb_msg *m, int *fds, size_t *nfds);
/* Non-blocking receive of one message, fds discarded: 1, 0 (EOF or nothing
 * there: errno EAGAIN), -1. */
int ctl_recv_nonblock(int sock, struct fb_msg *m);
/* Convenience: a message of type with code and printf text. */
int ctl_sendf(int sock, uint32_t type, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

#endif
