/* profile.c — loading security profiles into a policy (profile.h): JSON
 * files and the built-in ones, following "extends".
 *
 * A profile that extends another is applied over it: first the extended
 * profile, then this one. Scalars replace, lists (mounts, environment,
 * network allowlist) append, and a profile's seccomp rules for a syscall
 * replace every inherited rule for that syscall (seccomp.h: per syscall one
 * unconditional rule or exclusive conditional ones, checked per file so
 * that errors name the rule). Every key is known: anything else is an error,
 * and every error names the file and the JSON path of the bad field. The
 * format is documented in docs/profiles.md.
 *
 * Here: the top level of a profile, reading files, "extends" (cycles,
 * depth) and the entry points. The JSON walking and value parsers are in
 * profile_json.c, the sections in profile_sections.c and profile_rules.c
 * (seccomp), the built-ins and their precompiled policies in
 * profile_builtin.c, the policy written back as a profile in
 * profile_show.c and `fluebox profile` in profile_cmd.c. */
#include "profile_int.h"

#include "seccomp.h"

#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>

#define MAX_DEPTH 16
#define MAX_FILE (1 << 20)

/* ---- loading ---- */

static int load_ref(struct ld *parent, struct fb_policy *p, const char *ref, const char *path);

static int apply_root(struct ld *l, struct fb_policy *p, json_t *root)
{
    static const char *const keys[] = {"name", "description", "comment", "extends", "filesystem",
                                       "environment", "limits", "network", "namespaces", "uid",
                                       "gid", "hostname", "seccomp", "isolation", NULL};
    if (!json_is_object(root))
        return perr(l, NULL, "a profile is a JSON object, got %s", jtype(root));
    if (check_keys(l, "", root, keys) < 0 || get_comment(l, "", root, NULL) < 0)
        return -1;
    json_t *j;
    if ((j = json_object_get(root, "extends"))) {
        if (!json_is_string(j) || !*json_string_value(j))
            return perr(l, "extends", "expected the name of a built-in profile or a file, got %s",
                        jtype(j));
        if (load_ref(l, p, json_string_value(j), "extends") < 0)
            return -1;
    }
    if ((j = json_object_get(root, "name"))) {
        if (want_type(l, "name", j, JSON_STRING, "a string") < 0)
            return -1;
    }
    if ((j = json_object_get(root, "description"))) {
        if (want_type(l, "description", j, JSON_STRING, "a string") < 0)
            return -1;
        free(p->description);
        p->description = fb_xstrdup(json_string_value(j));
    }
    if ((j = json_object_get(root, "filesystem")) && apply_filesystem(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "environment")) && apply_environment(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "limits")) && apply_limits(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "network")) && apply_network(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "namespaces")) && apply_namespaces(l, p, j) < 0)
        return -1;
    static const char *const ids[] = {"uid", "gid"};
    for (size_t i = 0; i < 2; i++) {
        if (!(j = json_object_get(root, ids[i])))
            continue;
        if (!json_is_integer(j) || json_integer_value(j) < 0 ||
            json_integer_value(j) >= 4294967295LL)
            return perr(l, ids[i], "expected a numeric id from 0 to 4294967294");
        if (i == 0)
            p->uid = (uid_t)json_integer_value(j);
        else
            p->gid = (gid_t)json_integer_value(j);
    }
    if ((j = json_object_get(root, "hostname"))) {
        if (want_type(l, "hostname", j, JSON_STRING, "a string") < 0)
            return -1;
        const char *h = json_string_value(j);
        size_t n = strlen(h);
        if (n < 1 || n > 64 || strspn(h, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                          "0123456789.-") != n)
            return perr(l, "hostname", "1 to 64 letters, digits, '.' or '-'");
        free(p->hostname);
        p->hostname = fb_xstrdup(h);
        if (!(p->namespaces & FB_NS_UTS))
            return perr(l, "hostname", "needs the uts namespace (\"namespaces\": {\"uts\": true})");
    }
    if ((j = json_object_get(root, "seccomp")) && apply_seccomp(l, p, j) < 0)
        return -1;
    if ((j = json_object_get(root, "isolation"))) {
        if (want_type(l, "isolation", j, JSON_STRING, "a string") < 0)
            return -1;
        const char *v = json_string_value(j);
        if (!strcmp(v, "namespaces"))
            p->isolation = FB_ISO_NAMESPACES;
        else if (!strcmp(v, "landlock"))
            p->isolation = FB_ISO_LANDLOCK;
        else
            return perr(l, "isolation", "expected \"namespaces\" or \"landlock\", got \"%s\"", v);
    }
    return 0;
}

static int load_json_text(struct ld *l, struct fb_policy *p, const char *text, size_t len)
{
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root)
        return fb_errf(l->err, FB_EXIT_SETUP, "%s:%d:%d: invalid JSON: %s", l->label, je.line,
                       je.column, je.text);
    int rc = apply_root(l, p, root);
    json_decref(root);
    return rc;
}

static char *read_profile_file(struct ld *l, const char *path, size_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        perr(l, NULL, "%s", strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_size > MAX_FILE) {
        close(fd);
        perr(l, NULL, "%s", S_ISREG(st.st_mode) ? "larger than 1 MiB" : "not a regular file");
        return NULL;
    }
    char *buf = fb_xmalloc((size_t)st.st_size + 1);
    ssize_t n = fb_read_full(fd, buf, (size_t)st.st_size);
    close(fd);
    if (n < 0) {
        free(buf);
        perr(l, NULL, "%s", strerror(errno));
        return NULL;
    }
    buf[n] = 0;
    *len = (size_t)n;
    return buf;
}

bool is_file_ref(const char *ref)
{
    size_t n = strlen(ref);
    return strchr(ref, '/') || (n > 5 && !strcmp(ref + n - 5, ".json"));
}

static void ld_free(struct ld *l)
{
    free(l->dir);
}

/* May the profile ident (labelled label), written at path of parent, be
 * loaded under it: not one it is being loaded from ("extends" cycles) and
 * not deeper than MAX_DEPTH? */
static int check_chain(struct ld *parent, const char *ident, const char *label, const char *path)
{
    for (size_t i = 0; i < parent->nchain; i++) {
        if (strcmp(parent->chain[i], ident))
            continue;
        char msg[400];
        size_t o = 0;
        msg[0] = 0;
        for (size_t k = i; k < parent->nchain; k++)
            o += (size_t)snprintf(msg + o, o < sizeof msg ? sizeof msg - o : 0, "%s -> ",
                                  parent->labels[k]);
        snprintf(msg + o, o < sizeof msg ? sizeof msg - o : 0, "%s", label);
        return perr(parent, path, "\"extends\" makes a cycle: %s", msg);
    }
    if (parent->nchain >= MAX_DEPTH)
        return perr(parent, path, "profiles extend each other more than %d deep", MAX_DEPTH);
    return 0;
}

/* Load ref (a built-in name or a file, relative to parent's directory) into
 * p. parent is NULL for the top level; path is where ref was written. */
static int load_ref(struct ld *parent, struct fb_policy *p, const char *ref, const char *path)
{
    struct ld l = {.err = parent->err, .files_ok = parent->files_ok, .chain = parent->chain,
                   .labels = parent->labels, .nchain = parent->nchain, .src = parent->src};
    char ident[PATH_MAX + 16];
    cleanup_free char *label = NULL;
    cleanup_free char *text = NULL;
    size_t len = 0;
    const char *btext = NULL;
    const struct fb_builtin_policy *pre = NULL;

    if (!is_file_ref(ref)) {
        btext = builtin_json(ref);
        if (!btext) {
            const char *const *names = profile_builtin_names();
            char list[200] = "";
            size_t o = 0;
            for (size_t i = 0; names[i]; i++)
                o += (size_t)snprintf(list + o, o < sizeof list ? sizeof list - o : 0, "%s%s",
                                      i ? ", " : "", names[i]);
            if (parent->label)
                return perr(parent, path, "\"%s\": no such built-in profile (built-in: %s; a file "
                                          "name needs a '/' or .json)", ref, list);
            return fb_errf(parent->err, FB_EXIT_SETUP,
                           "%s: no such built-in profile (built-in: %s; a file name needs a '/' or "
                           ".json)", ref, list);
        }
        if (parent->src != FB_BUILTIN_JSON)
            pre = builtin_policy(ref);
        if (!pre && parent->src == FB_BUILTIN_PRECOMPILED)
            return fb_errf(parent->err, FB_EXIT_SETUP,
                           "%s: this build has no precompiled policy of it", ref);
        snprintf(ident, sizeof ident, "builtin:%s", ref);
        label = fb_xstrdup(ref);
    } else {
        if (!parent->files_ok)
            return perr(parent, path, "\"%s\": only built-in profiles can be extended here", ref);
        const char *r = ref;
        while (r[0] == '.' && r[1] == '/')
            r += 2;
        if (ref[0] != '/' && parent->dir && strcmp(parent->dir, "."))
            label = fb_xasprintf("%s/%s", parent->dir, r);
        else
            label = fb_xstrdup(ref[0] == '/' ? ref : r);
        char real[PATH_MAX];
        if (!realpath(label, real)) {
            int e = errno;
            if (parent->label)
                return perr(parent, path, "\"%s\": %s", ref, strerror(e));
            return fb_errf(parent->err, FB_EXIT_SETUP, "%s: %s", ref, strerror(e));
        }
        snprintf(ident, sizeof ident, "file:%s", real);
        char *slash = strrchr(label, '/');
        l.dir = slash ? fb_xstrndup(label, slash == label ? 1 : (size_t)(slash - label))
                      : fb_xstrdup(".");
    }
    l.label = label;

    if (check_chain(parent, ident, label, path) < 0) {
        ld_free(&l);
        return -1;
    }
    char *chain[MAX_DEPTH + 1], *labels[MAX_DEPTH + 1];
    for (size_t i = 0; i < parent->nchain; i++) {
        chain[i] = parent->chain[i];
        labels[i] = parent->labels[i];
    }
    chain[parent->nchain] = ident;
    labels[parent->nchain] = label;
    l.chain = chain;
    l.labels = labels;
    l.nchain = parent->nchain + 1;

    if (!btext) {
        text = read_profile_file(&l, label, &len);
        if (!text) {
            ld_free(&l);
            return -1;
        }
    }
    l.builtin = btext != NULL && !getenv("FLUEBOX_CHECK_BUILTINS");
    int rc = 0;
    if (pre)
        apply_precompiled(p, pre);
    else
        rc = btext ? load_json_text(&l, p, btext, strlen(btext)) : load_json_text(&l, p, text, len);
    ld_free(&l);
    if (rc < 0)
        return -1;
    /* Remember what was extended, for show and the report. */
    if (parent->label) {
        char *old = p->profile_extends;
        p->profile_extends = old ? fb_xasprintf("%s < %s", label, old) : fb_xstrdup(label);
        free(old);
    }
    return 0;
}

static void set_name(struct fb_policy *p, const char *name)
{
    free(p->profile_name);
    p->profile_name = fb_xstrdup(name);
}

/* FLUEBOX_CHECK_BUILTINS: built-ins from their JSON, every check on. */
static enum fb_builtin_src default_src(void)
{
    return getenv("FLUEBOX_CHECK_BUILTINS") ? FB_BUILTIN_JSON : FB_BUILTIN_ANY;
}

int profile_load(struct fb_policy *p, const char *name_or_path, struct fb_err *err)
{
    return profile_load_from(p, name_or_path, default_src(), err);
}

int profile_load_from(struct fb_policy *p, const char *name_or_path, enum fb_builtin_src src,
                      struct fb_err *err)
{
    struct ld top = {.err = err, .files_ok = true, .src = src};
    free(p->profile_extends);
    p->profile_extends = NULL;
    if (load_ref(&top, p, name_or_path, NULL) < 0)
        return -1;
    set_name(p, name_or_path);
    /* Files are checked as a whole; the built-in ones are tested. */
    if (is_file_ref(name_or_path) && seccomp_validate(p, err) < 0)
        return fb_err_wrap(err, "%s", name_or_path);
    return 0;
}

int profile_load_text(struct fb_policy *p, const char *label, const char *text, size_t len,
                      struct fb_err *err)
{
    struct ld l = {.label = label, .err = err, .files_ok = false, .src = default_src()};
    char ident[64];
    snprintf(ident, sizeof ident, "text:%s", label);
    char *chain[1] = {ident}, *labels[1] = {(char *)label};
    l.chain = chain;
    l.labels = labels;
    l.nchain = 1;
    if (load_json_text(&l, p, text, len) < 0)
        return -1;
    set_name(p, label);
    if (seccomp_validate(p, err) < 0)
        return fb_err_wrap(err, "%s", label);
    return 0;
}
