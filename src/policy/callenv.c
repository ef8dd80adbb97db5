/* callenv.c — the caller's environment (callenv.h): this process's, or a
 * client's sent as session.create "caller", limited to the variables the
 * resolution reads. */
#include "callenv.h"

#include "toolchain.h"

#include <limits.h>
#include <string.h>

void callenv_self(struct fb_callenv *ce, char *cwd, size_t cap)
{
    extern char **environ;
    ce->path = getenv("PATH");
    ce->cwd = getcwd(cwd, cap);
    ce->envp = environ;
}

const char *callenv_get(const struct fb_callenv *ce, const char *k)
{
    if (!ce || !ce->envp)
        return NULL;
    size_t kl = strlen(k);
    for (char *const *e = ce->envp; *e; e++)
        if (!strncmp(*e, k, kl) && (*e)[kl] == '=')
            return *e + kl + 1;
    return NULL;
}

char *callenv_home(const struct fb_callenv *ce)
{
    const char *h = callenv_get(ce, "HOME");
    char real[PATH_MAX];
    if (h && h[0] == '/' && realpath(h, real))
        return fb_xstrdup(real);
    /* HOME unset or unusable: the passwd entry of our uid, read from the
     * file (no NSS in a static binary). */
    char buf[65536];
    if (fb_read_file("/etc/passwd", buf, sizeof buf) <= 0)
        return NULL;
    char want[32];
    snprintf(want, sizeof want, "%u", (unsigned)getuid());
    char *save = NULL;
    for (char *line = strtok_r(buf, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char *f[7] = {0};
        int n = 0;
        for (char *s = line; n < 7; n++) {
            f[n] = s;
            char *c = strchr(s, ':');
            if (!c)
                break;
            *c = 0;
            s = c + 1;
        }
        if (n >= 5 && f[2] && f[5] && !strcmp(f[2], want) && f[5][0] == '/')
            return realpath(f[5], real) ? fb_xstrdup(real) : fb_xstrdup(f[5]);
    }
    return NULL;
}

bool toolchain_env_name(const char *k)
{
    static const char *const names[] = {"HOME",          "VIRTUAL_ENV",      "PYENV_VERSION",
                                        "RUSTUP_HOME",   "RUSTUP_TOOLCHAIN", "VOLTA_HOME",
                                        "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME"};
    for (size_t i = 0; i < FB_ARRAY_LEN(names); i++)
        if (!strcmp(k, names[i]))
            return true;
    for (size_t i = 0; toolchain_trust_vars[i]; i++)
        if (!strcmp(k, toolchain_trust_vars[i]))
            return true;
    size_t l = strlen(k);
    return l > 13 && !strncmp(k, "ASDF_", 5) && !strcmp(k + l - 8, "_VERSION");
}

json_t *callenv_to_json(const struct fb_callenv *ce)
{
    json_t *o = json_object(), *env = json_object();
    if (ce->path)
        json_object_set_new(o, "path", json_string(ce->path));
    if (ce->cwd)
        json_object_set_new(o, "cwd", json_string(ce->cwd));
    for (char *const *e = ce->envp; e && *e; e++) {
        const char *eq = strchr(*e, '=');
        if (!eq)
            continue;
        cleanup_free char *k = fb_xstrndup(*e, (size_t)(eq - *e));
        if (toolchain_env_name(k))
            json_object_set_new(env, k, json_string(eq + 1));
    }
    json_object_set_new(o, "env", env);
    return o;
}

void callenv_free_envp(char **envp)
{
    for (char **e = envp; e && *e; e++)
        free(*e);
    free(envp);
}

const char *callenv_from_json(json_t *j, struct fb_callenv *ce, char ***envp)
{
    memset(ce, 0, sizeof *ce);
    *envp = NULL;
    if (!json_is_object(j))
        return "caller must be an object {\"path\", \"cwd\", \"env\"}";
    json_t *path = json_object_get(j, "path"), *cwd = json_object_get(j, "cwd");
    json_t *env = json_object_get(j, "env");
    if (path && !json_is_null(path) && (!json_is_string(path) || json_string_length(path) > 65536))
        return "caller.path must be a string (a PATH)";
    if (cwd && !json_is_null(cwd) &&
        (!json_is_string(cwd) || json_string_value(cwd)[0] != '/' || json_string_length(cwd) > 4095))
        return "caller.cwd must be an absolute host path";
    if (env && !json_is_null(env) && !json_is_object(env))
        return "caller.env must be an object of strings";
    const char *k;
    json_t *v;
    size_t n = 0;
    json_object_foreach(env, k, v)
    {
        if (!json_is_string(v) || json_string_length(v) > 65536)
            return "caller.env must be an object of strings";
    }
    char **out = fb_xcalloc(json_object_size(env) + 1, sizeof *out);
    json_object_foreach(env, k, v)
    {
        if (toolchain_env_name(k)) /* the rest is no business of the server */
            out[n++] = fb_xasprintf("%s=%s", k, json_string_value(v));
    }
    ce->path = json_string_value(path);
    ce->cwd = json_string_value(cwd);
    ce->envp = out;
    *envp = out;
    return NULL;
}

