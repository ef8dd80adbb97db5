/* abstract_unix: abstract unix sockets have no file: they belong to the
 * network namespace, so a filesystem sandbox that shares the host's network
 * namespace leaks them (X11, D-Bus, containerd-shim: CVE-2020-15257). Connects
 * to one the runner's host helper listens on. */
#include "probe.h"
#include <stddef.h>
#include <sys/socket.h>
#include <sys/un.h>

static void probe_attempt(struct probe_res *r)
{
    const char *name = parg("abstract");
    if (!name || strlen(name) + 1 > sizeof(((struct sockaddr_un *)0)->sun_path)) {
        res_skip(r, "no abstract= given");
        return;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        res_note(r, "socket: %s", ename(errno));
        return;
    }
    struct timeval tv = {.tv_sec = 3};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    memcpy(a.sun_path + 1, name, strlen(name));
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(name));
    if (connect(fd, (struct sockaddr *)&a, len) < 0) {
        res_note(r, "connect @%s: %s", name, ename(errno));
        close(fd);
        return;
    }
    char buf[256] = {0};
    ssize_t n = recv(fd, buf, sizeof(buf) - 1, 0);
    close(fd);
    if (n > 0 && strncmp(buf, "FLUEBOX-HOST-ABSTRACT", 21) == 0)
        res_escape(r, "talked to the host's abstract socket @%s", name);
    else
        res_note(r, "connected to @%s but it is not the host helper", name);
}

PROBE_MAIN("abstract_unix")
