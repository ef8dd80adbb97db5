/* oci_spec.c — the OCI runtime spec's config.json (and exec's process.json)
 * read with jansson into struct oci_spec: the subset fluebox oci runs.
 * Every field of that subset is checked here, so that a bad config fails
 * `create` with one line naming the field before anything is made. Fields
 * outside the subset are ignored, as the spec allows for unknown ones;
 * those that would weaken the boundary are refused in oci_policy.c. */
#include "oci.h"

#include <sched.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/resource.h>

static const char *const cap_names[] = {
    "CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID",
    "CAP_KILL", "CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE",
    "CAP_NET_BIND_SERVICE", "CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW",
    "CAP_IPC_LOCK", "CAP_IPC_OWNER", "CAP_SYS_MODULE", "CAP_SYS_RAWIO", "CAP_SYS_CHROOT",
    "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN", "CAP_SYS_BOOT", "CAP_SYS_NICE",
    "CAP_SYS_RESOURCE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
    "CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE",
    "CAP_MAC_ADMIN", "CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ",
    "CAP_PERFMON", "CAP_BPF", "CAP_CHECKPOINT_RESTORE",
};

int oci_cap_number(const char *name)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(cap_names); i++)
        if (!strcasecmp(name, cap_names[i]) || !strcasecmp(name, cap_names[i] + 4))
            return (int)i;
    return -1;
}

const char *oci_cap_name(int cap)
{
    return cap >= 0 && (size_t)cap < FB_ARRAY_LEN(cap_names) ? cap_names[cap] : "CAP_?";
}

static const struct {
    const char *name;
    int res;
} rlimits[] = {
    {"RLIMIT_AS", RLIMIT_AS},           {"RLIMIT_CORE", RLIMIT_CORE},
    {"RLIMIT_CPU", RLIMIT_CPU},         {"RLIMIT_DATA", RLIMIT_DATA},
    {"RLIMIT_FSIZE", RLIMIT_FSIZE},     {"RLIMIT_LOCKS", RLIMIT_LOCKS},
    {"RLIMIT_MEMLOCK", RLIMIT_MEMLOCK}, {"RLIMIT_MSGQUEUE", RLIMIT_MSGQUEUE},
    {"RLIMIT_NICE", RLIMIT_NICE},       {"RLIMIT_NOFILE", RLIMIT_NOFILE},
    {"RLIMIT_NPROC", RLIMIT_NPROC},     {"RLIMIT_RSS", RLIMIT_RSS},
    {"RLIMIT_RTPRIO", RLIMIT_RTPRIO},   {"RLIMIT_RTTIME", RLIMIT_RTTIME},
    {"RLIMIT_SIGPENDING", RLIMIT_SIGPENDING}, {"RLIMIT_STACK", RLIMIT_STACK},
};

static const struct {
    const char *name;
    int type;
} ns_types[] = {
    {"pid", CLONE_NEWPID},   {"network", CLONE_NEWNET}, {"mount", CLONE_NEWNS},
    {"ipc", CLONE_NEWIPC},   {"uts", CLONE_NEWUTS},     {"user", CLONE_NEWUSER},
    {"cgroup", CLONE_NEWCGROUP}, {"time", CLONE_NEWTIME},
};

/* Mount options: flags set, flags cleared, propagation. */
static const struct {
    const char *name;
    unsigned long set, clear, prop;
    int bind; /* 1 bind, 2 rbind */
} mopts[] = {
    {"ro", MS_RDONLY, 0, 0, 0},          {"rw", 0, MS_RDONLY, 0, 0},
    {"nosuid", MS_NOSUID, 0, 0, 0},      {"suid", 0, MS_NOSUID, 0, 0},
    {"nodev", MS_NODEV, 0, 0, 0},        {"dev", 0, MS_NODEV, 0, 0},
    {"noexec", MS_NOEXEC, 0, 0, 0},      {"exec", 0, MS_NOEXEC, 0, 0},
    {"sync", MS_SYNCHRONOUS, 0, 0, 0},   {"async", 0, MS_SYNCHRONOUS, 0, 0},
    {"dirsync", MS_DIRSYNC, 0, 0, 0},    {"remount", MS_REMOUNT, 0, 0, 0},
    {"mand", 0, 0, 0, 0},                {"nomand", 0, 0, 0, 0},
    {"atime", 0, MS_NOATIME, 0, 0},      {"noatime", MS_NOATIME, 0, 0, 0},
    {"diratime", 0, MS_NODIRATIME, 0, 0}, {"nodiratime", MS_NODIRATIME, 0, 0, 0},
    {"relatime", MS_RELATIME, 0, 0, 0},  {"norelatime", 0, MS_RELATIME, 0, 0},
    {"strictatime", MS_STRICTATIME, 0, 0, 0}, {"nostrictatime", 0, MS_STRICTATIME, 0, 0},
    {"bind", 0, 0, 0, 1},                {"rbind", 0, 0, 0, 2},
    {"private", 0, 0, MS_PRIVATE, 0},    {"rprivate", 0, 0, MS_PRIVATE | MS_REC, 0},
    {"shared", 0, 0, MS_SHARED, 0},      {"rshared", 0, 0, MS_SHARED | MS_REC, 0},
    {"slave", 0, 0, MS_SLAVE, 0},        {"rslave", 0, 0, MS_SLAVE | MS_REC, 0},
    {"unbindable", 0, 0, MS_UNBINDABLE, 0}, {"runbindable", 0, 0, MS_UNBINDABLE | MS_REC, 0},
    /* Hints for runc that fluebox does not need. */
    {"tmpcopyup", 0, 0, 0, 0},           {"defaults", 0, 0, 0, 0},
};

/* JSON numbers above INT64_MAX (RLIM_INFINITY, 18446744073709551615, in
 * rlimits; -1 written as uint64 elsewhere) are refused by jansson: they
 * are read as -1, "unlimited", everywhere fluebox takes an unsigned
 * number. Strings are left alone. */
static void big_ints(char *t)
{
    bool in_str = false;
    for (char *s = t; *s; s++) {
        if (in_str) {
            if (*s == '\\' && s[1])
                s++;
            else if (*s == '"')
                in_str = false;
            continue;
        }
        if (*s == '"') {
            in_str = true;
            continue;
        }
        if (*s < '0' || *s > '9' || (s > t && (s[-1] == '.' || s[-1] == 'e' || s[-1] == 'E')))
            continue;
        size_t n = strspn(s, "0123456789");
        bool big = n > 19 || (n == 19 && strncmp(s, "9223372036854775807", 19) > 0);
        if (big && s[n] != '.' && s[n] != 'e' && s[n] != 'E') {
            s[0] = '-';
            s[1] = '1';
            memset(s + 2, ' ', n - 2);
        }
        s += n - 1;
    }
}

json_t *oci_json_load(const char *path, json_error_t *je)
{
    FILE *f = strcmp(path, "-") ? fopen(path, "re") : stdin;
    if (!f) {
        snprintf(je->text, sizeof je->text, "%s", strerror(errno));
        je->line = 0;
        return NULL;
    }
    size_t cap = 4096, len = 0;
    char *buf = fb_xmalloc(cap);
    size_t n;
    while ((n = fread(buf + len, 1, cap - len - 1, f)) > 0) {
        len += n;
        if (cap - len < 2) {
            if (cap > (64u << 20)) { /* far beyond any config */
                if (f != stdin)
                    fclose(f);
                free(buf);
                snprintf(je->text, sizeof je->text, "larger than 64 MiB");
                je->line = 0;
                return NULL;
            }
            cap *= 2;
            buf = fb_xrealloc(buf, cap);
        }
    }
    buf[len] = 0;
    if (f != stdin)
        fclose(f);
    big_ints(buf);
    json_t *j = json_loadb(buf, len, JSON_REJECT_DUPLICATES, je);
    free(buf);
    return j;
}

static char *xstr(json_t *j)
{
    return json_is_string(j) ? fb_xstrdup(json_string_value(j)) : NULL;
}

static void free_strv(char **v)
{
    for (char **s = v; s && *s; s++)
        free(*s);
    free(v);
}

/* A JSON array of strings into a NULL-terminated vector (NULL for null). */
static int strv(json_t *j, char ***out, const char *what, struct fb_err *err)
{
    *out = NULL;
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_array(j))
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected an array of strings", what);
    size_t n = json_array_size(j);
    char **v = fb_xcalloc(n + 1, sizeof *v);
    for (size_t i = 0; i < n; i++) {
        json_t *e = json_array_get(j, i);
        if (!json_is_string(e)) {
            free_strv(v);
            return fb_errf(err, FB_EXIT_SETUP, "%s[%zu]: expected a string", what, i);
        }
        v[i] = fb_xstrdup(json_string_value(e));
    }
    *out = v;
    return 0;
}

static size_t strv_len(char **v)
{
    size_t n = 0;
    while (v && v[n])
        n++;
    return n;
}

static int u32_of(json_t *j, uint32_t *out, const char *what, struct fb_err *err)
{
    if (!json_is_integer(j) || json_integer_value(j) < 0 ||
        json_integer_value(j) > (json_int_t)UINT32_MAX)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected an unsigned 32-bit number", what);
    *out = (uint32_t)json_integer_value(j);
    return 0;
}

static int u64_of(json_t *j, uint64_t *out, const char *what, struct fb_err *err)
{
    /* Numbers above INT64_MAX (RLIM_INFINITY) arrive as -1 (big_ints). */
    if (json_is_integer(j) && json_integer_value(j) >= -1) {
        *out = json_integer_value(j) < 0 ? UINT64_MAX : (uint64_t)json_integer_value(j);
        return 0;
    }
    return fb_errf(err, FB_EXIT_SETUP, "%s: expected an unsigned number", what);
}

static int caps_of(json_t *j, struct oci_process *pr, struct fb_err *err)
{
    static const char *const sets[OCI_CAP_NSETS] = {"bounding", "effective", "inheritable",
                                                    "permitted", "ambient"};
    if (!j || json_is_null(j))
        return 0;
    if (!json_is_object(j))
        return fb_errf(err, FB_EXIT_SETUP, "process.capabilities: expected an object");
    pr->caps_set = true;
    for (int s = 0; s < OCI_CAP_NSETS; s++) {
        json_t *a = json_object_get(j, sets[s]);
        if (!a || json_is_null(a))
            continue;
        if (!json_is_array(a))
            return fb_errf(err, FB_EXIT_SETUP, "process.capabilities.%s: expected an array",
                           sets[s]);
        for (size_t i = 0; i < json_array_size(a); i++) {
            const char *n = json_string_value(json_array_get(a, i));
            int c = n ? oci_cap_number(n) : -1;
            if (c < 0)
                return fb_errf(err, FB_EXIT_SETUP, "process.capabilities.%s[%zu]: unknown "
                               "capability \"%s\"", sets[s], i, n ? n : "?");
            pr->caps[s] |= 1ull << c;
        }
    }
    return 0;
}

int oci_process_parse(json_t *j, struct oci_process *pr, const char *where, struct fb_err *err)
{
    memset(pr, 0, sizeof *pr);
    pr->umask = -1;
    if (oci_schema_process(j, where, err) < 0)
        return -1;
    char what[64];
    snprintf(what, sizeof what, "%s.args", where);
    if (strv(json_object_get(j, "args"), &pr->args, what, err) < 0)
        return -1;
    if (!pr->args || !pr->args[0] || !pr->args[0][0])
        return fb_errf(err, FB_EXIT_SETUP, "%s.args: at least the command is needed", where);
    snprintf(what, sizeof what, "%s.env", where);
    if (strv(json_object_get(j, "env"), &pr->env, what, err) < 0)
        return -1;
    if (!pr->env)
        pr->env = fb_xcalloc(1, sizeof *pr->env);
    pr->cwd = xstr(json_object_get(j, "cwd"));
    if (!pr->cwd)
        pr->cwd = fb_xstrdup("/");
    if (pr->cwd[0] != '/')
        return fb_errf(err, FB_EXIT_SETUP, "%s.cwd \"%s\": must be absolute", where, pr->cwd);
    pr->terminal = json_is_true(json_object_get(j, "terminal"));
    json_t *cs = json_object_get(j, "consoleSize");
    if (json_is_object(cs)) {
        pr->rows = (unsigned)json_integer_value(json_object_get(cs, "height"));
        pr->cols = (unsigned)json_integer_value(json_object_get(cs, "width"));
    }
    json_t *u = json_object_get(j, "user");
    if (u && !json_is_null(u)) {
        if (!json_is_object(u))
            return fb_errf(err, FB_EXIT_SETUP, "%s.user: expected an object", where);
        json_t *v;
        if ((v = json_object_get(u, "uid")) && u32_of(v, &pr->uid, "process.user.uid", err) < 0)
            return -1;
        if ((v = json_object_get(u, "gid")) && u32_of(v, &pr->gid, "process.user.gid", err) < 0)
            return -1;
        if ((v = json_object_get(u, "umask")) && !json_is_null(v)) {
            uint32_t m;
            if (u32_of(v, &m, "process.user.umask", err) < 0)
                return -1;
            pr->umask = m & 0777;
        }
        json_t *g = json_object_get(u, "additionalGids");
        if (json_is_array(g)) {
            pr->ngids = json_array_size(g);
            pr->gids = fb_xcalloc(pr->ngids ? pr->ngids : 1, sizeof *pr->gids);
            for (size_t i = 0; i < pr->ngids; i++)
                if (u32_of(json_array_get(g, i), &pr->gids[i], "process.user.additionalGids",
                           err) < 0)
                    return -1;
        }
        if (json_object_get(u, "username") && json_is_string(json_object_get(u, "username")) &&
            *json_string_value(json_object_get(u, "username")))
            return fb_errf(err, FB_EXIT_SETUP, "%s.user.username: only numeric ids are "
                           "supported on Linux", where);
    }
    if (caps_of(json_object_get(j, "capabilities"), pr, err) < 0)
        return -1;
    pr->no_new_privs = json_is_true(json_object_get(j, "noNewPrivileges"));
    json_t *rl = json_object_get(j, "rlimits");
    if (json_is_array(rl)) {
        pr->nrlimits = json_array_size(rl);
        pr->rlimits = fb_xcalloc(pr->nrlimits ? pr->nrlimits : 1, sizeof *pr->rlimits);
        for (size_t i = 0; i < pr->nrlimits; i++) {
            json_t *e = json_array_get(rl, i);
            const char *t = json_string_value(json_object_get(e, "type"));
            int res = -1;
            for (size_t k = 0; t && k < FB_ARRAY_LEN(rlimits); k++)
                if (!strcmp(t, rlimits[k].name))
                    res = rlimits[k].res;
            if (res < 0)
                return fb_errf(err, FB_EXIT_SETUP, "%s.rlimits[%zu]: unknown type \"%s\"",
                               where, i, t ? t : "?");
            pr->rlimits[i].resource = res;
            if (u64_of(json_object_get(e, "soft"), &pr->rlimits[i].soft, "rlimits.soft", err) < 0 ||
                u64_of(json_object_get(e, "hard"), &pr->rlimits[i].hard, "rlimits.hard", err) < 0)
                return -1;
            if (pr->rlimits[i].soft > pr->rlimits[i].hard)
                return fb_errf(err, FB_EXIT_SETUP, "%s.rlimits[%zu] (%s): soft above hard",
                               where, i, t);
        }
    }
    json_t *oom = json_object_get(j, "oomScoreAdj");
    if (json_is_integer(oom)) {
        json_int_t v = json_integer_value(oom);
        if (v < -1000 || v > 1000)
            return fb_errf(err, FB_EXIT_SETUP, "%s.oomScoreAdj %lld: out of -1000..1000", where,
                           (long long)v);
        pr->has_oom_score = true;
        pr->oom_score = (int)v;
    }
    return 0;
}

void oci_process_free(struct oci_process *pr)
{
    free_strv(pr->args);
    free_strv(pr->env);
    free(pr->cwd);
    free(pr->gids);
    free(pr->rlimits);
    memset(pr, 0, sizeof *pr);
}

static char *abs_in(const char *bundle, const char *path)
{
    if (path[0] == '/')
        return fb_xstrdup(path);
    return fb_xasprintf("%s/%s", bundle, path);
}

static int mount_of(json_t *j, size_t idx, const char *bundle, struct oci_mount *m,
                    struct fb_err *err)
{
    memset(m, 0, sizeof *m);
    const char *dst = json_string_value(json_object_get(j, "destination"));
    if (!dst || dst[0] != '/')
        return fb_errf(err, FB_EXIT_SETUP, "mounts[%zu].destination: an absolute path is needed",
                       idx);
    m->dst = fb_xstrdup(dst);
    const char *type = json_string_value(json_object_get(j, "type"));
    m->type = fb_xstrdup(type ? type : "");
    json_t *opts = json_object_get(j, "options");
    size_t dl = 0;
    char *data = fb_xcalloc(1, 1);
    for (size_t i = 0; json_is_array(opts) && i < json_array_size(opts); i++) {
        const char *o = json_string_value(json_array_get(opts, i));
        if (!o)
            continue;
        bool known = false;
        for (size_t k = 0; k < FB_ARRAY_LEN(mopts); k++) {
            if (strcmp(o, mopts[k].name))
                continue;
            known = true;
            m->flags = (m->flags | mopts[k].set) & ~mopts[k].clear;
            m->clear = (m->clear | mopts[k].clear) & ~mopts[k].set;
            if (mopts[k].prop)
                m->propagation = mopts[k].prop;
            if (mopts[k].bind) {
                m->bind = true;
                m->recursive = mopts[k].bind == 2;
            }
        }
        if (known)
            continue;
        size_t ol = strlen(o);
        data = fb_xrealloc(data, dl + ol + 2);
        if (dl)
            data[dl++] = ',';
        memcpy(data + dl, o, ol + 1);
        dl += ol;
    }
    m->data = data;
    if (!strcmp(m->type, "bind") || !strcmp(m->type, "rbind")) {
        m->bind = true;
        if (!strcmp(m->type, "rbind"))
            m->recursive = true;
    }
    const char *src = json_string_value(json_object_get(j, "source"));
    if (m->bind) {
        if (!src || !*src)
            return fb_errf(err, FB_EXIT_SETUP, "mounts[%zu] (%s): a bind needs a source", idx, dst);
        m->src = abs_in(bundle, src);
    } else {
        m->src = fb_xstrdup(src ? src : m->type);
    }
    return 0;
}

static int idmaps(json_t *j, struct oci_idmap **out, size_t *n, const char *what,
                  struct fb_err *err)
{
    *out = NULL;
    *n = 0;
    if (!json_is_array(j))
        return 0;
    *n = json_array_size(j);
    *out = fb_xcalloc(*n ? *n : 1, sizeof **out);
    for (size_t i = 0; i < *n; i++) {
        json_t *e = json_array_get(j, i);
        if (u32_of(json_object_get(e, "containerID"), &(*out)[i].inside, what, err) < 0 ||
            u32_of(json_object_get(e, "hostID"), &(*out)[i].host, what, err) < 0 ||
            u32_of(json_object_get(e, "size"), &(*out)[i].size, what, err) < 0)
            return -1;
    }
    return 0;
}

static int hooks_of(json_t *j, struct oci_spec *s, struct fb_err *err)
{
    static const char *const kinds[OCI_HOOK_NKINDS] = {
        "prestart", "createRuntime", "createContainer", "startContainer", "poststart", "poststop"};
    if (!json_is_object(j))
        return 0;
    for (int k = 0; k < OCI_HOOK_NKINDS; k++) {
        json_t *a = json_object_get(j, kinds[k]);
        if (!json_is_array(a))
            continue;
        size_t n = json_array_size(a);
        s->hooks[k] = fb_xcalloc(n ? n : 1, sizeof *s->hooks[k]);
        s->nhooks[k] = n;
        for (size_t i = 0; i < n; i++) {
            json_t *h = json_array_get(a, i);
            struct oci_hook *hk = &s->hooks[k][i];
            hk->path = xstr(json_object_get(h, "path"));
            if (!hk->path || hk->path[0] != '/')
                return fb_errf(err, FB_EXIT_SETUP, "hooks.%s[%zu].path: an absolute path is "
                               "needed", kinds[k], i);
            char what[64];
            snprintf(what, sizeof what, "hooks.%s[%zu].args", kinds[k], i);
            if (strv(json_object_get(h, "args"), &hk->args, what, err) < 0)
                return -1;
            snprintf(what, sizeof what, "hooks.%s[%zu].env", kinds[k], i);
            if (strv(json_object_get(h, "env"), &hk->env, what, err) < 0)
                return -1;
            json_t *t = json_object_get(h, "timeout");
            if (t && !json_is_null(t)) {
                if (!json_is_integer(t) || json_integer_value(t) <= 0)
                    return fb_errf(err, FB_EXIT_SETUP, "hooks.%s[%zu].timeout: must be a "
                                   "positive number of seconds", kinds[k], i);
                hk->timeout = (int)json_integer_value(t);
            }
        }
    }
    return 0;
}

static int strlist(json_t *j, char ***out, size_t *n, const char *what, struct fb_err *err)
{
    if (strv(j, out, what, err) < 0)
        return -1;
    *n = strv_len(*out);
    for (size_t i = 0; i < *n; i++)
        if ((*out)[i][0] != '/')
            return fb_errf(err, FB_EXIT_SETUP, "%s[%zu] \"%s\": must be absolute", what, i,
                           (*out)[i]);
    return 0;
}

static int parse(struct oci_spec *s, struct fb_err *err)
{
    json_t *j = s->json;
    if (oci_schema_spec(j, err) < 0)
        return -1;
    const char *ver = json_string_value(json_object_get(j, "ociVersion"));
    if (!ver || strncmp(ver, "1.", 2))
        return fb_errf(err, FB_EXIT_SETUP, "config.json: ociVersion \"%s\" is not 1.x",
                       ver ? ver : "");
    json_t *root = json_object_get(j, "root");
    const char *rp = json_string_value(json_object_get(root, "path"));
    if (!rp || !*rp)
        return fb_errf(err, FB_EXIT_SETUP, "config.json: root.path is needed");
    s->root = abs_in(s->bundle, rp);
    s->root_ro = json_is_true(json_object_get(root, "readonly"));
    s->hostname = xstr(json_object_get(j, "hostname"));
    if (s->hostname && strlen(s->hostname) > 64)
        return fb_errf(err, FB_EXIT_SETUP, "hostname: at most 64 characters");
    json_t *proc = json_object_get(j, "process");
    if (!proc)
        return fb_errf(err, FB_EXIT_SETUP, "config.json: process is needed");
    if (oci_process_parse(proc, &s->proc, "process", err) < 0)
        return -1;
    json_t *ms = json_object_get(j, "mounts");
    if (json_is_array(ms)) {
        s->nmounts = json_array_size(ms);
        s->mounts = fb_xcalloc(s->nmounts ? s->nmounts : 1, sizeof *s->mounts);
        for (size_t i = 0; i < s->nmounts; i++)
            if (mount_of(json_array_get(ms, i), i, s->bundle, &s->mounts[i], err) < 0)
                return -1;
    }
    s->annotations = json_object_get(j, "annotations");
    if (hooks_of(json_object_get(j, "hooks"), s, err) < 0)
        return -1;
    json_t *lx = json_object_get(j, "linux");
    if (!json_is_object(lx))
        return 0;
    json_t *nss = json_object_get(lx, "namespaces");
    for (size_t i = 0; json_is_array(nss) && i < json_array_size(nss); i++) {
        json_t *e = json_array_get(nss, i);
        const char *t = json_string_value(json_object_get(e, "type"));
        int type = 0;
        for (size_t k = 0; t && k < FB_ARRAY_LEN(ns_types); k++)
            if (!strcmp(t, ns_types[k].name))
                type = ns_types[k].type;
        if (!type)
            return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces[%zu]: unknown type \"%s\"", i,
                           t ? t : "?");
        if (oci_spec_ns(s, type))
            return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: \"%s\" is listed twice", t);
        if (s->nns >= FB_ARRAY_LEN(s->ns))
            return fb_errf(err, FB_EXIT_SETUP, "linux.namespaces: too many");
        const char *path = json_string_value(json_object_get(e, "path"));
        s->ns[s->nns].type = type;
        s->ns[s->nns].path = path && *path ? fb_xstrdup(path) : NULL;
        s->nns++;
    }
    if (idmaps(json_object_get(lx, "uidMappings"), &s->uidmap, &s->nuidmap,
               "linux.uidMappings", err) < 0 ||
        idmaps(json_object_get(lx, "gidMappings"), &s->gidmap, &s->ngidmap,
               "linux.gidMappings", err) < 0)
        return -1;
    if (strlist(json_object_get(lx, "maskedPaths"), &s->masked, &s->nmasked,
                "linux.maskedPaths", err) < 0 ||
        strlist(json_object_get(lx, "readonlyPaths"), &s->readonly, &s->nreadonly,
                "linux.readonlyPaths", err) < 0)
        return -1;
    const char *cp = json_string_value(json_object_get(lx, "cgroupsPath"));
    s->cgroups_path = cp && *cp ? fb_xstrdup(cp) : NULL;
    const char *prop = json_string_value(json_object_get(lx, "rootfsPropagation"));
    if (prop && *prop) {
        static const struct {
            const char *n;
            unsigned long f;
        } props[] = {{"private", MS_PRIVATE}, {"rprivate", MS_PRIVATE | MS_REC},
                     {"shared", MS_SHARED}, {"rshared", MS_SHARED | MS_REC},
                     {"slave", MS_SLAVE}, {"rslave", MS_SLAVE | MS_REC},
                     {"unbindable", MS_UNBINDABLE}, {"runbindable", MS_UNBINDABLE | MS_REC}};
        for (size_t k = 0; k < FB_ARRAY_LEN(props); k++)
            if (!strcmp(prop, props[k].n))
                s->rootfs_propagation = props[k].f;
        if (!s->rootfs_propagation)
            return fb_errf(err, FB_EXIT_SETUP, "linux.rootfsPropagation \"%s\": unknown", prop);
    }
    s->devices = json_object_get(lx, "devices");
    for (size_t i = 0; json_is_array(s->devices) && i < json_array_size(s->devices); i++) {
        json_t *d = json_array_get(s->devices, i);
        const char *p = json_string_value(json_object_get(d, "path"));
        const char *t = json_string_value(json_object_get(d, "type"));
        if (!p || p[0] != '/' || !t || strlen(t) != 1 || !strchr("cbup", t[0]))
            return fb_errf(err, FB_EXIT_SETUP, "linux.devices[%zu]: a path and a type (c, b, u "
                           "or p) are needed", i);
    }
    s->resources = json_object_get(lx, "resources");
    s->seccomp = json_object_get(lx, "seccomp");
    s->sysctl = json_object_get(lx, "sysctl");
    return 0;
}

int oci_spec_load(const char *bundle, const char *path, struct oci_spec *s, struct fb_err *err)
{
    memset(s, 0, sizeof *s);
    char real[4096];
    if (!realpath(bundle, real)) {
        if (!path) /* with path (a saved config), the bundle may be gone */
            return fb_errno(err, FB_EXIT_SETUP, "bundle %s", bundle);
        snprintf(real, sizeof real, "%s", bundle);
    }
    s->bundle = fb_xstrdup(real);
    cleanup_free char *file = path ? fb_xstrdup(path) : fb_xasprintf("%s/config.json", real);
    json_error_t je;
    s->json = oci_json_load(file, &je);
    if (!s->json) {
        if (access(file, R_OK) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s", file);
        return fb_errf(err, FB_EXIT_SETUP, "%s:%d: %s", file, je.line, je.text);
    }
    return parse(s, err);
}

const struct oci_ns *oci_spec_ns(const struct oci_spec *s, int type)
{
    for (size_t i = 0; i < s->nns; i++)
        if (s->ns[i].type == type)
            return &s->ns[i];
    return NULL;
}

void oci_spec_free(struct oci_spec *s)
{
    free(s->bundle);
    free(s->root);
    free(s->hostname);
    oci_process_free(&s->proc);
    for (size_t i = 0; i < s->nmounts; i++) {
        free(s->mounts[i].dst);
        free(s->mounts[i].type);
        free(s->mounts[i].src);
        free(s->mounts[i].data);
    }
    free(s->mounts);
    for (size_t i = 0; i < s->nns; i++)
        free(s->ns[i].path);
    free(s->uidmap);
    free(s->gidmap);
    free_strv(s->masked);
    free_strv(s->readonly);
    free(s->cgroups_path);
    for (int k = 0; k < OCI_HOOK_NKINDS; k++) {
        for (size_t i = 0; i < s->nhooks[k]; i++) {
            free(s->hooks[k][i].path);
            free_strv(s->hooks[k][i].args);
            free_strv(s->hooks[k][i].env);
        }
        free(s->hooks[k]);
    }
    json_decref(s->json);
    memset(s, 0, sizeof *s);
}
