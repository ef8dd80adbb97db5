/* policy_opts.c — the options that shape a sandbox: one table (cli_policy_opts)
 * used by `fluebox run` and `learn`, by `session create` (the rows a session
 * accepts), and by the server for session.create's "options" (an allow-list:
 * a row without FB_OPT_SESSION is refused there). Each row parses its text
 * and hands the value to a typed setter (policy_set.c), the same setter the
 * server uses for session.create's typed parameters.
 *
 * To add an option: one row here (name, argument, scopes, setter, help
 * line), a setter, and a line in docs/run.md's table. The --help text is generated
 * from the rows. */
#include "policy_opts.h"

#include "policy_set.h"
#include "profile.h"
#include "term.h"

#include <string.h>

#define POL(ctx) ((struct fb_policy *)(ctx))

/* "--name" and "--name value", for the setters' messages. */
struct label {
    char s[320];
};
static const char *oname(const struct fb_opt *o, struct label *l)
{
    snprintf(l->s, sizeof l->s, "--%s", o->name);
    return l->s;
}
static const char *owhat(const struct fb_opt *o, const char *v, struct label *l)
{
    snprintf(l->s, sizeof l->s, "--%s %.256s", o->name, v);
    return l->s;
}

/* A size; "0" is passed on as 0 so that the setter says why it is refused. */
static int parse_size(const struct fb_opt *o, const char *v, const char *example, int64_t *n,
                      struct fb_err *err)
{
    if (*v && strspn(v, "0") == strlen(v)) {
        *n = 0;
        return 0;
    }
    if (fb_parse_size(v, n) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a size such as %s or unlimited",
                       o->name, v, example);
    return 0;
}

static int parse_id(const struct fb_opt *o, const char *v, uint32_t *out, struct fb_err *err)
{
    uint64_t n;
    if (fb_parse_u64(v, &n) < 0 || n >= 4294967295u)
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a numeric id", o->name, v);
    *out = (uint32_t)n;
    return 0;
}

/* ---- setters ---- */

static int set_profile(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return 0; /* loaded first, by cli_apply */
}

static int set_isolation(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_isolation(POL(ctx), v, oname(o, &l), err);
}

static int set_workspace(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_workspace(POL(ctx), v, oname(o, &l), err);
}

static int set_bind(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    cleanup_free char *src = fb_xstrdup(v);
    char *colon = strchr(src, ':');
    if (colon)
        *colon++ = 0;
    struct label l;
    return policy_add_bind(POL(ctx), src, colon, !strcmp(o->name, "bind"), oname(o, &l), err);
}

static int set_tmpfs(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    cleanup_free char *dst = fb_xstrdup(v);
    char *colon = strchr(dst, ':');
    int64_t size = 0;
    if (colon) {
        *colon++ = 0;
        if (fb_parse_size(colon, &size) < 0 || size < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--tmpfs %s: bad size \"%s\" (e.g. 64M)", v, colon);
    }
    struct label l;
    return policy_add_tmpfs(POL(ctx), dst, size, oname(o, &l), err);
}

static int set_cwd(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_cwd(POL(ctx), v, oname(o, &l), err);
}

static int set_cow(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    policy_set_cow(POL(ctx), true);
    return 0;
}

static int set_cow_upper(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_cow_upper(POL(ctx), v, oname(o, &l), err);
}

static int set_changes(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_changes(POL(ctx), v, oname(o, &l), err);
}

static int set_commit(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->cow_commit = true;
    return 0;
}

static int set_id(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    uint32_t id = 0;
    if (parse_id(o, v, &id, err) < 0)
        return -1;
    struct label l;
    if (!strcmp(o->name, "host-id"))
        return policy_set_host_id(POL(ctx), id, oname(o, &l), err);
    if (!strcmp(o->name, "uid"))
        POL(ctx)->uid = id;
    else
        POL(ctx)->gid = id;
    return 0;
}

static int set_hostname(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_hostname(POL(ctx), v, oname(o, &l), err);
}

static int set_env(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_env(POL(ctx), v, oname(o, &l), err);
}

static int set_env_pass(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_env_pass(POL(ctx), v, oname(o, &l), err);
}

static int set_size(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    bool mem = !strcmp(o->name, "mem") || !strcmp(o->name, "memory");
    bool disk = !strcmp(o->name, "disk");
    if (parse_size(o, v, mem ? "256M" : disk ? "100M" : "10M", &n, err) < 0)
        return -1;
    struct label l;
    const char *what = owhat(o, v, &l);
    if (mem)
        return policy_set_mem(POL(ctx), n, what, err);
    if (disk)
        return policy_set_disk(POL(ctx), n, what, err);
    return policy_set_fsize(POL(ctx), n, what, err);
}

static int set_count(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t n;
    bool conns = !strcmp(o->name, "net-max-conns");
    if (opt_count(o, v, 0, !conns, &n, err) < 0)
        return -1;
    struct label l;
    const char *what = owhat(o, v, &l);
    if (!strcmp(o->name, "pids"))
        return policy_set_pids(POL(ctx), n, what, err);
    if (!strcmp(o->name, "nofile"))
        return policy_set_nofile(POL(ctx), n, what, err);
    return policy_set_max_conns(POL(ctx), n, what, err);
}

static int set_cpus(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (!strcmp(v, "unlimited"))
        return policy_set_cpus(POL(ctx), 0, "--cpus", err);
    char *end;
    errno = 0;
    double c = strtod(v, &end);
    if (errno || end == v || *end || !(c > 0))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--cpus %s: expected a number of CPUs > 0 (e.g. 0.5) or unlimited", v);
    struct label l;
    return policy_set_cpus(POL(ctx), c, owhat(o, v, &l), err);
}

static int set_duration(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    int64_t ms;
    if (*v && strspn(v, "0") == strlen(v))
        ms = 0; /* refused by the setter, with the reason */
    else if (opt_duration(o, v, &ms, err) < 0)
        return -1;
    struct label l;
    const char *what = owhat(o, v, &l);
    if (!strcmp(o->name, "timeout"))
        return policy_set_timeout(POL(ctx), ms, what, err);
    return policy_set_conn_idle(POL(ctx), ms, what, err);
}

static int set_require(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->limits.require = true;
    return 0;
}

static int set_net(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    enum fb_net_mode m;
    if (!strcmp(v, "none"))
        m = FB_NET_NONE;
    else if (!strcmp(v, "allow"))
        m = FB_NET_ALLOW;
    else if (!strcmp(v, "host"))
        m = FB_NET_HOST;
    else
        return fb_errf(err, FB_EXIT_SETUP, "--net %s: expected none, allow or host", v);
    policy_set_net(POL(ctx), m);
    return 0;
}

static int set_allow_net(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return policy_add_allow(POL(ctx), v, err);
}

static int set_resolve(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return policy_add_resolve(POL(ctx), v, err);
}

static int set_secret(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return policy_add_secret(POL(ctx), v, err);
}

static int set_allow_http(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return policy_add_http_rule(POL(ctx), v, err);
}

static int set_upstream_ca(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return policy_set_upstream_ca(POL(ctx), v, err);
}

static int set_net_log(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_net_log(POL(ctx), v, oname(o, &l), err);
}

static int set_proxy_env(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->proxy_env = true;
    return 0;
}

static int set_report(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_report(POL(ctx), v, oname(o, &l), err);
}

static int set_record(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_record(POL(ctx), v, oname(o, &l), err);
}

static int set_record_key(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct label l;
    return policy_set_record_key(POL(ctx), v, oname(o, &l), err);
}

static int set_seccomp_log(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->seccomp.log_denied = true;
    return 0;
}

static int set_quiet(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->quiet = true;
    return 0;
}

static int set_tty(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    struct fb_policy *p = POL(ctx);
    p->tty = true;
    p->tty_rows = 24;
    p->tty_cols = 80;
    fb_tty_size(&p->tty_rows, &p->tty_cols);
    return 0;
}

static int set_print_path(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    POL(ctx)->print_path = true;
    return 0;
}

/* ---- docker and podman spellings (same meaning, other names) ---- */

/* -v SRC:DST[:ro|rw]: docker's bind form. A volume without DST is docker's
 * anonymous volume, which fluebox has not (a --tmpfs is the nearest). */
static int set_volume(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    cleanup_free char *src = fb_xstrdup(v);
    char *dst = strchr(src, ':');
    if (!dst || !dst[1])
        return fb_errf(err, FB_EXIT_SETUP,
                       "--volume %s: expected SRC:DST[:ro] (fluebox has no anonymous volumes; "
                       "--tmpfs DST is a private scratch directory)", v);
    *dst++ = 0;
    bool rw = true;
    char *mode = strchr(dst, ':');
    if (mode) {
        *mode++ = 0;
        if (strcmp(mode, "ro") && strcmp(mode, "rw"))
            return fb_errf(err, FB_EXIT_SETUP, "--volume %s: expected ro or rw after DST, not \"%s\"",
                           v, mode);
        rw = !strcmp(mode, "rw");
    }
    struct label l;
    return policy_add_bind(POL(ctx), src, dst, rw, oname(o, &l), err);
}

/* -u UID[:GID]: numbers only (docker looks names up in the image; fluebox
 * has no image, and the host's names mean nothing inside). */
static int set_user(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    cleanup_free char *u = fb_xstrdup(v);
    char *g = strchr(u, ':');
    if (g)
        *g++ = 0;
    uint64_t uid, gid = 0;
    if (fb_parse_u64(u, &uid) < 0 || uid >= 4294967295u ||
        (g && (fb_parse_u64(g, &gid) < 0 || gid >= 4294967295u)))
        return fb_errf(err, FB_EXIT_SETUP, "--user %s: expected UID[:GID] as numbers", v);
    POL(ctx)->uid = (uint32_t)uid;
    if (g)
        POL(ctx)->gid = (uint32_t)gid;
    return 0;
}

/* --network none|host: docker's other networks (bridge, a named one) have
 * no equal here; fluebox's own is --net allow with --allow-net. */
static int set_network(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (strcmp(v, "none") && strcmp(v, "host"))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--network %s: only none and host mean here what they mean to docker "
                       "(fluebox's filtered network: --net allow --allow-net NAME)", v);
    return set_net(ctx, o, v, err);
}

/* --env-file FILE: docker's format, one K=V a line, # comments and blank
 * lines skipped, K alone copies K from fluebox's environment. */
static int set_env_file(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    FILE *f = fopen(v, "re");
    if (!f)
        return fb_errf(err, FB_EXIT_SETUP, "--env-file %s: %s", v, strerror(errno));
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    int rc = 0, lineno = 0;
    struct label l;
    while (rc == 0 && (n = getline(&line, &cap, f)) >= 0) {
        lineno++;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = 0;
        const char *t = line + strspn(line, " \t");
        if (!*t || *t == '#')
            continue;
        snprintf(l.s, sizeof l.s, "--env-file %.200s:%d", v, lineno);
        rc = strchr(t, '=') ? policy_set_env(POL(ctx), t, l.s, err)
                            : policy_set_env_pass(POL(ctx), t, l.s, err);
    }
    if (rc == 0 && ferror(f))
        rc = fb_errf(err, FB_EXIT_SETUP, "--env-file %s: %s", v, strerror(errno));
    free(line);
    fclose(f);
    return rc;
}

static int set_interactive(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    return 0; /* the command's stdin is fluebox's already */
}

/* ---- the table ---- */

enum {
    R = FB_OPT_RUN,
    S = FB_OPT_SESSION,
    F = FB_OPT_FOREIGN,
    RSF = R | S | F,
    RS = R | S,
};

const struct fb_opt cli_policy_opts[] = {
    {"profile", 0, FB_ARG_PROFILE, "NAME|FILE", RSF | FB_OPT_FIRST | FB_OPT_QUIET, set_profile,
     "strict, standard (default) or trusted, or a JSON profile", "Policy:"},
    {"isolation", 0, FB_ARG_VALUE, "namespaces|landlock", R, set_isolation,
     "landlock: where no namespace can be made, Landlock instead (fewer guarantees)", NULL},

    {"workspace", 0, FB_ARG_HOST_PATH, "DIR", RS, set_workspace,
     "bind DIR read-write at /workspace (default: an empty scratch directory)", "Filesystem:"},
    {"ro-bind", 0, FB_ARG_HOST_BIND, "SRC[:DST]", RS, set_bind,
     "bind a host path read-only (DST defaults to SRC)", NULL},
    {"bind", 0, FB_ARG_HOST_BIND, "SRC[:DST]", RS, set_bind, "bind a host path read-write", NULL},
    {"tmpfs", 0, FB_ARG_VALUE, "DST[:SIZE]", RSF, set_tmpfs,
     "a private tmpfs of SIZE (none: part of the --disk scratch space)", NULL},
    {"cwd", 0, FB_ARG_VALUE, "DIR", RSF, set_cwd, "working directory inside (default /workspace)",
     NULL},
    {"cow", 0, FB_ARG_NONE, NULL, RS, set_cow, "copy-on-write workspace: DIR is never modified",
     NULL},
    {"cow-upper", 0, FB_ARG_HOST_PATH, "DIR", R, set_cow_upper,
     "keep the copy-on-write layer in DIR instead of a tmpfs", NULL},
    {"changes", 0, FB_ARG_HOST_PATH, "FILE|-", R, set_changes,
     "with --cow: write the changes as JSON", NULL},
    {"commit", 0, FB_ARG_NONE, NULL, R, set_commit,
     "with --cow: apply the changes to DIR if CMD succeeds", NULL},

    {"uid", 0, FB_ARG_VALUE, "N", RSF, set_id,
     "id inside the sandbox (default 1000; 0 has no capabilities)", "Identity and environment:"},
    {"gid", 0, FB_ARG_VALUE, "N", RSF, set_id, "group id inside the sandbox (default 1000)", NULL},
    {"host-id", 0, FB_ARG_VALUE, "N", RS, set_id,
     "as root: first host id of the sandbox's range of 65,536 (default: a free one)", NULL},
    {"hostname", 0, FB_ARG_VALUE, "NAME", RSF, set_hostname, "hostname inside (default fluebox)",
     NULL},
    {"env", 'e', FB_ARG_VALUE, "K=V", RSF, set_env,
     "set a variable (the environment is otherwise clean)", NULL},
    {"env-pass", 0, FB_ARG_VALUE, "K", RS, set_env_pass,
     "copy a variable from fluebox's environment", NULL},

    {"mem", 0, FB_ARG_VALUE, "SIZE", RSF, set_size,
     "memory limit, swap off (OOM kill inside -> exit 137)",
     "Limits (SIZE: 512K, 256M, 1G or unlimited; DURATION: 500ms, 30s, 5m):"},
    {"memory", 0, FB_ARG_VALUE, "SIZE", RSF, set_size, NULL, NULL},
    {"cpus", 0, FB_ARG_VALUE, "N", RSF, set_cpus, "CPU quota, fractions allowed (0.5)", NULL},
    {"pids", 0, FB_ARG_VALUE, "N", RSF, set_count, "maximum processes and threads", NULL},
    {"timeout", 0, FB_ARG_VALUE, "DURATION", RSF, set_duration,
     "wall-clock limit; kills the whole sandbox (exit 124)", NULL},
    {"disk", 0, FB_ARG_VALUE, "SIZE", RSF, set_size,
     "scratch space: /tmp, /dev/shm, the home, a tmpfs /workspace (all)", NULL},
    {"nofile", 0, FB_ARG_VALUE, "N", RSF, set_count, "open files (RLIMIT_NOFILE)", NULL},
    {"fsize", 0, FB_ARG_VALUE, "SIZE", RSF, set_size, "largest file written (RLIMIT_FSIZE)",
     NULL},
    {"require-limits", 0, FB_ARG_NONE, NULL, RSF, set_require,
     "fail (125) when a limit cannot be applied", NULL},

    {"net", 0, FB_ARG_VALUE, "none|allow|host", RSF, set_net,
     "network mode (host only where the profile allows it)",
     "Network (default: none, loopback only):"},
    {"allow-net", 0, FB_ARG_VALUE, "PATTERN", RSF, set_allow_net,
     "allow host NAME, *.NAME, optionally :PORT (default 80 and 443)", NULL},
    {"egress-resolve", 0, FB_ARG_VALUE, "N=IP", RS, set_resolve,
     "resolve N to IP on the host side (tests, pinning)", NULL},
    {"secret", 0, FB_ARG_VALUE, "NAME:HOSTS", RS, set_secret,
     "inside, NAME holds a stand-in that the relay swaps for the caller's $NAME in "
     "requests to HOSTS only (NAME=@FILE:HOSTS: the value is FILE's; docs/secrets.md)", NULL},
    {"allow-http", 0, FB_ARG_VALUE, "'METHODS HOST[/PREFIX]'", RSF, set_allow_http,
     "HOST gets only requests of these methods (GET,POST or *) under PREFIX; others: 403",
     NULL},
    {"upstream-ca", 0, FB_ARG_HOST_PATH, "FILE", RS, set_upstream_ca,
     "also trust FILE's CA for the relay's TLS to inspected hosts", NULL},
    {"net-log", 0, FB_ARG_HOST_PATH, "FILE", R, set_net_log,
     "JSON line per DNS query and connection", NULL},
    {"proxy-env", 0, FB_ARG_NONE, NULL, RSF, set_proxy_env,
     "run a CONNECT proxy at 127.0.0.1:3128 inside, set HTTPS_PROXY", NULL},
    {"net-max-conns", 0, FB_ARG_VALUE, "N", RSF, set_count,
     "concurrent relayed connections (default 256)", NULL},
    {"net-idle", 0, FB_ARG_VALUE, "DURATION", RSF, set_duration,
     "close a relayed connection idle this long (default 5m)", NULL},

    {"report", 0, FB_ARG_HOST_PATH, "FILE|-", R | FB_OPT_QUIET, set_report,
     "JSON report at exit (- = stderr)", "Reporting:"},
    {"record", 0, FB_ARG_HOST_PATH, "FILE", RS, set_record,
     "flight record: a new hash-chained JSON-lines file of what happened "
     "(fluebox record verify/show; docs/record.md)", NULL},
    {"record-key", 0, FB_ARG_HOST_PATH, "FILE", RS, set_record_key,
     "Ed25519 private key (PEM) that signs the record's checkpoints and end", NULL},
    {"seccomp-log", 0, FB_ARG_NONE, NULL, R, set_seccomp_log,
     "list denied system calls in the report (count, errno, process)", NULL},
    {"quiet", 'q', FB_ARG_NONE, NULL, R | FB_OPT_QUIET, set_quiet, "no warnings", NULL},
    {"print-path", 0, FB_ARG_NONE, NULL, R | FB_OPT_QUIET, set_print_path,
     "print the inside PATH, the command and what is bound for it and the caller's "
     "interpreters, with the reasons; run nothing (the command is optional)", NULL},
    {"tty", 't', FB_ARG_NONE, NULL, R | FB_OPT_QUIET, set_tty,
     "the command on a terminal inside, of the caller's terminal size, relayed to the "
     "caller's (in raw mode when stdin is one: every key, Ctrl-C too, goes inside)",
     "Terminal:"},
    {"interactive", 'i', FB_ARG_NONE, NULL, R | FB_OPT_QUIET, set_interactive,
     "accepted, as docker's -i: the command's stdin is always fluebox's stdin", NULL},

    {"volume", 'v', FB_ARG_HOST_BIND, "SRC:DST[:ro]", RS, set_volume,
     "--bind SRC:DST, or --ro-bind SRC:DST with :ro",
     "The same as docker's and podman's options of these names:"},
    {"workdir", 'w', FB_ARG_VALUE, "DIR", RSF, set_cwd, "--cwd DIR", NULL},
    {"user", 'u', FB_ARG_VALUE, "UID[:GID]", RSF, set_user,
     "--uid UID [--gid GID] (numbers: there is no image to look a name up in)", NULL},
    {"network", 0, FB_ARG_VALUE, "none|host", RSF, set_network, "--net none or --net host", NULL},
    {"env-file", 0, FB_ARG_HOST_PATH, "FILE", R, set_env_file,
     "--env for each K=V line of FILE (# comments; K alone: --env-pass K)", NULL},
};
const size_t cli_npolicy_opts = FB_ARRAY_LEN(cli_policy_opts);

/* ---- parsing ---- */

int cli_parse(int argc, char **argv, struct fb_policy *p, const struct fb_optset *extra,
              unsigned scope, const char *cmd, struct fb_parsed *out, struct fb_err *err)
{
    struct fb_optset sets[2] = {{cli_policy_opts, cli_npolicy_opts, p}};
    size_t n = 1;
    if (extra)
        sets[n++] = *extra;
    return opt_parse(argc, argv, sets, n, scope, cmd, out, err);
}

const char *cli_profile_of(const struct fb_parsed *parsed)
{
    const char *profile = NULL;
    for (size_t i = 0; i < parsed->n; i++)
        if (parsed->v[i].o->flags & FB_OPT_FIRST && parsed->v[i].o->set == set_profile)
            profile = parsed->v[i].val;
    return profile;
}

int cli_apply(struct fb_policy *p, const struct fb_parsed *parsed, struct fb_err *err)
{
    for (size_t i = 0; i < parsed->n; i++) {
        const struct fb_optval *v = &parsed->v[i];
        if (v->ctx != p || (v->o->flags & FB_OPT_FIRST))
            continue;
        if (v->o->set(p, v->o, v->val, err) < 0)
            return -1;
        if (!(v->o->flags & FB_OPT_QUIET))
            policy_add_override(p, v->val ? "--%s %s" : "--%s", v->o->name, v->val);
    }
    return 0;
}

/* The command after "--", into p->argv. */
static int take_command(const struct fb_parsed *parsed, struct fb_policy *p, struct fb_err *err)
{
    char **a = parsed->args;
    if (!parsed->dashdash && !parsed->nargs && p->print_path)
        return 0; /* --print-path alone: what the caller's names would be */
    if (!parsed->dashdash) {
        if (parsed->nargs)
            return fb_errf(err, FB_EXIT_SETUP,
                           "unexpected argument \"%s\": put the command after \"--\"", a[0]);
        return fb_errf(err, FB_EXIT_SETUP, "missing \"--\" before the command");
    }
    if (!parsed->nargs || !a[0][0])
        return fb_errf(err, FB_EXIT_SETUP, "no command after \"--\"");
    p->argv = fb_xcalloc((size_t)parsed->nargs + 1, sizeof(char *));
    for (int k = 0; k < parsed->nargs; k++)
        p->argv[k] = fb_xstrdup(a[k]);
    return 0;
}

int cli_parse_run(const char *cmd, const char *usage, int argc, char **argv,
                  const struct fb_optset *extra, const char *default_profile, struct fb_policy *p,
                  struct fb_err *err)
{
    struct fb_parsed parsed;
    int r = cli_parse(argc, argv, p, extra, FB_OPT_RUN, cmd, &parsed, err);
    if (r == 1) {
        fputs(usage, stdout);
        struct fb_optset sets[2] = {{cli_policy_opts, cli_npolicy_opts, p}};
        if (extra)
            sets[1] = *extra;
        opt_help(stdout, sets, extra ? 2 : 1, FB_OPT_RUN);
        return 1;
    }
    if (r < 0)
        return -1;
    const char *profile = cli_profile_of(&parsed);
    int rc = -1;
    if (profile_load(p, profile ? profile : default_profile, err) < 0 ||
        cli_apply(p, &parsed, err) < 0 ||
        (extra && opt_apply(&parsed, extra->ctx, err) < 0) || /* the subcommand's own */
        take_command(&parsed, p, err) < 0)
        goto out;
    rc = 0;
out:
    opt_parsed_free(&parsed);
    return rc;
}

int cli_parse_policy(int argc, char **argv, struct fb_policy *p, bool want_cmd, struct fb_err *err)
{
    struct fb_parsed parsed;
    int r = cli_parse(argc, argv, p, NULL, FB_OPT_RUN, "run", &parsed, err);
    if (r != 0)
        return r > 0 ? fb_errf(err, FB_EXIT_SETUP, "--help is not an option here") : -1;
    const char *profile = cli_profile_of(&parsed);
    int rc = -1;
    if (profile_load(p, profile ? profile : FB_DEFAULT_PROFILE, err) < 0 ||
        cli_apply(p, &parsed, err) < 0)
        goto out;
    if (want_cmd ? take_command(&parsed, p, err) < 0
                 : parsed.nargs ? fb_errf(err, FB_EXIT_SETUP, "unexpected argument \"%s\"",
                                          parsed.args[0]) < 0
                                : false)
        goto out;
    rc = 0;
out:
    opt_parsed_free(&parsed);
    return rc;
}

/* ---- usage ---- */

const char cli_run_usage[] =
    "Usage: fluebox run [OPTIONS] -- CMD [ARGS...]\n"
    "Runs CMD in a fresh sandbox: new user, pid, mount, network, ipc, uts and cgroup\n"
    "namespaces, an empty tmpfs root with the system bound read-only, seccomp, no\n"
    "capabilities, resource limits. Exit status: the command's; 128+N if it died of\n"
    "signal N; 124 timeout; 125 fluebox error; 126 not executable; 127 not found.\n"
    "Options take their value as --opt VALUE or --opt=VALUE.\n"
    "--server [SOCKET] (or FLUEBOX_SERVER=1 or =SOCKET): run it in a running\n"
    "`fluebox serve` instead, with the options a session takes (docs/server.md).\n"
    "\n";

void cli_print_usage(FILE *f)
{
    fputs("Usage: fluebox run [OPTIONS] -- CMD [ARGS...]   run CMD in a fresh sandbox\n"
          "       fluebox learn --out FILE [OPTIONS] -- CMD [ARGS...]   write the profile CMD needs\n"
          "       fluebox profile list | show NAME|FILE | check FILE... | bpf NAME|FILE\n"
          "       fluebox serve [--socket PATH] [--pool N] ...   sessions over a Unix socket\n"
          "       fluebox session create | rm | ls | info ID\n"
          "       fluebox session publish ID [HOSTPORT:]PORT | unpublish ID PORT\n"
          "       fluebox session diff | commit | reset ID   (a copy-on-write workspace)\n"
          "       fluebox session fork ID | snapshot ID NAME | restore ID NAME\n"
          "       fluebox exec ID -- CMD ...   fluebox cp SRC DST   (in a session)\n"
          "       fluebox mcp [OPTIONS]        one sandbox as an MCP server on stdio (docs/mcp.md)\n"
          "       fluebox record verify FILE [--key PUBKEY] | show FILE [--json]   a --record file\n"
          "       fluebox oci COMMAND ...      the OCI runtime (also installed as fluebox-oci)\n"
          "       fluebox doctor [--json] [--fix]   what this machine offers, and what is missing\n"
          "       fluebox completion bash|zsh|fish  a shell completion script\n"
          "       fluebox --help | --version        fluebox COMMAND --help\n"
          "\n",
          f);
    fputs(cli_run_usage + strcspn(cli_run_usage, "\n") + 1, f);
    struct fb_optset set = {cli_policy_opts, cli_npolicy_opts, NULL};
    opt_help(f, &set, 1, FB_OPT_RUN);
}
