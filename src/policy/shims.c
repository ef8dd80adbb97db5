/* shims.c — version managers' shims (see shims.h): pyenv, asdf, rustup's
 * proxies and volta. Each reads what its manager reads, in the manager's
 * order; when the answer is not certain the shim is SHIM_UNKNOWN, never a
 * guess. */
#include "shims.h"

#include "progfile.h"

#include <ctype.h>
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

/* ---- helpers ---- */

void shim_res_free(struct shim_res *r)
{
    free(r->path);
    free(r->why);
    r->path = r->why = NULL;
}

/* The first file named one of names[] in dir or one of its parents;
 * returns its path (malloc) or NULL. */
static char *find_upwards(const char *dir, const char *const *names)
{
    if (!dir || dir[0] != '/')
        return NULL;
    char cur[PATH_MAX];
    snprintf(cur, sizeof cur, "%s", dir);
    for (;;) {
        for (size_t i = 0; names[i]; i++) {
            char *f = fb_xasprintf("%s/%s", strcmp(cur, "/") ? cur : "", names[i]);
            struct stat st;
            if (stat(f, &st) == 0 && S_ISREG(st.st_mode))
                return f;
            free(f);
        }
        char *s = strrchr(cur, '/');
        if (!s || s == cur) {
            if (!strcmp(cur, "/"))
                return NULL;
            strcpy(cur, "/");
            continue;
        }
        *s = 0;
    }
}

static void trim(char *s)
{
    size_t n = strlen(s);
    while (n && isspace((unsigned char)s[n - 1]))
        s[--n] = 0;
    size_t k = strspn(s, " \t");
    memmove(s, s + k, strlen(s + k) + 1);
}

/* ---- pyenv ---- */

/* pyenv resolves a version name that is not installed as such by prefix
 * ("3.11" -> the newest installed 3.11.x). */
static char *pyenv_version_dir(const char *root, const char *v)
{
    char *d = fb_xasprintf("%s/versions/%s", root, v);
    if (tc_is_dir(d))
        return d;
    free(d);
    cleanup_free char *vd = fb_xasprintf("%s/versions", root);
    DIR *dir = opendir(vd);
    if (!dir)
        return NULL;
    size_t vl = strlen(v);
    char best[256] = "";
    struct dirent *e;
    while ((e = readdir(dir))) {
        if (!strncmp(e->d_name, v, vl) && e->d_name[vl] == '.' && strlen(e->d_name) < sizeof best &&
            (!best[0] || strverscmp(e->d_name, best) > 0))
            snprintf(best, sizeof best, "%s", e->d_name);
    }
    closedir(dir);
    return best[0] ? fb_xasprintf("%s/%s", vd, best) : NULL;
}

static enum shim_kind pyenv_shim(const char *root, const char *name, const struct fb_callenv *ce,
                                 struct shim_res *out)
{
    char buf[1024] = "";
    cleanup_free char *src = NULL;
    const char *env = callenv_get(ce, "PYENV_VERSION");
    if (env && *env) {
        snprintf(buf, sizeof buf, "%s", env);
        src = fb_xstrdup("PYENV_VERSION");
    } else {
        static const char *const files[] = {".python-version", NULL};
        src = find_upwards(ce->cwd, files);
        if (!src || fb_read_file(src, buf, sizeof buf) < 0) {
            free(src);
            src = fb_xasprintf("%s/version", root);
            if (fb_read_file(src, buf, sizeof buf) < 0)
                buf[0] = 0;
        }
    }
    /* Version names separated by ':' (the variable) or white space (files);
     * "#" starts a comment line. */
    bool system = false;
    cleanup_free char *names = fb_xstrdup("");
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        trim(line);
        if (line[0] == '#')
            continue;
        char *s2 = NULL;
        for (char *v = strtok_r(line, ": \t\r", &s2); v; v = strtok_r(NULL, ": \t\r", &s2)) {
            char *nn = fb_xasprintf("%s%s%s", names, *names ? " " : "", v);
            free(names);
            names = nn;
            if (!strcmp(v, "system")) {
                system = true;
                continue;
            }
            cleanup_free char *vd = pyenv_version_dir(root, v);
            if (!vd)
                continue;
            char *prog = fb_xasprintf("%s/bin/%s", vd, name);
            if (tc_is_exec_file(prog)) {
                out->path = prog;
                out->why = fb_xasprintf("pyenv version %s (set by %s)", tc_base_name(vd), src);
                return SHIM_RESOLVED;
            }
            free(prog);
        }
    }
    if (!*names || system)
        return SHIM_SYSTEM; /* no version set means "system" to pyenv */
    out->why = fb_xasprintf("pyenv: %s is in none of the versions set by %s (%s)", name, src, names);
    return SHIM_UNKNOWN;
}

static bool is_pyenv_root(const char *root)
{
    cleanup_free char *v = fb_xasprintf("%s/versions", root);
    cleanup_free char *l = fb_xasprintf("%s/libexec/pyenv", root);
    cleanup_free char *b = fb_xasprintf("%s/bin/pyenv", root);
    return tc_is_dir(v) && (tc_exists(l) || tc_exists(b));
}

/* ---- asdf ---- */

static bool asdf_version_selected(const char *plugin, const struct fb_callenv *ce, char *out,
                                  size_t cap, char **src)
{
    char var[128];
    size_t n = (size_t)snprintf(var, sizeof var, "ASDF_");
    for (const char *c = plugin; *c && n < sizeof var - 9; c++)
        var[n++] = *c == '-' ? '_' : (char)toupper((unsigned char)*c);
    snprintf(var + n, sizeof var - n, "_VERSION");
    const char *env = callenv_get(ce, var);
    if (env && *env) {
        snprintf(out, cap, "%s", env);
        *src = fb_xstrdup(var);
        return true;
    }
    const char *fname = callenv_get(ce, "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME");
    const char *names[] = {fname && *fname && !strchr(fname, '/') ? fname : ".tool-versions", NULL};
    cleanup_free char *home = callenv_home(ce);
    char *cands[2] = {find_upwards(ce->cwd, names),
                      home ? fb_xasprintf("%s/%s", home, names[0]) : NULL};
    bool found = false;
    for (int i = 0; i < 2 && !found; i++) {
        char buf[8192];
        if (!cands[i] || fb_read_file(cands[i], buf, sizeof buf) < 0)
            continue;
        char *save = NULL;
        for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            line[strcspn(line, "#")] = 0;
            char *s2 = NULL;
            char *tool = strtok_r(line, " \t\r", &s2);
            if (!tool || strcmp(tool, plugin))
                continue;
            char *rest = s2 ? s2 : (char *)"";
            trim(rest);
            snprintf(out, cap, "%s", rest);
            *src = fb_xstrdup(cands[i]);
            found = true;
            break;
        }
    }
    free(cands[0]);
    free(cands[1]);
    return found;
}

static enum shim_kind asdf_shim(const char *cand, const char *root, const char *name,
                                const struct fb_callenv *ce, struct shim_res *out)
{
    char buf[16384];
    if (fb_read_file(cand, buf, sizeof buf) < 0)
        return SHIM_NONE;
    /* Each shim lists the plugin versions that provide it:
     * "# asdf-plugin: nodejs 20.11.0". */
    bool any = false, system = false;
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        const char *tag = "# asdf-plugin: ";
        if (strncmp(line, tag, strlen(tag)))
            continue;
        char plugin[128];
        if (sscanf(line + strlen(tag), "%127s", plugin) != 1)
            continue;
        any = true;
        char versions[1024];
        cleanup_free char *src = NULL;
        if (!asdf_version_selected(plugin, ce, versions, sizeof versions, &src))
            continue;
        char *s2 = NULL;
        for (char *v = strtok_r(versions, " \t", &s2); v; v = strtok_r(NULL, " \t", &s2)) {
            if (!strcmp(v, "system")) {
                system = true;
                break;
            }
            char *prog = fb_xasprintf("%s/installs/%s/%s/bin/%s", root, plugin, v, name);
            if (tc_is_exec_file(prog)) {
                out->path = prog;
                out->why = fb_xasprintf("asdf %s %s (set by %s)", plugin, v, src);
                return SHIM_RESOLVED;
            }
            free(prog);
        }
    }
    if (!any)
        return SHIM_NONE;
    if (system)
        return SHIM_SYSTEM;
    out->why = fb_xasprintf("asdf shim %s: no version of its plugin is set for this directory, or "
                            "the program is not in the version's bin/",
                            cand);
    return SHIM_UNKNOWN;
}

/* ---- rustup ---- */

/* The value of `key = "value"` in a small TOML file (first match, any
 * table unless table is given: then only inside [table]). */
static bool toml_string(const char *text, const char *table, const char *key, char *out,
                        size_t cap)
{
    cleanup_free char *copy = fb_xstrdup(text);
    bool in_table = table == NULL;
    char *save = NULL;
    for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        trim(line);
        if (line[0] == '[') {
            in_table = table ? !strncmp(line + 1, table, strlen(table)) &&
                                   line[1 + strlen(table)] == ']'
                             : true;
            continue;
        }
        if (!in_table)
            continue;
        char *eq = strchr(line, '=');
        if (!eq)
            continue;
        *eq = 0;
        char *k = line, *v = eq + 1;
        trim(k);
        trim(v);
        size_t kl = strlen(k);
        if (kl >= 2 && k[0] == '"' && k[kl - 1] == '"') {
            k[kl - 1] = 0;
            k++;
        }
        if (strcmp(k, key))
            continue;
        size_t vl = strlen(v);
        if (vl < 2 || v[0] != '"' || v[vl - 1] != '"')
            return false;
        snprintf(out, cap, "%.*s", (int)(vl - 2), v + 1);
        return true;
    }
    return false;
}

/* The toolchain rustup would pick for the caller, as rustup does:
 * RUSTUP_TOOLCHAIN, a rust-toolchain(.toml) file from the directory
 * upwards, a directory override in settings.toml, its default_toolchain.
 * Writes the name into tc and returns where it was set (malloc), or NULL. */
static char *rustup_toolchain(const char *rhome, const struct fb_callenv *ce, char *tc, size_t cap)
{
    tc[0] = 0;
    const char *env = callenv_get(ce, "RUSTUP_TOOLCHAIN");
    if (env && *env) {
        snprintf(tc, cap, "%s", env);
        return fb_xstrdup("RUSTUP_TOOLCHAIN");
    }
    static const char *const files[] = {"rust-toolchain.toml", "rust-toolchain", NULL};
    char *f = find_upwards(ce->cwd, files);
    char buf[4096];
    if (f && fb_read_file(f, buf, sizeof buf) >= 0) {
        if (!toml_string(buf, "toolchain", "channel", tc, cap) && !strchr(buf, '[') &&
            !strchr(buf, '=')) {
            trim(buf);
            if (strlen(buf) < cap)
                memcpy(tc, buf, strlen(buf) + 1);
        }
        return f; /* an empty tc: a toolchain file fluebox cannot read */
    }
    free(f);
    cleanup_free char *settings = fb_xasprintf("%s/settings.toml", rhome);
    char sbuf[16384];
    if (fb_read_file(settings, sbuf, sizeof sbuf) < 0)
        return NULL;
    char *src = NULL;
    if (ce->cwd) {
        /* [overrides] "/dir" = "toolchain": the longest dir containing cwd. */
        cleanup_free char *copy = fb_xstrdup(sbuf);
        bool in = false;
        size_t best = 0;
        char *save = NULL;
        for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
            trim(line);
            if (line[0] == '[') {
                in = !strcmp(line, "[overrides]");
                continue;
            }
            char d[1024], t[256];
            if (!in || sscanf(line, "\"%1023[^\"]\" = \"%255[^\"]\"", d, t) != 2)
                continue;
            size_t dl = strlen(d);
            if (!strncmp(ce->cwd, d, dl) && (ce->cwd[dl] == '/' || !ce->cwd[dl]) && dl > best) {
                best = dl;
                snprintf(tc, cap, "%s", t);
                free(src);
                src = fb_xasprintf("%s [overrides]", settings);
            }
        }
    }
    if (!src && toml_string(sbuf, NULL, "default_toolchain", tc, cap))
        src = fb_xstrdup(settings);
    return src;
}

/* "stable" is installed as "stable-<host triple>". */
static char *rustup_toolchain_dir(const char *rhome, const char *tc)
{
    char *tdir = fb_xasprintf("%s/toolchains/%s", rhome, tc);
    if (tc_is_dir(tdir))
        return tdir;
    free(tdir);
    cleanup_free char *tds = fb_xasprintf("%s/toolchains", rhome);
    DIR *d = opendir(tds);
    if (!d)
        return NULL;
    char found[256] = "";
    size_t tl = strlen(tc);
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strncmp(e->d_name, tc, tl) && e->d_name[tl] == '-' &&
            (!found[0] || strcmp(e->d_name, found) < 0) && strlen(e->d_name) < sizeof found)
            snprintf(found, sizeof found, "%s", e->d_name);
    }
    closedir(d);
    return found[0] ? fb_xasprintf("%s/%s", tds, found) : NULL;
}

static enum shim_kind rustup_shim(const char *name, const struct fb_callenv *ce,
                                  struct shim_res *out)
{
    const char *rh = callenv_get(ce, "RUSTUP_HOME");
    cleanup_free char *home = callenv_home(ce);
    cleanup_free char *rhome = rh && rh[0] == '/' ? fb_xstrdup(rh)
                               : home           ? fb_xasprintf("%s/.rustup", home)
                                                : NULL;
    char tc[256] = "";
    cleanup_free char *src = rhome ? rustup_toolchain(rhome, ce, tc, sizeof tc) : NULL;
    cleanup_free char *tdir = src && tc[0] && !strchr(tc, '/') ? rustup_toolchain_dir(rhome, tc)
                                                               : NULL;
    char *prog = tdir ? fb_xasprintf("%s/bin/%s", tdir, name) : NULL;
    if (prog && tc_is_exec_file(prog)) {
        out->path = prog;
        out->why = fb_xasprintf("rustup toolchain %s (set by %s)", tc_base_name(tdir), src);
        return SHIM_RESOLVED;
    }
    free(prog);
    out->why = fb_xasprintf("rustup proxy %s: no installed toolchain that has it is selected for "
                            "this directory",
                            name);
    return SHIM_UNKNOWN;
}

static bool is_rustup_proxy(const char *cand, const char *name)
{
    if (!strcmp(name, "rustup"))
        return false;
    char link[PATH_MAX];
    ssize_t n = readlink(cand, link, sizeof link - 1);
    if (n > 0) {
        link[n] = 0;
        if (!strcmp(tc_base_name(link), "rustup"))
            return true;
    }
    cleanup_free char *dir = tc_dirname(cand);
    cleanup_free char *rustup = fb_xasprintf("%s/rustup", dir);
    struct stat a, b;
    return stat(cand, &a) == 0 && stat(rustup, &b) == 0 && a.st_ino == b.st_ino &&
           a.st_dev == b.st_dev;
}

/* ---- volta ---- */

static enum shim_kind volta_shim(const char *cand, const char *name, const struct fb_callenv *ce,
                                 struct shim_res *out)
{
    const char *vh = callenv_get(ce, "VOLTA_HOME");
    cleanup_free char *bin = tc_dirname(cand);
    cleanup_free char *root = vh && vh[0] == '/' ? fb_xstrdup(vh) : tc_dirname(bin);
    bool npm_like = !strcmp(name, "npm") || !strcmp(name, "npx");
    if (strcmp(name, "node") && !npm_like) {
        out->why = fb_xasprintf("volta shim %s: fluebox resolves only node, npm and npx", name);
        return SHIM_UNKNOWN;
    }
    /* A project's pin (package.json "volta") wins over the default
     * platform (tools/user/platform.json). */
    char node[128] = "", npm[128] = "";
    cleanup_free char *src = NULL;
    static const char *const pj[] = {"package.json", NULL};
    cleanup_free char *pkg = find_upwards(ce->cwd, pj);
    json_t *j = pkg ? json_load_file(pkg, 0, NULL) : NULL;
    json_t *volta = j ? json_object_get(j, "volta") : NULL;
    if (json_is_object(volta)) {
        const char *n = json_string_value(json_object_get(volta, "node"));
        const char *m = json_string_value(json_object_get(volta, "npm"));
        if (n)
            snprintf(node, sizeof node, "%s", n);
        if (m)
            snprintf(npm, sizeof npm, "%s", m);
        if (n || json_object_get(volta, "extends"))
            src = fb_xstrdup(pkg);
        if (json_object_get(volta, "extends"))
            node[0] = 0; /* "extends": not followed here */
    }
    json_decref(j);
    if (!node[0] && !src) {
        src = fb_xasprintf("%s/tools/user/platform.json", root);
        j = json_load_file(src, 0, NULL);
        json_t *pn = j ? json_object_get(j, "node") : NULL;
        const char *n = json_string_value(json_object_get(pn, "runtime"));
        const char *m = json_string_value(json_object_get(pn, "npm"));
        if (n)
            snprintf(node, sizeof node, "%s", n);
        if (m)
            snprintf(npm, sizeof npm, "%s", m);
        json_decref(j);
    }
    if (node[0] && !strchr(node, '/') && !strchr(npm, '/')) {
        char *prog = npm_like && npm[0]
                         ? fb_xasprintf("%s/tools/image/npm/%s/bin/%s", root, npm, name)
                         : fb_xasprintf("%s/tools/image/node/%s/bin/%s", root, node, name);
        if (tc_is_exec_file(prog)) {
            out->path = prog;
            out->why = fb_xasprintf("volta node %s%s%s (set by %s)", node,
                                    npm_like && npm[0] ? ", npm " : "", npm_like ? npm : "", src);
            return SHIM_RESOLVED;
        }
        free(prog);
    }
    out->why = fb_xasprintf("volta shim %s: no installed node version is set (%s)", name,
                            src ? src : "no platform.json");
    return SHIM_UNKNOWN;
}

/* ---- dispatch ---- */

enum shim_kind shim_resolve(const char *cand, const char *name, const struct fb_callenv *ce,
                            struct shim_res *out)
{
    out->path = out->why = NULL;
    cleanup_free char *dir = tc_dirname(cand);
    if (!strcmp(tc_base_name(dir), "shims")) {
        cleanup_free char *root = tc_dirname(dir);
        if (is_pyenv_root(root))
            return pyenv_shim(root, name, ce, out);
        cleanup_free char *inst = fb_xasprintf("%s/installs", root);
        if (tc_is_dir(inst)) {
            enum shim_kind k = asdf_shim(cand, root, name, ce, out);
            if (k != SHIM_NONE)
                return k;
        }
    }
    if (is_rustup_proxy(cand, name))
        return rustup_shim(name, ce, out);
    char real[PATH_MAX];
    if (realpath(cand, real) && !strcmp(tc_base_name(real), "volta-shim"))
        return volta_shim(cand, name, ce, out);
    return SHIM_NONE;
}
