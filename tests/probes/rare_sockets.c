/* rare_sockets: transport code that agent work never uses and that keeps
 * turning up kernel bugs: MPTCP sockets (IPPROTO_MPTCP), UDP-Lite
 * (IPPROTO_UDPLITE) and out-of-band data on unix sockets (MSG_OOB, whose
 * implementation had a use-after-free reachable from a browser renderer's
 * sandbox, CVE-2025-38236). The probe creates the sockets and sends and
 * receives one out-of-band byte over a unix socket pair of its own; it
 * never connects anywhere. */
#include "probe.h"
#include <netinet/in.h>
#include <sys/socket.h>

#ifndef IPPROTO_MPTCP
#define IPPROTO_MPTCP 262
#endif

static void try_socket(struct probe_res *r, int family, int type, int proto, const char *what)
{
    int fd = socket(family, type | SOCK_CLOEXEC, proto);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "%s socket created", what);
    } else {
        res_note(r, "%s: %s", what, ename(errno));
    }
}

static void probe_attempt(struct probe_res *r)
{
    try_socket(r, AF_INET, SOCK_STREAM, IPPROTO_MPTCP, "MPTCP/IPv4");
    try_socket(r, AF_INET6, SOCK_STREAM, IPPROTO_MPTCP, "MPTCP/IPv6");
    try_socket(r, AF_INET, SOCK_DGRAM, IPPROTO_UDPLITE, "UDP-Lite/IPv4");
    try_socket(r, AF_INET6, SOCK_DGRAM, IPPROTO_UDPLITE, "UDP-Lite/IPv6");
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0) {
        res_error(r, "socketpair: %s", ename(errno));
        return;
    }
    if (send(sv[0], "x", 1, MSG_OOB | MSG_DONTWAIT) == 1) {
        res_escape(r, "unix MSG_OOB byte sent");
        char c;
        if (recv(sv[1], &c, 1, MSG_OOB | MSG_DONTWAIT) == 1)
            res_escape(r, "and received out of band");
        else
            res_note(r, "recv MSG_OOB: %s", ename(errno));
    } else {
        res_note(r, "send MSG_OOB: %s", ename(errno));
        if (recv(sv[1], (char[1]){0}, 1, MSG_OOB | MSG_DONTWAIT) >= 0)
            res_escape(r, "recv MSG_OOB allowed");
        else
            res_note(r, "recv MSG_OOB: %s", ename(errno));
    }
    close(sv[0]);
    close(sv[1]);
}

PROBE_MAIN("rare_sockets")
