/* landlock.c — the rules of the fallback boundary (see landlock.h): the
 * checks before a run, the scratch directory, the Landlock ruleset, the
 * extra seccomp filter and the list of what does not hold. The process side
 * (fork, ids, init) is landlock_spawn.c.
 *
 * The kernel's Landlock documentation (userspace-api/landlock.rst) is the
 * reference for every right used here. Debian 12's headers (Linux 6.1) stop
 * at ABI 2, so the newer constants are defined below, with the ABI that
 * brought them. */
#include "landlock.h"

#include "policy.h"

#include <dirent.h>
#include <limits.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <seccomp.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>

/* ABI 3 (Linux 6.2). */
#ifndef LANDLOCK_ACCESS_FS_TRUNCATE
#define LANDLOCK_ACCESS_FS_TRUNCATE (1ULL << 14)
#endif
/* ABI 4 (Linux 6.7): TCP, and struct landlock_ruleset_attr grows a
 * handled_access_net; rules of type LANDLOCK_RULE_NET_PORT (= 2). */
#ifndef LANDLOCK_ACCESS_NET_BIND_TCP
#define LANDLOCK_ACCESS_NET_BIND_TCP (1ULL << 0)
#define LANDLOCK_ACCESS_NET_CONNECT_TCP (1ULL << 1)
#endif
#define FB_LANDLOCK_RULE_NET_PORT 2
/* ABI 5 (Linux 6.10). */
#ifndef LANDLOCK_ACCESS_FS_IOCTL_DEV
#define LANDLOCK_ACCESS_FS_IOCTL_DEV (1ULL << 15)
#endif
/* ABI 6 (Linux 6.12): the attr grows "scoped". */
#ifndef LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
#define LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET (1ULL << 0)
#define LANDLOCK_SCOPE_SIGNAL (1ULL << 1)
#endif

/* The attributes as the newest ABI used here lays them out; the size passed
 * tells the kernel how much of it this caller knows. */
struct ll_ruleset_attr {
    uint64_t handled_access_fs;
    uint64_t handled_access_net; /* ABI 4 */
    uint64_t scoped;             /* ABI 6 */
};
struct ll_net_port_attr { /* struct landlock_net_port_attr, ABI 4 */
    uint64_t allowed_access;
    uint64_t port;
};

#define FS_RO (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define FS_RW                                                                                  \
    (FS_RO | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_DIR |                  \
     LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | \
     LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM | \
     LANDLOCK_ACCESS_FS_REFER | LANDLOCK_ACCESS_FS_TRUNCATE)
/* The rights a rule on a file (not a directory) may carry. */
#define FS_FILE                                                                                \
    (LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | \
     LANDLOCK_ACCESS_FS_TRUNCATE | LANDLOCK_ACCESS_FS_IOCTL_DEV)
/* A device node everyone may use: reading, writing, "> /dev/null" (O_TRUNC). */
#define FS_DEV (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_TRUNCATE)

int landlock_abi(const char **why)
{
    long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);
    if (v > 0)
        return (int)v;
    if (why) {
        if (errno == EOPNOTSUPP)
            *why = "Landlock is built into this kernel but not enabled (\"landlock\" is missing "
                   "from the lsm= boot parameter)";
        else if (errno == ENOSYS)
            *why = "this kernel has no Landlock (CONFIG_SECURITY_LANDLOCK), or a seccomp filter "
                   "refuses its system calls";
        else if (errno == EPERM)
            *why = "a seccomp filter refuses Landlock's system calls";
        else
            *why = "Landlock cannot be used here";
    }
    return 0;
}

static uint64_t handled_fs(int abi)
{
    uint64_t fs = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */
    if (abi >= 2)
        fs |= LANDLOCK_ACCESS_FS_REFER;
    if (abi >= 3)
        fs |= LANDLOCK_ACCESS_FS_TRUNCATE;
    if (abi >= 5)
        fs |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
    return fs;
}

/* ---- what the command may reach ---- */

/* The system trees, read-only and executable (merged-/usr links resolve to
 * /usr's own directories). */
static const char *const sys_trees[] = {"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64",
                                        "/libx32"};
/* /etc: the host's own files a normal program reads, as few as mount.c
 * binds (plus the account and host tables the namespaced sandbox generates). */
static const char *const etc_files[] = {
    "ld.so.cache", "alternatives", "ssl", "localtime", "nsswitch.conf", "protocols", "services",
    "python3", "python3.11", "python3.12", "python3.13", "passwd", "group", "hosts", "hostname",
    "resolv.conf", "host.conf", "gai.conf", "mime.types", "ca-certificates"};
static const char *const dev_nodes[] = {"null", "zero", "full", "random", "urandom", "tty"};
/* /proc: machine-wide figures only. No /proc/PID (other processes of the uid
 * and /proc/self alike): a process list is not the sandbox's business. */
static const char *const proc_files[] = {"cpuinfo", "meminfo", "stat", "loadavg", "uptime",
                                         "version", "filesystems"};

static bool under(const char *path, const char *tree)
{
    size_t l = strlen(tree);
    if (l == 1 && tree[0] == '/')
        return true;
    return !strncmp(path, tree, l) && (path[l] == '/' || path[l] == 0);
}

static bool hidden(const struct fb_policy *p, const char *path)
{
    for (size_t i = 0; i < p->nmounts; i++)
        if (p->mounts[i].kind == FB_MNT_HIDE && under(path, p->mounts[i].dst))
            return true;
    return false;
}

/* Is path inside something the rules allow (a hide there cannot be honoured)? */
static bool allowed_somewhere(const struct fb_policy *p, const char *path)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(sys_trees); i++)
        if (under(path, sys_trees[i]) || under(sys_trees[i], path))
            return true;
    char buf[64];
    for (size_t i = 0; i < FB_ARRAY_LEN(etc_files); i++) {
        snprintf(buf, sizeof buf, "/etc/%s", etc_files[i]);
        if (under(path, buf))
            return true;
    }
    if (p->workspace && (under(path, p->workspace) || under(p->workspace, path)))
        return true;
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        if ((m->kind == FB_MNT_BIND || m->kind == FB_MNT_RO_BIND) &&
            (under(path, m->dst) || under(m->dst, path)))
            return true;
    }
    for (size_t i = 0; i < p->ntool_binds; i++)
        if (under(path, p->tool_binds[i].src) || under(path, p->tool_binds[i].dst))
            return true;
    return false;
}

/* ---- the supervisor's side ---- */

/* Refuse what needs a mount namespace. */
static int check_policy(const struct fb_policy *p, bool run_mode, struct fb_err *err)
{
    if (!run_mode)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--isolation landlock runs one command (fluebox run); a session needs "
                       "namespaces (see fluebox doctor)");
    if (p->seccomp.learn)
        return fb_errf(err, FB_EXIT_SETUP,
                       "fluebox learn needs namespaces; it cannot run under --isolation landlock");
    if (p->cow)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--cow needs a mount namespace (overlayfs); not available under "
                       "--isolation landlock");
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        switch (m->kind) {
        case FB_MNT_TMPFS:
            return fb_errf(err, FB_EXIT_SETUP,
                           "--tmpfs %s: a private tmpfs needs a mount namespace; under "
                           "--isolation landlock use --bind with a directory of yours",
                           m->dst);
        case FB_MNT_RO_BIND:
        case FB_MNT_BIND:
            if (m->src && strcmp(m->src, m->dst))
                return fb_errf(err, FB_EXIT_SETUP,
                               "--%s %s:%s: under --isolation landlock the command sees host "
                               "paths where they are; give the source alone",
                               m->kind == FB_MNT_BIND ? "bind" : "ro-bind", m->src, m->dst);
            break;
        case FB_MNT_HIDE:
            if (allowed_somewhere(p, m->dst))
                return fb_errf(err, FB_EXIT_SETUP,
                               "filesystem.hide %s: Landlock cannot hide a path inside a tree "
                               "it allows; not available under --isolation landlock",
                               m->dst);
            break;
        }
    }
    return 0;
}

/* Remove everything below the directory dfd (closed here), whatever the
 * command made of it: an unreadable or read-only directory is opened up
 * first. Symlinks are removed, never followed. */
static void empty_tree(int dfd, int depth)
{
    DIR *d = fdopendir(dfd);
    if (!d) {
        close(dfd);
        return;
    }
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        if (unlinkat(dirfd(d), e->d_name, 0) == 0 || (errno != EISDIR && errno != EPERM))
            continue;
        if (depth > 256)
            continue;
        fchmodat(dirfd(d), e->d_name, 0700, 0);
        int sub = openat(dirfd(d), e->d_name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (sub >= 0)
            empty_tree(sub, depth + 1);
        unlinkat(dirfd(d), e->d_name, AT_REMOVEDIR);
    }
    closedir(d);
}

void landlock_free(struct fb_ll *ll)
{
    if (!ll)
        return;
    if (ll->proxy_fd >= 0)
        close(ll->proxy_fd);
    if (ll->scratch) {
        int fd = open(ll->scratch, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (fd >= 0)
            empty_tree(fd, 0);
        rmdir(ll->scratch);
    }
    free(ll->scratch);
    free(ll->workspace);
    free(ll->tmpdir);
    free(ll->cwd);
    free(ll->exec_path);
    free(ll);
}

/* The command's ids. Rootless: the caller's. As root: never 0 — the
 * workspace's owner when that is not root (so it can write there), else
 * --host-id; a root-owned workspace it could not write is refused now
 * rather than failing with EACCES inside. */
static int pick_ids(const struct fb_policy *p, struct fb_ids *ids, struct fb_ll *ll,
                    struct fb_err *err)
{
    /* Root of a user namespace some user made (root maps to that user,
     * not to the parent's root) is that user: it keeps its ids, like an
     * ordinary user, and loses its capabilities. */
    if (geteuid() != 0 || userns_outer_id("uid_map", 0) != 0) {
        ll->uid = getuid();
        ll->gid = getgid();
        return 0;
    }
    /* The sandbox user of a range claimed for this run alone, as a
     * namespaced sandbox gets: no other sandbox runs as it. */
    if (userns_host_ids(p, ids, err) < 0)
        return -1;
    if (!ids->root) {
        /* `unshare -r` as root: no id but its own is mapped here. */
        ll->uid = getuid();
        ll->gid = getgid();
        return 0;
    }
    ll->set_ids = true;
    ll->uid = ids->host_uid;
    ll->gid = ids->host_gid;
    struct stat st = {.st_uid = 0};
    if (p->workspace && stat(p->workspace, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", p->workspace);
    if (st.st_uid != 0) {
        ll->uid = st.st_uid;
        ll->gid = st.st_gid != 0 ? st.st_gid : ids->host_gid;
    }
    if (userns_outer_id("uid_map", ll->uid) < 0 || userns_outer_id("gid_map", ll->gid) < 0)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--isolation landlock: uid %u or gid %u, which the command would run as, "
                       "is not mapped in this user namespace",
                       (unsigned)ll->uid, (unsigned)ll->gid);
    if (st.st_uid != 0)
        return 0;
    bool writable = (st.st_mode & S_IWOTH) ||
                    (st.st_gid == ll->gid && (st.st_mode & S_IWGRP));
    if (p->workspace && !writable && !p->workspace_ro)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--workspace %s belongs to root: under --isolation landlock the command "
                       "runs as uid %u without capabilities and could not write it (chown it to "
                       "the user the command should run as)",
                       p->workspace, (unsigned)ll->uid);
    return 0;
}

/* Can uid/gid (no capabilities, no supplementary groups) walk to path and
 * (want_x) execute it? By the permission bits along the way. */
static bool reachable(const char *path, uid_t uid, gid_t gid, bool want_x)
{
    char buf[PATH_MAX];
    if (!realpath(path, buf))
        return false;
    for (char *s = buf;; s++) {
        bool last = *s == 0;
        if (*s != '/' && !last)
            continue;
        char c = *s;
        *s = 0;
        struct stat st;
        if (stat(*buf ? buf : "/", &st) < 0)
            return false;
        *s = c;
        mode_t need = S_ISDIR(st.st_mode) || want_x ? 1 : 4; /* search, or read */
        mode_t have = st.st_uid == uid   ? (st.st_mode >> 6) & 7
                      : st.st_gid == gid ? (st.st_mode >> 3) & 7
                                         : st.st_mode & 7;
        if ((have & need) != need)
            return false;
        if (last)
            return true;
    }
}

static char *path_under_ws(const char *path, const char *ws)
{
    if (!path || strncmp(path, "/workspace", 10) || (path[10] != '/' && path[10] != 0))
        return NULL;
    return fb_xasprintf("%s%s", ws, path + 10);
}

static int make_scratch(struct fb_ll *ll, bool with_ws, struct fb_err *err)
{
    const char *base = "/tmp";
    const char *xdg = getenv("XDG_RUNTIME_DIR");
    struct stat st;
    if (!ll->set_ids && xdg && *xdg == '/' && stat(xdg, &st) == 0 && S_ISDIR(st.st_mode) &&
        st.st_uid == geteuid())
        base = xdg;
    ll->scratch = fb_xasprintf("%s/fluebox-landlock.XXXXXX", base);
    if (!mkdtemp(ll->scratch)) {
        int e = errno;
        free(ll->scratch);
        ll->scratch = NULL;
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "a scratch directory in %s", base);
    }
    ll->tmpdir = fb_xasprintf("%s/tmp", ll->scratch);
    char *ws = with_ws ? fb_xasprintf("%s/workspace", ll->scratch) : NULL;
    if (mkdir(ll->tmpdir, 0700) < 0 || (ws && mkdir(ws, 0700) < 0)) {
        free(ws);
        return fb_errno(err, FB_EXIT_SETUP, "a scratch directory in %s", base);
    }
    if (ll->set_ids) {
        const char *dirs[] = {ll->scratch, ll->tmpdir, ws};
        for (size_t i = 0; i < FB_ARRAY_LEN(dirs); i++)
            if (dirs[i] && lchown(dirs[i], ll->uid, ll->gid) < 0) {
                free(ws);
                return fb_errno(err, FB_EXIT_SETUP, "scratch directory %s", dirs[i]);
            }
    }
    if (ws)
        ll->workspace = ws;
    return 0;
}

/* The CONNECT proxy's listener on the host's loopback, on a port the kernel
 * picks: egress.c serves it; the Landlock rules let the command connect to
 * that port and no other. */
static int make_proxy(struct fb_ll *ll, struct fb_err *err)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "the CONNECT proxy's socket");
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t sl = sizeof sa;
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) < 0 || listen(fd, 128) < 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &sl) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "the CONNECT proxy on 127.0.0.1");
        close(fd);
        return -1;
    }
    ll->proxy_fd = fd;
    ll->proxy_port = ntohs(sa.sin_port);
    return 0;
}

int landlock_prepare(const struct fb_policy *p, bool run_mode, struct fb_ids *ids,
                     struct fb_ll **out, struct fb_err *err)
{
    *out = NULL;
    if (check_policy(p, run_mode, err) < 0)
        return -1;
    const char *why = NULL;
    int abi = landlock_abi(&why);
    if (abi == 0)
        return fb_errf(err, FB_EXIT_SETUP, "--isolation landlock: %s (see fluebox doctor)", why);
    if (abi < FB_LANDLOCK_MIN_ABI)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--isolation landlock needs Landlock ABI %d (Linux 6.7) or newer; this "
                       "kernel has ABI %d, which cannot restrict truncate(2) or TCP (see fluebox "
                       "doctor)",
                       FB_LANDLOCK_MIN_ABI, abi);
    struct fb_ll *ll = fb_xcalloc(1, sizeof *ll);
    ll->abi = abi;
    ll->proxy_fd = -1;
    if (pick_ids(p, ids, ll, err) < 0 || make_scratch(ll, !p->workspace, err) < 0 ||
        (p->net == FB_NET_ALLOW && make_proxy(ll, err) < 0)) {
        landlock_free(ll);
        return -1;
    }
    if (!ll->workspace)
        ll->workspace = fb_xstrdup(p->workspace);
    ll->cwd = path_under_ws(p->cwd, ll->workspace);
    if (!ll->cwd)
        ll->cwd = fb_xstrdup(p->cwd ? p->cwd : ll->workspace);
    if (!p->exec_path && p->argv && p->argv[0])
        ll->exec_path = path_under_ws(p->argv[0], ll->workspace);
    /* As root the command runs as someone else, who may not reach what
     * fluebox found for it (an interpreter under /root). */
    const char *prog = ll->exec_path ? ll->exec_path : p->exec_path;
    if (ll->set_ids && prog && !reachable(prog, ll->uid, ll->gid, true)) {
        fb_errf(err, FB_EXIT_SETUP,
                "%s is %s, which uid %u cannot reach: under --isolation landlock as root the "
                "command runs as that unprivileged user; give a path it can reach (such as "
                "/usr/bin/%s)",
                p->argv[0], prog, (unsigned)ll->uid, strrchr(prog, '/') + 1);
        landlock_free(ll);
        return -1;
    }
    *out = ll;
    return 0;
}

/* ---- the child's side ---- */

/* Allow access on path (and below it, for a directory). A missing optional
 * path is skipped. */
static int add_path(int rs, int abi, const char *path, uint64_t access, bool optional,
                    struct fb_err *err)
{
    int fd = open(path, O_PATH | O_CLOEXEC);
    if (fd < 0) {
        if (optional && (errno == ENOENT || errno == ENOTDIR || errno == EACCES))
            return 0;
        return fb_errno(err, FB_EXIT_SETUP, "landlock: %s", path);
    }
    struct stat st;
    if (fstat(fd, &st) < 0) {
        close(fd);
        return fb_errno(err, FB_EXIT_SETUP, "landlock: %s", path);
    }
    if (!S_ISDIR(st.st_mode))
        access &= FS_FILE;
    struct landlock_path_beneath_attr pb = {.allowed_access = access & handled_fs(abi),
                                            .parent_fd = fd};
    int rc = (int)syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0);
    int e = errno;
    close(fd);
    if (rc < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "landlock: a rule for %s", path);
    }
    return 0;
}

static bool net_handled(const struct fb_policy *p, int abi)
{
    return abi >= 4 && p->net != FB_NET_HOST;
}

int landlock_ruleset(const struct fb_policy *p, const struct fb_ll *ll, struct fb_err *err)
{
    int abi = ll->abi;
    struct ll_ruleset_attr attr = {.handled_access_fs = handled_fs(abi)};
    size_t size = sizeof attr.handled_access_fs;
    if (abi >= 4) {
        size += sizeof attr.handled_access_net;
        if (net_handled(p, abi))
            attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    }
    if (abi >= 6) {
        size += sizeof attr.scoped;
        attr.scoped = LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET | LANDLOCK_SCOPE_SIGNAL;
    }
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0)
        return fb_errno(err, FB_EXIT_SETUP, "landlock: creating the ruleset");
    char buf[PATH_MAX];
    for (size_t i = 0; i < FB_ARRAY_LEN(sys_trees); i++)
        if (!hidden(p, sys_trees[i]) && add_path(rs, abi, sys_trees[i], FS_RO, true, err) < 0)
            goto fail;
    for (size_t i = 0; i < FB_ARRAY_LEN(etc_files); i++) {
        snprintf(buf, sizeof buf, "/etc/%s", etc_files[i]);
        if (!hidden(p, buf) && add_path(rs, abi, buf, FS_RO, true, err) < 0)
            goto fail;
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(dev_nodes); i++) {
        snprintf(buf, sizeof buf, "/dev/%s", dev_nodes[i]);
        if (add_path(rs, abi, buf, FS_DEV, true, err) < 0)
            goto fail;
    }
    for (size_t i = 0; i < FB_ARRAY_LEN(proc_files); i++) {
        snprintf(buf, sizeof buf, "/proc/%s", proc_files[i]);
        if (add_path(rs, abi, buf, LANDLOCK_ACCESS_FS_READ_FILE, true, err) < 0)
            goto fail;
    }
    /* The programs' trees (toolchain.c): no mount namespace here, so the
     * program is reached by its host path, and the rule is on the real one. */
    for (size_t i = 0; i < p->ntool_binds; i++)
        if (add_path(rs, abi, p->tool_binds[i].src, FS_RO, true, err) < 0)
            goto fail;
    for (size_t i = 0; i < p->nmounts; i++) {
        const struct fb_mount *m = &p->mounts[i];
        if (m->kind != FB_MNT_BIND && m->kind != FB_MNT_RO_BIND)
            continue;
        if (add_path(rs, abi, m->src, m->kind == FB_MNT_BIND ? FS_RW : FS_RO, m->optional,
                     err) < 0)
            goto fail;
    }
    if (add_path(rs, abi, ll->workspace, p->workspace_ro ? FS_RO : FS_RW, false, err) < 0 ||
        add_path(rs, abi, ll->tmpdir, FS_RW, false, err) < 0)
        goto fail;
    if (net_handled(p, abi) && ll->proxy_port) {
        struct ll_net_port_attr np = {.allowed_access = LANDLOCK_ACCESS_NET_CONNECT_TCP,
                                      .port = ll->proxy_port};
        if (syscall(SYS_landlock_add_rule, rs, FB_LANDLOCK_RULE_NET_PORT, &np, 0) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "landlock: the rule for the proxy's port");
            goto fail;
        }
    }
    return rs;
fail:
    close(rs);
    return -1;
}

/* ---- the extra seccomp filter ---- */

static int deny(scmp_filter_ctx ctx, const char *name, unsigned n, const struct scmp_arg_cmp *c)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR)
        return 0; /* not on this architecture */
    return seccomp_rule_add_array(ctx, SCMP_ACT_ERRNO(EPERM), nr, n, c);
}

/* socket(family, ...) with family outside {a, b} (a < b; 0 for none):
 * refused. As 64-bit comparisons: a value with high bits set counts as
 * large, and large values are refused, which is the safe side. */
static int deny_families_but(scmp_filter_ctx ctx, const char *call, uint64_t a, uint64_t b)
{
    struct scmp_arg_cmp c;
    if (!a) {
        return deny(ctx, call, 0, NULL);
    }
    uint64_t hi = b ? b : a;
    c = SCMP_A0(SCMP_CMP_LT, a);
    if (deny(ctx, call, 1, &c) < 0)
        return -1;
    c = SCMP_A0(SCMP_CMP_GT, hi);
    if (deny(ctx, call, 1, &c) < 0)
        return -1;
    for (uint64_t f = a + 1; f < hi; f++) {
        c = SCMP_A0(SCMP_CMP_EQ, f);
        if (deny(ctx, call, 1, &c) < 0)
            return -1;
    }
    return 0;
}

static int build_filter(const struct fb_policy *p, const struct fb_ll *ll, scmp_filter_ctx ctx)
{
    bool inet = p->net == FB_NET_HOST || ll->proxy_port;
    /* socket(): AF_INET and AF_INET6 when the network is used at all, and
     * then (short of --net host) stream sockets only: no UDP, so no DNS
     * around the proxy. Unix sockets only come as socketpair(): a socket
     * made with socket() could connect to any unix socket of the uid by
     * path (an ssh-agent, D-Bus, docker.sock), which Landlock does not
     * govern. */
    if (deny_families_but(ctx, "socket", inet ? AF_INET : 0, inet ? AF_INET6 : 0) < 0)
        return -1;
    if (inet && p->net != FB_NET_HOST) {
        static const uint64_t fam[] = {AF_INET, AF_INET6};
        for (size_t i = 0; i < 2; i++)
            for (uint64_t t = 0; t < 16; t++) {
                if (t == SOCK_STREAM)
                    continue;
                struct scmp_arg_cmp c[2] = {SCMP_A0(SCMP_CMP_EQ, fam[i]),
                                            SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, t)};
                if (deny(ctx, "socket", 2, c) < 0)
                    return -1;
            }
    }
    if (deny_families_but(ctx, "socketpair", AF_UNIX, 0) < 0)
        return -1;
    /* A datagram socket may send to any unix socket by path (sendto with
     * an address), which Landlock does not govern: stream and seqpacket
     * pairs only. */
    struct scmp_arg_cmp dgram = SCMP_A1(SCMP_CMP_MASKED_EQ, 0xf, SOCK_DGRAM);
    if (deny(ctx, "socketpair", 1, &dgram) < 0)
        return -1;
    /* No server: its port would be the host's. */
    if (p->net != FB_NET_HOST && deny(ctx, "listen", 0, NULL) < 0)
        return -1;
    /* kill(-1, sig) reaches every process the uid may signal. */
    struct scmp_arg_cmp all = SCMP_A0(SCMP_CMP_MASKED_EQ, 0xffffffffu, 0xffffffffu);
    if (deny(ctx, "kill", 1, &all) < 0)
        return -1;
    /* The IPC namespace is the host's: its System V objects and POSIX
     * message queues stay out of reach. */
    static const char *const ipc[] = {"shmget", "shmat", "shmdt", "shmctl", "msgget", "msgsnd",
                                      "msgrcv", "msgctl", "semget", "semop", "semtimedop",
                                      "semctl", "mq_open", "mq_unlink", "mq_timedsend",
                                      "mq_timedreceive", "mq_notify", "mq_getsetattr"};
    for (size_t i = 0; i < FB_ARRAY_LEN(ipc); i++)
        if (deny(ctx, ipc[i], 0, NULL) < 0)
            return -1;
    return 0;
}

int landlock_enforce(const struct fb_policy *p, const struct fb_ll *ll, int ruleset,
                     struct fb_err *err)
{
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        close(ruleset);
        return fb_errno(err, FB_EXIT_SETUP, "setting no_new_privs");
    }
    int rc = (int)syscall(SYS_landlock_restrict_self, ruleset, 0);
    int e = errno;
    close(ruleset);
    if (rc < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "landlock: entering the domain");
    }
    scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
    if (!ctx)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: cannot initialise libseccomp");
    rc = build_filter(p, ll, ctx);
    if (rc == 0)
        rc = seccomp_load(ctx);
    seccomp_release(ctx);
    if (rc < 0)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: the landlock filter: %s", strerror(-rc));
    return 0;
}

/* ---- what does not hold ---- */

size_t landlock_lost(const struct fb_policy *p, int abi, const char **out, size_t cap)
{
    const char *v[12];
    size_t n = 0;
    v[n++] = "no user namespace: the command runs as the caller's uid (as root: the "
             "workspace's owner, or an unprivileged id of its own), not as a user of a "
             "namespace";
    v[n++] = "no pid namespace: whether a host pid exists shows through pidfd_open (any "
             "user's process); other processes of the same uid are visible by pid (not "
             "readable or traceable); what the command leaves running is killed at the end, "
             "but not if fluebox itself is killed with SIGKILL";
    v[n++] = "no mount namespace: host paths as they are (the workspace at its own path, not "
             "/workspace); no private /tmp (TMPDIR is a scratch directory of the run)";
    if (p->net == FB_NET_ALLOW)
        v[n++] = "no network namespace: the allowlist holds only through the CONNECT proxy "
                 "(HTTPS_PROXY); Landlock limits TCP by port, not address, so the proxy's port "
                 "is reachable on any host; no DNS, no transparent relay";
    else if (p->net == FB_NET_NONE)
        v[n++] = "no network namespace: no loopback of its own (no socket but socketpair)";
    v[n++] = "no IPC namespace: System V IPC and POSIX message queues are refused, /dev/shm "
             "is out of reach";
    v[n++] = "no UTS namespace: the host's hostname";
    v[n++] = "--disk is not enforced (no tmpfs): only RLIMIT_FSIZE bounds a file; without "
             "a pids cgroup --pids is not enforced either (RLIMIT_NPROC would count the uid's "
             "other processes)";
    if (abi < 6)
        v[n++] = "Landlock ABI below 6: the command can signal other processes of the same uid";
    size_t k = 0;
    for (; k < n && k < cap; k++)
        out[k] = v[k];
    return k;
}
