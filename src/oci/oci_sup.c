/* oci_sup.c — `create` and the container's supervisor, and `start`.
 *
 * create (P, the shim's child) reads and checks the bundle, claims the
 * container's range of host ids (host_ids), makes the state directory,
 * compiles the spec's seccomp filter and forks the supervisor (S), which
 * inherits the claim, detaches (setsid, stdio to /dev/null once the
 * container has its own copies) and outlives P:
 *   S: the rootfs layers and bind sources, idmapped (oci_mount.c); before
 *      Linux 6.6 the upper layer's ext4 (oci_upper.c); the
 *      cgroup at linux.cgroupsPath with the limits; namespaces to join by
 *      path are joined around the clone; sandbox_spawn_ext() with
 *      CLONE_PARENT, so init is P's child (and the shim's once P exits);
 *      rlimits and oom_score_adj set on init from the host side (raising
 *      them needs the host's privileges); prestart/createRuntime hooks;
 *      state.json; the socket sup.sock; then it tells P the pid, and P
 *      writes --pid-file and exits 0.
 * S then serves: start requests on sup.sock (passed on to init as START),
 * the egress relay, the timeout; when init exits it writes the report
 * (run.fluebox.report), gives the range back once no process of the
 * container is left, and exits itself. delete removes the rest.
 *
 * The flight record (run.fluebox.record, docs/record.md) is S's alone: it
 * opens it before anything of the container exists (so a bad path fails
 * create), writes "start", "exec" when the process starts, the network
 * decisions (the relay runs in S), "limit" for a timeout, and the result
 * and the signed "end" when init exits. `fluebox oci exec` tells S of each
 * process it starts and how it ended ("exec" and "exec_end" requests on
 * sup.sock), before the process runs, so no exec goes unrecorded. A
 * SIGKILLed S leaves a prefix that verifies as cut short. */
#include "oci.h"

#include "cgroup.h"
#include "ctl.h"
#include "egress.h"
#include "netns.h"
#include "policy_summary.h"
#include "record.h"
#include "report.h"
#include "run_record.h"
#include "seccomp.h"
#include "spawn.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>

int oci_resources_apply(struct fb_cgroup *cg, json_t *res, struct fb_err *err); /* oci_res.c */

/* What S tells P through the pipe. */
struct result {
    int ok;
    int code;
    pid_t pid;
    char msg[512];
};

static void send_result(int fd, int ok, pid_t pid, const struct fb_err *err)
{
    struct result r = {.ok = ok, .pid = pid, .code = err ? err->code : 0};
    if (err)
        snprintf(r.msg, sizeof r.msg, "%s", err->msg);
    fb_write_all(fd, &r, sizeof r);
}

/* A unix socket path for a file in the directory dirfd, short whatever the
 * directory's length (sun_path holds 108 bytes). */
static void sock_addr(int dirfd, const char *name, struct sockaddr_un *a)
{
    memset(a, 0, sizeof *a);
    a->sun_family = AF_UNIX;
    snprintf(a->sun_path, sizeof a->sun_path, "/proc/self/fd/%d/%s", dirfd, name);
}

static void now_rfc3339(char *buf, size_t cap)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    size_t n = strftime(buf, cap, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(buf + n, cap - n, ".%09ldZ", ts.tv_nsec);
}

/* The rlimits init gets from the host side: the spec's, and the profile's
 * nofile, fsize and core=0 where the spec says nothing of them. */
static int set_rlimits(pid_t pid, const struct fb_policy *p, const struct oci_process *pr,
                       struct fb_err *err)
{
    bool has[RLIM_NLIMITS] = {0};
    for (size_t i = 0; i < pr->nrlimits; i++) {
        const struct oci_rlimit *r = &pr->rlimits[i];
        struct rlimit rl = {.rlim_cur = r->soft == UINT64_MAX ? RLIM_INFINITY : r->soft,
                            .rlim_max = r->hard == UINT64_MAX ? RLIM_INFINITY : r->hard};
        if (prlimit(pid, (__rlimit_resource_t)r->resource, &rl, NULL) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "process.rlimits[%zu]", i);
        if (r->resource >= 0 && r->resource < RLIM_NLIMITS)
            has[r->resource] = true;
    }
    struct {
        int res;
        int64_t v;
    } dflt[] = {{RLIMIT_CORE, 0}, {RLIMIT_NOFILE, p->limits.nofile}, {RLIMIT_FSIZE, p->limits.fsize}};
    for (size_t i = 0; i < FB_ARRAY_LEN(dflt); i++) {
        if (has[dflt[i].res] || dflt[i].v == 0 || (dflt[i].v < 0 && dflt[i].res != RLIMIT_CORE))
            continue;
        rlim_t v = dflt[i].v < 0 ? RLIM_INFINITY : (rlim_t)dflt[i].v;
        struct rlimit rl = {v, v};
        if (prlimit(pid, (__rlimit_resource_t)dflt[i].res, &rl, NULL) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "setting the profile's rlimit %d", dflt[i].res);
    }
    return 0;
}

/* Join the namespaces the spec names by path (a pod's), around the clone:
 * the new process inherits them, the supervisor goes back to its own. */
struct ns_join {
    int target[8], own[8], type[8];
    size_t n;
};

static int ns_enter(const struct oci_spec *s, const struct fb_policy *p, struct ns_join *j,
                    struct fb_err *err)
{
    static const struct {
        int type;
        const char *name;
    } names[] = {{CLONE_NEWNET, "net"}, {CLONE_NEWIPC, "ipc"}, {CLONE_NEWUTS, "uts"},
                 {CLONE_NEWPID, "pid"}, {CLONE_NEWCGROUP, "cgroup"}};
    j->n = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(names); i++) {
        const struct oci_ns *ns = oci_spec_ns(s, names[i].type);
        if (!ns || !ns->path)
            continue;
        char own[64];
        snprintf(own, sizeof own, "/proc/self/ns/%s", names[i].name);
        if (names[i].type == CLONE_NEWPID)
            snprintf(own, sizeof own, "/proc/self/ns/pid_for_children");
        int t = open(ns->path, O_RDONLY | O_CLOEXEC);
        if (t < 0)
            return fb_errno(err, FB_EXIT_SETUP, "linux.namespaces %s: %s", names[i].name, ns->path);
        /* Again on what was opened: the path may name another namespace
         * now than at the check in oci_policy (a /proc/PID reused). */
        if (oci_ns_check_host(t, names[i].type, ns->path, p, err) < 0) {
            close(t);
            return -1;
        }
        int o = open(own, O_RDONLY | O_CLOEXEC);
        if (o < 0) {
            close(t);
            return fb_errno(err, FB_EXIT_SETUP, "%s", own);
        }
        j->target[j->n] = t;
        j->own[j->n] = o;
        j->type[j->n] = names[i].type;
        j->n++;
        if (setns(t, names[i].type) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "joining the %s namespace %s", names[i].name,
                            ns->path);
    }
    return 0;
}

static void ns_leave(struct ns_join *j)
{
    for (size_t i = 0; i < j->n; i++) {
        if (setns(j->own[i], j->type[i]) < 0)
            oci_log_warn("returning to the supervisor's namespace: %s", strerror(errno));
        close(j->own[i]);
        close(j->target[i]);
    }
    j->n = 0;
}

/* ---- the supervisor's life after create ---- */

struct sup {
    const struct fb_policy *p;
    const struct oci_spec *s;
    struct fb_sandbox sb;
    int lsock;
    int podfds[FB_CTL_MAX_FDS]; /* the pod's relay sockets until it starts */
    size_t npodfds;
    int pending;          /* a start request waiting for STARTED, or -1 */
    bool have_status;
    int wstatus;
    struct fb_result res;
    struct fb_record *rec; /* run.fluebox.record, or NULL */
};

/* The record's last lines: the result, then the signed end. */
static void record_finish(struct sup *u)
{
    if (!u->rec)
        return;
    run_record_result(u->rec, u->p, &u->res);
    struct fb_err e = {0};
    if (run_record_close(fb_steal_ptr(u->rec), u->res.exit_code, &e) < 0)
        oci_log_warn("%s", e.msg);
}

enum { K_PIDFD = 1, K_CTL, K_LISTEN, K_CONN, K_EGRESS, K_TIMER };

static void ep_add(int ep, int fd, uint32_t key)
{
    struct epoll_event ev = {.events = EPOLLIN, .data.u32 = key};
    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
}

static void reply(int fd, const char *text)
{
    if (fd < 0)
        return;
    fb_write_all(fd, text, strlen(text));
    close(fd);
}

/* `fluebox oci exec` tells of a process: "exec {argv, cwd, exec_id}" before
 * it runs, "exec_end {exec_id, exit_code, signal, duration_ms}" once it
 * ended. Recorded as a session's execs are (docs/record.md). 0, or -1 when
 * the request is not one. */
static int record_exec(struct sup *u, const char *verb, const char *body)
{
    json_error_t je;
    json_t *in = json_loads(body, JSON_REJECT_DUPLICATES, &je);
    json_t *id = json_object_get(in, "exec_id");
    if (!json_is_object(in) || !json_is_string(id)) {
        json_decref(in);
        return -1;
    }
    json_t *o;
    if (!strcmp(verb, "exec")) {
        json_t *argv = json_array(), *a = json_object_get(in, "argv"), *v;
        size_t i;
        json_array_foreach(a, i, v) {
            const char *s = json_string_value(v);
            if (s)
                json_array_append_new(argv, json_stringn(s, strnlen(s, FB_RECORD_ARG_MAX)));
        }
        json_t *cwd = json_object_get(in, "cwd");
        o = json_pack("{s:s, s:O, s:o, s:O, s:b}", "event", "exec", "exec_id", id, "argv", argv,
                      "cwd", json_is_string(cwd) ? cwd : json_null(), "detached",
                      json_is_true(json_object_get(in, "detach")));
    } else {
        json_t *code = json_object_get(in, "exit_code"), *sig = json_object_get(in, "signal");
        json_t *ms = json_object_get(in, "duration_ms"), *why = json_object_get(in, "error");
        o = json_pack("{s:s, s:O, s:O, s:O, s:O}", "event", "exec_end", "exec_id", id, "exit_code",
                      json_is_integer(code) ? code : json_null(), "signal",
                      json_is_string(sig) ? sig : json_null(), "duration_ms",
                      json_is_integer(ms) ? ms : json_null());
        if (json_is_string(why))
            json_object_set(o, "error", why);
    }
    json_decref(in);
    record_event(u->rec, o);
    return 0;
}

/* One request line from our own `start` or `exec`, which write at once. */
static ssize_t read_request(int c, char *buf, size_t cap)
{
    size_t got = 0;
    uint64_t until = fb_now_ns() + 5000000000ull;
    while (got < cap - 1 && !memchr(buf, '\n', got)) {
        uint64_t now = fb_now_ns();
        struct pollfd pf = {.fd = c, .events = POLLIN};
        if (now >= until || poll(&pf, 1, (int)((until - now) / 1000000ull) + 1) <= 0)
            return -1;
        ssize_t n = read(c, buf + got, cap - 1 - got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
        got += (size_t)n;
    }
    buf[got] = 0;
    return (ssize_t)got;
}

static void on_conn(struct sup *u, int ep)
{
    int c = accept4(u->lsock, NULL, NULL, SOCK_CLOEXEC);
    if (c < 0)
        return;
    static char buf[16384];
    ssize_t n = read_request(c, buf, sizeof buf);
    if (n <= 0) {
        close(c);
        return;
    }
    buf[strcspn(buf, "\n")] = 0;
    if (!strncmp(buf, "exec ", 5) || !strncmp(buf, "exec_end ", 9)) {
        bool end = buf[4] == '_';
        if (!u->rec)
            reply(c, "ok\n"); /* nothing to record */
        else if (record_exec(u, end ? "exec_end" : "exec", buf + (end ? 9 : 5)) < 0)
            reply(c, "error: a bad exec request\n");
        else
            reply(c, "ok\n");
        return;
    }
    if (strncmp(buf, "start", 5) || u->pending >= 0) {
        reply(c, "error: unexpected request\n");
        return;
    }
    struct fb_msg m = {.type = FB_MSG_OCI_START};
    if (ctl_send(u->sb.ctl, &m, NULL, 0) < 0) {
        reply(c, "error: the container is gone\n");
        return;
    }
    u->pending = c;
    (void)ep;
}

static void on_ctl(struct sup *u, int ep)
{
    struct fb_msg m;
    int r = ctl_recv(u->sb.ctl, &m, NULL, NULL);
    if (r <= 0) {
        epoll_ctl(ep, EPOLL_CTL_DEL, u->sb.ctl, NULL);
        return;
    }
    if (m.type == FB_MSG_OCI_STARTED) {
        if (m.code == 0) {
            run_record_exec(u->rec, u->p);
            reply(u->pending, "ok\n");
        } else {
            char buf[600];
            snprintf(buf, sizeof buf, "error: %s\n", m.text);
            reply(u->pending, buf);
            snprintf(u->res.error, sizeof u->res.error, "%s", m.text);
        }
        u->pending = -1;
    } else if (m.type == FB_MSG_EXIT) {
        u->have_status = true;
        u->wstatus = m.status;
    }
}

static void finish(struct sup *u)
{
    struct fb_result *res = &u->res;
    struct fb_msg m;
    while (!u->have_status && ctl_recv_nonblock(u->sb.ctl, &m) == 1)
        if (m.type == FB_MSG_EXIT) {
            u->have_status = true;
            u->wstatus = m.status;
        }
    reply(u->pending, "error: the container exited before its process started\n");
    u->pending = -1;
    res->wall_ms = (int64_t)((fb_now_ns() - u->sb.start_ns) / 1000000ull);
    report_take_cgroup(res, u->sb.cg);
    /* init is not our child (the shim's): no rusage of it reaches us. The
     * container's cgroup has the CPU time of every process it had, exec's
     * too; the largest process's resident size has no such source. */
    res->user_ms = res->cg.cpu_user_us < 0 ? -1 : res->cg.cpu_user_us / 1000;
    res->sys_ms = res->cg.cpu_system_us < 0 ? -1 : res->cg.cpu_system_us / 1000;
    res->max_rss_kb = -1;
    res->disk_used = sandbox_disk_used(&u->sb);
    res->oom_killed = res->cg.oom_killed;
    if (u->sb.egress) {
        res->has_net = true;
        egress_summary(u->sb.egress, &res->net);
    }
    if (res->timed_out) {
        res->exit_code = FB_EXIT_TIMEOUT;
        res->signal = SIGKILL;
    } else if (u->have_status && WIFEXITED(u->wstatus)) {
        res->status_code = WEXITSTATUS(u->wstatus);
        res->exit_code = res->status_code;
    } else if (u->have_status && WIFSIGNALED(u->wstatus)) {
        res->signal = WTERMSIG(u->wstatus);
        res->exit_code = 128 + res->signal;
    } else {
        res->signal = SIGKILL; /* init was killed (kill, delete --force) */
        res->exit_code = 128 + SIGKILL;
    }
    if (res->oom_killed && res->signal == SIGKILL)
        res->exit_code = FB_EXIT_OOM;
    if (u->p->report) {
        struct fb_err rerr = {0};
        if (report_write(u->p->report, u->p, res, &rerr) < 0)
            oci_log_warn("%s", rerr.msg);
    }
    record_finish(u);
}

/* The range of host ids is claimed until the container's last process is
 * gone. In a pid namespace of its own that is init's end (the kernel kills
 * the rest with it); in a joined one (a pod's), the processes exec started
 * may outlive init until the shim's kill --all or delete: wait for its
 * cgroup to be empty (polled: cgroup v1 has no notification of it). */
static void hold_until_empty(struct sup *u)
{
    const struct oci_ns *n = oci_spec_ns(u->s, CLONE_NEWPID);
    if (!u->sb.cg || !n || !n->path)
        return;
    for (;;) {
        pid_t *pids = NULL;
        size_t np = 0;
        int rc = cgroup_procs(u->sb.cg, &pids, &np);
        free(pids);
        if (rc < 0 || np == 0)
            return;
        struct timespec ts = {0, 200 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

__attribute__((noreturn)) static void serve(struct sup *u)
{
    int ep = epoll_create1(EPOLL_CLOEXEC);
    if (ep < 0)
        _exit(1);
    ep_add(ep, u->sb.pidfd, K_PIDFD);
    ep_add(ep, u->sb.ctl, K_CTL);
    ep_add(ep, u->lsock, K_LISTEN);
    if (u->sb.egress)
        ep_add(ep, egress_fd(u->sb.egress), K_EGRESS);
    int tfd = -1;
    if (u->p->limits.timeout_ms > 0) {
        tfd = timerfd_create(CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK);
        struct itimerspec its = {.it_value = {(time_t)(u->p->limits.timeout_ms / 1000),
                                              (long)(u->p->limits.timeout_ms % 1000) * 1000000L}};
        if (tfd >= 0 && timerfd_settime(tfd, 0, &its, NULL) == 0)
            ep_add(ep, tfd, K_TIMER);
    }
    for (bool gone = false; !gone;) {
        struct epoll_event evs[8];
        int n = epoll_wait(ep, evs, 8, -1);
        if (n < 0 && errno != EINTR)
            break;
        for (int i = 0; i < n; i++) {
            switch (evs[i].data.u32) {
            case K_PIDFD:
                gone = true;
                break;
            case K_CTL:
                on_ctl(u, ep);
                break;
            case K_LISTEN:
                on_conn(u, ep);
                break;
            case K_EGRESS:
                egress_dispatch(u->sb.egress);
                break;
            case K_TIMER:
                u->res.timed_out = true;
                run_record_limit(u->rec, "timeout", "run.fluebox.timeout expired: the container "
                                 "is killed");
                if (u->sb.cg)
                    cgroup_signal_all(u->sb.cg, SIGKILL);
                sandbox_kill(&u->sb);
                epoll_ctl(ep, EPOLL_CTL_DEL, tfd, NULL);
                break;
            }
        }
    }
    finish(u);
    hold_until_empty(u);
    /* The cgroup stays for delete (the shim reads it until then). */
    cgroup_close(fb_steal_ptr(u->sb.cg));
    /* Releases the host id range too: nothing runs as its ids any more. */
    sandbox_release(&u->sb);
    _exit(0);
}

/* ---- create ---- */

struct create {
    const struct oci_create_args *a;
    struct oci_spec s;
    struct fb_policy p;
    struct oci_state st;
    struct fb_ids ids; /* the host ids: a range of the container's own
                          (claimed by create, held by the supervisor),
                          or the spec's mappings (nothing claimed) */
    char *uid_map, *gid_map;
    int spec_filter;
    int console;     /* connected --console-socket, or -1 */
    int result;      /* the pipe to P */
};

/* Before Linux 6.6 the root's upper layer is an ext4 of the disk budget's
 * size, made here (oci_upper.c); its root belongs to the container's root. */
static int disk_upper(struct create *cr, struct oci_child *c, struct fb_err *err)
{
    if (!oci_upper_on_disk())
        return 0;
    uid_t uid = cr->ids.range_uid;
    gid_t gid = cr->ids.range_gid;
    for (size_t i = 0; i < cr->s.nuidmap; i++)
        if (cr->s.uidmap[i].inside == 0)
            uid = cr->s.uidmap[i].host;
    for (size_t i = 0; i < cr->s.ngidmap; i++)
        if (cr->s.gidmap[i].inside == 0)
            gid = cr->s.gidmap[i].host;
    c->upper_fd = oci_upper_disk(cr->p.limits.disk, uid, gid, err);
    return c->upper_fd < 0 ? -1 : 0;
}

/* The child's requests during the spawn: the bind sources, in order. */
static int on_child_msg(void *arg, int ctl, const struct fb_msg *m, int *fds, size_t nfds,
                        struct fb_err *err)
{
    struct oci_child *c = arg;
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (m->type != FB_MSG_OCI_BIND || m->code < 0 || (size_t)m->code >= c->spec->nmounts ||
        (!c->spec->mounts[m->code].bind && strcmp(c->spec->mounts[m->code].type, "proc")))
        return fb_errf(err, FB_EXIT_SETUP, "unexpected message %u from the container", m->type);
    int fd = oci_mount_source(c->spec, c->idmap_ns, (size_t)m->code, err);
    if (fd < 0)
        return -1;
    struct fb_msg r = {.type = FB_MSG_OCI_BIND, .code = m->code};
    int rc = ctl_send(ctl, &r, &fd, 1);
    close(fd);
    if (rc < 0)
        return fb_errno(err, FB_EXIT_SETUP, "passing a bind source to the container");
    return 0;
}

/* The pod's sandbox container (oci_podnet.c): the relay on the sockets it
 * made in the pod's namespace, served from the host's (the supervisor's
 * again); the state says it owns the pod's network. */
static int pod_relay_start(struct create *cr, struct sup *u, struct fb_err *err)
{
    if (oci_podnet_role(&cr->s) != OCI_PODNET_OWNER)
        return 0;
    egress_free(fb_steal_ptr(u->sb.egress));
    size_t n = u->npodfds;
    u->npodfds = 0; /* egress_start takes them, whatever its outcome */
    if (egress_start(&cr->p, u->podfds, n, &u->sb.egress, err) < 0)
        return -1;
    json_object_set_new(cr->st.json, "pod_network", json_true());
    return 0;
}

static int start_sandbox(struct create *cr, struct sup *u, struct oci_child *child,
                         struct fb_err *err)
{
    const struct oci_spec *s = &cr->s;
    memset(child, 0, sizeof *child);
    child->idmap_ns = -1;
    child->upper_fd = -1;
    child->spec = s;
    child->spec_filter = cr->spec_filter;
    child->terminal = s->proc.terminal;
    child->preserve_fds = cr->a->preserve_fds;
    if (oci_mount_prepare(s, cr->uid_map, cr->gid_map, child, err) < 0 ||
        disk_upper(cr, child, err) < 0) {
        oci_mount_release(s, child);
        return -1;
    }
    const char *cgpath = s->cgroups_path;
    cleanup_free char *dflt = NULL;
    if (!cgpath)
        cgpath = dflt = fb_xstrdup(cr->a->id); /* runc's default: below its own cgroup */
    struct fb_cgroup *cg = NULL;
    if (cgroup_create_at(&cr->p, cgpath, &cg, err) < 0)
        return -1;
    if (oci_resources_apply(cg, s->resources, err) < 0) {
        cgroup_destroy(cg);
        return -1;
    }
    cr->st.cgroup = fb_xstrdup(cgpath);
    const char *tops[16];
    size_t nt = cgroup_tops(cg, tops, 16);
    json_t *jt = json_array();
    for (size_t i = 0; i < nt; i++)
        json_array_append_new(jt, json_string(tops[i]));
    json_object_set_new(cr->st.json, "cgroup_tops", jt);

    int keep[FB_ARRAY_LEN(child->lower_fds) + 2 + OCI_PRESERVE_MAX];
    size_t nk = 0;
    /* --preserve-fds: the caller's 3..3+N-1, at the same numbers (nothing
     * of ours took them: they were open when create started). */
    for (int i = 0; i < child->preserve_fds && i < OCI_PRESERVE_MAX; i++)
        keep[nk++] = 3 + i;
    for (size_t i = 0; i < child->nlower; i++)
        keep[nk++] = child->lower_fds[i];
    if (child->upper_fd >= 0)
        keep[nk++] = child->upper_fd;
    if (child->spec_filter >= 0)
        keep[nk++] = child->spec_filter;
    struct fb_spawn_ext x = {
        .clone_flags = CLONE_PARENT,
        .no_pdeathsig = true,
        .uid_map = cr->uid_map,
        .gid_map = cr->gid_map,
        .keep_fds = keep,
        .nkeep = nk,
        .cg = cg,
        .ids = &cr->ids,
        .child = oci_init_main,
        .arg = child,
        .on_msg = on_child_msg,
    };
    struct ns_join nj;
    int netfds[FB_CTL_MAX_FDS];
    size_t nnet = 0;
    bool owner = oci_podnet_role(s) == OCI_PODNET_OWNER;
    int rc = ns_enter(s, &cr->p, &nj, err);
    /* The pod's sandbox container takes the pod's network namespace
     * (oci_podnet.c): in it, as host root, before the clone. */
    if (rc == 0 && owner)
        rc = net_setup_pod(&cr->p, netfds, &nnet, err);
    /* The relay starts below, with the sockets: spawn starts none for the
     * net log alone meanwhile (its log would open and end once more). */
    char *net_log = owner ? fb_steal_ptr(cr->p.net_log) : NULL;
    if (rc == 0)
        rc = sandbox_spawn_ext(&cr->p, &x, &u->sb, err);
    else
        cgroup_destroy(cg);
    if (owner)
        cr->p.net_log = net_log;
    ns_leave(&nj);
    oci_mount_release(s, child);
    if (rc == 0 && owner) { /* the relay starts once the container is up (supervisor) */
        memcpy(u->podfds, netfds, nnet * sizeof *netfds);
        u->npodfds = nnet;
        nnet = 0;
    }
    for (size_t i = 0; i < nnet; i++)
        close(netfds[i]);
    if (rc < 0) {
        free(cr->st.cgroup);
        cr->st.cgroup = NULL;
    }
    return rc;
}

static int after_ready(struct create *cr, struct sup *u, struct fb_err *err)
{
    pid_t pid = u->sb.pid;
    /* prlimit() on another user's process needs CAP_SYS_RESOURCE in its
     * user namespace, which host root may lack (a bounding set without
     * it); the namespace's owner, the range's first id, has every
     * capability there (userns.h). Raising a hard limit still needs
     * CAP_SYS_RESOURCE on the host. */
    struct fb_creator owner;
    if (userns_creator_enter(&u->sb.ids, &owner, err) < 0)
        return -1;
    int rc = set_rlimits(pid, &cr->p, &cr->s.proc, err);
    userns_creator_leave(&owner);
    if (rc < 0)
        return -1;
    if (cr->s.proc.has_oom_score) {
        char path[64], v[16];
        snprintf(path, sizeof path, "/proc/%d/oom_score_adj", (int)pid);
        snprintf(v, sizeof v, "%d", cr->s.proc.oom_score);
        if (fb_write_file(path, v) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "process.oomScoreAdj");
    }
    if (cr->s.proc.terminal) {
        struct fb_msg m;
        int fd = -1;
        size_t nfd = 1;
        if (ctl_recv(u->sb.ctl, &m, &fd, &nfd) <= 0 || m.type != FB_MSG_OCI_PTY || nfd != 1)
            return fb_errf(err, FB_EXIT_SETUP, "process.terminal: no terminal from the container");
        /* The shim (go-runc's console socket) takes one message: a name
         * and the master. */
        rc = ctl_sendmsg(cr->console, "/dev/ptmx", 9, &fd, 1, 0);
        close(fd);
        if (rc < 0)
            return fb_errno(err, FB_EXIT_SETUP, "sending the terminal over --console-socket");
    }
    /* The state as the hooks (and every later command) see it. */
    cr->st.pid = pid;
    cr->st.pid_start = oci_pid_start(pid);
    cr->st.sup = getpid();
    cr->st.sup_start = oci_pid_start(getpid());
    if (oci_state_save(&cr->st, err) < 0)
        return -1;
    json_t *state = oci_state_json(&cr->st, OCI_CREATED);
    rc = oci_hooks_run(&cr->s, OCI_HOOK_PRESTART, state, err);
    if (rc == 0)
        rc = oci_hooks_run(&cr->s, OCI_HOOK_CREATE_RUNTIME, state, err);
    json_decref(state);
    return rc;
}

/* create failed after the record was opened: it says so, and ends. */
static void record_failed(struct sup *u, const struct fb_err *err)
{
    u->res.setup_failed = true;
    u->res.exit_code = FB_EXIT_SETUP;
    snprintf(u->res.error, sizeof u->res.error, "%s", err->msg);
    record_finish(u);
}

__attribute__((noreturn)) static void supervisor(struct create *cr)
{
    struct fb_err err = {0};
    struct sup u;
    memset(&u, 0, sizeof u);
    u.p = &cr->p;
    u.s = &cr->s;
    u.lsock = -1;
    u.pending = -1;
    u.res.status_code = -1;
    u.res.seccomp_denials = -1;
    report_take_cgroup(&u.res, NULL);
    setsid();
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGPIPE);
    sigprocmask(SIG_BLOCK, &set, NULL);

    /* First: a record that cannot be made fails create before anything of
     * the container exists. */
    if (run_record_open(&cr->p, &u.rec, &err) < 0) {
        send_result(cr->result, 0, 0, &err);
        _exit(1);
    }
    struct oci_child child;
    int rc = start_sandbox(cr, &u, &child, &err);
    if (rc == 0 && pod_relay_start(cr, &u, &err) < 0)
        goto fail_kill;
    if (cr->spec_filter >= 0) /* the container has its copy */
        close(fb_steal_fd(cr->spec_filter));
    /* So have the preserved descriptors: a pipe's reader sees its end when
     * the container's process closes it, not when the supervisor goes. */
    if (cr->a->preserve_fds > 0)
        syscall(SYS_close_range, 3U, 3U + (unsigned)cr->a->preserve_fds - 1, 0U);
    if (rc < 0)
        goto fail;
    if (after_ready(cr, &u, &err) < 0)
        goto fail_kill;
    egress_set_record(u.sb.egress, u.rec);
    u.lsock = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    sock_addr(cr->st.dirfd, "sup.sock", &a);
    if (u.lsock < 0 || bind(u.lsock, (struct sockaddr *)&a, sizeof a) < 0 ||
        listen(u.lsock, 8) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "the supervisor's socket");
        goto fail_kill;
    }
    send_result(cr->result, 1, u.sb.pid, NULL);
    close(cr->result);
    /* Detach: the container has its own stdio now; the lock on the state
     * directory goes with this copy of its descriptor. */
    oci_state_close(&cr->st);
    if (cr->console >= 0)
        close(cr->console);
    int null = open("/dev/null", O_RDWR | O_CLOEXEC);
    for (int fd = 0; fd < 3 && null >= 0; fd++)
        dup3(null, fd, 0);
    if (null > 2)
        close(null);
    /* Only now: the title overwrites argv, where the arguments lived. */
    fb_proctitle_set("fluebox-oci-supervisor");
    serve(&u);

fail_kill:
    /* P reaps init (its child) while we remove the cgroup, which cannot go
     * before init is reaped. */
    sandbox_kill(&u.sb);
    send_result(cr->result, 0, 0, &err);
    cgroup_destroy(fb_steal_ptr(u.sb.cg));
    sandbox_release(&u.sb);
    record_failed(&u, &err);
    _exit(1);
fail:
    send_result(cr->result, 0, 0, &err);
    record_failed(&u, &err);
    _exit(1);
}

/* Read S's result; meanwhile reap init (or S) if it dies. *reaped: the
 * last pid reaped here. */
static ssize_t wait_result(int fd, const sigset_t *chld, struct result *r, pid_t *reaped)
{
    int sfd = signalfd(-1, chld, SFD_CLOEXEC | SFD_NONBLOCK);
    size_t got = 0;
    while (got < sizeof *r) {
        struct pollfd pf[2] = {{.fd = fd, .events = POLLIN}, {.fd = sfd, .events = POLLIN}};
        if (poll(pf, sfd >= 0 ? 2 : 1, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (sfd >= 0 && pf[1].revents) {
            struct signalfd_siginfo si;
            while (read(sfd, &si, sizeof si) > 0)
                ;
            pid_t w;
            while ((w = waitpid(-1, NULL, WNOHANG)) > 0)
                *reaped = w;
        }
        if (pf[0].revents) {
            ssize_t n = read(fd, (char *)r + got, sizeof *r - got);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0)
                break;
            got += (size_t)n;
        }
    }
    if (sfd >= 0)
        close(sfd);
    return (ssize_t)got;
}

static int write_pid_file(const char *path, pid_t pid, struct fb_err *err)
{
    cleanup_free char *tmp = fb_xasprintf("%s.tmp%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--pid-file %s", path);
    char buf[32];
    int n = snprintf(buf, sizeof buf, "%d", (int)pid);
    int rc = fb_write_all(fd, buf, (size_t)n);
    if (close(fd) < 0)
        rc = -1;
    if (rc < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "--pid-file %s", path);
    }
    return 0;
}

static int console_connect(const char *path, struct fb_err *err)
{
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path) {
        if (fd >= 0)
            close(fd);
        return fb_errf(err, FB_EXIT_SETUP, "--console-socket %s: path too long", path);
    }
    memcpy(a.sun_path, path, strlen(path));
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "--console-socket %s", path);
    }
    return fd;
}

/* The container's host ids. Without mappings in the spec, a range of
 * 65,536 of its own from the allocator that `fluebox run` uses (idrange.h;
 * run.fluebox.host-id pins it): claimed here, inherited by the supervisor,
 * which keeps the claim until the container's last process is gone (or it
 * dies itself, and init with it), and created by a thread running as its
 * first id, so that per-user kernel counters are the container's own. With
 * the spec's own mappings (Kubernetes user namespaces: the kubelet chooses
 * them, and a pod's containers share them) nothing is claimed. */
static int host_ids(struct create *cr, struct fb_err *err)
{
    if (cr->s.nuidmap || cr->s.ngidmap) {
        userns_plain_ids(&cr->p, &cr->ids);
        return 0;
    }
    return userns_host_ids(&cr->p, &cr->ids, err);
}

int oci_create(const struct oci_create_args *a)
{
    struct create cr;
    memset(&cr, 0, sizeof cr);
    cr.a = a;
    cr.spec_filter = -1;
    cr.console = -1;
    cr.result = -1;
    policy_init(&cr.p);
    struct fb_err err = {0};
    int code = 1;
    bool have_state = false;
    cleanup_free char *cfg = NULL;
    idrange_init(&cr.ids.claim);
    if (oci_id_check(a->id, &err) < 0 ||
        oci_spec_load(a->bundle ? a->bundle : ".", NULL, &cr.s, &err) < 0 ||
        oci_policy(&cr.s, &cr.p, false, &err) < 0 || oci_caps_check(&cr.s.proc, &err) < 0 ||
        (oci_podnet_role(&cr.s) == OCI_PODNET_MEMBER &&
         oci_podnet_member_check(a->root, &cr.s, &err) < 0) ||
        host_ids(&cr, &err) < 0 ||
        oci_id_maps(&cr.s, cr.ids.range_uid, &cr.uid_map, &cr.gid_map, &err) < 0)
        goto out;
    for (int k = OCI_HOOK_CREATE_CONTAINER; k <= OCI_HOOK_START_CONTAINER; k++)
        if (cr.s.nhooks[k]) {
            fb_errf(&err, FB_EXIT_SETUP, "hooks.%s: not supported by fluebox oci",
                    k == OCI_HOOK_CREATE_CONTAINER ? "createContainer" : "startContainer");
            goto out;
        }
    if (cr.s.proc.terminal && !a->console_socket) {
        fb_errf(&err, FB_EXIT_SETUP, "process.terminal is set but no --console-socket was given");
        goto out;
    }
    if (!cr.s.proc.terminal && a->console_socket) {
        fb_errf(&err, FB_EXIT_SETUP, "--console-socket given but process.terminal is not set");
        goto out;
    }
    cr.spec_filter = oci_seccomp_filter(cr.s.seccomp, &err);
    if (cr.spec_filter == -1)
        goto out;
    if (cr.spec_filter == -2)
        cr.spec_filter = -1;
    if (a->console_socket && (cr.console = console_connect(a->console_socket, &err)) < 0)
        goto out;
    if (oci_state_create(a->root, a->id, &cr.st, &err) < 0)
        goto out;
    have_state = true;
    cr.st.bundle = fb_xstrdup(cr.s.bundle);
    char created[64];
    now_rfc3339(created, sizeof created);
    json_object_set_new(cr.st.json, "created", json_string(created));
    if (json_is_object(cr.s.annotations))
        json_object_set(cr.st.json, "annotations", cr.s.annotations);
    cfg = fb_xasprintf("%s/config.json", cr.st.dir);
    if (json_dump_file(cr.s.json, cfg, JSON_COMPACT) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "saving the config in %s", cr.st.dir);
        goto out;
    }
    if (oci_state_save(&cr.st, &err) < 0)
        goto out;
    int pfd[2];
    if (pipe2(pfd, O_CLOEXEC) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "pipe");
        goto out;
    }
    /* SIGCHLD is watched while S works: if init dies during set-up, it is
     * ours to reap (S cannot remove the cgroup before that). */
    sigset_t chld, old;
    sigemptyset(&chld);
    sigaddset(&chld, SIGCHLD);
    sigprocmask(SIG_BLOCK, &chld, &old);
    fflush(NULL);
    pid_t sup = fork();
    if (sup < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "fork");
        close(pfd[0]);
        close(pfd[1]);
        goto out;
    }
    if (sup == 0) {
        sigprocmask(SIG_SETMASK, &old, NULL);
        close(pfd[0]);
        cr.result = pfd[1];
        supervisor(&cr);
    }
    close(pfd[1]);
    struct result r;
    pid_t reaped = 0;
    ssize_t n = wait_result(pfd[0], &chld, &r, &reaped);
    close(pfd[0]);
    if (n != (ssize_t)sizeof r) {
        fb_errf(&err, FB_EXIT_SETUP, "the supervisor died while creating the container");
        r.ok = 0;
    } else if (!r.ok) {
        err.code = r.code;
        snprintf(err.msg, sizeof err.msg, "%s", r.msg);
    }
    if (r.ok && reaped == r.pid) {
        fb_errf(&err, FB_EXIT_SETUP, "the container's init died during create");
        r.ok = 0;
    }
    if (!r.ok) {
        /* S and, if it got that far, init are our children: reap them. */
        while (waitpid(-1, NULL, 0) > 0 || errno == EINTR)
            ;
        goto out;
    }
    if (a->pid_file && write_pid_file(a->pid_file, r.pid, &err) < 0) {
        kill(r.pid, SIGKILL);
        goto out;
    }
    code = 0;
out:
    if (code) {
        oci_log_error("%s", err.msg);
        if (have_state)
            oci_state_remove(&cr.st);
    } else {
        oci_state_close(&cr.st);
    }
    if (cr.console >= 0)
        close(cr.console);
    if (cr.spec_filter >= 0)
        close(cr.spec_filter);
    /* This process's copy of the claim: the supervisor has its own. */
    userns_release_ids(&cr.ids);
    free(cr.uid_map);
    free(cr.gid_map);
    oci_spec_free(&cr.s);
    policy_free(&cr.p);
    return code;
}

/* ---- start ---- */

int oci_start(const char *root, const char *id)
{
    struct fb_err err = {0};
    struct oci_state st;
    if (oci_state_open(root, id, &st, &err) < 0) {
        oci_log_error("%s", err.msg);
        return 1;
    }
    int code = 1;
    cleanup_free char *cfg = NULL;
    enum oci_status status = oci_state_status(&st);
    if (status != OCI_CREATED) {
        oci_log_error("cannot start a container that is %s", oci_status_name(status));
        goto out;
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    struct sockaddr_un a;
    sock_addr(st.dirfd, "sup.sock", &a);
    if (fd < 0 || connect(fd, (struct sockaddr *)&a, sizeof a) < 0) {
        oci_log_error("cannot start %s: its supervisor is gone (%s)", id, strerror(errno));
        if (fd >= 0)
            close(fd);
        goto out;
    }
    char buf[600];
    ssize_t n = -1;
    if (fb_write_all(fd, "start\n", 6) == 0)
        n = fb_read_full(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0) {
        oci_log_error("cannot start %s: no answer from its supervisor", id);
        goto out;
    }
    buf[n] = 0;
    buf[strcspn(buf, "\n")] = 0;
    if (strcmp(buf, "ok")) {
        oci_log_error("%s", strncmp(buf, "error: ", 7) ? buf : buf + 7);
        goto out;
    }
    st.started = true;
    if (oci_state_save(&st, &err) < 0) {
        oci_log_error("%s", err.msg);
        goto out;
    }
    code = 0;
    /* poststart hooks: from the config create saved; a failure only warns. */
    struct oci_spec s;
    cfg = fb_xasprintf("%s/config.json", st.dir);
    if (oci_spec_load(st.bundle ? st.bundle : "/", cfg, &s, &err) == 0) {
        json_t *state = oci_state_json(&st, OCI_RUNNING);
        oci_hooks_run(&s, OCI_HOOK_POSTSTART, state, &err);
        json_decref(state);
    }
    oci_spec_free(&s);
out:
    oci_state_close(&st);
    return code;
}
