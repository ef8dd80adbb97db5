/* doctor_probe.c — the probes of `fluebox doctor` (doctor.h): each layer
 * fluebox uses, tried for real in a throwaway child process that reports
 * the step that failed and its errno through a pipe. Nothing is left
 * behind: mounts happen in the child's own mount namespace, the one
 * scratch directory a probe needs is removed by the parent, the test
 * cgroup is removed (or swept by the next run when a child dies). */
#include "doctor.h"

#include "cgroup.h"
#include "landlock.h"
#include "policy.h"
#include "userns.h"

#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/sched.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* What a child found: ok, or the step that failed and its errno. */
struct pres {
    int ok;
    int err;
    char step[160];
    char text[320]; /* more, for probes that try several things */
};

static int fail_at(struct pres *r, const char *step)
{
    r->ok = 0;
    r->err = errno;
    snprintf(r->step, sizeof r->step, "%s", step);
    return -1;
}

/* Run fn(arg, r) in a child; r comes back through a pipe. A child that
 * dies or hangs (10 s) is reported as such. */
static void in_child(void (*fn)(void *, struct pres *), void *arg, struct pres *r)
{
    memset(r, 0, sizeof *r);
    int p[2];
    if (pipe2(p, O_CLOEXEC) < 0) {
        fail_at(r, "pipe");
        return;
    }
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        close(p[0]);
        close(p[1]);
        fail_at(r, "fork");
        return;
    }
    if (pid == 0) {
        close(p[0]);
        /* What the layer under test prints (a cgroup warning) is not ours. */
        int nul = open("/dev/null", O_WRONLY | O_CLOEXEC);
        if (nul >= 0)
            dup2(nul, 2);
        struct pres cr;
        memset(&cr, 0, sizeof cr);
        fn(arg, &cr);
        fb_write_all(p[1], &cr, sizeof cr);
        _exit(0);
    }
    close(p[1]);
    struct pollfd pfd = {.fd = p[0], .events = POLLIN};
    int n = poll(&pfd, 1, 10000);
    ssize_t got = n > 0 ? fb_read_full(p[0], r, sizeof *r) : -1;
    close(p[0]);
    if (got != (ssize_t)sizeof *r) {
        kill(pid, SIGKILL);
        memset(r, 0, sizeof *r);
        snprintf(r->step, sizeof r->step, n == 0 ? "the probe hung" : "the probe died");
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
}

static void set_status(struct fb_check *c, const struct pres *r, const char *ok_text)
{
    if (r->ok) {
        c->status = FB_CHK_OK;
        snprintf(c->detail, sizeof c->detail, "%s%s%s", ok_text, r->text[0] ? "; " : "", r->text);
    } else {
        c->status = FB_CHK_MISSING;
        c->err = r->err;
        snprintf(c->detail, sizeof c->detail, "%s%s%s%s%s", r->step, r->err ? ": " : "",
                 r->err ? strerror(r->err) : "", r->text[0] ? "; " : "", r->text);
    }
}

/* ---- the environment ---- */

static long sysctl_long(const char *path)
{
    char buf[64];
    if (fb_read_file(path, buf, sizeof buf) <= 0)
        return -1;
    return strtol(buf, NULL, 10);
}

/* "Key:\tvalue" of /proc/self/status. */
static bool status_field(const char *key, char *out, size_t cap)
{
    char buf[4096];
    if (fb_read_file("/proc/self/status", buf, sizeof buf) <= 0)
        return false;
    size_t kl = strlen(key);
    for (char *l = buf; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        if (!strncmp(l, key, kl) && l[kl] == ':') {
            const char *v = l + kl + 1;
            v += strspn(v, " \t");
            size_t vl = strcspn(v, "\n");
            snprintf(out, cap, "%.*s", (int)vl, v);
            return true;
        }
    }
    return false;
}

static void add_evidence(struct fb_doc_env *e, const char *runtime, const char *what)
{
    e->in_container = true;
    if (runtime && !e->runtime[0])
        snprintf(e->runtime, sizeof e->runtime, "%s", runtime);
    size_t l = strlen(e->evidence);
    snprintf(e->evidence + l, sizeof e->evidence - l, "%s%s", l ? "; " : "", what);
}

static void detect_container(struct fb_doc_env *e)
{
    if (access("/.dockerenv", F_OK) == 0)
        add_evidence(e, "docker", "/.dockerenv exists");
    if (access("/run/.containerenv", F_OK) == 0)
        add_evidence(e, "podman", "/run/.containerenv exists");
    const char *c = getenv("container");
    if (c && *c) {
        char buf[96];
        snprintf(buf, sizeof buf, "$container is \"%.40s\"", c);
        add_evidence(e, c, buf);
    }
    if (getenv("KUBERNETES_SERVICE_HOST"))
        add_evidence(e, "kubernetes", "$KUBERNETES_SERVICE_HOST is set");
    char buf[8192];
    if (fb_read_file("/proc/self/cgroup", buf, sizeof buf) > 0) {
        static const struct {
            const char *needle, *runtime;
        } cg[] = {{"kubepods", "kubernetes"}, {"docker", "docker"}, {"libpod", "podman"},
                  {"containerd", "containerd"}, {"/lxc", "lxc"}};
        for (size_t i = 0; i < FB_ARRAY_LEN(cg); i++)
            if (strstr(buf, cg[i].needle)) {
                char w[96];
                snprintf(w, sizeof w, "its cgroup path names %s", cg[i].needle);
                add_evidence(e, cg[i].runtime, w);
                break;
            }
    }
    /* An OCI runtime (runc, crun: Docker, containerd, Podman, Kubernetes)
     * masks parts of /proc with mounts of its own. */
    if (fb_read_file("/proc/self/mountinfo", buf, sizeof buf) > 0) {
        if (strstr(buf, " /proc/kcore ") || strstr(buf, " /proc/timer_list ") ||
            strstr(buf, " /proc/keys "))
            add_evidence(e, NULL, "parts of /proc are masked (an OCI runtime's maskedPaths)");
        if (strstr(buf, "io.containerd.snapshotter"))
            add_evidence(e, "containerd", "its root is a containerd snapshot");
        else if (strstr(buf, "/docker/overlay2/"))
            add_evidence(e, "docker", "its root is a Docker overlay");
    }
}

void doctor_env(struct fb_doc_env *e)
{
    memset(e, 0, sizeof *e);
    e->uid = geteuid();
    e->gid = getegid();
    e->uid0 = e->uid == 0;
    e->init_userns = idrange_initial_userns();
    e->idmode = userns_idmode();
    e->root = e->uid0 && e->idmode != FB_IDMODE_OWN;
    e->outer_uid = userns_outer_id("uid_map", e->uid);
    char map[4096];
    if (fb_read_file("/proc/self/uid_map", map, sizeof map) > 0) {
        unsigned long long in, out, count;
        int used;
        for (const char *m = map; sscanf(m, " %llu %llu %llu%n", &in, &out, &count, &used) == 3;
             m += used)
            e->mapped_uids += count;
    }
    char v[128];
    if (status_field("Seccomp_filters", v, sizeof v))
        e->seccomp_filters = atoi(v);
    else if (status_field("Seccomp", v, sizeof v) && atoi(v) == 2)
        e->seccomp_filters = 1;
    if (status_field("NoNewPrivs", v, sizeof v))
        e->nnp = atoi(v) == 1;
    if (status_field("CapEff", v, sizeof v))
        e->cap_sys_admin = (strtoull(v, NULL, 16) >> 21) & 1; /* CAP_SYS_ADMIN */
    if (fb_read_file("/proc/self/attr/apparmor/current", v, sizeof v) > 0 ||
        fb_read_file("/proc/self/attr/current", v, sizeof v) > 0) {
        v[strcspn(v, "\n")] = 0;
        snprintf(e->apparmor, sizeof e->apparmor, "%s", v);
    }
    e->unpriv_clone = sysctl_long("/proc/sys/kernel/unprivileged_userns_clone");
    e->max_userns = sysctl_long("/proc/sys/user/max_user_namespaces");
    e->aa_restrict = sysctl_long("/proc/sys/kernel/apparmor_restrict_unprivileged_userns");
    detect_container(e);
    /* clone3: a container runtime's seccomp profile answers it with ENOSYS
     * (libc falls back to clone; fluebox does too). */
    struct clone_args ca;
    memset(&ca, 0, sizeof ca);
    ca.exit_signal = SIGCHLD;
    fflush(NULL);
    long pid = syscall(SYS_clone3, &ca, sizeof ca);
    if (pid == 0)
        _exit(0);
    if (pid > 0)
        while (waitpid((pid_t)pid, NULL, 0) < 0 && errno == EINTR)
            ;
    e->clone3_errno = pid < 0 ? errno : 0;
    ssize_t n = readlink("/proc/self/exe", e->exe, sizeof e->exe - 1);
    e->exe[n > 0 ? n : 0] = 0;
}

/* ---- user namespaces ---- */

struct ns_arg {
    const struct fb_doc_env *e;
    bool unprivileged;
    const char *dir; /* a scratch directory to mount on */
    const char *ws;
};

/* In the child: a new user namespace where we are root (mapped to
 * ourselves), as fluebox's sandbox is. */
static int enter_userns(const struct fb_doc_env *e, struct pres *r)
{
    uid_t uid = geteuid();
    gid_t gid = getegid();
    if (unshare(CLONE_NEWUSER) < 0)
        return fail_at(r, "creating a user namespace (unshare CLONE_NEWUSER)");
    char m[64];
    if (fb_write_file("/proc/self/setgroups", "deny") < 0 && errno != ENOENT)
        return fail_at(r, "writing setgroups in the new user namespace");
    snprintf(m, sizeof m, "0 %u 1", (unsigned)uid);
    if (fb_write_file("/proc/self/uid_map", m) < 0)
        return fail_at(r, "writing uid_map in the new user namespace");
    snprintf(m, sizeof m, "0 %u 1", (unsigned)gid);
    if (fb_write_file("/proc/self/gid_map", m) < 0)
        return fail_at(r, "writing gid_map in the new user namespace");
    (void)e;
    return 0;
}

/* A new mount namespace with private propagation and a tmpfs on dir. */
static int enter_mountns(const char *dir, struct pres *r)
{
    if (unshare(CLONE_NEWNS) < 0)
        return fail_at(r, "creating a mount namespace");
    if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
        return fail_at(r, "making mounts private");
    if (dir && mount("tmpfs", dir, "tmpfs", MS_NOSUID | MS_NODEV, "size=4m,mode=0755") < 0)
        return fail_at(r, "mounting a tmpfs in the user namespace");
    return 0;
}

static void p_userns(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    if (a->unprivileged) {
        /* As root: what an ordinary user gets (nobody, no capabilities). */
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 ||
            setresuid(65534, 65534, 65534) < 0) {
            fail_at(r, "becoming an ordinary user (nobody)");
            return;
        }
        /* Changing ids made us undumpable, and /proc/self root's. */
        prctl(PR_SET_DUMPABLE, 1, 0, 0, 0);
    }
    if (enter_userns(a->e, r) < 0)
        return;
    /* AppArmor's restriction lets the namespace be made but takes the
     * capabilities in it away: using it is the test. */
    if (enter_mountns(a->unprivileged ? NULL : a->dir, r) < 0)
        return;
    r->ok = 1;
}

/* A fresh directory to mount on, outside avoid (the workspace: a layer
 * inside another is refused). */
static char *scratch_dir(void)
{
    static const char *const bases[] = {"/tmp", "/var/tmp", "/dev/shm"};
    for (size_t i = 0; i < FB_ARRAY_LEN(bases); i++) {
        char *d = fb_xasprintf("%s/fluebox-doctor.XXXXXX", bases[i]);
        if (mkdtemp(d))
            return d;
        free(d);
    }
    return NULL;
}

static void scratch_done(char *d)
{
    if (!d)
        return;
    /* The child's mounts went with its mount namespace: only empty
     * directories the probe made are left. */
    static const char *const subs[] = {"merged/x", "upper", "work/work", "work", "merged", "old",
                                       "lower"};
    for (size_t i = 0; i < FB_ARRAY_LEN(subs); i++) {
        char p[128];
        snprintf(p, sizeof p, "%s/%s", d, subs[i]);
        rmdir(p);
    }
    rmdir(d);
    free(d);
}

void doctor_userns(const struct fb_doc_env *e, bool unprivileged, struct fb_check *c)
{
    c->id = unprivileged ? "userns_unprivileged" : "userns";
    c->layer = unprivileged ? "user namespaces for ordinary users" : "user namespaces";
    char *dir = unprivileged ? NULL : scratch_dir();
    struct ns_arg a = {.e = e, .unprivileged = unprivileged, .dir = dir};
    struct pres r;
    in_child(p_userns, &a, &r);
    scratch_done(dir);
    char ok[160];
    snprintf(ok, sizeof ok, "made one%s, mapped %s and mounted in it",
             unprivileged ? " as uid 65534" : "", unprivileged ? "nobody" : "ourselves");
    set_status(c, &r, ok);
}

/* ---- the other namespaces ---- */

static void p_namespaces(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    if (enter_userns(a->e, r) < 0)
        return;
    static const struct {
        int flag;
        const char *name;
    } ns[] = {{CLONE_NEWNS, "mount"}, {CLONE_NEWPID, "pid"}, {CLONE_NEWNET, "network"},
              {CLONE_NEWIPC, "ipc"},  {CLONE_NEWUTS, "uts"}, {CLONE_NEWCGROUP, "cgroup"}};
    size_t o = 0;
    int bad = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(ns); i++) {
        if (unshare(ns[i].flag) == 0)
            continue;
        if (!bad)
            r->err = errno;
        bad++;
        o += (size_t)snprintf(r->text + o, sizeof r->text - o, "%s%s: %s", o ? ", " : "",
                              ns[i].name, strerror(errno));
        if (o >= sizeof r->text)
            break;
    }
    if (bad)
        snprintf(r->step, sizeof r->step, "%d of 6 could not be made", bad);
    r->ok = !bad;
}

void doctor_namespaces(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "namespaces";
    c->layer = "mount, pid, network, ipc, uts and cgroup namespaces";
    struct ns_arg a = {.e = e};
    struct pres r;
    in_child(p_namespaces, &a, &r);
    set_status(c, &r, "all six made inside a user namespace");
}

/* ---- procfs in a new pid namespace ---- */

static void p_procfs(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    if (enter_userns(a->e, r) < 0 || enter_mountns(a->dir, r) < 0)
        return;
    if (unshare(CLONE_NEWPID) < 0) {
        fail_at(r, "creating a pid namespace");
        return;
    }
    /* The first child is pid 1 of the new namespace; it answers through
     * shared memory. */
    struct pres *shared = mmap(NULL, sizeof *shared, PROT_READ | PROT_WRITE,
                               MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        fail_at(r, "mmap");
        return;
    }
    memset(shared, 0, sizeof *shared);
    pid_t pid = fork();
    if (pid < 0) {
        fail_at(r, "fork into the pid namespace");
        return;
    }
    if (pid == 0) {
        if (mount("proc", a->dir, "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
            fail_at(shared, "mounting a new procfs for the pid namespace");
        else
            shared->ok = 1;
        _exit(0);
    }
    while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
        ;
    *r = *shared;
}

void doctor_procfs(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "procfs";
    c->layer = "a procfs of the sandbox's own (pid namespace)";
    char *dir = scratch_dir();
    struct ns_arg a = {.e = e, .dir = dir};
    struct pres r;
    if (dir)
        in_child(p_procfs, &a, &r);
    else
        fail_at(&r, "a scratch directory in /tmp");
    scratch_done(dir);
    set_status(c, &r, "mounted one in a new pid namespace");
}

/* ---- pivot_root ---- */

static void p_pivot(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    if (enter_userns(a->e, r) < 0 || enter_mountns(a->dir, r) < 0)
        return;
    if (chdir(a->dir) < 0 || mkdir("old", 0700) < 0) {
        fail_at(r, "preparing the new root");
        return;
    }
    if (syscall(SYS_pivot_root, ".", "old") < 0) {
        fail_at(r, "pivot_root");
        return;
    }
    r->ok = 1;
}

void doctor_pivot_root(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "pivot_root";
    c->layer = "pivot_root onto a tmpfs";
    char *dir = scratch_dir();
    struct ns_arg a = {.e = e, .dir = dir};
    struct pres r;
    if (dir)
        in_child(p_pivot, &a, &r);
    else
        fail_at(&r, "a scratch directory in /tmp");
    scratch_done(dir);
    set_status(c, &r, "entered a tmpfs root in a mount namespace");
}

/* ---- seccomp ---- */

static void p_seccomp(void *arg, struct pres *r)
{
    bool notify = *(bool *)arg;
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
        fail_at(r, "no_new_privs");
        return;
    }
    struct sock_filter allow[] = {BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)};
    struct sock_filter notif[] = {
        BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
        BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_getppid, 0, 1),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_USER_NOTIF),
        BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
    };
    struct sock_fprog prog = {.len = 1, .filter = allow};
    if (!notify) {
        if (syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &prog) < 0) {
            fail_at(r, "loading a seccomp filter");
            return;
        }
        r->ok = 1;
        return;
    }
    uint32_t action = SECCOMP_RET_USER_NOTIF;
    if (syscall(SYS_seccomp, SECCOMP_GET_ACTION_AVAIL, 0, &action) < 0) {
        fail_at(r, "asking for SECCOMP_RET_USER_NOTIF");
        return;
    }
    prog.len = FB_ARRAY_LEN(notif);
    prog.filter = notif;
    int fd = (int)syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, SECCOMP_FILTER_FLAG_NEW_LISTENER,
                          &prog);
    if (fd < 0) {
        fail_at(r, "loading a filter with a listener");
        return;
    }
    r->ok = 1;
}

void doctor_seccomp(const struct fb_doc_env *e, bool notify, struct fb_check *c)
{
    c->id = notify ? "seccomp_notify" : "seccomp";
    c->layer = notify ? "seccomp user notification" : "seccomp filters";
    struct pres r;
    in_child(p_seccomp, &notify, &r);
    char ok[160];
    snprintf(ok, sizeof ok, "%s%s", notify ? "loaded a filter with a listener" : "loaded a filter",
             e->seccomp_filters ? " (on top of the one already here)" : "");
    set_status(c, &r, ok);
}

/* ---- root's own part: preparing the sandbox's mounts ---- */

static void p_root_mounts(void *arg, struct pres *r)
{
    (void)arg;
    int fd = (int)syscall(SYS_open_tree, AT_FDCWD, "/usr",
                          OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE);
    if (fd < 0) {
        fail_at(r, "cloning /usr as a detached mount (open_tree, CAP_SYS_ADMIN)");
        return;
    }
    close(fd);
    r->ok = 1;
}

void doctor_root_mounts(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "root_mounts";
    c->layer = "root prepares the sandbox's mounts";
    struct pres r;
    in_child(p_root_mounts, NULL, &r);
    set_status(c, &r, "cloned one (as fluebox run as root does for every bind)");
    (void)e;
}

/* ---- idmapped mounts, per filesystem ---- */

static const char *fs_name(long type)
{
    static const struct {
        long magic;
        const char *name;
    } fs[] = {{0xEF53, "ext4"},       {0x58465342, "xfs"},    {0x9123683E, "btrfs"},
              {0x01021994, "tmpfs"},  {0x794c7630, "overlayfs"}, {0x6969, "nfs"},
              {0x65735546, "fuse"},   {0x2FC12FC1, "zfs"},    {0x01021997, "9p"},
              {0xFF534D42, "cifs"},   {0x5346414F, "afs"},    {0xF2F52010, "f2fs"},
              {0x73717368, "squashfs"}, {0x4d44, "vfat"},     {0x63677270, "cgroup2"}};
    for (size_t i = 0; i < FB_ARRAY_LEN(fs); i++)
        if (fs[i].magic == type)
            return fs[i].name;
    return NULL;
}

static void p_idmap(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    struct stat st;
    if (stat(a->ws, &st) < 0) {
        fail_at(r, "the workspace");
        return;
    }
    struct fb_ids ids = {.root = true, .host_uid = 100000, .host_gid = 100000};
    struct fb_err err = {0};
    int fd = userns_idmapped_tree(a->ws, st.st_uid, st.st_gid, &ids, false, &err);
    if (fd < 0) {
        r->err = errno;
        snprintf(r->step, sizeof r->step, "an idmapped mount of it");
        return;
    }
    close(fd);
    r->ok = 1;
}

void doctor_idmap(const struct fb_doc_env *e, const char *ws, struct fb_check *c)
{
    c->id = "idmap";
    c->layer = "idmapped mounts (the workspace's filesystem)";
    struct statfs sf;
    char fs[64] = "an unknown filesystem";
    if (statfs(ws, &sf) == 0) {
        const char *n = fs_name((long)sf.f_type);
        if (n)
            snprintf(fs, sizeof fs, "%s", n);
        else
            snprintf(fs, sizeof fs, "filesystem 0x%lx", (unsigned long)sf.f_type);
    }
    if (!e->root) {
        c->status = FB_CHK_NA;
        snprintf(c->detail, sizeof c->detail,
                 "%s is on %s; only fluebox run as root uses idmapped mounts (rootless, the "
                 "sandbox user is you)",
                 ws, fs);
        return;
    }
    struct ns_arg a = {.e = e, .ws = ws};
    struct pres r;
    in_child(p_idmap, &a, &r);
    char ok[640];
    snprintf(ok, sizeof ok, "%s (%s): made one", ws, fs);
    set_status(c, &r, ok);
    if (!r.ok) {
        char d[sizeof c->detail];
        snprintf(d, sizeof d, "%s", c->detail);
        snprintf(c->detail, sizeof c->detail, "%.200s (%.60s): %.360s", ws, fs, d);
    }
}

/* ---- overlayfs in a user namespace (--cow) ---- */

static void p_overlay(void *arg, struct pres *r)
{
    struct ns_arg *a = arg;
    if (enter_userns(a->e, r) < 0 || enter_mountns(a->dir, r) < 0)
        return;
    /* The layers side by side on a tmpfs, as --cow stages them (the
     * lower one is the workspace there; whether its filesystem can be a
     * lower layer is the kernel's to say when --cow runs). */
    if (chdir(a->dir) < 0 || mkdir("upper", 0755) < 0 || mkdir("work", 0755) < 0 ||
        mkdir("merged", 0755) < 0 || mkdir("lower", 0755) < 0) {
        fail_at(r, "preparing the layers");
        return;
    }
    char opts[PATH_MAX * 2 + 128];
    snprintf(opts, sizeof opts, "lowerdir=%s/lower,upperdir=%s/upper,workdir=%s/work,userxattr",
             a->dir, a->dir, a->dir);
    if (mount("overlay", "merged", "overlay", 0, opts) < 0) {
        fail_at(r, "mounting an overlay with a tmpfs upper layer (userxattr)");
        return;
    }
    /* Writing through it is what --cow does. */
    if (mkdir("merged/x", 0755) < 0) {
        fail_at(r, "writing through the overlay");
        return;
    }
    r->ok = 1;
}

void doctor_overlay(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "overlay";
    c->layer = "overlayfs in a user namespace (--cow)";
    char *dir = scratch_dir();
    struct ns_arg a = {.e = e, .dir = dir};
    struct pres r;
    if (dir)
        in_child(p_overlay, &a, &r);
    else
        fail_at(&r, "a scratch directory in /tmp");
    scratch_done(dir);
    set_status(c, &r, "mounted one with a tmpfs upper layer and wrote through it");
}

/* ---- cgroups ---- */

static void p_cgroup(void *arg, struct pres *r)
{
    (void)arg;
    struct fb_policy p;
    policy_init(&p);
    p.quiet = true;
    p.limits.mem = 64 << 20;
    p.limits.pids = 64;
    p.limits.cpus = 0.5;
    struct fb_cgroup *cg = NULL;
    struct fb_err err = {0};
    if (cgroup_create(&p, &cg, &err) < 0) {
        r->err = 0;
        snprintf(r->step, sizeof r->step, "%.150s", err.msg);
        return;
    }
    const char *missing = cgroup_not_applied(cg);
    snprintf(r->text, sizeof r->text, "backend %s; applied: %s%s%s%s%s", cgroup_backend(cg),
             *cgroup_applied(cg) ? cgroup_applied(cg) : "none", *missing ? "; not: " : "",
             missing, *missing ? " — " : "", *missing ? cgroup_reason(cg) : "");
    r->ok = !*missing ? 1 : *cgroup_applied(cg) ? 2 : 0;
    if (!r->ok)
        snprintf(r->step, sizeof r->step, "no limit could be applied");
    cgroup_destroy(cg);
    policy_free(&p);
}

void doctor_cgroup(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "cgroup";
    c->layer = "cgroups: memory, pids and cpu limits";
    struct pres r;
    in_child(p_cgroup, NULL, &r);
    set_status(c, &r, "created one and set memory, pids and cpu");
    if (r.ok == 2)
        c->status = FB_CHK_DEGRADED;
    (void)e;
}

/* ---- Landlock ---- */

static void p_landlock(void *arg, struct pres *r)
{
    int abi = *(int *)arg;
    struct {
        uint64_t fs, net, scoped;
    } attr = {.fs = LANDLOCK_ACCESS_FS_WRITE_FILE};
    size_t size = abi >= 6 ? 24 : abi >= 4 ? 16 : 8;
    if (abi >= 4)
        attr.net = 1; /* LANDLOCK_ACCESS_NET_BIND_TCP */
    if (abi >= 6)
        attr.scoped = 2; /* LANDLOCK_SCOPE_SIGNAL */
    int rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
    if (rs < 0) {
        fail_at(r, "creating a ruleset");
        return;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
        syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
        fail_at(r, "entering a Landlock domain");
        return;
    }
    r->ok = 1;
}

void doctor_landlock(const struct fb_doc_env *e, struct fb_check *c, int *abi_out)
{
    c->id = "landlock";
    c->layer = "Landlock (for --isolation landlock)";
    const char *why = NULL;
    int abi = landlock_abi(&why);
    *abi_out = 0;
    if (!abi) {
        c->status = FB_CHK_MISSING;
        c->err = errno;
        snprintf(c->detail, sizeof c->detail, "%s", why);
        return;
    }
    struct pres r;
    in_child(p_landlock, &abi, &r);
    static const char *const features[] = {
        "", "files", "files (+refer)", "files (+truncate)", "files and TCP ports",
        "files, TCP ports, device ioctls", "files, TCP ports, device ioctls, signal and "
        "abstract-socket scoping", "files, TCP ports, device ioctls, signal and "
        "abstract-socket scoping, audit logging"};
    char ok[320];
    snprintf(ok, sizeof ok, "ABI %d: %s; entered a domain", abi,
             features[abi < (int)FB_ARRAY_LEN(features) ? abi : (int)FB_ARRAY_LEN(features) - 1]);
    set_status(c, &r, ok);
    if (!r.ok)
        return;
    *abi_out = abi;
    if (abi < FB_LANDLOCK_MIN_ABI)
        c->status = FB_CHK_MISSING;
    else if (abi < 6)
        c->status = FB_CHK_DEGRADED;
    (void)e;
}
