/* blast.c — a bulk TCP transfer for measuring the relay (tests/net/relay-bench.sh).
 *   blast serve BYTES      listen on 127.0.0.1 (random port, printed), send BYTES
 *                          to every client after it sent one line; forever
 *   blast get HOST PORT    connect (HOST by name: getaddrinfo), send a line, read
 *                          to EOF; prints "BYTES SECONDS MBPS" (MB = 10^6 bytes),
 *                          timed from connect to EOF. */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int serve(long long bytes)
{
    signal(SIGPIPE, SIG_IGN);
    signal(SIGCHLD, SIG_IGN);
    int s = socket(AF_INET, SOCK_STREAM, 0), one = 1;
    setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    if (bind(s, (struct sockaddr *)&a, sizeof a) < 0 || listen(s, 16) < 0) {
        perror("blast: listen");
        return 1;
    }
    socklen_t l = sizeof a;
    getsockname(s, (struct sockaddr *)&a, &l);
    printf("%u\n", ntohs(a.sin_port));
    fflush(stdout);
    static char buf[1 << 20];
    for (size_t i = 0; i < sizeof buf; i++)
        buf[i] = (char)(i * 7);
    for (;;) {
        int c = accept(s, NULL, NULL);
        if (c < 0)
            continue;
        if (fork() == 0) {
            char line[64];
            if (read(c, line, sizeof line) <= 0)
                _exit(1);
            long long left = bytes;
            while (left > 0) {
                ssize_t n = write(c, buf, left < (long long)sizeof buf ? (size_t)left : sizeof buf);
                if (n <= 0)
                    _exit(1);
                left -= n;
            }
            _exit(0);
        }
        close(c);
    }
}

static int get(const char *host, const char *port)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *ai;
    int rc = getaddrinfo(host, port, &hints, &ai);
    if (rc) {
        fprintf(stderr, "blast: %s: %s\n", host, gai_strerror(rc));
        return 1;
    }
    int s = socket(AF_INET, SOCK_STREAM, 0);
    double t0 = now();
    if (connect(s, ai->ai_addr, ai->ai_addrlen) < 0) {
        perror("blast: connect");
        return 1;
    }
    freeaddrinfo(ai);
    if (write(s, "GET\n", 4) != 4)
        return 1;
    static char buf[1 << 20];
    long long total = 0;
    ssize_t n;
    while ((n = read(s, buf, sizeof buf)) > 0)
        total += n;
    double dt = now() - t0;
    printf("%lld %.3f %.0f\n", total, dt, (double)total / dt / 1e6);
    return n < 0;
}

int main(int argc, char **argv)
{
    if (argc == 3 && !strcmp(argv[1], "serve"))
        return serve(atoll(argv[2]));
    if (argc == 4 && !strcmp(argv[1], "get"))
        return get(argv[2], argv[3]);
    fprintf(stderr, "usage: blast serve BYTES | blast get HOST PORT\n");
    return 2;
}
