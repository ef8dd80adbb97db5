/* mem_bomb: hold more memory than the sandbox's limit, spread over several
 * processes so that a per-process cap (RLIMIT_AS/RLIMIT_DATA) does not pass
 * for a limit on the whole sandbox. The runner starts the sandbox with
 * --mem 64M; the probe's goal is mem_cap= MB (default 256) held at the same
 * time by 8 allocators, each touching its share and then keeping it. The
 * allocators volunteer for the OOM killer (oom_score_adj 1000) and report
 * through a pipe, so the probe survives to say where they were stopped.
 * Every allocator is killed before the verdict. */
#include "probe.h"
#include <poll.h>
#include <sys/prctl.h>

#define NALLOC 8
#define CHUNK (4L << 20)

struct msg {
    int who;
    int mb;  /* progress: MB touched so far */
    int err; /* mmap errno, or 0 */
    int done;
};

static void allocate(int fd, int who, long share_mb)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int o = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
    if (o >= 0) {
        if (write(o, "1000", 4) < 0) {
            /* not fatal: the OOM killer may pick the probe instead */
        }
        close(o);
    }
    struct msg m = {.who = who};
    while (m.mb < share_mb) {
        char *p = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) {
            m.err = errno;
            if (write(fd, &m, sizeof(m)) < 0)
                _exit(3);
            _exit(2);
        }
        for (long i = 0; i < CHUNK; i += 4096)
            p[i] = (char)(i | 1);
        m.mb += (int)(CHUNK >> 20);
        if (write(fd, &m, sizeof(m)) < 0)
            _exit(3);
    }
    m.done = 1;
    if (write(fd, &m, sizeof(m)) < 0)
        _exit(3);
    for (;;)
        pause(); /* keep it all until the probe has counted */
}

static void probe_attempt(struct probe_res *r)
{
    long cap_mb = parg_long("mem_cap", 256);
    if (cap_mb < 32 || cap_mb > 4096)
        cap_mb = 256;
    long share = cap_mb / NALLOC;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        res_error(r, "pipe: %s", ename(errno));
        return;
    }
    pid_t kids[NALLOC];
    int nkids = 0;
    for (int i = 0; i < NALLOC; i++) {
        pid_t pid = fork();
        if (pid == 0) {
            close(p[0]);
            allocate(p[1], i, share);
        }
        if (pid < 0) {
            res_note(r, "fork %d: %s", i, ename(errno));
            break;
        }
        kids[nkids++] = pid;
    }
    close(p[1]);

    int mb[NALLOC] = {0}, err[NALLOC] = {0}, killed = 0, failed = 0;
    bool isdone[NALLOC] = {false}, gone[NALLOC] = {false};
    /* Until every allocator either holds its share or is gone. */
    for (;;) {
        struct pollfd pf = {.fd = p[0], .events = POLLIN};
        if (poll(&pf, 1, 100) > 0) {
            struct msg m;
            ssize_t n = read(p[0], &m, sizeof(m));
            if (n == (ssize_t)sizeof(m) && m.who >= 0 && m.who < nkids) {
                mb[m.who] = m.mb;
                if (m.err)
                    err[m.who] = m.err;
                if (m.done)
                    isdone[m.who] = true;
                continue; /* drain before looking at the dead */
            }
        }
        int settled = 0;
        for (int i = 0; i < nkids; i++) {
            int st;
            if (!gone[i] && waitpid(kids[i], &st, WNOHANG) == kids[i]) {
                gone[i] = true;
                if (WIFSIGNALED(st))
                    killed++;
                else
                    failed++;
            }
            settled += gone[i] || isdone[i];
        }
        if (settled == nkids)
            break;
    }
    int done = 0;
    for (int i = 0; i < nkids; i++)
        done += isdone[i] && !gone[i];
    long held = 0;
    for (int i = 0; i < nkids; i++)
        if (!gone[i])
            held += mb[i];
    for (int i = 0; i < nkids; i++)
        if (!gone[i])
            kill(kids[i], SIGKILL);
    for (int i = 0; i < nkids; i++)
        if (!gone[i])
            waitpid(kids[i], NULL, 0);
    close(p[0]);

    int first_err = 0;
    for (int i = 0; i < nkids; i++)
        if (err[i] && !first_err)
            first_err = err[i];
    if (done == nkids && nkids == NALLOC && held >= cap_mb)
        res_escape(r, "%d processes held %ld MB at once, no limit in sight", nkids, held);
    else
        res_note(r, "%d of %d allocators got their %ld MB; %d killed, %d failed%s%s", done, nkids,
                 share, killed, failed, first_err ? " with " : "",
                 first_err ? ename(first_err) : "");
}

PROBE_MAIN("mem_bomb")
