/* fork_bomb: create processes until the kernel says no. The runner starts the
 * sandbox with --pids 64 and the probe stops by itself at cap= (default 256)
 * processes, so that with no limit it reports ESCAPED instead of taking the
 * machine down. Every child dies with its parent (PR_SET_PDEATHSIG) and is
 * killed and reaped before the verdict. */
#include "probe.h"
#include <sys/prctl.h>

static void probe_attempt(struct probe_res *r)
{
    long cap = parg_long("pids_cap", 256);
    if (cap < 8 || cap > 4096)
        cap = 256;
    pid_t *kids = calloc((size_t)cap, sizeof(pid_t));
    if (!kids) {
        res_error(r, "calloc");
        return;
    }
    pid_t parent = getpid();
    long n = 0;
    int err = 0;
    while (n < cap) {
        pid_t p = fork();
        if (p == 0) {
            prctl(PR_SET_PDEATHSIG, SIGKILL);
            if (getppid() != parent)
                _exit(0);
            for (;;)
                pause();
        }
        if (p < 0) {
            err = errno;
            break;
        }
        kids[n++] = p;
    }
    for (long i = 0; i < n; i++)
        kill(kids[i], SIGKILL);
    for (long i = 0; i < n; i++)
        waitpid(kids[i], NULL, 0);
    free(kids);
    if (n >= cap)
        res_escape(r, "created %ld processes, no limit in sight", n);
    else
        res_note(r, "fork failed after %ld processes: %s", n, ename(err));
}

PROBE_MAIN("fork_bomb")
