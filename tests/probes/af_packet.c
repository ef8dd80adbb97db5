/* af_packet: raw sockets. AF_PACKET sees and forges link-level frames and has
 * a record of kernel bugs (CVE-2017-7308, CVE-2020-14386); raw IP sockets
 * forge packets. Both need CAP_NET_RAW over the network namespace. */
#include "probe.h"
#include <arpa/inet.h>
#include <linux/if_ether.h>
#include <netinet/in.h>
#include <sys/socket.h>

static void try_sock(struct probe_res *r, const char *what, int dom, int type, int proto)
{
    int fd = socket(dom, type | SOCK_CLOEXEC, proto);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "%s socket created", what);
    } else {
        res_note(r, "%s: %s", what, ename(errno));
    }
}

static void probe_attempt(struct probe_res *r)
{
    try_sock(r, "AF_PACKET/RAW", AF_PACKET, SOCK_RAW, htons(ETH_P_ALL));
    try_sock(r, "AF_PACKET/DGRAM", AF_PACKET, SOCK_DGRAM, htons(ETH_P_IP));
    try_sock(r, "AF_INET/RAW", AF_INET, SOCK_RAW, IPPROTO_RAW);
}

PROBE_MAIN("af_packet")
