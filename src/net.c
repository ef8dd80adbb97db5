/* net.c — the sandbox side of networking (see net.h). PLACEHOLDER: loopback
 * only; the allowlist sockets land with egress.c. */
#include "net.h"

#include <net/if.h>
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

int net_setup_child(const struct fb_policy *p, int *fds, size_t *nfds, struct fb_err *err)
{
    (void)fds;
    *nfds = 0;
    if (loopback_up(err) < 0)
        return -1;
    if (p->net == FB_NET_ALLOW)
        return fb_errf(err, FB_EXIT_SETUP, "--allow-net is not available in this build yet");
    return 0;
}
