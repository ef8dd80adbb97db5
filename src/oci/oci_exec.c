/* oci_exec.c — `exec` (another process in a running container) and `ps`.
 *
 * exec (P, the shim's child) reads the process (process.json, or the
 * config's process with the command line's changes), rebuilds the
 * container's policy from the config create saved (the same profile, the
 * same seccomp filters), and forks C, which as host root moves itself into
 * the container's cgroup and sets the rlimits (the profile's bounds, which
 * the process's own can only lower: exec_rlimits), joins init's namespaces (the
 * user namespace last) and clones G with CLONE_PARENT, so that G is P's
 * child, as init was create's: once P exits the shim reaps G. G is in the
 * container's pid namespace; it takes the terminal (a pty of the
 * container's devpts, whose master goes to --console-socket) and then the
 * same last steps as the container's own process (oci_exec_process). Its
 * exec error, or the end of the socket at a successful exec, comes back to
 * P, which writes --pid-file and with --detach exits; without it P waits
 * for G, passing signals on, and exits with its status.
 *
 * A container with a flight record (run.fluebox.record): P tells the
 * supervisor, which writes the record, of the process before it starts
 * ("exec", refused when the supervisor cannot be told: no exec goes
 * unrecorded) and of its end ("exec_end", without --detach). */
#include "oci.h"

#include "cgroup.h"
#include "ctl.h"
#include "seccomp.h"

#include <fcntl.h>
#include <linux/sched.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>

int oci_console_send(const char *socket_path, int master, struct fb_err *err)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (fd < 0 || strlen(socket_path) >= sizeof a.sun_path) {
        if (fd >= 0)
            close(fd);
        return fb_errf(err, FB_EXIT_SETUP, "--console-socket %s: bad path", socket_path);
    }
    memcpy(a.sun_path, socket_path, strlen(socket_path));
    int rc = connect(fd, (struct sockaddr *)&a, sizeof a);
    if (rc == 0)
        rc = ctl_sendmsg(fd, "/dev/ptmx", 9, &master, 1, 0);
    int e = errno;
    close(fd);
    errno = e;
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--console-socket %s", socket_path);
    return 0;
}

static char **strv_dup(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    char **o = fb_xcalloc(n + 1, sizeof *o);
    for (size_t i = 0; i < n; i++)
        o[i] = fb_xstrdup(v[i]);
    return o;
}

/* The process: process.json, or the config's with the command line's
 * command, cwd, env, user, tty and capabilities. */
static int exec_process(const struct oci_exec_args *a, const struct oci_spec *s,
                        struct oci_process *pr, struct fb_err *err)
{
    memset(pr, 0, sizeof *pr);
    if (a->process) {
        json_error_t je;
        json_t *j = oci_json_load(a->process, &je);
        if (!j) {
            if (access(a->process, R_OK) < 0)
                return fb_errno(err, FB_EXIT_SETUP, "--process %s", a->process);
            return fb_errf(err, FB_EXIT_SETUP, "--process %s:%d: %s", a->process, je.line, je.text);
        }
        int rc = oci_process_parse(j, pr, "process", err);
        json_decref(j);
        return rc;
    }
    if (!a->argv || !a->argv[0])
        return fb_errf(err, FB_EXIT_SETUP, "exec: a command (or --process FILE) is needed");
    const struct oci_process *c = &s->proc;
    pr->args = strv_dup(a->argv);
    pr->env = strv_dup(c->env);
    for (char **e = a->env; e && *e; e++) {
        size_t n = 0;
        while (pr->env[n])
            n++;
        pr->env = fb_xrealloc(pr->env, (n + 2) * sizeof *pr->env);
        pr->env[n] = fb_xstrdup(*e);
        pr->env[n + 1] = NULL;
    }
    pr->cwd = fb_xstrdup(a->cwd ? a->cwd : c->cwd);
    pr->uid = c->uid;
    pr->gid = c->gid;
    pr->umask = c->umask;
    if (c->ngids) {
        pr->gids = fb_xcalloc(c->ngids, sizeof *pr->gids);
        memcpy(pr->gids, c->gids, c->ngids * sizeof *pr->gids);
        pr->ngids = c->ngids;
    }
    if (a->user) {
        unsigned u, g;
        int n = sscanf(a->user, "%u:%u", &u, &g);
        if (n < 1)
            return fb_errf(err, FB_EXIT_SETUP, "--user %s: expected UID[:GID]", a->user);
        pr->uid = u;
        if (n == 2)
            pr->gid = g;
    }
    pr->terminal = a->tty;
    pr->caps_set = c->caps_set;
    memcpy(pr->caps, c->caps, sizeof pr->caps);
    for (char **cp = a->caps; cp && *cp; cp++) {
        int n = oci_cap_number(*cp);
        if (n < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--cap %s: unknown capability", *cp);
        for (int k = 0; k < OCI_CAP_NSETS; k++)
            if (k != OCI_CAP_AMBIENT)
                pr->caps[k] |= 1ull << n;
        pr->caps_set = true;
    }
    pr->no_new_privs = a->no_new_privs || c->no_new_privs;
    if (c->nrlimits) {
        pr->rlimits = fb_xcalloc(c->nrlimits, sizeof *pr->rlimits);
        memcpy(pr->rlimits, c->rlimits, c->nrlimits * sizeof *pr->rlimits);
        pr->nrlimits = c->nrlimits;
    }
    return 0;
}

/* init's namespaces, the user namespace last; only those that differ. */
static int open_ns(pid_t pid, int fds[8], int types[8], size_t *n, struct fb_err *err)
{
    static const struct {
        const char *name;
        int type;
    } order[] = {{"cgroup", CLONE_NEWCGROUP}, {"ipc", CLONE_NEWIPC}, {"uts", CLONE_NEWUTS},
                 {"net", CLONE_NEWNET},       {"pid", CLONE_NEWPID}, {"mnt", CLONE_NEWNS},
                 {"user", CLONE_NEWUSER}};
    *n = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(order); i++) {
        char path[64], mine[64];
        snprintf(path, sizeof path, "/proc/%d/ns/%s", (int)pid, order[i].name);
        snprintf(mine, sizeof mine, "/proc/self/ns/%s", order[i].name);
        struct stat a, b;
        if (stat(path, &a) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", path);
        if (stat(mine, &b) == 0 && a.st_ino == b.st_ino && a.st_dev == b.st_dev)
            continue;
        int fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", path);
        fds[*n] = fd;
        types[*n] = order[i].type;
        (*n)++;
    }
    return 0;
}

struct g_args {
    const struct fb_policy *p;
    const struct oci_process *pr;
    const struct fb_sc_progs *progs;
    int spec_filter;
    int sock;
    int preserve;
    struct oci_rlimit rl[RLIM_NLIMITS]; /* exec_rlimits() */
    size_t nrl;
};

/* The exec'd process's rlimits: the profile's bounds, as every process of
 * a sandbox gets them (harden_rlimits: no core files, nofile, fsize), with
 * the process's own rlimits merged in: where the profile has a bound they
 * can only lower it, elsewhere they apply as given. */
static size_t exec_rlimits(const struct fb_policy *p, const struct oci_process *pr,
                           struct oci_rlimit out[RLIM_NLIMITS])
{
    bool bounded[RLIM_NLIMITS] = {false}, given[RLIM_NLIMITS] = {false};
    uint64_t bound[RLIM_NLIMITS], soft[RLIM_NLIMITS], hard[RLIM_NLIMITS];
    bounded[RLIMIT_CORE] = true;
    bound[RLIMIT_CORE] = 0;
    if (p->limits.nofile > 0) {
        bounded[RLIMIT_NOFILE] = true;
        bound[RLIMIT_NOFILE] = (uint64_t)p->limits.nofile;
    }
    if (p->limits.fsize > 0) {
        bounded[RLIMIT_FSIZE] = true;
        bound[RLIMIT_FSIZE] = (uint64_t)p->limits.fsize;
    }
    for (size_t i = 0; i < pr->nrlimits; i++) {
        int r = pr->rlimits[i].resource;
        if (r < 0 || r >= RLIM_NLIMITS)
            continue;
        given[r] = true;
        soft[r] = pr->rlimits[i].soft;
        hard[r] = pr->rlimits[i].hard;
    }
    size_t n = 0;
    for (int r = 0; r < RLIM_NLIMITS; r++) {
        if (!bounded[r] && !given[r])
            continue;
        uint64_t h = given[r] ? hard[r] : UINT64_MAX, sf = given[r] ? soft[r] : UINT64_MAX;
        if (bounded[r]) {
            h = h < bound[r] ? h : bound[r];
            sf = sf < bound[r] ? sf : bound[r];
        }
        out[n++] = (struct oci_rlimit){.resource = r, .soft = sf < h ? sf : h, .hard = h};
    }
    return n;
}

__attribute__((noreturn)) static void run_g(const struct g_args *g)
{
    char msg[256];
    if (g->pr->terminal) {
        int master = open("/dev/pts/ptmx", O_RDWR | O_NOCTTY | O_CLOEXEC);
        int unlock = 0, n = -1;
        if (master < 0 || ioctl(master, TIOCSPTLCK, &unlock) < 0 ||
            ioctl(master, TIOCGPTN, &n) < 0) {
            int k = snprintf(msg, sizeof msg, "terminal: /dev/pts/ptmx: %s", strerror(errno));
            (void)!write(g->sock, msg, (size_t)k);
            _exit(1);
        }
        if (g->pr->rows && g->pr->cols) {
            struct winsize ws = {.ws_row = (unsigned short)g->pr->rows,
                                 .ws_col = (unsigned short)g->pr->cols};
            ioctl(master, TIOCSWINSZ, &ws);
        }
        struct fb_msg m = {.type = FB_MSG_OCI_PTY};
        if (ctl_send(g->sock, &m, &master, 1) < 0)
            _exit(1);
        close(master);
        char slave[64];
        snprintf(slave, sizeof slave, "/dev/pts/%d", n);
        setsid();
        int t = open(slave, O_RDWR | O_CLOEXEC);
        if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0) {
            int k = snprintf(msg, sizeof msg, "terminal %s: %s", slave, strerror(errno));
            (void)!write(g->sock, msg, (size_t)k);
            _exit(1);
        }
        for (int fd = 0; fd < 3; fd++)
            dup2(t, fd);
    }
    unsigned from = 3 + (unsigned)(g->preserve > 0 ? g->preserve : 0);
    syscall(SYS_close_range, from, ~0U, CLOSE_RANGE_CLOEXEC);
    for (unsigned fd = 3; fd < from; fd++) {
        int fl = fcntl((int)fd, F_GETFD);
        if (fl >= 0)
            fcntl((int)fd, F_SETFD, fl & ~FD_CLOEXEC);
    }
    oci_exec_process(g->p, g->pr, g->progs, g->spec_filter, g->sock);
}

/* C: as host root into the cgroup (done by P) and the namespaces, then G. */
__attribute__((noreturn)) static void run_c(const struct g_args *g, const int *nsfd,
                                            const int *nstype, size_t nns)
{
    /* Still as host root: raising a hard limit needs CAP_SYS_RESOURCE on
     * the host. */
    for (size_t i = 0; i < g->nrl; i++) {
        const struct oci_rlimit *r = &g->rl[i];
        struct rlimit rl = {.rlim_cur = r->soft == UINT64_MAX ? RLIM_INFINITY : r->soft,
                            .rlim_max = r->hard == UINT64_MAX ? RLIM_INFINITY : r->hard};
        if (setrlimit((__rlimit_resource_t)r->resource, &rl) < 0) {
            char msg[128];
            int k = snprintf(msg, sizeof msg, "setting rlimit %d (process.rlimits): %s",
                             r->resource, strerror(errno));
            (void)!write(g->sock, msg, (size_t)k);
            _exit(1);
        }
    }
    for (size_t i = 0; i < nns; i++) {
        if (setns(nsfd[i], nstype[i]) < 0) {
            char msg[128];
            int k = snprintf(msg, sizeof msg, "joining the container's namespace (%d): %s",
                             nstype[i], strerror(errno));
            (void)!write(g->sock, msg, (size_t)k);
            _exit(1);
        }
        close(nsfd[i]);
    }
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_PARENT | SIGCHLD, NULL, NULL, NULL, 0);
    if (pid == 0)
        run_g(g);
    if (pid < 0) {
        char msg[128];
        int k = snprintf(msg, sizeof msg, "clone: %s", strerror(errno));
        (void)!write(g->sock, msg, (size_t)k);
        _exit(1);
    }
    struct fb_msg m = {.type = FB_MSG_OCI_STARTED, .pid = pid};
    ctl_send(g->sock, &m, NULL, 0);
    _exit(0);
}

static int write_pid(const char *path, pid_t pid, struct fb_err *err)
{
    cleanup_free char *tmp = fb_xasprintf("%s.tmp%d", path, (int)getpid());
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d", (int)pid);
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    int rc = fd < 0 ? -1 : fb_write_all(fd, buf, (size_t)n);
    if (fd >= 0 && close(fd) < 0)
        rc = -1;
    if (rc < 0 || rename(tmp, path) < 0) {
        unlink(tmp);
        return fb_errno(err, FB_EXIT_SETUP, "--pid-file %s", path);
    }
    return 0;
}

/* ---- the record's exec lines, through the supervisor ---- */

/* Send "VERB JSON\n" (o consumed) to the supervisor's sup.sock in the
 * state directory dir and wait for its "ok". */
static int sup_tell(int dir, const char *verb, json_t *o, struct fb_err *err)
{
    char *js = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    cleanup_free char *line = js ? fb_xasprintf("%s %s\n", verb, js) : NULL;
    free(js);
    if (!line)
        return fb_errf(err, FB_EXIT_SETUP, "exec: cannot encode the record's exec line");
    struct sockaddr_un a;
    memset(&a, 0, sizeof a);
    a.sun_family = AF_UNIX;
    snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/sup.sock", dir);
    cleanup_close int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    char buf[256];
    ssize_t n = -1;
    if (fd >= 0 && connect(fd, (struct sockaddr *)&a, sizeof a) == 0 &&
        fb_write_all(fd, line, strlen(line)) == 0)
        n = fb_read_full(fd, buf, sizeof buf - 1);
    if (n <= 0)
        return fb_errf(err, FB_EXIT_SETUP, "exec: the container's record (run.fluebox.record) "
                       "cannot be written: its supervisor does not answer");
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    if (strcmp(buf, "ok"))
        return fb_errf(err, FB_EXIT_SETUP, "exec: the container's record: %s",
                       strncmp(buf, "error: ", 7) ? buf : buf + 7);
    return 0;
}

static json_t *argv_json(char **v)
{
    json_t *a = json_array();
    for (; v && *v; v++) {
        json_t *s = json_string(*v);
        json_array_append_new(a, s ? s : json_string("(not UTF-8)"));
    }
    return a;
}

/* "exec_end": how the process ended (st: its wait status, or -1 when it
 * could not be started, with why). Best effort: the process has run. */
static void tell_end(int dir, const char *exec_id, int st, uint64_t t0, const char *why)
{
    if (dir < 0)
        return;
    json_t *o = json_pack("{s:s, s:I}", "exec_id", exec_id, "duration_ms",
                          (json_int_t)((fb_now_ns() - t0) / 1000000ull));
    if (st >= 0 && WIFEXITED(st))
        json_object_set_new(o, "exit_code", json_integer(WEXITSTATUS(st)));
    if (st >= 0 && WIFSIGNALED(st)) {
        const char *ab = sigabbrev_np(WTERMSIG(st));
        json_object_set_new(o, "exit_code", json_integer(128 + WTERMSIG(st)));
        json_object_set_new(o, "signal", json_sprintf("SIG%s", ab ? ab : "?"));
    }
    if (why)
        json_object_set_new(o, "error", json_string(why));
    struct fb_err e = {0};
    if (sup_tell(dir, "exec_end", o, &e) < 0)
        oci_log_warn("%s", e.msg);
}

/* Without --detach: pass signals on to G, wait, its status (the wait
 * status in *wst). */
static int wait_process(pid_t pid, int *wst)
{
    sigset_t all;
    sigfillset(&all);
    sigdelset(&all, SIGCHLD);
    sigprocmask(SIG_BLOCK, &all, NULL);
    int sfd = signalfd(-1, &all, SFD_CLOEXEC | SFD_NONBLOCK);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    for (;;) {
        struct pollfd pf[2] = {{.fd = pidfd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, 2, -1) < 0 && errno != EINTR)
            break;
        if (pf[1].revents & POLLIN) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) == (ssize_t)sizeof si)
                kill(pid, (int)si.ssi_signo);
        }
        if (pf[0].revents)
            break;
    }
    int st = 0;
    while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
        ;
    if (sfd >= 0)
        close(sfd);
    if (pidfd >= 0)
        close(pidfd);
    *wst = st;
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

int oci_exec(const struct oci_exec_args *a)
{
    struct fb_err err = {0};
    struct oci_state st;
    struct oci_spec s;
    struct oci_process pr;
    struct fb_policy p;
    struct fb_sc_progs progs = {0};
    memset(&s, 0, sizeof s);
    memset(&pr, 0, sizeof pr);
    policy_init(&p);
    int code = 1, spec_filter = -1, sv[2] = {-1, -1}, recdir = -1;
    char exec_id[48] = "";
    uint64_t t0 = fb_now_ns();
    int nsfd[8], nstype[8];
    size_t nns = 0;
    struct fb_cgroup *cg = NULL;
    cleanup_free char *cfg = NULL;
    if (oci_state_open(a->root, a->id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    enum oci_status status = oci_state_status(&st);
    if (status != OCI_RUNNING && status != OCI_CREATED) {
        fb_errf(&err, FB_EXIT_SETUP, "cannot exec in a container that is %s",
                oci_status_name(status));
        goto out;
    }
    cfg = fb_xasprintf("%s/config.json", st.dir);
    if (oci_spec_load(st.bundle ? st.bundle : "/", cfg, &s, &err) < 0 ||
        oci_policy(&s, &p, true, &err) < 0 || exec_process(a, &s, &pr, &err) < 0 ||
        oci_caps_check(&pr, &err) < 0)
        goto out;
    if (pr.terminal && !a->console_socket) {
        fb_errf(&err, FB_EXIT_SETUP, "a terminal needs --console-socket");
        goto out;
    }
    if (seccomp_programs(&p, seccomp_mode(&p, false), &progs, &err) < 0)
        goto out;
    spec_filter = oci_seccomp_filter(s.seccomp, &err);
    if (spec_filter == -1)
        goto out;
    if (open_ns(st.pid, nsfd, nstype, &nns, &err) < 0)
        goto out;
    if (!oci_pid_alive(st.pid, st.pid_start)) {
        fb_errf(&err, FB_EXIT_SETUP, "container %s is not running", a->id);
        goto out;
    }
    if (st.cgroup && cgroup_open_at(st.cgroup, &cg, &err) < 0)
        goto out;
    if (p.record) {
        /* Told before the process exists; a description of the state
         * directory of our own (not the locked one) for its end. */
        snprintf(exec_id, sizeof exec_id, "%d.%llu", (int)getpid(), (unsigned long long)t0);
        json_t *o = json_pack("{s:s, s:o, s:s, s:b}", "exec_id", exec_id, "argv",
                              argv_json(pr.args), "cwd", pr.cwd ? pr.cwd : "/", "detach",
                              a->detach);
        if (sup_tell(st.dirfd, "exec", o, &err) < 0)
            goto out;
        recdir = openat(st.dirfd, ".", O_PATH | O_DIRECTORY | O_CLOEXEC);
    }
    oci_state_close(&st); /* the exec may run long: unlock */
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "socketpair");
        goto out;
    }
    struct g_args g = {.p = &p, .pr = &pr, .progs = &progs,
                       .spec_filter = spec_filter >= 0 ? spec_filter : -1, .sock = sv[1],
                       .preserve = a->preserve_fds};
    g.nrl = exec_rlimits(&p, &pr, g.rl);
    /* C waits for its cgroup: a pipe it reads one byte from. */
    int gate[2];
    if (pipe2(gate, O_CLOEXEC) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "pipe");
        goto out;
    }
    pid_t c = fork();
    if (c < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "fork");
        close(gate[0]);
        close(gate[1]);
        goto out;
    }
    if (c == 0) {
        close(sv[0]);
        close(gate[1]);
        char b;
        if (read(gate[0], &b, 1) != 1)
            _exit(1);
        close(gate[0]);
        run_c(&g, nsfd, nstype, nns);
    }
    close(gate[0]);
    close(sv[1]);
    sv[1] = -1;
    int rc = cg ? cgroup_attach(cg, c, &err) : 0;
    if (rc == 0)
        rc = fb_write_all(gate[1], "g", 1);
    close(gate[1]);
    int cst;
    while (waitpid(c, &cst, 0) < 0 && errno == EINTR)
        ;
    if (rc < 0) {
        if (!err.msg[0])
            fb_errno(&err, FB_EXIT_SETUP, "starting the process");
        goto out;
    }
    /* STARTED (G's pid), then for a terminal the master, then the exec's
     * error or the socket's end. */
    pid_t gpid = 0;
    for (;;) {
        char buf[sizeof(struct fb_msg)];
        int fds[1];
        size_t nfd = 1;
        bool trunc = false;
        ssize_t n = ctl_recvmsg(sv[0], buf, sizeof buf, fds, &nfd, 0, &trunc);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            if (!gpid)
                fb_errf(&err, FB_EXIT_SETUP, "the process could not be started");
            break;
        }
        struct fb_msg m;
        if ((size_t)n == sizeof m) {
            memcpy(&m, buf, sizeof m);
            if (m.type == FB_MSG_OCI_STARTED) {
                gpid = m.pid;
                continue;
            }
            if (m.type == FB_MSG_OCI_PTY && nfd == 1) {
                int r2 = oci_console_send(a->console_socket, fds[0], &err);
                close(fds[0]);
                if (r2 < 0) {
                    if (gpid)
                        kill(gpid, SIGKILL);
                    break;
                }
                continue;
            }
        }
        for (size_t i = 0; i < nfd; i++)
            close(fds[i]);
        buf[(size_t)n < sizeof buf ? (size_t)n : sizeof buf - 1] = 0;
        fb_errf(&err, FB_EXIT_SETUP, "exec failed: %s", buf);
        break;
    }
    if (err.msg[0]) {
        if (gpid)
            while (waitpid(gpid, NULL, 0) < 0 && errno == EINTR)
                ;
        goto out;
    }
    if (a->pid_file && write_pid(a->pid_file, gpid, &err) < 0) {
        kill(gpid, SIGKILL);
        waitpid(gpid, NULL, 0);
        goto out;
    }
    int wst = -1;
    code = a->detach ? 0 : wait_process(gpid, &wst);
    if (!a->detach)
        tell_end(recdir, exec_id, wst, t0, NULL);
    err.msg[0] = 0;
out:
    if (err.msg[0] && recdir >= 0)
        tell_end(recdir, exec_id, -1, t0, err.msg);
    if (recdir >= 0)
        close(recdir);
    if (err.msg[0])
        oci_log_error("%s", err.msg);
    for (size_t i = 0; i < nns; i++)
        close(nsfd[i]);
    if (sv[0] >= 0)
        close(sv[0]);
    if (sv[1] >= 0)
        close(sv[1]);
    if (spec_filter >= 0)
        close(spec_filter);
    seccomp_programs_close(&progs);
    cgroup_close(cg);
    oci_state_close(&st);
    oci_process_free(&pr);
    oci_spec_free(&s);
    policy_free(&p);
    return code;
}

/* ---- ps ---- */

int oci_ps(const char *root, const char *id, bool json, char **ps_args)
{
    (void)ps_args;
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    struct fb_cgroup *cg = NULL;
    pid_t *pids = NULL;
    size_t n = 0;
    int code = 1;
    if (!st.cgroup || cgroup_open_at(st.cgroup, &cg, &err) < 0 || cgroup_procs(cg, &pids, &n) < 0) {
        oci_log_error("ps %s: %s", id, err.msg[0] ? err.msg : strerror(errno));
        goto out;
    }
    if (json) {
        json_t *a = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(a, json_integer(pids[i]));
        char *t = json_dumps(a, JSON_COMPACT);
        printf("%s\n", t ? t : "[]");
        free(t);
        json_decref(a);
    } else {
        printf("PID\tCMD\n");
        for (size_t i = 0; i < n; i++) {
            char path[64], cmd[256] = "";
            snprintf(path, sizeof path, "/proc/%d/cmdline", (int)pids[i]);
            ssize_t l = fb_read_file(path, cmd, sizeof cmd);
            for (ssize_t k = 0; k + 1 < l; k++)
                if (!cmd[k])
                    cmd[k] = ' ';
            printf("%d\t%s\n", (int)pids[i], cmd);
        }
    }
    code = 0;
out:
    free(pids);
    cgroup_close(cg);
    oci_state_close(&st);
    return code;
}
