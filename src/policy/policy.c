/* policy.c — the policy struct: defaults, appenders, validation of option
 * combinations, and the derived parts (where the command is and what is
 * bound for it: toolchain.c). Loading profiles is profile.c's job. */
#include "policy.h"

#include "toolchain.h"

#include <ctype.h>
#include <limits.h>
#include <stdarg.h>
#include <string.h>
#include <arpa/inet.h>
#include <sys/stat.h>

void policy_init(struct fb_policy *p)
{
    memset(p, 0, sizeof *p);
    p->profile_name = fb_xstrdup("none");
    p->cwd = fb_xstrdup("/workspace");
    p->uid = 1000;
    p->gid = 1000;
    p->hostname = fb_xstrdup("fluebox");
    p->namespaces = FB_NS_ALL;
    p->bind_interpreter = true;
    p->limits.mem = -1;
    p->limits.cpus = 0;
    p->limits.pids = -1;
    p->limits.disk = 1024LL * 1024 * 1024;
    p->limits.timeout_ms = -1;
    p->limits.nofile = 1024;
    p->limits.fsize = -1;
    p->net = FB_NET_NONE;
    p->max_conns = 256;
    p->conn_idle_ms = 300000;
    p->proxy_port = 0;
    p->seccomp.enabled = true;
    p->seccomp.default_action = FB_SC_ALLOW;
    p->seccomp.default_errno = EPERM;
}

static void free_strv(char **v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i]);
    free(v);
}

void policy_clear_rules(struct fb_policy *p)
{
    if (p->seccomp.rules_borrowed) {
        p->seccomp.rules = NULL;
        p->seccomp.nrules = 0;
        p->seccomp.rules_borrowed = false;
        return;
    }
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        free(p->seccomp.rules[i].name);
        free(p->seccomp.rules[i].comment);
    }
    free(p->seccomp.rules);
    p->seccomp.rules = NULL;
    p->seccomp.nrules = 0;
}

void tool_binds_free(struct fb_tool_bind *b, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(b[i].src);
        free(b[i].dst);
        free(b[i].why);
    }
    free(b);
}

void tool_binds_append(struct fb_policy *p, const struct fb_tool_bind *b, size_t n)
{
    if (!n)
        return;
    p->tool_binds = fb_xrealloc(p->tool_binds, (p->ntool_binds + n + 1) * sizeof *p->tool_binds);
    for (size_t i = 0; i < n; i++) {
        struct fb_tool_bind *d = &p->tool_binds[p->ntool_binds++];
        d->src = fb_xstrdup(b[i].src);
        d->dst = fb_xstrdup(b[i].dst);
        d->why = b[i].why ? fb_xstrdup(b[i].why) : NULL;
    }
}

bool tool_binds_equal(const struct fb_tool_bind *a, size_t na, const struct fb_tool_bind *b,
                      size_t nb)
{
    if (na != nb)
        return false;
    for (size_t i = 0; i < na; i++)
        if (strcmp(a[i].src, b[i].src) || strcmp(a[i].dst, b[i].dst))
            return false;
    return true;
}

void policy_free(struct fb_policy *p)
{
    free(p->profile_name);
    free(p->profile_extends);
    free(p->description);
    free_strv(p->overrides, p->noverrides);
    if (p->argv) {
        for (char **a = p->argv; *a; a++)
            free(*a);
        free(p->argv);
    }
    free(p->exec_path);
    free(p->cwd);
    free(p->workspace);
    free(p->cow_upper);
    free(p->changes_out);
    for (size_t i = 0; i < p->nmounts; i++) {
        free(p->mounts[i].src);
        free(p->mounts[i].dst);
    }
    free(p->mounts);
    tool_binds_free(p->tool_binds, p->ntool_binds);
    free(p->tool_path);
    free_strv(p->tool_env, p->ntool_env);
    free_strv(p->env_set, p->nenv_set);
    free_strv(p->env_pass, p->nenv_pass);
    free(p->hostname);
    for (size_t i = 0; i < p->nallow; i++)
        free(p->allow[i].name);
    free(p->allow);
    for (size_t i = 0; i < p->nresolve; i++) {
        free(p->resolve[i].name);
        free(p->resolve[i].addr);
    }
    free(p->resolve);
    for (size_t i = 0; i < p->nsecrets; i++)
        policy_secret_free(&p->secrets[i]);
    free(p->secrets);
    for (size_t i = 0; i < p->nhttp_rules; i++) {
        free(p->http_rules[i].host.name);
        free(p->http_rules[i].prefix);
    }
    free(p->http_rules);
    free(p->upstream_ca);
    free(p->net_log);
    free(p->record);
    free(p->record_key);
    policy_clear_rules(p);
    free(p->report);
    memset(p, 0, sizeof *p);
}

#define GROW(arr, n) ((arr) = fb_xrealloc((arr), ((n) + 1) * sizeof *(arr)))

void policy_add_mount(struct fb_policy *p, enum fb_mount_kind kind, const char *src,
                      const char *dst, int64_t size)
{
    GROW(p->mounts, p->nmounts);
    struct fb_mount *m = &p->mounts[p->nmounts++];
    memset(m, 0, sizeof *m);
    m->kind = kind;
    m->src = fb_xstrdup(src);
    m->dst = fb_xstrdup(dst);
    m->size = size;
}

void policy_add_override(struct fb_policy *p, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        s = NULL;
    va_end(ap);
    if (!s)
        return;
    GROW(p->overrides, p->noverrides);
    p->overrides[p->noverrides++] = s;
}

void policy_add_env_set(struct fb_policy *p, const char *kv)
{
    /* A later K=V replaces an earlier one with the same K. */
    size_t klen = strcspn(kv, "=");
    for (size_t i = 0; i < p->nenv_set; i++) {
        if (!strncmp(p->env_set[i], kv, klen) && p->env_set[i][klen] == '=') {
            free(p->env_set[i]);
            p->env_set[i] = fb_xstrdup(kv);
            return;
        }
    }
    GROW(p->env_set, p->nenv_set);
    p->env_set[p->nenv_set++] = fb_xstrdup(kv);
}

void policy_add_env_pass(struct fb_policy *p, const char *k)
{
    GROW(p->env_pass, p->nenv_pass);
    p->env_pass[p->nenv_pass++] = fb_xstrdup(k);
}

void policy_own_rules(struct fb_policy *p)
{
    if (!p->seccomp.rules_borrowed)
        return;
    const struct fb_sc_rule *b = p->seccomp.rules;
    size_t n = p->seccomp.nrules;
    struct fb_sc_rule *own = fb_xcalloc(n + 1, sizeof *own);
    for (size_t i = 0; i < n; i++) {
        own[i] = b[i];
        own[i].name = fb_xstrdup(b[i].name);
        own[i].comment = b[i].comment ? fb_xstrdup(b[i].comment) : NULL;
    }
    p->seccomp.rules = own;
    p->seccomp.rules_borrowed = false;
}

void policy_add_rule(struct fb_policy *p, const struct fb_sc_rule *r)
{
    policy_own_rules(p);
    GROW(p->seccomp.rules, p->seccomp.nrules);
    struct fb_sc_rule *d = &p->seccomp.rules[p->seccomp.nrules++];
    *d = *r;
    d->name = fb_xstrdup(r->name);
    d->comment = r->comment ? fb_xstrdup(r->comment) : NULL;
}

/* A DNS name: labels of [a-z0-9-_], 1..63 each, not starting or ending with
 * '-', total <= 253. Lower-cases in place. */
static bool valid_dns_name(char *s)
{
    size_t len = strlen(s);
    if (len == 0 || len > 253)
        return false;
    size_t label = 0;
    for (char *c = s; *c; c++) {
        *c = (char)tolower((unsigned char)*c);
        if (*c == '.') {
            if (label == 0 || c[-1] == '-')
                return false;
            label = 0;
            continue;
        }
        if (!isalnum((unsigned char)*c) && *c != '-' && *c != '_')
            return false;
        if (label == 0 && *c == '-')
            return false;
        if (++label > 63)
            return false;
    }
    return label > 0 && s[len - 1] != '-';
}

int policy_parse_allow(const char *pattern, const char *opt, struct fb_allow *a,
                       struct fb_err *err)
{
    const char *scheme = strstr(pattern, "://");
    if (scheme || strchr(pattern, '/')) {
        /* A URL: say what a pattern is, with the host it names. */
        const char *h = scheme ? scheme + 3 : pattern;
        size_t hl = strcspn(h, "/?#");
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s %s: a pattern is a host name, not a URL (e.g. --allow-net "
                       "%.*s)",
                       opt, pattern, (int)(hl ? hl : 1), hl ? h : "NAME");
    }
    cleanup_free char *s = fb_xstrdup(pattern);
    uint16_t port = 0;
    char *colon = strrchr(s, ':');
    if (colon) {
        uint64_t v;
        if (fb_parse_u64(colon + 1, &v) < 0 || v == 0 || v > 65535)
            return fb_errf(err, FB_EXIT_SETUP, "%s %s: bad port \"%s\" (1-65535)",
                           opt, pattern, colon + 1);
        port = (uint16_t)v;
        *colon = 0;
    }
    bool wildcard = false;
    char *name = s;
    if (!strncmp(name, "*.", 2)) {
        wildcard = true;
        name += 2;
    }
    size_t nl = strlen(name);
    if (nl && name[nl - 1] == '.')
        name[--nl] = 0; /* a fully-qualified trailing dot is fine */
    if (strchr(name, '*'))
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s %s: '*' is only allowed as a leading \"*.\"", opt, pattern);
    if (wildcard && !*name)
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: nothing after \"*.\"", opt, pattern);
    if (!valid_dns_name(name))
        return fb_errf(err, FB_EXIT_SETUP, "%s %s: not a valid host name", opt, pattern);
    const char *tld = strrchr(name, '.');
    if (strspn(tld ? tld + 1 : name, "0123456789") == strlen(tld ? tld + 1 : name))
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s %s: looks like an IP address; allow a name (and map it with "
                       "--egress-resolve NAME=IP)",
                       opt, pattern);
    if (wildcard && !strchr(name, '.'))
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s %s: a wildcard needs at least two labels after \"*.\"",
                       opt, pattern);
    *a = (struct fb_allow){fb_xstrdup(name), wildcard, port};
    return 0;
}

int policy_add_allow(struct fb_policy *p, const char *pattern, struct fb_err *err)
{
    struct fb_allow a;
    if (policy_parse_allow(pattern, "--allow-net", &a, err) < 0)
        return -1;
    GROW(p->allow, p->nallow);
    p->allow[p->nallow++] = a;
    return 0;
}

/* ":PORT" at the end of s (cut off); 0 if none, -1 if malformed. */
static int cut_port(char *s, bool bracketed_v6, uint16_t *port)
{
    *port = 0;
    char *colon = strrchr(s, ':');
    char *bracket = bracketed_v6 ? strrchr(s, ']') : NULL;
    if (bracketed_v6 && !bracket)
        return -1;
    if (!colon || (bracket && colon < bracket))
        return 0;
    uint64_t v;
    if (fb_parse_u64(colon + 1, &v) < 0 || v == 0 || v > 65535)
        return -1;
    *port = (uint16_t)v;
    *colon = 0;
    return 0;
}

int policy_add_resolve(struct fb_policy *p, const char *arg, struct fb_err *err)
{
    const char *eq = strchr(arg, '=');
    if (!eq || eq == arg || !eq[1])
        return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: expected NAME[:PORT]=IP[:PORT]",
                       arg);
    cleanup_free char *name = fb_xstrndup(arg, (size_t)(eq - arg));
    uint16_t port = 0, to_port = 0;
    if (cut_port(name, false, &port) < 0)
        return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: bad port (1-65535)", arg);
    size_t nl = strlen(name);
    if (nl > 1 && name[nl - 1] == '.')
        name[nl - 1] = 0;
    if (!valid_dns_name(name))
        return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: not a valid host name", arg);
    cleanup_free char *addr = fb_xstrdup(eq + 1);
    /* IPv4[:PORT], [IPv6]:PORT or a bare IPv6 address. */
    size_t colons = 0;
    for (const char *c = addr; *c; c++)
        colons += *c == ':';
    if (addr[0] == '[') {
        if (cut_port(addr, true, &to_port) < 0 || addr[strlen(addr) - 1] != ']')
            return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: expected [IPv6]:PORT", arg);
        addr[strlen(addr) - 1] = 0;
        memmove(addr, addr + 1, strlen(addr));
    } else if (colons == 1 && cut_port(addr, false, &to_port) < 0) {
        return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: bad port (1-65535)", arg);
    }
    unsigned char buf[16];
    if (inet_pton(AF_INET, addr, buf) != 1 && inet_pton(AF_INET6, addr, buf) != 1)
        return fb_errf(err, FB_EXIT_SETUP, "--egress-resolve %s: \"%s\" is not an IP address",
                       arg, addr);
    GROW(p->resolve, p->nresolve);
    p->resolve[p->nresolve++] =
        (struct fb_resolve){fb_steal_ptr(name), fb_steal_ptr(addr), port, to_port};
    return 0;
}

bool policy_pattern_match(const struct fb_allow *a, const char *name, uint16_t port)
{
    if (port && (a->port ? a->port != port : (port != 80 && port != 443)))
        return false;
    size_t nl = strlen(name), al = strlen(a->name);
    if (!a->wildcard)
        return nl == al && !strcmp(name, a->name);
    return nl > al + 1 && name[nl - al - 1] == '.' && !strcmp(name + nl - al, a->name);
}

const struct fb_allow *policy_allow_match(const struct fb_policy *p, const char *name,
                                          uint16_t port)
{
    for (size_t i = 0; i < p->nallow; i++)
        if (policy_pattern_match(&p->allow[i], name, port))
            return &p->allow[i];
    return NULL;
}

const char *policy_home(const struct fb_policy *p)
{
    return p->uid == 0 ? "/root" : "/home/fluebox";
}

/* The scratch space is tmpfs, whose pages count against the memory limit:
 * unless --disk says otherwise, it gets at most half of that limit, so a
 * full disk means ENOSPC and the processes still have room. */
static void derive_disk(struct fb_policy *p, struct fb_err *err)
{
    int64_t mem = p->limits.mem;
    if (mem <= 0)
        return;
    if (!p->disk_set) {
        if (p->limits.disk <= 0 || p->limits.disk > mem / 2)
            p->limits.disk = mem / 2;
    } else if ((p->limits.disk <= 0 || p->limits.disk >= mem) && !p->quiet) {
        fb_note(err, "warning: --disk is not below the memory limit: the scratch space is memory "
                "(tmpfs) and counts against it, so filling it may end in an OOM kill, not ENOSPC");
    }
}

int policy_check_secrets(struct fb_policy *p, struct fb_err *err); /* secrets.c */

int policy_finish(struct fb_policy *p, const struct fb_callenv *ce, struct fb_err *err)
{
    derive_disk(p, err);
    if ((!p->argv || !p->argv[0] || !p->argv[0][0]) && !p->print_path)
        return fb_errf(err, FB_EXIT_SETUP, "no command given (usage: fluebox run [OPTIONS] -- CMD [ARGS...])");
    if (p->nallow && p->net == FB_NET_NONE) {
        if (p->net_explicit)
            return fb_errf(err, FB_EXIT_SETUP,
                           "--allow-net cannot be combined with --net none");
        p->net = FB_NET_ALLOW;
    }
    if (policy_check_secrets(p, err) < 0)
        return -1;
    if (p->record_key && !p->record)
        return fb_errf(err, FB_EXIT_SETUP, "--record-key signs a record: it needs --record FILE");
    if (p->net == FB_NET_HOST && !p->net_host_allowed)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--net host: profile \"%s\" does not permit sharing the host network",
                       p->profile_name);
    if (p->net == FB_NET_HOST && p->nallow)
        return fb_errf(err, FB_EXIT_SETUP, "--allow-net cannot be combined with --net host");
    if (p->net == FB_NET_HOST)
        p->namespaces &= ~(unsigned)FB_NS_NET;
    else
        p->namespaces |= FB_NS_NET;
    if (p->proxy_env && p->net != FB_NET_ALLOW)
        return fb_errf(err, FB_EXIT_SETUP, "--proxy-env needs an allowlist (--allow-net)");
    if (p->proxy_env && !p->proxy_port)
        p->proxy_port = 3128;
    if (p->net == FB_NET_ALLOW) {
        uint16_t ports[FB_NET_MAX_PORTS];
        int np = policy_allowed_ports(p, ports, FB_NET_MAX_PORTS);
        if (np < 0)
            return fb_errf(err, FB_EXIT_SETUP, "--allow-net: more than %d different ports",
                           FB_NET_MAX_PORTS);
        for (int i = 0; i < np; i++)
            if (p->proxy_port && ports[i] == p->proxy_port)
                return fb_errf(err, FB_EXIT_SETUP,
                               "--allow-net: port %u is the in-sandbox proxy's port", ports[i]);
    }
    if (p->cow && !p->workspace)
        return fb_errf(err, FB_EXIT_SETUP, "--cow needs --workspace");
    if (p->cow_commit && !p->cow)
        return fb_errf(err, FB_EXIT_SETUP, "--commit needs --cow");
    if (p->changes_out && !p->cow)
        return fb_errf(err, FB_EXIT_SETUP, "--changes needs --cow");

    /* The command, and what it and the caller's interpreters need. */
    return toolchain_resolve(p, ce, err);
}

int policy_allowed_ports(const struct fb_policy *p, uint16_t *ports, size_t cap)
{
    size_t n = 0;
    for (size_t i = 0; i < p->nallow; i++) {
        uint16_t want[2] = {p->allow[i].port, 0};
        if (!want[0]) {
            want[0] = 80;
            want[1] = 443;
        }
        for (int k = 0; k < 2 && want[k]; k++) {
            bool have = false;
            for (size_t j = 0; j < n; j++)
                have |= ports[j] == want[k];
            if (have)
                continue;
            if (n == cap)
                return -1;
            ports[n++] = want[k];
        }
    }
    return (int)n;
}
