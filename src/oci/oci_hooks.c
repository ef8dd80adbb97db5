/* oci_hooks.c — the spec's hooks, run in the runtime's namespaces (by the
 * supervisor during create, by start and by delete) with the container's
 * state as JSON on their stdin, each with its timeout. prestart and
 * createRuntime failing fails create; poststart and poststop only warn, as
 * the spec says. createContainer and startContainer hooks (run inside the
 * container's namespaces) are refused at create (oci_sup.c). */
#include "oci.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static const char *const kind_names[OCI_HOOK_NKINDS] = {
    "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};

static int run_one(const struct oci_hook *h, const char *state, struct fb_err *err)
{
    int in[2];
    if (pipe2(in, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    pid_t pid = fork();
    if (pid < 0) {
        close(in[0]);
        close(in[1]);
        return fb_errno(err, FB_EXIT_SETUP, "fork");
    }
    if (pid == 0) {
        dup2(in[0], 0);
        sigset_t none;
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        char *dflt[] = {h->path, NULL};
        char *empty[] = {NULL};
        execve(h->path, h->args && h->args[0] ? h->args : dflt, h->env ? h->env : empty);
        dprintf(2, "fluebox: hook %s: %s\n", h->path, strerror(errno));
        _exit(127);
    }
    close(in[0]);
    /* A hook that does not read its stdin must not block us. */
    signal(SIGPIPE, SIG_IGN);
    fb_write_all(in[1], state, strlen(state));
    close(in[1]);
    int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (h->timeout > 0 && pidfd >= 0) {
        struct pollfd pf = {.fd = pidfd, .events = POLLIN};
        int r;
        do
            r = poll(&pf, 1, h->timeout * 1000);
        while (r < 0 && errno == EINTR);
        if (r == 0) {
            kill(pid, SIGKILL);
            while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
                ;
            close(pidfd);
            return fb_errf(err, FB_EXIT_SETUP, "hook %s timed out after %d s", h->path,
                           h->timeout);
        }
    }
    if (pidfd >= 0)
        close(pidfd);
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return fb_errno(err, FB_EXIT_SETUP, "waiting for hook %s", h->path);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    if (WIFEXITED(st))
        return fb_errf(err, FB_EXIT_SETUP, "hook %s exited with %d", h->path, WEXITSTATUS(st));
    return fb_errf(err, FB_EXIT_SETUP, "hook %s was killed by signal %d", h->path, WTERMSIG(st));
}

int oci_hooks_run(const struct oci_spec *s, int kind, json_t *state, struct fb_err *err)
{
    if (!s->nhooks[kind])
        return 0;
    cleanup_free char *text = json_dumps(state, JSON_COMPACT);
    if (!text)
        return fb_errf(err, FB_EXIT_SETUP, "encoding the state for the hooks");
    bool warn_only = kind == OCI_HOOK_POSTSTART || kind == OCI_HOOK_POSTSTOP;
    for (size_t i = 0; i < s->nhooks[kind]; i++) {
        struct fb_err e2 = {0};
        if (run_one(&s->hooks[kind][i], text, &e2) == 0)
            continue;
        if (warn_only) {
            oci_log_warn("%s hook: %s", kind_names[kind], e2.msg);
            continue;
        }
        return fb_errf(err, FB_EXIT_SETUP, "%s hook: %s", kind_names[kind], e2.msg);
    }
    return 0;
}
