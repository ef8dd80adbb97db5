/* spawn.c — clone3 into new namespaces and the parent/child handshake.
 *
 * Parent (supervisor)                    Child (becomes the sandbox's pid 1)
 *   host ids (root: claim a range)
 *   v2: cgroup_create (cloned into it)
 *   root: idmapped binds, mount_prepare
 *    (clone bind sources, as root)
 *   clone3(NEWUSER|NEWPID|NEWNS|...)        PR_SET_PDEATHSIG(SIGKILL)
 *    root: as the range's first id, so      rootless: mount_prepare
 *    the namespace is charged to it         sethostname, net_setup_child
 *   write uid_map / gid_map                  (none: DNS; allow: DNS +
 *    (rootless: newuidmap/newgidmap)          listeners; no ids needed)
 *   egress_start <------- NETFDS ---------  (sent now, read later)
 *   cgroup_attach (v2 without clone-into)   ... waits for GO
 *   send GO ------------------------------> setgroups/setresgid/setresuid to
 *   v1: cgroup_create, limits                the inside ids, keeping the
 *   CGROUP ("tasks" files) --------------->  capabilities in the namespace
 *   (seccomp filters: built in, or a        mount_build: new root, the
 *    helper compiling since the start)       namespace's limits, pivot_root
 *   SECCOMP_PROG (memfds) ---------------->  v1: join the cgroup ("0" into
 *                                            "tasks"), rlimit fallbacks,
 *                                            the cgroup namespace
 *                                           init_main: drop caps, load the
 *                                            seccomp filters received
 *   wait READY <--------- READY ----------  fork the command / serve session
 *
 * The child sets up its network while the supervisor writes the id maps,
 * and a v1 cgroup is made while the child builds its root: on two CPUs
 * neither waits for the other. (A v2 cgroup must exist before the clone:
 * moving a process into one afterwards takes a global lock; see cgroup.h.)
 *
 * Bind sources are opened with fluebox's own ids so host permissions are
 * checked against them (as root by the supervisor: the child is born as
 * the sandbox's host id), and the child changes ids before building the
 * root so every file it creates there belongs to the inside user. */
#include "spawn.h"

#include "cow_mount.h"
#include "ctl.h"
#include "harden.h"
#include "init.h"
#include "mount.h"
#include "netns.h"
#include "seccomp.h"

#include <fcntl.h>
#include <limits.h>
#include <grp.h>
#include <linux/sched.h>
#include <linux/securebits.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

static unsigned long ns_flags(const struct fb_policy *p)
{
    unsigned long f = CLONE_NEWUSER | CLONE_NEWNS;
    if (p->namespaces & FB_NS_PID)
        f |= CLONE_NEWPID;
    if (p->namespaces & FB_NS_NET)
        f |= CLONE_NEWNET;
    if (p->namespaces & FB_NS_IPC)
        f |= CLONE_NEWIPC;
    if (p->namespaces & FB_NS_UTS)
        f |= CLONE_NEWUTS;
    /* Not CLONE_NEWCGROUP: the child makes its cgroup namespace once it is
     * in the sandbox's cgroup, which may be after the clone. */
    return f;
}

__attribute__((noreturn)) static void child_fail(int ctl, struct fb_err *err)
{
    ctl_sendf(ctl, FB_MSG_ERR, err->code ? err->code : FB_EXIT_SETUP, "%s", err->msg);
    _exit(FB_EXIT_SETUP);
}

/* Close every descriptor above 2 except ctl, the prepared mount trees,
 * what an FB_MODE_EXT caller keeps and a session's image (spawn.h; it is
 * close-on-exec, so nothing of the sandbox ever holds it). */
static void close_inherited(int ctl, const struct fb_layout *layout, const struct fb_spawn_ext *x,
                            const struct fb_session_hooks *h)
{
    size_t nx = x ? x->nkeep : 0;
    size_t cap = 2 + mount_layout_nfds(layout) + nx;
    cleanup_free int *keep = fb_xmalloc(cap * sizeof *keep);
    size_t n = 0;
    keep[n++] = ctl;
    if (h && h->image_fd > 2)
        keep[n++] = h->image_fd;
    n += mount_layout_fds(layout, keep + n, cap - n);
    for (size_t i = 0; i < nx; i++)
        if (x->keep_fds[i] >= 0)
            keep[n++] = x->keep_fds[i];
    fb_close_except(keep, n);
}

/* In a session's init: copies of the network's listening sockets, which
 * init watches while the server holds none of them (egress_park). */
static int kept_net[FB_CTL_MAX_FDS];
static size_t nkept_net;

size_t sandbox_session_netfds(const int **fds)
{
    *fds = kept_net;
    return nkept_net;
}

/* The network (loopback, the resolver's and the allowlist's sockets, passed
 * to the supervisor) and the hostname: nothing here needs the id maps, so
 * it is done while the supervisor writes them. A session's init keeps its
 * own descriptors of the sockets (close-on-exec, as all of them). */
static void child_net(const struct fb_policy *p, enum fb_mode mode, int ctl)
{
    struct fb_err err = {0};
    if ((p->namespaces & FB_NS_UTS) && sethostname(p->hostname, strlen(p->hostname)) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "sethostname");
        child_fail(ctl, &err);
    }
    if (!(p->namespaces & FB_NS_NET))
        return;
    int fds[FB_CTL_MAX_FDS];
    size_t nfds = 0;
    if (net_setup_child(p, fds, &nfds, &err) < 0)
        child_fail(ctl, &err);
    if (nfds) {
        struct fb_msg nm = {.type = FB_MSG_NETFDS};
        if (ctl_send(ctl, &nm, fds, nfds) < 0) {
            fb_errno(&err, FB_EXIT_SETUP, "passing network sockets");
            child_fail(ctl, &err);
        }
    }
    if (mode == FB_MODE_SESSION) {
        memcpy(kept_net, fds, nfds * sizeof *fds);
        nkept_net = nfds;
        return;
    }
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
}

/* A cgroup made after the clone (cgroup_attach_late): join it, set the
 * rlimits that stand in for what it could not apply, then make the cgroup
 * namespace. Before init runs anything. */
static void child_join_late(const struct fb_policy *p, int ctl, bool *nproc_fallback)
{
    struct fb_err err = {0};
    struct fb_msg m;
    int fds[8];
    size_t nfds = FB_ARRAY_LEN(fds);
    int r = ctl_recv(ctl, &m, fds, &nfds);
    if (r <= 0 || m.type != FB_MSG_CGROUP)
        _exit(FB_EXIT_SETUP);
    int rc = cgroup_join_fds(fds, nfds, &err);
    for (size_t i = 0; i < nfds; i++)
        close(fds[i]);
    if (rc < 0 || harden_fallback_rlimits(m.code, m.arg, &err) < 0)
        child_fail(ctl, &err);
    *nproc_fallback = m.status != 0;
    if ((p->namespaces & FB_NS_CGROUP) && unshare(CLONE_NEWCGROUP) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "new cgroup namespace");
        child_fail(ctl, &err);
    }
}

/* In a session's init: its scratch space's descriptor (child_main). */
static int kept_scratch = -1;

int sandbox_session_scratch(void)
{
    return kept_scratch;
}

__attribute__((noreturn)) static void child_main(const struct fb_policy *p, enum fb_mode mode,
                                                 int ctl, struct fb_layout *layout,
                                                 const struct fb_ids *ids, bool nproc_fallback,
                                                 const struct fb_cgroup *cg, bool late_cg,
                                                 const struct fb_spawn_ext *x,
                                                 const struct fb_session_hooks *h)
{
    struct fb_err err = {0};
    /* Join the run's v1 cgroups first, so that the set-up is charged there
     * (moving itself is cheap, see cgroup.h; the kernel checks the
     * credentials that opened the file, the supervisor's); a failure is
     * reported after GO. */
    struct fb_err cg_err = {0};
    int cg_rc = cg ? cgroup_join_self(cg, &cg_err) : 0;
    /* Everything else the supervisor had open came along with the clone:
     * directory fds of the host's cgroup hierarchies, and in the server other
     * sessions' sockets and pipes. None belongs in a sandbox (a directory fd
     * of the host is a way out of any mount namespace), so only the control
     * socket and the prepared mounts stay. */
    close_inherited(ctl, layout, x, h);
    fb_proctitle_set(mode == FB_MODE_SESSION ? "fluebox-session-init" : "fluebox-init");
    /* If the supervisor dies, so does the sandbox (init's death empties the
     * pid namespace). Set again after the id change below, which clears it.
     * An FB_MODE_EXT init may outlive its parent; it watches ctl instead. */
    bool pdeath = !(x && x->no_pdeathsig);
    if (pdeath)
        prctl(PR_SET_PDEATHSIG, SIGKILL);

    /* Rootless, the bind sources are opened here, with the caller's ids
     * (as root the supervisor did it: this process runs as the sandbox's
     * host id, which cannot reach what root can). Rootless, pre is empty
     * (idmapped mounts need root). An FB_MODE_EXT caller builds its own. */
    if (!x && !layout && mount_prepare(p, NULL, &layout, &err) < 0)
        child_fail(ctl, &err);
    child_net(p, mode, ctl);

    struct fb_msg m;
    int gofd = -1;
    size_t ngofd = 1;
    int r = ctl_recv(ctl, &m, &gofd, &ngofd);
    if (r <= 0 || m.type != FB_MSG_GO)
        _exit(FB_EXIT_SETUP);
    /* GO may carry the per-run CA's certificate (spawn_go). */
    if (ngofd == 1 && gofd >= 0) {
        if (layout)
            mount_layout_set_ca(layout, gofd, (unsigned long)strtoul(m.text, NULL, 16));
        else
            close(gofd);
    }
    if (cg_rc < 0)
        child_fail(ctl, &cg_err);
    if (harden_fallback_rlimits(m.code, m.arg, &err) < 0)
        child_fail(ctl, &err);
    /* In the cgroup now (or in none): root the cgroup namespace there, so
     * /proc/self/cgroup shows "/" and not the host's cgroup paths. A cgroup
     * made after the clone is joined later (child_join_late). */
    if (!late_cg && (p->namespaces & FB_NS_CGROUP) && unshare(CLONE_NEWCGROUP) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "new cgroup namespace");
        child_fail(ctl, &err);
    }

    if (ids->root && fb_drop_groups_raw() < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "dropping supplementary groups");
        child_fail(ctl, &err);
    }
    /* As root we are the namespace's owner, its inside root: becoming the
     * inside user would clear our capabilities in it, which building the
     * root still needs. No set-uid fix-up for that one change (init drops
     * every capability later anyway). */
    int bits = prctl(PR_GET_SECUREBITS, 0, 0, 0, 0);
    if (bits < 0 || prctl(PR_SET_SECUREBITS, bits | SECBIT_NO_SETUID_FIXUP, 0, 0, 0) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "securebits");
        child_fail(ctl, &err);
    }
    if (fb_set_ids_raw(p->uid, p->gid) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "switching to uid %u gid %u", p->uid, p->gid);
        child_fail(ctl, &err);
    }
    if (prctl(PR_SET_SECUREBITS, bits, 0, 0, 0) < 0) {
        fb_errno(&err, FB_EXIT_SETUP, "securebits");
        child_fail(ctl, &err);
    }
    /* Changing credentials cleared the parent-death signal: set it again,
     * then make sure the supervisor did not die before it took effect. */
    if (pdeath)
        prctl(PR_SET_PDEATHSIG, SIGKILL);
    struct pollfd pfd = {.fd = ctl, .events = POLLIN};
    if (poll(&pfd, 1, 0) > 0 && (pfd.revents & (POLLHUP | POLLERR)))
        _exit(FB_EXIT_SETUP);
    if (x)
        x->child(p, ctl, x->arg);
    if (mount_scratch(p, layout, ctl, &err) < 0)
        child_fail(ctl, &err);
    /* A session's init keeps a descriptor of its scratch space, so that
     * the server need not hold one per idle session (sandbox_scratch_park);
     * not with --cow, whose scratch holds snapshots the sandbox must not
     * reach by any way. */
    if (mode == FB_MODE_SESSION && !p->cow)
        kept_scratch = fcntl(mount_layout_scratch(layout), F_DUPFD_CLOEXEC, 3);
    if (p->cow && mount_cow(p, layout, ctl, &err) < 0)
        child_fail(ctl, &err);
    if (mount_build(p, layout, &err) < 0)
        child_fail(ctl, &err);
    if (late_cg)
        child_join_late(p, ctl, &nproc_fallback);
    init_main(p, mode, ctl, nproc_fallback, h);
}

static int clone_sandbox(unsigned long flags, int cgfd, int *pidfd,
                         const struct fb_session_hooks *h)
{
    void (*guard)(bool before) = h ? h->clone_guard : NULL;
    struct clone_args args;
    memset(&args, 0, sizeof args);
    args.flags = flags | CLONE_PIDFD | (cgfd >= 0 ? CLONE_INTO_CGROUP : 0);
    args.pidfd = (uint64_t)(uintptr_t)pidfd;
    /* With CLONE_PARENT clone3 takes no exit signal: the child gets its
     * new parent's (SIGCHLD for a forked supervisor). */
    args.exit_signal = (flags & CLONE_PARENT) ? 0 : SIGCHLD;
    args.cgroup = cgfd >= 0 ? (uint64_t)cgfd : 0;
    if (guard)
        guard(true);
    int pid = (int)syscall(SYS_clone3, &args, sizeof args);
    /* A container runtime's seccomp profile answers clone3 with ENOSYS
     * (so that libc falls back to clone, whose flags it can see): so do
     * we, without CLONE_INTO_CGROUP (the caller attaches afterwards). */
    if (pid < 0 && errno == ENOSYS && cgfd < 0)
        pid = (int)syscall(SYS_clone, flags | CLONE_PIDFD | ((flags & CLONE_PARENT) ? 0 : SIGCHLD),
                           NULL, pidfd, NULL, 0);
    if (pid != 0 && guard) {
        int e = errno;
        guard(false);
        errno = e;
    }
    return pid;
}

/* A set-up step the kernel refused (a mount, pivot_root, a namespace, a
 * seccomp filter: the text ends in the errno) points at fluebox doctor,
 * which tells which layer is missing and how to get it; an option's own
 * error ("--ro-bind /x: ...") is the caller's to fix. */
static const char *layer_hint(const char *text)
{
    static const int layer_errnos[] = {EPERM, EACCES, ENOSYS, EINVAL, EOPNOTSUPP};
    if (!strncmp(text, "--", 2) || strstr(text, "fluebox doctor"))
        return "";
    size_t tl = strlen(text);
    for (size_t i = 0; i < FB_ARRAY_LEN(layer_errnos); i++) {
        const char *s = strerror(layer_errnos[i]);
        size_t sl = strlen(s);
        if (tl > sl && !strcmp(text + tl - sl, s))
            return " (see fluebox doctor)";
    }
    return "";
}

static void add_layer_hint(struct fb_err *err)
{
    const char *h = layer_hint(err->msg);
    size_t l = strlen(err->msg);
    if (*h && l + strlen(h) < sizeof err->msg)
        memcpy(err->msg + l, h, strlen(h) + 1);
}

static const char *userns_hint(int e)
{
    static char buf[256];
    char v[32];
    if (fb_read_file("/proc/sys/kernel/unprivileged_userns_clone", v, sizeof v) > 0 && v[0] == '0')
        return "user namespaces are disabled (kernel.unprivileged_userns_clone = 0)";
    if (fb_read_file("/proc/sys/user/max_user_namespaces", v, sizeof v) > 0 && v[0] == '0')
        return "user namespaces are disabled (user.max_user_namespaces = 0)";
    if (fb_read_file("/proc/sys/kernel/apparmor_restrict_unprivileged_userns", v, sizeof v) > 0 &&
        v[0] == '1')
        return "AppArmor restricts unprivileged user namespaces "
               "(kernel.apparmor_restrict_unprivileged_userns = 1)";
    snprintf(buf, sizeof buf, "cannot create namespaces: %s", strerror(e));
    return buf;
}

/* One idmapping user namespace per owner of the binds (each costs a
 * process and two map writes). */
struct idmap_cache {
    struct {
        uid_t uid;
        gid_t gid;
        int ns;
    } v[8];
    size_t n;
};

static int idmap_for(struct idmap_cache *c, uid_t uid, gid_t gid, const struct fb_ids *ids,
                     struct fb_err *err)
{
    for (size_t i = 0; i < c->n; i++)
        if (c->v[i].uid == uid && c->v[i].gid == gid)
            return c->v[i].ns;
    int ns = userns_idmap_ns(uid, gid, ids, err);
    if (ns >= 0 && c->n < FB_ARRAY_LEN(c->v))
        c->v[c->n++] = (typeof(c->v[0])){uid, gid, ns};
    else if (ns >= 0) {
        /* More owners than slots: use the last slot's place for this one. */
        close(c->v[c->n - 1].ns);
        c->v[c->n - 1] = (typeof(c->v[0])){uid, gid, ns};
    }
    return ns;
}

static void idmap_cache_free(struct idmap_cache *c)
{
    for (size_t i = 0; i < c->n; i++)
        close(c->v[i].ns);
    c->n = 0;
}

/* Prepare idmapped trees for the workspace and the binds, read-write and
 * read-only, when running as root and the owner differs from the sandbox
 * user's host id: on them the owner's files appear as the sandbox user's
 * (a read-only repository then passes git's ownership check). Where the
 * filesystem cannot do it, a warning and the plain bind (mount_prepare). */
static int premounts_make(const struct fb_policy *p, const struct fb_ids *ids,
                          struct fb_premounts *pre, struct fb_err *err)
{
    pre->workspace_fd = -1;
    pre->bind_fds = NULL;
    pre->cow_upper_fd = -1;
    if (!userns_own_range(ids))
        return 0;
    if (cow_premounts(p, ids, pre, err) < 0)
        return -1;
    if (p->workspace && !p->cow && !p->workspace_ro) {
        struct stat st;
        if (stat(p->workspace, &st) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", p->workspace);
        if (st.st_uid != ids->host_uid || st.st_gid != ids->host_gid) {
            struct fb_err e2 = {0};
            pre->workspace_fd = userns_idmapped_tree(p->workspace, st.st_uid, st.st_gid, ids,
                                                     false, &e2);
            if (pre->workspace_fd < 0 && !p->quiet)
                fb_note(err, "warning: %s; the workspace is mounted without an id mapping and the "
                        "sandbox user can only write where \"other\" permissions allow (see "
                        "fluebox doctor)",
                        e2.msg);
        }
    }
    struct idmap_cache cache = {.n = 0};
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        if (m->kind != FB_MNT_BIND && m->kind != FB_MNT_RO_BIND)
            continue;
        bool ro = m->kind == FB_MNT_RO_BIND;
        struct stat st;
        if (stat(m->src, &st) < 0 || (st.st_uid == ids->host_uid && st.st_gid == ids->host_gid))
            continue;
        if (!pre->bind_fds) {
            pre->bind_fds = fb_xmalloc(p->nmounts * sizeof(int));
            for (size_t k = 0; k < p->nmounts; k++)
                pre->bind_fds[k] = -1;
        }
        struct fb_err e2 = {0};
        int ns = idmap_for(&cache, st.st_uid, st.st_gid, ids, &e2);
        /* Read-only binds keep their submounts, as plain ones do. */
        pre->bind_fds[i] = ns < 0 ? -1 : userns_idmapped_tree_ns(m->src, ns, ro, ro, &e2);
        if (pre->bind_fds[i] < 0 && !p->quiet)
            fb_note(err, "warning: %s %s; bound without an id mapping: its files' owner shows as "
                    "nobody inside%s",
                    ro ? "--ro-bind" : "--bind", e2.msg,
                    ro ? " (git refuses such a repository: \"dubious ownership\"; see fluebox "
                         "doctor)"
                       : ", and the sandbox user can write only where \"other\" may (see "
                         "fluebox doctor)");
    }
    idmap_cache_free(&cache);
    return 0;
}

static void premounts_free(const struct fb_policy *p, struct fb_premounts *pre)
{
    if (pre->workspace_fd >= 0)
        close(pre->workspace_fd);
    if (pre->cow_upper_fd >= 0)
        close(pre->cow_upper_fd);
    pre->cow_upper_fd = -1;
    if (pre->bind_fds) {
        for (size_t i = 0; i < p->nmounts; i++)
            if (pre->bind_fds[i] >= 0)
                close(pre->bind_fds[i]);
        free(pre->bind_fds);
    }
    pre->workspace_fd = -1;
    pre->bind_fds = NULL;
}

static bool wants_cgroup(const struct fb_policy *p)
{
    return p->limits.mem > 0 || p->limits.pids > 0 || p->limits.cpus > 0;
}

static int spawn(const struct fb_policy *p, enum fb_mode mode, const struct fb_spawn_ext *x,
                 const struct fb_session_hooks *h, struct fb_sandbox *sb, struct fb_err *err);

int sandbox_spawn(const struct fb_policy *p, struct fb_sandbox *sb, struct fb_err *err)
{
    return spawn(p, FB_MODE_RUN, NULL, NULL, sb, err);
}

int sandbox_spawn_session(const struct fb_policy *p, const struct fb_session_hooks *h,
                          struct fb_sandbox *sb, struct fb_err *err)
{
    if (!h || !h->main)
        return fb_errf(err, FB_EXIT_SETUP, "a session sandbox needs its init's loop");
    return spawn(p, FB_MODE_SESSION, NULL, h, sb, err);
}

int sandbox_spawn_ext(const struct fb_policy *p, const struct fb_spawn_ext *x,
                      struct fb_sandbox *sb, struct fb_err *err)
{
    return spawn(p, FB_MODE_EXT, x, NULL, sb, err);
}

/* The maps an FB_MODE_EXT caller gives, else userns.c's. */
static int write_maps(pid_t pid, const struct fb_policy *p, struct fb_ids *ids,
                      const struct fb_spawn_ext *x, struct fb_err *err)
{
    if (!x || !x->uid_map)
        return userns_write_maps(pid, p, ids, err);
    static const char *const file[2] = {"uid_map", "gid_map"};
    const char *text[2] = {x->uid_map, x->gid_map};
    for (int i = 0; i < 2; i++) {
        char path[64];
        snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file[i]);
        if (fb_write_file(path, text[i]) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "writing %s", file[i]);
    }
    return 0;
}

/* After a failed write to a child that set up its network before GO: its
 * own reason, if it sent one before it went. */
static void child_said(struct fb_sandbox *sb, struct fb_err *err)
{
    struct fb_msg m;
    while (ctl_recv_nonblock(sb->ctl, &m) == 1)
        if (m.type == FB_MSG_ERR) {
            fb_errf(err, m.code ? m.code : FB_EXIT_SETUP, "%s", m.text);
            return;
        }
}

/* The cgroup of a child that is already building its root: made and
 * limited now (cgroup_late), joined by the child before init
 * (child_join_late) with the descriptors cgroup_late_send hands it. A
 * seeded child gets them after its scratch space is filled: the copy is
 * made in the cgroup, and the child reads the seed's GO first. */
struct late_cg {
    int fds[8];
    size_t nfds;
};

static int cgroup_late(const struct fb_policy *p, struct fb_sandbox *sb, struct late_cg *l,
                       struct fb_err *err)
{
    if (cgroup_create(p, &sb->cg, err) < 0)
        return -1;
    if (cgroup_attach_late(sb->cg, sb->pid, l->fds, FB_ARRAY_LEN(l->fds), &l->nfds, err) < 0)
        return -1;
    const char *missing = cgroup_not_applied(sb->cg);
    sb->nproc_fallback = missing && strstr(missing, "pids");
    return 0;
}

static void cgroup_late_close(struct late_cg *l)
{
    for (size_t i = 0; i < l->nfds; i++)
        close(l->fds[i]);
    l->nfds = 0;
}

static void cgroup_late_send(struct fb_sandbox *sb, struct late_cg *l)
{
    int64_t nproc, data;
    cgroup_fallback_limits(sb->cg, &nproc, &data);
    struct fb_msg m = {.type = FB_MSG_CGROUP, .code = (int32_t)nproc, .arg = data,
                       .status = sb->nproc_fallback};
    /* If this fails the child is gone, and has said why (seccomp_job_send). */
    ctl_send(sb->ctl, &m, l->fds, l->nfds);
    cgroup_late_close(l);
}

/* One spawn in progress: what it was asked for and what it holds until the
 * child is READY (each part is released by the failure path of its phase). */
struct spawning {
    const struct fb_policy *p;
    enum fb_mode mode;
    const struct fb_spawn_ext *x;
    const struct fb_session_hooks *h;
    struct fb_sandbox *sb;
    struct fb_sc_job scj;       /* the seccomp filters, looked up or compiling */
    bool late_cg;               /* the cgroup is made while the child builds */
    struct late_cg lcg;
    struct fb_premounts pre;    /* as root: the idmapped trees (mount.h) */
    struct tls_ca *ca;          /* the per-run CA until the relay takes it */
    struct fb_layout *layout;   /* as root: the bind sources, opened here */
    int cgfd;                   /* CLONE_INTO_CGROUP's, or -1 */
};

/* Before the clone: the seccomp job, the host ids, the cgroup when the
 * child is cloned into it (v2; else cgroup_late while it builds its root),
 * the copy-on-write layer and what root opens for the child. -1 with err:
 * what it made is released (by spawn's fail path for the last three). */
static int spawn_prepare(struct spawning *st, struct fb_err *err)
{
    const struct fb_policy *p = st->p;
    const struct fb_spawn_ext *x = st->x;
    struct fb_sandbox *sb = st->sb;
    /* The seccomp filters: looked up, or compiled by a helper process while
     * the sandbox is created and builds its root; sent once it waits for
     * them, just before it loads them (seccomp.h). */
    enum fb_sc_mode scm = seccomp_mode(p, st->mode == FB_MODE_RUN);
    if (scm == FB_SCM_LEARN && st->mode != FB_MODE_RUN)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: learn mode needs a supervisor");
    if (seccomp_job_start(p, scm, &st->scj, err) < 0)
        return -1;
    /* As root: this sandbox's own range of host ids (idrange.h). An
     * FB_MODE_EXT caller decides its own (and writes its own maps). */
    if (x && x->ids) {
        sb->ids = *x->ids;
        idrange_init(&x->ids->claim); /* moved: ours to release now */
    } else if (x)
        userns_plain_ids(p, &sb->ids);
    else if (userns_host_ids(p, &sb->ids, err) < 0) {
        seccomp_job_cancel(&st->scj);
        return -1;
    }
    if (x && x->cg) {
        sb->cg = x->cg;
    } else if (wants_cgroup(p) && !x && !cgroup_before_clone(p)) {
        st->late_cg = true;
    } else if (wants_cgroup(p)) {
        if (cgroup_create(p, &sb->cg, err) < 0) {
            seccomp_job_cancel(&st->scj);
            userns_release_ids(&sb->ids);
            return -1;
        }
        const char *missing = cgroup_not_applied(sb->cg);
        if (missing && strstr(missing, "pids"))
            sb->nproc_fallback = true;
    }
    if (p->cow && cow_begin(p, &sb->ids, &sb->cow, err) < 0)
        return 1;
    if (!x && premounts_make(p, &sb->ids, &st->pre, err) < 0)
        return 1;
    /* As root the bind sources are opened here, as root (mount.h). */
    if (!x && userns_own_range(&sb->ids) && mount_prepare(p, &st->pre, &st->layout, err) < 0)
        return 1;
    return 0;
}

/* The clone, as the namespace owner; the child goes to child_main. -1 with
 * err when there is no child. */
static int spawn_clone(struct spawning *st, struct fb_err *err)
{
    const struct fb_policy *p = st->p;
    struct fb_sandbox *sb = st->sb;
    int sv[2];
    if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "socketpair");
    int pidfd = -1;
    st->cgfd = sb->cg ? cgroup_clone_fd(sb->cg) : -1;
    unsigned long flags = ns_flags(p) | (st->x ? st->x->clone_flags : 0);
    struct fb_creator creator;
    if (userns_creator_enter(&sb->ids, &creator, err) < 0) {
        close(sv[0]);
        close(sv[1]);
        return -1;
    }
    pid_t pid = clone_sandbox(flags, st->cgfd, &pidfd, st->h);
    if (pid < 0 && st->cgfd >= 0 && errno != EPERM && errno != ENOSPC && errno != EUSERS) {
        st->cgfd = -1; /* no CLONE_INTO_CGROUP here: attach after the clone */
        pid = clone_sandbox(flags, -1, &pidfd, st->h);
    }
    if (pid == 0) {
        /* The child keeps the credentials it was born with: the namespace
         * owner's (userns.h). */
        close(sv[0]);
        seccomp_job_close(&st->scj); /* the supervisor's: it sends them */
        child_main(p, st->mode, sv[1], st->layout, &sb->ids, sb->nproc_fallback, sb->cg,
                   st->late_cg, st->x, st->h);
    }
    userns_creator_leave(&creator);
    if (pid < 0) {
        int e = errno;
        close(sv[0]);
        close(sv[1]);
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s; fluebox will not run with less isolation unless asked: see fluebox "
                       "doctor (--isolation landlock is the fallback)",
                       userns_hint(e));
    }
    close(sv[1]);
    premounts_free(p, &st->pre);
    mount_layout_free(st->layout); /* the child has them now */
    st->layout = NULL;
    sb->pid = pid;
    sb->pidfd = pidfd;
    sb->ctl = sv[0];
    return 0;
}

/* The child waits: its id maps, its cgroup, then GO with the rlimits that
 * stand in for cgroup limits (code: RLIMIT_NPROC, arg: RLIMIT_DATA; 0 =
 * none), which the child sets on itself. */
static int spawn_go(struct spawning *st, struct fb_err *err)
{
    const struct fb_policy *p = st->p;
    struct fb_sandbox *sb = st->sb;
    if (write_maps(sb->pid, p, &sb->ids, st->x, err) < 0) {
        child_said(sb, err);
        return -1;
    }
    if (sb->cg && st->cgfd < 0 && cgroup_attach(sb->cg, sb->pid, err) < 0)
        return -1;
    int64_t nproc, data;
    cgroup_fallback_limits(sb->cg, &nproc, &data);
    struct fb_msg go = {.type = FB_MSG_GO, .code = (int32_t)nproc, .arg = data};
    /* The per-run CA of inspected hosts (docs/secrets.md), made here in
     * the supervisor (after the clone: the child never has its key), its
     * certificate sent with GO for the sandbox's trust store. */
    cleanup_close int cafd = -1;
    if (!st->x && egress_ca_new(p, &st->ca, err) < 0)
        return -1;
    if (st->ca) {
        const char *pem = egress_ca_pem(st->ca);
        cafd = memfd_create("fluebox-ca", MFD_CLOEXEC);
        if (cafd < 0 || fb_write_all(cafd, pem, strlen(pem)) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "the per-run CA's certificate");
        snprintf(go.text, sizeof go.text, "%08lx", egress_ca_hash(st->ca));
    }
    if (ctl_send(sb->ctl, &go, cafd >= 0 ? &cafd : NULL, cafd >= 0 ? 1 : 0) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "starting the sandbox");
        child_said(sb, err);
        return -1;
    }
    if (st->late_cg && cgroup_late(p, sb, &st->lcg, err) < 0)
        return -1;
    /* A seeded child reads the seed's GO first (mount_scratch): then. */
    if (!p->seed_scratch) {
        if (st->late_cg)
            cgroup_late_send(sb, &st->lcg);
        if (seccomp_job_send(&st->scj, sb->ctl, err) < 0)
            return -1;
    }
    return 0;
}

/* FB_MSG_SCRATCH: the child's scratch tmpfs, for fstatfs() and snapshots;
 * a seeded child waits for it to be filled, then for its second GO. */
static int on_scratch(struct spawning *st, int fd, struct fb_err *err)
{
    struct fb_sandbox *sb = st->sb;
    sb->scratch_fd = fd;
    struct stat sst;
    if (fstat(fd, &sst) == 0) {
        sb->scratch_dev = sst.st_dev;
        sb->scratch_ino = sst.st_ino;
    }
    if (sb->cow) {
        sb->cow->scratch = sb->scratch_fd; /* snapshots live there */
        sb->cow->cg = sb->cg;
    }
    if (!st->p->seed_scratch)
        return 0;
    const struct fb_seed *seed = st->h ? st->h->seed : NULL;
    struct fb_msg go2 = {.type = FB_MSG_GO};
    if (!seed || seed->fill(seed->arg, sb->scratch_fd, sb, err) < 0)
        return -1;
    if (ctl_send(sb->ctl, &go2, NULL, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "starting the sandbox");
    if (st->late_cg)
        cgroup_late_send(sb, &st->lcg);
    return seccomp_job_send(&st->scj, sb->ctl, err);
}

/* The child's messages until READY: its network's sockets (the relay
 * starts), its scratch, the seccomp listener, the copy-on-write layer, and
 * whatever an FB_MODE_EXT caller handles. */
static int spawn_handshake(struct spawning *st, struct fb_err *err)
{
    const struct fb_policy *p = st->p;
    const struct fb_spawn_ext *x = st->x;
    struct fb_sandbox *sb = st->sb;
    for (;;) {
        struct fb_msg m;
        int fds[FB_CTL_MAX_FDS];
        size_t nfds = FB_CTL_MAX_FDS;
        if (st->h && st->h->wait)
            st->h->wait(true);
        int r = ctl_recv(sb->ctl, &m, fds, &nfds);
        if (st->h && st->h->wait)
            st->h->wait(false);
        if (r < 0)
            return fb_errno(err, FB_EXIT_SETUP, "reading from the sandbox");
        if (r == 0)
            return fb_errf(err, FB_EXIT_SETUP, "the sandbox died during set-up");
        if (m.type == FB_MSG_ERR)
            return fb_errf(err, m.code ? m.code : FB_EXIT_SETUP, "%s%s", m.text,
                           layer_hint(m.text));
        if (m.type == FB_MSG_NETFDS) {
            if (egress_start(p, fds, nfds, &sb->egress, err) < 0)
                return -1;
            if (st->ca)
                egress_adopt_ca(sb->egress, fb_steal_ptr(st->ca));
        } else if (m.type == FB_MSG_SCRATCH && nfds == 1 && sb->scratch_fd < 0) {
            if (on_scratch(st, fds[0], err) < 0)
                return -1;
        } else if (m.type == FB_MSG_SECCOMP_FD && nfds == 1 && sb->seccomp_fd < 0) {
            sb->seccomp_fd = fds[0]; /* the supervisor answers it (scnotify.h) */
        } else if (m.type == FB_MSG_COW && sb->cow) {
            sb->cow->staged = m.code == 1;
            if (cow_attach(sb->cow, fds, nfds, err) < 0)
                return -1;
        } else if (x && x->on_msg && m.type != FB_MSG_READY && m.type != FB_MSG_COW) {
            if (x->on_msg(x->arg, sb->ctl, &m, fds, nfds, err) < 0)
                return -1;
        } else {
            for (size_t i = 0; i < nfds; i++)
                close(fds[i]);
            if (m.type != FB_MSG_READY)
                continue;
            if ((m.status & FB_READY_SCRATCH) && m.arg >= 3 && m.arg <= INT_MAX)
                sb->scratch_init_fd = (int)m.arg;
            sb->net_in_init = (m.status & FB_READY_NET) != 0;
            /* --net host has no resolver or relay; its log says so. */
            if (!sb->egress && p->net_log && egress_start(p, NULL, 0, &sb->egress, err) < 0)
                return -1;
            return 0;
        }
    }
}

static int spawn(const struct fb_policy *p, enum fb_mode mode, const struct fb_spawn_ext *x,
                 const struct fb_session_hooks *h, struct fb_sandbox *sb, struct fb_err *err)
{
    if (p->isolation == FB_ISO_LANDLOCK) { /* no namespaces: landlock_spawn.c */
        if (x)
            return fb_errf(err, FB_EXIT_SETUP,
                           "a container runs in namespaces; --isolation landlock does not apply");
        return landlock_spawn(p, mode, sb, err);
    }
    memset(sb, 0, sizeof *sb);
    sb->pid = -1;
    sb->pidfd = -1;
    sb->ctl = -1;
    sb->seccomp_fd = -1;
    sb->scratch_fd = -1;
    sb->scratch_init_fd = -1;
    sb->start_ns = fb_now_ns();
    idrange_init(&sb->ids.claim);
    struct spawning st = {.p = p, .mode = mode, .x = x, .h = h, .sb = sb, .cgfd = -1,
                          .pre = {.workspace_fd = -1, .cow_upper_fd = -1}};

    int rc = spawn_prepare(&st, err);
    if (rc < 0)
        return -1; /* nothing left of it */
    if (rc > 0 || spawn_clone(&st, err) < 0)
        goto fail;
    if (spawn_go(&st, err) < 0 || spawn_handshake(&st, err) < 0)
        goto fail_child;
    egress_ca_free(st.ca); /* (the relay took it, unless there is none) */
    return 0;

fail_child:
    egress_ca_free(st.ca);
    add_layer_hint(err);
    cgroup_late_close(&st.lcg);
    seccomp_job_cancel(&st.scj);
    sandbox_kill(sb);
    sandbox_release(sb);
    return -1;
fail:
    add_layer_hint(err);
    seccomp_job_cancel(&st.scj);
    mount_layout_free(st.layout);
    premounts_free(p, &st.pre);
    cgroup_destroy(sb->cg);
    sb->cg = NULL;
    cow_free(sb->cow);
    sb->cow = NULL;
    userns_release_ids(&sb->ids);
    return -1;
}

int64_t sandbox_disk_used(const struct fb_sandbox *sb)
{
    struct statfs st;
    int fd = sandbox_scratch_open(sb);
    int rc = fd < 0 ? -1 : fstatfs(fd, &st);
    if (fd >= 0)
        close(fd);
    if (rc < 0 || st.f_blocks == 0)
        return -1; /* a tmpfs without a size says 0 blocks: nothing to subtract from */
    return (int64_t)(st.f_blocks - st.f_bfree) * (int64_t)st.f_bsize;
}

/* The scratch space from init's own descriptor table: the descriptor whose
 * number init gave with READY, checked against the directory recorded at
 * set-up (device and inode), so whatever init's table holds now cannot
 * pass for it. The number comes from init rather than a look through
 * /proc/PID/fd: an undumpable init's /proc files belong to root, which a
 * non-root server is not, while pidfd_getfd asks only for ptrace rights
 * over init, which the owner of its user namespace has. */
static int scratch_from_init(const struct fb_sandbox *sb)
{
    if (sb->pid <= 0 || !sb->scratch_ino || sb->scratch_init_fd < 0)
        return -1;
    int pfd = (int)syscall(SYS_pidfd_open, sb->pid, 0);
    if (pfd < 0)
        return -1;
    int fd = (int)syscall(SYS_pidfd_getfd, pfd, sb->scratch_init_fd, 0);
    struct stat st;
    if (fd >= 0 && (fstat(fd, &st) < 0 || st.st_dev != sb->scratch_dev ||
                    st.st_ino != sb->scratch_ino || !S_ISDIR(st.st_mode))) {
        close(fd);
        fd = -1;
    }
    close(pfd);
    return fd;
}

int sandbox_scratch_open(const struct fb_sandbox *sb)
{
    if (sb->scratch_fd >= 0)
        return fcntl(sb->scratch_fd, F_DUPFD_CLOEXEC, 3);
    return sb->scratch_parked ? scratch_from_init(sb) : -1;
}

void sandbox_scratch_park(struct fb_sandbox *sb)
{
    if (sb->scratch_fd < 0 || sb->cow || sb->ll)
        return;
    /* Only where it can be taken back (pidfd_getfd needs ptrace rights
     * over init: Yama's admin-only mode refuses them to a non-root server). */
    sb->scratch_parked = true;
    int fd = scratch_from_init(sb);
    if (fd < 0) {
        sb->scratch_parked = false;
        return;
    }
    close(fd);
    close(sb->scratch_fd);
    sb->scratch_fd = -1;
}

void sandbox_kill(struct fb_sandbox *sb)
{
    if (sb->pidfd >= 0)
        syscall(SYS_pidfd_send_signal, sb->pidfd, SIGKILL, NULL, 0);
    else if (sb->pid > 0)
        kill(sb->pid, SIGKILL);
}

void sandbox_reap(struct fb_sandbox *sb)
{
    if (sb->pid > 0) {
        siginfo_t si;
        /* Reap init if it is gone or going; never leave a zombie behind. */
        while (waitid(P_PID, (id_t)sb->pid, &si, WEXITED) < 0 && errno == EINTR)
            ;
        sb->pid = -1;
    }
}

void sandbox_release(struct fb_sandbox *sb)
{
    sandbox_reap(sb);
    if (sb->pidfd >= 0)
        close(sb->pidfd);
    if (sb->ctl >= 0)
        close(sb->ctl);
    sb->pidfd = sb->ctl = -1;
    if (sb->seccomp_fd >= 0)
        close(sb->seccomp_fd);
    sb->seccomp_fd = -1;
    if (sb->scratch_fd >= 0)
        close(sb->scratch_fd);
    sb->scratch_fd = -1;
    egress_free(sb->egress);
    sb->egress = NULL;
    cow_free(sb->cow);
    sb->cow = NULL;
    cgroup_destroy(sb->cg);
    sb->cg = NULL;
    /* Init is reaped, so its pid namespace is empty (the kernel reaps the
     * last process of a namespace before its init): nothing runs as the
     * range's ids any more, and another sandbox may have them. */
    landlock_release(sb); /* its leftovers first: they may run as the range's ids */
    userns_release_ids(&sb->ids);
}
