/* secrets.c — the policy side of secrets and HTTP rules (docs/secrets.md):
 * parsing --secret, --allow-http and --upstream-ca, checking them against
 * the rest of the policy, and loading the real values into memory that is
 * locked (no swap), left out of core dumps, wiped on fork and when freed.
 * The values never go into a message: errors name the variable or file. */
#include "policy.h"

#include <ctype.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>

#define VALUE_MAX (64 * 1024)
#define STANDIN_PREFIX "fluebox-standin-"

struct fb_secret_value {
    uint8_t *data; /* a private mapping of maplen bytes */
    size_t len, maplen;
};

#define GROW(arr, n) ((arr) = fb_xrealloc((arr), ((n) + 1) * sizeof *(arr)))

/* ---- values ---- */

struct fb_secret_value *secret_value_new(const void *data, size_t len)
{
    struct fb_secret_value *v = fb_xcalloc(1, sizeof *v);
    long pg = sysconf(_SC_PAGESIZE);
    size_t page = pg > 0 ? (size_t)pg : 4096;
    v->maplen = (len + 1 + page - 1) / page * page;
    void *m = mmap(NULL, v->maplen, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED)
        abort(); /* as fb_xmalloc: out of memory */
    /* Best effort each: no swap, no core dump, nothing in a forked child. */
    (void)mlock(m, v->maplen);
    (void)madvise(m, v->maplen, MADV_DONTDUMP);
#ifdef MADV_WIPEONFORK
    if (madvise(m, v->maplen, MADV_WIPEONFORK) < 0)
#endif
        (void)madvise(m, v->maplen, MADV_DONTFORK);
    v->data = m;
    if (data)
        memcpy(v->data, data, len); /* (NULL: len zero bytes, to be filled) */
    v->len = len;
    return v;
}

void secret_value_free(struct fb_secret_value *v)
{
    if (!v)
        return;
    explicit_bzero(v->data, v->maplen);
    munlock(v->data, v->maplen);
    munmap(v->data, v->maplen);
    free(v);
}

const uint8_t *secret_value(const struct fb_secret *s, size_t *len)
{
    if (!s->value) {
        *len = 0;
        return NULL;
    }
    *len = s->value->len;
    return s->value->data;
}

const uint8_t *secret_value_bytes(const struct fb_secret_value *v, size_t *len)
{
    *len = v ? v->len : 0;
    return v ? v->data : NULL;
}

char *secret_standin_new(void)
{
    uint8_t r[16];
    size_t got = 0;
    while (got < sizeof r) {
        ssize_t n = getrandom(r + got, sizeof r - got, 0);
        if (n < 0 && errno != EINTR)
            abort(); /* the kernel's random source fails: nothing safe to do */
        if (n > 0)
            got += (size_t)n;
    }
    char *s = fb_xmalloc(sizeof STANDIN_PREFIX + 2 * sizeof r);
    memcpy(s, STANDIN_PREFIX, sizeof STANDIN_PREFIX - 1);
    for (size_t i = 0; i < sizeof r; i++)
        snprintf(s + sizeof STANDIN_PREFIX - 1 + 2 * i, 3, "%02x", r[i]);
    return s;
}

void policy_secret_free(struct fb_secret *s)
{
    free(s->name);
    free(s->file);
    for (size_t i = 0; i < s->nhosts; i++)
        free(s->hosts[i].name);
    free(s->hosts);
    free(s->standin);
    secret_value_free(s->value);
    memset(s, 0, sizeof *s);
}

/* ---- parsing ---- */

static bool valid_var(const char *s, size_t n)
{
    if (!n || !(isalpha((unsigned char)s[0]) || s[0] == '_'))
        return false;
    for (size_t i = 0; i < n; i++)
        if (!isalnum((unsigned char)s[i]) && s[i] != '_')
            return false;
    return true;
}

int policy_parse_secret(const char *spec, struct fb_secret *s, struct fb_err *err)
{
    memset(s, 0, sizeof *s);
    size_t nl = strcspn(spec, ":=");
    if (!valid_var(spec, nl))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--secret %s: expected NAME:HOST[,HOST...] or NAME=@FILE:HOST[,HOST...] "
                       "(NAME: letters, digits, _)", spec);
    const char *rest = spec + nl;
    cleanup_free char *file = NULL;
    if (*rest == '=') {
        if (rest[1] != '@')
            return fb_errf(err, FB_EXIT_SETUP,
                           "--secret %.*s=...: the value never goes on the command line; use "
                           "NAME:HOSTS (from the environment) or NAME=@FILE:HOSTS",
                           (int)nl, spec);
        size_t fl = strcspn(rest + 2, ":");
        if (!fl || rest[2 + fl] != ':')
            return fb_errf(err, FB_EXIT_SETUP, "--secret %.*s=@...: expected NAME=@FILE:HOSTS",
                           (int)nl, spec);
        file = fb_xstrndup(rest + 2, fl);
        rest += 2 + fl;
    }
    if (*rest != ':' || !rest[1])
        return fb_errf(err, FB_EXIT_SETUP, "--secret %.*s: no hosts (NAME:HOST[,HOST...])",
                       (int)nl, spec);
    s->name = fb_xstrndup(spec, nl);
    s->file = fb_steal_ptr(file);
    cleanup_free char *hosts = fb_xstrdup(rest + 1);
    char *save = NULL;
    char opt[320];
    snprintf(opt, sizeof opt, "--secret %s:", s->name);
    for (char *h = strtok_r(hosts, ",", &save); h; h = strtok_r(NULL, ",", &save)) {
        struct fb_allow a;
        if (policy_parse_allow(h, opt, &a, err) < 0) {
            policy_secret_free(s);
            return -1;
        }
        GROW(s->hosts, s->nhosts);
        s->hosts[s->nhosts++] = a;
    }
    if (!s->nhosts) {
        fb_errf(err, FB_EXIT_SETUP, "--secret %s: no hosts", spec);
        policy_secret_free(s);
        return -1;
    }
    return 0;
}

int policy_add_secret(struct fb_policy *p, const char *spec, struct fb_err *err)
{
    struct fb_secret s;
    if (policy_parse_secret(spec, &s, err) < 0)
        return -1;
    for (size_t i = 0; i < p->nsecrets; i++)
        if (!strcmp(p->secrets[i].name, s.name)) {
            fb_errf(err, FB_EXIT_SETUP, "--secret %s: %s is already a secret", spec, s.name);
            policy_secret_free(&s);
            return -1;
        }
    GROW(p->secrets, p->nsecrets);
    p->secrets[p->nsecrets++] = s;
    return 0;
}

static const struct {
    const char *name;
    unsigned bit;
} methods[] = {
    {"GET", FB_HTTP_GET},     {"HEAD", FB_HTTP_HEAD},     {"POST", FB_HTTP_POST},
    {"PUT", FB_HTTP_PUT},     {"PATCH", FB_HTTP_PATCH},   {"DELETE", FB_HTTP_DELETE},
    {"OPTIONS", FB_HTTP_OPTIONS},
};

int policy_parse_http_rule(const char *spec, struct fb_http_rule *r, struct fb_err *err)
{
    memset(r, 0, sizeof *r);
    const char *sp = strchr(spec, ' ');
    if (!sp || sp == spec || !sp[1] || strchr(sp + 1, ' '))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--allow-http %s: expected 'METHODS HOST[:PORT][/PATH-PREFIX]' (e.g. "
                       "'GET,HEAD api.example.com/v1/')", spec);
    cleanup_free char *ms = fb_xstrndup(spec, (size_t)(sp - spec));
    if (!strcmp(ms, "*")) {
        r->methods = FB_HTTP_ANY;
    } else {
        char *save = NULL;
        for (char *m = strtok_r(ms, ",", &save); m; m = strtok_r(NULL, ",", &save)) {
            unsigned bit = 0;
            for (size_t i = 0; i < FB_ARRAY_LEN(methods); i++)
                if (!strcmp(m, methods[i].name))
                    bit = methods[i].bit;
            if (!bit)
                return fb_errf(err, FB_EXIT_SETUP,
                               "--allow-http %s: unknown method \"%s\" (GET, HEAD, POST, PUT, "
                               "PATCH, DELETE, OPTIONS, or * for any)", spec, m);
            r->methods |= bit;
        }
        if (!r->methods)
            return fb_errf(err, FB_EXIT_SETUP, "--allow-http %s: no method", spec);
    }
    const char *host = sp + 1;
    size_t hl = strcspn(host, "/");
    const char *prefix = host[hl] ? host + hl : "/";
    if (strpbrk(prefix, "?#%\\") || strstr(prefix, "//") || strstr(prefix, "/./") ||
        strstr(prefix, "/../"))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--allow-http %s: the path prefix must be a plain path (no ?, #, %%, "
                       "\\, //, . or .. segments)", spec);
    for (const char *c = prefix; *c; c++)
        if ((unsigned char)*c <= ' ' || (unsigned char)*c >= 0x7f)
            return fb_errf(err, FB_EXIT_SETUP, "--allow-http %s: bad byte in the path prefix",
                           spec);
    cleanup_free char *h = fb_xstrndup(host, hl);
    if (!*h)
        return fb_errf(err, FB_EXIT_SETUP, "--allow-http %s: no host", spec);
    if (policy_parse_allow(h, "--allow-http", &r->host, err) < 0)
        return -1;
    r->prefix = fb_xstrdup(prefix);
    return 0;
}

int policy_add_http_rule(struct fb_policy *p, const char *spec, struct fb_err *err)
{
    struct fb_http_rule r;
    if (policy_parse_http_rule(spec, &r, err) < 0)
        return -1;
    GROW(p->http_rules, p->nhttp_rules);
    p->http_rules[p->nhttp_rules++] = r;
    return 0;
}

int policy_set_upstream_ca(struct fb_policy *p, const char *path, struct fb_err *err)
{
    char buf[65536];
    cleanup_close int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--upstream-ca %s", path);
    if (!S_ISREG(st.st_mode))
        return fb_errf(err, FB_EXIT_SETUP, "--upstream-ca %s: not a regular file", path);
    ssize_t n = read(fd, buf, sizeof buf - 1);
    if (n < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--upstream-ca %s", path);
    buf[n] = 0;
    if (!strstr(buf, "-----BEGIN CERTIFICATE-----"))
        return fb_errf(err, FB_EXIT_SETUP,
                       "--upstream-ca %s: no PEM certificate (-----BEGIN CERTIFICATE-----)", path);
    char *real = realpath(path, NULL);
    if (!real)
        return fb_errno(err, FB_EXIT_SETUP, "--upstream-ca %s", path);
    free(p->upstream_ca);
    p->upstream_ca = real;
    return 0;
}

/* ---- checks ---- */

bool policy_allow_covers(const struct fb_policy *p, const struct fb_allow *a)
{
    uint16_t ports[2] = {a->port, 0};
    if (!a->port) {
        ports[0] = 80;
        ports[1] = 443;
    }
    for (int k = 0; k < 2 && ports[k]; k++) {
        bool ok = false;
        for (size_t i = 0; i < p->nallow && !ok; i++) {
            const struct fb_allow *w = &p->allow[i];
            if (w->port ? w->port != ports[k] : (ports[k] != 80 && ports[k] != 443))
                continue;
            if (!a->wildcard) {
                ok = policy_pattern_match(w, a->name, 0);
            } else if (w->wildcard) {
                /* *.x is covered by *.x and by *.y where x ends in .y */
                size_t al = strlen(a->name), wl = strlen(w->name);
                ok = !strcmp(a->name, w->name) ||
                     (al > wl + 1 && a->name[al - wl - 1] == '.' &&
                      !strcmp(a->name + al - wl, w->name));
            }
        }
        if (!ok)
            return false;
    }
    return true;
}

static void pattern_str(const struct fb_allow *a, char *buf, size_t cap)
{
    if (a->port)
        snprintf(buf, cap, "%s%s:%u", a->wildcard ? "*." : "", a->name, a->port);
    else
        snprintf(buf, cap, "%s%s", a->wildcard ? "*." : "", a->name);
}

int policy_check_secrets(struct fb_policy *p, struct fb_err *err);
int policy_check_secrets(struct fb_policy *p, struct fb_err *err)
{
    if (!p->nsecrets && !p->nhttp_rules && !p->tls_ca)
        return 0;
    const char *what = p->nsecrets ? "--secret" : p->nhttp_rules ? "--allow-http" : "a CA";
    if (p->isolation == FB_ISO_LANDLOCK)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s needs the relay's inspection, which --isolation landlock does not have",
                       what);
    if (p->net != FB_NET_ALLOW)
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s needs the filtered network (--allow-net for its hosts), not --net %s",
                       what, p->net == FB_NET_HOST ? "host" : "none");
    char pat[300];
    for (size_t i = 0; i < p->nsecrets; i++) {
        const struct fb_secret *s = &p->secrets[i];
        for (size_t k = 0; k < s->nhosts; k++)
            if (!policy_allow_covers(p, &s->hosts[k])) {
                pattern_str(&s->hosts[k], pat, sizeof pat);
                return fb_errf(err, FB_EXIT_SETUP,
                               "--secret %s: host %s is not allowed (add --allow-net %s)",
                               s->name, pat, pat);
            }
        for (size_t k = 0; k < p->nenv_pass; k++)
            if (!strcmp(p->env_pass[k], s->name))
                return fb_errf(err, FB_EXIT_SETUP,
                               "--secret %s and --env-pass %s: the real value would be copied "
                               "inside; drop --env-pass",
                               s->name, s->name);
        size_t nl = strlen(s->name);
        for (size_t k = 0; k < p->nenv_set; k++)
            if (!strncmp(p->env_set[k], s->name, nl) && p->env_set[k][nl] == '=' &&
                !(s->standin && !strcmp(p->env_set[k] + nl + 1, s->standin)))
                return fb_errf(err, FB_EXIT_SETUP,
                               "--secret %s and --env %s=...: the variable holds the stand-in; "
                               "drop --env",
                               s->name, s->name);
    }
    for (size_t i = 0; i < p->nhttp_rules; i++)
        if (!policy_allow_covers(p, &p->http_rules[i].host)) {
            pattern_str(&p->http_rules[i].host, pat, sizeof pat);
            return fb_errf(err, FB_EXIT_SETUP,
                           "--allow-http: host %s is not allowed (add --allow-net %s)", pat, pat);
        }
    /* Inside, the per-run CA is in the system bundle; these point every
     * common client at it (unless --env set one). */
    static const char *const vars[][2] = {
        {"SSL_CERT_FILE", FB_CA_BUNDLE},       {"REQUESTS_CA_BUNDLE", FB_CA_BUNDLE},
        {"CURL_CA_BUNDLE", FB_CA_BUNDLE},      {"PIP_CERT", FB_CA_BUNDLE},
        {"GIT_SSL_CAINFO", FB_CA_BUNDLE},      {"NODE_EXTRA_CA_CERTS", FB_CA_FILE},
    };
    for (size_t i = 0; i < FB_ARRAY_LEN(vars); i++) {
        size_t kl = strlen(vars[i][0]);
        bool set = false;
        for (size_t k = 0; k < p->nenv_set && !set; k++)
            set = !strncmp(p->env_set[k], vars[i][0], kl) && p->env_set[k][kl] == '=';
        if (!set) {
            cleanup_free char *kv = fb_xasprintf("%s=%s", vars[i][0], vars[i][1]);
            policy_add_env_set(p, kv);
        }
    }
    return 0;
}

bool policy_inspects(const struct fb_policy *p, const char *name, uint16_t port)
{
    for (size_t i = 0; i < p->nsecrets; i++)
        for (size_t k = 0; k < p->secrets[i].nhosts; k++)
            if (policy_pattern_match(&p->secrets[i].hosts[k], name, port))
                return true;
    for (size_t i = 0; i < p->nhttp_rules; i++)
        if (policy_pattern_match(&p->http_rules[i].host, name, port))
            return true;
    return false;
}

/* ---- loading ---- */

/* FILE's contents, one trailing line end dropped, into locked memory. */
static int load_file(struct fb_secret *s, struct fb_err *err)
{
    cleanup_close int fd = open(s->file, O_RDONLY | O_CLOEXEC | O_NOCTTY);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--secret %s=@%s", s->name, s->file);
    if (!S_ISREG(st.st_mode) || st.st_size > VALUE_MAX)
        return fb_errf(err, FB_EXIT_SETUP, "--secret %s=@%s: not a regular file of at most %d "
                       "bytes", s->name, s->file, VALUE_MAX);
    size_t len = 0;
    struct fb_secret_value *big = secret_value_new(NULL, VALUE_MAX + 1); /* reads land here */
    for (;;) {
        ssize_t n = read(fd, big->data + len, VALUE_MAX + 1 - len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0) {
            secret_value_free(big);
            return fb_errno(err, FB_EXIT_SETUP, "--secret %s=@%s", s->name, s->file);
        }
        if (n == 0)
            break;
        len += (size_t)n;
        if (len > VALUE_MAX) {
            secret_value_free(big);
            return fb_errf(err, FB_EXIT_SETUP, "--secret %s=@%s: larger than %d bytes", s->name,
                           s->file, VALUE_MAX);
        }
    }
    if (len && big->data[len - 1] == '\n')
        len--;
    if (len && big->data[len - 1] == '\r')
        len--;
    big->len = len;
    s->value = big;
    return 0;
}

int secrets_load(struct fb_policy *p, const char *const *envp, struct fb_err *err)
{
    for (size_t i = 0; i < p->nsecrets; i++) {
        struct fb_secret *s = &p->secrets[i];
        if (s->value)
            continue;
        if (s->file) {
            if (load_file(s, err) < 0)
                return -1;
        } else {
            size_t nl = strlen(s->name);
            const char *val = NULL;
            for (const char *const *e = envp; e && *e; e++)
                if (!strncmp(*e, s->name, nl) && (*e)[nl] == '=')
                    val = *e + nl + 1;
            if (!val || !*val)
                return fb_errf(err, FB_EXIT_SETUP,
                               "--secret %s: the variable %s is %s in the caller's environment",
                               s->name, s->name, val ? "empty" : "not set");
            size_t vl = strlen(val);
            if (vl > VALUE_MAX)
                return fb_errf(err, FB_EXIT_SETUP, "--secret %s: longer than %d bytes", s->name,
                               VALUE_MAX);
            s->value = secret_value_new(val, vl);
        }
        const uint8_t *v = s->value->data;
        if (!s->value->len) {
            secret_value_free(s->value);
            s->value = NULL;
            return fb_errf(err, FB_EXIT_SETUP, "--secret %s: the value is empty", s->name);
        }
        for (size_t k = 0; k < s->value->len; k++)
            if (v[k] < 0x20 || v[k] == 0x7f) {
                secret_value_free(s->value);
                s->value = NULL;
                return fb_errf(err, FB_EXIT_SETUP,
                               "--secret %s: the value has a control character (a line break?); "
                               "it could not go into a header", s->name);
            }
        free(s->standin);
        s->standin = secret_standin_new();
        cleanup_free char *kv = fb_xasprintf("%s=%s", s->name, s->standin);
        policy_add_env_set(p, kv);
    }
    return 0;
}

void secrets_scrub_env(const struct fb_policy *p, char **envp)
{
    for (size_t i = 0; i < p->nsecrets; i++) {
        const struct fb_secret *s = &p->secrets[i];
        if (s->file)
            continue;
        size_t nl = strlen(s->name);
        for (char **e = envp; e && *e; e++)
            if (!strncmp(*e, s->name, nl) && (*e)[nl] == '=')
                explicit_bzero(*e + nl + 1, strlen(*e + nl + 1));
    }
}
