/* toolchain.c — which host trees are bound for the programs a sandbox runs,
 * and the environment that points at them (toolchain.h).
 *
 * For each program (the command, the interpreters of toolchain_names[] as
 * the caller's PATH finds them, a script's interpreter, a venv's base) the
 * smallest tree that runs it is bound read-only at its own path:
 *   - in a system tree (/usr, /bin, ...): nothing, it is there already;
 *   - in a Python venv (bin/ beside a pyvenv.cfg): the venv, then its base
 *     interpreter (pyvenv.cfg "home") by these same rules;
 *   - in a version manager's version directory: that directory (a pyenv,
 *     rbenv-style or nvm "versions/V", an asdf or mise "installs/TOOL/V", a
 *     volta "tools/image/TOOL/V", a uv-managed "uv/python/NAME", a rustup
 *     "toolchains/NAME"), never the manager's root;
 *   - an ELF program whose loader is the system's and that has no RPATH or
 *     RUNPATH: the file alone, at the path it is called by;
 *   - a #! script that is not a link into another tree and not a Python
 *     program installed outside a venv: the file alone, then its
 *     interpreter;
 *   - anything else: fluebox cannot tell what it needs, binds nothing more
 *     and says so in one line naming --ro-bind (a failure for the command,
 *     a warning for the other names).
 * No directory that is "/", a home directory, one that contains a home, or
 * one directly in a home (~/.cargo, ~/.local, ~/bin: where configuration and
 * credentials live) is ever bound, except a venv directly in a home.
 *
 * The inside PATH is the caller's, in the caller's order, keeping the
 * entries that exist inside (system trees, bound trees, the directories of
 * bound files, user binds), with each shim directory replaced by the
 * directories of the programs its shims resolved to, and the default system
 * entries appended. The TLS trust settings of toolchain_trust_vars[] are
 * passed with the files they name bound read-only. */
#include "toolchain.h"

#include "progfile.h"
#include "shims.h"

#include <limits.h>
#include <string.h>
#include <sys/stat.h>

const char *const toolchain_names[] = {"python3", "python", "pip3", "pip", "node", "npm", "npx",
                                       NULL};

const char *const toolchain_trust_vars[] = {"NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE",
                                            "SSL_CERT_DIR",        "REQUESTS_CA_BUNDLE",
                                            "CURL_CA_BUNDLE",      "PIP_CERT",
                                            "GIT_SSL_CAINFO",      NULL};

static const char default_path[] = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin";

/* ---- the resolution state ---- */

struct shim_map {
    char *dir;  /* a shim directory on the caller's PATH */
    char **to;  /* the bin directories its shims resolved to */
    size_t nto;
};

struct tc {
    struct fb_policy *p;
    const struct fb_callenv *ce;
    struct fb_err *notes;   /* where warnings go (its notes), the caller's err */
    char **homes;
    size_t nhomes;
    bool homes_read;
    int untrusted;  /* > 0: following a reference found in a file the sandbox
                       can write or could have written (the workspace, a
                       bind): no host script is bound on its word */
    struct shim_map *maps;
    size_t nmaps;
    int depth;
};

static void add_home(struct tc *t, const char *v)
{
    if (!v || v[0] != '/')
        return;
    for (size_t i = 0; i < t->nhomes; i++)
        if (!strcmp(t->homes[i], v))
            return;
    t->homes = fb_xrealloc(t->homes, (t->nhomes + 1) * sizeof *t->homes);
    t->homes[t->nhomes++] = fb_xstrdup(v);
}

/* Every home directory: the caller's (HOME, made real; ours from passwd
 * when HOME is unset) and every one /etc/passwd names (as written there).
 * Read on first need: most runs bind nothing. */
static void collect_homes(struct tc *t)
{
    if (t->homes_read)
        return;
    t->homes_read = true;
    cleanup_free char *h = callenv_home(t->ce);
    add_home(t, h);
    char buf[65536];
    if (fb_read_file("/etc/passwd", buf, sizeof buf) <= 0)
        return;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f = line;
        for (int i = 0; i < 5 && f; i++) {
            f = strchr(f, ':');
            if (f)
                f++;
        }
        if (!f)
            continue;
        f[strcspn(f, ":")] = 0;
        if (strcmp(f, "/"))
            add_home(t, f);
    }
}

static void tc_free(struct tc *t)
{
    for (size_t i = 0; i < t->nhomes; i++)
        free(t->homes[i]);
    free(t->homes);
    for (size_t i = 0; i < t->nmaps; i++) {
        free(t->maps[i].dir);
        for (size_t k = 0; k < t->maps[i].nto; k++)
            free(t->maps[i].to[k]);
        free(t->maps[i].to);
    }
    free(t->maps);
}

/* Why a directory must not be bound whole, or NULL when it may. */
static char *refuse_dir(struct tc *t, const char *dir, bool is_venv)
{
    collect_homes(t);
    if (!strcmp(dir, "/"))
        return fb_xstrdup("it is the root directory");
    for (size_t i = 0; i < t->nhomes; i++) {
        const char *h = t->homes[i];
        if (!strcmp(dir, h))
            return fb_xasprintf("%s is a home directory", dir);
        if (tc_under(h, dir))
            return fb_xasprintf("%s contains the home directory %s", dir, h);
        cleanup_free char *parent = tc_dirname(dir);
        if (!is_venv && !strcmp(parent, h))
            return fb_xasprintf("%s is directly in the home directory %s, where configuration "
                                "and credentials live",
                                dir, h);
    }
    return NULL;
}

static void map_shim_dir(struct tc *t, const char *dir, const char *to)
{
    struct shim_map *m = NULL;
    for (size_t i = 0; i < t->nmaps; i++)
        if (!strcmp(t->maps[i].dir, dir))
            m = &t->maps[i];
    if (!m) {
        t->maps = fb_xrealloc(t->maps, (t->nmaps + 1) * sizeof *t->maps);
        m = &t->maps[t->nmaps++];
        memset(m, 0, sizeof *m);
        m->dir = fb_xstrdup(dir);
    }
    for (size_t i = 0; i < m->nto; i++)
        if (!strcmp(m->to[i], to))
            return;
    m->to = fb_xrealloc(m->to, (m->nto + 1) * sizeof *m->to);
    m->to[m->nto++] = fb_xstrdup(to);
}

/* ---- binds ---- */

/* A user bind (--bind, --ro-bind, profile) or tmpfs at or above path. */
static const struct fb_mount *user_mount_at(const struct fb_policy *p, const char *path)
{
    for (size_t i = p->nmounts; i-- > 0;)
        if (p->mounts[i].kind != FB_MNT_HIDE && tc_under(path, p->mounts[i].dst))
            return &p->mounts[i];
    return NULL;
}

static bool tool_bind_covers(const struct fb_policy *p, const char *path)
{
    for (size_t i = 0; i < p->ntool_binds; i++)
        if (tc_under(path, p->tool_binds[i].dst))
            return true;
    return false;
}

static void add_bind(struct tc *t, const char *src, const char *dst, const char *why)
{
    struct fb_policy *p = t->p;
    if (user_mount_at(p, dst))
        return; /* the user's own bind is mounted there (on top, last) */
    size_t sl = strlen(src), dl = strlen(dst);
    for (size_t i = 0; i < p->ntool_binds; i++) {
        struct fb_tool_bind *b = &p->tool_binds[i];
        /* Already visible through a bind of a tree that contains it. */
        if (tc_under(dst, b->dst) && tc_under(src, b->src) &&
            !strcmp(dst + strlen(b->dst), src + strlen(b->src)))
            return;
    }
    /* A tree that contains earlier binds replaces them. */
    size_t o = 0;
    for (size_t i = 0; i < p->ntool_binds; i++) {
        struct fb_tool_bind *b = &p->tool_binds[i];
        if (tc_under(b->dst, dst) && tc_under(b->src, src) && !strcmp(b->dst + dl, b->src + sl)) {
            free(b->src);
            free(b->dst);
            free(b->why);
            continue;
        }
        p->tool_binds[o++] = *b;
    }
    p->ntool_binds = o;
    p->tool_binds = fb_xrealloc(p->tool_binds, (p->ntool_binds + 1) * sizeof *p->tool_binds);
    p->tool_binds[p->ntool_binds++] =
        (struct fb_tool_bind){fb_xstrdup(src), fb_xstrdup(dst), fb_xstrdup(why)};
}

/* ---- where an inside path comes from ---- */

/* The host path behind an absolute path inside, or NULL when it is only the
 * sandbox's (its /tmp, an empty workspace, a --tmpfs). *visible: it is there
 * inside already (the workspace, a user bind), nothing needs binding. */
static char *host_of(const struct tc *t, const char *inside, bool *visible)
{
    const struct fb_policy *p = t->p;
    *visible = false;
    const struct fb_mount *m = user_mount_at(p, inside);
    if (m) {
        if (m->kind == FB_MNT_TMPFS)
            return NULL;
        *visible = true;
        return fb_xasprintf("%s%s", m->src, inside + strlen(m->dst));
    }
    if (tc_under(inside, "/workspace")) {
        if (!p->workspace)
            return NULL;
        *visible = true;
        return fb_xasprintf("%s%s", p->workspace, inside + strlen("/workspace"));
    }
    /* fluebox's own: /etc is generated or bound by mount.c (its
     * alternatives are a system tree, handled before). */
    static const char *const sandbox_own[] = {"/dev", "/proc", "/sys", "/etc"};
    for (size_t i = 0; i < FB_ARRAY_LEN(sandbox_own); i++)
        if (tc_under(inside, sandbox_own[i]))
            return NULL;
    return fb_xstrdup(inside);
}

static int need_program(struct tc *t, const char *prog, const char *label, char **exec_out,
                        struct fb_err *err);

static int cannot_tell(struct fb_err *err, const char *label, const char *prog, const char *why)
{
    if (!strcmp(label, prog))
        return fb_errf(err, FB_EXIT_SETUP,
                       "%s: fluebox cannot tell which files it needs (%s), so it binds none of "
                       "them: add them with --ro-bind DIR",
                       prog, why);
    return fb_errf(err, FB_EXIT_SETUP,
                   "%s is %s: fluebox cannot tell which files it needs (%s), so it binds none of "
                   "them: add them with --ro-bind DIR",
                   label, prog, why);
}

/* The caller's PATH, looked up the way a shell would, with shims resolved.
 * Returns the program (malloc) or NULL: not found, or (with err set) a shim
 * fluebox cannot resolve. *via: what resolved it ("" when no shim). */
static char *lookup(struct tc *t, const char *name, char **via, struct fb_err *err)
{
    *via = NULL;
    const char *path = t->ce && t->ce->path && *t->ce->path ? t->ce->path
                                                             : "/usr/local/bin:/usr/bin:/bin";
    cleanup_free char *copy = fb_xstrdup(path);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (*d != '/')
            continue; /* a relative entry means nothing inside */
        size_t l = strlen(d);
        while (l > 1 && d[l - 1] == '/')
            d[--l] = 0;
        cleanup_free char *cand = fb_xasprintf("%s/%s", d, name);
        if (!tc_is_exec_file(cand))
            continue;
        /* A shim in a system tree runs inside as it does outside: its
         * manager's tree is there too. */
        if (tc_in_system_tree(cand))
            return fb_steal_ptr(cand);
        struct shim_res r;
        switch (shim_resolve(cand, name, t->ce, &r)) {
        case SHIM_NONE:
            return fb_steal_ptr(cand);
        case SHIM_SYSTEM:
            continue; /* the manager defers to the next entries */
        case SHIM_RESOLVED: {
            cleanup_free char *bin = tc_dirname(r.path);
            map_shim_dir(t, d, bin);
            *via = fb_steal_ptr(r.why);
            char *found = fb_steal_ptr(r.path);
            shim_res_free(&r);
            return found;
        }
        case SHIM_UNKNOWN:
            fb_errf(err, FB_EXIT_SETUP,
                    "%s: %s; fluebox binds nothing for it: add the program's installation "
                    "with --ro-bind DIR",
                    cand, r.why);
            shim_res_free(&r);
            return NULL;
        }
    }
    return NULL;
}

/* A script's interpreter: "#!/abs/interp" or "#!/usr/bin/env NAME". */
static int need_interp(struct tc *t, const char *host, const char *label, struct fb_err *err)
{
    cleanup_free char *interp = NULL, *arg = NULL;
    if (!pf_read_shebang(host, &interp, &arg) || interp[0] != '/')
        return 0;
    cleanup_free char *lbl = fb_xasprintf("the interpreter of %s", label);
    if (!strcmp(tc_base_name(interp), "env") && tc_in_system_tree(interp)) {
        if (!arg || arg[0] == '-' || strchr(arg, '/') || strchr(arg, '='))
            return 0;
        cleanup_free char *via = NULL;
        err->msg[0] = 0;
        cleanup_free char *found = lookup(t, arg, &via, err);
        if (!found)
            return err->msg[0] ? -1 : 0;
        return need_program(t, found, lbl, NULL, err);
    }
    return need_program(t, interp, lbl, NULL, err);
}

/* A venv (host path; inside at `inside`, already there when visible): the
 * venv, then its base interpreter. */
static int need_venv(struct tc *t, const char *host, const char *inside, bool visible,
                     const char *label, struct fb_err *err)
{
    if (!visible) {
        char real[PATH_MAX];
        if (!realpath(host, real))
            return 0;
        cleanup_free char *no = refuse_dir(t, real, true);
        if (no)
            return cannot_tell(err, label, inside, no);
        cleanup_free char *why = fb_xasprintf("%s: a Python venv", label);
        add_bind(t, real, inside, why);
    }
    /* The base: pyvenv.cfg "home" is the directory of the interpreter the
     * venv was made from, as that interpreter saw it (an inside path for a
     * venv made in the sandbox). */
    cleanup_free char *cfgp = fb_xasprintf("%s/pyvenv.cfg", host);
    char cfg[8192];
    if (fb_read_file(cfgp, cfg, sizeof cfg) < 0)
        return 0;
    char home[PATH_MAX] = "";
    char *save = NULL;
    for (char *line = strtok_r(cfg, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        char *k = line, *v = eq + 1;
        *eq = 0;
        k[strcspn(k, " \t")] = 0;
        v += strspn(v, " \t");
        v[strcspn(v, "\r")] = 0;
        if (!strcmp(k, "home"))
            snprintf(home, sizeof home, "%s", v);
    }
    cleanup_free char *lbl = fb_xasprintf("the base interpreter of %s", inside);
    /* The venv's own python link names the base exactly; else home/python3. */
    char link[PATH_MAX];
    cleanup_free char *py = fb_xasprintf("%s/bin/python", host);
    ssize_t n = readlink(py, link, sizeof link - 1);
    if (n > 0 && link[0] == '/') {
        link[n] = 0;
        return need_program(t, link, lbl, NULL, err);
    }
    if (home[0] == '/') {
        static const char *const names[] = {"python3", "python"};
        for (size_t i = 0; i < FB_ARRAY_LEN(names); i++) {
            cleanup_free char *cand = fb_xasprintf("%s/%s", home, names[i]);
            bool vis;
            cleanup_free char *h = host_of(t, cand, &vis);
            if (h && tc_exists(h))
                return need_program(t, cand, lbl, NULL, err);
        }
    }
    return 0;
}

/* Can the path be opened inside (where the program will be started)? */
static bool exists_inside(const struct tc *t, const char *path)
{
    bool vis;
    cleanup_free char *h = host_of(t, path, &vis);
    return vis || tc_in_system_tree(path) || tool_bind_covers(t->p, path);
}

static int need_program_at(struct tc *t, const char *prog, const char *label, char **exec_out,
                           struct fb_err *err)
{
    struct stat lst;
    if (tc_in_system_tree(prog) && lstat(prog, &lst) == 0 && S_ISREG(lst.st_mode)) {
        /* The system's: only a script's interpreter may be elsewhere. */
        if (exec_out)
            *exec_out = fb_xstrdup(prog);
        return need_interp(t, prog, label, err);
    }
    bool visible;
    cleanup_free char *host = host_of(t, prog, &visible);
    if (!host)
        return 0; /* only the sandbox's own: nothing of the host to bind */
    char real[PATH_MAX];
    struct stat st;
    if (!realpath(host, real) || stat(real, &st) < 0 || !S_ISREG(st.st_mode) ||
        access(real, X_OK) < 0)
        return 0; /* not there, or no program: inside it fails the same (127, 126) */
    int rc = 0;
    if (!visible && tool_bind_covers(t->p, prog)) {
        /* In a tree bound for an earlier program (python after python3). */
        if (exec_out)
            *exec_out = fb_xstrdup(prog);
        return 0;
    }
    cleanup_free char *venv = pf_venv_of(host);
    const char *kind = NULL;
    cleanup_free char *vdir = NULL;
    char why[512] = "";
    if (venv) {
        cleanup_free char *inside = tc_dirname(prog);
        char *vin = tc_dirname(inside);
        t->untrusted += visible;
        rc = need_venv(t, venv, vin, visible, label, err);
        free(vin);
        if (rc == 0)
            rc = need_interp(t, host, label, err);
        t->untrusted -= visible;
    } else if ((venv = pf_venv_of(real))) {
        /* A link into a venv's bin/ (pipx, uv tool): the venv, where it is. */
        rc = need_venv(t, venv, venv, false, label, err);
        if (rc == 0)
            rc = need_interp(t, real, label, err);
    } else if (tc_in_system_tree(real) || visible) {
        /* There inside already (the system, the workspace, a user bind):
         * only a script's interpreter may need more. */
        t->untrusted += visible;
        rc = need_interp(t, real, label, err);
        t->untrusted -= visible;
    } else if ((vdir = pf_version_dir(real, &kind))) {
        cleanup_free char *no = refuse_dir(t, vdir, false);
        if (no)
            return cannot_tell(err, label, prog, no);
        cleanup_free char *w = fb_xasprintf("%s: %s", label, kind);
        if (!visible)
            add_bind(t, vdir, vdir, w);
        rc = need_interp(t, real, label, err);
    } else {
        switch (pf_elf_check(real, why, sizeof why)) {
        case PF_ELF_NEEDS:
            return cannot_tell(err, label, prog, why);
        case PF_ELF_ALONE: {
            cleanup_free char *w = fb_xasprintf("%s: a single program (system libraries only)", label);
            if (!visible)
                add_bind(t, real, prog, w);
            break;
        }
        case PF_NOT_ELF: {
            cleanup_free char *interp = NULL, *arg = NULL;
            if (!pf_read_shebang(real, &interp, &arg))
                return 0; /* no program: nothing bound, exec fails inside (126 or 127) */
            cleanup_free char *lib = pf_python_prefix_lib(real, interp, arg);
            cleanup_free char *rdir = tc_dirname(real);
            cleanup_free char *hdir = tc_dirname(host);
            char rhdir[PATH_MAX];
            if (lib) {
                snprintf(why, sizeof why, "a Python program installed outside a venv; its modules "
                                          "are under %s", lib);
                return cannot_tell(err, label, prog, why);
            }
            if (t->untrusted)
                return cannot_tell(err, label, prog,
                                   "a host script named by a file in the workspace or a bind; "
                                   "fluebox binds none on such a file's word");
            if (!realpath(hdir, rhdir) || strcmp(rhdir, rdir)) {
                snprintf(why, sizeof why, "a link into %s, which is no layout fluebox knows", rdir);
                return cannot_tell(err, label, prog, why);
            }
            cleanup_free char *w = fb_xasprintf("%s: a single script", label);
            if (!visible)
                add_bind(t, real, prog, w);
            rc = need_interp(t, real, label, err);
            break;
        }
        }
    }
    if (rc == 0 && exec_out)
        *exec_out = fb_xstrdup(exists_inside(t, prog) ? prog : real);
    return rc;
}

static int need_program(struct tc *t, const char *prog, const char *label, char **exec_out,
                        struct fb_err *err)
{
    if (exec_out)
        *exec_out = NULL;
    if (t->depth >= 8)
        return 0; /* a loop of interpreters: the sandbox will say so */
    t->depth++;
    int rc = need_program_at(t, prog, label, exec_out, err);
    t->depth--;
    return rc;
}

/* ---- the inside PATH ---- */

static bool dir_inside(const struct tc *t, const char *d)
{
    if (tc_in_system_tree(d) || tool_bind_covers(t->p, d))
        return true;
    const struct fb_mount *m = user_mount_at(t->p, d);
    if (m && m->kind != FB_MNT_TMPFS)
        return true;
    /* The directory of a file bound alone. */
    for (size_t i = 0; i < t->p->ntool_binds; i++) {
        cleanup_free char *dir = tc_dirname(t->p->tool_binds[i].dst);
        if (!strcmp(dir, d))
            return true;
    }
    return false;
}

static void path_add(char **out, const char *d)
{
    size_t dl = strlen(d);
    for (const char *s = *out; *s;) {
        size_t l = strcspn(s, ":");
        if (l == dl && !strncmp(s, d, dl))
            return;
        s += l;
        if (*s == ':')
            s++;
    }
    char *n = fb_xasprintf("%s%s%s", *out, **out ? ":" : "", d);
    free(*out);
    *out = n;
}

static char *inside_path(const struct tc *t)
{
    char *out = fb_xstrdup("");
    const char *path = t->ce && t->ce->path ? t->ce->path : "";
    cleanup_free char *copy = fb_xstrdup(path);
    char *save = NULL;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        if (*d != '/')
            continue;
        size_t l = strlen(d);
        while (l > 1 && d[l - 1] == '/')
            d[--l] = 0;
        for (size_t i = 0; i < t->nmaps; i++) {
            if (strcmp(t->maps[i].dir, d))
                continue;
            for (size_t k = 0; k < t->maps[i].nto; k++)
                if (dir_inside(t, t->maps[i].to[k]))
                    path_add(&out, t->maps[i].to[k]);
        }
        if (dir_inside(t, d))
            path_add(&out, d);
    }
    cleanup_free char *dflt = fb_xstrdup(default_path);
    for (char *d = strtok_r(dflt, ":", &save); d; d = strtok_r(NULL, ":", &save))
        path_add(&out, d);
    return out;
}

/* ---- TLS trust settings ---- */

/* A file a trust setting may name: a PEM certificate bundle, with no
 * private key in it. */
static bool is_cert_bundle(const char *path)
{
    static char buf[1 << 20];
    ssize_t n = fb_read_file(path, buf, sizeof buf);
    return n > 0 && strstr(buf, "-----BEGIN ") && strstr(buf, "CERTIFICATE-----") &&
           !strstr(buf, "PRIVATE KEY");
}

static void trust_settings(struct tc *t)
{
    struct fb_policy *p = t->p;
    for (size_t i = 0; toolchain_trust_vars[i]; i++) {
        const char *var = toolchain_trust_vars[i];
        const char *v = callenv_get(t->ce, var);
        if (!v || !*v)
            continue;
        bool is_dirs = !strcmp(var, "SSL_CERT_DIR"); /* a list, as OpenSSL reads it */
        cleanup_free char *copy = fb_xstrdup(v);
        cleanup_free char *value = fb_xstrdup("");
        bool refused = false;
        char *save = NULL;
        for (char *e = is_dirs ? strtok_r(copy, ":", &save) : copy; e && !refused;
             e = is_dirs ? strtok_r(NULL, ":", &save) : NULL) {
            if (!*e)
                continue;
            cleanup_free char *abs = e[0] == '/' ? fb_xstrdup(e)
                                     : t->ce->cwd ? fb_xasprintf("%s/%s", t->ce->cwd, e)
                                                  : NULL;
            if (!abs)
                continue;
            char *nv = fb_xasprintf("%s%s%s", value, *value ? ":" : "", abs);
            free(value);
            value = nv;
            /* The system's (/etc/ssl is bound, its links lead into /usr). */
            if (tc_in_system_tree(abs) || tc_under(abs, "/etc/ssl"))
                continue;
            char real[PATH_MAX];
            struct stat st;
            if (!realpath(abs, real) || stat(real, &st) < 0)
                continue; /* passed as it is: the tool says what is wrong, as outside */
            cleanup_free char *no = NULL;
            if (S_ISDIR(st.st_mode))
                no = refuse_dir(t, real, false);
            else if (!S_ISREG(st.st_mode) || !is_cert_bundle(real))
                no = fb_xasprintf("%s is not a PEM certificate bundle", real);
            if (no) {
                if (!p->quiet)
                    fb_note(t->notes, "%s is not passed into the sandbox: %s (bind what it needs with "
                            "--ro-bind and set it with --env)",
                            var, no);
                refused = true;
                break;
            }
            cleanup_free char *why = fb_xasprintf("%s: a TLS trust setting", var);
            add_bind(t, real, abs, why);
        }
        if (refused || !*value)
            continue;
        char *kv = fb_xasprintf("%s=%s", var, value);
        p->tool_env = fb_xrealloc(p->tool_env, (p->ntool_env + 1) * sizeof *p->tool_env);
        p->tool_env[p->ntool_env++] = kv;
    }
}

json_t *toolchain_json(const struct fb_policy *p)
{
    json_t *t = json_object();
    json_object_set_new(t, "path", p->tool_path ? json_string(p->tool_path) : json_null());
    json_object_set_new(t, "exec", p->exec_path ? json_string(p->exec_path) : json_null());
    json_t *binds = json_array();
    for (size_t i = 0; i < p->ntool_binds; i++) {
        json_t *b = json_object();
        json_object_set_new(b, "src", json_string(p->tool_binds[i].src));
        json_object_set_new(b, "dst", json_string(p->tool_binds[i].dst));
        json_object_set_new(b, "why", json_string(p->tool_binds[i].why));
        json_array_append_new(binds, b);
    }
    json_object_set_new(t, "binds", binds);
    json_t *env = json_array();
    for (size_t i = 0; i < p->ntool_env; i++)
        json_array_append_new(env, json_stringn(p->tool_env[i], strcspn(p->tool_env[i], "=")));
    json_object_set_new(t, "env", env);
    return t;
}

/* ---- entry points ---- */

static void warn_name(const struct tc *t, const char *name, const struct fb_err *e)
{
    if (!t->p->quiet)
        fb_note(t->notes, "%s inside is not the caller's: %s", name, e->msg);
}

int toolchain_resolve(struct fb_policy *p, const struct fb_callenv *ce, struct fb_err *err)
{
    static const struct fb_callenv none = {0};
    struct tc t = {.p = p, .ce = ce ? ce : &none, .notes = err};
    int rc = -1;
    free(p->exec_path);
    p->exec_path = NULL;
    const char *cmd = p->argv && p->argv[0] ? p->argv[0] : NULL;

    /* The command: a name is looked up on the caller's PATH, so that the
     * same program runs inside as outside; a path is a path inside. */
    if (cmd && !strchr(cmd, '/')) {
        cleanup_free char *via = NULL;
        err->msg[0] = 0;
        cleanup_free char *found = lookup(&t, cmd, &via, err);
        if (!found && err->msg[0])
            goto out;
        if (found && !p->bind_interpreter) {
            p->exec_path = fb_steal_ptr(found);
        } else if (found) {
            cleanup_free char *label = via ? fb_xasprintf("%s (%s)", cmd, via) : fb_xstrdup(cmd);
            char *ex = NULL;
            if (need_program(&t, found, label, &ex, err) < 0) {
                /* Name the program as found, and what resolved it. */
                goto out;
            }
            p->exec_path = ex ? ex : fb_steal_ptr(found);
        }
    } else if (cmd && p->bind_interpreter) {
        cleanup_free char *inside = cmd[0] == '/' ? fb_xstrdup(cmd)
                                                  : fb_xasprintf("%s/%s", p->cwd, cmd);
        char *ex = NULL;
        if (need_program(&t, inside, cmd, &ex, err) < 0)
            goto out;
        if (ex && cmd[0] == '/' && strcmp(ex, cmd))
            p->exec_path = ex;
        else
            free(ex);
    }
    if (!p->bind_interpreter) {
        rc = 0;
        goto out;
    }

    /* The interpreters agents call by name follow the caller's PATH. */
    for (size_t i = 0; toolchain_names[i]; i++) {
        struct fb_err e = {0};
        cleanup_free char *via = NULL;
        cleanup_free char *found = lookup(&t, toolchain_names[i], &via, &e);
        if (!found) {
            if (e.msg[0])
                warn_name(&t, toolchain_names[i], &e);
            continue;
        }
        if (tc_in_system_tree(found)) {
            /* There inside already, unless it links out of the system
             * (/usr/local/bin/node -> an nvm node). */
            struct stat lst;
            char real[PATH_MAX];
            if (lstat(found, &lst) == 0 && !S_ISLNK(lst.st_mode))
                continue;
            if (realpath(found, real) && tc_in_system_tree(real))
                continue;
        }
        cleanup_free char *label = via ? fb_xasprintf("%s (%s)", toolchain_names[i], via)
                                       : fb_xstrdup(toolchain_names[i]);
        if (need_program(&t, found, label, NULL, &e) < 0)
            warn_name(&t, toolchain_names[i], &e);
    }

    /* An activated venv: bound, and VIRTUAL_ENV passed, whatever PATH says. */
    const char *ve = callenv_get(t.ce, "VIRTUAL_ENV");
    if (ve && ve[0] == '/') {
        cleanup_free char *cfg = fb_xasprintf("%s/pyvenv.cfg", ve);
        struct fb_err e = {0};
        if (!tc_exists(cfg)) {
            /* not a venv: not passed */
        } else if (need_venv(&t, ve, ve, false, "VIRTUAL_ENV", &e) < 0) {
            warn_name(&t, "VIRTUAL_ENV", &e);
        } else {
            p->tool_env = fb_xrealloc(p->tool_env, (p->ntool_env + 1) * sizeof *p->tool_env);
            p->tool_env[p->ntool_env++] = fb_xasprintf("VIRTUAL_ENV=%s", ve);
        }
    }
    trust_settings(&t);
    free(p->tool_path);
    p->tool_path = inside_path(&t);
    rc = 0;
out:
    tc_free(&t);
    return rc;
}

void toolchain_print(const struct fb_policy *p, FILE *f)
{
    fprintf(f, "PATH=%s\n", p->tool_path ? p->tool_path : default_path);
    if (p->argv && p->argv[0])
        fprintf(f, "command %s -> %s\n", p->argv[0], p->exec_path ? p->exec_path : p->argv[0]);
    for (size_t i = 0; i < p->ntool_binds; i++) {
        const struct fb_tool_bind *b = &p->tool_binds[i];
        if (strcmp(b->src, b->dst))
            fprintf(f, "ro-bind %s:%s\t%s\n", b->src, b->dst, b->why);
        else
            fprintf(f, "ro-bind %s\t%s\n", b->src, b->why);
    }
    for (size_t i = 0; i < p->ntool_env; i++)
        fprintf(f, "env %s\n", p->tool_env[i]);
}
