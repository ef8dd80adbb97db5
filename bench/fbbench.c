/* fbbench.c — the timing harness behind `make bench`.
 *
 * It runs commands ("variants") side by side and reports each one next to
 * the others, so that machine noise hits every variant alike:
 *
 *   fbbench time  [OPTIONS] @NAME CMD ARGS... @NAME CMD ARGS...
 *       wall time of fork + exec + wait, interleaved: every round runs each
 *       variant once, and the order rotates from round to round.
 *       Median, p90, p99, mean, min, max.
 *   fbbench throughput [OPTIONS] @NAME CMD... ...
 *       completed runs per second with --workers parallel loops, in
 *       one-second slices that alternate between the variants.
 *   fbbench session --socket PATH [OPTIONS]
 *       round trips through `fluebox serve` (docs/protocol.md): session.create
 *       from the warm pool and without it, session.destroy, exec of /bin/true,
 *       file.write and file.read of 4 KB and 10 MB. One connection, one
 *       request at a time; each row is one operation.
 *   fbbench http-source PORTFILE
 *       helper for the egress rows: an HTTP/1.1 server on 127.0.0.1 (port
 *       written to PORTFILE) that answers "GET /N" with N bytes, until SIGTERM
 *       or ten minutes.
 *   fbbench http-fetch HOST PORT BYTES
 *       the client: GET /BYTES with Host: HOST, read to the end; exits 0 only
 *       when exactly BYTES of body arrived.
 *   fbbench rss [OPTIONS] @NAME CMD... ...
 *       peak RSS (VmHWM) of the launched process itself, and of every process
 *       of its tree running the same binary, sampled while the payload (which
 *       should sleep) runs.
 *
 * Options: --title T  --reps N  --warmup N  --workers N  --seconds N
 *          --gap-ms N (time: leave the machine idle N ms before each run, so
 *          that state the kernel keeps warm between back-to-back runs has
 *          cooled down, as it has for a tool call made now and then)
 *          --baseline NAME (repeatable: ratio columns against these)
 *          --json FILE (append one JSON object)  --md FILE (append a table)
 *          --note TEXT (printed under the table)
 *
 * A variant whose command exits non-zero counts as a failure and its sample
 * is dropped; failures are reported, never hidden. Standard input, output and
 * error of the commands are /dev/null.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdarg.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>

#define MAX_VARIANTS 32
#define MAX_BASELINES 4

struct variant {
    const char *name;
    char **argv;
    double *samples; /* ms, or KB for rss */
    size_t n, cap;
    long failures;
    int last_status;
    /* results */
    double median, p90, p99, mean, min, max;
    double per_sec;   /* throughput */
    long runs;
    double self_hwm_kb, tree_hwm_kb, self_rss_kb, self_anon_kb;
};

static struct variant vars[MAX_VARIANTS];
static int nvars;
static const char *baselines[MAX_BASELINES];
static int nbaselines;
static const char *title = "benchmark";
static const char *note;
static long reps = 100, warmup = 5, workers = 2, seconds = 5;
static long gap_ms; /* idle time before every timed run (time mode) */
static int devnull = -1;
static bool session_mode;

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void push(struct variant *v, double x)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->samples = realloc(v->samples, v->cap * sizeof(double));
        if (!v->samples) {
            perror("fbbench: realloc");
            exit(2);
        }
    }
    v->samples[v->n++] = x;
}

static pid_t spawn(char **argv)
{
    pid_t pid = fork();
    if (pid == 0) {
        dup2(devnull, 0);
        dup2(devnull, 1);
        dup2(devnull, 2);
        execvp(argv[0], argv);
        _exit(127);
    }
    return pid;
}

static int wait_status(pid_t pid)
{
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return st;
}

/* One fork + exec + wait; returns ms, or -1 on a non-zero exit. */
static double run_once(struct variant *v)
{
    double t0 = now_ms();
    pid_t pid = spawn(v->argv);
    if (pid < 0)
        return -1;
    int st = wait_status(pid);
    double t1 = now_ms();
    v->last_status = st;
    if (st != 0)
        return -1;
    return t1 - t0;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted samples. */
static double pct(const double *s, size_t n, double q)
{
    if (n == 0)
        return NAN;
    size_t k = (size_t)ceil(q * (double)n);
    if (k < 1)
        k = 1;
    if (k > n)
        k = n;
    return s[k - 1];
}

static void summarise(struct variant *v)
{
    if (v->n == 0) {
        v->median = v->p90 = v->p99 = v->mean = v->min = v->max = NAN;
        return;
    }
    qsort(v->samples, v->n, sizeof(double), cmp_double);
    double sum = 0;
    for (size_t i = 0; i < v->n; i++)
        sum += v->samples[i];
    v->mean = sum / (double)v->n;
    v->min = v->samples[0];
    v->max = v->samples[v->n - 1];
    v->median = v->n % 2 ? v->samples[v->n / 2]
                         : (v->samples[v->n / 2 - 1] + v->samples[v->n / 2]) / 2;
    v->p90 = pct(v->samples, v->n, 0.90);
    v->p99 = pct(v->samples, v->n, 0.99);
}

static void mode_time(void)
{
    /* Warm-up rounds (page cache, dentries, lazy kernel state) are dropped. */
    for (long r = 0; r < warmup; r++)
        for (int i = 0; i < nvars; i++)
            run_once(&vars[i]);
    for (long r = 0; r < reps; r++) {
        for (int k = 0; k < nvars; k++) {
            struct variant *v = &vars[(k + r) % nvars]; /* rotate the order */
            if (gap_ms > 0)
                usleep((useconds_t)gap_ms * 1000);
            double ms = run_once(v);
            if (ms < 0)
                v->failures++;
            else
                push(v, ms);
        }
    }
    for (int i = 0; i < nvars; i++)
        summarise(&vars[i]);
}

/* Workers loop fork/exec/wait until the deadline; each writes its count. */
static long slice(struct variant *v, double ms, long *fails)
{
    int p[2];
    if (pipe(p) < 0)
        return 0;
    pid_t w[64];
    int nw = (int)(workers > 64 ? 64 : workers);
    for (int i = 0; i < nw; i++) {
        w[i] = fork();
        if (w[i] == 0) {
            close(p[0]);
            long c[2] = {0, 0};
            double end = now_ms() + ms;
            while (now_ms() < end) {
                if (run_once(v) < 0)
                    c[1]++;
                else
                    c[0]++;
            }
            if (write(p[1], c, sizeof(c)) != (ssize_t)sizeof(c))
                _exit(1);
            _exit(0);
        }
    }
    close(p[1]);
    long total = 0, c[2];
    while (read(p[0], c, sizeof(c)) == (ssize_t)sizeof(c)) {
        total += c[0];
        *fails += c[1];
    }
    close(p[0]);
    for (int i = 0; i < nw; i++)
        if (w[i] > 0)
            wait_status(w[i]);
    return total;
}

static void mode_throughput(void)
{
    for (int i = 0; i < nvars; i++)
        slice(&vars[i], 200, &vars[i].failures); /* warm-up */
    for (int i = 0; i < nvars; i++)
        vars[i].failures = 0;
    for (long s = 0; s < seconds; s++)
        for (int k = 0; k < nvars; k++) {
            struct variant *v = &vars[(k + s) % nvars];
            v->runs += slice(v, 1000, &v->failures);
        }
    for (int i = 0; i < nvars; i++)
        vars[i].per_sec = (double)vars[i].runs / (double)seconds;
}

static long status_kb(pid_t pid, const char *key)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f)
        return -1;
    long v = -1;
    size_t kl = strlen(key);
    while (fgets(line, sizeof(line), f))
        if (strncmp(line, key, kl) == 0 && line[kl] == ':') {
            v = strtol(line + kl + 1, NULL, 10);
            break;
        }
    fclose(f);
    return v;
}

static pid_t ppid_of(pid_t pid)
{
    char path[64], buf[512];
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    ssize_t n = read(fd, buf, sizeof(buf) - 1);
    close(fd);
    if (n <= 0)
        return -1;
    buf[n] = 0;
    char *p = strrchr(buf, ')');
    int pp;
    if (!p || sscanf(p + 1, " %*c %d", &pp) != 1)
        return -1;
    return pp;
}

static bool descends_from(pid_t pid, pid_t top)
{
    for (int depth = 0; depth < 64 && pid > 1; depth++) {
        if (pid == top)
            return true;
        pid = ppid_of(pid);
    }
    return false;
}

/* Sum VmHWM over top and its descendants that run the same executable; top's
 * own VmHWM, VmRSS and RssAnon (its private anonymous memory: what each more
 * running copy adds, as file pages of the binary and its libraries are
 * shared through the page cache). */
static void sample_tree(pid_t top, double *self_hwm, double *self_rss, double *self_anon,
                        double *tree_hwm)
{
    char exe_top[PATH_MAX], exe[PATH_MAX], path[64];
    snprintf(path, sizeof(path), "/proc/%d/exe", (int)top);
    ssize_t n = readlink(path, exe_top, sizeof(exe_top) - 1);
    if (n <= 0)
        return;
    exe_top[n] = 0;
    long h = status_kb(top, "VmHWM"), r = status_kb(top, "VmRSS"), a = status_kb(top, "RssAnon");
    if (h > *self_hwm)
        *self_hwm = (double)h;
    if (a > *self_anon)
        *self_anon = (double)a;
    if (r > *self_rss)
        *self_rss = (double)r;
    double sum = 0;
    DIR *d = opendir("/proc");
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1)
            continue;
        snprintf(path, sizeof(path), "/proc/%ld/exe", pid);
        n = readlink(path, exe, sizeof(exe) - 1);
        if (n <= 0)
            continue;
        exe[n] = 0;
        if (strcmp(exe, exe_top) != 0 || !descends_from((pid_t)pid, top))
            continue;
        long kb = status_kb((pid_t)pid, "VmHWM");
        if (kb > 0)
            sum += (double)kb;
    }
    closedir(d);
    if (sum > *tree_hwm)
        *tree_hwm = sum;
}

static void mode_rss(void)
{
    /* Per variant: reps runs; in each, sample from 300 ms to 700 ms into the
     * run (the payload should sleep about a second). Medians over runs. */
    for (int i = 0; i < nvars; i++) {
        struct variant *v = &vars[i];
        double *sh = calloc((size_t)reps, sizeof(double));
        double *sr = calloc((size_t)reps, sizeof(double));
        double *th = calloc((size_t)reps, sizeof(double));
        double *sa = calloc((size_t)reps, sizeof(double));
        long got = 0;
        for (long r = 0; r < reps; r++) {
            pid_t pid = spawn(v->argv);
            if (pid < 0)
                break;
            double hwm = -1, rss = -1, tree = -1, anon = -1;
            usleep(300000);
            for (int s = 0; s < 8; s++) {
                sample_tree(pid, &hwm, &rss, &anon, &tree);
                usleep(50000);
            }
            int st = wait_status(pid);
            if (st != 0 || hwm <= 0) {
                v->failures++;
                v->last_status = st;
                continue;
            }
            sh[got] = hwm, sr[got] = rss, th[got] = tree, sa[got] = anon;
            got++;
        }
        if (got) {
            qsort(sh, (size_t)got, sizeof(double), cmp_double);
            qsort(sr, (size_t)got, sizeof(double), cmp_double);
            qsort(th, (size_t)got, sizeof(double), cmp_double);
            qsort(sa, (size_t)got, sizeof(double), cmp_double);
            v->self_anon_kb = sa[got / 2];
            v->self_hwm_kb = sh[got / 2];
            v->self_rss_kb = sr[got / 2];
            v->tree_hwm_kb = th[got / 2];
        } else {
            v->self_hwm_kb = v->self_rss_kb = v->tree_hwm_kb = v->self_anon_kb = NAN;
        }
        v->runs = got;
        free(sh), free(sr), free(th), free(sa);
    }
}

/* ---- egress helpers: a byte source behind HTTP, and its client ---- */

static int http_source(const char *portfile)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t alen = sizeof(a);
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 64) < 0 ||
        getsockname(fd, (struct sockaddr *)&a, &alen) < 0) {
        perror("fbbench http-source");
        return 1;
    }
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp", portfile);
    FILE *f = fopen(tmp, "w");
    if (!f || fprintf(f, "%d\n", ntohs(a.sin_port)) < 0 || fclose(f) != 0 ||
        rename(tmp, portfile) < 0) {
        perror(portfile);
        return 1;
    }
    signal(SIGCHLD, SIG_IGN); /* children reap themselves */
    alarm(600);
    static char chunk[1 << 20];
    memset(chunk, 'z', sizeof(chunk));
    for (;;) {
        int c = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (c < 0) {
            if (errno == EINTR)
                continue;
            return 1;
        }
        if (fork() == 0) {
            char head[8192];
            size_t n = 0;
            while (n < sizeof(head) - 1) {
                ssize_t r = read(c, head + n, sizeof(head) - 1 - n);
                if (r <= 0)
                    _exit(1);
                n += (size_t)r;
                head[n] = 0;
                if (strstr(head, "\r\n\r\n"))
                    break;
            }
            unsigned long long want = 0;
            if (sscanf(head, "GET /%llu", &want) != 1)
                _exit(1);
            char hdr[256];
            int hl = snprintf(hdr, sizeof(hdr),
                              "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nConnection: close\r\n\r\n",
                              want);
            if (write(c, hdr, (size_t)hl) != hl)
                _exit(1);
            while (want > 0) {
                size_t k = want < sizeof(chunk) ? (size_t)want : sizeof(chunk);
                ssize_t w = write(c, chunk, k);
                if (w <= 0)
                    _exit(1);
                want -= (unsigned long long)w;
            }
            shutdown(c, SHUT_WR);
            _exit(0);
        }
        close(c);
    }
}

static int http_fetch(const char *host, const char *port, const char *bytes)
{
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *res;
    if (getaddrinfo(host, port, &hints, &res) != 0)
        return 2;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0 || connect(fd, res->ai_addr, res->ai_addrlen) < 0)
        return 3;
    freeaddrinfo(res);
    char req[512];
    int n = snprintf(req, sizeof(req), "GET /%s HTTP/1.1\r\nHost: %s\r\nConnection: close\r\n\r\n",
                     bytes, host);
    if (write(fd, req, (size_t)n) != n)
        return 4;
    static char buf[1 << 20];
    unsigned long long total = 0;
    ssize_t r;
    while ((r = read(fd, buf, sizeof(buf))) > 0)
        total += (unsigned long long)r;
    /* The body is what follows the head; the head is short and fixed. */
    char hdr[256];
    unsigned long long want = strtoull(bytes, NULL, 10);
    int hl = snprintf(hdr, sizeof(hdr),
                      "HTTP/1.1 200 OK\r\nContent-Length: %llu\r\nConnection: close\r\n\r\n", want);
    return total == want + (unsigned long long)hl ? 0 : 5;
}

/* ---- session mode: a minimal client of the wire protocol ---- */

static int sock_fd = -1;
static char *rbuf;
static size_t rlen, rcap;
static long next_id = 1;

static int sock_connect(const char *path)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(path) >= sizeof(a.sun_path))
        return -1;
    memcpy(a.sun_path, path, strlen(path));
    if (connect(fd, (struct sockaddr *)&a, sizeof(a)) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

/* Send one request line and return the response line (events skipped), or
 * NULL when the connection broke. The line stays valid until the next call. */
static char *rpc(const char *req, size_t len)
{
    for (size_t off = 0; off < len;) {
        ssize_t w = write(sock_fd, req + off, len - off);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        off += (size_t)w;
    }
    for (;;) {
        char *nl = rlen ? memchr(rbuf, '\n', rlen) : NULL;
        if (nl) {
            static char *line;
            static size_t lcap;
            size_t n = (size_t)(nl - rbuf);
            if (n + 1 > lcap) {
                lcap = n + 1;
                line = realloc(line, lcap);
                if (!line)
                    exit(2);
            }
            memcpy(line, rbuf, n);
            line[n] = 0;
            memmove(rbuf, nl + 1, rlen - n - 1);
            rlen -= n + 1;
            if (strstr(line, "\"event\"") && !strstr(line, "\"result\""))
                continue; /* an event, not the response */
            return line;
        }
        if (rcap - rlen < 65536) {
            rcap = rcap ? rcap * 2 : 1 << 20;
            rbuf = realloc(rbuf, rcap);
            if (!rbuf)
                exit(2);
        }
        ssize_t r = read(sock_fd, rbuf + rlen, rcap - rlen);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return NULL;
        rlen += (size_t)r;
    }
}

/* Time one request; returns ms, or -1 (the error is printed once per row). */
static double timed_rpc(struct variant *v, const char *req, size_t len, char **resp)
{
    double t0 = now_ms();
    char *line = rpc(req, len);
    double t1 = now_ms();
    if (resp)
        *resp = line;
    if (!line || !strstr(line, "\"result\"")) {
        if (v->failures++ == 0)
            fprintf(stderr, "fbbench: %s: %.300s\n", v->name, line ? line : "connection lost");
        return -1;
    }
    return t1 - t0;
}

static bool session_id(const char *line, char *out, size_t cap)
{
    const char *p = line ? strstr(line, "\"session\":\"s-") : NULL;
    if (!p)
        return false;
    p += 11;
    size_t n = strcspn(p, "\"");
    if (n + 1 > cap)
        return false;
    memcpy(out, p, n);
    out[n] = 0;
    return true;
}

static char *fmt_req(size_t *len, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static char *fmt_req(size_t *len, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        exit(2);
    *len = (size_t)n;
    return s;
}

static void destroy_session(const char *id)
{
    size_t len;
    char *req = fmt_req(&len, "{\"id\":%ld,\"method\":\"session.destroy\",\"params\":{\"session\":\"%s\"}}\n",
                        next_id++, id);
    rpc(req, len);
    free(req);
}

static int mode_session(const char *path)
{
    sock_fd = sock_connect(path);
    if (sock_fd < 0) {
        fprintf(stderr, "fbbench: connect %s: %s\n", path, strerror(errno));
        return 1;
    }
    static const char *const names[] = {
        "session.create (warm pool)", "session.create (no pool)", "session.destroy",
        "exec /bin/true", "file.write 4 KB", "file.read 4 KB", "file.write 10 MB",
        "file.read 10 MB",
    };
    nvars = (int)(sizeof(names) / sizeof(names[0]));
    for (int i = 0; i < nvars; i++)
        vars[i].name = names[i];
    struct variant *v_pool = &vars[0], *v_nopool = &vars[1], *v_destroy = &vars[2],
                   *v_exec = &vars[3], *v_w4 = &vars[4], *v_r4 = &vars[5], *v_w10 = &vars[6],
                   *v_r10 = &vars[7];
    long pooled = 0;

    /* A long-lived session for exec and files. */
    size_t len;
    char *req = fmt_req(&len, "{\"id\":%ld,\"method\":\"session.create\",\"params\":{\"pool\":false}}\n",
                        next_id++);
    char *resp = rpc(req, len), sid[64];
    free(req);
    if (!session_id(resp, sid, sizeof(sid))) {
        fprintf(stderr, "fbbench: session.create: %.300s\n", resp ? resp : "connection lost");
        return 1;
    }
    size_t big = 10u << 20;
    char *data4 = malloc(4097), *data10 = malloc(big + 1);
    if (!data4 || !data10)
        return 2;
    memset(data4, 'a', 4096), data4[4096] = 0;
    memset(data10, 'b', big), data10[big] = 0;
    long big_reps = reps / 10 < 5 ? 5 : reps / 10;

    for (long r = -warmup; r < reps; r++) {
        bool keep = r >= 0;
        double ms;
        char id2[64];
        /* Warm pool: give it time to refill first (untimed). */
        usleep((useconds_t)(gap_ms > 0 ? gap_ms : 300) * 1000);
        req = fmt_req(&len, "{\"id\":%ld,\"method\":\"session.create\",\"params\":{}}\n", next_id++);
        ms = timed_rpc(v_pool, req, len, &resp);
        free(req);
        if (session_id(resp, id2, sizeof(id2))) {
            bool was_pooled = strstr(resp, "\"pooled\":true") != NULL;
            if (keep && ms >= 0 && was_pooled) {
                push(v_pool, ms);
                pooled++;
            }
            destroy_session(id2);
        }
        req = fmt_req(&len, "{\"id\":%ld,\"method\":\"session.create\",\"params\":{\"pool\":false}}\n",
                      next_id++);
        ms = timed_rpc(v_nopool, req, len, &resp);
        free(req);
        if (session_id(resp, id2, sizeof(id2))) {
            if (keep && ms >= 0)
                push(v_nopool, ms);
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"session.destroy\",\"params\":{\"session\":\"%s\"}}\n",
                          next_id++, id2);
            ms = timed_rpc(v_destroy, req, len, NULL);
            free(req);
            if (keep && ms >= 0)
                push(v_destroy, ms);
        }
        /* Cheap operations: several per round. */
        for (int k = 0; k < 10; k++) {
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"exec\",\"params\":{\"session\":\"%s\",\"argv\":[\"/bin/true\"]}}\n",
                          next_id++, sid);
            ms = timed_rpc(v_exec, req, len, NULL);
            free(req);
            if (keep && ms >= 0)
                push(v_exec, ms);
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"file.write\",\"params\":{\"session\":\"%s\",\"path\":\"small\",\"data\":\"%s\"}}\n",
                          next_id++, sid, data4);
            ms = timed_rpc(v_w4, req, len, NULL);
            free(req);
            if (keep && ms >= 0)
                push(v_w4, ms);
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"file.read\",\"params\":{\"session\":\"%s\",\"path\":\"small\"}}\n",
                          next_id++, sid);
            ms = timed_rpc(v_r4, req, len, &resp);
            free(req);
            if (keep && ms >= 0)
                push(v_r4, ms);
        }
        if (r < big_reps) {
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"file.write\",\"params\":{\"session\":\"%s\",\"path\":\"big\",\"data\":\"%s\"}}\n",
                          next_id++, sid, data10);
            ms = timed_rpc(v_w10, req, len, NULL);
            free(req);
            if (keep && ms >= 0)
                push(v_w10, ms);
            req = fmt_req(&len, "{\"id\":%ld,\"method\":\"file.read\",\"params\":{\"session\":\"%s\",\"path\":\"big\"}}\n",
                          next_id++, sid);
            ms = timed_rpc(v_r10, req, len, &resp);
            free(req);
            if (keep && ms >= 0 && resp && strstr(resp, "\"bytesRead\":10485760"))
                push(v_r10, ms);
            else if (keep && ms >= 0)
                v_r10->failures++;
        }
    }
    destroy_session(sid);
    for (int i = 0; i < nvars; i++)
        summarise(&vars[i]);
    v_pool->runs = pooled;
    free(data4);
    free(data10);
    return 0;
}

static struct variant *find(const char *name)
{
    for (int i = 0; i < nvars; i++)
        if (strcmp(vars[i].name, name) == 0)
            return &vars[i];
    return NULL;
}

/* The figure a variant is compared by: lower is better except throughput. */
static double key(const struct variant *v, const char *mode)
{
    if (!strcmp(mode, "throughput"))
        return v->per_sec;
    if (!strcmp(mode, "rss"))
        return v->self_hwm_kb;
    return v->median;
}

static void json_num(FILE *f, const char *k, double x, int prec)
{
    if (isnan(x))
        fprintf(f, "\"%s\":null", k);
    else
        fprintf(f, "\"%s\":%.*f", k, prec, x);
}

static void json_str(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fprintf(f, "\\%c", *s);
        else if ((unsigned char)*s < 0x20)
            fprintf(f, "\\u%04x", *s);
        else
            fputc(*s, f);
    }
    fputc('"', f);
}

static void emit_json(FILE *f, const char *mode)
{
    fprintf(f, "{\"title\":");
    json_str(f, title);
    fprintf(f, ",\"kind\":\"%s\",\"reps\":%ld,\"warmup\":%ld", mode, reps, warmup);
    if (gap_ms > 0)
        fprintf(f, ",\"gap_ms\":%ld", gap_ms);
    if (!strcmp(mode, "throughput"))
        fprintf(f, ",\"workers\":%ld,\"seconds\":%ld", workers, seconds);
    if (note) {
        fprintf(f, ",\"note\":");
        json_str(f, note);
    }
    fprintf(f, ",\"variants\":[");
    for (int i = 0; i < nvars; i++) {
        struct variant *v = &vars[i];
        fprintf(f, "%s{\"name\":", i ? "," : "");
        json_str(f, v->name);
        fprintf(f, ",\"command\":");
        char cmd[2048] = "";
        for (char **a = v->argv; a && *a; a++) {
            if (a != v->argv)
                strncat(cmd, " ", sizeof(cmd) - strlen(cmd) - 1);
            strncat(cmd, *a, sizeof(cmd) - strlen(cmd) - 1);
        }
        json_str(f, cmd);
        fprintf(f, ",\"failures\":%ld,", v->failures);
        if (!strcmp(mode, "time")) {
            fprintf(f, "\"samples\":%zu,", v->n);
            json_num(f, "median_ms", v->median, 3), fputc(',', f);
            json_num(f, "p90_ms", v->p90, 3), fputc(',', f);
            json_num(f, "p99_ms", v->p99, 3), fputc(',', f);
            json_num(f, "mean_ms", v->mean, 3), fputc(',', f);
            json_num(f, "min_ms", v->min, 3), fputc(',', f);
            json_num(f, "max_ms", v->max, 3);
        } else if (!strcmp(mode, "throughput")) {
            fprintf(f, "\"runs\":%ld,", v->runs);
            json_num(f, "per_sec", v->per_sec, 1);
        } else {
            fprintf(f, "\"runs\":%ld,", v->runs);
            json_num(f, "self_hwm_kb", v->self_hwm_kb, 0), fputc(',', f);
            json_num(f, "self_rss_kb", v->self_rss_kb, 0), fputc(',', f);
            json_num(f, "self_anon_kb", v->self_anon_kb, 0), fputc(',', f);
            json_num(f, "tree_hwm_kb", v->tree_hwm_kb, 0);
        }
        fprintf(f, ",\"ratios\":{");
        int first = 1;
        for (int b = 0; b < nbaselines; b++) {
            struct variant *bv = find(baselines[b]);
            if (!bv || bv == v)
                continue;
            double r = key(v, mode) / key(bv, mode);
            fprintf(f, "%s", first ? "" : ",");
            first = 0;
            json_num(f, baselines[b], r, 3);
        }
        fprintf(f, "}}");
    }
    fprintf(f, "]}\n");
}

static void cell_ratio(FILE *f, const struct variant *v, const char *mode, const char *base)
{
    struct variant *bv = find(base);
    if (!bv || bv == v) {
        fprintf(f, " — |");
        return;
    }
    double r = key(v, mode) / key(bv, mode);
    if (isnan(r) || isinf(r))
        fprintf(f, " n/a |");
    else
        fprintf(f, " %.2f× |", r);
}

static void emit_md(FILE *f, const char *mode)
{
    fprintf(f, "\n### %s\n\n", title);
    if (!strcmp(mode, "time")) {
        fprintf(f, "| variant | median ms | p90 ms | p99 ms | failures |");
    } else if (!strcmp(mode, "throughput")) {
        fprintf(f, "| variant | runs/s (%ld workers) | failures |", workers);
    } else {
        fprintf(f, "| variant | own VmHWM KB | own VmRSS KB | own RssAnon KB | all its processes, VmHWM KB | failures |");
    }
    for (int b = 0; b < nbaselines; b++)
        if (find(baselines[b]))
            fprintf(f, " × %s |", baselines[b]);
    fprintf(f, "\n|---|");
    int cols = !strcmp(mode, "time") ? 4 : !strcmp(mode, "throughput") ? 2 : 5;
    for (int c = 0; c < cols; c++)
        fprintf(f, "---:|");
    for (int b = 0; b < nbaselines; b++)
        if (find(baselines[b]))
            fprintf(f, "---:|");
    fprintf(f, "\n");
    for (int i = 0; i < nvars; i++) {
        struct variant *v = &vars[i];
        fprintf(f, "| %s |", v->name);
        if (!strcmp(mode, "time"))
            fprintf(f, " %.2f | %.2f | %.2f | %ld |", v->median, v->p90, v->p99, v->failures);
        else if (!strcmp(mode, "throughput"))
            fprintf(f, " %.0f | %ld |", v->per_sec, v->failures);
        else
            fprintf(f, " %.0f | %.0f | %.0f | %.0f | %ld |", v->self_hwm_kb, v->self_rss_kb,
                    v->self_anon_kb, v->tree_hwm_kb, v->failures);
        for (int b = 0; b < nbaselines; b++)
            if (find(baselines[b]))
                cell_ratio(f, v, mode, baselines[b]);
        fprintf(f, "\n");
    }
    if (session_mode)
        fprintf(f, "\n%ld rounds after %ld warm-up rounds.\n", reps, warmup);
    else if (!strcmp(mode, "time") && gap_ms > 0)
        fprintf(f, "\n%ld interleaved rounds after %ld warm-up rounds, the machine left idle for "
                   "%ld ms before every run; ratios compare medians.\n",
                reps, warmup, gap_ms);
    else if (!strcmp(mode, "time"))
        fprintf(f, "\n%ld interleaved rounds after %ld warm-up rounds; ratios compare medians.\n",
                reps, warmup);
    else if (!strcmp(mode, "throughput"))
        fprintf(f, "\n%ld one-second slices per variant, alternating between variants.\n",
                seconds);
    else
        fprintf(f, "\nMedian of %ld runs; ratios compare the launched process's own VmHWM.\n",
                reps);
    if (note)
        fprintf(f, "%s\n", note);
}

static int usage(void)
{
    fprintf(stderr, "usage: fbbench time|throughput|rss|session [--socket PATH] [--title T]\n"
                    "       [--reps N] [--warmup N]\n"
                    "       [--workers N] [--seconds N] [--gap-ms N] [--baseline NAME]... [--json FILE]\n"
                    "       [--md FILE] [--note TEXT] @NAME CMD [ARGS...] [@NAME CMD...]...\n");
    return 2;
}

int main(int argc, char **argv)
{
    if (argc < 2)
        return usage();
    const char *mode = argv[1];
    if (!strcmp(mode, "http-source") && argc == 3)
        return http_source(argv[2]);
    if (!strcmp(mode, "http-fetch") && argc == 5)
        return http_fetch(argv[2], argv[3], argv[4]);
    if (strcmp(mode, "time") && strcmp(mode, "throughput") && strcmp(mode, "rss") &&
        strcmp(mode, "session"))
        return usage();
    const char *json = NULL, *md = NULL, *socket_path = NULL;
    int i = 2;
    for (; i < argc && argv[i][0] != '@'; i++) {
        const char *o = argv[i], *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!val)
            return usage();
        if (!strcmp(o, "--title"))
            title = val;
        else if (!strcmp(o, "--reps"))
            reps = atol(val);
        else if (!strcmp(o, "--warmup"))
            warmup = atol(val);
        else if (!strcmp(o, "--workers"))
            workers = atol(val);
        else if (!strcmp(o, "--gap-ms"))
            gap_ms = atol(val);
        else if (!strcmp(o, "--seconds"))
            seconds = atol(val);
        else if (!strcmp(o, "--baseline") && nbaselines < MAX_BASELINES)
            baselines[nbaselines++] = val;
        else if (!strcmp(o, "--json"))
            json = val;
        else if (!strcmp(o, "--md"))
            md = val;
        else if (!strcmp(o, "--note"))
            note = val;
        else if (!strcmp(o, "--socket"))
            socket_path = val;
        else
            return usage();
        i++;
    }
    /* Variants: "@name" starts one, the words up to the next "@" are its argv. */
    while (i < argc) {
        if (argv[i][0] != '@' || nvars == MAX_VARIANTS)
            return usage();
        struct variant *v = &vars[nvars++];
        v->name = argv[i] + 1;
        int start = ++i;
        while (i < argc && argv[i][0] != '@')
            i++;
        if (i == start)
            return usage();
        v->argv = calloc((size_t)(i - start + 1), sizeof(char *));
        for (int k = start; k < i; k++)
            v->argv[k - start] = argv[k];
    }
    bool session = !strcmp(mode, "session");
    session_mode = session;
    if ((session ? !socket_path || nvars : nvars == 0) || reps < 1 || workers < 1 || seconds < 1)
        return usage();
    devnull = open("/dev/null", O_RDWR | O_CLOEXEC);
    if (devnull < 0) {
        perror("fbbench: /dev/null");
        return 2;
    }
    signal(SIGPIPE, SIG_IGN);

    /* Fail fast on a command that does not work at all. */
    for (int k = 0; k < nvars; k++) {
        if (!strcmp(mode, "rss") || session)
            break;
        if (run_once(&vars[k]) < 0) {
            int st = vars[k].last_status;
            fprintf(stderr, "fbbench: %s: %s fails (%s %d)\n", vars[k].name, vars[k].argv[0],
                    WIFSIGNALED(st) ? "signal" : "exit",
                    WIFSIGNALED(st) ? WTERMSIG(st) : WEXITSTATUS(st));
            return 1;
        }
    }

    char session_note[512];
    if (session) {
        int rc = mode_session(socket_path);
        if (rc)
            return rc;
        snprintf(session_note, sizeof(session_note),
                 "One connection, one request at a time. Warm pool: %ld of %ld creates were served "
                 "from the pool (only those are in its row); the pool had %ld ms to refill before "
                 "each. 10 MB rows: %ld rounds.%s%s",
                 vars[0].runs, reps, gap_ms > 0 ? gap_ms : 300, reps / 10 < 5 ? 5 : reps / 10,
                 note ? " " : "", note ? note : "");
        note = session_note;
        mode = "time";
    } else if (!strcmp(mode, "time"))
        mode_time();
    else if (!strcmp(mode, "throughput"))
        mode_throughput();
    else
        mode_rss();

    emit_md(stdout, mode);
    if (md) {
        FILE *f = fopen(md, "a");
        if (!f) {
            perror(md);
            return 2;
        }
        emit_md(f, mode);
        fclose(f);
    }
    if (json) {
        FILE *f = fopen(json, "a");
        if (!f) {
            perror(json);
            return 2;
        }
        emit_json(f, mode);
        fclose(f);
    }
    return 0;
}
