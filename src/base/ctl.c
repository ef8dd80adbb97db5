/* ctl.c — the supervisor <-> init message channel (see ctl.h). */
#include "ctl.h"

#include <poll.h>
#include <stdarg.h>
#include <string.h>
#include <sys/socket.h>

int ctl_sendmsg(int sock, const void *buf, size_t len, const int *fds, size_t nfds, int flags)
{
    struct iovec iov = {(void *)buf, len};
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * FB_CTL_MAX_FDS)];
        struct cmsghdr align;
    } u;
    if (nfds > FB_CTL_MAX_FDS) {
        errno = EINVAL;
        return -1;
    }
    if (nfds) {
        memset(&u, 0, sizeof u);
        mh.msg_control = u.buf;
        mh.msg_controllen = CMSG_SPACE(sizeof(int) * nfds);
        struct cmsghdr *c = CMSG_FIRSTHDR(&mh);
        c->cmsg_level = SOL_SOCKET;
        c->cmsg_type = SCM_RIGHTS;
        c->cmsg_len = CMSG_LEN(sizeof(int) * nfds);
        memcpy(CMSG_DATA(c), fds, sizeof(int) * nfds);
    }
    ssize_t n;
    for (;;) {
        n = sendmsg(sock, &mh, MSG_NOSIGNAL | flags);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        /* The kernel had no memory for the message: a blocking send waits
         * that out (a message that is not sent is a request or a reply
         * lost for good); a non-blocking one leaves it to the caller. */
        if ((errno == ENOBUFS || errno == ENOMEM) && !(flags & MSG_DONTWAIT)) {
            poll(NULL, 0, 10);
            continue;
        }
        return -1;
    }
    if ((size_t)n != len) {
        errno = EIO;
        return -1;
    }
    return 0;
}

ssize_t ctl_recvmsg(int sock, void *buf, size_t cap, int *fds, size_t *nfds, int flags,
                    bool *truncated)
{
    struct iovec iov = {buf, cap};
    union {
        char b[CMSG_SPACE(sizeof(int) * FB_CTL_MAX_FDS)];
        struct cmsghdr align;
    } u;
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.b,
                        .msg_controllen = sizeof u.b};
    size_t fcap = nfds ? *nfds : 0, got = 0;
    if (nfds)
        *nfds = 0;
    ssize_t n;
    bool reset_seen = false;
    for (;;) {
        n = recvmsg(sock, &mh, MSG_CMSG_CLOEXEC | flags);
        if (n >= 0)
            break;
        if (errno == EINTR)
            continue;
        /* The peer closed with messages of ours unread: the kernel reports
         * that once, before the messages it had sent us (such as the error
         * that made it exit). Read on for them; then comes end-of-file. */
        if (errno == ECONNRESET && !reset_seen) {
            reset_seen = true;
            continue;
        }
        return -1;
    }
    /* Collect (or close) any passed fds, whatever the message says. */
    for (struct cmsghdr *c = CMSG_FIRSTHDR(&mh); c; c = CMSG_NXTHDR(&mh, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
            continue;
        size_t k = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        int tmp[FB_CTL_MAX_FDS];
        if (k > FB_CTL_MAX_FDS)
            k = FB_CTL_MAX_FDS;
        memcpy(tmp, CMSG_DATA(c), k * sizeof(int));
        for (size_t i = 0; i < k; i++) {
            if (got < fcap)
                fds[got++] = tmp[i];
            else
                close(tmp[i]);
        }
    }
    if (nfds)
        *nfds = got;
    if (truncated)
        *truncated = (mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC)) != 0;
    return n;
}

int ctl_send(int sock, const struct fb_msg *m, const int *fds, size_t nfds)
{
    return ctl_sendmsg(sock, m, sizeof *m, fds, nfds, 0);
}

static int recv_flags(int sock, struct fb_msg *m, int *fds, size_t *nfds, int flags);

int ctl_recv(int sock, struct fb_msg *m, int *fds, size_t *nfds)
{
    return recv_flags(sock, m, fds, nfds, 0);
}

int ctl_recv_nonblock(int sock, struct fb_msg *m)
{
    int r = recv_flags(sock, m, NULL, NULL, MSG_DONTWAIT);
    if (r < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return 0;
    return r;
}

static int recv_flags(int sock, struct fb_msg *m, int *fds, size_t *nfds, int flags)
{
    bool truncated = false;
    ssize_t n = ctl_recvmsg(sock, m, sizeof *m, fds, nfds, flags, &truncated);
    if (n < 0)
        return -1;
    size_t got = nfds ? *nfds : 0;
    if (n == 0)
        return 0;
    if ((size_t)n != sizeof *m || truncated) {
        for (size_t i = 0; i < got; i++)
            close(fds[i]);
        if (nfds)
            *nfds = 0;
        errno = EPROTO;
        return -1;
    }
    m->text[sizeof m->text - 1] = 0;
    return 1;
}

int ctl_sendf(int sock, uint32_t type, int code, const char *fmt, ...)
{
    struct fb_msg m;
    memset(&m, 0, sizeof m);
    m.type = type;
    m.code = code;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m.text, sizeof m.text, fmt, ap);
    va_end(ap);
    return ctl_send(sock, &m, NULL, 0);
}
