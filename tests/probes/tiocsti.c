/* tiocsti: push characters into the input of the caller's terminal with
 * ioctl(TIOCSTI), the classic way a sandboxed program types commands into the
 * shell that started it (CVE-2017-5226 in bubblewrap, fixed with setsid). The
 * runner gives the probe a fresh pseudo-terminal as stdin and controlling
 * terminal; the injected byte is '#', a comment, and lands in that throw-away
 * terminal only. */
#include "probe.h"
#include <sys/ioctl.h>

static void probe_attempt(struct probe_res *r)
{
    int any_tty = 0;
    for (int fd = 0; fd <= 2; fd++) {
        if (!isatty(fd))
            continue;
        any_tty++;
        char c = '#';
        if (ioctl(fd, TIOCSTI, &c) == 0)
            res_escape(r, "TIOCSTI on fd %d worked", fd);
        else
            res_note(r, "fd %d: %s", fd, ename(errno));
    }
    int t = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
    if (t >= 0) {
        any_tty++;
        char c = '#';
        if (ioctl(t, TIOCSTI, &c) == 0)
            res_escape(r, "TIOCSTI on /dev/tty worked");
        else
            res_note(r, "/dev/tty: %s", ename(errno));
        close(t);
    } else {
        res_note(r, "/dev/tty: %s", ename(errno));
    }
    if (!any_tty && r->verdict != PV_ESCAPED)
        res_note(r, "no terminal reachable at all");
}

PROBE_MAIN("tiocsti")
