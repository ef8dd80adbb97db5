/* harden.c — capability dropping, no_new_privs, rlimits, the sandbox's
 * environment and exec with env(1)-style exit codes. */
#include "harden.h"

#include "netns.h"

#include <linux/capability.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>

/* No capability in the permitted set (so none can come back). */
static bool holds_no_caps(void)
{
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capget, &hdr, data) < 0)
        return false;
    return !data[0].permitted && !data[1].permitted;
}

int harden_drop_caps(struct fb_err *err)
{
    /* Bounding set first (needs CAP_SETPCAP, which we still hold). A
     * process without any capability (an ordinary user's under
     * --isolation landlock, which has no user namespace) cannot change it;
     * it then only matters to execve of a set-id or file-capability
     * program, which no_new_privs, set below, makes grant nothing. */
    bool capless = holds_no_caps();
    for (int cap = 0; cap <= 63; cap++) {
        int r = prctl(PR_CAPBSET_READ, cap, 0, 0, 0);
        if (r < 0)
            break; /* past the last capability this kernel knows */
        if (r == 0)
            continue;
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0) {
            if (errno == EPERM && capless)
                break;
            return fb_errno(err, FB_EXIT_SETUP, "dropping capability %d from the bounding set", cap);
        }
    }
    if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0 && errno != EINVAL)
        return fb_errno(err, FB_EXIT_SETUP, "clearing ambient capabilities");
    struct __user_cap_header_struct hdr = {_LINUX_CAPABILITY_VERSION_3, 0};
    struct __user_cap_data_struct data[2];
    memset(data, 0, sizeof data);
    if (syscall(SYS_capset, &hdr, data) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "dropping capabilities");
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "setting no_new_privs");
    return 0;
}

/* RLIMIT_MSGQUEUE of every sandbox (run, server): a quarter of the
 * kernel's default per-user 819,200 bytes. */
#define FB_SANDBOX_MSGQUEUE_BYTES 204800

static int set_limit(int res, int64_t v, const char *name, struct fb_err *err)
{
    struct rlimit rl;
    if (getrlimit(res, &rl) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "getrlimit %s", name);
    rlim_t want = v < 0 ? RLIM_INFINITY : (rlim_t)v;
    /* Never raise above the hard limit we were given. */
    if (rl.rlim_max != RLIM_INFINITY && (want == RLIM_INFINITY || want > rl.rlim_max))
        want = rl.rlim_max;
    rl.rlim_cur = rl.rlim_max = want;
    if (setrlimit(res, &rl) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "setrlimit %s", name);
    return 0;
}

int harden_rlimits(const struct fb_policy *p, bool nproc_fallback, struct fb_err *err)
{
    if (set_limit(RLIMIT_CORE, 0, "core", err) < 0)
        return -1;
    if (p->limits.nofile != 0 && set_limit(RLIMIT_NOFILE, p->limits.nofile, "nofile", err) < 0)
        return -1;
    /* A --cow-upper layer lives on a file system fluebox cannot size
     * (cow.c measures it while the command runs): no one file may take
     * more than --disk there, whatever was written before the check. */
    int64_t fsize = p->limits.fsize;
    if (p->cow && p->cow_upper && p->limits.disk > 0 && (fsize <= 0 || fsize > p->limits.disk))
        fsize = p->limits.disk;
    if (fsize != 0 && set_limit(RLIMIT_FSIZE, fsize, "fsize", err) < 0)
        return -1;
    /* POSIX message queues: the kernel charges their bytes to the user,
     * and a rootless sandbox's user is the caller's. A quarter of the
     * default budget per sandbox (two queues of the default size) leaves
     * the caller and the next sandbox theirs (README, rootless). */
    struct rlimit mq;
    if (getrlimit(RLIMIT_MSGQUEUE, &mq) == 0 &&
        (mq.rlim_cur == RLIM_INFINITY || mq.rlim_cur > FB_SANDBOX_MSGQUEUE_BYTES) &&
        set_limit(RLIMIT_MSGQUEUE, FB_SANDBOX_MSGQUEUE_BYTES, "msgqueue", err) < 0)
        return -1;
    if (nproc_fallback && p->limits.pids > 0 &&
        set_limit(RLIMIT_NPROC, p->limits.pids, "nproc", err) < 0)
        return -1;
    return 0;
}

int harden_fallback_rlimits(int64_t nproc, int64_t data, struct fb_err *err)
{
    if (nproc > 0 && set_limit(RLIMIT_NPROC, nproc, "nproc", err) < 0)
        return -1;
    if (data > 0 && set_limit(RLIMIT_DATA, data, "data", err) < 0)
        return -1;
    return 0;
}

static const char default_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

static void env_put(char ***env, size_t *n, const char *kv)
{
    size_t klen = strcspn(kv, "=");
    for (size_t i = 0; i < *n; i++) {
        if (!strncmp((*env)[i], kv, klen) && (*env)[i][klen] == '=') {
            free((*env)[i]);
            (*env)[i] = fb_xstrdup(kv);
            return;
        }
    }
    *env = fb_xrealloc(*env, (*n + 2) * sizeof **env);
    (*env)[(*n)++] = fb_xstrdup(kv);
    (*env)[*n] = NULL;
}

char **harden_build_env(const struct fb_policy *p)
{
    char **env = fb_xcalloc(1, sizeof *env);
    size_t n = 0;
    /* PATH: the caller's, as far as it exists inside (toolchain.c), so that
     * a subprocess that runs "python3" gets the caller's interpreter. */
    char *path = fb_xasprintf("PATH=%s", p->tool_path ? p->tool_path : default_path);
    env_put(&env, &n, path);
    free(path);
    /* A home of its own (in the scratch space, mount.c), so that what tools
     * keep there (.gitconfig, .npm, .cache) stays out of the workspace. */
    const char *home = policy_home(p);
    char hbuf[128];
    static const char *const xdg[][2] = {{"XDG_CONFIG_HOME", ".config"},
                                         {"XDG_CACHE_HOME", ".cache"},
                                         {"XDG_DATA_HOME", ".local/share"},
                                         {"XDG_STATE_HOME", ".local/state"}};
    snprintf(hbuf, sizeof hbuf, "HOME=%s", home);
    env_put(&env, &n, hbuf);
    for (size_t i = 0; i < FB_ARRAY_LEN(xdg); i++) {
        snprintf(hbuf, sizeof hbuf, "%s=%s/%s", xdg[i][0], home, xdg[i][1]);
        env_put(&env, &n, hbuf);
    }
    const char *lang = getenv("LANG");
    char buf[512];
    snprintf(buf, sizeof buf, "LANG=%s", lang && *lang && strlen(lang) < 64 ? lang : "C.UTF-8");
    env_put(&env, &n, buf);
    const char *term = getenv("TERM");
    if (term && *term && strlen(term) < 64) {
        snprintf(buf, sizeof buf, "TERM=%s", term);
        env_put(&env, &n, buf);
    }
    if (p->proxy_env && p->proxy_port) {
        /* The proxy speaks CONNECT only; plain http:// goes through the
         * transparent relay, so HTTP_PROXY stays unset (docs/network.md). */
        static const char *const vars[] = {"HTTPS_PROXY", "https_proxy"};
        for (size_t i = 0; i < FB_ARRAY_LEN(vars); i++) {
            snprintf(buf, sizeof buf, "%s=http://127.0.0.1:%u", vars[i], p->proxy_port);
            env_put(&env, &n, buf);
        }
        env_put(&env, &n, "NO_PROXY=localhost,127.0.0.1");
        env_put(&env, &n, "no_proxy=localhost,127.0.0.1");
    }
    if (p->net == FB_NET_NONE) {
        /* No network: every lookup is NXDOMAIN at once, but npm and pip
         * retry any failed request on their own (npm for over a minute);
         * with nothing to reach, they fail at once instead. --env wins. */
        env_put(&env, &n, "npm_config_fetch_retries=0");
        env_put(&env, &n, "PIP_RETRIES=0");
    }
    /* VIRTUAL_ENV and the TLS trust settings from the caller. */
    for (size_t i = 0; i < p->ntool_env; i++)
        env_put(&env, &n, p->tool_env[i]);
    for (size_t i = 0; i < p->nenv_pass; i++) {
        const char *v = getenv(p->env_pass[i]);
        if (!v)
            continue;
        char *kv = fb_xasprintf("%s=%s", p->env_pass[i], v);
        env_put(&env, &n, kv);
        free(kv);
    }
    for (size_t i = 0; i < p->nenv_set; i++)
        env_put(&env, &n, p->env_set[i]);
    return env;
}

void harden_free_env(char **env)
{
    if (!env)
        return;
    for (char **e = env; *e; e++)
        free(*e);
    free(env);
}

static const char *env_get(char **env, const char *k)
{
    size_t kl = strlen(k);
    for (char **e = env; e && *e; e++)
        if (!strncmp(*e, k, kl) && (*e)[kl] == '=')
            return *e + kl + 1;
    return NULL;
}

void harden_exec(const struct fb_policy *p, char **argv, char **env, int *exit_code)
{
    const char *cmd = argv[0];
    if (p->exec_path && !strcmp(cmd, p->argv[0]))
        cmd = p->exec_path;
    if (strchr(cmd, '/')) {
        execve(cmd, argv, env);
        *exit_code = errno == ENOENT || errno == ENOTDIR ? FB_EXIT_NOTFOUND : FB_EXIT_NOEXEC;
        return;
    }
    /* Search the sandbox's PATH (not ours: glibc's execvpe would use ours). */
    const char *path = env_get(env, "PATH");
    if (!path)
        path = default_path;
    int saw_eacces = 0;
    char buf[4096];
    const char *s = path;
    while (*s) {
        size_t l = strcspn(s, ":");
        if (l > 0 && l + strlen(cmd) + 2 < sizeof buf) {
            memcpy(buf, s, l);
            buf[l] = '/';
            strcpy(buf + l + 1, cmd);
            execve(buf, argv, env);
            if (errno == EACCES || errno == ENOEXEC || errno == EPERM)
                saw_eacces = errno;
        }
        s += l;
        if (*s == ':')
            s++;
    }
    if (saw_eacces) {
        errno = saw_eacces;
        *exit_code = FB_EXIT_NOEXEC;
    } else {
        errno = ENOENT;
        *exit_code = FB_EXIT_NOTFOUND;
    }
}
