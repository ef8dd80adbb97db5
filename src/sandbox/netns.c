/* netns.c — the sandbox side of networking (see netns.h), run by the child in its
 * new network namespace while it still holds CAP_NET_ADMIN and
 * CAP_NET_BIND_SERVICE in its user namespace.
 *
 * Both: TCP autotuning bounded at NET_TCP_BUF_MAX per queue (tcp_rmem and
 * tcp_wmem of this namespace, net_clamp_tcp_buffers(), called by mount_build
 * through the sandbox's new /proc), so connections the sandbox never reads
 * hold little kernel memory (outside the memory cgroup on v1).
 * none:  loopback up and the resolver's sockets (127.0.0.53:53, served by
 *        the supervisor, which answers NXDOMAIN to every name). There is
 *        no other interface and no route, so every address but loopback is
 *        unreachable.
 * allow: in addition
 *   - 198.18.0.1/15 on lo (rtnetlink RTM_NEWADDR). On a loopback device the
 *     kernel makes the whole prefix local, so a connect() to any synthetic
 *     address the DNS responder hands out reaches a socket in this
 *     namespace; the main routing table stays empty (no route out);
 *   - the resolver: UDP and TCP sockets on 127.0.0.53:53;
 *   - one listening TCP socket per allowed port on 0.0.0.0 (the supervisor
 *     reads the destination of each accepted connection with getsockname()
 *     and closes any that is not a synthetic address it handed out);
 *   - the CONNECT proxy's listener on 127.0.0.1:proxy_port when enabled.
 * The sockets are returned to spawn.c, which passes them to the supervisor
 * and closes its copies before the command runs: nothing inside the sandbox
 * can read from them. Each socket describes itself (type and bound address),
 * so the order does not matter to egress. */
#include "netns.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <linux/rtnetlink.h>
#include <net/if.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

static int loopback_up(struct fb_err *err)
{
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (s < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socket");
    struct ifreq ifr;
    memset(&ifr, 0, sizeof ifr);
    strcpy(ifr.ifr_name, "lo");
    int rc = ioctl(s, SIOCGIFFLAGS, &ifr);
    if (rc == 0) {
        ifr.ifr_flags |= IFF_UP | IFF_RUNNING;
        rc = ioctl(s, SIOCSIFFLAGS, &ifr);
    }
    close(s);
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "bringing up loopback");
    return 0;
}

/* The most a TCP socket of the sandbox's own network namespace may hold in
 * its receive or send queue by autotuning (tcp_rmem/tcp_wmem's maximum,
 * per network namespace). The host's can be 32 MiB: 32 connections through
 * the relay that the sandbox never reads then pinned ~1 GiB of kernel
 * memory, outside --mem on cgroup v1. 1 MiB is what the relay gives each of
 * its own socket buffers at most (relay.c's SHARE_MAX / 8). */
#define NET_TCP_BUF_MAX (1u << 20)

/* Lower the maximum (the third field) of one of those sysctls, and the
 * default with it. Best effort: a host whose /proc/sys is read-only keeps
 * the kernel's values (and memory.kmem.tcp, or cgroup v2, bounds it). */
static void clamp_tcp_sysctl(int sysdir, const char *name)
{
    char buf[128];
    unsigned long lo, def, max;
    if (fb_read_fileat(sysdir, name, buf, sizeof buf) <= 0 ||
        sscanf(buf, "%lu %lu %lu", &lo, &def, &max) != 3)
        return;
    if (max <= NET_TCP_BUF_MAX)
        return;
    max = NET_TCP_BUF_MAX;
    if (def > max)
        def = max;
    if (lo > def)
        lo = def;
    snprintf(buf, sizeof buf, "%lu %lu %lu", lo, def, max);
    fb_write_fileat(sysdir, name, buf);
}

void net_clamp_tcp_buffers(int sysdir)
{
    clamp_tcp_sysctl(sysdir, "net/ipv4/tcp_rmem");
    clamp_tcp_sysctl(sysdir, "net/ipv4/tcp_wmem");
}

/* ip addr add 198.18.0.1/15 dev lo, over rtnetlink. */
static int add_synthetic_range(struct fb_err *err)
{
    unsigned idx = if_nametoindex("lo");
    if (!idx)
        return fb_errno(err, FB_EXIT_SETUP, "finding the loopback device");
    int s = socket(AF_NETLINK, SOCK_RAW | SOCK_CLOEXEC, NETLINK_ROUTE);
    if (s < 0)
        return fb_errno(err, FB_EXIT_SETUP, "rtnetlink socket");
    struct {
        struct nlmsghdr nh;
        struct ifaddrmsg ifa;
        char attrs[64];
    } req;
    memset(&req, 0, sizeof req);
    req.nh.nlmsg_type = RTM_NEWADDR;
    req.nh.nlmsg_flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
    req.nh.nlmsg_seq = 1;
    req.ifa.ifa_family = AF_INET;
    req.ifa.ifa_prefixlen = FB_NET_SYNTH_BITS;
    req.ifa.ifa_scope = RT_SCOPE_HOST;
    req.ifa.ifa_index = idx;
    req.nh.nlmsg_len = NLMSG_LENGTH(sizeof req.ifa);
    uint32_t addr = htonl(FB_NET_SYNTH_BASE | 1);
    static const unsigned short types[] = {IFA_LOCAL, IFA_ADDRESS};
    for (size_t i = 0; i < FB_ARRAY_LEN(types); i++) {
        struct rtattr *rta = (struct rtattr *)((char *)&req + NLMSG_ALIGN(req.nh.nlmsg_len));
        rta->rta_type = types[i];
        rta->rta_len = RTA_LENGTH(sizeof addr);
        memcpy(RTA_DATA(rta), &addr, sizeof addr);
        req.nh.nlmsg_len = NLMSG_ALIGN(req.nh.nlmsg_len) + RTA_ALIGN(rta->rta_len);
    }
    struct sockaddr_nl kernel = {.nl_family = AF_NETLINK};
    if (sendto(s, &req, req.nh.nlmsg_len, 0, (struct sockaddr *)&kernel, sizeof kernel) < 0) {
        close(s);
        return fb_errno(err, FB_EXIT_SETUP, "rtnetlink: adding the synthetic address range");
    }
    char buf[1024];
    ssize_t n;
    while ((n = recv(s, buf, sizeof buf, 0)) < 0 && errno == EINTR)
        ;
    close(s);
    if (n < (ssize_t)NLMSG_LENGTH(sizeof(struct nlmsgerr)))
        return fb_errno(err, FB_EXIT_SETUP, "rtnetlink: no answer");
    struct nlmsghdr *h = (struct nlmsghdr *)buf;
    if (h->nlmsg_type == NLMSG_ERROR) {
        struct nlmsgerr *e = NLMSG_DATA(h);
        if (e->error) {
            errno = -e->error;
            return fb_errno(err, FB_EXIT_SETUP, "adding the synthetic address range to lo");
        }
    }
    return 0;
}

/* backlog: connections the kernel holds before the supervisor accepts them
 * (each may already hold data, up to the kernel's initial window): as many
 * as the relay takes at once (--net-max-conns), not SOMAXCONN. */
static int bound_socket(int type, const char *ip, uint16_t port, int backlog, struct fb_err *err)
{
    int s = socket(AF_INET, type | SOCK_CLOEXEC, 0);
    if (s < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socket");
    int one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons(port)};
    inet_pton(AF_INET, ip, &sa.sin_addr);
    if (bind(s, (struct sockaddr *)&sa, sizeof sa) < 0 ||
        (type == SOCK_STREAM && listen(s, backlog) < 0)) {
        fb_errno(err, FB_EXIT_SETUP, "binding the sandbox's %s socket %s:%u",
                 type == SOCK_STREAM ? "TCP" : "UDP", ip, port);
        close(s);
        return -1;
    }
    return s;
}

/* The resolver's sockets on 127.0.0.53:53, UDP then TCP, into fds. */
static int resolver_sockets(int *fds, size_t *nfds, struct fb_err *err)
{
    int fd;
    if ((fd = bound_socket(SOCK_DGRAM, FB_NET_DNS_ADDR, 53, 0, err)) < 0)
        return -1;
    fds[(*nfds)++] = fd;
    if ((fd = bound_socket(SOCK_STREAM, FB_NET_DNS_ADDR, 53, 16, err)) < 0)
        return -1;
    fds[(*nfds)++] = fd;
    return 0;
}

int net_setup_child(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err)
{
    *nfds = 0;
    if (loopback_up(err) < 0)
        return -1;
    if (p->net == FB_NET_NONE) {
        /* Only the resolver, which answers every name at once (NXDOMAIN):
         * a lookup fails as "not found", which tools do not retry, instead
         * of "try again" (nothing listening), which they do. */
        if (resolver_sockets(fds, nfds, err) < 0)
            goto fail;
        return 0;
    }
    if (p->net != FB_NET_ALLOW)
        return 0;

    uint16_t ports[FB_NET_MAX_PORTS];
    int np = policy_allowed_ports(p, ports, FB_NET_MAX_PORTS);
    if (np < 0)
        return fb_errf(err, FB_EXIT_SETUP, "--allow-net: more than %d different ports",
                       FB_NET_MAX_PORTS);
    for (int i = 0; i < np; i++)
        if (p->proxy_port && ports[i] == p->proxy_port)
            return fb_errf(err, FB_EXIT_SETUP,
                           "the proxy port %u is also an allowed port; pick another",
                           p->proxy_port);
    if (add_synthetic_range(err) < 0)
        return -1;
    int backlog = p->max_conns < 16 ? 16 : p->max_conns < SOMAXCONN ? p->max_conns : SOMAXCONN;

    if (resolver_sockets(fds, nfds, err) < 0)
        goto fail;
    int fd;
    if (p->proxy_port) {
        if ((fd = bound_socket(SOCK_STREAM, "127.0.0.1", p->proxy_port, backlog, err)) < 0)
            goto fail;
        fds[(*nfds)++] = fd;
    }
    for (int i = 0; i < np; i++) {
        if ((fd = bound_socket(SOCK_STREAM, "0.0.0.0", ports[i], backlog, err)) < 0)
            goto fail;
        fds[(*nfds)++] = fd;
    }
    return 0;
fail:
    for (size_t i = 0; i < *nfds; i++)
        close(fds[i]);
    *nfds = 0;
    return -1;
}

/* Every interface but loopback down: the kernel drops the routes through
 * them (both families, every table), and nothing inside can bring them up
 * again (that needs CAP_NET_ADMIN in the namespace's owner, the host's
 * user namespace). */
static int links_down(struct fb_err *err)
{
    struct if_nameindex *ifs = if_nameindex();
    if (!ifs)
        return fb_errno(err, FB_EXIT_SETUP, "listing the pod's network interfaces");
    int s = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    int rc = s < 0 ? fb_errno(err, FB_EXIT_SETUP, "socket") : 0;
    for (struct if_nameindex *i = ifs; rc == 0 && i->if_index; i++) {
        if (!strcmp(i->if_name, "lo"))
            continue;
        struct ifreq ifr;
        memset(&ifr, 0, sizeof ifr);
        snprintf(ifr.ifr_name, sizeof ifr.ifr_name, "%s", i->if_name);
        if (ioctl(s, SIOCGIFFLAGS, &ifr) < 0) {
            if (errno == ENODEV)
                continue;
            rc = fb_errno(err, FB_EXIT_SETUP, "reading the flags of %s", i->if_name);
            break;
        }
        if (!(ifr.ifr_flags & IFF_UP))
            continue;
        ifr.ifr_flags &= ~IFF_UP;
        if (ioctl(s, SIOCSIFFLAGS, &ifr) < 0 && errno != ENODEV)
            rc = fb_errno(err, FB_EXIT_SETUP, "taking %s down", i->if_name);
    }
    if (s >= 0)
        close(s);
    if_freenameindex(ifs);
    return rc;
}

/* Does this namespace have fluebox's address on lo already (a pod another
 * sandbox container took)? */
static bool has_synthetic_range(void)
{
    struct ifaddrs *all;
    if (getifaddrs(&all) < 0)
        return false;
    bool found = false;
    for (struct ifaddrs *a = all; a && !found; a = a->ifa_next)
        found = a->ifa_addr && a->ifa_addr->sa_family == AF_INET &&
                ((struct sockaddr_in *)a->ifa_addr)->sin_addr.s_addr ==
                    htonl(FB_NET_SYNTH_BASE | 1);
    freeifaddrs(all);
    return found;
}

int net_setup_pod(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err)
{
    *nfds = 0;
    if (p->net != FB_NET_ALLOW)
        return fb_errf(err, FB_EXIT_SETUP, "a pod's network namespace is taken for an allowlist only");
    if (has_synthetic_range())
        return fb_errf(err, FB_EXIT_SETUP, "the pod's network namespace already has fluebox's "
                       "relay: another sandbox container owns it");
    if (links_down(err) < 0)
        return -1;
    int sysdir = open("/proc/sys", O_PATH | O_DIRECTORY | O_CLOEXEC);
    if (sysdir >= 0) {
        net_clamp_tcp_buffers(sysdir);
        close(sysdir);
    }
    return net_setup_child(p, fds, nfds, err);
}
