/* landlock_spawn.c — the process side of --isolation landlock (landlock.h
 * has the rules): sandbox_spawn() comes here when the policy asks for it.
 *
 * Supervisor                                    Child (the run's init)
 *   landlock_prepare: checks, scratch dir,
 *     the CONNECT proxy's listener
 *   cgroup_create (when limits are wanted)
 *   seccomp_job_start
 *   PR_SET_CHILD_SUBREAPER: orphans of the
 *     command come to the supervisor
 *   fork, pidfd_open (no namespaces; no         cgroup_join_self (v1)
 *     clone3: a container's seccomp profile     closes inherited fds, PDEATHSIG
 *     answers it with ENOSYS)                   landlock_ruleset (fluebox's own ids)
 *   cgroup_attach
 *   GO ------------------------------------->   as root: empty bounding set, then
 *   SECCOMP_PROG --------------------------->    the run's unprivileged ids
 *                                               landlock_enforce: no_new_privs,
 *                                                Landlock domain, extra filter
 *   egress_start (the proxy)                    init_main: new session, rlimits,
 *   wait READY <----------------------------     caps, the profile's filters,
 *                                                fork + exec the command
 *
 * Init is no pid 1 here: when the command ends, init reports and exits, and
 * landlock_release() kills and reaps every process the command left (they
 * were reparented to the supervisor) before the scratch directory goes. */
#include "spawn.h"

#include "ctl.h"
#include "init.h"
#include "landlock.h"
#include "seccomp.h"

#include <dirent.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

__attribute__((noreturn)) static void child_fail(int ctl, struct fb_err *err)
{
    ctl_sendf(ctl, FB_MSG_ERR, err->code ? err->code : FB_EXIT_SETUP, "%s", err->msg);
    _exit(FB_EXIT_SETUP);
}

/* Nothing left to regain: an empty bounding set, so that not even an
 * exec as uid 0 gives capabilities back. */
static int drop_bounding(struct fb_err *err)
{
    for (int cap = 0; cap <= 63; cap++) {
        int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (r < 0)
            break; /* past the last capability this kernel knows */
        if (r == 1 && prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "dropping capability %d from the bounding set",
                            cap);
    }
    return 0;
}

/* As root: the bounding set emptied, then the run's ids, which drops
 * every capability. */
static int become(const struct fb_ll *ll, struct fb_err *err)
{
    if (drop_bounding(err) < 0)
        return -1;
    if (fb_drop_groups_raw() < 0)
        return fb_errno(err, FB_EXIT_SETUP, "dropping supplementary groups");
    if (fb_set_ids_raw(ll->uid, ll->gid) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "switching to uid %u gid %u", (unsigned)ll->uid,
                        (unsigned)ll->gid);
    return 0;
}

__attribute__((noreturn)) static void child_main(const struct fb_policy *p, struct fb_ll *ll,
                                                 int ctl, const struct fb_cgroup *cg,
                                                 bool nproc_fallback)
{
    struct fb_err err = {0}, cg_err = {0};
    int cg_rc = cg ? cgroup_join_self(cg, &cg_err) : 0;
    /* Only the control socket stays: not the proxy's listener, not the
     * caller's descriptors. */
    if (ctl > 3)
        syscall(SYS_close_range, 3, (unsigned)ctl - 1, 0);
    syscall(SYS_close_range, (unsigned)ctl + 1, ~0U, 0);
    fb_proctitle_set("fluebox-init");
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    /* Opened with fluebox's own ids, as the namespaced sandbox opens its
     * bind sources. */
    int rs = landlock_ruleset(p, ll, &err);
    if (rs < 0)
        child_fail(ctl, &err);
    struct fb_msg m;
    if (ctl_recv(ctl, &m, NULL, NULL) <= 0 || m.type != FB_MSG_GO)
        _exit(FB_EXIT_SETUP);
    if (cg_rc < 0)
        child_fail(ctl, &cg_err);
    if (ll->set_ids && become(ll, &err) < 0)
        child_fail(ctl, &err);
    /* uid 0 of a user namespace that maps only itself (`unshare -r`) keeps
     * its uid, not its capabilities: the exec would restore them all. */
    if (!ll->set_ids && geteuid() == 0 && drop_bounding(&err) < 0)
        child_fail(ctl, &err);
    /* Changing ids cleared the parent-death signal; the supervisor may
     * have died before it was set again. */
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct pollfd pfd = {.fd = ctl, .events = POLLIN};
    if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
        _exit(FB_EXIT_SETUP);
    if (landlock_enforce(p, ll, rs, &err) < 0)
        child_fail(ctl, &err);

    /* The policy as the command sees it: host paths for the workspace and
     * the working directory, HOME and TMPDIR in the run's own directories,
     * the proxy's real port. A copy of this process's own, never freed:
     * init does not return. */
    struct fb_policy q = *p;
    q.workspace = ll->workspace;
    q.cwd = ll->cwd;
    if (ll->exec_path)
        q.exec_path = ll->exec_path;
    q.proxy_env = ll->proxy_port != 0;
    q.proxy_port = ll->proxy_port;
    q.env_set = fb_xcalloc(p->nenv_set + 2, sizeof *q.env_set);
    q.env_set[0] = fb_xasprintf("HOME=%s", ll->workspace);
    q.env_set[1] = fb_xasprintf("TMPDIR=%s", ll->tmpdir);
    for (size_t i = 0; i < p->nenv_set; i++)
        q.env_set[i + 2] = p->env_set[i]; /* the caller's --env wins */
    q.nenv_set = p->nenv_set + 2;
    init_main(&q, FB_MODE_RUN, ctl, nproc_fallback, NULL);
}

int landlock_spawn(const struct fb_policy *p, enum fb_mode mode, struct fb_sandbox *sb,
                   struct fb_err *err)
{
    memset(sb, 0, sizeof *sb);
    sb->pid = -1;
    sb->pidfd = -1;
    sb->ctl = -1;
    sb->seccomp_fd = -1;
    sb->start_ns = fb_now_ns();
    idrange_init(&sb->ids.claim);
    if (landlock_prepare(p, mode == FB_MODE_RUN, &sb->ids, &sb->ll, err) < 0) {
        userns_release_ids(&sb->ids);
        return -1;
    }
    struct fb_ll *ll = sb->ll;
    /* egress.c recognises the proxy's listener by the policy's port. */
    ll->egress_policy = *p;
    ll->egress_policy.proxy_port = ll->proxy_port;

    struct fb_sc_job scj;
    if (seccomp_job_start(p, seccomp_mode(p, true), &scj, err) < 0)
        goto fail;
    /* Without a pids cgroup, --pids is not applied: RLIMIT_NPROC would
     * count the uid's other processes too (cgroup.c). */
    if ((p->limits.mem > 0 || p->limits.pids > 0 || p->limits.cpus > 0) &&
        cgroup_create(p, &sb->cg, err) < 0)
        goto fail_job;
    /* Whatever the command leaves running is reparented here, so that
     * landlock_release() finds it: there is no pid namespace to end. */
    if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "becoming a subreaper");
        goto fail_job;
    }
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "socketpair");
        goto fail_job;
    }
    pid_t pid = fork();
    if (pid < 0) {
        fb_errno(err, FB_EXIT_SETUP, "fork");
        close(sv[0]);
        close(sv[1]);
        goto fail_job;
    }
    if (pid == 0) {
        close(sv[0]);
        seccomp_job_close(&scj);
        child_main(p, ll, sv[1], sb->cg, sb->nproc_fallback);
    }
    close(sv[1]);
    sb->pid = pid;
    sb->ctl = sv[0];
    sb->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
    if (sb->pidfd < 0) {
        fb_errno(err, FB_EXIT_SETUP, "pidfd_open (Linux 5.3; see fluebox doctor)");
        goto fail_child;
    }
    if (sb->cg && cgroup_attach(sb->cg, pid, err) < 0)
        goto fail_child;
    struct fb_msg go = {.type = FB_MSG_GO};
    if (ctl_send(sb->ctl, &go, NULL, 0) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "starting the sandbox");
        goto fail_child;
    }
    if (seccomp_job_send(&scj, sb->ctl, err) < 0)
        goto fail_child;
    if (ll->proxy_fd >= 0) {
        int fd = ll->proxy_fd;
        ll->proxy_fd = -1; /* egress owns it now, even when it fails */
        if (egress_start(&ll->egress_policy, &fd, 1, &sb->egress, err) < 0)
            goto fail_child;
    }
    for (;;) {
        struct fb_msg m;
        int fds[FB_CTL_MAX_FDS];
        size_t nfds = FB_CTL_MAX_FDS;
        int r = ctl_recv(sb->ctl, &m, fds, &nfds);
        if (r < 0) {
            fb_errno(err, FB_EXIT_SETUP, "reading from the sandbox");
            goto fail_child;
        }
        if (r == 0) {
            fb_errf(err, FB_EXIT_SETUP, "the sandbox died during set-up");
            goto fail_child;
        }
        if (m.type == FB_MSG_ERR) {
            fb_errf(err, m.code ? m.code : FB_EXIT_SETUP, "%s", m.text);
            goto fail_child;
        }
        if (m.type == FB_MSG_SECCOMP_FD && nfds == 1 && sb->seccomp_fd < 0) {
            sb->seccomp_fd = fds[0];
            continue;
        }
        for (size_t i = 0; i < nfds; i++)
            close(fds[i]);
        if (m.type == FB_MSG_READY)
            return 0;
    }

fail_child:
    seccomp_job_cancel(&scj);
    sandbox_kill(sb);
    sandbox_release(sb);
    return -1;
fail_job:
    seccomp_job_cancel(&scj);
fail:
    cgroup_destroy(sb->cg);
    sb->cg = NULL;
    landlock_free(sb->ll);
    sb->ll = NULL;
    userns_release_ids(&sb->ids);
    return -1;
}

/* The pids whose parent is this process (from /proc: the command's
 * leftovers were reparented here), at most cap. */
static size_t my_children(pid_t *out, size_t cap)
{
    size_t n = 0;
    pid_t me = getpid();
    DIR *d = opendir("/proc");
    if (!d)
        return 0;
    struct dirent *e;
    while (n < cap && (e = readdir(d))) {
        char *end;
        long pid = strtol(e->d_name, &end, 10);
        if (*end || pid <= 0)
            continue;
        char path[64], buf[512];
        snprintf(path, sizeof path, "/proc/%ld/stat", pid);
        if (fb_read_file(path, buf, sizeof buf) <= 0)
            continue;
        const char *rp = strrchr(buf, ')'); /* the name may hold anything */
        char state;
        int ppid;
        if (rp && sscanf(rp + 1, " %c %d", &state, &ppid) == 2 && ppid == me)
            out[n++] = (pid_t)pid;
    }
    closedir(d);
    return n;
}

void landlock_release(struct fb_sandbox *sb)
{
    if (!sb->ll)
        return;
    /* Each round kills what is there; a process forked meanwhile by one
     * being killed is found by the next. */
    for (int round = 0; round < 1000; round++) {
        pid_t kids[256];
        size_t n = my_children(kids, FB_ARRAY_LEN(kids));
        if (!n)
            break;
        for (size_t i = 0; i < n; i++)
            kill(kids[i], SIGKILL);
        for (size_t i = 0; i < n; i++)
            while (waitpid(kids[i], NULL, 0) < 0 && errno == EINTR)
                ;
    }
    prctl(PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0);
    landlock_free(sb->ll);
    sb->ll = NULL;
}
