/* term.c — the caller's terminal (term.h): raw mode while a command inside
 * has a terminal of its own (every key goes to the terminal inside, Ctrl-C
 * included, which the terminal inside turns into SIGINT for its foreground
 * process group), put back as it was on every way out (normal end, error, a
 * signal fluebox handles, exit()), and its size. */
#include "term.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

static struct termios saved;
static int saved_fd = -1;

void fb_tty_restore(void)
{
    if (saved_fd < 0)
        return;
    int r;
    do
        r = tcsetattr(saved_fd, TCSAFLUSH, &saved);
    while (r < 0 && errno == EINTR);
    saved_fd = -1;
}

int fb_tty_raw(int fd)
{
    if (saved_fd >= 0 || !isatty(fd) || tcgetattr(fd, &saved) < 0)
        return -1;
    struct termios raw = saved;
    cfmakeraw(&raw);
    if (tcsetattr(fd, TCSAFLUSH, &raw) < 0)
        return -1;
    saved_fd = fd;
    static bool registered;
    if (!registered) {
        atexit(fb_tty_restore);
        registered = true;
    }
    return 0;
}

bool fb_tty_size(int *rows, int *cols)
{
    struct winsize ws;
    for (int fd = 0; fd <= 2; fd++) {
        if (ioctl(fd, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col) {
            *rows = ws.ws_row;
            *cols = ws.ws_col;
            return true;
        }
    }
    return false;
}
