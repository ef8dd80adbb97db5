/* dos_pipe_pages: grow pipes (F_SETPIPE_SZ, 1 MiB each) until the per-user
 * pipe buffer quota (fs.pipe-user-pages-soft, 16384 pages) refuses more;
 * from then on every new pipe of that user gets two pages (8 KiB) instead
 * of sixteen, and a writer blocks after 8 KiB. Counted per host uid (the
 * user_struct): before fluebox gave each sandbox its own host ids, every
 * sandbox started as root ran as host uid 100000 and shared that quota.
 * Nothing is written, so no memory is used. The holder stops at
 * pipe_cap= pipes (default 200). Needs a partner (dos.h). */
#include "dos.h"

static void probe_attempt(struct probe_res *r)
{
    if (dos_is_holder()) {
        long cap = parg_long("pipe_cap", 200);
        long n = 0, grown = 0;
        int e = 0;
        while (n < cap) {
            int p[2];
            if (pipe2(p, O_CLOEXEC) < 0) {
                e = errno;
                break;
            }
            n++;
            if (fcntl(p[1], F_SETPIPE_SZ, 1 << 20) < 0) {
                e = errno;
                break;
            }
            grown++;
        }
        dos_hold(r, "%ld pipes, %ld of them at 1 MiB (then %s)", n, grown,
                 e ? ename(e) : "the cap");
        return;
    }
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        res_note(r, "victim: pipe2: %s", ename(errno));
        return;
    }
    int sz = fcntl(p[0], F_GETPIPE_SZ);
    close(p[0]);
    close(p[1]);
    if (sz > 0 && sz < 65536)
        res_escape(r, "the victim's new pipe holds %d bytes, not 65536", sz);
    else
        res_note(r, "the victim's new pipe holds %d bytes", sz);
}

PROBE_MAIN("dos_pipe_pages")
