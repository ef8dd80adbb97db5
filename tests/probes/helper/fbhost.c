/* fbhost.c — the host side of the escape probes. Not a probe: run.sh starts it
 * outside any sandbox to give the probes something real to reach for.
 *
 *   fbhost serve INFOFILE TAG
 *       A long-lived host process that holds a recognisable string in memory
 *       (for process_vm_readv), carries TAG in its argv (for /proc scans),
 *       accepts ptrace from any process of its uid (so the ptrace probe can
 *       succeed without a sandbox even under Yama), and serves, on loopback
 *       only: a TCP listener, a UDP DNS responder that answers every A query
 *       with 203.0.113.7 (TEST-NET-3, never contacted), and a listener on an
 *       abstract unix socket. It also holds a System V shared memory segment
 *       and a POSIX shared memory object (/dev/shm) with the same string, for
 *       the IPC probe. It writes "key=value" lines describing all of
 *       that to INFOFILE and runs until SIGTERM, until its parent dies, or for
 *       one hour at most.
 *
 *   fbhost pty -- CMD [ARGS...]
 *       Runs CMD in a new session whose controlling terminal is a fresh
 *       pseudo-terminal, with that terminal as stdin (stdout and stderr are
 *       left alone so the runner still captures them). This is the caller's
 *       terminal the TIOCSTI probe tries to type into. Exits with CMD's status
 *       (128+N for a signal).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* What process_vm_readv should find; filled from the tag at start. */
static char hostmem[128];

static volatile sig_atomic_t stop;
static void on_term(int sig)
{
    (void)sig;
    stop = 1;
}

static int die(const char *what)
{
    fprintf(stderr, "fbhost: %s: %s\n", what, strerror(errno));
    return 1;
}

static int listen_inet(int type, int *port)
{
    int fd = socket(AF_INET, type | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof(a);
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 ||
        (type == SOCK_STREAM && listen(fd, 16) < 0) ||
        getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(a.sin_port);
    return fd;
}

static int listen_abstract(const char *name)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    size_t n = strlen(name);
    if (n + 1 > sizeof(a.sun_path)) {
        close(fd);
        errno = ENAMETOOLONG;
        return -1;
    }
    memcpy(a.sun_path + 1, name, n); /* leading NUL: abstract namespace */
    socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + n);
    if (bind(fd, (struct sockaddr *)&a, len) < 0 || listen(fd, 16) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Greet whoever connected, then hang up. */
static void greet(int lfd, const char *what)
{
    int c = accept4(lfd, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    char msg[256];
    int n = snprintf(msg, sizeof(msg), "FLUEBOX-HOST-%s %s\n", what, hostmem);
    if (write(c, msg, (size_t)n) < 0) {
        /* the peer went away; nothing to do */
    }
    close(c);
}

/* Answer one DNS query: every A question gets 203.0.113.7. */
static void answer_dns(int fd)
{
    unsigned char q[512], r[600];
    struct sockaddr_in from;
    socklen_t flen = sizeof(from);
    ssize_t n = recvfrom(fd, q, sizeof(q), 0, (struct sockaddr *)&from, &flen);
    if (n < 12)
        return;
    /* Find the end of the first question: labels, then type and class. */
    size_t i = 12;
    while (i < (size_t)n && q[i] != 0)
        i += (size_t)q[i] + 1;
    if (i + 5 > (size_t)n)
        return;
    size_t qend = i + 5;
    unsigned qtype = (unsigned)(q[i + 1] << 8 | q[i + 2]);
    memcpy(r, q, qend);
    r[2] = 0x81; /* response, recursion desired */
    r[3] = 0x80; /* recursion available, NOERROR */
    r[4] = 0, r[5] = 1;                 /* one question */
    r[6] = 0, r[7] = qtype == 1 ? 1 : 0; /* answers */
    r[8] = r[9] = r[10] = r[11] = 0;
    size_t len = qend;
    if (qtype == 1) {
        static const unsigned char ans[] = {0xc0, 0x0c, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4,
                                            203, 0, 113, 7};
        memcpy(r + len, ans, sizeof(ans));
        len += sizeof(ans);
    }
    sendto(fd, r, len, 0, (struct sockaddr *)&from, flen);
}

static int serve(const char *infofile, const char *tag)
{
    snprintf(hostmem, sizeof(hostmem), "FLUEBOX-HOSTMEM-%s", tag);
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    /* Let any process of our uid ptrace us, whatever Yama's ptrace_scope says:
     * without a sandbox the ptrace probe must be able to succeed. */
    prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);

    struct sigaction sa = {.sa_handler = on_term};
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    signal(SIGPIPE, SIG_IGN);

    int port = 0, dnsport = 0;
    int tcp = listen_inet(SOCK_STREAM, &port);
    if (tcp < 0)
        return die("tcp listener on 127.0.0.1");
    int udp = listen_inet(SOCK_DGRAM, &dnsport);
    if (udp < 0)
        return die("udp dns responder on 127.0.0.1");
    char abstract[108];
    snprintf(abstract, sizeof(abstract), "fluebox-probe-abstract-%d", (int)getpid());
    int ab = listen_abstract(abstract);
    if (ab < 0)
        return die("abstract unix listener");

    /* IPC objects the ipc_host probe looks for; removed again on exit. */
    key_t shmkey = (key_t)(0x46420000 ^ getpid());
    int shmid = shmget(shmkey, 4096, IPC_CREAT | IPC_EXCL | 0600);
    if (shmid < 0)
        return die("shmget");
    char *seg = shmat(shmid, NULL, 0);
    if (seg != (void *)-1) {
        snprintf(seg, 4096, "%s", hostmem);
        shmdt(seg);
    }
    char shmname[64];
    snprintf(shmname, sizeof(shmname), "fluebox-probe-shm-%d", (int)getpid());
    int pfd = shm_open(shmname, O_CREAT | O_EXCL | O_RDWR | O_CLOEXEC, 0600);
    if (pfd < 0) {
        shmctl(shmid, IPC_RMID, NULL);
        return die("shm_open");
    }
    if (write(pfd, hostmem, strlen(hostmem)) < 0) {
        /* the object exists; its content is a nicety */
    }
    close(pfd);

    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", infofile);
    FILE *f = fopen(tmp, "w");
    if (!f)
        return die(tmp);
    fprintf(f, "pid=%d\nport=%d\ndnsport=%d\nabstract=%s\nmemaddr=%p\nmemlen=%zu\n"
               "shmkey=%d\nshmname=%s\n",
            (int)getpid(), port, dnsport, abstract, (void *)hostmem, strlen(hostmem),
            (int)shmkey, shmname);
    int bad = fclose(f) != 0 || rename(tmp, infofile) < 0;
    if (bad) {
        shmctl(shmid, IPC_RMID, NULL);
        shm_unlink(shmname);
        return die(infofile);
    }

    time_t deadline = time(NULL) + 3600;
    struct pollfd p[3] = {{.fd = tcp, .events = POLLIN},
                          {.fd = udp, .events = POLLIN},
                          {.fd = ab, .events = POLLIN}};
    while (!stop && time(NULL) < deadline) {
        int n = poll(p, 3, 1000);
        if (n <= 0)
            continue;
        if (p[0].revents & POLLIN)
            greet(tcp, "LISTENER");
        if (p[1].revents & POLLIN)
            answer_dns(udp);
        if (p[2].revents & POLLIN)
            greet(ab, "ABSTRACT");
    }
    shmctl(shmid, IPC_RMID, NULL);
    shm_unlink(shmname);
    return 0;
}

static int run_with_pty(char **argv)
{
    int m = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
    if (m < 0 || grantpt(m) < 0 || unlockpt(m) < 0)
        return die("posix_openpt");
    const char *slave = ptsname(m);
    if (!slave)
        return die("ptsname");
    pid_t pid = fork();
    if (pid < 0)
        return die("fork");
    if (pid == 0) {
        if (setsid() < 0)
            _exit(die("setsid"));
        int s = open(slave, O_RDWR); /* session leader: this becomes the ctty */
        if (s < 0)
            _exit(die(slave));
        ioctl(s, TIOCSCTTY, 0);
        dup2(s, 0);
        if (s != 0)
            close(s);
        execvp(argv[0], argv);
        _exit(errno == ENOENT ? 127 : 126);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    close(m);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return WEXITSTATUS(st);
}

int main(int argc, char **argv)
{
    if (argc == 4 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "pty") == 0 && strcmp(argv[2], "--") == 0)
        return run_with_pty(argv + 3);
    fprintf(stderr, "usage: fbhost serve INFOFILE TAG | fbhost pty -- CMD [ARGS...]\n");
    return 2;
}
