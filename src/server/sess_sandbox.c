/* sess_sandbox.c — sessions on the supervisor side (see sess_sandbox.h): policy from
 * session.create parameters, pool matching, the info object, and the
 * control-socket record format. The workers that spawn and release
 * sandboxes are in sess_worker.c. */
#include "sess_sandbox.h"

#include "ctl.h"
#include "sess_copy.h"

#include "cgroup.h"
#include "policy_opts.h"
#include "policy_set.h"
#include "harden.h"
#include "profile.h"
#include "record.h"
#include "toolchain.h"

#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>

/* ---- records ---- */

char *srec_encode(json_t *hdr, const void *payload, size_t plen, size_t *len)
{
    char *h = json_dumps(hdr, JSON_COMPACT);
    json_decref(hdr);
    if (!h)
        return NULL;
    size_t hl = strlen(h);
    if (4 + hl + plen > SREC_MAX) {
        free(h);
        return NULL;
    }
    char *rec = fb_xmalloc(4 + hl + plen);
    uint32_t l32 = (uint32_t)hl;
    memcpy(rec, &l32, 4);
    memcpy(rec + 4, h, hl);
    if (plen)
        memcpy(rec + 4 + hl, payload, plen);
    free(h);
    *len = 4 + hl + plen;
    return rec;
}

int srec_send(int sock, const char *rec, size_t len, const int *fds, size_t nfds, int flags)
{
    if (nfds > 8) {
        errno = EINVAL;
        return -1;
    }
    return ctl_sendmsg(sock, rec, len, fds, nfds, flags);
}

int srec_recv(int sock, char *buf, int flags, json_t **hdr, const char **payload, size_t *plen,
              int *fds, size_t *nfds)
{
    bool truncated = false;
    size_t cap = nfds ? (*nfds < 8 ? *nfds : 8) : 0;
    size_t got = cap;
    ssize_t n = ctl_recvmsg(sock, buf, SREC_MAX, fds, &got, flags, &truncated);
    if (nfds)
        *nfds = 0;
    if (n < 0)
        return -1;
    if (n == 0) {
        for (size_t i = 0; i < got; i++)
            close(fds[i]);
        return 0;
    }
    uint32_t hl;
    json_t *h = NULL;
    if (!truncated && n >= 4) {
        memcpy(&hl, buf, 4);
        if (hl <= (size_t)n - 4)
            h = json_loadb(buf + 4, hl, JSON_REJECT_DUPLICATES, NULL);
    }
    if (!json_is_object(h)) {
        json_decref(h);
        for (size_t i = 0; i < got; i++)
            close(fds[i]);
        errno = EPROTO;
        return -1;
    }
    if (nfds)
        *nfds = got;
    *hdr = h;
    *payload = buf + 4 + hl;
    *plen = (size_t)n - 4 - hl;
    return 1;
}

/* ---- policy from parameters ---- */

static bool key_in(const char *k, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(k, *set))
            return true;
    return false;
}

static bool is_path_profile(const char *s)
{
    size_t l = strlen(s);
    return strchr(s, '/') || (l > 5 && !strcmp(s + l - 5, ".json"));
}

/* ---- what other uids may ask for ---- */

void foreign_rules_default(struct foreign_rules *r)
{
    memset(r, 0, sizeof *r);
    static const char *const dflt[] = {"strict", "standard"};
    for (size_t i = 0; i < FB_ARRAY_LEN(dflt); i++) {
        r->profiles = fb_xrealloc(r->profiles, (r->nprofiles + 1) * sizeof *r->profiles);
        r->profiles[r->nprofiles++] = fb_xstrdup(dflt[i]);
    }
    r->opts = fb_xcalloc(cli_npolicy_opts, sizeof *r->opts);
    for (size_t i = 0; i < cli_npolicy_opts; i++)
        r->opts[i] = (cli_policy_opts[i].flags & FB_OPT_FOREIGN) != 0;
}

void foreign_rules_free(struct foreign_rules *r)
{
    for (size_t i = 0; i < r->nprofiles; i++)
        free(r->profiles[i]);
    free(r->profiles);
    free(r->opts);
    memset(r, 0, sizeof *r);
}

/* A comma-separated list; "none" is the empty list. Calls fn for each. */
static int each_item(const char *list, int (*fn)(struct foreign_rules *, const char *, struct fb_err *),
                     struct foreign_rules *r, struct fb_err *err)
{
    if (!strcmp(list, "none"))
        return 0;
    cleanup_free char *copy = fb_xstrdup(list);
    char *save = NULL;
    for (char *it = strtok_r(copy, ",", &save); it; it = strtok_r(NULL, ",", &save))
        if (fn(r, it, err) < 0)
            return -1;
    return 0;
}

static int add_profile(struct foreign_rules *r, const char *name, struct fb_err *err)
{
    const char *const *names = profile_builtin_names();
    size_t i;
    for (i = 0; names[i] && strcmp(names[i], name); i++)
        ;
    if (!names[i])
        return fb_errf(err, FB_EXIT_SETUP,
                       "--foreign-profiles: \"%s\" is not a built-in profile (other users never get "
                       "profile files)", name);
    r->profiles = fb_xrealloc(r->profiles, (r->nprofiles + 1) * sizeof *r->profiles);
    r->profiles[r->nprofiles++] = fb_xstrdup(name);
    return 0;
}

int foreign_rules_set_profiles(struct foreign_rules *r, const char *list, struct fb_err *err)
{
    for (size_t i = 0; i < r->nprofiles; i++)
        free(r->profiles[i]);
    r->nprofiles = 0;
    return each_item(list, add_profile, r, err);
}

static int add_option(struct foreign_rules *r, const char *name, struct fb_err *err)
{
    if (name[0] == '-' && name[1] == '-')
        name += 2;
    const struct fb_opt *o = opt_find(cli_policy_opts, cli_npolicy_opts, name);
    if (!o)
        return fb_errf(err, FB_EXIT_SETUP, "--foreign-options: unknown option \"%s\"", name);
    if (!(o->flags & FB_OPT_SESSION))
        return fb_errf(err, FB_EXIT_SETUP, "--foreign-options: --%s is not available for sessions",
                       name);
    r->opts[o - cli_policy_opts] = true;
    return 0;
}

int foreign_rules_set_options(struct foreign_rules *r, const char *list, struct fb_err *err)
{
    memset(r->opts, 0, cli_npolicy_opts * sizeof *r->opts);
    return each_item(list, add_option, r, err);
}

/* May the caller set this row? NULL rules: the server's own uid or root. */
static bool row_allowed(const struct foreign_rules *r, const struct fb_opt *o)
{
    return r ? r->opts[o - cli_policy_opts] : (o->flags & FB_OPT_SESSION) != 0;
}

static int refuse(struct proto_err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int refuse(struct proto_err *e, const char *param, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    perr_set(e, "permission_denied", "%s", msg);
    snprintf(e->param, sizeof e->param, "%s", param);
    return -1;
}

/* A typed parameter is the policy option of that name as far as who may set
 * it is concerned. */
int session_check_field(const struct foreign_rules *r, const char *param, const char *opt,
                        struct proto_err *e)
{
    const struct fb_opt *o = opt_find(cli_policy_opts, cli_npolicy_opts, opt);
    if (!o || row_allowed(r, o))
        return 0;
    return refuse(e, param,
                  "%s (--%s) is not available to other users' sessions on this server (its owner "
                  "allows them with fluebox serve --foreign-options)",
                  param, opt);
}

static int check_profile(const struct foreign_rules *r, const char *param, const char *profile,
                         struct proto_err *e)
{
    if (!r)
        return 0;
    if (is_path_profile(profile))
        return refuse(e, param, "%s: profile files are only accepted from the server's own uid",
                      param);
    for (size_t i = 0; i < r->nprofiles; i++)
        if (!strcmp(r->profiles[i], profile))
            return 0;
    return refuse(e, param,
                  "profile \"%s\" is not available to other users' sessions on this server (its "
                  "owner allows profiles with fluebox serve --foreign-profiles)",
                  profile);
}

/* The session.create params that are limits, the option each stands for,
 * and its typed setter. */
struct limit_field {
    const char *key, *opt;
    int (*set)(struct fb_policy *, int64_t, const char *, struct fb_err *);
    bool size;
};
static const struct limit_field limit_fields[] = {
    {"limits.memory", "mem", policy_set_mem, true},
    {"limits.disk", "disk", policy_set_disk, true},
    {"limits.fsize", "fsize", policy_set_fsize, true},
    {"limits.pids", "pids", policy_set_pids, false},
    {"limits.nofile", "nofile", policy_set_nofile, false},
};

/* The typed parameters, over the profile: limits, network, allowNet,
 * workspace, cow (docs/protocol.md 4.1). */
static int apply_fields(json_t *params, const struct foreign_rules *r, struct fb_policy *p,
                        struct proto_err *e)
{
    struct fb_err err = {0};
    for (size_t i = 0; i < FB_ARRAY_LEN(limit_fields); i++) {
        const struct limit_field *f = &limit_fields[i];
        int64_t v;
        int rc = f->size ? pget_size(params, f->key, &v, INT64_MIN, e)
                         : pget_int(params, f->key, &v, INT64_MIN, -1, INT64_MAX, e);
        if (rc < 0)
            return -1;
        if (v == INT64_MIN)
            continue; /* absent or null: the profile's */
        if (session_check_field(r, f->key, f->opt, e) < 0)
            return -1;
        if (f->set(p, v, f->key, &err) < 0)
            return perr_param(e, f->key, "%s", err.msg);
    }
    json_t *cpus = json_object_get(json_object_get(params, "limits"), "cpus");
    if (cpus && !json_is_null(cpus)) {
        if (!json_is_number(cpus) || json_number_value(cpus) < 0)
            return perr_param(e, "limits.cpus", "limits.cpus must be a number >= 0");
        if (session_check_field(r, "limits.cpus", "cpus", e) < 0)
            return -1;
        if (policy_set_cpus(p, json_number_value(cpus), "limits.cpus", &err) < 0)
            return perr_param(e, "limits.cpus", "%s", err.msg);
    }
    const char *network, *workspace;
    json_t *allow;
    bool cow;
    if (pget_str(params, "network", &network, NULL, false, 16, e) < 0 ||
        pget_str(params, "workspace", &workspace, NULL, false, 4095, e) < 0 ||
        pget_strarray(params, "allowNet", &allow, true, e) < 0 ||
        pget_bool(params, "cow", &cow, false, e) < 0)
        return -1;
    if (network) {
        enum fb_net_mode m;
        if (!strcmp(network, "none"))
            m = FB_NET_NONE;
        else if (!strcmp(network, "allow"))
            m = FB_NET_ALLOW;
        else if (!strcmp(network, "host"))
            m = FB_NET_HOST;
        else
            return perr_param(e, "network", "network must be \"none\", \"allow\" or \"host\"");
        if (session_check_field(r, "network", "net", e) < 0)
            return -1;
        policy_set_net(p, m);
    }
    if (json_array_size(allow)) {
        if (session_check_field(r, "allowNet", "allow-net", e) < 0)
            return -1;
        size_t i;
        json_t *it;
        json_array_foreach(allow, i, it)
        {
            if (policy_add_allow(p, json_string_value(it), &err) < 0)
                return perr_param(e, "allowNet", "%s", err.msg);
        }
    }
    if (workspace) {
        if (session_check_field(r, "workspace", "workspace", e) < 0)
            return -1;
        if (workspace[0] != '/')
            return perr_param(e, "workspace", "workspace must be an absolute host path");
        if (policy_set_workspace(p, workspace, "workspace", &err) < 0)
            return perr_param(e, "workspace", "%s", err.msg);
    }
    if (cow) {
        if (session_check_field(r, "cow", "cow", e) < 0)
            return -1;
        policy_set_cow(p, true);
    }
    return sess_secret_fields(params, r, p, e);
}

/* session.create's "options": the command line's words, parsed with the
 * same table; only rows a session accepts (FB_OPT_SESSION), and of those
 * only the ones the server lets other uids set. */
static int parse_options(json_t *options, const struct foreign_rules *r, struct fb_policy *p,
                         struct fb_parsed *parsed, struct proto_err *e)
{
    memset(parsed, 0, sizeof *parsed);
    size_t n = json_array_size(options);
    char **av = fb_xcalloc(n + 1, sizeof *av);
    for (size_t i = 0; i < n; i++)
        av[i] = (char *)json_string_value(json_array_get(options, i));
    struct fb_err err = {0};
    int rc = cli_parse((int)n, av, p, NULL, FB_OPT_SESSION, "session create", parsed, &err);
    free(av);
    if (rc > 0)
        return perr_param(e, "options", "options: --help is not an option here");
    if (rc < 0)
        return perr_param(e, "options", "options: %s", err.msg);
    int bad = 0;
    if (parsed->nargs)
        bad = perr_param(e, "options", "options: unexpected argument \"%s\"", parsed->args[0]);
    for (size_t i = 0; !bad && i < parsed->n; i++) {
        const struct fb_opt *o = parsed->v[i].o;
        if (!row_allowed(r, o))
            bad = refuse(e, "options",
                         "options: --%s is not available to other users' sessions on this server "
                         "(its owner allows it with fluebox serve --foreign-options)",
                         o->name);
        else if (o->flags & FB_OPT_FIRST)
            bad = check_profile(r, "options", parsed->v[i].val, e);
        else if (!strcmp(o->name, "secret"))
            /* The value would be the server's variable (or file): the
             * client reads its own and sends it in "secrets". */
            bad = perr_param(e, "options",
                             "options: --secret would take the value from the server's "
                             "environment; send it in \"secrets\" (the clients read it from "
                             "their own environment or file)");
    }
    if (bad)
        opt_parsed_free(parsed);
    return bad;
}

/* Decide whether the pool (sandboxes of the default policy) can serve these
 * params: only limits the live cgroup can change, and server-side settings,
 * may differ. */
static bool pool_fits(json_t *params)
{
    static const char *const pool_limits[] = {"memory", "cpus", "pids", "timeoutMs", NULL};
    const char *k;
    json_t *v;
    json_object_foreach(params, k, v)
    {
        if (!strcmp(k, "profile") && json_is_string(v) &&
            strcmp(json_string_value(v), FB_DEFAULT_PROFILE))
            return false;
        if (!strcmp(k, "network") && json_is_string(v) && strcmp(json_string_value(v), "none"))
            return false;
        if ((!strcmp(k, "allowNet") || !strcmp(k, "options") || !strcmp(k, "secrets") ||
             !strcmp(k, "allowHttp")) &&
            json_array_size(v))
            return false;
        if (!strcmp(k, "upstreamCa") && !json_is_null(v))
            return false;
        if (!strcmp(k, "workspace") && !json_is_null(v))
            return false;
        if (!strcmp(k, "cow") && json_is_true(v))
            return false;
    }
    json_t *limits = json_object_get(params, "limits");
    if (json_is_object(limits)) {
        json_object_foreach(limits, k, v)
        {
            if (!key_in(k, pool_limits) && !json_is_null(v))
                return false;
        }
    }
    return true;
}

static int policy_from_params(json_t *params, const struct foreign_rules *foreign,
                              struct fb_policy *p, struct session_params *sp,
                              struct proto_err *e)
{
    memset(sp, 0, sizeof *sp);
    policy_init(p);
    struct fb_parsed parsed = {0};
    struct fb_err err = {.notes = &sp->notes};
    int rc = -1;
    struct fb_callenv ce = {0};
    char **cenv = NULL;
    json_t *caller = json_object_get(params, "caller");

    const char *profile, *cwd;
    json_t *options, *env;
    int64_t timeout;
    if (pget_str(params, "profile", &profile, NULL, false, 4095, e) < 0 ||
        pget_str(params, "cwd", &cwd, NULL, false, 4095, e) < 0 ||
        pget_str(params, "label", &sp->label, NULL, false, 256, e) < 0 ||
        pget_strarray(params, "options", &options, false, e) < 0 ||
        pget_strmap(params, "env", &env, e) < 0 ||
        pget_bool(params, "pool", &sp->pool_ok, true, e) < 0 ||
        pget_int(params, "ttlMs", &sp->ttl_ms, 0, 0, INT64_MAX / 2000000, e) < 0 ||
        pget_int(params, "idleTimeoutMs", &sp->idle_ms, 1800000, 0, INT64_MAX / 2000000, e) < 0 ||
        pget_int(params, "limits.timeoutMs", &timeout, -1, 0, INT64_MAX / 2000000, e) < 0)
        goto out;
    if (cwd && cwd[0] != '/') {
        perr_param(e, "cwd", "cwd must be an absolute path inside the sandbox");
        goto out;
    }
    if (env) {
        const char *k;
        json_t *v;
        json_object_foreach(env, k, v)
        {
            if (!*k || strchr(k, '=')) {
                perr_param(e, "env", "env: \"%.64s\" is not a variable name", k);
                goto out;
            }
        }
    }
    if (caller && !json_is_null(caller)) {
        /* The creating client's PATH, directory and version settings: what
         * its exec'ed python3, node, npm are (toolchain.h). */
        if (foreign) {
            refuse(e, "caller",
                   "the creating client's programs are only bound for the server's own uid");
            goto out;
        }
        const char *bad = callenv_from_json(caller, &ce, &cenv);
        if (bad) {
            perr_param(e, "caller", "%s", bad);
            goto out;
        }
    } else {
        caller = NULL;
    }
    if (profile && check_profile(foreign, "profile", profile, e) < 0)
        goto out;
    if (options && parse_options(options, foreign, p, &parsed, e) < 0)
        goto out;

    /* The profile (options' --profile wins, as on the command line), the
     * typed fields over it, then the options in their order. */
    const char *prof = cli_profile_of(&parsed);
    if (!prof)
        prof = profile ? profile : FB_DEFAULT_PROFILE;
    if (profile_load(p, prof, &err) < 0) {
        perr_param(e, cli_profile_of(&parsed) ? "options" : "profile", "%s", err.msg);
        goto out;
    }
    if (apply_fields(params, foreign, p, e) < 0)
        goto out;
    if (cli_apply(p, &parsed, &err) < 0) {
        perr_param(e, "options", "%s", err.msg);
        goto out;
    }
    /* Host network, from whichever parameter: never for other uids unless
     * the owner said so. */
    if (foreign && p->net == FB_NET_HOST && !foreign->net_host) {
        refuse(e, "network",
               "the host network is not available to other users' sessions on this server (its "
               "owner allows it with fluebox serve --foreign-net-host)");
        goto out;
    }
    /* Sessions have no command of their own; "/bin/sh" satisfies the checks
     * without binding anything (it lives in the system tree). */
    p->argv = fb_xcalloc(2, sizeof(char *));
    p->argv[0] = fb_xstrdup("/bin/sh");
    if (policy_finish(p, caller ? &ce : NULL, &err) < 0) {
        perr_set(e, "invalid_params", "%s", err.msg);
        /* The checks across fields name the option: the parameter it is. */
        if (!strncmp(err.msg, "--secret", 8))
            snprintf(e->param, sizeof e->param, "secrets");
        else if (!strncmp(err.msg, "--allow-http", 12))
            snprintf(e->param, sizeof e->param, "allowHttp");
        goto out;
    }
    /* A session with an allowlist may be granted a secret or an HTTP rule
     * while it runs (session.grant): its sandbox trusts a per-session CA
     * from the start. */
    if (p->net == FB_NET_ALLOW)
        p->tls_ca = true;
    /* The secrets' values (the client's), into the engine's keeping. */
    if (sess_secrets_load(params, p, e) < 0)
        goto out;
    sp->env = env;
    sp->cwd = cwd;
    sp->exec_timeout_ms = timeout >= 0 ? timeout
                          : p->limits.timeout_ms > 0 ? p->limits.timeout_ms
                                                     : 0;
    /* The caller's programs are bound when the sandbox is made: a pool
     * sandbox fits only if it carries the same binds (server_pool.c; the
     * PATH is set per exec). */
    if (sp->pool_ok)
        sp->pool_ok = pool_fits(params);
    rc = 0;
out:
    callenv_free_envp(cenv);
    opt_parsed_free(&parsed);
    if (rc < 0) {
        policy_free(p);
        policy_init(p);
    }
    return rc;
}

/* Policies are built by the server's loop (session.create, fork) and by
 * the worker (a pool sandbox's): one at a time. */
static pthread_mutex_t polmu = PTHREAD_MUTEX_INITIALIZER;

int session_policy_from_params(json_t *params, const struct foreign_rules *foreign,
                               struct fb_policy *p, struct session_params *sp,
                               struct proto_err *e)
{
    pthread_mutex_lock(&polmu);
    int rc = policy_from_params(params, foreign, p, sp, e);
    pthread_mutex_unlock(&polmu);
    return rc;
}

int session_pool_policy(struct fb_policy *p, struct fb_err *err)
{
    json_t *params = json_object();
    struct session_params sp;
    struct proto_err e = {0};
    int rc = session_policy_from_params(params, NULL, p, &sp, &e);
    json_decref(params);
    if (rc < 0)
        fb_errf(err, FB_EXIT_SETUP, "pool policy: %s", e.message);
    perr_clear(&e);
    return rc;
}

/* ---- session objects ---- */

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

struct fb_session *session_new(void)
{
    struct fb_session *s = fb_xcalloc(1, sizeof *s);
    policy_init(&s->pol);
    s->sb.pid = -1;
    s->sb.pidfd = -1;
    s->sb.ctl = -1;
    s->sb.scratch_fd = -1;
    idrange_init(&s->sb.ids.claim);
    s->created_ms = s->last_used_ms = wall_ms();
    s->created_ns = s->last_used_ns = fb_now_ns();
    return s;
}

void session_set_id(struct fb_session *s)
{
    unsigned char r[8];
    if (getrandom(r, sizeof r, 0) != (ssize_t)sizeof r) {
        uint64_t t = fb_now_ns() ^ ((uint64_t)getpid() << 32);
        memcpy(r, &t, sizeof r);
    }
    snprintf(s->id, sizeof s->id, "s-%02x%02x%02x%02x%02x%02x%02x%02x", r[0], r[1], r[2], r[3],
             r[4], r[5], r[6], r[7]);
    s->created_ms = s->last_used_ms = wall_ms();
    s->created_ns = s->last_used_ns = fb_now_ns();
}

/* env "K=V" array: replace or append. */
static void env_set(char ***env, const char *k, const char *v)
{
    size_t kl = strlen(k), n = 0;
    char *kv = fb_xasprintf("%s=%s", k, v);
    for (; (*env)[n]; n++) {
        if (!strncmp((*env)[n], k, kl) && (*env)[n][kl] == '=') {
            free((*env)[n]);
            (*env)[n] = kv;
            return;
        }
    }
    *env = fb_xrealloc(*env, (n + 2) * sizeof **env);
    (*env)[n] = kv;
    (*env)[n + 1] = NULL;
}

void session_apply_params(struct fb_session *s, struct session_params *sp)
{
    if (sp->rec)
        s->rec = fb_steal_ptr(sp->rec);
    if (s->env)
        harden_free_env(s->env);
    s->env = harden_build_env(&s->pol);
    if (sp->env) {
        const char *k;
        json_t *v;
        json_object_foreach(sp->env, k, v) env_set(&s->env, k, json_string_value(v));
    }
    free(s->cwd);
    s->cwd = fb_xstrdup(sp->cwd ? sp->cwd : s->pol.cwd ? s->pol.cwd : "/workspace");
    free(s->label);
    s->label = sp->label ? fb_xstrdup(sp->label) : NULL;
    s->ttl_ms = sp->ttl_ms;
    s->idle_ms = sp->idle_ms;
    s->exec_timeout_ms = sp->exec_timeout_ms;
    /* The policy's warnings, before (a spawn) or after (a pool sandbox's)
     * those of the sandbox's making. */
    struct fb_err sink = {.notes = &s->notes};
    const char *line = sp->notes.text, *nl;
    while (line < sp->notes.text + sp->notes.len &&
           (nl = memchr(line, '\n', (size_t)(sp->notes.text + sp->notes.len - line)))) {
        fb_note(&sink, "%.*s", (int)(nl - line), line);
        line = nl + 1;
    }
    s->notes.dropped += sp->notes.dropped;
}

void session_give_warnings(struct fb_session *s, json_t *info)
{
    if (!s->notes.len && !s->notes.dropped)
        return;
    json_t *a = json_array();
    const char *line = s->notes.text, *nl;
    while (line < s->notes.text + s->notes.len &&
           (nl = memchr(line, '\n', (size_t)(s->notes.text + s->notes.len - line)))) {
        json_array_append_new(a, json_stringn(line, (size_t)(nl - line)));
        line = nl + 1;
    }
    if (s->notes.dropped)
        json_array_append_new(a, json_sprintf("(%u more warnings not shown)", s->notes.dropped));
    json_object_set_new(info, "warnings", a);
    memset(&s->notes, 0, sizeof s->notes);
}

int session_adopt_limits(struct fb_session *s, const struct fb_policy *p)
{
    const struct fb_limits *have = &s->pol.limits, *want = &p->limits;
    bool same = have->mem == want->mem && have->cpus == want->cpus && have->pids == want->pids;
    if (same)
        return 0;
    if (s->sb.nproc_fallback && have->pids != want->pids)
        return -1;
    if (!s->sb.cg)
        return -1;
    struct fb_err err = {0};
    return cgroup_set_limits(s->sb.cg, want, &err);
}

void session_free(struct fb_session *s)
{
    if (!s)
        return;
    policy_free(&s->pol);
    tool_binds_free(s->pool_binds, s->npool_binds);
    if (s->env)
        harden_free_env(s->env);
    free(s->cwd);
    free(s->label);
    json_decref(s->params);
    fork_free(s->fork);
    record_abandon(s->rec); /* ended by sess_record_end; this only if not */
    free(s);
}

json_t *session_info(struct fb_session *s, json_t *running, uint64_t total_execs)
{
    const struct fb_policy *p = &s->pol;
    const char *net = p->net == FB_NET_ALLOW ? "allow" : p->net == FB_NET_HOST ? "host" : "none";
    json_t *lim = json_pack("{s:I, s:f, s:I, s:I}", "memory", (json_int_t)(p->limits.mem > 0 ? p->limits.mem : -1),
                            "cpus", p->limits.cpus > 0 ? p->limits.cpus : 0.0, "pids",
                            (json_int_t)(p->limits.pids > 0 ? p->limits.pids : -1), "timeoutMs",
                            (json_int_t)s->exec_timeout_ms);
    struct fb_cg_usage u = {0};
    u.mem_peak = u.mem_current = u.pids_peak = u.cpu_usage_us = u.oom_kills = -1;
    if (s->sb.cg && s->state == SESS_READY) {
        cgroup_usage(s->sb.cg, &u);
        json_object_set_new(lim, "applied", json_string(cgroup_applied(s->sb.cg)));
        json_object_set_new(lim, "notApplied", json_string(cgroup_not_applied(s->sb.cg)));
    } else {
        json_object_set_new(lim, "applied", json_string(""));
        json_object_set_new(lim, "notApplied", json_string(""));
    }
    json_t *usage = json_pack("{s:I, s:I, s:I, s:I, s:I, s:I}", "memoryBytes", (json_int_t)u.mem_current,
                              "memoryPeakBytes", (json_int_t)u.mem_peak, "cpuMs",
                              (json_int_t)(u.cpu_usage_us >= 0 ? u.cpu_usage_us / 1000 : -1),
                              "pidsPeak", (json_int_t)u.pids_peak, "oomKills",
                              (json_int_t)u.oom_kills, "diskUsedBytes",
                              (json_int_t)(s->state == SESS_READY ? sandbox_disk_used(&s->sb) : -1));
    json_t *o = json_object();
    json_object_set_new(o, "session", json_string(s->id));
    json_object_set_new(o, "label", s->label ? json_string(s->label) : json_null());
    json_object_set_new(o, "state", json_string(s->state == SESS_DEAD ? "dead" : "ready"));
    if (s->state == SESS_DEAD && s->death[0])
        json_object_set_new(o, "reason", json_string(s->death));
    json_object_set_new(o, "profile", json_string(p->profile_name ? p->profile_name : ""));
    json_object_set_new(o, "pooled", json_boolean(s->pooled));
    json_object_set_new(o, "toolchain", toolchain_json(p));
    json_object_set_new(o, "forkedFrom", s->forked_from[0] ? json_string(s->forked_from) : json_null());
    json_object_set_new(o, "workspace", p->workspace ? json_string(p->workspace) : json_null());
    json_object_set_new(o, "cwd", json_string(s->cwd ? s->cwd : "/workspace"));
    json_object_set_new(o, "network", json_string(net));
    json_t *allow = json_array();
    for (size_t i = 0; i < p->nallow; i++) {
        const struct fb_allow *a = &p->allow[i];
        json_t *pat = a->port ? json_sprintf("%s%s:%u", a->wildcard ? "*." : "", a->name, a->port)
                              : json_sprintf("%s%s", a->wildcard ? "*." : "", a->name);
        json_array_append_new(allow, pat);
    }
    json_object_set_new(o, "allowNet", allow);
    sess_secrets_info(p, o);
    json_object_set_new(o, "createdAt", json_integer(s->created_ms));
    json_object_set_new(o, "lastUsedAt", json_integer(s->last_used_ms));
    json_object_set_new(o, "expiresAt",
                        s->ttl_ms > 0 ? json_integer(s->created_ms + s->ttl_ms) : json_null());
    json_object_set_new(o, "ttlMs", json_integer(s->ttl_ms));
    json_object_set_new(o, "idleTimeoutMs", json_integer(s->idle_ms));
    json_object_set_new(o, "limits", lim);
    json_object_set_new(o, "execs", json_pack("{s:o, s:I}", "running", running ? running : json_array(),
                                              "total", (json_int_t)total_execs));
    json_object_set_new(o, "usage", usage);
    return o;
}

void session_touch(struct fb_session *s)
{
    s->last_used_ms = wall_ms();
    s->last_used_ns = fb_now_ns();
}
