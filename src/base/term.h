/* term.h — the caller's terminal (term.c): raw mode while a command inside
 * has a terminal of its own, put back on every way out; its size. Used by
 * `fluebox run -t` (run/supervise.c), `fluebox exec -t` (cli/client.c) and
 * the option table that records the size for a session (policy_opts.c). */
#ifndef FB_TERM_H
#define FB_TERM_H

#include <stdbool.h>

/* Raw mode for fd (when it is a terminal), undone by fb_tty_restore (also
 * at exit). 0, or -1 when fd is not a terminal. */
int fb_tty_raw(int fd);
void fb_tty_restore(void);
/* Every terminal on 0, 1, 2 as it is now, put back (when it changed and
 * fluebox is in its foreground) by fb_tty_put_back, at exit() and on a
 * fatal signal: a command that shares the caller's terminal (run without
 * -t) cannot leave it changed. */
void fb_tty_keep(void);
void fb_tty_put_back(void);
/* The caller's terminal size: false when none of 0, 1, 2 is a terminal. */
bool fb_tty_size(int *rows, int *cols);

#endif
