/* vsock: AF_VSOCK carries a virtual machine's traffic to its hypervisor
 * (CID 2: guest agents, control planes) and, on most kernels, ignores
 * network namespaces, so a sandbox with its own loopback-only network can
 * still reach the host of the VM. Docker's seccomp profile refuses the family
 * for that reason. The probe only creates sockets; it never connects. */
#include "probe.h"
#include <sys/socket.h>

#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif

static void probe_attempt(struct probe_res *r)
{
    static const struct {
        int type;
        const char *name;
    } types[] = {{SOCK_STREAM, "STREAM"}, {SOCK_DGRAM, "DGRAM"}, {SOCK_SEQPACKET, "SEQPACKET"}};
    for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++) {
        int fd = socket(AF_VSOCK, types[i].type | SOCK_CLOEXEC, 0);
        if (fd >= 0) {
            close(fd);
            res_escape(r, "AF_VSOCK/%s socket created", types[i].name);
        } else {
            res_note(r, "AF_VSOCK/%s: %s", types[i].name, ename(errno));
        }
    }
    char buf[32];
    if (read_small("/proc/sys/net/vsock/ns_mode", buf, sizeof(buf)) > 0)
        res_note(r, "net.vsock.ns_mode=%.*s", (int)strcspn(buf, "\n"), buf);
}

PROBE_MAIN("vsock")
