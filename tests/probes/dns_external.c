/* dns_external: resolve a name from outside, the first step of any exfiltration
 * and of DNS tunnelling. Two ways:
 *  1. ask the resolver the runner's host helper runs on the host's 127.0.0.1
 *     (it answers every A query with 203.0.113.7, a documentation address
 *     that is never contacted);
 *  2. getaddrinfo() through whatever /etc/resolv.conf the probe sees, with a
 *     one-second timeout. Only done when every nameserver listed there is a
 *     loopback or private address, so the probe never sends a packet to a
 *     public internet address; otherwise that half is skipped with a note.
 * Nothing ever connects to the addresses returned. */
#include "probe.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <sys/socket.h>

static bool private_or_loopback(const char *s)
{
    struct in_addr a4;
    struct in6_addr a6;
    if (inet_pton(AF_INET, s, &a4) == 1) {
        uint32_t a = ntohl(a4.s_addr);
        return (a >> 24) == 127 || (a >> 24) == 10 || (a >> 20) == (172 << 4 | 1) ||
               (a >> 16) == (192 << 8 | 168) || (a >> 16) == (169 << 8 | 254) ||
               (a >> 22) == (100 << 2 | 1); /* 100.64/10 */
    }
    if (inet_pton(AF_INET6, s, &a6) == 1)
        return IN6_IS_ADDR_LOOPBACK(&a6) || IN6_IS_ADDR_LINKLOCAL(&a6) ||
               (a6.s6_addr[0] & 0xfe) == 0xfc;
    return false;
}

/* 0: all nameservers local (or none), 1: some public, -1: unreadable. */
static int resolv_conf_public(char *first, size_t cap)
{
    FILE *f = fopen("/etc/resolv.conf", "re");
    if (!f)
        return -1;
    char line[512];
    int pub = 0;
    while (fgets(line, sizeof(line), f)) {
        char ns[256];
        if (sscanf(line, " nameserver %255s", ns) == 1) {
            if (!first[0])
                snprintf(first, cap, "%s", ns);
            if (!private_or_loopback(ns))
                pub = 1;
        }
    }
    fclose(f);
    return pub;
}

static void query_helper(struct probe_res *r, const char *name, long port)
{
    unsigned char q[300], a[600];
    size_t n = 0;
    static const unsigned char hdr[] = {0x4a, 0x17, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0};
    memcpy(q, hdr, sizeof(hdr));
    n = sizeof(hdr);
    for (const char *p = name; *p;) {
        const char *dot = strchr(p, '.');
        size_t l = dot ? (size_t)(dot - p) : strlen(p);
        if (l == 0 || l > 63 || n + l + 6 > sizeof(q))
            return;
        q[n++] = (unsigned char)l;
        memcpy(q + n, p, l);
        n += l;
        p += l + (dot ? 1 : 0);
    }
    q[n++] = 0;
    q[n++] = 0, q[n++] = 1; /* A */
    q[n++] = 0, q[n++] = 1; /* IN */
    int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        res_note(r, "udp socket: %s", ename(errno));
        return;
    }
    struct timeval tv = {.tv_sec = 2};
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                             .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (sendto(fd, q, n, 0, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
        res_note(r, "query 127.0.0.1:%ld: %s", port, ename(errno));
        close(fd);
        return;
    }
    ssize_t got = recv(fd, a, sizeof(a), 0);
    int e = errno;
    close(fd);
    if (got >= 12 && a[0] == 0x4a && a[1] == 0x17 && (a[6] << 8 | a[7]) > 0)
        res_escape(r, "the host's resolver on 127.0.0.1:%ld answered for %s", port, name);
    else
        res_note(r, "host resolver on 127.0.0.1:%ld: %s", port,
                 got < 0 ? ename(e) : "no answer record");
}

static void lookup(struct probe_res *r, void *arg)
{
    const char *name = arg;
    setenv("RES_OPTIONS", "timeout:1 attempts:1", 1);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM};
    struct addrinfo *res = NULL;
    int rc = getaddrinfo(name, NULL, &hints, &res);
    if (rc != 0) {
        res_note(r, "getaddrinfo(%s): %s", name, gai_strerror(rc));
        return;
    }
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        struct sockaddr_in *s = (struct sockaddr_in *)ai->ai_addr;
        char buf[64];
        inet_ntop(AF_INET, &s->sin_addr, buf, sizeof(buf));
        if ((ntohl(s->sin_addr.s_addr) >> 24) != 127) {
            res_escape(r, "getaddrinfo(%s) = %s", name, buf);
            break;
        }
        res_note(r, "getaddrinfo(%s) = %s (loopback)", name, buf);
    }
    freeaddrinfo(res);
}

static void probe_attempt(struct probe_res *r)
{
    const char *name = parg("name");
    if (!name)
        name = "example.com";
    long port = parg_long("dnsport", 0);
    if (port > 0 && port < 65536)
        query_helper(r, name, port);
    else
        res_note(r, "no dnsport= given");

    char first[256] = "";
    int pub = resolv_conf_public(first, sizeof(first));
    if (pub == 1) {
        res_note(r, "resolv.conf names a public server (%s): getaddrinfo not tried", first);
        return;
    }
    int st;
    probe_fork(lookup, (void *)name, r, 6, &st);
    if (WIFSIGNALED(st))
        res_note(r, "getaddrinfo killed by signal %d", WTERMSIG(st));
}

PROBE_MAIN("dns_external")
