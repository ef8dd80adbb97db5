/* host_loopback: connect to a TCP listener the runner opened on the host's
 * 127.0.0.1, the way a sandbox reaches databases, dev servers and cloud
 * metadata proxies bound to localhost. */
#include "probe.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>

static void probe_attempt(struct probe_res *r)
{
    long port = parg_long("port", 0);
    if (port <= 0 || port > 65535) {
        res_skip(r, "no port= given");
        return;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        res_note(r, "socket: %s", ename(errno));
        return;
    }
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                            .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        res_note(r, "connect 127.0.0.1:%ld: %s", port, ename(errno));
        close(fd);
        return;
    }
    char buf[256] = {0};
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (n > 0 && strncmp(buf, "FLUEBOX-HOST-LISTENER", 21) == 0)
        res_escape(r, "talked to the host listener on 127.0.0.1:%ld", port);
    else
        res_note(r, "connected to 127.0.0.1:%ld but it is not the host listener", port);
}

PROBE_MAIN("host_loopback")
