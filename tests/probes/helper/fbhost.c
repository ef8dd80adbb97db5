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
 *   fbhost session-files SOCKET|none PROFILE WS SECRET OUTSIDE
 *       The session_files probe, run on the host: through the session API of
 *       `fluebox serve` at SOCKET (docs/protocol.md), file operations on a
 *       session whose workspace is WS must resolve paths inside the sandbox:
 *       file.read of symlinks the runner planted in WS ("up" -> ../secret,
 *       "abs" -> SECRET), of "../secret", of SECRET itself and through
 *       /proc/1/root; file.write through a symlink made inside the sandbox
 *       that points at OUTSIDE on the host, and straight at OUTSIDE. With
 *       "none" instead of a socket it does the same on the host directly,
 *       to show each path does lead to the secret when nothing isolates.
 *       Prints one probe verdict line.
 *
 *   fbhost pair NAME [--uid N] -- ATTACKER... --- VICTIM... [--- VICTIM...]
 *       Drives a cross-sandbox denial-of-service probe (dos.h): starts
 *       ATTACKER (the probe with role=hold, in a sandbox or not) with a
 *       pipe as stdin, waits for its "HOLDING ..." line, runs each VICTIM
 *       (the probe with role=victim: in another sandbox, or on the host) to
 *       the end, then closes the attacker's stdin so it lets go. Prints the
 *       verdict: ESCAPED when a victim reported ESCAPED (it was hurt),
 *       BLOCKED when none was or when the attacker could not take the
 *       resource at all, ERROR otherwise. --uid N (root only) runs every
 *       command as that throwaway uid, for the run with no sandbox.
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
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <grp.h>
#include <sys/resource.h>
#include <sys/shm.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/stat.h>
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

/* ---- session_files: the session API's file operations ---- */

static int sfd = -1;
static char sbuf[1 << 20];
static size_t slen;
static long sid_counter = 1;

/* One request, one response line (into line, truncated to cap). */
static int srpc(const char *req, char *line, size_t cap)
{
    size_t n = strlen(req);
    if (write(sfd, req, n) != (ssize_t)n)
        return -1;
    for (;;) {
        char *nl = memchr(sbuf, '\n', slen);
        if (nl) {
            size_t k = (size_t)(nl - sbuf);
            size_t c = k < cap - 1 ? k : cap - 1;
            memcpy(line, sbuf, c);
            line[c] = 0;
            memmove(sbuf, nl + 1, slen - k - 1);
            slen -= k + 1;
            return 0;
        }
        if (slen == sizeof(sbuf))
            slen = 0; /* an oversized line: drop what we have */
        ssize_t r = read(sfd, sbuf + slen, sizeof(sbuf) - slen);
        if (r <= 0)
            return -1;
        slen += (size_t)r;
    }
}

struct verdict {
    int escaped;
    char detail[2048];
};

static void vnote(struct verdict *v, int esc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void vnote(struct verdict *v, int esc, const char *fmt, ...)
{
    size_t l = strlen(v->detail);
    if (l && l < sizeof(v->detail) - 2)
        strcat(v->detail, "; "), l += 2;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(v->detail + l, sizeof(v->detail) - l, fmt, ap);
    va_end(ap);
    if (esc)
        v->escaped = 1;
}

/* The error code of a response, or "ok". */
static const char *rcode(const char *line, char *buf, size_t cap)
{
    const char *p = strstr(line, "\"code\":\"");
    if (!p || !strstr(line, "\"error\""))
        return "ok";
    p += 8;
    size_t n = strcspn(p, "\"");
    if (n >= cap)
        n = cap - 1;
    memcpy(buf, p, n);
    buf[n] = 0;
    return buf;
}

static int session_files(const char *sock, const char *profile, const char *ws,
                         const char *secret, const char *outside)
{
    struct verdict v = {0};
    const char *base = strrchr(secret, '/');
    base = base ? base + 1 : secret;
    char reads[6][4096];
    snprintf(reads[0], sizeof(reads[0]), "up");
    snprintf(reads[1], sizeof(reads[1]), "abs");
    snprintf(reads[2], sizeof(reads[2]), "../%s", base);
    snprintf(reads[3], sizeof(reads[3]), "%s", secret);
    snprintf(reads[4], sizeof(reads[4]), "/proc/1/root%s", secret);
    snprintf(reads[5], sizeof(reads[5]), "/proc/self/root%s", secret);
    char target[4096], direct[4096];
    snprintf(target, sizeof(target), "%s/written-via-session-symlink", outside);
    snprintf(direct, sizeof(direct), "%s/written-via-session-path", outside);

    if (strcmp(sock, "none") == 0) {
        /* No sandbox: the same paths, relative to the workspace, on the host. */
        if (chdir(ws) < 0)
            return die(ws);
        for (int i = 0; i < 6; i++) {
            char buf[256] = "";
            int fd = open(reads[i], O_RDONLY | O_CLOEXEC);
            ssize_t n = fd >= 0 ? read(fd, buf, sizeof(buf) - 1) : -1;
            if (fd >= 0)
                close(fd);
            if (n > 0 && strstr(buf, "FLUEBOX-SECRET-"))
                vnote(&v, 1, "read the secret via %s", reads[i]);
        }
        if (symlink(target, "wlink-by-probe") == 0) {
            int fd = open("wlink-by-probe", O_WRONLY | O_CREAT | O_CLOEXEC, 0600);
            if (fd >= 0) {
                close(fd);
                vnote(&v, 1, "wrote %s through a symlink", target);
            }
            unlink("wlink-by-probe");
        }
        unlink(target);
        printf("%s session_files: %s\n", v.escaped ? "ESCAPED" : "BLOCKED",
               v.detail[0] ? v.detail : "-");
        return 0;
    }

    sfd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (sfd < 0 || strlen(sock) >= sizeof(a.sun_path))
        return die("socket");
    memcpy(a.sun_path, sock, strlen(sock));
    if (connect(sfd, (struct sockaddr *)&a, sizeof(a)) < 0)
        return die(sock);

    static char req[32768], line[65536];
    char code[64];
    const char *net = "";
    char prof[64];
    snprintf(prof, sizeof(prof), "%s", profile);
    char *plus = strchr(prof, '+');
    if (plus) { /* trusted+hostnet */
        *plus = 0;
        net = ",\"network\":\"host\"";
    }
    snprintf(req, sizeof(req),
             "{\"id\":%ld,\"method\":\"session.create\",\"params\":{\"profile\":\"%s\","
             "\"workspace\":\"%s\",\"pool\":false%s}}\n",
             sid_counter++, prof, ws, net);
    if (srpc(req, line, sizeof(line)) < 0)
        return die("session.create");
    char *p = strstr(line, "\"session\":\"s-");
    if (!p) {
        printf("ERROR session_files: session.create: %.300s\n", line);
        return 0;
    }
    char sid[64];
    p += 11;
    size_t n = strcspn(p, "\"");
    if (n >= sizeof(sid))
        n = sizeof(sid) - 1;
    memcpy(sid, p, n);
    sid[n] = 0;

    for (int i = 0; i < 6; i++) {
        snprintf(req, sizeof(req),
                 "{\"id\":%ld,\"method\":\"file.read\",\"params\":{\"session\":\"%s\",\"path\":\"%s\"}}\n",
                 sid_counter++, sid, reads[i]);
        if (srpc(req, line, sizeof(line)) < 0)
            return die("file.read");
        if (strstr(line, "FLUEBOX-SECRET-"))
            vnote(&v, 1, "file.read %s returned the host secret", reads[i]);
        else
            vnote(&v, 0, "read %s: %s", reads[i], rcode(line, code, sizeof(code)));
    }
    /* A symlink made inside the sandbox, pointing at a host path. */
    snprintf(req, sizeof(req),
             "{\"id\":%ld,\"method\":\"exec\",\"params\":{\"session\":\"%s\",\"argv\":"
             "[\"/bin/ln\",\"-s\",\"%s\",\"/workspace/wlink-by-probe\"]}}\n",
             sid_counter++, sid, target);
    if (srpc(req, line, sizeof(line)) < 0)
        return die("exec");
    snprintf(req, sizeof(req),
             "{\"id\":%ld,\"method\":\"file.write\",\"params\":{\"session\":\"%s\","
             "\"path\":\"wlink-by-probe\",\"data\":\"x\"}}\n",
             sid_counter++, sid);
    if (srpc(req, line, sizeof(line)) < 0)
        return die("file.write");
    vnote(&v, 0, "write via symlink: %s", rcode(line, code, sizeof(code)));
    snprintf(req, sizeof(req),
             "{\"id\":%ld,\"method\":\"file.write\",\"params\":{\"session\":\"%s\","
             "\"path\":\"%s\",\"data\":\"x\",\"parents\":true}}\n",
             sid_counter++, sid, direct);
    if (srpc(req, line, sizeof(line)) < 0)
        return die("file.write");
    vnote(&v, 0, "write %s: %s", direct, rcode(line, code, sizeof(code)));
    struct stat st;
    if (lstat(target, &st) == 0) {
        vnote(&v, 1, "%s appeared on the host", target);
        unlink(target);
    }
    if (lstat(direct, &st) == 0) {
        vnote(&v, 1, "%s appeared on the host", direct);
        unlink(direct);
    }
    snprintf(req, sizeof(req),
             "{\"id\":%ld,\"method\":\"session.destroy\",\"params\":{\"session\":\"%s\"}}\n",
             sid_counter++, sid);
    srpc(req, line, sizeof(line));
    printf("%s session_files: %s\n", v.escaped ? "ESCAPED" : "BLOCKED", v.detail);
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

/* ---- pair: one attacker, victims ---- */

static pid_t start_cmd(char **argv, int in_fd, int out_fd, long uid)
{
    fflush(NULL);
    pid_t pid = fork();
    if (pid != 0)
        return pid;
    /* The throwaway uid gets the usual default open-file limit (1024), as
     * an ordinary login would: the fds-in-flight probe needs the victim's
     * limit to be below what the attacker can put in flight. */
    struct rlimit nofile = {1024, 1024};
    if (uid >= 0 && (setrlimit(RLIMIT_NOFILE, &nofile) < 0 || setgroups(0, NULL) < 0 ||
                     setresgid((gid_t)uid, (gid_t)uid, (gid_t)uid) < 0 ||
                     setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0))
        _exit(die("pair: switching to the throwaway uid"));
    if (in_fd >= 0)
        dup2(in_fd, 0);
    dup2(out_fd, 1);
    for (int fd = 3; fd < 1024; fd++)
        if (fd != 7 && fd != 8) /* the runner's context fds stay, as for every probe */
            close(fd);
    execvp(argv[0], argv);
    _exit(errno == ENOENT ? 127 : 126);
}

static long ms_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Read from fd into buf (appending) until a line starting with prefix is
 * complete, EOF, or the deadline. Returns that line (in buf) or NULL. */
static char *read_line_with(int fd, char *buf, size_t cap, size_t *len, const char *prefix,
                            long deadline)
{
    for (;;) {
        for (char *l = buf; l < buf + *len;) {
            char *nl = memchr(l, '\n', (size_t)(buf + *len - l));
            if (!nl)
                break;
            if (strncmp(l, prefix, strlen(prefix)) == 0) {
                *nl = 0;
                return l;
            }
            l = nl + 1;
        }
        long left = deadline - ms_now();
        if (left <= 0 || *len + 1 >= cap)
            return NULL;
        struct pollfd p = {.fd = fd, .events = POLLIN};
        int n = poll(&p, 1, (int)left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return NULL;
        ssize_t got = read(fd, buf + *len, cap - 1 - *len);
        if (got < 0 && errno == EINTR)
            continue;
        if (got <= 0)
            return NULL;
        *len += (size_t)got;
        buf[*len] = 0;
    }
}

static int wait_or_kill(pid_t pid, long deadline)
{
    int st = 0;
    for (;;) {
        pid_t w = waitpid(pid, &st, WNOHANG);
        if (w == pid)
            return st;
        if (w < 0 && errno != EINTR)
            return -1;
        if (ms_now() > deadline) {
            kill(pid, SIGKILL);
            while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
                ;
            return st;
        }
        struct timespec ts = {0, 20 * 1000000};
        nanosleep(&ts, NULL);
    }
}

static int pair(int argc, char **argv)
{
    const char *name = argv[2];
    long uid = -1;
    int i = 3;
    if (i + 1 < argc && strcmp(argv[i], "--uid") == 0) {
        uid = strtol(argv[i + 1], NULL, 10);
        i += 2;
    }
    if (i >= argc || strcmp(argv[i], "--") != 0)
        return die("pair: expected --");
    i++;
    /* Split the rest at "---": cmds[0] attacks, the others are victims. */
    char **cmds[8];
    int ncmds = 0;
    cmds[ncmds++] = argv + i;
    for (; i < argc; i++)
        if (strcmp(argv[i], "---") == 0) {
            argv[i] = NULL;
            if (ncmds < 8)
                cmds[ncmds++] = argv + i + 1;
        }
    if (ncmds < 2)
        return die("pair: no victim");
    signal(SIGPIPE, SIG_IGN);

    int in[2], out[2];
    if (pipe2(in, O_CLOEXEC) < 0 || pipe2(out, O_CLOEXEC) < 0)
        return die("pair: pipe");
    pid_t att = start_cmd(cmds[0], in[0], out[1], uid);
    close(in[0]);
    close(out[1]);
    if (att < 0)
        return die("pair: fork");
    static char abuf[65536], vbuf[65536], detail[4096];
    size_t alen = 0;
    char *held = read_line_with(out[0], abuf, sizeof abuf, &alen, "HOLDING ", ms_now() + 60000);
    char prefix[128];
    int escaped = 0, error = 0;
    size_t dl = 0;
    if (!held) {
        /* The attacker ended (or hung) without holding anything: when its
         * own verdict says it was stopped, that is the sandbox working. */
        close(in[1]);
        snprintf(prefix, sizeof prefix, "BLOCKED %s: ", name);
        char *v = read_line_with(out[0], abuf, sizeof abuf, &alen, prefix, ms_now() + 5000);
        int st = wait_or_kill(att, ms_now() + 5000);
        if (v) {
            printf("BLOCKED %s: the attacker could not take the resource: %s\n", name,
                   v + strlen(prefix));
            return 0;
        }
        printf("ERROR %s: the attacker never held the resource (status %d): %.300s\n", name, st,
               abuf);
        return 0;
    }
    dl += (size_t)snprintf(detail + dl, sizeof detail - dl, "attacker %s", held);
    for (int k = 1; k < ncmds; k++) {
        int vo[2];
        if (pipe2(vo, O_CLOEXEC) < 0)
            return die("pair: pipe");
        pid_t v = start_cmd(cmds[k], -1, vo[1], uid);
        close(vo[1]);
        size_t vlen = 0;
        /* The victim's verdict: the line naming the probe. */
        char *line = NULL;
        static const char *const verdicts[] = {"ESCAPED", "BLOCKED", "SKIP", "ERROR"};
        long deadline = ms_now() + 60000;
        vbuf[0] = 0;
        for (;;) {
            struct pollfd p = {.fd = vo[0], .events = POLLIN};
            long left = deadline - ms_now();
            if (left <= 0 || poll(&p, 1, (int)left) <= 0)
                break;
            ssize_t got = read(vo[0], vbuf + vlen, sizeof vbuf - 1 - vlen);
            if (got < 0 && errno == EINTR)
                continue;
            if (got <= 0)
                break;
            vlen += (size_t)got;
            vbuf[vlen] = 0;
        }
        close(vo[0]);
        int st = wait_or_kill(v, ms_now() + 5000);
        int which = -1;
        for (size_t j = 0; j < 4 && which < 0; j++) {
            char pre[160];
            snprintf(pre, sizeof pre, "%s %s: ", verdicts[j], name);
            char *at = strstr(vbuf, pre);
            if (at && (at == vbuf || at[-1] == '\n')) {
                which = (int)j;
                line = at + strlen(pre);
                char *nl = strchr(line, '\n');
                if (nl)
                    *nl = 0;
            }
        }
        if (which == 0)
            escaped = 1;
        else if (which != 1)
            error = 1;
        dl += (size_t)snprintf(detail + dl, dl < sizeof detail ? sizeof detail - dl : 0,
                               "; victim %d: %s%s", k,
                               which < 0 ? "no verdict" : line,
                               which < 0 ? (WIFEXITED(st) && WEXITSTATUS(st) ? " (exit non-zero)" : "")
                                         : "");
        if (dl >= sizeof detail)
            dl = sizeof detail - 1;
    }
    close(in[1]); /* the attacker lets go */
    wait_or_kill(att, ms_now() + 30000);
    close(out[0]);
    printf("%s %s: %s\n", escaped ? "ESCAPED" : error ? "ERROR" : "BLOCKED", name, detail);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 6 && strcmp(argv[1], "pair") == 0)
        return pair(argc, argv);
    if (argc == 4 && strcmp(argv[1], "serve") == 0)
        return serve(argv[2], argv[3]);
    if (argc >= 4 && strcmp(argv[1], "pty") == 0 && strcmp(argv[2], "--") == 0)
        return run_with_pty(argv + 3);
    if (argc == 7 && strcmp(argv[1], "session-files") == 0)
        return session_files(argv[2], argv[3], argv[4], argv[5], argv[6]);
    fprintf(stderr, "usage: fbhost serve INFOFILE TAG | fbhost pty -- CMD [ARGS...]\n"
                    "       fbhost pair NAME [--uid N] -- ATTACKER... --- VICTIM... [--- ...]\n"
                    "       fbhost session-files SOCKET|none PROFILE WS SECRET OUTSIDE\n");
    return 2;
}
