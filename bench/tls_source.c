/* tls_source.c — the HTTPS server of `make bench`'s interception rows
 * (bench/tls.py): HTTP/1.1 over TLS on 127.0.0.1, keep-alive and
 * pipelining, "GET /N[?...]" answered with N bytes. One process per
 * connection, so the server is never what the measured client waits for.
 *
 *   fbtls-source PORTFILE CERT KEY
 *
 * Writes the port to PORTFILE once it listens; serves until SIGTERM or ten
 * minutes. No ALPN is offered: every client speaks HTTP/1.1 to it, so the
 * direct and the relayed rows compare the same protocol. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

static char chunk[1 << 18];

/* Write all of p: 0, or -1 when the peer is gone. */
static int tls_write_all(SSL *s, const char *p, size_t n)
{
    while (n > 0) {
        int w = SSL_write(s, p, n > (1u << 30) ? 1 << 30 : (int)n);
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

/* One connection: requests until the client closes. */
static void serve(SSL_CTX *ctx, int c)
{
    SSL *s = SSL_new(ctx);
    if (!s || SSL_set_fd(s, c) != 1 || SSL_accept(s) != 1)
        _exit(1);
    char buf[16384];
    size_t n = 0;
    for (;;) {
        char *end;
        while (!(end = memmem(buf, n, "\r\n\r\n", 4))) {
            if (n == sizeof buf)
                _exit(1);
            int r = SSL_read(s, buf + n, (int)(sizeof buf - n));
            if (r <= 0)
                _exit(n ? 1 : 0);
            n += (size_t)r;
        }
        size_t hl = (size_t)(end - buf) + 4;
        unsigned long long want = 0;
        char method[8] = "";
        if (sscanf(buf, "%7s /%llu", method, &want) != 2 ||
            (strcmp(method, "GET") && strcmp(method, "HEAD")))
            _exit(1);
        char hdr[160];
        int l = snprintf(hdr, sizeof hdr,
                         "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nContent-Type: "
                         "application/octet-stream\r\n\r\n",
                         want);
        if (tls_write_all(s, hdr, (size_t)l) < 0)
            _exit(0);
        if (!strcmp(method, "GET"))
            while (want > 0) {
                size_t k = want < sizeof chunk ? (size_t)want : sizeof chunk;
                if (tls_write_all(s, chunk, k) < 0)
                    _exit(0);
                want -= k;
            }
        memmove(buf, buf + hl, n - hl); /* a pipelined request may follow */
        n -= hl;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: fbtls-source PORTFILE CERT KEY\n");
        return 2;
    }
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (!ctx || SSL_CTX_use_certificate_chain_file(ctx, argv[2]) != 1 ||
        SSL_CTX_use_PrivateKey_file(ctx, argv[3], SSL_FILETYPE_PEM) != 1) {
        ERR_print_errors_fp(stderr);
        return 1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof a;
    int one = 1;
    if (fd < 0 || setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0 ||
        bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
        perror("fbtls-source");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof tmp, "%s.tmp", argv[1]);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 ||
        rename(tmp, argv[1]) < 0) {
        perror(argv[1]);
        return 1;
    }
    memset(chunk, 'z', sizeof chunk);
    signal(SIGCHLD, SIG_IGN); /* children reap themselves */
    signal(SIGPIPE, SIG_IGN);
    alarm(600);
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR || errno == ECONNABORTED)
                continue;
            perror("accept");
            return 1;
        }
        setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        pid_t p = fork();
        if (p == 0) {
            close(fd);
            alarm(0);
            serve(ctx, c);
            _exit(0);
        }
        close(c);
    }
}
