/* hostres.h — name resolution on the host side without blocking the
 * supervisor's event loop: a few worker threads run getaddrinfo() and post
 * results; an eventfd (hostres_fd) becomes readable when one is ready.
 *
 * Threads start on the first request. hostres_free() does not wait for a
 * lookup that is stuck in getaddrinfo(): that worker is detached and frees
 * the shared state when it returns. */
#ifndef FB_HOSTRES_H
#define FB_HOSTRES_H

#include "fb.h"

#include <sys/socket.h>

#define HOSTRES_MAX_ADDRS 8

struct hostres;

struct hostres_result {
    uint64_t id;
    int gai_err;  /* 0 or an EAI_* code */
    int sys_err;  /* errno when gai_err is EAI_SYSTEM */
    size_t naddr;
    struct sockaddr_storage addr[HOSTRES_MAX_ADDRS];
    socklen_t addrlen[HOSTRES_MAX_ADDRS];
};

struct hostres *hostres_new(struct fb_err *err);
int hostres_fd(const struct hostres *r);
/* Queue a lookup of name (TCP addresses, any family). */
void hostres_submit(struct hostres *r, uint64_t id, const char *name);
/* Take one finished lookup; false when none is ready. */
bool hostres_take(struct hostres *r, struct hostres_result *out);
void hostres_free(struct hostres *r);

#endif
