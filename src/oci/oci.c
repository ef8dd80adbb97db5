/* oci.c — `fluebox oci`: the command line runc's callers use, --log, and
 * the commands that need no process of their own (state, kill, delete,
 * pause, resume, update, features, list); create and start are in
 * oci_sup.c, exec and ps in oci_exec.c. See oci.h for the whole picture
 * and docs/oci.md for the user's view.
 *
 *   fluebox oci [--root DIR] [--log FILE] [--log-format text|json] [--debug]
 *               [--systemd-cgroup] COMMAND [OPTIONS] ID ...
 * Options are runc's (urfave/cli style: --flag VALUE, --flag=VALUE, -f). */
#include "oci.h"

#include "cgroup.h"
#include "commands.h"

#include <ctype.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>

int oci_resources_apply(struct fb_cgroup *cg, json_t *res, struct fb_err *err); /* oci_res.c */

/* ---- logging ---- */

static const char *log_path;
static bool log_json;
static bool log_debug;

static void log_line(const char *level, const char *fmt, va_list ap)
{
    char msg[1024];
    vsnprintf(msg, sizeof msg, fmt, ap);
    if (strcmp(level, "debug"))
        fprintf(stderr, "fluebox: %s%s\n", strcmp(level, "warning") ? "" : "warning: ", msg);
    if (!log_path)
        return;
    int fd = open(log_path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
    if (fd < 0)
        return;
    char ts[64];
    struct timespec now;
    clock_gettime(CLOCK_REALTIME, &now);
    struct tm tm;
    gmtime_r(&now.tv_sec, &tm);
    size_t n = strftime(ts, sizeof ts, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(ts + n, sizeof ts - n, ".%09ldZ", now.tv_nsec);
    char *line;
    if (log_json) {
        json_t *o = json_pack("{s:s,s:s,s:s}", "level", level, "msg", msg, "time", ts);
        char *t = o ? json_dumps(o, JSON_COMPACT) : NULL;
        json_decref(o);
        line = t ? fb_xasprintf("%s\n", t) : NULL;
        free(t);
    } else {
        json_t *q = json_string(msg);
        char *t = q ? json_dumps(q, JSON_ENCODE_ANY) : NULL;
        json_decref(q);
        line = fb_xasprintf("time=\"%s\" level=%s msg=%s\n", ts, level, t ? t : "\"\"");
        free(t);
    }
    if (line)
        fb_write_all(fd, line, strlen(line));
    free(line);
    close(fd);
}

void oci_log_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("error", fmt, ap);
    va_end(ap);
}

void oci_log_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    log_line("warning", fmt, ap);
    va_end(ap);
}

void oci_log_debug(const char *fmt, ...)
{
    if (!log_debug)
        return;
    va_list ap;
    va_start(ap, fmt);
    log_line("debug", fmt, ap);
    va_end(ap);
}

/* ---- argument parsing ---- */

struct flag {
    const char *names; /* "bundle|b" */
    bool value;
    const char **out;  /* value */
    bool *set;         /* boolean */
    char ***list;      /* repeatable value */
};

static bool flag_is(const struct flag *f, const char *name, size_t len)
{
    for (const char *s = f->names; *s;) {
        size_t l = strcspn(s, "|");
        if (l == len && !strncmp(s, name, len))
            return true;
        s += l;
        if (*s == '|')
            s++;
    }
    return false;
}

static void list_push(char ***l, const char *v)
{
    size_t n = 0;
    while (*l && (*l)[n])
        n++;
    *l = fb_xrealloc(*l, (n + 2) * sizeof **l);
    (*l)[n] = (char *)v;
    (*l)[n + 1] = NULL;
}

/* Parse flags until the first positional argument (or "--"); returns the
 * index of the first positional, -1 after printing an error. */
static int parse_flags(const char *cmd, int argc, char **argv, struct flag *flags, size_t nflags)
{
    int i = 0;
    while (i < argc) {
        const char *a = argv[i];
        if (!strcmp(a, "--"))
            return i + 1;
        if (a[0] != '-' || !a[1])
            return i;
        const char *name = a + (a[1] == '-' ? 2 : 1);
        size_t len = strcspn(name, "=");
        const char *inl = name[len] == '=' ? name + len + 1 : NULL;
        struct flag *f = NULL;
        for (size_t k = 0; k < nflags; k++)
            if (flag_is(&flags[k], name, len))
                f = &flags[k];
        if (!f) {
            oci_log_error("%s: unknown option %s", cmd, a);
            return -1;
        }
        i++;
        if (!f->value) {
            if (f->set)
                *f->set = !inl || strcmp(inl, "false");
            continue;
        }
        const char *v = inl;
        if (!v) {
            if (i >= argc) {
                oci_log_error("%s: %s needs a value", cmd, a);
                return -1;
            }
            v = argv[i++];
        }
        if (f->list)
            list_push(f->list, v);
        else
            *f->out = v;
    }
    return i;
}

static const char *need_id(const char *cmd, int argc, char **argv, int at)
{
    if (at < 0)
        return NULL;
    if (at >= argc) {
        oci_log_error("%s: a container id is needed", cmd);
        return NULL;
    }
    return argv[at];
}

static int parse_signal(const char *s)
{
    char *end;
    long n = strtol(s, &end, 10);
    if (*s && !*end)
        return n > 0 && n < NSIG ? (int)n : -1;
    if (!strncasecmp(s, "SIG", 3))
        s += 3;
    for (int sig = 1; sig < SIGRTMIN; sig++) {
        const char *abbr = sigabbrev_np(sig);
        if (abbr && !strcasecmp(s, abbr))
            return sig;
    }
    if (!strncasecmp(s, "RTMIN", 5) || !strncasecmp(s, "RTMAX", 5)) {
        int off = s[5] ? atoi(s + 5) : 0;
        int sig = toupper((unsigned char)s[2]) == 'M' && toupper((unsigned char)s[3]) == 'I'
                      ? SIGRTMIN + off
                      : SIGRTMAX + off;
        return sig >= SIGRTMIN && sig <= SIGRTMAX ? sig : -1;
    }
    return -1;
}

/* ---- state, kill, delete, pause, resume, update ---- */

static int cmd_state(const char *root, const char *id)
{
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    json_t *o = oci_state_json(&st, oci_state_status(&st));
    char *t = json_dumps(o, JSON_INDENT(2));
    printf("%s\n", t ? t : "{}");
    free(t);
    json_decref(o);
    oci_state_close(&st);
    return 0;
}

/* --preserve-fds N: 3..3+N-1 go to the process, and each must be open now:
 * a number not open would be taken by one of fluebox's own descriptors
 * (the control socket) on the way, and reach the container. */
static int parse_preserve(const char *v, int *n)
{
    *n = 0;
    if (!v)
        return 0;
    uint64_t u;
    if (fb_parse_u64(v, &u) < 0 || u > OCI_PRESERVE_MAX) {
        oci_log_error("--preserve-fds \"%s\": a number of descriptors from 0 to %d", v,
                      OCI_PRESERVE_MAX);
        return -1;
    }
    for (int fd = 3; fd < 3 + (int)u; fd++)
        if (fcntl(fd, F_GETFD) < 0) {
            oci_log_error("--preserve-fds %s: descriptor %d is not open", v, fd);
            return -1;
        }
    *n = (int)u;
    return 0;
}

static int open_cgroup(const struct oci_state *st, struct fb_cgroup **cg, struct fb_err *err)
{
    *cg = NULL;
    if (!st->cgroup)
        return fb_errf(err, FB_EXIT_SETUP, "container %s has no cgroup", st->id);
    if (cgroup_open_at(st->cgroup, cg, err) < 0)
        return -1;
    json_t *tops = json_object_get(st->json, "cgroup_tops");
    const char *t[16];
    size_t n = 0;
    for (size_t i = 0; json_is_array(tops) && i < json_array_size(tops) && n < 16; i++)
        if (json_is_string(json_array_get(tops, i)))
            t[n++] = json_string_value(json_array_get(tops, i));
    cgroup_set_tops(*cg, t, n);
    return 0;
}

static int cmd_kill(const char *root, const char *id, const char *sigs, bool all)
{
    int sig = parse_signal(sigs ? sigs : "TERM");
    if (sig < 0) {
        oci_log_error("kill: unknown signal \"%s\"", sigs);
        return 1;
    }
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    int code = 1;
    enum oci_status s = oci_state_status(&st);
    /* runc's outcome, which containerd and dockerd match on: kill --all of a
     * stopped container exits 0 silently (the container is gone, as asked);
     * a kill without --all exits 1 with "container not running" (the
     * engines look for that text and treat the container as gone). */
    if (s == OCI_STOPPED && all) {
        code = 0;
        goto out;
    }
    if (s == OCI_STOPPED || s == OCI_CREATING) {
        oci_log_error("container not running");
        goto out;
    }
    if (all) {
        struct fb_cgroup *cg;
        if (open_cgroup(&st, &cg, &err) < 0) {
            oci_log_error("%s", err.msg);
            goto out;
        }
        cgroup_signal_all(cg, sig);
        if (s == OCI_PAUSED && sig == SIGKILL)
            cgroup_freeze(cg, false, &err); /* a frozen task dies only once thawed */
        cgroup_close(cg);
        code = 0;
        goto out;
    }
    int pidfd = (int)syscall(SYS_pidfd_open, st.pid, 0);
    if (pidfd < 0 || !oci_pid_alive(st.pid, st.pid_start)) {
        oci_log_error("container not running");
        if (pidfd >= 0)
            close(pidfd);
        goto out;
    }
    if (syscall(SYS_pidfd_send_signal, pidfd, sig, NULL, 0) < 0) {
        oci_log_error("kill %s: %s", id, strerror(errno));
        close(pidfd);
        goto out;
    }
    close(pidfd);
    code = 0;
out:
    oci_state_close(&st);
    return code;
}

/* Wait (bounded) until pid, the process with start time start, is gone. */
static bool wait_gone(pid_t pid, uint64_t start, int ms)
{
    if (pid <= 0 || !oci_pid_alive(pid, start))
        return true;
    int fd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (fd < 0)
        return !oci_pid_alive(pid, start);
    if (!oci_pid_alive(pid, start)) {
        close(fd);
        return true;
    }
    struct pollfd pf = {.fd = fd, .events = POLLIN};
    int r;
    do
        r = poll(&pf, 1, ms);
    while (r < 0 && errno == EINTR);
    close(fd);
    return r > 0;
}

static int cmd_delete(const char *root, const char *id, bool force)
{
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        if (force && strstr(err.msg, "does not exist"))
            return 0;
        oci_log_error("%s", err.msg);
        return 1;
    }
    enum oci_status s = oci_state_status(&st);
    if ((s == OCI_RUNNING || s == OCI_PAUSED) && !force) {
        oci_log_error("cannot delete container %s that is not stopped: %s", id,
                      oci_status_name(s));
        oci_state_close(&st);
        return 1;
    }
    struct fb_cgroup *cg = NULL;
    if (st.cgroup && open_cgroup(&st, &cg, &err) < 0)
        cg = NULL;
    if (s != OCI_STOPPED && st.pid > 0) {
        int pidfd = (int)syscall(SYS_pidfd_open, st.pid, 0);
        if (pidfd >= 0 && oci_pid_alive(st.pid, st.pid_start))
            syscall(SYS_pidfd_send_signal, pidfd, SIGKILL, NULL, 0);
        if (pidfd >= 0)
            close(pidfd);
    }
    if (cg) {
        cgroup_signal_all(cg, SIGKILL);
        if (cgroup_frozen(cg))
            cgroup_freeze(cg, false, &err);
    }
    if (!wait_gone(st.pid, st.pid_start, 10000))
        oci_log_warn("the init of %s did not exit", id);
    /* The supervisor ends when init does; it is given a moment, then
     * killed. */
    if (!wait_gone(st.sup, st.sup_start, 5000) && oci_pid_alive(st.sup, st.sup_start))
        kill(st.sup, SIGKILL);
    if (cg)
        cgroup_destroy(cg); /* kills what is left, removes the directories */
    struct oci_spec spec;
    cleanup_free char *cfg = fb_xasprintf("%s/config.json", st.dir);
    if (oci_spec_load(st.bundle ? st.bundle : "/", cfg, &spec, &err) == 0) {
        json_t *state = oci_state_json(&st, OCI_STOPPED);
        oci_hooks_run(&spec, OCI_HOOK_POSTSTOP, state, &err);
        json_decref(state);
    }
    oci_spec_free(&spec);
    oci_state_remove(&st);
    return 0;
}

static int cmd_freeze(const char *root, const char *id, bool freeze)
{
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    int code = 1;
    enum oci_status s = oci_state_status(&st);
    if (freeze ? s != OCI_RUNNING && s != OCI_CREATED : s != OCI_PAUSED) {
        oci_log_error("container %s is %s, not %s", id, oci_status_name(s),
                      freeze ? "running" : "paused");
        goto out;
    }
    struct fb_cgroup *cg;
    if (open_cgroup(&st, &cg, &err) < 0 || cgroup_freeze(cg, freeze, &err) < 0) {
        oci_log_error("%s", err.msg);
        if (cg)
            cgroup_close(cg);
        goto out;
    }
    cgroup_close(cg);
    code = 0;
out:
    oci_state_close(&st);
    return code;
}

static int cmd_update(const char *root, const char *id, const char *file)
{
    struct fb_err err = {0};
    json_error_t je;
    json_t *res = NULL;
    if (!file) {
        oci_log_error("update: --resources FILE|- is needed");
        return 1;
    }
    res = oci_json_load(file, &je);
    if (!json_is_object(res)) {
        oci_log_error("update: %s: %s", file, je.text);
        json_decref(res);
        return 1;
    }
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        json_decref(res);
        return 1;
    }
    int code = 1;
    struct fb_cgroup *cg = NULL;
    if (open_cgroup(&st, &cg, &err) < 0 || oci_resources_apply(cg, res, &err) < 0)
        oci_log_error("%s", err.msg);
    else
        code = 0;
    cgroup_close(cg);
    oci_state_close(&st);
    json_decref(res);
    return code;
}

static int cmd_list(const char *root, bool json)
{
    char **ids;
    size_t n;
    if (oci_state_list(root, &ids, &n) < 0) {
        oci_log_error("list %s: %s", root, strerror(errno));
        return 1;
    }
    json_t *arr = json_array();
    if (!json)
        printf("ID\tPID\tSTATUS\tBUNDLE\n");
    for (size_t i = 0; i < n; i++) {
        struct oci_state st;
        struct fb_err err;
        if (oci_state_open(root, ids[i], &st, &err) == 0) {
            enum oci_status s = oci_state_status(&st);
            if (json)
                json_array_append_new(arr, oci_state_json(&st, s));
            else
                printf("%s\t%d\t%s\t%s\n", st.id, s == OCI_STOPPED ? 0 : st.pid,
                       oci_status_name(s), st.bundle ? st.bundle : "");
            oci_state_close(&st);
        }
        free(ids[i]);
    }
    free(ids);
    if (json) {
        char *t = json_dumps(arr, JSON_COMPACT);
        printf("%s\n", t ? t : "[]");
        free(t);
    }
    json_decref(arr);
    return 0;
}

static int cmd_features(void)
{
    /* What this runtime understands, in the format of the runtime spec's
     * features document. */
    json_t *o = json_pack(
        "{s:s,s:s,s:[s,s,s,s],s:[s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s,s],"
        "s:{s:[s,s,s,s,s,s,s],s:[s,s,s,s,s,s,s,s,s,s,s,s,s,s],s:{s:b,s:b,s:b},"
        "s:{s:b,s:[s,s,s,s,s,s,s,s],s:[s,s,s,s,s,s,s]}},s:{s:s}}",
        "ociVersionMin", "1.0.0", "ociVersionMax", "1.1.0", "hooks", "prestart", "createRuntime",
        "poststart", "poststop", "mountOptions", "ro", "rw", "nosuid", "suid", "nodev", "dev",
        "noexec", "exec", "sync", "async", "dirsync", "remount", "atime", "noatime", "diratime",
        "nodiratime", "relatime", "norelatime", "strictatime", "nostrictatime", "bind", "rbind",
        "private", "rprivate", "linux", "namespaces", "pid", "network", "ipc", "uts", "mount",
        "user", "cgroup", "capabilities", "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID",
        "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW", "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP",
        "CAP_SETPCAP", "CAP_NET_BIND_SERVICE", "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
        "cgroup", "v1", 1, "v2", 1, "systemd", 0, "seccomp", "enabled", 1, "actions",
        "SCMP_ACT_ALLOW", "SCMP_ACT_ERRNO", "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS",
        "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG", "SCMP_ACT_TRAP", "SCMP_ACT_TRACE", "operators",
        "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT", "SCMP_CMP_LE", "SCMP_CMP_LT",
        "SCMP_CMP_MASKED_EQ", "SCMP_CMP_NE", "annotations", "run.fluebox.version", FB_VERSION);
    char *t = o ? json_dumps(o, JSON_INDENT(2)) : NULL;
    printf("%s\n", t ? t : "{}");
    free(t);
    json_decref(o);
    return o ? 0 : 1;
}

/* `run`: create, start, wait, delete; exits with the process's status. */
static int cmd_run(const struct oci_create_args *a, bool detach)
{
    if (oci_create(a))
        return 1;
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(a->root, a->id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    pid_t pid = st.pid;
    oci_state_close(&st);
    if (oci_start(a->root, a->id)) {
        cmd_delete(a->root, a->id, true);
        while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
            ;
        return 1;
    }
    if (detach)
        return 0;
    /* init is our child (CLONE_PARENT from the supervisor): its status is
     * the process's. Signals for us go to it. */
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    cmd_delete(a->root, a->id, true);
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

extern const char *oci_default_profile;

static const char usage[] =
    "Usage: fluebox oci [--root DIR] [--log FILE] [--log-format text|json] COMMAND ...\n"
    "  create [--bundle DIR] [--pid-file FILE] [--console-socket SOCK] ID\n"
    "  start ID | state ID | kill [--all] ID [SIGNAL] | delete [--force] ID\n"
    "  exec [--process FILE] [--detach] [--pid-file FILE] [--tty] [--console-socket SOCK]\n"
    "       [--cwd DIR] [--env K=V] [--user UID[:GID]] ID [-- CMD ...]\n"
    "  ps [--format table|json] ID | pause ID | resume ID | update --resources FILE|- ID\n"
    "  run [--bundle DIR] [--detach] ID | list [--format table|json] | features\n"
    "A runc-compatible OCI runtime: containers run with fluebox's boundary (docs/oci.md).\n";

int cmd_oci(int argc, char **argv)
{
    const char *root = getenv("FLUEBOX_OCI_ROOT"), *log = NULL, *fmt = NULL;
    bool debug = false, systemd = false, help = false;
    if (!root || !*root)
        root = "/run/fluebox-oci";
    struct flag global[] = {
        {"root", true, &root, NULL, NULL},          {"log", true, &log, NULL, NULL},
        {"log-format", true, &fmt, NULL, NULL},     {"debug", false, NULL, &debug, NULL},
        {"systemd-cgroup", false, NULL, &systemd, NULL}, {"help|h", false, NULL, &help, NULL},
    };
    int i = parse_flags("fluebox oci", argc, argv, global, FB_ARRAY_LEN(global));
    if (i < 0)
        return 1;
    log_path = log;
    log_json = fmt && !strcmp(fmt, "json");
    log_debug = debug;
    if (help || i >= argc) {
        fputs(usage, help ? stdout : stderr);
        return help ? 0 : 1;
    }
    if (systemd) {
        oci_log_error("--systemd-cgroup: fluebox oci uses cgroupfs paths (set SystemdCgroup = "
                      "false)");
        return 1;
    }
    const char *cmd = argv[i++];
    argc -= i;
    argv += i;
    if (!strcmp(cmd, "create") || !strcmp(cmd, "run")) {
        struct oci_create_args a = {.root = root};
        const char *preserve = NULL;
        bool detach = false, keep = false, nopivot = false, nokeyring = false;
        struct flag f[] = {
            {"bundle|b", true, &a.bundle, NULL, NULL},
            {"pid-file", true, &a.pid_file, NULL, NULL},
            {"console-socket", true, &a.console_socket, NULL, NULL},
            {"preserve-fds", true, &preserve, NULL, NULL},
            {"detach|d", false, NULL, &detach, NULL},
            {"keep", false, NULL, &keep, NULL},
            {"no-pivot", false, NULL, &nopivot, NULL},
            {"no-new-keyring", false, NULL, &nokeyring, NULL},
        };
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        a.id = need_id(cmd, argc, argv, at);
        if (!a.id)
            return 1;
        if (parse_preserve(preserve, &a.preserve_fds) < 0)
            return 1;
        return !strcmp(cmd, "run") ? cmd_run(&a, detach) : oci_create(&a);
    }
    if (!strcmp(cmd, "start") || !strcmp(cmd, "state") || !strcmp(cmd, "pause") ||
        !strcmp(cmd, "resume")) {
        int at = parse_flags(cmd, argc, argv, NULL, 0);
        const char *id = need_id(cmd, argc, argv, at);
        if (!id)
            return 1;
        if (!strcmp(cmd, "start"))
            return oci_start(root, id);
        if (!strcmp(cmd, "state"))
            return cmd_state(root, id);
        return cmd_freeze(root, id, !strcmp(cmd, "pause"));
    }
    if (!strcmp(cmd, "kill")) {
        bool all = false;
        struct flag f[] = {{"all|a", false, NULL, &all, NULL}};
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        const char *id = need_id(cmd, argc, argv, at);
        if (!id)
            return 1;
        /* runc also takes flags after the id (kill ID SIG --all). */
        const char *sig = NULL;
        for (int k = at + 1; k < argc; k++) {
            if (!strcmp(argv[k], "--all") || !strcmp(argv[k], "-a"))
                all = true;
            else
                sig = argv[k];
        }
        return cmd_kill(root, id, sig, all);
    }
    if (!strcmp(cmd, "delete")) {
        bool force = false;
        struct flag f[] = {{"force|f", false, NULL, &force, NULL}};
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        const char *id = need_id(cmd, argc, argv, at);
        return id ? cmd_delete(root, id, force) : 1;
    }
    if (!strcmp(cmd, "exec")) {
        struct oci_exec_args a = {.root = root};
        const char *preserve = NULL, *ignored = NULL;
        struct flag f[] = {
            {"process|p", true, &a.process, NULL, NULL},
            {"detach|d", false, NULL, &a.detach, NULL},
            {"pid-file", true, &a.pid_file, NULL, NULL},
            {"console-socket", true, &a.console_socket, NULL, NULL},
            {"tty|t", false, NULL, &a.tty, NULL},
            {"cwd", true, &a.cwd, NULL, NULL},
            {"env|e", true, NULL, NULL, &a.env},
            {"user|u", true, &a.user, NULL, NULL},
            {"cap|c", true, NULL, NULL, &a.caps},
            {"no-new-privs", false, NULL, &a.no_new_privs, NULL},
            {"preserve-fds", true, &preserve, NULL, NULL},
            {"apparmor|process-label|cgroup", true, &ignored, NULL, NULL},
        };
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        a.id = need_id(cmd, argc, argv, at);
        if (!a.id)
            return 1;
        if (parse_preserve(preserve, &a.preserve_fds) < 0)
            return 1;
        int k = at + 1;
        if (k < argc && !strcmp(argv[k], "--"))
            k++;
        a.argv = k < argc ? argv + k : NULL;
        int rc = oci_exec(&a);
        free(a.env);
        free(a.caps);
        return rc;
    }
    if (!strcmp(cmd, "ps")) {
        const char *format = "table";
        struct flag f[] = {{"format|f", true, &format, NULL, NULL}};
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        const char *id = need_id(cmd, argc, argv, at);
        if (!id)
            return 1;
        return oci_ps(root, id, !strcmp(format, "json"), argv + at + 1);
    }
    if (!strcmp(cmd, "update")) {
        const char *res = NULL, *ignored = NULL;
        struct flag f[] = {
            {"resources|r", true, &res, NULL, NULL},
            {"memory|memory-swap|memory-reservation|cpu-shares|cpu-quota|cpu-period|cpuset-cpus|"
             "cpuset-mems|pids-limit|kernel-memory|blkio-weight|l3-cache-schema",
             true, &ignored, NULL, NULL},
        };
        int at = parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f));
        const char *id = need_id(cmd, argc, argv, at);
        if (!id)
            return 1;
        if (ignored) {
            oci_log_error("update: give the resources as JSON with --resources FILE|-");
            return 1;
        }
        return cmd_update(root, id, res);
    }
    if (!strcmp(cmd, "list")) {
        const char *format = "table";
        bool quiet = false;
        struct flag f[] = {{"format|f", true, &format, NULL, NULL},
                           {"quiet|q", false, NULL, &quiet, NULL}};
        if (parse_flags(cmd, argc, argv, f, FB_ARRAY_LEN(f)) < 0)
            return 1;
        return cmd_list(root, !strcmp(format, "json"));
    }
    if (!strcmp(cmd, "features"))
        return cmd_features();
    if (!strcmp(cmd, "checkpoint") || !strcmp(cmd, "restore") || !strcmp(cmd, "events") ||
        !strcmp(cmd, "spec")) {
        oci_log_error("%s is not supported by fluebox oci", cmd);
        return 1;
    }
    oci_log_error("unknown command \"%s\"", cmd);
    return 1;
}
