/* cli.c — the options of `fluebox run` (and `learn`, `session create`),
 * parsed into the policy on top of the chosen profile. Every option here is
 * listed in cli_usage and in the README. */
#include "cli.h"

#include "profile.h"

#include <string.h>
#include <sys/stat.h>

const char cli_usage[] =
    "Usage: fluebox run [OPTIONS] -- CMD [ARGS...]\n"
    "       fluebox profile list | show NAME|FILE | check FILE\n"
    "       fluebox learn --out FILE [OPTIONS] -- CMD [ARGS...]\n"
    "       fluebox serve [--socket PATH] [--pool N]\n"
    "       fluebox session create|rm|ls|info ...   fluebox exec ID -- CMD ...   fluebox cp SRC DST\n"
    "       fluebox --help | --version\n"
    "\n"
    "Runs CMD in a fresh sandbox: new user, pid, mount, network, ipc, uts and cgroup\n"
    "namespaces, an empty tmpfs root with the system bound read-only, seccomp, no\n"
    "capabilities, resource limits. Exit status: the command's; 128+N if it died of\n"
    "signal N; 124 timeout; 125 fluebox error; 126 not executable; 127 not found.\n"
    "\n"
    "Policy:\n"
    "  --profile NAME|FILE    strict, standard (default) or trusted, or a JSON profile\n"
    "Filesystem:\n"
    "  --workspace DIR        bind DIR read-write at /workspace (default: empty tmpfs)\n"
    "  --ro-bind SRC[:DST]    bind a host path read-only (DST defaults to SRC)\n"
    "  --bind SRC[:DST]       bind a host path read-write\n"
    "  --tmpfs DST[:SIZE]     a private tmpfs (SIZE defaults to --disk)\n"
    "  --cwd DIR              working directory inside (default /workspace)\n"
    "  --cow                  copy-on-write workspace: DIR is never modified\n"
    "  --cow-upper DIR        keep the copy-on-write layer in DIR instead of a tmpfs\n"
    "  --changes FILE|-       with --cow: write the changes as JSON\n"
    "  --commit               with --cow: apply the changes to DIR if CMD succeeds\n"
    "Identity and environment:\n"
    "  --uid N, --gid N       ids inside the sandbox (default 1000; 0 has no capabilities)\n"
    "  --host-id N            as root: the unprivileged host id the sandbox maps to\n"
    "  --hostname NAME        hostname inside (default fluebox)\n"
    "  --env K=V              set a variable (the environment is otherwise clean)\n"
    "  --env-pass K           copy a variable from fluebox's environment\n"
    "Limits (SIZE: 512K, 256M, 1G or unlimited; DURATION: 500ms, 30s, 5m):\n"
    "  --mem SIZE             memory limit, swap off (OOM kill inside -> exit 137)\n"
    "  --cpus N               CPU quota, fractions allowed (0.5)\n"
    "  --pids N               maximum processes and threads\n"
    "  --timeout DURATION     wall-clock limit; kills the whole sandbox (exit 124)\n"
    "  --disk SIZE            size of each writable tmpfs (root, /tmp, /workspace)\n"
    "  --nofile N             open files (RLIMIT_NOFILE)\n"
    "  --fsize SIZE           largest file written (RLIMIT_FSIZE)\n"
    "  --require-limits       fail (125) when a limit cannot be applied\n"
    "Network (default: none, loopback only):\n"
    "  --net none|allow|host  network mode (host only where the profile allows it)\n"
    "  --allow-net PATTERN    allow NAME, *.NAME, optionally :PORT (default 80 and 443)\n"
    "  --egress-resolve N=IP  resolve N to IP on the host side (tests, pinning)\n"
    "  --net-log FILE         JSON line per DNS query and connection\n"
    "  --proxy-env            run a CONNECT proxy at 127.0.0.1:3128 inside, set HTTPS_PROXY\n"
    "  --net-max-conns N      concurrent relayed connections (default 256)\n"
    "  --net-idle DURATION    close a relayed connection idle this long (default 5m)\n"
    "Reporting:\n"
    "  --report FILE|-        JSON report at exit (- = stderr)\n"
    "  --seccomp-log          list denied system calls in the report (count, errno, process)\n"
    "  -q, --quiet            no warnings\n";

enum opt_id {
    O_PROFILE, O_WORKSPACE, O_RO_BIND, O_BIND, O_TMPFS, O_CWD, O_COW, O_COW_UPPER, O_CHANGES,
    O_COMMIT, O_UID, O_GID, O_HOST_ID, O_HOSTNAME, O_ENV, O_ENV_PASS, O_MEM, O_CPUS, O_PIDS,
    O_TIMEOUT, O_DISK, O_NOFILE, O_FSIZE, O_REQUIRE, O_NET, O_ALLOW_NET, O_RESOLVE, O_NET_LOG,
    O_PROXY_ENV, O_NET_MAX_CONNS, O_NET_IDLE, O_REPORT, O_SECCOMP_LOG, O_QUIET,
};

struct opt {
    const char *name;
    enum opt_id id;
    bool has_arg;
};

static const struct opt opts[] = {
    {"--profile", O_PROFILE, true},     {"--workspace", O_WORKSPACE, true},
    {"--ro-bind", O_RO_BIND, true},     {"--bind", O_BIND, true},
    {"--tmpfs", O_TMPFS, true},         {"--cwd", O_CWD, true},
    {"--cow", O_COW, false},            {"--cow-upper", O_COW_UPPER, true},
    {"--changes", O_CHANGES, true},     {"--commit", O_COMMIT, false},
    {"--uid", O_UID, true},             {"--gid", O_GID, true},
    {"--host-id", O_HOST_ID, true},     {"--hostname", O_HOSTNAME, true},
    {"--env", O_ENV, true},             {"--env-pass", O_ENV_PASS, true},
    {"--mem", O_MEM, true},             {"--memory", O_MEM, true},
    {"--cpus", O_CPUS, true},           {"--pids", O_PIDS, true},
    {"--timeout", O_TIMEOUT, true},     {"--disk", O_DISK, true},
    {"--nofile", O_NOFILE, true},       {"--fsize", O_FSIZE, true},
    {"--require-limits", O_REQUIRE, false},
    {"--net", O_NET, true},             {"--allow-net", O_ALLOW_NET, true},
    {"--egress-resolve", O_RESOLVE, true},
    {"--net-log", O_NET_LOG, true},     {"--proxy-env", O_PROXY_ENV, false},
    {"--net-max-conns", O_NET_MAX_CONNS, true}, {"--net-idle", O_NET_IDLE, true},
    {"--report", O_REPORT, true},       {"--seccomp-log", O_SECCOMP_LOG, false},
    {"--quiet", O_QUIET, false},        {"-q", O_QUIET, false},
};

static const struct opt *find_opt(const char *arg, const char **inline_val)
{
    *inline_val = NULL;
    size_t len = strcspn(arg, "=");
    for (size_t i = 0; i < FB_ARRAY_LEN(opts); i++) {
        if (strlen(opts[i].name) == len && !strncmp(opts[i].name, arg, len)) {
            if (arg[len] == '=')
                *inline_val = arg + len + 1;
            return &opts[i];
        }
    }
    return NULL;
}

/* Normalise an absolute path inside the sandbox: must start with '/', no "..",
 * no empty result; collapses "//" and "/./" and strips a trailing '/'. */
static char *sandbox_path(const char *opt, const char *path, struct fb_err *err)
{
    if (path[0] != '/') {
        fb_errf(err, FB_EXIT_SETUP, "%s %s: the path inside must be absolute", opt, path);
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
            fb_errf(err, FB_EXIT_SETUP, "%s %s: \"..\" is not allowed in sandbox paths", opt, path);
            return NULL;
        }
        out[o++] = '/';
        memcpy(out + o, s, l);
        o += l;
        s += l;
    }
    if (o == 0) {
        free(out);
        fb_errf(err, FB_EXIT_SETUP, "%s %s: cannot mount over the sandbox root", opt, path);
        return NULL;
    }
    out[o] = 0;
    return out;
}

static int parse_bind(struct fb_policy *p, const char *opt, const char *arg, bool rw,
                      struct fb_err *err)
{
    cleanup_free char *copy = fb_xstrdup(arg);
    char *colon = strchr(copy, ':');
    const char *src = copy, *dst = copy;
    if (colon) {
        *colon = 0;
        dst = colon + 1;
    }
    if (!*src)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: empty source", opt, arg);
    char real[4096];
    if (!realpath(src, real))
        return fb_errno(err, FB_EXIT_SETUP, "%s %s", opt, src);
    /* DST defaults to the source as given, made absolute. */
    cleanup_free char *dflt = NULL;
    if (!colon)
        dst = dflt = fb_xstrdup(real);
    cleanup_free char *d = sandbox_path(opt, dst, err);
    if (!d)
        return -1;
    policy_add_mount(p, rw ? FB_MNT_BIND : FB_MNT_RO_BIND, real, d, 0);
    return 0;
}

static int parse_tmpfs(struct fb_policy *p, const char *arg, struct fb_err *err)
{
    cleanup_free char *copy = fb_xstrdup(arg);
    char *colon = strchr(copy, ':');
    int64_t size = 0;
    if (colon) {
        *colon = 0;
        if (fb_parse_size(colon + 1, &size) < 0 || size < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--tmpfs %s: bad size \"%s\" (e.g. 64M)", arg,
                           colon + 1);
    }
    cleanup_free char *d = sandbox_path("--tmpfs", copy, err);
    if (!d)
        return -1;
    policy_add_mount(p, FB_MNT_TMPFS, NULL, d, size);
    return 0;
}

static int parse_count(const char *opt, const char *v, int64_t *out, bool allow_unlimited,
                       struct fb_err *err)
{
    if (allow_unlimited && (!strcmp(v, "unlimited") || !strcmp(v, "max"))) {
        *out = -1;
        return 0;
    }
    uint64_t n;
    if (fb_parse_u64(v, &n) < 0 || n == 0 || n > (1u << 30))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: expected a positive number%s", opt, v,
                       allow_unlimited ? " or \"unlimited\"" : "");
    *out = (int64_t)n;
    return 0;
}

static int parse_id(const char *opt, const char *v, uint32_t *out, struct fb_err *err)
{
    uint64_t n;
    if (fb_parse_u64(v, &n) < 0 || n >= 4294967295u)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: expected a numeric id", opt, v);
    *out = (uint32_t)n;
    return 0;
}

static int apply_opt(struct fb_policy *p, const struct opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    switch (o->id) {
    case O_PROFILE:
        return 0; /* applied first, in cli_parse_policy */
    case O_WORKSPACE: {
        struct stat st;
        if (stat(v, &st) < 0)
            return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", v);
        if (!S_ISDIR(st.st_mode))
            return fb_errf(err, FB_EXIT_SETUP, "--workspace %s: Not a directory", v);
        char real[4096];
        if (!realpath(v, real))
            return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", v);
        free(p->workspace);
        p->workspace = fb_xstrdup(real);
        return 0;
    }
    case O_RO_BIND:
        return parse_bind(p, o->name, v, false, err);
    case O_BIND:
        return parse_bind(p, o->name, v, true, err);
    case O_TMPFS:
        return parse_tmpfs(p, v, err);
    case O_CWD: {
        char *d = sandbox_path("--cwd", v, err);
        if (!d)
            return -1;
        free(p->cwd);
        p->cwd = d;
        return 0;
    }
    case O_COW:
        p->cow = true;
        return 0;
    case O_COW_UPPER: {
        struct stat st;
        if (stat(v, &st) < 0 || !S_ISDIR(st.st_mode))
            return fb_errf(err, FB_EXIT_SETUP, "--cow-upper %s: %s", v,
                           errno ? strerror(errno) : "Not a directory");
        char real[4096];
        if (!realpath(v, real))
            return fb_errno(err, FB_EXIT_SETUP, "--cow-upper %s", v);
        free(p->cow_upper);
        p->cow_upper = fb_xstrdup(real);
        p->cow = true;
        return 0;
    }
    case O_CHANGES:
        free(p->changes_out);
        p->changes_out = fb_xstrdup(v);
        return 0;
    case O_COMMIT:
        p->cow_commit = true;
        return 0;
    case O_UID: {
        uint32_t id = 0;
        if (parse_id(o->name, v, &id, err) < 0)
            return -1;
        p->uid = id;
        return 0;
    }
    case O_GID: {
        uint32_t id = 0;
        if (parse_id(o->name, v, &id, err) < 0)
            return -1;
        p->gid = id;
        return 0;
    }
    case O_HOST_ID: {
        uint32_t id = 0;
        if (parse_id(o->name, v, &id, err) < 0)
            return -1;
        if (id == 0)
            return fb_errf(err, FB_EXIT_SETUP, "--host-id 0: the sandbox never maps host root");
        p->host_id = id;
        return 0;
    }
    case O_HOSTNAME:
        if (!*v || strlen(v) > 64)
            return fb_errf(err, FB_EXIT_SETUP, "--hostname %s: 1 to 64 characters", v);
        free(p->hostname);
        p->hostname = fb_xstrdup(v);
        return 0;
    case O_ENV:
        if (!strchr(v, '=') || v[0] == '=')
            return fb_errf(err, FB_EXIT_SETUP, "--env %s: expected K=V", v);
        policy_add_env_set(p, v);
        return 0;
    case O_ENV_PASS:
        if (!*v || strchr(v, '='))
            return fb_errf(err, FB_EXIT_SETUP, "--env-pass %s: expected a variable name", v);
        policy_add_env_pass(p, v);
        return 0;
    case O_MEM:
        if (fb_parse_size(v, &n) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--mem %s: expected a size such as 256M or unlimited", v);
        if (n > 0 && n < 4 * 1024 * 1024)
            return fb_errf(err, FB_EXIT_SETUP, "--mem %s: too small (at least 4M)", v);
        p->limits.mem = n;
        return 0;
    case O_CPUS: {
        char *end;
        errno = 0;
        double c = strtod(v, &end);
        if (!strcmp(v, "unlimited")) {
            p->limits.cpus = 0;
            return 0;
        }
        if (errno || end == v || *end || !(c >= 0.01) || c > 4096)
            return fb_errf(err, FB_EXIT_SETUP, "--cpus %s: expected a number of CPUs > 0 (e.g. 0.5)", v);
        p->limits.cpus = c;
        return 0;
    }
    case O_PIDS:
        if (parse_count(o->name, v, &n, true, err) < 0)
            return -1;
        p->limits.pids = n;
        return 0;
    case O_TIMEOUT:
        if (fb_parse_duration_ms(v, &n) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--timeout %s: expected a duration such as 500ms, 30s or 5m", v);
        p->limits.timeout_ms = n;
        return 0;
    case O_DISK:
        if (fb_parse_size(v, &n) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--disk %s: expected a size such as 100M or unlimited", v);
        /* The root tmpfs holds the generated /etc files: a page each. */
        if (n > 0 && n < 64 * 1024)
            return fb_errf(err, FB_EXIT_SETUP, "--disk %s: too small (at least 64K)", v);
        p->limits.disk = n;
        return 0;
    case O_NOFILE:
        if (parse_count(o->name, v, &n, true, err) < 0)
            return -1;
        if (n > 0 && n < 16)
            return fb_errf(err, FB_EXIT_SETUP, "--nofile %s: too small (at least 16)", v);
        p->limits.nofile = n;
        return 0;
    case O_FSIZE:
        if (fb_parse_size(v, &n) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--fsize %s: expected a size such as 10M or unlimited", v);
        p->limits.fsize = n;
        return 0;
    case O_REQUIRE:
        p->limits.require = true;
        return 0;
    case O_NET:
        p->net_explicit = true;
        if (!strcmp(v, "none"))
            p->net = FB_NET_NONE;
        else if (!strcmp(v, "allow"))
            p->net = FB_NET_ALLOW;
        else if (!strcmp(v, "host"))
            p->net = FB_NET_HOST;
        else
            return fb_errf(err, FB_EXIT_SETUP, "--net %s: expected none, allow or host", v);
        return 0;
    case O_ALLOW_NET:
        return policy_add_allow(p, v, err);
    case O_RESOLVE:
        return policy_add_resolve(p, v, err);
    case O_NET_LOG:
        free(p->net_log);
        p->net_log = fb_xstrdup(v);
        return 0;
    case O_PROXY_ENV:
        p->proxy_env = true;
        return 0;
    case O_NET_MAX_CONNS:
        if (parse_count(o->name, v, &n, false, err) < 0)
            return -1;
        if (n > 65536)
            return fb_errf(err, FB_EXIT_SETUP, "%s %s: at most 65536", o->name, v);
        p->max_conns = (int)n;
        return 0;
    case O_NET_IDLE:
        if (fb_parse_duration_ms(v, &n) < 0 || n <= 0)
            return fb_errf(err, FB_EXIT_SETUP, "--net-idle %s: expected a duration such as 30s or 5m", v);
        p->conn_idle_ms = n;
        return 0;
    case O_REPORT:
        free(p->report);
        p->report = fb_xstrdup(v);
        return 0;
    case O_SECCOMP_LOG:
        p->seccomp.log_denied = true;
        return 0;
    case O_QUIET:
        p->quiet = true;
        return 0;
    }
    return 0;
}

int cli_parse_policy(int argc, char **argv, struct fb_policy *p, bool want_cmd, struct fb_err *err)
{
    /* Pass 1: the profile, so that everything else overrides it. */
    const char *profile = NULL;
    int i;
    for (i = 0; i < argc; i++) {
        if (!strcmp(argv[i], "--"))
            break;
        const char *iv;
        const struct opt *o = find_opt(argv[i], &iv);
        if (!o || !o->has_arg)
            continue;
        const char *v = iv ? iv : (i + 1 < argc ? argv[i + 1] : NULL);
        if (!iv)
            i++;
        if (o->id == O_PROFILE && v)
            profile = v;
    }
    if (profile_load(p, profile ? profile : FB_DEFAULT_PROFILE, err) < 0)
        return -1;

    /* Pass 2: every other option, in order. */
    bool seen_dashdash = false;
    for (i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            seen_dashdash = true;
            i++;
            break;
        }
        const char *iv;
        const struct opt *o = find_opt(a, &iv);
        if (!o) {
            if (a[0] == '-')
                return fb_errf(err, FB_EXIT_SETUP, "unknown option %s (see fluebox --help)", a);
            return fb_errf(err, FB_EXIT_SETUP,
                           "unexpected argument \"%s\": put the command after \"--\"", a);
        }
        const char *v = NULL;
        if (o->has_arg) {
            if (iv) {
                v = iv;
            } else {
                if (i + 1 >= argc || !strcmp(argv[i + 1], "--"))
                    return fb_errf(err, FB_EXIT_SETUP, "%s needs a value", o->name);
                v = argv[++i];
            }
        } else if (iv) {
            return fb_errf(err, FB_EXIT_SETUP, "%s takes no value", o->name);
        }
        if (apply_opt(p, o, v, err) < 0)
            return -1;
        if (o->id != O_PROFILE && o->id != O_REPORT && o->id != O_QUIET)
            policy_add_override(p, v ? "%s %s" : "%s", o->name, v);
    }
    if (!want_cmd)
        return seen_dashdash && i < argc
                   ? fb_errf(err, FB_EXIT_SETUP, "unexpected command after \"--\"")
                   : 0;
    if (!seen_dashdash)
        return fb_errf(err, FB_EXIT_SETUP, "missing \"--\" before the command");
    if (i >= argc || !argv[i][0])
        return fb_errf(err, FB_EXIT_SETUP, "no command after \"--\"");
    int n = argc - i;
    p->argv = fb_xcalloc((size_t)n + 1, sizeof(char *));
    for (int k = 0; k < n; k++)
        p->argv[k] = fb_xstrdup(argv[i + k]);
    return 0;
}
