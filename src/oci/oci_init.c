/* oci_init.c — the container's init, and the last steps of every process
 * that runs in a container (its own and exec's).
 *
 * spawn.c's child has joined the cgroup, mapped its ids, set the hostname
 * and brought up the network; oci_init_main() then
 *   - receives fluebox's seccomp filters (fixed and profile), builds the
 *     root (oci_mount.c), checks that the command is there (so that `create`
 *     fails with runc's message when it is not), sends READY, and with a
 *     terminal the pty master;
 *   - waits for START from the supervisor (the `start` command), forks the
 *     process, which takes the spec's identity, capabilities, no_new_privs,
 *     umask and the three seccomp filters and execs; answers STARTED (or
 *     the exec's error);
 *   - keeps only CAP_KILL, loads fluebox's filters itself, and stays as the
 *     container's pid 1: signals sent to it (kill ID SIG) go to the
 *     process alone (as runc's go to its pid 1), orphans are reaped, and
 *     when the process ends init reports its status (EXIT), kills what is
 *     left and exits with the
 *     process's code (128+N for a signal), which is what the shim reaps.
 * If the supervisor goes away (ctl closed), init kills the container. */
#include "oci.h"

#include "ctl.h"
#include "harden.h"
#include "init.h"
#include "seccomp.h"

#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static const char default_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static const char *env_get(char **env, const char *k)
{
    size_t kl = strlen(k);
    for (char **e = env; e && *e; e++)
        if (!strncmp(*e, k, kl) && (*e)[kl] == '=')
            return *e + kl + 1;
    return NULL;
}

/* An errno as runc (Go) writes it: glibc's text with a lowercase first
 * letter ("no such file or directory"). Docker and containerd match these
 * lowercase words to map a missing command to 127 and a refused one to 126. */
static const char *go_strerror(int e, char *buf, size_t cap)
{
    snprintf(buf, cap, "%s", strerror(e));
    if (buf[0] >= 'A' && buf[0] <= 'Z' && !(buf[1] >= 'A' && buf[1] <= 'Z'))
        buf[0] = (char)(buf[0] - 'A' + 'a');
    return buf;
}

static bool executable(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode) && (st.st_mode & 0111);
}

int oci_find_command(const struct oci_process *pr, struct fb_err *err)
{
    const char *cmd = pr->args[0];
    if (strchr(cmd, '/')) {
        struct stat st;
        char eb[128];
        if (stat(cmd, &st) < 0)
            return fb_errf(err, FB_EXIT_NOTFOUND, "exec: \"%s\": stat %s: %s", cmd, cmd,
                           go_strerror(errno, eb, sizeof eb));
        return 0;
    }
    const char *path = env_get(pr->env, "PATH");
    if (!path)
        path = default_path;
    cleanup_free char *copy = fb_xstrdup(path);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        cleanup_free char *cand = fb_xasprintf("%s/%s", *d ? d : ".", cmd);
        if (executable(cand))
            return 0;
    }
    return fb_errf(err, FB_EXIT_NOTFOUND, "exec: \"%s\": executable file not found in $PATH", cmd);
}

/* ---- the process's last steps ---- */

__attribute__((noreturn)) static void die(int errfd, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void die(int errfd, int code, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    if ((size_t)n >= sizeof buf)
        n = sizeof buf - 1;
    if (errfd >= 0)
        (void)!write(errfd, buf, (size_t)n);
    else
        dprintf(2, "fluebox: %s\n", buf);
    _exit(code);
}

static int last_cap(void)
{
    char buf[16];
    if (fb_read_file("/proc/sys/kernel/cap_last_cap", buf, sizeof buf) > 0)
        return atoi(buf);
    return 40;
}

static int capset3(uint64_t eff, uint64_t perm, uint64_t inh)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct d[2];
    d[0].effective = (uint32_t)eff;
    d[1].effective = (uint32_t)(eff >> 32);
    d[0].permitted = (uint32_t)perm;
    d[1].permitted = (uint32_t)(perm >> 32);
    d[0].inheritable = (uint32_t)inh;
    d[1].inheritable = (uint32_t)(inh >> 32);
    return (int)syscall(SYS_capset, &hdr, d);
}

/* The bounding set, before the seccomp filters (a profile may refuse
 * PR_CAPBSET_DROP); the capabilities are kept across the id change. */
static void set_bounding(const uint64_t caps[OCI_CAP_NSETS], int errfd)
{
    int last = last_cap();
    if (prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) < 0)
        die(errfd, 1, "prctl(PR_SET_KEEPCAPS): %s", strerror(errno));
    for (int c = 0; c <= last && c < 64; c++)
        if (!(caps[OCI_CAP_BOUNDING] & (1ull << c)) && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 &&
            errno != EINVAL)
            die(errfd, 1, "dropping %s from the bounding set: %s", oci_cap_name(c),
                strerror(errno));
}

/* Identity and capabilities as the spec says (runc's order: the ids with
 * the capabilities kept across, then the sets, then ambient). Without a
 * capabilities object, none. */
static void set_identity(const struct oci_process *pr, const uint64_t caps[OCI_CAP_NSETS],
                         int errfd)
{
    int last = last_cap();
    gid_t *g = fb_xcalloc(pr->ngids ? pr->ngids : 1, sizeof *g);
    for (size_t i = 0; i < pr->ngids; i++)
        g[i] = pr->gids[i];
    if (setgroups(pr->ngids, g) < 0)
        die(errfd, 1, "setgroups: %s", strerror(errno));
    free(g);
    if (setresgid(pr->gid, pr->gid, pr->gid) < 0)
        die(errfd, 1, "setgid %u: %s", pr->gid, strerror(errno));
    if (setresuid(pr->uid, pr->uid, pr->uid) < 0)
        die(errfd, 1, "setuid %u: %s", pr->uid, strerror(errno));
    prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
    if (capset3(caps[OCI_CAP_EFFECTIVE], caps[OCI_CAP_PERMITTED], caps[OCI_CAP_INHERITABLE]) < 0)
        die(errfd, 1, "setting capabilities: %s", strerror(errno));
    /* Ambient: what is also permitted and inheritable can be raised; the
     * rest is skipped, as runc does. */
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    for (int c = 0; c <= last && c < 64; c++)
        if (caps[OCI_CAP_AMBIENT] & (1ull << c))
            prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, c, 0, 0);
}

void oci_exec_process(const struct fb_policy *p, const struct oci_process *pr,
                      const struct fb_sc_progs *progs, int spec_filter, int errfd)
{
    sigset_t none;
    sigemptyset(&none);
    for (int s = 1; s < NSIG; s++)
        signal(s, SIG_DFL);
    sigprocmask(SIG_SETMASK, &none, NULL);
    if (pr->umask >= 0)
        umask((mode_t)pr->umask);
    uint64_t caps[OCI_CAP_NSETS] = {0};
    if (pr->caps_set)
        memcpy(caps, pr->caps, sizeof caps);
    set_bounding(caps, errfd);
    /* The filters go on while the process still has CAP_SYS_ADMIN in its
     * user namespace, which loading them needs when no_new_privs is not
     * set (runc's order); the id and capability changes below are allowed
     * by every profile. */
    struct fb_err err = {0};
    if (progs && seccomp_load_progs(progs, -1, &err) < 0)
        die(errfd, 1, "%s", err.msg);
    if (spec_filter >= 0) {
        struct fb_sc_progs one = {.n = 1, .fd = {spec_filter}, .flags = {0}};
        if (seccomp_load_progs(&one, -1, &err) < 0)
            die(errfd, 1, "linux.seccomp: %s", err.msg);
    }
    set_identity(pr, caps, errfd);
    /* no_new_privs as the spec says. Without it set-id and file-capability
     * programs still gain nothing: every mount of the container is nosuid,
     * and the container cannot make mounts of its own (oci_mount.c). */
    if (pr->no_new_privs && prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        die(errfd, 1, "setting no_new_privs: %s", strerror(errno));
    if (chdir(pr->cwd) < 0)
        die(errfd, 1, "chdir to cwd (\"%s\") set in config.json failed: %s", pr->cwd,
            strerror(errno));
    int code = FB_EXIT_NOTFOUND;
    harden_exec(p, pr->args, pr->env, &code);
    int e = errno;
    if (code == FB_EXIT_NOTFOUND && e == ENOENT && !strchr(pr->args[0], '/'))
        die(errfd, code, "exec: \"%s\": executable file not found in $PATH", pr->args[0]);
    char eb[128];
    die(errfd, code, "exec: \"%s\": %s", pr->args[0], go_strerror(e, eb, sizeof eb));
}

/* ---- init ---- */

__attribute__((noreturn)) static void fail(int ctl, struct fb_err *err)
{
    ctl_sendf(ctl, FB_MSG_ERR, err->code ? err->code : FB_EXIT_SETUP, "%s", err->msg);
    _exit(FB_EXIT_SETUP);
}

/* Keep CAP_KILL only: init signals the process, which may run as another
 * user of the container. */
static int keep_kill_only(struct fb_err *err)
{
    int last = last_cap();
    for (int c = 0; c <= last && c < 64; c++)
        if (c != CAP_KILL && prctl(PR_CAPBSET_DROP, c, 0, 0, 0) < 0 && errno != EINVAL)
            return fb_errno(err, FB_EXIT_SETUP, "dropping capability %d", c);
    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
    uint64_t k = 1ull << CAP_KILL;
    if (capset3(k, k, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "dropping capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "setting no_new_privs");
    return 0;
}

static void kill_rest(void)
{
    if (getpid() != 1)
        return;
    for (;;) {
        if (kill(-1, SIGKILL) < 0 && errno != EINTR)
            break;
        pid_t w = waitpid(-1, NULL, 0);
        if (w < 0 && errno == ECHILD)
            break;
    }
    while (waitpid(-1, NULL, WNOHANG) > 0)
        ;
}

static int status_code(int st)
{
    if (WIFEXITED(st))
        return WEXITSTATUS(st);
    if (WIFSIGNALED(st))
        return 128 + WTERMSIG(st);
    return 1;
}

/* Fork the process; its exec error (if any) comes back on a pipe that
 * closes at a successful exec. */
static pid_t start_process(const struct fb_policy *p, const struct oci_child *c,
                           const struct fb_sc_progs *progs, const char *slave, char *why,
                           size_t cap, int *code)
{
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        snprintf(why, cap, "pipe: %s", strerror(errno));
        return -1;
    }
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(why, cap, "fork: %s", strerror(errno));
        close(pfd[0]);
        close(pfd[1]);
        return -1;
    }
    if (pid == 0) {
        close(pfd[0]);
        setsid();
        if (slave) {
            int t = open(slave, O_RDWR | O_CLOEXEC);
            if (t < 0 || ioctl(t, TIOCSCTTY, 0) < 0)
                die(pfd[1], 1, "opening the terminal %s: %s", slave, strerror(errno));
            for (int fd = 0; fd < 3; fd++)
                if (dup2(t, fd) < 0)
                    die(pfd[1], 1, "dup2: %s", strerror(errno));
        }
        /* Everything but stdio, the preserved descriptors (--preserve-fds,
         * kept open across exec as runc keeps them) and the pipe (until
         * exec) closes at exec. */
        for (int fd = 3; fd < 3 + c->preserve_fds; fd++) {
            int fl = fcntl(fd, F_GETFD);
            if (fl >= 0)
                fcntl(fd, F_SETFD, fl & ~FD_CLOEXEC);
        }
        syscall(SYS_close_range, 3U + (unsigned)c->preserve_fds, ~0U, CLOSE_RANGE_CLOEXEC);
        oci_exec_process(p, &c->spec->proc, progs, c->spec_filter, pfd[1]);
    }
    close(pfd[1]);
    ssize_t n = fb_read_full(pfd[0], why, cap - 1);
    close(pfd[0]);
    if (n > 0) {
        why[n] = 0;
        int st;
        while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
            ;
        *code = status_code(st);
        return -1;
    }
    return pid;
}

void oci_init_main(const struct fb_policy *p, int ctl, void *arg)
{
    struct oci_child *c = arg;
    struct fb_err err = {0};
    struct fb_sc_progs progs;
    if (seccomp_receive(p, ctl, &progs, &err) < 0)
        fail(ctl, &err);
    int master = -1;
    if (oci_mount_root(p, c, ctl, &master, &err) < 0)
        fail(ctl, &err);
    if (oci_find_command(&c->spec->proc, &err) < 0)
        fail(ctl, &err);
    char slave[64] = "";
    if (master >= 0) {
        int n = -1;
        ioctl(master, TIOCGPTN, &n);
        snprintf(slave, sizeof slave, "/dev/pts/%d", n);
        /* With a terminal, the caller's stdio is not the container's: let
         * go of it (the shim waits for its end before reading the pty). */
        int null = open("/dev/null", O_RDWR | O_CLOEXEC);
        for (int fd = 0; fd < 3 && null >= 0; fd++)
            dup3(null, fd, 0);
        if (null > 2)
            close(null);
    }
    /* Not dumpable: the container's processes cannot read init's memory or
     * descriptors (the control socket) through /proc/1. */
    prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
    sigset_t all;
    sigfillset(&all);
    sigprocmask(SIG_BLOCK, &all, NULL);
    int sfd = signalfd(-1, &all, SFD_CLOEXEC);
    if (sfd < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "signalfd");
        fail(ctl, &err);
    }
    if (ctl_sendf(ctl, FB_MSG_READY, 0, "ready") < 0)
        _exit(FB_EXIT_SETUP);
    if (master >= 0) {
        struct fb_msg pm = {.type = FB_MSG_OCI_PTY};
        if (ctl_send(ctl, &pm, &master, 1) < 0)
            _exit(FB_EXIT_SETUP);
        close(master);
    }

    /* Created: wait for start. A signal meant to end the container (kill
     * ID TERM before start) ends it now, as it would end runc's init. */
    struct fb_msg m;
    for (;;) {
        struct pollfd wp[2] = {{.fd = ctl, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(wp, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(FB_EXIT_SETUP);
        }
        if (wp[1].revents) {
            struct signalfd_siginfo si;
            if (read(sfd, &si, sizeof si) == (ssize_t)sizeof si && si.ssi_signo != SIGCHLD &&
                si.ssi_signo != SIGWINCH && si.ssi_signo != SIGURG && si.ssi_signo != SIGCONT)
                _exit(128 + (int)si.ssi_signo);
            continue;
        }
        int r = ctl_recv(ctl, &m, NULL, NULL);
        if (r <= 0)
            _exit(FB_EXIT_SETUP); /* the supervisor is gone (delete) */
        if (m.type == FB_MSG_OCI_START)
            break;
    }
    char why[480];
    int code = 0;
    pid_t cmd = start_process(p, c, &progs, slave[0] ? slave : NULL, why, sizeof why, &code);
    if (cmd < 0) {
        ctl_sendf(ctl, FB_MSG_OCI_STARTED, code ? code : 1, "%s", why);
        _exit(code ? code : 1);
    }
    if (c->preserve_fds > 0) /* the process has them; init holds none */
        syscall(SYS_close_range, 3U, 3U + (unsigned)c->preserve_fds - 1, 0U);
    struct fb_msg sm = {.type = FB_MSG_OCI_STARTED, .pid = cmd};
    ctl_send(ctl, &sm, NULL, 0);
    if (keep_kill_only(&err) < 0 || seccomp_load_progs(&progs, -1, &err) < 0) {
        kill(cmd, SIGKILL);
        fail(ctl, &err);
    }
    for (size_t i = 0; i < progs.n; i++)
        close(progs.fd[i]);
    if (c->spec_filter >= 0)
        close(c->spec_filter);

    struct pollfd pf[2] = {{.fd = sfd, .events = POLLIN}, {.fd = ctl, .events = POLLIN}};
    for (;;) {
        if (poll(pf, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            _exit(FB_EXIT_SETUP);
        }
        if (pf[1].revents) {
            /* Only EOF is expected here: the supervisor died. */
            struct fb_msg x;
            if (ctl_recv(ctl, &x, NULL, NULL) <= 0) {
                kill(-cmd, SIGKILL);
                kill(cmd, SIGKILL);
                kill_rest();
                _exit(FB_EXIT_SETUP);
            }
        }
        if (!pf[0].revents)
            continue;
        struct signalfd_siginfo si;
        ssize_t n = read(sfd, &si, sizeof si);
        if (n != (ssize_t)sizeof si)
            continue;
        if (si.ssi_signo != SIGCHLD) {
            /* To the process only, as runc's kill reaches the container's
             * pid 1 and nothing else (kill --all is for the whole cgroup):
             * a shell decides what its children get. */
            kill(cmd, (int)si.ssi_signo);
            continue;
        }
        int st;
        pid_t w;
        while ((w = waitpid(-1, &st, WNOHANG)) > 0) {
            if (w != cmd)
                continue;
            struct fb_msg em = {.type = FB_MSG_EXIT, .status = st};
            ctl_send(ctl, &em, NULL, 0);
            kill_rest();
            _exit(status_code(st));
        }
    }
}
