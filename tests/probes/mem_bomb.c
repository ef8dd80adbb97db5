/* mem_bomb: allocate and touch memory until something stops it. The runner
 * starts the sandbox with --mem 64M; the probe stops by itself at mem_cap= MB
 * (default 256). The allocating process is a child that volunteers for the
 * OOM killer (oom_score_adj 1000) and reports its progress through a pipe, so
 * the probe survives to say where it was stopped. */
#include "probe.h"

#define CHUNK (4L << 20)

static void probe_attempt(struct probe_res *r)
{
    long cap_mb = parg_long("mem_cap", 256);
    if (cap_mb < 16 || cap_mb > 4096)
        cap_mb = 256;
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        res_error(r, "pipe: %s", ename(errno));
        return;
    }
    pid_t pid = fork();
    if (pid < 0) {
        res_error(r, "fork: %s", ename(errno));
        return;
    }
    if (pid == 0) {
        close(p[0]);
        int fd = open("/proc/self/oom_score_adj", O_WRONLY | O_CLOEXEC);
        if (fd >= 0) {
            if (write(fd, "1000", 4) < 0) {
                /* not fatal: the OOM killer may pick the parent instead */
            }
            close(fd);
        }
        long mb = 0;
        while (mb < cap_mb) {
            char *m = mmap(NULL, CHUNK, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
            if (m == MAP_FAILED) {
                int e = errno;
                if (write(p[1], &e, sizeof(e)) < 0)
                    _exit(3);
                _exit(2);
            }
            for (long i = 0; i < CHUNK; i += 4096)
                m[i] = (char)i | 1;
            mb += CHUNK >> 20;
            int prog = (int)-mb; /* progress as a negative number, errors positive */
            if (write(p[1], &prog, sizeof(prog)) < 0)
                _exit(3);
        }
        _exit(0);
    }
    close(p[1]);
    long reached = 0;
    int e = 0, v;
    while (read(p[0], &v, sizeof(v)) == (ssize_t)sizeof(v)) {
        if (v < 0)
            reached = -v;
        else
            e = v;
    }
    close(p[0]);
    int st;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && reached >= cap_mb)
        res_escape(r, "allocated and touched %ld MB, no limit in sight", reached);
    else if (WIFSIGNALED(st))
        res_note(r, "allocator killed by signal %d after %ld MB", WTERMSIG(st), reached);
    else if (e)
        res_note(r, "mmap failed after %ld MB: %s", reached, ename(e));
    else
        res_note(r, "allocator stopped after %ld MB (status %d)", reached, st);
}

PROBE_MAIN("mem_bomb")
