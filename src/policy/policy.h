/* policy.h — the policy: the one struct that says what a sandbox may do.
 *
 * It is filled in three layers, in this order: the built-in or file profile
 * (profile.c), then the command-line options (policy_opts.c), then derived values
 * (policy_finish(): interpreter binds, defaults that depend on other fields).
 * Every isolation module reads it; nothing else about a run is global.
 * Ownership: all strings and arrays are heap-allocated and freed by
 * policy_free(). */
#ifndef FB_POLICY_H
#define FB_POLICY_H

#include "fb.h"

/* Namespaces a profile may switch off (user and mount are always on). */
enum {
    FB_NS_PID = 1 << 0,
    FB_NS_NET = 1 << 1,
    FB_NS_IPC = 1 << 2,
    FB_NS_UTS = 1 << 3,
    FB_NS_CGROUP = 1 << 4,
    FB_NS_ALL = 0x1f,
};

/* What the boundary is made of (--isolation, the profile's "isolation"). */
enum fb_isolation {
    FB_ISO_NAMESPACES, /* the default: namespaces, pivot_root, seccomp, cgroups */
    FB_ISO_LANDLOCK,   /* the opt-in fallback where no namespace can be made:
                          Landlock, seccomp, rlimits in the caller's
                          namespaces (landlock.h); never chosen silently */
};

enum fb_mount_kind {
    FB_MNT_RO_BIND, /* --ro-bind SRC[:DST] */
    FB_MNT_BIND,    /* --bind SRC[:DST] (read-write) */
    FB_MNT_TMPFS,   /* --tmpfs DST[:SIZE] */
    FB_MNT_HIDE,    /* profile filesystem.hide: an empty read-only node over DST */
};

struct fb_mount {
    enum fb_mount_kind kind;
    char *src;      /* host path (binds) */
    char *dst;      /* path inside the sandbox, absolute */
    int64_t size;   /* tmpfs: bytes; 0 = the --disk size */
    bool optional;  /* a missing source is skipped instead of an error */
};

enum fb_net_mode {
    FB_NET_NONE,  /* own network namespace, loopback only */
    FB_NET_ALLOW, /* own namespace + supervisor-side DNS and relay for the allowlist */
    FB_NET_HOST,  /* share the host's network namespace */
};

/* One --allow-net pattern: "name", "*.name", optionally ":port". */
struct fb_allow {
    char *name;     /* lower-case, without the "*." */
    bool wildcard;  /* "*.name": any subdomain, not name itself */
    uint16_t port;  /* 0 = 80 and 443 */
};

/* --egress-resolve NAME[:PORT]=IP[:PORT]: the supervisor resolves NAME to IP
 * on the host side (connections to NAME:PORT only, and to IP:PORT, when the
 * ports are given). */
struct fb_resolve {
    char *name;
    char *addr;       /* numeric IPv4 or IPv6, no brackets */
    uint16_t port;    /* 0 = any port */
    uint16_t to_port; /* 0 = the port connected to */
};

/* --secret NAME:HOST[,HOST...] | NAME=@FILE:HOST[,HOST...] (docs/secrets.md):
 * inside, NAME holds the stand-in; the relay swaps it for the real value in
 * requests to the hosts (same pattern syntax as --allow-net). */
struct fb_secret_value;               /* opaque (secrets.c): mlock'ed, not dumped, wiped */
struct fb_secret {
    char *name;                       /* the variable's name inside (and the caller's) */
    char *file;                       /* NAME=@FILE: the value is FILE's; NULL: env NAME */
    struct fb_allow *hosts;
    size_t nhosts;
    char *standin;                    /* set by secrets_load: recognisable, random */
    struct fb_secret_value *value;    /* set by secrets_load; supervisor memory only */
    int64_t expires_ms;               /* 0 = never (CLOCK_MONOTONIC ms) */
};

/* --allow-http 'METHODS HOST[:PORT][/PATH-PREFIX]': a host with rules gets
 * only the requests one of them matches. */
enum {
    FB_HTTP_GET = 1 << 0,
    FB_HTTP_HEAD = 1 << 1,
    FB_HTTP_POST = 1 << 2,
    FB_HTTP_PUT = 1 << 3,
    FB_HTTP_PATCH = 1 << 4,
    FB_HTTP_DELETE = 1 << 5,
    FB_HTTP_OPTIONS = 1 << 6,
    FB_HTTP_ANY = (1 << 7) - 1,       /* "*" (any method, the others too) */
};
struct fb_http_rule {
    unsigned methods;                 /* FB_HTTP_* bits; FB_HTTP_ANY = any */
    struct fb_allow host;             /* name / wildcard / port */
    char *prefix;                     /* "/" when none */
    int64_t expires_ms;               /* 0 = never */
};

enum fb_sc_action {
    FB_SC_ALLOW,
    FB_SC_ERRNO, /* fail with errno_val */
    FB_SC_KILL,  /* kill the process */
    FB_SC_LOG,   /* allow and log through the kernel audit log */
    FB_SC_TRACE, /* SECCOMP_RET_TRACE (no tracer: ENOSYS); not offered by profiles */
};

enum fb_sc_op { FB_SC_EQ, FB_SC_NE, FB_SC_LT, FB_SC_LE, FB_SC_GT, FB_SC_GE, FB_SC_MASKED_EQ };

struct fb_sc_arg {
    unsigned index;    /* 0..5 */
    enum fb_sc_op op;
    uint64_t value;
    uint64_t mask;     /* FB_SC_MASKED_EQ: (arg & mask) == value */
};

/* Per syscall, one unconditional rule or conditional rules, OR'ed, that
 * exclude each other; a call no rule matches gets the default (seccomp.h). A profile's rules for a syscall
 * replace those of the profile it extends (profile.c). Conditions of one
 * rule are ANDed, one per argument. */
struct fb_sc_rule {
    char *name;                 /* syscall name, resolved by libseccomp */
    enum fb_sc_action action;
    int errno_val;
    struct fb_sc_arg args[6];
    unsigned nargs;
    char *comment;              /* the profile's "comment" (why), or NULL */
};

struct fb_seccomp {
    bool enabled;
    enum fb_sc_action default_action; /* allowlist profiles: ERRNO(EPERM); denylist: ALLOW */
    int default_errno;
    struct fb_sc_rule *rules;
    size_t nrules;
    bool rules_borrowed; /* rules is a built-in's read-only table (profile.h),
                            shared by every policy loaded from it: never freed
                            or changed in place; policy_own_rules() copies it
                            first */
    bool log_denied; /* --seccomp-log: denials are reported to the supervisor
                        (user notification) and listed in the run report */
    bool learn;      /* `fluebox learn`: what the profile denies is allowed and
                        recorded instead (user notification, "continue") */
};

/* Limits. For sizes and counts, -1 means unlimited (explicitly relaxed) and
 * 0 means "not set" only transiently while parsing. */
struct fb_limits {
    int64_t mem;        /* bytes, memory.max / memory.limit_in_bytes, swap off */
    double cpus;        /* CPU bandwidth in CPUs; <= 0 unlimited */
    int64_t pids;       /* pids.max */
    int64_t disk;       /* the scratch space, all of it (mount.c): bytes; inodes follow */
    int64_t timeout_ms; /* wall clock; -1 none */
    int64_t nofile;     /* RLIMIT_NOFILE */
    int64_t fsize;      /* RLIMIT_FSIZE */
    bool require;       /* --require-limits: fail when a limit cannot be applied */
};

/* A read-only bind derived for a program (toolchain.c), with the reason. */
struct fb_tool_bind {
    char *src; /* host path, real */
    char *dst; /* inside: the path the program is called by */
    char *why; /* "python3 (pyenv version 3.11.7 (set by ...)): a pyenv version directory" */
};

struct fb_callenv;

struct fb_policy {
    /* Where it came from, for the report and `profile show`. */
    char *profile_name;    /* "strict", "standard", "trusted" or the file name */
    char *profile_extends; /* what it extends, transitively: "strict" or
                              "base.json < strict"; NULL for none */
    char *description;
    char **overrides;      /* CLI options that changed the profile, e.g. "--mem 256M" */
    size_t noverrides;

    /* What runs. argv[0] as given; exec_path is the resolved path inside. */
    char **argv;
    char *exec_path;
    char *cwd;             /* inside; default /workspace */

    /* Filesystem. */
    bool seed_scratch;     /* the supervisor fills the scratch space before anything
                              is built on it (session.fork: spawn.h, struct fb_seed) */
    char *workspace;       /* host dir bound rw at /workspace; NULL = empty tmpfs */
    bool workspace_ro;     /* profile may make the workspace read-only */
    bool cow;              /* overlay: workspace is the read-only lower layer */
    char *cow_upper;       /* caller-provided upper dir; NULL = tmpfs */
    bool cow_commit;       /* --commit: apply changes when the command succeeds */
    char *changes_out;     /* --changes FILE|- */
    struct fb_mount *mounts; /* profile + CLI binds, tmpfs and hides, in order */
    size_t nmounts;
    bool bind_interpreter; /* bind what the command and the caller's interpreters
                              need (toolchain.c); false: nothing, the default PATH */
    struct fb_tool_bind *tool_binds; /* derived: read-only binds for the programs */
    size_t ntool_binds;
    char *tool_path;       /* derived: the inside PATH (NULL: the default) */
    char **tool_env;       /* derived: "K=V" from the caller (VIRTUAL_ENV, TLS trust);
                              --env and --env-pass override them */
    size_t ntool_env;
    bool print_path;       /* --print-path: print the above and run nothing */

    /* Environment: the child gets exactly env_set, plus env_pass copied from ours. */
    char **env_set;        /* "K=V" */
    size_t nenv_set;
    char **env_pass;       /* "K" */
    size_t nenv_pass;

    /* Identity. */
    uid_t uid;             /* inside; default 1000 */
    gid_t gid;
    uid_t host_id;         /* when fluebox runs as root: the first host id of the
                              sandbox's range (inside 0); 0 = a free range from
                              the allocator (idrange.h) */
    char *hostname;        /* default "fluebox" */
    unsigned namespaces;   /* FB_NS_* to create (user and mount always) */
    enum fb_isolation isolation;

    /* Limits. */
    struct fb_limits limits;
    bool disk_set;         /* --disk was given: not derived from the memory limit */

    /* Network. */
    enum fb_net_mode net;
    bool net_explicit;     /* --net was given: --net none with --allow-net is an error */
    bool net_host_allowed; /* the profile permits --net host */
    bool net_host_profile; /* OCI: the profile itself permits it (net_host_allowed is
                              also set for a network namespace a spec joins by path) */
    struct fb_allow *allow;
    size_t nallow;
    struct fb_resolve *resolve;
    size_t nresolve;
    char *net_log;         /* --net-log FILE */
    bool proxy_env;        /* --proxy-env: HTTP(S)_PROXY point at the in-sandbox proxy */
    uint16_t proxy_port;   /* in-sandbox CONNECT proxy port (0 = off) */
    int max_conns;         /* concurrent relayed connections */
    int64_t conn_idle_ms;  /* relay idle timeout */
    /* Secrets and HTTP rules (docs/secrets.md): their hosts are inspected
     * (TLS terminated with a per-run CA, every request read). */
    struct fb_secret *secrets;
    size_t nsecrets;
    struct fb_http_rule *http_rules;
    size_t nhttp_rules;
    char *upstream_ca;     /* --upstream-ca FILE: also trusted for upstream TLS */
    bool tls_ca;           /* make the per-run CA (and the bundle inside) even
                              with nothing inspected yet: a session that may be
                              granted secrets later (egress_grant); its CA then
                              has no name constraints */

    /* Seccomp. */
    struct fb_seccomp seccomp;

    /* Output. */
    char *report;          /* --report FILE|- */
    char *record;          /* --record FILE: the flight record (record.h), created new */
    char *record_key;      /* --record-key FILE: Ed25519 private key (PEM) that signs it */
    bool quiet;            /* suppress warnings */

    /* run -t: the command's stdin/stdout/stderr are a terminal of the
     * sandbox's own devpts of this size, relayed to the caller's. */
    bool tty;
    int tty_rows, tty_cols;
};

/* A policy with built-in defaults (no profile applied). */
void policy_init(struct fb_policy *p);
void policy_free(struct fb_policy *p);

/* Tool binds (struct fb_tool_bind arrays): free n of them; append copies of
 * n to p's; equal when the same sources are bound at the same places, in the
 * same order (the reasons may differ). */
void tool_binds_free(struct fb_tool_bind *b, size_t n);
void tool_binds_append(struct fb_policy *p, const struct fb_tool_bind *b, size_t n);
bool tool_binds_equal(const struct fb_tool_bind *a, size_t na, const struct fb_tool_bind *b,
                      size_t nb);

/* Appenders that take ownership of nothing: they copy. */
void policy_add_mount(struct fb_policy *p, enum fb_mount_kind kind, const char *src,
                      const char *dst, int64_t size);
void policy_add_override(struct fb_policy *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void policy_add_env_set(struct fb_policy *p, const char *kv);
void policy_add_env_pass(struct fb_policy *p, const char *k);
void policy_add_rule(struct fb_policy *p, const struct fb_sc_rule *r);
void policy_clear_rules(struct fb_policy *p);
/* Makes p's rules its own (a copy of a borrowed table) before a change. */
void policy_own_rules(struct fb_policy *p);
/* Parse "name", "*.name", "name:port"; appends to p->allow. */
int policy_add_allow(struct fb_policy *p, const char *pattern, struct fb_err *err);
int policy_add_resolve(struct fb_policy *p, const char *name_eq_ip, struct fb_err *err);

/* --secret SPEC, --allow-http SPEC: parse and append (secrets.c). */
int policy_add_secret(struct fb_policy *p, const char *spec, struct fb_err *err);
int policy_add_http_rule(struct fb_policy *p, const char *spec, struct fb_err *err);
/* Parse one rule into r (the caller frees r->host.name and r->prefix). */
int policy_parse_http_rule(const char *spec, struct fb_http_rule *r, struct fb_err *err);
/* Parse "NAME:HOSTS" / "NAME=@FILE:HOSTS" into s (policy_secret_free). */
int policy_parse_secret(const char *spec, struct fb_secret *s, struct fb_err *err);
void policy_secret_free(struct fb_secret *s);
/* --upstream-ca FILE: a readable PEM file with a certificate. */
int policy_set_upstream_ca(struct fb_policy *p, const char *path, struct fb_err *err);
/* One --allow-net style pattern into a (a->name malloc'ed); opt names the
 * option in the error. */
int policy_parse_allow(const char *pattern, const char *opt, struct fb_allow *a,
                       struct fb_err *err);
/* Does pattern a (a secret's or a rule's host) fall inside the allowlist? */
bool policy_allow_covers(const struct fb_policy *p, const struct fb_allow *a);
/* Does pattern a match name:port (port 0: any)? */
bool policy_pattern_match(const struct fb_allow *a, const char *name, uint16_t port);

/* Read every secret's value (envp: the caller's environment, "K=V", for a
 * secret without @FILE) into locked, undumpable memory, make its stand-in,
 * and set NAME=stand-in in the sandbox's environment. The errors name the
 * variable, never its value. */
int secrets_load(struct fb_policy *p, const char *const *envp, struct fb_err *err);
/* Overwrite the values of the secrets' variables (not from @FILE) in envp
 * with zero bytes: after secrets_load, for `run`'s own environment. */
void secrets_scrub_env(const struct fb_policy *p, char **envp);
/* A value as bytes (NULL before secrets_load). */
const uint8_t *secret_value(const struct fb_secret *s, size_t *len);
const uint8_t *secret_value_bytes(const struct fb_secret_value *v, size_t *len);
/* A value from bytes (egress_grant): copied into locked memory (data
 * NULL: len zero bytes). */
struct fb_secret_value *secret_value_new(const void *data, size_t len);
void secret_value_free(struct fb_secret_value *v);
/* A fresh stand-in for NAME: "fluebox-standin-" and 32 random hex digits. */
char *secret_standin_new(void);
/* Inside: the system bundle with the per-run CA, and the CA alone. */
#define FB_CA_BUNDLE "/etc/ssl/certs/ca-certificates.crt"
#define FB_CA_FILE "/etc/ssl/certs/fluebox-ca.crt"

/* Does the policy inspect this host (a secret's or a rule's)? */
bool policy_inspects(const struct fb_policy *p, const char *name, uint16_t port);
/* Will the relay need the per-run CA? */
static inline bool policy_wants_ca(const struct fb_policy *p)
{
    return p->tls_ca || p->nsecrets || p->nhttp_rules;
}

/* Validate combinations and derive the rest: the command's location, the
 * binds for it and the caller's interpreters, the inside PATH (toolchain.h).
 * ce is the caller's environment (NULL: none, only the system's programs). */
int policy_finish(struct fb_policy *p, const struct fb_callenv *ce, struct fb_err *err);

/* The sandbox user's home inside: /root for uid 0, else /home/fluebox. */
const char *policy_home(const struct fb_policy *p);

/* Does name (lower-case, no trailing dot) match an allow pattern for port?
 * port 0 asks "for any port". Returns the matching entry or NULL. */
const struct fb_allow *policy_allow_match(const struct fb_policy *p, const char *name,
                                          uint16_t port);

/* Distinct allowed ports: two DNS sockets and the proxy leave this many of
 * the 32 descriptors a control message carries (netns.c binds them). */
#define FB_NET_MAX_PORTS 29

/* The distinct ports the allowlist needs (80 and 443 for a pattern without
 * a port), into ports (capacity cap). Returns the count, -1 if over cap. */
int policy_allowed_ports(const struct fb_policy *p, uint16_t *ports, size_t cap);

#endif
