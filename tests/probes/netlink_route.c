/* netlink_route: change routing through rtnetlink. The request is an
 * RTM_NEWROUTE for an address family that does not exist: the kernel checks
 * CAP_NET_ADMIN before it looks for a handler, so the answer tells "not
 * permitted" (EPERM, blocked) from "permitted, no such family" (escape)
 * without any route ever changing. */
#include "probe.h"
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <sys/socket.h>

static void probe_attempt(struct probe_res *r)
{
    int fd = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (fd < 0) {
        res_note(r, "netlink socket: %s", ename(errno));
        return;
    }
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct {
        struct nlmsghdr h;
        struct rtmsg m;
    } req;
    memset(&req, 0, sizeof(req));
    req.h.nlmsg_len = sizeof(req);
    req.h.nlmsg_type = RTM_NEWROUTE;
    req.h.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE;
    req.h.nlmsg_seq = 1;
    req.m.rtm_family = 0xfe; /* no such address family */
    struct sockaddr_nl sa = {.nl_family = AF_NETLINK};
    if (sendto(fd, &req, sizeof(req), 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        res_note(r, "send: %s", ename(errno));
        close(fd);
        return;
    }
    char buf[4096];
    ssize_t n = recv(fd, buf, sizeof(buf), 0);
    close(fd);
    if (n < (ssize_t)sizeof(struct nlmsghdr)) {
        res_error(r, "no answer from rtnetlink: %s", n < 0 ? ename(errno) : "short");
        return;
    }
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (h->nlmsg_type != NLMSG_ERROR) {
        res_error(r, "unexpected netlink message type %d", h->nlmsg_type);
        return;
    }
    int err = -((struct nlmsgerr *)NLMSG_DATA(h))->error;
    long host_net = parg_long("netns", 0);
    bool shared = host_net && own_ns_inode("net") == (unsigned long)host_net;
    if (err == EPERM)
        res_note(r, "RTM_NEWROUTE: EPERM (net ns %s)", shared ? "host's" : "private");
    else
        res_escape(r, "RTM_NEWROUTE passed the CAP_NET_ADMIN check (%s) in the %s net ns",
                   err ? ename(err) : "0", shared ? "host's" : "sandbox's");
}

PROBE_MAIN("netlink_route")
