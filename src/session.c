/* session.c — sessions on the supervisor side (see session.h): policy from
 * session.create parameters, pool matching, the spawn/release worker
 * thread, the info object, and the control-socket record format.
 *
 * Why a worker thread: sandbox_spawn() waits for the child to build its root
 * and report READY (milliseconds); the server's single event loop must not
 * stall for every session.create or pool refill. One long-lived thread does
 * every spawn and release, in order. It must live as long as the server:
 * PR_SET_PDEATHSIG in a sandbox fires when the *thread* that created it
 * exits. Nothing else runs on it; the server's loop only hands it sessions
 * it does not touch until the job comes back. */
#include "session.h"

#include "ctl.h"

#include "cgroup.h"
#include "cli.h"
#include "harden.h"
#include "profile.h"

#include <pthread.h>
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

static void argv_push(char ***v, size_t *n, const char *s)
{
    *v = fb_xrealloc(*v, (*n + 2) * sizeof **v);
    (*v)[(*n)++] = fb_xstrdup(s);
    (*v)[*n] = NULL;
}

static void argv_free(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

static void size_arg(char *buf, size_t cap, int64_t v)
{
    if (v < 0)
        snprintf(buf, cap, "unlimited");
    else
        snprintf(buf, cap, "%lld", (long long)v);
}

static bool key_in(const char *k, const char *const *set)
{
    for (; *set; set++)
        if (!strcmp(k, *set))
            return true;
    return false;
}

/* Options that make no sense for a session or write host files at the end. */
static const char *const refused_opts[] = {"--report", "--changes", "--commit", NULL};

static bool is_path_profile(const char *s)
{
    size_t l = strlen(s);
    return strchr(s, '/') || (l > 5 && !strcmp(s + l - 5, ".json"));
}

int session_policy_from_params(json_t *params, uid_t peer_uid, struct fb_policy *p,
                               struct session_params *sp, struct proto_err *e)
{
    memset(sp, 0, sizeof *sp);
    policy_init(p);
    char **av = NULL;
    size_t ac = 0;
    char num[64];
    int rc = -1;
    bool foreign = peer_uid != geteuid() && peer_uid != 0;

    const char *profile, *network, *workspace, *cwd;
    json_t *allow, *options, *env;
    bool cow;
    int64_t mem, disk, fsize, pids, nofile, timeout;
    if (pget_str(params, "profile", &profile, NULL, false, 4095, e) < 0 ||
        pget_str(params, "network", &network, NULL, false, 16, e) < 0 ||
        pget_str(params, "workspace", &workspace, NULL, false, 4095, e) < 0 ||
        pget_str(params, "cwd", &cwd, NULL, false, 4095, e) < 0 ||
        pget_str(params, "label", &sp->label, NULL, false, 256, e) < 0 ||
        pget_strarray(params, "allowNet", &allow, true, e) < 0 ||
        pget_strarray(params, "options", &options, false, e) < 0 ||
        pget_strmap(params, "env", &env, e) < 0 || pget_bool(params, "cow", &cow, false, e) < 0 ||
        pget_bool(params, "pool", &sp->pool_ok, true, e) < 0 ||
        pget_int(params, "ttlMs", &sp->ttl_ms, 0, 0, INT64_MAX / 2000000, e) < 0 ||
        pget_int(params, "idleTimeoutMs", &sp->idle_ms, 1800000, 0, INT64_MAX / 2000000, e) < 0 ||
        pget_size(params, "limits.memory", &mem, 0, e) < 0 ||
        pget_size(params, "limits.disk", &disk, 0, e) < 0 ||
        pget_size(params, "limits.fsize", &fsize, 0, e) < 0 ||
        pget_int(params, "limits.pids", &pids, 0, -1, 1 << 30, e) < 0 ||
        pget_int(params, "limits.nofile", &nofile, 0, 0, 1 << 30, e) < 0 ||
        pget_int(params, "limits.timeoutMs", &timeout, -1, 0, INT64_MAX / 2000000, e) < 0)
        goto out;
    json_t *limits = json_object_get(params, "limits");
    json_t *cpus = json_object_get(limits, "cpus");
    if (cpus && !json_is_null(cpus) && (!json_is_number(cpus) || json_number_value(cpus) < 0)) {
        perr_param(e, "limits.cpus", "limits.cpus must be a number >= 0");
        goto out;
    }
    if (network && strcmp(network, "none") && strcmp(network, "allow") && strcmp(network, "host")) {
        perr_param(e, "network", "network must be \"none\", \"allow\" or \"host\"");
        goto out;
    }
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
    if (foreign && (workspace || (options && json_array_size(options)) ||
                    (profile && is_path_profile(profile)))) {
        perr_set(e, "permission_denied",
                 "host paths and options are only accepted from the server's own uid");
        goto out;
    }
    if (options) {
        size_t i;
        json_t *it;
        json_array_foreach(options, i, it)
        {
            const char *o = json_string_value(it);
            for (const char *const *r = refused_opts; *r; r++) {
                size_t rl = strlen(*r);
                if (!strncmp(o, *r, rl) && (o[rl] == 0 || o[rl] == '=')) {
                    perr_param(e, "options", "options: %s is not available for sessions", *r);
                    goto out;
                }
            }
        }
    }

    if (profile) {
        argv_push(&av, &ac, "--profile");
        argv_push(&av, &ac, profile);
    }
    if (mem) {
        size_arg(num, sizeof num, mem);
        argv_push(&av, &ac, "--mem");
        argv_push(&av, &ac, num);
    }
    if (cpus && !json_is_null(cpus)) {
        double c = json_number_value(cpus);
        if (c == 0)
            snprintf(num, sizeof num, "unlimited");
        else
            snprintf(num, sizeof num, "%.6g", c);
        argv_push(&av, &ac, "--cpus");
        argv_push(&av, &ac, num);
    }
    if (pids) {
        size_arg(num, sizeof num, pids);
        argv_push(&av, &ac, "--pids");
        argv_push(&av, &ac, num);
    }
    if (disk) {
        size_arg(num, sizeof num, disk);
        argv_push(&av, &ac, "--disk");
        argv_push(&av, &ac, num);
    }
    if (nofile) {
        snprintf(num, sizeof num, "%lld", (long long)nofile);
        argv_push(&av, &ac, "--nofile");
        argv_push(&av, &ac, num);
    }
    if (fsize) {
        size_arg(num, sizeof num, fsize);
        argv_push(&av, &ac, "--fsize");
        argv_push(&av, &ac, num);
    }
    if (network) {
        argv_push(&av, &ac, "--net");
        argv_push(&av, &ac, network);
    }
    if (allow) {
        size_t i;
        json_t *it;
        json_array_foreach(allow, i, it)
        {
            argv_push(&av, &ac, "--allow-net");
            argv_push(&av, &ac, json_string_value(it));
        }
    }
    if (workspace) {
        if (workspace[0] != '/') {
            perr_param(e, "workspace", "workspace must be an absolute host path");
            goto out;
        }
        argv_push(&av, &ac, "--workspace");
        argv_push(&av, &ac, workspace);
    }
    if (cow)
        argv_push(&av, &ac, "--cow");
    if (options) {
        size_t i;
        json_t *it;
        json_array_foreach(options, i, it)
        argv_push(&av, &ac, json_string_value(it));
    }

    struct fb_err err = {0};
    if (cli_parse_policy((int)ac, av ? av : (char *[]){NULL}, p, false, &err) < 0) {
        perr_set(e, "invalid_params", "%s", err.msg);
        goto out;
    }
    /* Sessions have no command of their own; "/bin/sh" satisfies the checks
     * without binding anything (it lives in the system tree). */
    p->argv = fb_xcalloc(2, sizeof(char *));
    p->argv[0] = fb_xstrdup("/bin/sh");
    if (policy_finish(p, getenv("PATH"), &err) < 0) {
        perr_set(e, "invalid_params", "%s", err.msg);
        goto out;
    }
    sp->env = env;
    sp->cwd = cwd;
    sp->exec_timeout_ms = timeout >= 0 ? timeout
                          : p->limits.timeout_ms > 0 ? p->limits.timeout_ms
                                                     : 0;

    /* The pool holds sandboxes of the default policy: only limits the live
     * cgroup can change, and server-side settings, may differ. */
    if (sp->pool_ok) {
        static const char *const pool_keys[] = {"limits", "env", "cwd", "ttlMs", "label",
                                                "idleTimeoutMs", "pool", "profile",
                                                "network", "allowNet", "options",
                                                "workspace", "cow", NULL};
        static const char *const pool_limits[] = {"memory", "cpus", "pids", "timeoutMs", NULL};
        const char *k;
        json_t *v;
        json_object_foreach(params, k, v)
        {
            if (!key_in(k, pool_keys))
                continue; /* unknown keys are ignored */
            if (!strcmp(k, "profile") && json_is_string(v) &&
                strcmp(json_string_value(v), FB_DEFAULT_PROFILE))
                sp->pool_ok = false;
            if (!strcmp(k, "network") && json_is_string(v) && strcmp(json_string_value(v), "none"))
                sp->pool_ok = false;
            if ((!strcmp(k, "allowNet") || !strcmp(k, "options")) && json_array_size(v))
                sp->pool_ok = false;
            if (!strcmp(k, "workspace") && !json_is_null(v))
                sp->pool_ok = false;
            if (!strcmp(k, "cow") && json_is_true(v))
                sp->pool_ok = false;
        }
        if (json_is_object(limits)) {
            json_object_foreach(limits, k, v)
            {
                if (!key_in(k, pool_limits) && !json_is_null(v))
                    sp->pool_ok = false;
            }
        }
    }
    rc = 0;
out:
    argv_free(av, ac);
    if (rc < 0) {
        policy_free(p);
        policy_init(p);
    }
    return rc;
}

int session_pool_policy(struct fb_policy *p, struct fb_err *err)
{
    json_t *params = json_object();
    struct session_params sp;
    struct proto_err e = {0};
    int rc = session_policy_from_params(params, geteuid(), p, &sp, &e);
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

void session_apply_params(struct fb_session *s, const struct session_params *sp)
{
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
    if (s->env)
        harden_free_env(s->env);
    free(s->cwd);
    free(s->label);
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
    json_t *usage = json_pack("{s:I, s:I, s:I, s:I, s:I}", "memoryBytes", (json_int_t)u.mem_current,
                              "memoryPeakBytes", (json_int_t)u.mem_peak, "cpuMs",
                              (json_int_t)(u.cpu_usage_us >= 0 ? u.cpu_usage_us / 1000 : -1),
                              "pidsPeak", (json_int_t)u.pids_peak, "oomKills",
                              (json_int_t)u.oom_kills);
    json_t *o = json_object();
    json_object_set_new(o, "session", json_string(s->id));
    json_object_set_new(o, "label", s->label ? json_string(s->label) : json_null());
    json_object_set_new(o, "state", json_string(s->state == SESS_DEAD ? "dead" : "ready"));
    if (s->state == SESS_DEAD && s->death[0])
        json_object_set_new(o, "reason", json_string(s->death));
    json_object_set_new(o, "profile", json_string(p->profile_name ? p->profile_name : ""));
    json_object_set_new(o, "pooled", json_boolean(s->pooled));
    json_object_set_new(o, "workspace", p->workspace ? json_string(p->workspace) : json_null());
    json_object_set_new(o, "cwd", json_string(s->cwd ? s->cwd : "/workspace"));
    json_object_set_new(o, "network", json_string(net));
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

/* ---- the worker ---- */

struct wjob {
    struct fb_session *s;
    enum worker_job kind;
    struct wjob *next;
};

static pthread_mutex_t wmu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wcv = PTHREAD_COND_INITIALIZER;
static struct wjob *wq_head, *wq_tail, *wd_head, *wd_tail;
static bool wstop, wrunning;
static int wefd = -1;
static pthread_t wthread;

/* The clone guard (spawn.h): the worker asks the main thread to hold still
 * at a safe point of its loop (worker_hold) for the instant of the clone3,
 * so that no lock of the main thread's is copied into the child held. */
static pthread_cond_t qcv = PTHREAD_COND_INITIALIZER;
static bool main_joining;
/* Clone number q_gen was asked for; the main thread acknowledged q_acked
 * and waits until the worker reports q_done. Counters, not flags: the
 * worker may ask for the next clone before the main thread has seen the
 * previous one end. */
static uint64_t q_gen, q_acked, q_done;

static void clone_guard(bool before)
{
    pthread_mutex_lock(&wmu);
    if (before) {
        q_gen++;
        uint64_t one = 1;
        if (write(wefd, &one, sizeof one) < 0) {
            /* cannot fail with a counter this small */
        }
        while (q_acked != q_gen && !main_joining)
            pthread_cond_wait(&qcv, &wmu);
    } else {
        q_done = q_gen;
        pthread_cond_broadcast(&qcv);
    }
    pthread_mutex_unlock(&wmu);
}

void worker_hold(void)
{
    pthread_mutex_lock(&wmu);
    if (q_acked != q_gen) {
        uint64_t g = q_gen;
        q_acked = g;
        pthread_cond_broadcast(&qcv);
        while (q_done != g)
            pthread_cond_wait(&qcv, &wmu);
    }
    pthread_mutex_unlock(&wmu);
}

static void *worker_main(void *arg)
{
    (void)arg;
    for (;;) {
        pthread_mutex_lock(&wmu);
        while (!wq_head && !wstop)
            pthread_cond_wait(&wcv, &wmu);
        struct wjob *j = wq_head;
        if (j) {
            wq_head = j->next;
            if (!wq_head)
                wq_tail = NULL;
        }
        pthread_mutex_unlock(&wmu);
        if (!j)
            break; /* stopping and nothing left */
        struct fb_session *s = j->s;
        if (j->kind == WJ_SPAWN && wstop) {
            s->spawn_rc = -1;
            fb_errf(&s->spawn_err, FB_EXIT_SETUP, "the server is stopping");
        } else if (j->kind == WJ_SPAWN) {
            memset(&s->spawn_err, 0, sizeof s->spawn_err);
            s->spawn_rc = sandbox_spawn(&s->pol, FB_MODE_SESSION, &s->sb, &s->spawn_err);
        } else {
            sandbox_kill(&s->sb);
            sandbox_release(&s->sb);
        }
        j->next = NULL;
        pthread_mutex_lock(&wmu);
        if (wd_tail)
            wd_tail->next = j;
        else
            wd_head = j;
        wd_tail = j;
        pthread_mutex_unlock(&wmu);
        uint64_t one = 1;
        if (write(wefd, &one, sizeof one) < 0) {
            /* eventfd counter overflow cannot happen at this rate */
        }
    }
    return NULL;
}

int worker_start(struct fb_err *err)
{
    wefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
    if (wefd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "eventfd");
    sandbox_clone_guard = clone_guard;
    int r = pthread_create(&wthread, NULL, worker_main, NULL);
    if (r) {
        errno = r;
        return fb_errno(err, FB_EXIT_SETUP, "starting the spawn thread");
    }
    wrunning = true;
    return 0;
}

int worker_fd(void)
{
    return wefd;
}

void worker_ack(void)
{
    uint64_t v;
    if (read(wefd, &v, sizeof v) < 0) {
        /* EAGAIN: nothing pending */
    }
}

void worker_submit(struct fb_session *s, enum worker_job kind)
{
    struct wjob *j = fb_xcalloc(1, sizeof *j);
    j->s = s;
    j->kind = kind;
    pthread_mutex_lock(&wmu);
    if (wq_tail)
        wq_tail->next = j;
    else
        wq_head = j;
    wq_tail = j;
    pthread_cond_signal(&wcv);
    pthread_mutex_unlock(&wmu);
}

struct fb_session *worker_done(enum worker_job *kind)
{
    pthread_mutex_lock(&wmu);
    struct wjob *j = wd_head;
    if (j) {
        wd_head = j->next;
        if (!wd_head)
            wd_tail = NULL;
    }
    pthread_mutex_unlock(&wmu);
    if (!j)
        return NULL;
    struct fb_session *s = j->s;
    *kind = j->kind;
    free(j);
    return s;
}

void worker_stop(void)
{
    if (!wrunning)
        return;
    pthread_mutex_lock(&wmu);
    wstop = true;
    main_joining = true; /* blocked in pthread_join, we hold no lock */
    pthread_cond_signal(&wcv);
    pthread_cond_broadcast(&qcv);
    pthread_mutex_unlock(&wmu);
    pthread_join(wthread, NULL);
    wrunning = false;
}
