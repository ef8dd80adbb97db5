/* tmp_fill: fill /tmp (a tmpfs in the sandbox, so it is memory) until the
 * writes fail. The runner starts the sandbox with --disk 32M; the probe stops
 * by itself at fill_cap= MB (default 128) and deletes what it wrote. With no
 * sandbox the runner points it at a scratch directory of its own (fill=). */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    const char *dir = parg("fill");
    if (!dir)
        dir = "/tmp";
    long cap_mb = parg_long("fill_cap", 128);
    if (cap_mb < 8 || cap_mb > 4096)
        cap_mb = 128;
    signal(SIGXFSZ, SIG_IGN); /* an RLIMIT_FSIZE hit becomes EFBIG, not a kill */
    static char buf[1 << 20];
    memset(buf, 'x', sizeof(buf));
    long mb = 0;
    int files = 0, err = 0;
    char path[4096];
    while (mb < cap_mb && !err) {
        snprintf(path, sizeof(path), "%s/fill-by-probe-%d-%d", dir, (int)getpid(), files++);
        int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
        if (fd < 0) {
            err = errno;
            break;
        }
        for (int i = 0; i < 8 && mb < cap_mb; i++) {
            ssize_t w = write(fd, buf, sizeof(buf));
            if (w != (ssize_t)sizeof(buf)) {
                err = w < 0 ? errno : ENOSPC;
                break;
            }
            mb++;
        }
        if (close(fd) < 0 && !err)
            err = errno;
    }
    for (int i = 0; i < files; i++) {
        snprintf(path, sizeof(path), "%s/fill-by-probe-%d-%d", dir, (int)getpid(), i);
        unlink(path);
    }
    if (mb >= cap_mb && !err)
        res_escape(r, "wrote %ld MB to %s, no limit in sight", mb, dir);
    else
        res_note(r, "%s: stopped after %ld MB: %s", dir, mb, ename(err));
}

PROBE_MAIN("tmp_fill")
