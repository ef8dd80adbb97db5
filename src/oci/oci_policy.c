/* oci_policy.c — a container's fb_policy: fluebox's boundary from the
 * profile and the run.fluebox.* annotations, what runs from the spec.
 *
 *   profile      the annotation run.fluebox.profile, else the one the binary
 *                is named for (a link fluebox-oci-strict runs strict: one
 *                RuntimeClass per profile, chosen by the cluster, which an
 *                annotation then cannot change), else the default
 *   annotations  run.fluebox.NAME=VALUE is `fluebox run --NAME VALUE` for the
 *                options that make sense for a container (allow-net, net,
 *                egress-resolve, net-log, proxy-env, report, timeout, disk,
 *                host-id, net-max-conns, net-idle, require-limits, record,
 *                record-key); a list (allow-net, egress-resolve) is
 *                comma-separated; the record's paths must be absolute and
 *                outside what the container can write (record_reach)
 *   spec         memory, pids and cpu limits (else the profile's), the
 *                hostname, the namespaces (a namespace the spec omits is
 *                created anyway, except the network one, which is the
 *                host's only where the profile permits --net host)
 *
 * Identity: the container's user namespace maps 0..65535 to a host range
 * of its own (claimed by create from the allocator, idrange.h; the
 * host-id annotation pins it, inside the allocator's pool only), or as the
 * spec's own mappings say, never to host root. Capabilities are those of the spec, inside that namespace only, and
 * limited to the set container runtimes grant by default; no_new_privs is
 * as the spec says, and every mount of the container is nosuid. */
#include "oci.h"

#include "idrange.h"
#include "policy_opts.h"
#include "profile.h"
#include "toolchain.h"

#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

/* The binary's name can carry the profile (fluebox-oci-strict). */
const char *oci_default_profile;

static const char *const ann_opts[] = {
    "allow-net", "net", "egress-resolve", "net-log", "proxy-env", "report", "timeout", "disk",
    "host-id", "net-max-conns", "net-idle", "require-limits", "seccomp-log", "quiet",
    "record", "record-key",
};

static bool is_flag(const char *opt)
{
    return !strcmp(opt, "proxy-env") || !strcmp(opt, "require-limits") ||
           !strcmp(opt, "seccomp-log") || !strcmp(opt, "quiet");
}

static bool is_list(const char *opt)
{
    return !strcmp(opt, "allow-net") || !strcmp(opt, "egress-resolve");
}

static void push(char ***v, size_t *n, char *s)
{
    *v = fb_xrealloc(*v, (*n + 2) * sizeof **v);
    (*v)[(*n)++] = s;
    (*v)[*n] = NULL;
}

/* The annotations as `fluebox run` options, the profile first. */
static int ann_argv(const struct oci_spec *s, bool existing, char ***out, size_t *n,
                    struct fb_err *err)
{
    *out = NULL;
    *n = 0;
    const char *profile = oci_default_profile;
    json_t *ann = s->annotations;
    const char *key;
    json_t *val;
    json_object_foreach(ann, key, val) {
        if (strncmp(key, "run.fluebox.", 12))
            continue;
        const char *opt = key + 12;
        const char *v = json_string_value(val);
        if (!v)
            return fb_errf(err, FB_EXIT_SETUP, "annotation %s: expected a string", key);
        if (!strcmp(opt, "profile")) {
            if (oci_default_profile && strcmp(v, oci_default_profile))
                return fb_errf(err, FB_EXIT_SETUP,
                               "annotation %s=%s: this runtime runs profile %s (its name says "
                               "so) and an annotation cannot change it", key, v,
                               oci_default_profile);
            profile = v;
            continue;
        }
        bool known = false;
        for (size_t i = 0; i < FB_ARRAY_LEN(ann_opts); i++)
            known |= !strcmp(opt, ann_opts[i]);
        if (!known)
            return fb_errf(err, FB_EXIT_SETUP, "annotation %s: unknown (run.fluebox.* takes "
                           "profile, allow-net, net, egress-resolve, net-log, proxy-env, report, "
                           "timeout, disk, host-id, net-max-conns, net-idle, require-limits, "
                           "seccomp-log, quiet, record, record-key)", key);
        if ((!strcmp(opt, "record") || !strcmp(opt, "record-key")) && v[0] != '/')
            return fb_errf(err, FB_EXIT_SETUP, "annotation %s=%s: needs an absolute path", key, v);
        /* A created container's record exists already: its supervisor
         * writes it (oci_policy). */
        if (existing && (!strcmp(opt, "record") || !strcmp(opt, "record-key")))
            continue;
        if (is_flag(opt)) {
            if (!strcmp(v, "true") || !strcmp(v, "1"))
                push(out, n, fb_xasprintf("--%s", opt));
            else if (strcmp(v, "false") && strcmp(v, "0"))
                return fb_errf(err, FB_EXIT_SETUP, "annotation %s=%s: expected true or false",
                               key, v);
            continue;
        }
        if (!is_list(opt)) {
            push(out, n, fb_xasprintf("--%s=%s", opt, v));
            continue;
        }
        cleanup_free char *copy = fb_xstrdup(v);
        char *save = NULL;
        for (char *t = strtok_r(copy, ", \t\n", &save); t; t = strtok_r(NULL, ", \t\n", &save))
            push(out, n, fb_xasprintf("--%s=%s", opt, t));
    }
    if (profile) {
        push(out, n, NULL);
        memmove(*out + 1, *out, (*n - 1) * sizeof **out);
        (*out)[0] = fb_xasprintf("--profile=%s", profile);
    }
    return 0;
}

static int resources(const struct oci_spec *s, struct fb_policy *p, struct fb_err *err)
{
    json_t *r = s->resources;
    if (!json_is_object(r))
        return 0;
    json_t *mem = json_object_get(r, "memory");
    json_t *lim = json_object_get(mem, "limit");
    if (json_is_integer(lim)) {
        json_int_t v = json_integer_value(lim);
        if (v > 0 && v < 4 * 1024 * 1024)
            return fb_errf(err, FB_EXIT_SETUP, "linux.resources.memory.limit %lld: too small "
                           "(at least 4M)", (long long)v);
        p->limits.mem = v > 0 ? v : -1;
        policy_add_override(p, "linux.resources.memory.limit %lld", (long long)v);
    }
    json_t *pids = json_object_get(json_object_get(r, "pids"), "limit");
    if (json_is_integer(pids)) {
        json_int_t v = json_integer_value(pids);
        p->limits.pids = v > 0 ? v : -1;
        policy_add_override(p, "linux.resources.pids.limit %lld", (long long)v);
    }
    json_t *cpu = json_object_get(r, "cpu");
    json_t *quota = json_object_get(cpu, "quota"), *period = json_object_get(cpu, "period");
    if (json_is_integer(quota)) {
        json_int_t q = json_integer_value(quota);
        json_int_t per = json_is_integer(period) && json_integer_value(period) > 0
                             ? json_integer_value(period)
                             : 100000;
        p->limits.cpus = q > 0 ? (double)q / (double)per : 0;
        policy_add_override(p, "linux.resources.cpu.quota %lld", (long long)q);
    }
    return 0;
}

/* ---- joining by path: never the host's own namespaces ---- */

static const char *ns_file(int type)
{
    switch (type) {
    case CLONE_NEWNET: return "net";
    case CLONE_NEWIPC: return "ipc";
    case CLONE_NEWUTS: return "uts";
    case CLONE_NEWPID: return "pid";
    case CLONE_NEWCGROUP: return "cgroup";
    case CLONE_NEWUSER: return "user";
    default: return "mnt";
    }
}

/* Is st the namespace /proc/WHO/ns/NAME? A namespace file's identity is
 * its (st_dev, st_ino) on nsfs, whichever /proc/PID/ns path reached it. */
static bool is_ns_of(const struct stat *st, const char *who, const char *name)
{
    char path[64];
    struct stat o;
    snprintf(path, sizeof path, "/proc/%s/ns/%s", who, name);
    return stat(path, &o) == 0 && o.st_dev == st->st_dev && o.st_ino == st->st_ino;
}

int oci_ns_check_host(int fd, int type, const char *path, const struct fb_policy *p,
                      struct fb_err *err)
{
    const char *name = ns_file(type);
    struct stat st;
    if (fstat(fd, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "linux.namespaces %s: %s", name, path);
    /* The runtime's own namespace is the host's (containerd and kubelet
     * run there); pid 1's too, should the runtime itself run in another. */
    if (!is_ns_of(&st, "self", name) && !is_ns_of(&st, "1", name))
        return 0;
    if (type != CLONE_NEWNET)
        return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: %s is the host's %s namespace; "
                       "a container never shares it", path, name);
    if (!p->net_host_profile)
        return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: %s is the host's network "
                       "namespace; profile %s does not permit sharing it", path, p->profile_name);
    return 0;
}

/* Each path the spec names, checked at create for a clear error (the
 * supervisor checks the namespace it opens again, oci_sup.c, and reports
 * a path it cannot open: exec reads the spec too, after the fact). */
static int joined_paths(const struct oci_spec *s, const struct fb_policy *p, struct fb_err *err)
{
    for (size_t i = 0; i < s->nns; i++) {
        if (!s->ns[i].path)
            continue;
        int fd = open(s->ns[i].path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
            continue;
        int rc = oci_ns_check_host(fd, s->ns[i].type, s->ns[i].path, p, err);
        close(fd);
        if (rc < 0)
            return -1;
    }
    return 0;
}

/* Namespaces: new ones for what the spec lists without a path, and for
 * what it omits (fluebox's boundary) except the network; joined ones are
 * the supervisor's business (oci_sup.c). */
static int namespaces(const struct oci_spec *s, struct fb_policy *p, struct fb_err *err)
{
    const struct oci_ns *n;
    if ((n = oci_spec_ns(s, CLONE_NEWUSER)) && n->path)
        return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: joining a user namespace (%s) is "
                       "not supported: every container gets its own", n->path);
    if (!(n = oci_spec_ns(s, CLONE_NEWNS)) || n->path)
        return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: a new mount namespace is needed");
    if (oci_spec_ns(s, CLONE_NEWTIME))
        return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: time namespaces are not supported");
    static const struct {
        int type;
        unsigned bit;
    } map[] = {{CLONE_NEWPID, FB_NS_PID}, {CLONE_NEWIPC, FB_NS_IPC}, {CLONE_NEWUTS, FB_NS_UTS},
               {CLONE_NEWCGROUP, FB_NS_CGROUP}, {CLONE_NEWNET, FB_NS_NET}};
    p->net_host_profile = p->net_host_allowed;
    if (joined_paths(s, p, err) < 0)
        return -1;
    p->namespaces = FB_NS_ALL;
    for (size_t i = 0; i < FB_ARRAY_LEN(map); i++)
        if ((n = oci_spec_ns(s, map[i].type)) && n->path)
            p->namespaces &= ~map[i].bit;
    n = oci_spec_ns(s, CLONE_NEWNET);
    if (!n) {
        if (p->nallow || p->net == FB_NET_ALLOW)
            return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net needs the container's own "
                           "network namespace; the spec shares the host's");
        if (!p->net_host_allowed)
            return fb_errf(err, FB_EXIT_SETUP, "the spec shares the host's network namespace "
                           "(no \"network\" in linux.namespaces); profile %s does not permit it",
                           p->profile_name);
        p->net = FB_NET_HOST;
        p->net_explicit = true;
    } else if (n->path && oci_podnet_role(s) != OCI_PODNET_NONE) {
        /* A pod's namespace with the allowlist (oci_podnet.c): the pod's
         * sandbox container takes it and serves the relay; the others
         * only join it. */
        if (p->net_explicit && p->net != FB_NET_ALLOW)
            return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.net=%s with a network namespace "
                           "joined by path (%s)", p->net == FB_NET_HOST ? "host" : "none",
                           n->path);
        p->net = FB_NET_ALLOW;
        p->net_explicit = true;
        if (oci_podnet_role(s) == OCI_PODNET_MEMBER) {
            free(p->net_log); /* the sandbox container's relay logs for the pod */
            p->net_log = NULL;
        }
    } else if (n->path) {
        if (p->nallow || p->net == FB_NET_ALLOW)
            return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.allow-net needs the container's own "
                           "network namespace; the spec joins %s", n->path);
        /* Someone else's namespace (a pod's): nothing to set up here. */
        p->net = FB_NET_HOST;
        p->net_explicit = true;
        p->net_host_allowed = true;
    } else if (p->net == FB_NET_HOST) {
        return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.net=host needs a spec without a network "
                       "namespace");
    }
    return 0;
}

static bool under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return !strncmp(path, dir, n) && (path[n] == '/' || path[n] == 0 || n == 1);
}

/* run.fluebox.record: written by the supervisor, never where the container
 * can write: not in the bundle's rootfs, not under a writable bind's
 * source, and the directory must exist. */
static int record_reach(const struct oci_spec *s, const char *record, struct fb_err *err)
{
    const char *slash = strrchr(record, '/');
    cleanup_free char *d = slash == record ? fb_xstrdup("/")
                                           : fb_xstrndup(record, (size_t)(slash - record));
    char dir[PATH_MAX];
    if (!realpath(d, dir))
        return fb_errno(err, FB_EXIT_SETUP, "run.fluebox.record %s", record);
    const char *hit = NULL;
    char src[PATH_MAX];
    if (s->root && realpath(s->root, src) && under(dir, src))
        hit = s->root;
    for (size_t i = 0; !hit && i < s->nmounts; i++) {
        const struct oci_mount *m = &s->mounts[i];
        if (m->bind && !(m->flags & MS_RDONLY) && m->src && realpath(m->src, src) &&
            under(dir, src))
            hit = m->src;
    }
    if (hit)
        return fb_errf(err, FB_EXIT_SETUP, "run.fluebox.record %s: its directory is inside %s, "
                       "which the container can write: put the record elsewhere", record, hit);
    return 0;
}

int oci_policy(const struct oci_spec *s, struct fb_policy *p, bool existing, struct fb_err *err)
{
    char **argv = NULL;
    size_t argc = 0;
    int rc = -1;
    if (ann_argv(s, existing, &argv, &argc, err) < 0)
        goto out;
    if (cli_parse_policy((int)argc, argv, p, false, err) < 0)
        goto out;
    if (existing) {
        const char *rec = json_string_value(json_object_get(s->annotations, "run.fluebox.record"));
        if (rec)
            p->record = fb_xstrdup(rec); /* written by the supervisor: said to it */
    } else if (p->record) {
        if (record_reach(s, p->record, err) < 0)
            goto out;
        /* The record asks seccomp to log what it denies, which a container
         * gets only from its own annotation (run.fluebox.seccomp-log). */
        bool log = false;
        for (size_t i = 0; i < argc; i++)
            log |= !strcmp(argv[i], "--seccomp-log");
        p->seccomp.log_denied = log;
    }
    /* A pod's author may pin a range only where the allocator could have
     * put the pod anyway (stable owners for a volume's files across
     * restarts); elsewhere is for the host's administrator (run --host-id). */
    if (p->host_id && !idrange_in_pool(p->host_id, 0)) {
        fb_errf(err, FB_EXIT_SETUP, "run.fluebox.host-id %u: a container may pin only a range "
                "inside fluebox's pool of host ids, %u-%llu", p->host_id, FB_IDRANGE_POOL_BASE,
                (unsigned long long)FB_IDRANGE_POOL_BASE +
                    (unsigned long long)FB_IDRANGE_POOL_SLOTS * FB_IDRANGE_SIZE - 1);
        goto out;
    }
    if (resources(s, p, err) < 0 || namespaces(s, p, err) < 0)
        goto out;
    /* Set-up runs as root inside (ids mapped, capabilities in the user
     * namespace only); the process's own user comes at exec. */
    p->uid = 0;
    p->gid = 0;
    free(p->hostname);
    p->hostname = fb_xstrdup(s->hostname && *s->hostname ? s->hostname : "fluebox");
    p->bind_interpreter = false;
    size_t n = 0;
    while (s->proc.args[n])
        n++;
    p->argv = fb_xcalloc(n + 1, sizeof *p->argv);
    for (size_t i = 0; i < n; i++)
        p->argv[i] = fb_xstrdup(s->proc.args[i]);
    free(p->cwd);
    p->cwd = fb_xstrdup(s->proc.cwd);
    /* Derived values and the network options' checks. No host PATH: the
     * command is looked up inside the container (":" has no entries). */
    static const struct fb_callenv no_host = {.path = ":"};
    if (policy_finish(p, &no_host, err) < 0)
        goto out;
    free(p->exec_path);
    p->exec_path = NULL;
    const struct oci_ns *nn = oci_spec_ns(s, CLONE_NEWNET);
    if (nn && nn->path)
        p->namespaces &= ~(unsigned)FB_NS_NET; /* joined (a pod's: oci_podnet.c) */
    rc = 0;
out:
    for (size_t i = 0; i < argc; i++)
        free(argv[i]);
    free(argv);
    return rc;
}

/* ---- ids ---- */

static char *map_text(const struct oci_idmap *m, size_t n)
{
    size_t cap = n * 40 + 1, o = 0;
    char *t = fb_xmalloc(cap);
    t[0] = 0;
    for (size_t i = 0; i < n; i++)
        o += (size_t)snprintf(t + o, cap - o, "%u %u %u\n", m[i].inside, m[i].host, m[i].size);
    return t;
}

static int check_map(const struct oci_idmap *m, size_t n, const char *what, struct fb_err *err)
{
    bool zero = false;
    for (size_t i = 0; i < n; i++) {
        if (!m[i].size || (uint64_t)m[i].host + m[i].size > 0xffffffffull ||
            (uint64_t)m[i].inside + m[i].size > 0xffffffffull)
            return fb_errf(err, FB_EXIT_SETUP, "%s[%zu]: bad range", what, i);
        if (m[i].host == 0)
            return fb_errf(err, FB_EXIT_SETUP, "%s[%zu] maps host id 0: fluebox never maps host "
                           "root into a container", what, i);
        zero |= m[i].inside == 0;
    }
    if (!zero)
        return fb_errf(err, FB_EXIT_SETUP, "%s: id 0 inside must be mapped", what);
    return 0;
}

int oci_id_maps(const struct oci_spec *s, uint32_t host_base, char **uid_map, char **gid_map,
                struct fb_err *err)
{
    *uid_map = *gid_map = NULL;
    if (s->nuidmap || s->ngidmap) {
        if (!s->nuidmap || !s->ngidmap)
            return fb_errf(err, FB_EXIT_SETUP, "linux.uidMappings and gidMappings go together");
        if (check_map(s->uidmap, s->nuidmap, "linux.uidMappings", err) < 0 ||
            check_map(s->gidmap, s->ngidmap, "linux.gidMappings", err) < 0)
            return -1;
        *uid_map = map_text(s->uidmap, s->nuidmap);
        *gid_map = map_text(s->gidmap, s->ngidmap);
        return 0;
    }
    if (host_base == 0 || (uint64_t)host_base + 65536 > 0xffffffffull)
        return fb_errf(err, FB_EXIT_SETUP, "host id %u: no room for 65536 ids there", host_base);
    *uid_map = fb_xasprintf("0 %u 65536\n", host_base);
    *gid_map = fb_xasprintf("0 %u 65536\n", host_base);
    return 0;
}

/* ---- capabilities ---- */

/* What container runtimes grant by default (Docker, containerd, the OCI
 * tools): inside a user namespace none of them reaches beyond it. */
static const char *const granted[] = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
    "CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
    "CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
};

int oci_caps_check(const struct oci_process *pr, struct fb_err *err)
{
    uint64_t ok = 0;
    for (size_t i = 0; i < FB_ARRAY_LEN(granted); i++)
        ok |= 1ull << oci_cap_number(granted[i]);
    for (int s = 0; s < OCI_CAP_NSETS; s++) {
        uint64_t extra = pr->caps[s] & ~ok;
        if (extra)
            return fb_errf(err, FB_EXIT_SETUP, "process.capabilities: fluebox does not grant %s "
                           "(only %s, %s, ... the runtimes' default set)",
                           oci_cap_name(__builtin_ctzll(extra)), granted[0], granted[1]);
    }
    return 0;
}
