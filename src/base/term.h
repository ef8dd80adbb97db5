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
/* The caller's terminal size: false when none of 0, 1, 2 is a terminal. */
bool fb_tty_size(int *rows, int *cols);

#endif
