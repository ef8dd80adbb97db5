/* userns.c — the sandbox's user namespace: the host ids it maps, the
 * credentials of the thread that creates it, its per-namespace limits, and
 * idmapped mounts (see userns.h).
 *
 * Host root is never mapped. That matters: a process whose kernel uid is 0
 * passes the owner check on root-owned files even from inside a user
 * namespace, which is how a sandbox that maps host root leaves
 * /proc/sys/kernel/core_pattern writable. With root unmapped, everything
 * owned by host root is "nobody" inside and writable only through "other"
 * permission bits.
 *
 * As root, each sandbox maps inside ids 0..65535 to a range of host ids of
 * its own (idrange.h), so setuid() or chown() to another id fails with EPERM
 * (no capability) as on any system, not EINVAL (unmapped id). The namespace
 * is created by the cloning thread while it runs as the range's first id:
 * the kernel charges what the namespace holds (its inotify instances, its
 * nested namespaces, ...) to the namespace's owner at the host level, and
 * what the sandbox's processes hold (pipe pages, fds in flight, epoll
 * watches) to their own host ids — both of this sandbox alone.
 *
 * The price is that a root-owned workspace would be read-only for the
 * sandbox. An idmapped mount (mount_setattr(MOUNT_ATTR_IDMAP)) fixes that
 * without touching the files: on that mount, files owned by the workspace's
 * owner appear owned by the sandbox user's host id, and files the sandbox
 * creates are stored with the owner's ids.
 *
 * Root of a user namespace that maps no range of the pool and not even
 * FB_IDRANGE_LEGACY_ID (`unshare -r`, which maps only its creator; the
 * root of a rootless container, whose ids are a user's) is rootless: the
 * capabilities it holds end at its own namespace, and none of the ids
 * fluebox gives sandboxes are there, so the sandbox user is its own id, as
 * for an ordinary user. Being uid 0 decides nothing; which ids the
 * namespace maps does (userns_idmode).
 *
 * Rootless, the sandbox user must be the caller's own uid (nothing else can
 * write the caller's files, and unprivileged users cannot make idmapped
 * mounts), so every rootless sandbox of a user shares that uid's per-user
 * counters with the user's own processes; the namespace limits below bound
 * each sandbox's share of the ones counted per namespace (inotify). The
 * rest of 0..65535 comes from /etc/subuid through newuidmap/newgidmap: no
 * process ever runs as those ids (the sandbox has no CAP_SETUID), they only
 * make setuid()/chown() answer as on a normal system. */
#include "userns.h"

#include <fcntl.h>
#include <pthread.h>
#include <linux/capability.h>
#include <linux/mount.h>
#include <sched.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* ---- which ids ---- */

static const char *const idmap_tools[][2] = {
    {"/usr/bin/newuidmap", "/usr/bin/newgidmap"},
    {"/usr/sbin/newuidmap", "/usr/sbin/newgidmap"},
};

static int find_tools(void)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(idmap_tools); i++)
        if (access(idmap_tools[i][0], X_OK) == 0 && access(idmap_tools[i][1], X_OK) == 0)
            return (int)i;
    return -1;
}

/* The login name of uid from /etc/passwd (no NSS: fluebox is static). */
static bool user_name(uid_t uid, char *name, size_t cap)
{
    char buf[65536];
    if (fb_read_file("/etc/passwd", buf, sizeof buf) <= 0)
        return false;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
        if (!c3)
            continue;
        *c3 = 0;
        uint64_t u;
        if (fb_parse_u64(c2 + 1, &u) == 0 && u == uid && (size_t)(c1 - line) < cap) {
            snprintf(name, cap, "%.*s", (int)(c1 - line), line);
            return true;
        }
    }
    return false;
}

/* The first subordinate id range of /etc/subuid or /etc/subgid that belongs
 * to the user (by name or number) and holds at least need ids. */
static bool subid_start(const char *path, const char *name, uid_t uid, uint32_t need,
                        uint32_t *start)
{
    char buf[65536], num[16];
    if (fb_read_file(path, buf, sizeof buf) <= 0)
        return false;
    snprintf(num, sizeof num, "%u", (unsigned)uid);
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        *c1 = *c2 = 0;
        if (strcmp(line, num) != 0 && (!name || strcmp(line, name) != 0))
            continue;
        uint64_t s, n;
        if (fb_parse_u64(c1 + 1, &s) == 0 && fb_parse_u64(c2 + 1, &n) == 0 && n >= need &&
            s + need <= 4294967295u && s > 0) {
            *start = (uint32_t)s;
            return true;
        }
    }
    return false;
}

enum fb_idmode userns_idmode(void)
{
    if (geteuid() != 0)
        return FB_IDMODE_OWN;
    if (idrange_initial_userns() || idrange_pool_usable() > 0)
        return FB_IDMODE_RANGE;
    return idrange_mapped(FB_IDRANGE_LEGACY_ID, 1) ? FB_IDMODE_LEGACY : FB_IDMODE_OWN;
}

int64_t userns_outer_id(const char *map_file, uint32_t id)
{
    char path[64], buf[4096];
    snprintf(path, sizeof path, "/proc/self/%s", map_file);
    if (fb_read_file(path, buf, sizeof buf) <= 0)
        return -1;
    for (char *line = buf; *line;) {
        unsigned long in, out, count;
        if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 && id >= in && id - in < count)
            return (int64_t)(out + (id - in));
        char *nl = strchr(line, '\n');
        if (!nl)
            break;
        line = nl + 1;
    }
    return -1;
}

/* Inside ids 0..65535, and the sandbox's own id if it lies above. */
static bool fits_range(const struct fb_policy *p)
{
    return p->uid < FB_IDRANGE_SIZE && p->gid < FB_IDRANGE_SIZE;
}

int userns_host_ids(const struct fb_policy *p, struct fb_ids *ids, struct fb_err *err)
{
    memset(ids, 0, sizeof *ids);
    idrange_init(&ids->claim);
    ids->root = geteuid() == 0;
    ids->count = 1;
    if (ids->root) {
        int rc = idrange_claim(p->host_id, FB_IDRANGE_SIZE, &ids->claim, err);
        if (rc < 0)
            return -1;
        if (rc > 0 && idrange_mapped(FB_IDRANGE_LEGACY_ID, 1)) {
            /* Root of a user namespace that maps none of the pool but
             * more than its own ids (a container's): one id of its own,
             * as fluebox 0.1 did. */
            ids->host_uid = ids->range_uid = FB_IDRANGE_LEGACY_ID;
            ids->host_gid = ids->range_gid = FB_IDRANGE_LEGACY_ID;
            return 0;
        }
        if (rc > 0) {
            /* uid 0 of a user namespace that maps none of our ids
             * (`unshare -r`, a rootless container): its capabilities end
             * at that namespace. The sandbox runs as its own id, as an
             * ordinary user's does. */
            ids->root = false;
            ids->host_uid = geteuid();
            ids->host_gid = getegid();
            return 0;
        }
        ids->range_uid = ids->claim.base;
        ids->range_gid = ids->claim.base;
        if (fits_range(p)) {
            ids->count = FB_IDRANGE_SIZE;
            ids->host_uid = ids->range_uid + p->uid;
            ids->host_gid = ids->range_gid + p->gid;
        } else {
            ids->host_uid = ids->range_uid;
            ids->host_gid = ids->range_gid;
        }
        return 0;
    }
    ids->host_uid = geteuid();
    ids->host_gid = getegid();
    /* Rootless: the rest of the range from the subordinate ids, when the
     * tools that may write such maps are there. */
    if (find_tools() < 0)
        return 0;
    char name[256];
    bool named = user_name(ids->host_uid, name, sizeof name);
    uint32_t need_u = p->uid < FB_IDRANGE_SIZE ? FB_IDRANGE_SIZE - 1 : FB_IDRANGE_SIZE;
    uint32_t need_g = p->gid < FB_IDRANGE_SIZE ? FB_IDRANGE_SIZE - 1 : FB_IDRANGE_SIZE;
    uint32_t su, sg;
    if (subid_start("/etc/subuid", named ? name : NULL, ids->host_uid, need_u, &su) &&
        subid_start("/etc/subgid", named ? name : NULL, ids->host_uid, need_g, &sg)) {
        ids->count = FB_IDRANGE_SIZE;
        ids->range_uid = su;
        ids->range_gid = sg;
    }
    return 0;
}

void userns_plain_ids(const struct fb_policy *p, struct fb_ids *ids)
{
    memset(ids, 0, sizeof *ids);
    idrange_init(&ids->claim);
    ids->root = geteuid() == 0;
    ids->count = 1;
    if (ids->root) {
        uid_t h = p->host_id ? p->host_id : FB_IDRANGE_LEGACY_ID;
        ids->host_uid = ids->range_uid = h;
        ids->host_gid = ids->range_gid = h;
    } else {
        ids->host_uid = geteuid();
        ids->host_gid = getegid();
    }
}

void userns_release_ids(struct fb_ids *ids)
{
    idrange_release(&ids->claim);
}

/* ---- who creates the namespace ---- */

static pthread_mutex_t creators_mu = PTHREAD_MUTEX_INITIALIZER;
static unsigned creators; /* threads between enter and leave */
static int creators_dumpable;

int userns_creator_enter(const struct fb_ids *ids, struct fb_creator *c, struct fb_err *err)
{
    c->active = false;
    if (!userns_own_range(ids))
        return 0;
    /* Dumpable is the process's, the euid the thread's: with several
     * threads in here at once, the first saves it and the last puts it
     * back. */
    pthread_mutex_lock(&creators_mu);
    if (!creators++)
        creators_dumpable = prctl(PR_GET_DUMPABLE, 0, 0, 0, 0);
    c->dumpable = creators_dumpable;
    pthread_mutex_unlock(&creators_mu);
    /* Raw system calls: credentials are per thread in the kernel; glibc's
     * wrappers would change every thread of the process (the server's). */
    c->active = true;
    if (syscall(SYS_setresgid, -1, ids->range_gid, -1) < 0) {
        int e = errno;
        userns_creator_leave(c);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "switching to host gid %u", (unsigned)ids->range_gid);
    }
    if (syscall(SYS_setresuid, -1, ids->range_uid, -1) < 0) {
        int e = errno;
        userns_creator_leave(c);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "switching to host uid %u", (unsigned)ids->range_uid);
    }
    /* Leaving euid 0 cleared the effective set; the permitted one is kept
     * (ruid and suid are still 0). Raise it again: the clone needs
     * CAP_DAC_OVERRIDE to start the child in its cgroup (CLONE_INTO_CGROUP
     * checks cgroup.procs against the caller's credentials). */
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    if (syscall(SYS_capget, &hdr, data) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "capget");
        userns_creator_leave(c);
        return -1;
    }
    data[0].effective = data[0].permitted;
    data[1].effective = data[1].permitted;
    if (syscall(SYS_capset, &hdr, data) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "capset");
        userns_creator_leave(c);
        return -1;
    }
    return 0;
}

void userns_creator_leave(struct fb_creator *c)
{
    if (!c->active)
        return;
    int e = errno;
    /* Back to euid 0: the effective set is the permitted one again. */
    syscall(SYS_setresuid, -1, 0, -1);
    syscall(SYS_setresgid, -1, 0, -1);
    /* Changing the euid made the process not dumpable; undo that, once
     * no other thread is in here. */
    pthread_mutex_lock(&creators_mu);
    if (!--creators)
        prctl(PR_SET_DUMPABLE, c->dumpable, 0, 0, 0);
    pthread_mutex_unlock(&creators_mu);
    c->active = false;
    errno = e;
}

/* ---- the maps ---- */

static int write_lines(pid_t pid, const char *file, const char *lines, struct fb_err *err)
{
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/%s", (int)pid, file);
    if (fb_write_file(path, lines) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing %s", file);
    return 0;
}

/* "inside outside count" triples mapping inside 0..65535 to a range that
 * starts at `range`, except inside `own`, which maps to host `self`. */
static size_t rootless_extents(uint32_t own, uint32_t self, uint32_t range, uint32_t ext[3][3])
{
    size_t n = 0;
    if (own >= FB_IDRANGE_SIZE) {
        ext[n][0] = 0, ext[n][1] = range, ext[n][2] = FB_IDRANGE_SIZE, n++;
        ext[n][0] = own, ext[n][1] = self, ext[n][2] = 1, n++;
        return n;
    }
    if (own > 0)
        ext[n][0] = 0, ext[n][1] = range, ext[n][2] = own, n++;
    ext[n][0] = own, ext[n][1] = self, ext[n][2] = 1, n++;
    if (own < FB_IDRANGE_SIZE - 1)
        ext[n][0] = own + 1, ext[n][1] = range + own, ext[n][2] = FB_IDRANGE_SIZE - 1 - own, n++;
    return n;
}

/* posix_spawn one of newuidmap/newgidmap with its output to errfd. */
static pid_t spawn_tool(const char *path, pid_t target, uint32_t ext[3][3], size_t n, int errfd)
{
    char nums[10][16];
    char *argv[12];
    size_t a = 0, k = 0;
    argv[a++] = (char *)path;
    snprintf(nums[k], sizeof nums[k], "%d", (int)target);
    argv[a++] = nums[k++];
    for (size_t i = 0; i < n; i++)
        for (int j = 0; j < 3; j++) {
            snprintf(nums[k], sizeof nums[k], "%u", ext[i][j]);
            argv[a++] = nums[k++];
        }
    argv[a] = NULL;
    char *envp[] = {"PATH=/usr/bin:/bin", NULL};
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, errfd, 1);
    posix_spawn_file_actions_adddup2(&fa, errfd, 2);
    pid_t pid = -1;
    int rc = posix_spawn(&pid, path, &fa, NULL, argv, envp);
    posix_spawn_file_actions_destroy(&fa);
    if (rc) {
        errno = rc;
        return -1;
    }
    return pid;
}

static int wait_tool(pid_t pid)
{
    int st = 0;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* Rootless with subordinate ids: both tools at once (each is a setuid
 * program's start-up, about a millisecond). Returns 0, or -1 with the
 * tools' own words in err. */
static int rootless_full_maps(pid_t pid, const struct fb_policy *p, const struct fb_ids *ids,
                              struct fb_err *err)
{
    int t = find_tools();
    if (t < 0)
        return fb_errf(err, FB_EXIT_SETUP, "newuidmap/newgidmap not found");
    uint32_t ue[3][3], ge[3][3];
    size_t un = rootless_extents(p->uid, ids->host_uid, ids->range_uid, ue);
    size_t gn = rootless_extents(p->gid, ids->host_gid, ids->range_gid, ge);
    int pf[2];
    if (pipe2(pf, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    pid_t up = spawn_tool(idmap_tools[t][0], pid, ue, un, pf[1]);
    int e = errno;
    pid_t gp = up < 0 ? -1 : spawn_tool(idmap_tools[t][1], pid, ge, gn, pf[1]);
    if (up >= 0 && gp < 0)
        e = errno;
    close(pf[1]);
    int rc = 0;
    if (up < 0 || wait_tool(up) < 0)
        rc = -1;
    if (gp < 0 || wait_tool(gp) < 0)
        rc = -1;
    char out[400];
    ssize_t n = fb_read_full(pf[0], out, sizeof out - 1);
    close(pf[0]);
    if (rc == 0)
        return 0;
    out[n > 0 ? n : 0] = 0;
    for (char *s = out; *s; s++)
        if (*s == '\n')
            *s = ' ';
    if (up < 0 || gp < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "starting %s", idmap_tools[t][up < 0 ? 0 : 1]);
    }
    return fb_errf(err, FB_EXIT_SETUP, "newuidmap/newgidmap: %s", *out ? out : "failed");
}

int userns_write_maps(pid_t pid, const struct fb_policy *p, struct fb_ids *ids,
                      struct fb_err *err)
{
    char line[96];
    if (ids->root) {
        /* setgroups stays allowed: the child drops root's supplementary
         * groups (setgroups(0, NULL)). */
        if (ids->count > 1)
            snprintf(line, sizeof line, "0 %u %u\n", (unsigned)ids->range_uid, ids->count);
        else
            snprintf(line, sizeof line, "%u %u 1\n", (unsigned)p->uid, (unsigned)ids->host_uid);
        if (write_lines(pid, "uid_map", line, err) < 0)
            return -1;
        if (ids->count > 1)
            snprintf(line, sizeof line, "0 %u %u\n", (unsigned)ids->range_gid, ids->count);
        else
            snprintf(line, sizeof line, "%u %u 1\n", (unsigned)p->gid, (unsigned)ids->host_gid);
        return write_lines(pid, "gid_map", line, err);
    }
    if (ids->count > 1) {
        struct fb_err e2 = {0};
        if (rootless_full_maps(pid, p, ids, &e2) == 0)
            return 0;
        /* A map is written once or not at all: the single id still works. */
        if (!p->quiet)
            fb_note(err, "warning: %s; mapping only uid %u", e2.msg, (unsigned)ids->host_uid);
        ids->count = 1;
    }
    /* Unprivileged: setgroups must be denied before gid_map can be written. */
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/setgroups", (int)pid);
    if (fb_write_file(path, "deny") < 0 && errno != ENOENT)
        return fb_errno(err, FB_EXIT_SETUP, "writing %s", path);
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)p->uid, (unsigned)ids->host_uid);
    if (write_lines(pid, "uid_map", line, err) < 0)
        return -1;
    snprintf(line, sizeof line, "%u %u 1\n", (unsigned)p->gid, (unsigned)ids->host_gid);
    return write_lines(pid, "gid_map", line, err);
}

/* ---- the namespace's own limits ---- */

int userns_set_limits(int sysfd, struct fb_err *err)
{
    /* No nested user namespaces (the seccomp filters refuse them too):
     * without one, nothing in the sandbox can ever hold the capability that
     * creating any other namespace needs, so their own limits can stay. */
    if (fb_write_fileat(sysfd, "user/max_user_namespaces", "0\n") < 0 && errno != ENOENT)
        return fb_errno(err, FB_EXIT_SETUP, "setting /proc/sys/user/max_user_namespaces");
    /* A quarter of the host's per-user limit each: rootless sandboxes all
     * count against their user's limit at the host level. (fanotify_init
     * is denied by every built-in profile.) */
    static const struct {
        const char *name;
        const char *host;
    } shares[] = {
        {"user/max_inotify_instances", "fs/inotify/max_user_instances"},
        {"user/max_inotify_watches", "fs/inotify/max_user_watches"},
    };
    char buf[32];
    for (size_t i = 0; i < FB_ARRAY_LEN(shares); i++) {
        if (fb_read_fileat(sysfd, shares[i].host, buf, sizeof buf) <= 0)
            continue;
        long long v = strtoll(buf, NULL, 10) / 4;
        snprintf(buf, sizeof buf, "%lld\n", v < 1 ? 1 : v);
        if (fb_write_fileat(sysfd, shares[i].name, buf) < 0 && errno != ENOENT)
            return fb_errno(err, FB_EXIT_SETUP, "setting /proc/sys/%s", shares[i].name);
    }
    return 0;
}

/* ---- idmapped mounts ---- */

/* Made by a short-lived child that unshares and waits; we write its maps,
 * open its namespace, and let it go. */
int userns_map_fd(const char *uid_map, const char *gid_map, struct fb_err *err)
{
    int pipefd[2];
    if (pipe2(pipefd, O_CLOEXEC) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "pipe");
    pid_t pid = (pid_t)syscall(SYS_clone, CLONE_NEWUSER | SIGCHLD, NULL, NULL, NULL, 0);
    if (pid < 0) {
        int e = errno;
        close(pipefd[0]);
        close(pipefd[1]);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "creating the idmap user namespace");
    }
    if (pid == 0) {
        char c;
        close(pipefd[1]);
        while (read(pipefd[0], &c, 1) < 0 && errno == EINTR)
            ;
        _exit(0);
    }
    close(pipefd[0]);
    int fd = -1;
    char path[64];
    snprintf(path, sizeof path, "/proc/%d/uid_map", (int)pid);
    if (fb_write_file(path, uid_map) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "idmap uid_map");
        goto out;
    }
    snprintf(path, sizeof path, "/proc/%d/gid_map", (int)pid);
    if (fb_write_file(path, gid_map) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "idmap gid_map");
        goto out;
    }
    snprintf(path, sizeof path, "/proc/%d/ns/user", (int)pid);
    fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        fb_errno(err, FB_EXIT_SETUP, "opening %s", path);
out:
    close(pipefd[1]);
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    return fd;
}

int userns_idmap_ns(uid_t from_uid, gid_t from_gid, const struct fb_ids *ids, struct fb_err *err)
{
    char um[64], gm[64];
    snprintf(um, sizeof um, "%u %u 1\n", from_uid, ids->host_uid);
    snprintf(gm, sizeof gm, "%u %u 1\n", from_gid, ids->host_gid);
    return userns_map_fd(um, gm, err);
}

int userns_idmapped_tree_ns(const char *src, int ns, bool ro, bool recursive, struct fb_err *err)
{
    unsigned rec = recursive ? AT_RECURSIVE : 0;
    cleanup_close int tree = open_tree(AT_FDCWD, src, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | rec);
    if (tree < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: open_tree", src);
    struct mount_attr attr = {
        .attr_set = MOUNT_ATTR_IDMAP | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV |
                    (ro ? MOUNT_ATTR_RDONLY : 0),
        .userns_fd = (uint64_t)ns,
    };
    if (mount_setattr(tree, "", AT_EMPTY_PATH | rec, &attr, sizeof attr) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s: this filesystem cannot do idmapped mounts", src);
    return fb_steal_fd(tree);
}

int userns_idmapped_tree(const char *src, uid_t from_uid, gid_t from_gid,
                         const struct fb_ids *ids, bool ro, struct fb_err *err)
{
    cleanup_close int ns = userns_idmap_ns(from_uid, from_gid, ids, err);
    if (ns < 0)
        return -1;
    return userns_idmapped_tree_ns(src, ns, ro, false, err);
}
