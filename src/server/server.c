/* server.c — `fluebox serve`: one epoll event loop with non-blocking I/O
 * that owns the listening socket, client connections, sessions' control
 * sockets, exec pipes and timers (docs/protocol.md). This file has the loop
 * itself, the epoll and graveyard helpers, timers, start-up and shutdown;
 * server.h says which file has what else.
 *
 * Flow control: a connection whose queued responses exceed 4 MiB is not
 * read from, and its streaming execs' pipes are not read from either (the
 * command blocks on write); above 64 MiB queued it is dropped. Requests in
 * flight per connection are bounded the same way. Init's control socket is
 * written without blocking, with a queue. */
#include "server.h"

#include "egress.h"
#include "idrange.h"

#include "cgroup.h"
#include "commands.h"
#include "options.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

/* ---- the graveyard ---- */

void bury(struct srv *srv, enum grave_kind kind, void *p)
{
    struct grave *g = fb_xmalloc(sizeof *g);
    g->kind = kind;
    g->p = p;
    g->next = srv->graves;
    srv->graves = g;
}

/* ---- epoll helpers ---- */

/* Every watch is level-triggered: a handler may stop before EAGAIN (to be
 * fair to other fds) and is called again. w->ev is what the kernel has;
 * a mismatch (the kernel dropped an fd, or still has one) is repaired
 * rather than ignored, and a failure is reported: the caller then fails
 * what the fd was for instead of waiting for an event that cannot come. */
int w_set(struct srv *srv, struct watch *w, uint32_t ev)
{
    if (w->fd < 0 || w->ev == ev)
        return 0;
    struct epoll_event e = {.events = ev, .data.ptr = w};
    int op = !w->ev ? EPOLL_CTL_ADD : !ev ? EPOLL_CTL_DEL : EPOLL_CTL_MOD;
    int r = epoll_ctl(srv->ep, op, w->fd, op == EPOLL_CTL_DEL ? NULL : &e);
    if (r < 0 && op == EPOLL_CTL_ADD && errno == EEXIST)
        r = epoll_ctl(srv->ep, EPOLL_CTL_MOD, w->fd, &e);
    else if (r < 0 && op == EPOLL_CTL_MOD && errno == ENOENT)
        r = epoll_ctl(srv->ep, EPOLL_CTL_ADD, w->fd, &e);
    else if (r < 0 && op == EPOLL_CTL_DEL && errno == ENOENT)
        r = 0;
    if (r < 0) {
        int er = errno;
        fb_warn("epoll: fd %d (watch kind %d): %s", w->fd, (int)w->kind, strerror(er));
        if (op == EPOLL_CTL_DEL)
            w->ev = 0;
        errno = er;
        return -1;
    }
    w->ev = ev;
    return 0;
}

void w_init(struct watch *w, enum wkind kind, int sub, void *ptr, int fd)
{
    w->kind = kind;
    w->sub = sub;
    w->ptr = ptr;
    w->fd = fd;
    w->ev = 0;
}

void w_close(struct srv *srv, struct watch *w)
{
    if (w->fd < 0)
        return;
    w_set(srv, w, 0);
    close(w->fd);
    w->fd = -1;
}

int fds_free(int64_t *in_use, int64_t *limit)
{
    struct rlimit rl;
    int64_t lim = getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY
                      ? (int64_t)rl.rlim_cur : INT32_MAX;
    /* Since Linux 6.2 the size of /proc/self/fd is the number of open
     * descriptors, counted from the kernel's bitmap: cheap at any count.
     * Before, counting reads a directory of every open descriptor (tens of
     * thousands with thousands of sessions): far from the limit a count a
     * few milliseconds old is good enough (main thread only). */
    static int64_t last_n = -1;
    static uint64_t last_ns;
    int64_t n = last_n;
    uint64_t now = now_ns();
    struct stat st;
    if (stat("/proc/self/fd", &st) == 0 && st.st_size > 0) {
        n = st.st_size;
    } else if (n < 0 || lim - n < 4096 || now - last_ns > 50000000ull) {
        n = 0;
        DIR *d = opendir("/proc/self/fd");
        if (d) {
            while (readdir(d))
                n++;
            closedir(d);
            n -= 3; /* ".", ".." and the directory's own fd */
        }
        last_n = n;
        last_ns = now;
    }
    if (in_use)
        *in_use = n;
    if (limit)
        *limit = lim;
    return lim - n > INT32_MAX ? INT32_MAX : (int)(lim - n);
}

/* A pipe with close-on-exec ends; the server's end is non-blocking. */
int mkpipe(int fds[2], bool server_reads)
{
    if (pipe2(fds, O_CLOEXEC) < 0)
        return -1;
    int mine = server_reads ? fds[0] : fds[1];
    fcntl(mine, F_SETFL, fcntl(mine, F_GETFL) | O_NONBLOCK);
    return 0;
}

/* ---- timers ----
 *
 * A session's timers (its ttl and idle timeout, its execs' and file
 * operations' deadlines, a record to send again, a workspace job's
 * progress) are not looked at on every turn of the loop: with thousands of
 * sessions that walk was most of the server's time. The loop keeps the
 * earliest time any of them is due (timer_due_ns) and walks all sessions
 * only once it comes, or once a second (timer_sweep_ns, in case a deadline
 * moved earlier without timers_note). A walk recomputes the earliest; a
 * change that can make a session's timer due earlier calls timers_note. */

#define TIMER_SWEEP_NS 1000000000ull

/* The earliest time one of ss's timers is due, or UINT64_MAX. */
static uint64_t sess_due_ns(const struct sess *ss)
{
    const struct fb_session *s = ss->s;
    uint64_t best = UINT64_MAX;
    if (ss->dead || ss->in_pool || s->state == SESS_STARTING || ss->dying)
        return best;
    if (s->ttl_ms > 0) {
        uint64_t t = s->created_ns + (uint64_t)s->ttl_ms * 1000000ull;
        if (t < best)
            best = t;
    }
    if (s->idle_ms > 0 && !ss->running_execs && !ss->ops) {
        uint64_t t = s->last_used_ns + (uint64_t)s->idle_ms * 1000000ull;
        if (t < best)
            best = t;
    }
    if (ss->send_retry_ns && ss->send_retry_ns < best)
        best = ss->send_retry_ns;
    if (ss->ws && ws_next_progress(ss) < best)
        best = ws_next_progress(ss);
    for (const struct op *o = ss->ops; o; o = o->snext) {
        if (o->kind == OP_FILE && !o->dead && o->deadline_ns < best)
            best = o->deadline_ns;
        if (o->kind != OP_EXEC || o->dead)
            continue;
        if (o->deadline_ns && !o->timed_out && o->deadline_ns < best)
            best = o->deadline_ns;
        if (o->exited && o->grace_ns < best)
            best = o->grace_ns;
    }
    return best;
}

void timers_note(struct sess *ss)
{
    uint64_t t = sess_due_ns(ss);
    if (t < ss->srv->timer_due_ns)
        ss->srv->timer_due_ns = t;
}

static int next_timeout_ms(struct srv *srv)
{
    uint64_t now = now_ns();
    uint64_t best = srv->timer_due_ns;
    if (srv->sesss && srv->timer_sweep_ns < best)
        best = srv->timer_sweep_ns;
    if (srv->lim.pool > 0 && srv->pool_retry_ns && srv->pool_ready + srv->pool_pending < srv->lim.pool && srv->pool_retry_ns < best)
        best = srv->pool_retry_ns;
    if (srv->pool_defer_ns && srv->pool_defer_ns < best)
        best = srv->pool_defer_ns;
    if (srv->listen_paused_until && srv->listen_paused_until < best)
        best = srv->listen_paused_until;
    if (srv->ports_paused_until && srv->ports_paused_until < best)
        best = srv->ports_paused_until;
    if (best == UINT64_MAX)
        return -1;
    if (best <= now)
        return 0;
    uint64_t ms = (best - now + 999999) / 1000000;
    return ms > 60000 ? 60000 : (int)ms;
}

/* The timers of one session that are due at now. */
static void sess_run_timers(struct sess *ss, uint64_t now)
{
    struct fb_session *s = ss->s;
    if (ss->send_retry_ns && now >= ss->send_retry_ns)
        outq_flush(ss);
    if (ss->ws)
        ws_progress(ss, now);
    struct op *o = ss->ops;
    while (o) {
        struct op *nx = o->snext;
        if (o->kind == OP_EXEC && !o->dead) {
            if (o->deadline_ns && !o->timed_out && now >= o->deadline_ns) {
                o->timed_out = true;
                exec_kill(o, SIGKILL);
            }
            if (o->exited && now >= o->grace_ns)
                exec_maybe_finish(o, true);
        } else if (o->kind == OP_FILE && !o->dead && now >= o->deadline_ns) {
            file_timed_out(o);
        }
        o = nx;
    }
    bool expired = s->ttl_ms > 0 && now >= s->created_ns + (uint64_t)s->ttl_ms * 1000000ull;
    bool idle = s->idle_ms > 0 && !ss->running_execs && !ss->ops &&
                now >= s->last_used_ns + (uint64_t)s->idle_ms * 1000000ull;
    if (expired || idle) {
        snprintf(s->death, sizeof s->death, "%s", expired ? "ttl expired" : "idle timeout");
        sess_destroy(ss);
    }
}

static void run_timers(struct srv *srv)
{
    uint64_t now = now_ns();
    if (now >= srv->timer_due_ns || now >= srv->timer_sweep_ns) {
        srv->timer_due_ns = UINT64_MAX;
        srv->timer_sweep_ns = now + TIMER_SWEEP_NS;
        /* (A destroy may unlink ss: its next is taken first.) */
        for (struct sess *ss = srv->sesss, *nx; ss; ss = nx) {
            nx = ss->next;
            if (sess_due_ns(ss) <= now)
                sess_run_timers(ss, now);
            timers_note(ss);
        }
    }
    if (srv->listen_paused_until && now >= srv->listen_paused_until) {
        srv->listen_paused_until = 0;
        w_set(srv, &srv->wlisten, EPOLLIN);
    }
    if (srv->ports_paused_until && now >= srv->ports_paused_until) {
        srv->ports_paused_until = 0;
        ports_resume(srv);
    }
    if (srv->pool_defer_ns && now >= srv->pool_defer_ns)
        pool_refill(srv);
    if (srv->pool_retry_ns && now >= srv->pool_retry_ns) {
        srv->pool_retry_ns = 0;
        pool_refill(srv);
    }
}

/* ---- start-up and shutdown ---- */

static int listen_on(struct srv *srv, const char *path, struct fb_err *err)
{
    struct sockaddr_un sa = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof sa.sun_path)
        return fb_errf(err, FB_EXIT_SETUP, "socket path too long: %s", path);
    snprintf(sa.sun_path, sizeof sa.sun_path, "%s", path);
    char lockp[sizeof sa.sun_path + 8];
    snprintf(lockp, sizeof lockp, "%s.lock", path);
    srv->lock_fd = open(lockp, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (srv->lock_fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s", lockp);
    if (flock(srv->lock_fd, LOCK_EX | LOCK_NB) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "another fluebox serve is using %s", path);
    struct stat st;
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode))
            return fb_errf(err, FB_EXIT_SETUP, "%s exists and is not a socket", path);
        unlink(path); /* stale: whoever made it does not hold the lock */
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socket");
    mode_t old = umask(0177);
    int r = bind(fd, (struct sockaddr *)&sa, sizeof sa);
    umask(old);
    if (r < 0) {
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "bind %s", path);
    }
    chmod(path, 0600);
    if (listen(fd, 512) < 0) {
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "listen %s", path);
    }
    return fd;
}

/* --remove-dir: the socket's directory was made for this server alone (a
 * client's private server). Refused unless it is a directory of ours that
 * nobody else may write in. */
static int own_dir_check(const char *sock, struct fb_err *err)
{
    const char *slash = strrchr(sock, '/');
    if (sock[0] != '/' || slash == sock)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--remove-dir: the socket must be given as an absolute path below /");
    char dir[108];
    snprintf(dir, sizeof dir, "%.*s", (int)(slash - sock), sock);
    struct stat st;
    if (lstat(dir, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--remove-dir: %s", dir);
    if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() || (st.st_mode & 022))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--remove-dir: %s is not a directory of uid %u that only it may write in",
                       dir, (unsigned)geteuid());
    return 0;
}

/* At exit, with the lock held (the socket is ours): the socket, its lock
 * and, with --remove-dir, the files in the socket's directory (the client
 * keeps the server's log there) and the directory. A subdirectory, which
 * the server never makes, keeps the directory. */
static void release_socket(struct srv *srv)
{
    if (srv->lock_fd < 0)
        return;
    char lockp[sizeof srv->sock_path + 8];
    snprintf(lockp, sizeof lockp, "%s.lock", srv->sock_path);
    unlink(srv->sock_path);
    unlink(lockp);
    close(srv->lock_fd);
    srv->lock_fd = -1;
    if (!srv->remove_dir)
        return;
    char dir[sizeof srv->sock_path];
    snprintf(dir, sizeof dir, "%s", srv->sock_path);
    *strrchr(dir, '/') = 0; /* checked at start (own_dir_check) */
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dfd < 0 ? NULL : fdopendir(dfd);
    if (!d) {
        if (dfd >= 0)
            close(dfd);
        fb_warn("--remove-dir: %s: %s", dir, strerror(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(d))) {
        struct stat st;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        if (fstatat(dfd, de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && !S_ISDIR(st.st_mode))
            unlinkat(dfd, de->d_name, 0);
    }
    closedir(d);
    if (rmdir(dir) < 0 && errno != ENOENT)
        fb_warn("--remove-dir: %s: %s", dir, strerror(errno));
}

static void shutdown_all(struct srv *srv)
{
    srv->stopping = true;
    ws_shutdown(srv);
    w_close(srv, &srv->wlisten);
    unlink(srv->sock_path);
    /* Answer whatever is in flight, kill every sandbox. */
    for (struct sess *ss = srv->sesss; ss; ss = ss->next) {
        if (ss->dead)
            continue;
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            if (o->kind != OP_CREATE || !o->pending) {
                send_errf(o->c, o->id, "shutting_down", "the server is stopping");
                op_finish(o);
            }
            o = nx;
        }
        if (ss->s->spawned)
            sandbox_kill(&ss->s->sb);
    }
    worker_stop();
    enum worker_job kind;
    struct fb_session *s;
    while ((s = worker_done(&kind))) {
        if (kind == WJ_SPAWN && s->spawn_rc == 0)
            s->spawned = true;
        else if (kind == WJ_RELEASE)
            s->spawned = false;
        struct sess *ss = s->srv;
        struct op *o = ss->ops;
        while (o) {
            struct op *nx = o->snext;
            send_errf(o->c, o->id, "shutting_down", "the server is stopping");
            op_finish(o);
            o = nx;
        }
    }
    for (struct sess *ss = srv->sesss; ss; ss = ss->next) {
        sess_unwatch(ss);
        outq_free(ss);
        if (ss->s->spawned) {
            sandbox_kill(&ss->s->sb);
            sandbox_release(&ss->s->sb);
            ss->s->spawned = false;
        }
    }
    /* Best effort: flush what we owe the clients. */
    for (struct conn *c = srv->conns; c; c = c->next)
        if (!c->dead && buf_pending(&c->out))
            (void)!write(c->fd, buf_head(&c->out), buf_pending(&c->out));
}

static void bury_flush(struct srv *srv);

static void free_all(struct srv *srv)
{
    while (srv->conns)
        conn_close(srv->conns);
    while (srv->sesss) {
        struct sess *ss = srv->sesss;
        while (ss->ops)
            op_finish(ss->ops);
        sess_free(ss);
    }
    bury_flush(srv);
}

static void bury_flush(struct srv *srv)
{
    /* Detached relays first: one reads its session's policy as it goes. */
    for (struct grave **gp = &srv->graves; *gp;) {
        struct grave *g = *gp;
        if (g->kind != GRAVE_EGRESS) {
            gp = &g->next;
            continue;
        }
        *gp = g->next;
        egress_free(g->p);
        free(g);
    }
    while (srv->graves) {
        struct grave *g = srv->graves;
        srv->graves = g->next;
        if (g->kind == GRAVE_CONN) {
            struct conn *c = g->p;
            buf_free(&c->in);
            buf_free(&c->out);
            free(c);
        } else if (g->kind == GRAVE_SESS) {
            struct sess *ss = g->p;
            while (ss->ops)
                op_finish(ss->ops); /* cannot normally happen */
            ports_close(ss);
            outq_free(ss);
            if (ss->s->spawned) {
                /* Should have been released: do it now rather than leak. */
                sandbox_kill(&ss->s->sb);
                sandbox_release(&ss->s->sb);
            }
            session_free(ss->s);
            free(ss);
        } else if (g->kind == GRAVE_OP) {
            op_free(g->p);
        } else if (g->kind == GRAVE_EGRESS) {
            egress_free(g->p);
        } else {
            free(g->p);
        }
        free(g);
    }
}

static const char serve_usage[] =
    "Usage: fluebox serve [OPTIONS]\n"
    "Serves sessions on a Unix socket (docs/protocol.md). Default socket:\n"
    "$FLUEBOX_SOCKET, $XDG_RUNTIME_DIR/fluebox.sock, /run/user/UID/fluebox.sock or\n"
    "/tmp/fluebox-UID/fluebox.sock. SIGTERM destroys every session and exits.\n"
    "\n";

struct serve_args {
    struct srv *srv;
    const char *sock;
};
#define SRV(ctx) (((struct serve_args *)(ctx))->srv)

static int set_sock(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (!*v)
        return fb_errf(err, FB_EXIT_SETUP, "--socket: empty path");
    ((struct serve_args *)ctx)->sock = v;
    return 0;
}

/* The limits, by name. */
static int64_t *limit_of(struct srv *srv, const char *name)
{
    struct srv_limits *l = &srv->lim;
    return !strcmp(name, "pool")           ? &l->pool
           : !strcmp(name, "max-sessions") ? &l->max_sessions
           : !strcmp(name, "max-execs")    ? &l->max_execs
           : !strcmp(name, "max-conns")    ? &l->max_conns
           : !strcmp(name, "max-conns-per-uid") ? &l->max_conns_uid
           : !strcmp(name, "max-output")   ? &l->max_output
           : !strcmp(name, "conn-memory")  ? &l->conn_mem
           : !strcmp(name, "uid-memory")   ? &l->uid_mem
                                           : &l->max_message;
}

static int set_number(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    if (opt_count(o, v, 100000, false, &n, err) < 0)
        return -1;
    *limit_of(SRV(ctx), o->name) = n;
    return 0;
}

static int set_size(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    if (fb_parse_size(v, &n) < 0 || n < 1024)
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a size of at least 1K", o->name, v);
    *limit_of(SRV(ctx), o->name) = n;
    return 0;
}

static int set_file_timeout(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t ms;
    if (fb_parse_duration_ms(v, &ms) < 0 || ms < 1)
        return fb_errf(err, FB_EXIT_SETUP, "--file-timeout %s: expected a duration (30s, 2m)", v);
    SRV(ctx)->lim.file_timeout_ms = ms;
    return 0;
}

static int set_ready_fd(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    uint64_t fd;
    if (fb_parse_u64(v, &fd) < 0 || fd > 1 << 20)
        return fb_errf(err, FB_EXIT_SETUP, "--ready-fd %s: expected a descriptor number", v);
    SRV(ctx)->ready_fd = (int)fd;
    return 0;
}

static int set_exit_with_parent(void *ctx, const struct fb_opt *o, const char *v,
                                struct fb_err *err)
{
    SRV(ctx)->exit_with_parent = true;
    return 0;
}

static int set_remove_dir(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    SRV(ctx)->remove_dir = true;
    return 0;
}

static int set_foreign(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct foreign_rules *r = &SRV(ctx)->foreign;
    if (!strcmp(o->name, "foreign-net-host")) {
        r->net_host = true;
        return 0;
    }
    return !strcmp(o->name, "foreign-profiles") ? foreign_rules_set_profiles(r, v, err)
                                                : foreign_rules_set_options(r, v, err);
}

static int set_log_format(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (strcmp(v, "text") && strcmp(v, "json"))
        return fb_errf(err, FB_EXIT_SETUP, "--log-format %s: expected text or json", v);
    SRV(ctx)->log_json = !strcmp(v, "json");
    return 0;
}

const struct fb_opt serve_opts[] = {
    {"socket", 0, FB_ARG_HOST_PATH, "PATH", FB_OPT_ANY, set_sock, "the socket to listen on",
     NULL},
    {"pool", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_number,
     "keep N sandboxes of the default policy ready (default 0)", NULL},
    {"max-sessions", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_number, "sessions per uid (100)", NULL},
    {"max-execs", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_number,
     "concurrent execs per session (32)", NULL},
    {"max-output", 0, FB_ARG_VALUE, "SIZE", FB_OPT_ANY, set_size,
     "collected output per stream, and file.read's largest (16M)", NULL},
    {"max-message", 0, FB_ARG_VALUE, "SIZE", FB_OPT_ANY, set_size, "largest request line (16M)",
     NULL},
    {"max-conns", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_number, "connections at once (1024)",
     NULL},
    {"max-conns-per-uid", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_number,
     "connections of one uid other than the server's own (128)", NULL},
    {"file-timeout", 0, FB_ARG_VALUE, "DURATION", FB_OPT_ANY, set_file_timeout,
     "deadline of a file operation (60s)", NULL},
    {"conn-memory", 0, FB_ARG_VALUE, "SIZE", FB_OPT_ANY, set_size,
     "memory held for one connection: replies, output, stdin, file data (64M)", NULL},
    {"uid-memory", 0, FB_ARG_VALUE, "SIZE", FB_OPT_ANY, set_size,
     "memory held for all connections of one uid (256M)", NULL},
    {"ready-fd", 0, FB_ARG_VALUE, "N", FB_OPT_ANY, set_ready_fd,
     "write \"ready\" to descriptor N once listening", NULL},
    {"exit-with-parent", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_exit_with_parent,
     "shut down when the process that started it dies", NULL},
    {"remove-dir", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_remove_dir,
     "remove the socket's directory and the files in it at exit (a client's private server)",
     NULL},
    {"log-format", 0, FB_ARG_VALUE, "FORMAT", FB_OPT_ANY, set_log_format,
     "the log of session events on stderr: text (default) or json, one line each", NULL},
    {"foreign-profiles", 0, FB_ARG_VALUE, "LIST", FB_OPT_ANY, set_foreign,
     "built-in profiles other uids may use (strict,standard; none)",
     "Other users (when the socket is opened to them; docs/server.md):"},
    {"foreign-options", 0, FB_ARG_VALUE, "LIST", FB_OPT_ANY, set_foreign,
     "run options they may set (default: limits, network allowlist, env, hostname, ...)", NULL},
    {"foreign-net-host", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_foreign,
     "let them share the host network (where a profile permits it)", NULL},
};
const size_t serve_opts_n = FB_ARRAY_LEN(serve_opts);

/* 0: go on; 1: --help was printed; -1: an error was printed. */
static int parse_serve_args(struct srv *srv, int argc, char **argv, const char **sock)
{
    struct serve_args a = {srv, NULL};
    struct fb_optset set = {serve_opts, FB_ARRAY_LEN(serve_opts), &a};
    struct fb_parsed parsed;
    struct fb_err err = {0};
    int r = opt_parse(argc, argv, &set, 1, FB_OPT_ANY | FB_PARSE_PERMUTE, "serve", &parsed, &err);
    if (r == 1) {
        fputs(serve_usage, stdout);
        opt_help(stdout, &set, 1, FB_OPT_ANY);
        return 1;
    }
    if (r == 0 && parsed.nargs)
        r = fb_errf(&err, FB_EXIT_SETUP, "serve: unexpected argument \"%s\"", parsed.args[0]);
    if (r == 0)
        r = opt_apply(&parsed, &a, &err);
    opt_parsed_free(&parsed);
    if (r < 0) {
        fb_warn("%s", err.msg);
        return -1;
    }
    *sock = a.sock;
    return 0;
}

/* One epoll event. */
static void dispatch(struct srv *srv, struct watch *w, uint32_t ev)
{
    switch (w->kind) {
    case W_LISTEN:
        on_accept(srv);
        break;
    case W_SIG: {
        struct signalfd_siginfo si;
        while (read(w->fd, &si, sizeof si) == (ssize_t)sizeof si)
            if (si.ssi_signo == SIGTERM || si.ssi_signo == SIGINT)
                srv->stopping = true;
        break;
    }
    case W_WORKER: {
        worker_ack();
        worker_hold();
        enum worker_job kind;
        struct fb_session *s;
        while ((s = worker_done(&kind))) {
            if (kind == WJ_SPAWN)
                spawn_done(srv, s);
            else if (kind == WJ_REAPED)
                reaped_done(srv, s);
            else
                release_done(srv, s);
        }
        break;
    }
    case W_CONN: {
        struct conn *c = w->ptr;
        if (!c->dead)
            on_conn(c, ev);
        break;
    }
    case W_CTL: {
        struct sess *ss = w->ptr;
        if (ss->dead)
            break;
        if (ev & EPOLLOUT)
            outq_flush(ss);
        if (ev & (EPOLLIN | EPOLLHUP | EPOLLERR))
            on_ctl(ss);
        break;
    }
    case W_PIDFD: {
        struct sess *ss = w->ptr;
        if (!ss->dead)
            sess_gone(ss);
        break;
    }
    case W_REAP: {
        struct sess *ss = w->ptr;
        w_close(srv, &ss->wreap);
        if (!ss->dead)
            reaped_done(srv, ss->s);
        break;
    }
    case W_WS:
        ws_on_done(srv);
        break;
    case W_PORT:
        on_port(w->ptr);
        break;
    case W_RELAY:
        on_relay(w->ptr, w->sub, ev);
        break;
    case W_PIPE: {
        struct op *o = w->ptr;
        if (o->dead)
            break;
        if (w->sub == 3)
            on_bulk_pipe(o);
        else
            on_exec_pipe(o, w->sub);
        break;
    }
    }
}

static void serve_loop(struct srv *srv)
{
    while (!srv->stopping) {
        struct epoll_event evs[64];
        int n = epoll_wait(srv->ep, evs, 64, next_timeout_ms(srv));
        if (n < 0 && errno != EINTR) {
            fb_warn("epoll_wait: %s", strerror(errno));
            break;
        }
        for (int i = 0; i < n && !srv->stopping; i++) {
            /* A session's network relay watches its sockets here too
             * (egress.h): its events are told apart by their first int. */
            if (*(const int *)evs[i].data.ptr >= FB_EGRESS_HANDLE_KIND)
                egress_event(evs[i].data.ptr, evs[i].events);
            else
                dispatch(srv, evs[i].data.ptr, evs[i].events);
        }
        egress_flush();
        run_timers(srv);
        if (srv->nparked)
            file_unpark(srv); /* file.reads that waited for memory */
        /* Connections that were paused on in-flight requests may go on. */
        for (struct conn *c = srv->conns; c; c = c->next)
            if (!c->dead && !conn_paused(c) && buf_pending(&c->in))
                conn_process(c);
        bury_flush(srv);
    }
}

/* Signals: everything through a signalfd; SIGPIPE stays blocked so a write
 * to a closed pipe or socket just fails with EPIPE. Threads and sandboxes
 * inherit this mask (init and execs reset it). */
static int signals_fd(void)
{
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);
    sigdelset(&set, SIGPIPE);
    return signalfd(-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

/* Listening, the epoll set and the worker. 0, or an exit code. */
static int serve_start(struct srv *srv)
{
    struct fb_err err = {0};
    int sfd = signals_fd();
    if (srv->remove_dir && own_dir_check(srv->sock_path, &err) < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }

    /* Every session holds a few descriptors here and every exec two or
     * three pipes: use the hard limit (sessions check what is left). */
    struct rlimit rl;
    srv->sandbox_nofile = 65536;
    if (getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        /* Sessions keep what they had before (programs that close every
         * possible descriptor take long with a million). */
        if (rl.rlim_max != RLIM_INFINITY && rl.rlim_max < 65536)
            srv->sandbox_nofile = (int64_t)rl.rlim_max;
        /* Root may go past the hard limit, up to what the kernel allows
         * a process (fs.nr_open): 10,000 sessions need about 30,000. */
        char nr[32];
        unsigned long long nr_open = 0;
        if (geteuid() == 0 && fb_read_file("/proc/sys/fs/nr_open", nr, sizeof nr) > 0)
            nr_open = strtoull(nr, NULL, 10);
        if (nr_open > 0 && rl.rlim_max != RLIM_INFINITY && nr_open > rl.rlim_max) {
            struct rlimit up = {.rlim_cur = nr_open, .rlim_max = nr_open};
            if (setrlimit(RLIMIT_NOFILE, &up) == 0)
                rl = up;
        }
        if (rl.rlim_cur < rl.rlim_max) {
            rl.rlim_cur = rl.rlim_max;
            setrlimit(RLIMIT_NOFILE, &rl);
        }
    }
    /* Every sandbox's host id range is held through one descriptor. */
    idrange_share();
    cgroup_sweep_stale();
    int lfd = listen_on(srv, srv->sock_path, &err);
    if (lfd < 0 && srv->lock_fd >= 0) {
        /* Not listening: the path is not ours to remove at exit. */
        close(srv->lock_fd);
        srv->lock_fd = -1;
    }
    if (lfd < 0 || sfd < 0) {
        fb_warn("%s", lfd < 0 ? err.msg : "signalfd failed");
        return FB_EXIT_SETUP;
    }
    if (srv->exit_with_parent) {
        /* The parent's death arrives as SIGTERM: a clean shutdown. If it
         * died before we asked, we are an orphan already (and, listening
         * now, clean up what is ours on the way out). */
        pid_t parent = getppid();
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        if (getppid() != parent) {
            fb_warn("serve: the parent is gone already (--exit-with-parent)");
            close(lfd);
            return FB_EXIT_SETUP;
        }
    }
    srv->ep = epoll_create1(EPOLL_CLOEXEC);
    if (srv->ep < 0 || worker_start(&err) < 0 || ws_start(srv, &err) < 0) {
        fb_warn("%s", srv->ep < 0 ? "epoll_create1 failed" : err.msg);
        unlink(srv->sock_path);
        return FB_EXIT_SETUP;
    }
    srv->recbuf = fb_xmalloc(SREC_MAX);
    w_init(&srv->wlisten, W_LISTEN, 0, NULL, lfd);
    w_init(&srv->wsig, W_SIG, 0, NULL, sfd);
    w_init(&srv->wworker, W_WORKER, 0, NULL, worker_fd());
    w_set(srv, &srv->wlisten, EPOLLIN);
    w_set(srv, &srv->wsig, EPOLLIN);
    w_set(srv, &srv->wworker, EPOLLIN);
    if (srv->log_json)
        srv_log(srv, "server.listening", NULL, 0,
                json_pack("{s:s, s:I}", "socket", srv->sock_path, "pool", (json_int_t)srv->lim.pool));
    else
        fb_warn("serving on %s (pool %lld)", srv->sock_path, (long long)srv->lim.pool);
    if (srv->ready_fd >= 0) {
        /* Listening: clients may connect from now on. */
        if (fb_write_all(srv->ready_fd, "ready\n", 6) < 0)
            fb_warn("--ready-fd %d: %s", srv->ready_fd, strerror(errno));
        if (srv->ready_fd > 2)
            close(srv->ready_fd);
    }
    return 0;
}

/* Listen, serve until SIGTERM, then destroy every session. */
static int serve_run(struct srv *srv, const char *sock)
{
    struct fb_err err = {0};
    if (srv->log_json)
        srv_log_warnings(srv);
    if (sock) {
        snprintf(srv->sock_path, sizeof srv->sock_path, "%s", sock);
    } else if (proto_default_socket(srv->sock_path, sizeof srv->sock_path, true, &err) < 0) {
        fb_warn("%s", err.msg);
        return FB_EXIT_SETUP;
    }
    int r = serve_start(srv);
    if (r) {
        release_socket(srv);
        return r;
    }
    pool_refill(srv);
    serve_loop(srv);

    unsigned live = 0;
    for (struct sess *ss = srv->sesss; ss; ss = ss->next)
        live += !ss->dead && !ss->in_pool && ss->s->state != SESS_DEAD;
    if (srv->log_json)
        srv_log(srv, "server.stopping", NULL, 0, json_pack("{s:i}", "sessions", (int)live));
    else
        fb_warn("stopping: destroying %u session(s)", live);
    shutdown_all(srv);
    free_all(srv);
    w_close(srv, &srv->wsig);
    close(srv->ep);
    release_socket(srv);
    free(srv->recbuf);
    free(srv->idx);
    tool_binds_free(srv->pool_binds, srv->npool_binds);
    return 0;
}

int cmd_serve(int argc, char **argv)
{
    struct srv srv = {
        .lim = {.max_message = 16 << 20, .max_sessions = 100, .max_execs = 32,
                .max_output = 16 << 20, .max_conns = 1024, .max_conns_uid = 128, .pool = 0,
                .conn_mem = 64 << 20, .uid_mem = 256 << 20, .file_timeout_ms = 60000},
        .ep = -1,
        .lock_fd = -1,
        .ready_fd = -1,
    };
    w_init(&srv.wlisten, W_LISTEN, 0, NULL, -1);
    w_init(&srv.wsig, W_SIG, 0, NULL, -1);
    w_init(&srv.wworker, W_WORKER, 0, NULL, -1);
    w_init(&srv.wws, W_WS, 0, NULL, -1);
    foreign_rules_default(&srv.foreign);
    const char *sock = NULL;
    int r = parse_serve_args(&srv, argc, argv, &sock);
    if (r == 0)
        r = serve_run(&srv, sock);
    else
        r = r > 0 ? 0 : FB_EXIT_SETUP;
    foreign_rules_free(&srv.foreign);
    return r;
}
