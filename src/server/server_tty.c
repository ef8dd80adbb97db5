/* server_tty.c — execs with a terminal (docs/protocol.md, exec "tty" and
 * exec.resize): the session's init makes a pseudo-terminal of the sandbox's
 * own devpts, gives the command its slave as controlling terminal in a new
 * session, and passes the master here with the "started" record. From then
 * on the master is the exec's output (read as stdout; the command's stderr
 * is the same terminal) and its input (exec.write, server_stdin.c), and
 * exec.resize sets its window size (the kernel sends SIGWINCH to the
 * terminal's foreground process group). Nothing inside can reach the
 * master: only the server holds it. */
#include "server.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>

void exec_take_pty(struct op *o, int fd)
{
    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK);
    /* The stdout pipe carries nothing now (the command writes to the
     * terminal): the master takes its place. */
    struct xstream *x = &o->xs[0];
    w_close(o->srv, &x->w);
    x->eof = false;
    x->w.fd = fd;
    int in = fcntl(fd, F_DUPFD_CLOEXEC, 3);
    if (in >= 0)
        o->win.fd = in;
    else
        o->stdin_broken = true;
    if (w_set(o->srv, &x->w, o->paused ? 0 : EPOLLIN) < 0 ||
        (in >= 0 && buf_pending(&o->inbuf) && w_set(o->srv, &o->win, EPOLLOUT) < 0)) {
        /* Cannot watch it: the command cannot be served. */
        exec_kill(o, SIGKILL);
    }
}

void m_exec_resize(struct conn *c, const struct method *m, json_t *id, json_t *params,
                   struct sess *ss)
{
    struct proto_err e = {0};
    const char *xid;
    int64_t rows, cols;
    if (pget_str(params, "execId", &xid, NULL, true, 64, &e) < 0 ||
        pget_int(params, "rows", &rows, -1, 1, 65535, &e) < 0 ||
        pget_int(params, "cols", &cols, -1, 1, 65535, &e) < 0)
        return send_error(c, id, &e);
    if (rows < 0 || cols < 0) {
        perr_param(&e, rows < 0 ? "rows" : "cols", "rows and cols are required");
        return send_error(c, id, &e);
    }
    struct op *o = exec_by_id(ss, xid);
    if (!o || o->exited)
        return send_errf(c, id, "not_found", "no running exec %s in session %s", xid, ss->s->id);
    if (!o->tty) {
        perr_param(&e, "execId", "exec %s has no terminal (started without tty)", xid);
        return send_error(c, id, &e);
    }
    int fd = o->xs[0].w.fd >= 0 ? o->xs[0].w.fd : o->win.fd;
    struct winsize ws = {.ws_row = (unsigned short)rows, .ws_col = (unsigned short)cols};
    if (!o->started || fd < 0 || ioctl(fd, TIOCSWINSZ, &ws) < 0)
        return send_errf(c, id, "EIO", "exec %s: its terminal is not there (yet, or any more)", xid);
    send_result(c, id, json_object());
}
