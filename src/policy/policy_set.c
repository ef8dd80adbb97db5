/* policy_set.c — typed setters of the policy (see policy_set.h): each
 * checks one value, resolves host paths, and stores it. */
#include "policy_set.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* Normalise an absolute path inside the sandbox: must start with '/', no "..",
 * collapses "//" and "/./" and strips a trailing '/'. The root itself is
 * returned as "/" when root_ok, else refused (nothing mounts over it). */
static char *sandbox_path(const char *what, const char *path, bool root_ok, struct fb_err *err)
{
    if (path[0] != '/') {
        fb_errf(err, FB_EXIT_SETUP, "%s: the path inside must be absolute", what);
        return NULL;
    }
    char *out = fb_xmalloc(strlen(path) + 2);
    size_t o = 0;
    const char *s = path;
    while (*s) {
        while (*s == '/')
            s++;
        if (!*s)
            break;
        size_t l = strcspn(s, "/");
        if (l == 1 && s[0] == '.') {
            s += l;
            continue;
        }
        if (l == 2 && s[0] == '.' && s[1] == '.') {
            free(out);
            fb_errf(err, FB_EXIT_SETUP, "%s: \"..\" is not allowed in sandbox paths", what);
            return NULL;
        }
        out[o++] = '/';
        memcpy(out + o, s, l);
        o += l;
        s += l;
    }
    if (o == 0) {
        if (root_ok) {
            strcpy(out, "/");
            return out;
        }
        free(out);
        fb_errf(err, FB_EXIT_SETUP, "%s: cannot mount over the sandbox root", what);
        return NULL;
    }
    out[o] = 0;
    return out;
}

/* A host directory, resolved. */
static char *host_dir(const char *dir, const char *name, struct fb_err *err)
{
    struct stat st;
    if (!*dir) {
        fb_errf(err, FB_EXIT_SETUP, "%s: empty path", name);
        return NULL;
    }
    if (stat(dir, &st) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "%s %s", name, dir);
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) {
        fb_errf(err, FB_EXIT_SETUP, "%s %s: Not a directory", name, dir);
        return NULL;
    }
    char real[PATH_MAX];
    if (!realpath(dir, real)) {
        fb_errno(err, FB_EXIT_SETUP, "%s %s", name, dir);
        return NULL;
    }
    return fb_xstrdup(real);
}

int policy_set_isolation(struct fb_policy *p, const char *value, const char *name,
                         struct fb_err *err)
{
    if (!strcmp(value, "namespaces"))
        p->isolation = FB_ISO_NAMESPACES;
    else if (!strcmp(value, "landlock"))
        p->isolation = FB_ISO_LANDLOCK;
    else
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: expected namespaces or landlock", name, value);
    return 0;
}

int policy_set_workspace(struct fb_policy *p, const char *dir, const char *name,
                         struct fb_err *err)
{
    char *d = host_dir(dir, name, err);
    if (!d)
        return -1;
    free(p->workspace);
    p->workspace = d;
    return 0;
}

int policy_add_bind(struct fb_policy *p, const char *src, const char *dst, bool rw,
                    const char *name, struct fb_err *err)
{
    if (!*src)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s%s%s: empty source", name, src, dst ? ":" : "",
                       dst ? dst : "");
    char real[PATH_MAX];
    if (!realpath(src, real))
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, src);
    cleanup_free char *what = fb_xasprintf("%s %s", name, dst ? dst : real);
    cleanup_free char *d = sandbox_path(what, dst ? dst : real, false, err);
    if (!d)
        return -1;
    policy_add_mount(p, rw ? FB_MNT_BIND : FB_MNT_RO_BIND, real, d, 0);
    return 0;
}

int policy_add_tmpfs(struct fb_policy *p, const char *dst, int64_t size, const char *name,
                     struct fb_err *err)
{
    if (size < 0)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: a tmpfs needs a size (it is memory)", name,
                       dst);
    cleanup_free char *what = fb_xasprintf("%s %s", name, dst);
    cleanup_free char *d = sandbox_path(what, dst, false, err);
    if (!d)
        return -1;
    policy_add_mount(p, FB_MNT_TMPFS, NULL, d, size);
    return 0;
}

int policy_set_cwd(struct fb_policy *p, const char *dir, const char *name, struct fb_err *err)
{
    cleanup_free char *what = fb_xasprintf("%s %s", name, dir);
    char *d = sandbox_path(what, dir, true, err);
    if (!d)
        return -1;
    free(p->cwd);
    p->cwd = d;
    return 0;
}

void policy_set_cow(struct fb_policy *p, bool on)
{
    p->cow = on;
}

int policy_set_cow_upper(struct fb_policy *p, const char *dir, const char *name,
                         struct fb_err *err)
{
    char *d = host_dir(dir, name, err);
    if (!d)
        return -1;
    free(p->cow_upper);
    p->cow_upper = d;
    p->cow = true;
    return 0;
}

/* Can a file be written at path (created, or replaced)? Checked without
 * creating anything; "-" is a standard stream. */
static int check_writable(const char *path, const char *name, struct fb_err *err)
{
    if (!strcmp(path, "-"))
        return 0;
    if (!*path)
        return fb_errf(err, FB_EXIT_SETUP, "%s: empty path", name);
    struct stat st;
    if (stat(path, &st) == 0) {
        if (S_ISDIR(st.st_mode))
            return fb_errf(err, FB_EXIT_SETUP, "%s %s: Is a directory", name, path);
        if (access(path, W_OK) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, path);
        return 0;
    }
    if (errno != ENOENT)
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, path);
    const char *slash = strrchr(path, '/');
    cleanup_free char *dir = !slash ? fb_xstrdup(".")
                             : slash == path ? fb_xstrdup("/")
                                             : fb_xstrndup(path, (size_t)(slash - path));
    if (stat(dir, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, path);
    if (!S_ISDIR(st.st_mode))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: %s is not a directory", name, path, dir);
    if (access(dir, W_OK | X_OK) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, path);
    return 0;
}

static int set_out_path(char **field, const char *path, const char *name, struct fb_err *err)
{
    if (check_writable(path, name, err) < 0)
        return -1;
    free(*field);
    *field = fb_xstrdup(path);
    return 0;
}

int policy_set_changes(struct fb_policy *p, const char *path, const char *name,
                       struct fb_err *err)
{
    return set_out_path(&p->changes_out, path, name, err);
}

int policy_set_report(struct fb_policy *p, const char *path, const char *name,
                      struct fb_err *err)
{
    return set_out_path(&p->report, path, name, err);
}

int policy_set_net_log(struct fb_policy *p, const char *path, const char *name,
                       struct fb_err *err)
{
    if (!strcmp(path, "-"))
        return fb_errf(err, FB_EXIT_SETUP, "%s -: the network log goes to a file", name);
    return set_out_path(&p->net_log, path, name, err);
}

int policy_set_record(struct fb_policy *p, const char *path, const char *name, struct fb_err *err)
{
    struct stat st;
    if (!strcmp(path, "-"))
        return fb_errf(err, FB_EXIT_SETUP, "%s -: the record goes to a file", name);
    if (lstat(path, &st) == 0)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s %s: the file exists; a record is never appended to or replaced "
                       "(give a new name)", name, path);
    if (set_out_path(&p->record, path, name, err) < 0)
        return -1;
    if (!p->seccomp.learn)
        p->seccomp.log_denied = true; /* the record lists what seccomp denied */
    return 0;
}

int policy_set_record_key(struct fb_policy *p, const char *path, const char *name,
                          struct fb_err *err)
{
    if (access(path, R_OK) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", name, path);
    free(p->record_key);
    p->record_key = fb_xstrdup(path);
    return 0;
}

int policy_set_host_id(struct fb_policy *p, uint32_t id, const char *name, struct fb_err *err)
{
    if (id == 0)
        return fb_errf(err, FB_EXIT_SETUP, "%s 0: the sandbox never maps host root", name);
    if (id == UINT32_MAX)
        return fb_errf(err, FB_EXIT_SETUP, "%s %u: not a valid id", name, id);
    p->host_id = id;
    return 0;
}

int policy_set_hostname(struct fb_policy *p, const char *host, const char *name,
                        struct fb_err *err)
{
    if (!*host || strlen(host) > 64)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: 1 to 64 characters", name, host);
    if (fb_has_ctl(host))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: control characters (a newline...) are not "
                       "allowed in a host name", name, host);
    free(p->hostname);
    p->hostname = fb_xstrdup(host);
    return 0;
}

int policy_set_env(struct fb_policy *p, const char *kv, const char *name, struct fb_err *err)
{
    if (!strchr(kv, '=') || kv[0] == '=')
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: expected K=V", name, kv);
    cleanup_free char *key = fb_xstrndup(kv, (size_t)(strchr(kv, '=') - kv));
    if (fb_has_ctl(key))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: control characters are not allowed in a "
                       "variable name", name, key);
    policy_add_env_set(p, kv);
    return 0;
}

int policy_set_env_pass(struct fb_policy *p, const char *key, const char *name,
                        struct fb_err *err)
{
    if (!*key || strchr(key, '=') || fb_has_ctl(key))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: expected a variable name", name, key);
    policy_add_env_pass(p, key);
    return 0;
}

/* ---- limits ---- */

/* A size or count: -1 (unlimited) or min..max (max 0: no maximum). 0 is
 * never a limit, whether it comes from the command line or the protocol. */
static int check_limit(int64_t v, int64_t min, const char *min_text, int64_t max,
                       const char *what, const char *unit, struct fb_err *err)
{
    if (v == -1)
        return 0;
    if (v == 0)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s: 0 is not a limit (give a positive %s, or unlimited)", what, unit);
    if (v < -1)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected a positive %s, or unlimited", what,
                       unit);
    if (v < min)
        return fb_errf(err, FB_EXIT_SETUP, "%s: too small (at least %s)", what, min_text);
    if (max && v > max)
        return fb_errf(err, FB_EXIT_SETUP, "%s: too large (at most %lld)", what, (long long)max);
    return 0;
}

int policy_set_mem(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err)
{
    if (check_limit(bytes, 4 << 20, "4M", 0, what, "size", err) < 0)
        return -1;
    p->limits.mem = bytes;
    return 0;
}

int policy_set_cpus(struct fb_policy *p, double cpus, const char *what, struct fb_err *err)
{
    if (cpus == 0) {
        p->limits.cpus = 0;
        return 0;
    }
    if (!(cpus >= 0.01) || cpus > 4096)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected a number of CPUs from 0.01 to 4096",
                       what);
    p->limits.cpus = cpus;
    return 0;
}

int policy_set_pids(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err)
{
    if (check_limit(n, 1, "1", 1 << 30, what, "number", err) < 0)
        return -1;
    p->limits.pids = n;
    return 0;
}

int policy_set_disk(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err)
{
    /* The scratch space holds a few directories (/tmp, the home). */
    if (check_limit(bytes, 64 << 10, "64K", 0, what, "size", err) < 0)
        return -1;
    p->limits.disk = bytes;
    p->disk_set = true;
    return 0;
}

int policy_set_nofile(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err)
{
    if (check_limit(n, 16, "16", 1 << 30, what, "number", err) < 0)
        return -1;
    p->limits.nofile = n;
    return 0;
}

int policy_set_fsize(struct fb_policy *p, int64_t bytes, const char *what, struct fb_err *err)
{
    if (check_limit(bytes, 1, "1", 0, what, "size", err) < 0)
        return -1;
    p->limits.fsize = bytes;
    return 0;
}

int policy_set_timeout(struct fb_policy *p, int64_t ms, const char *what, struct fb_err *err)
{
    if (ms == 0 || ms < -1)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected a positive duration, or none", what);
    p->limits.timeout_ms = ms;
    return 0;
}

/* ---- network ---- */

void policy_set_net(struct fb_policy *p, enum fb_net_mode mode)
{
    p->net = mode;
    p->net_explicit = true;
}

int policy_set_max_conns(struct fb_policy *p, int64_t n, const char *what, struct fb_err *err)
{
    if (n < 1 || n > 65536)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected 1 to 65536", what);
    p->max_conns = (int)n;
    return 0;
}

int policy_set_conn_idle(struct fb_policy *p, int64_t ms, const char *what, struct fb_err *err)
{
    if (ms <= 0)
        return fb_errf(err, FB_EXIT_SETUP, "%s: expected a positive duration such as 30s or 5m",
                       what);
    p->conn_idle_ms = ms;
    return 0;
}

/* Is dir (real) at or under host path w? */
static bool under(const char *dir, const char *w)
{
    char rw[PATH_MAX];
    if (!w || !realpath(w, rw))
        return false;
    size_t n = strlen(rw);
    return !strncmp(dir, rw, n) && (dir[n] == 0 || dir[n] == '/' || (n == 1 && rw[0] == '/'));
}

/* The record's directory must not be one the sandbox can write: it could
 * remove or replace the record (an unsigned one undetectably). */
int policy_record_reach(const struct fb_policy *p, const char *record, struct fb_err *err)
{
    char *slash = strrchr(record, '/');
    cleanup_free char *d = !slash ? fb_xstrdup(".")
                           : slash == record ? fb_xstrdup("/")
                                             : fb_xstrndup(record, (size_t)(slash - record));
    char dir[PATH_MAX];
    if (!realpath(d, dir))
        return fb_errno(err, FB_EXIT_SETUP, "--record %s", record);
    const char *hit = NULL;
    if (p->workspace && !p->cow && !p->workspace_ro && under(dir, p->workspace))
        hit = p->workspace;
    for (size_t i = 0; !hit && i < p->nmounts; i++)
        if (p->mounts[i].kind == FB_MNT_BIND && under(dir, p->mounts[i].src))
            hit = p->mounts[i].src;
    if (hit)
        return fb_errf(err, FB_EXIT_SETUP, "--record %s: its directory is inside %s, which the "
                       "sandbox can write: put the record elsewhere", record, hit);
    return 0;
}
