/* learn.c — `fluebox learn --out FILE [run options] -- CMD`: run CMD under a
 * base profile (strict unless --profile says otherwise) in learn mode, where
 * every call the profile would deny is let through and recorded by the
 * supervisor (scnotify.c), then write a profile that extends the base with
 * exactly those calls, one commented rule each. Calls the base only allows
 * for some argument values (socket families, ioctl requests, ...) are
 * learned with the values that were used; since a profile's rules for a
 * syscall replace the inherited ones, the base's other rules for such a
 * syscall are written again ("from BASE").
 *
 * The fixed rules (seccomp.h) stay in force while learning: what they deny
 * no profile can allow, so the learned profile behaves as the learning run. */
#include "policy_opts.h"
#include "commands.h"
#include "profile.h"
#include "report.h"
#include "supervise.h"
#include "toolchain.h"

#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <string.h>

static const char learn_usage[] =
    "Usage: fluebox learn --out FILE [--profile BASE] [run options] -- CMD [ARGS...]\n"
    "Runs CMD under BASE (default strict) but lets through, and records, every\n"
    "system call BASE would deny; writes to FILE a profile that extends BASE with\n"
    "exactly those calls. Then: fluebox run --profile FILE -- CMD [ARGS...]\n"
    "\n";

static int cmp_seen(const void *a, const void *b)
{
    const struct fb_sc_seen *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    if (c)
        return c;
    for (unsigned k = 0; k < 6; k++)
        if (x->args[k] != y->args[k])
            return x->args[k] < y->args[k] ? -1 : 1;
    return 0;
}

/* The command line, for the description (cut to a sane length). */
static char *cmdline(char **argv)
{
    size_t cap = 200, o = 0;
    char *s = fb_xcalloc(1, cap + 4);
    for (char **a = argv; *a && o < cap; a++)
        o += (size_t)snprintf(s + o, cap - o + 1, "%s%s", a == argv ? "" : " ", *a);
    if (o >= cap)
        strcpy(s + cap, "...");
    return s;
}

static int write_atomic(const char *path, const char *text, struct fb_err *err)
{
    cleanup_free char *tmp = fb_xasprintf("%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "--out %s", path);
    int rc = fb_write_all(fd, text, strlen(text));
    if (close(fd) < 0)
        rc = -1;
    if (rc < 0 || rename(tmp, path) < 0) {
        int e = errno;
        unlink(tmp);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "--out %s", path);
    }
    return 0;
}

/* The learned profile. A profile's rules for a syscall replace the ones it
 * inherits, so for each learned syscall the base's rules for it are written
 * again, but for those that match a learned call (they denied it). */
static char *learned_json(const struct fb_policy *p, const char *out, const char *base,
                          const struct fb_sc_report *r, size_t *nrules)
{
    struct fb_sc_seen *v = fb_xcalloc(r->n ? r->n : 1, sizeof *v);
    memcpy(v, r->seen, r->n * sizeof *v);
    qsort(v, r->n, sizeof *v, cmp_seen);
    struct fb_sc_rule *learned = fb_xcalloc(r->n ? r->n : 1, sizeof *learned);
    for (size_t i = 0; i < r->n; i++) {
        struct fb_sc_rule *x = &learned[i];
        x->name = v[i].name;
        x->action = FB_SC_ALLOW;
        for (unsigned k = 0; k < 6; k++) {
            if (!(v[i].class_args & (1u << k)))
                continue;
            x->args[x->nargs++] = (struct fb_sc_arg){k, FB_SC_EQ, v[i].args[k], 0};
        }
        x->comment = fb_xasprintf("used by the command: %lld call%s, first by %s", (long long)v[i].count,
                                  v[i].count == 1 ? "" : "s", v[i].comm[0] ? v[i].comm : "?");
    }
    struct fb_sc_rule *rules = fb_xcalloc(r->n + p->seccomp.nrules + 1, sizeof *rules);
    size_t n = 0;
    for (size_t i = 0; i < r->n;) {
        size_t e = i + 1;
        while (e < r->n && !strcmp(learned[e].name, learned[i].name))
            e++;
        for (size_t b = 0; b < p->seccomp.nrules; b++) {
            const struct fb_sc_rule *br = &p->seccomp.rules[b];
            if (strcmp(br->name, learned[i].name))
                continue;
            bool keep = true;
            for (size_t k = i; k < e && keep; k++)
                keep = !seccomp_rules_overlap(br, &learned[k]);
            if (!keep)
                continue;
            rules[n] = *br;
            rules[n].comment = br->comment ? fb_xasprintf("from %s: %s", base, br->comment)
                                           : fb_xasprintf("from %s", base);
            n++;
        }
        for (size_t k = i; k < e; k++)
            rules[n++] = learned[k];
        i = e;
    }
    *nrules = r->n;

    const char *slash = strrchr(out, '/');
    cleanup_free char *name = fb_xstrdup(slash ? slash + 1 : out);
    size_t nl = strlen(name);
    if (nl > 5 && !strcmp(name + nl - 5, ".json"))
        name[nl - 5] = 0;
    cleanup_free char *cmd = cmdline(p->argv);
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(name));
    cleanup_free char *desc = fb_xasprintf("learned by fluebox learn from: %s", cmd);
    json_object_set_new(o, "description", json_string(desc));
    json_object_set_new(o, "comment",
                        json_string("Every rule commented \"used by the command\" is a system call "
                                    "the command made that the extended profile denies; rules "
                                    "commented \"from ...\" repeat the extended profile's other "
                                    "rules for those system calls (a profile's rules for a system "
                                    "call replace the inherited ones). Review them before you use "
                                    "this profile for anything but this command."));
    json_object_set_new(o, "extends", json_string(base));
    json_t *sc = json_object();
    json_object_set_new(sc, "rules", profile_rules_json(rules, n));
    json_object_set_new(o, "seccomp", sc);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    for (size_t i = 0; i < n; i++)
        free(rules[i].comment);
    free(rules);
    free(learned);
    free(v);
    char *t = fb_xasprintf("%s\n", s ? s : "{}");
    free(s);
    return t;
}

static int set_out(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (!*v)
        return fb_errf(err, FB_EXIT_SETUP, "--out: empty path");
    *(const char **)ctx = v;
    return 0;
}

const struct fb_opt learn_opts[] = {
    {"out", 0, FB_ARG_HOST_PATH, "FILE", FB_OPT_RUN, set_out,
     "where to write the learned profile (required)", "Learning:"},
};
const size_t learn_opts_n = FB_ARRAY_LEN(learn_opts);

int cmd_learn(int argc, char **argv)
{
    const char *out = NULL;
    struct fb_optset extra = {learn_opts, FB_ARRAY_LEN(learn_opts), &out};
    struct fb_policy p;
    struct fb_err err = {0};
    policy_init(&p);
    char cwd[4096];
    struct fb_callenv ce;
    callenv_self(&ce, cwd, sizeof cwd);
    int r = cli_parse_run("learn", learn_usage, argc, argv, &extra, "strict", &p, &err);
    if (r > 0) {
        policy_free(&p);
        return 0;
    }
    if (r == 0 && !out)
        r = fb_errf(&err, FB_EXIT_SETUP, "learn: --out FILE is required (see fluebox learn --help)");
    if (r < 0 || policy_finish(&p, &ce, &err) < 0) {
        fb_warn("%s", err.msg);
        policy_free(&p);
        return err.code ? err.code : FB_EXIT_SETUP;
    }
    p.seccomp.learn = true;
    p.seccomp.log_denied = false;
    /* What the profile extends: the built-in's name, or the base file's
     * absolute path (the learned profile may be stored elsewhere). */
    char real[PATH_MAX];
    cleanup_free char *base = NULL;
    if (strchr(p.profile_name, '/') || strstr(p.profile_name, ".json"))
        base = fb_xstrdup(realpath(p.profile_name, real) ? real : p.profile_name);
    else
        base = fb_xstrdup(p.profile_name);

    static struct fb_result res; /* large: keep it off the stack */
    int code;
    if (supervise_run(&p, &res, &err) < 0) {
        fb_warn("%s", err.msg);
        code = res.exit_code ? res.exit_code : FB_EXIT_SETUP;
        policy_free(&p);
        return code;
    }
    code = res.exit_code;
    if (p.report) {
        struct fb_err rerr = {0};
        if (report_write(p.report, &p, &res, &rerr) < 0) {
            fb_warn("%s", rerr.msg);
            code = FB_EXIT_SETUP;
        }
    }
    if (!res.seccomp.active) {
        fb_warn("learn: the supervisor received no seccomp notifications channel; nothing learned");
        policy_free(&p);
        return FB_EXIT_SETUP;
    }
    if (res.seccomp.truncated) {
        fb_warn("learn: more than %d distinct additions; extend a less strict profile", FB_SC_SEEN_MAX);
        policy_free(&p);
        return FB_EXIT_SETUP;
    }
    size_t nrules = 0;
    char *text = learned_json(&p, out, base, &res.seccomp, &nrules);
    if (write_atomic(out, text, &err) < 0) {
        fb_warn("%s", err.msg);
        free(text);
        policy_free(&p);
        return FB_EXIT_SETUP;
    }
    free(text);
    if (!p.quiet)
        fb_warn("learn: %zu rule%s beyond %s written to %s%s", nrules, nrules == 1 ? "" : "s", base,
                out, code ? " (the command failed: review what it learned)" : "");
    policy_free(&p);
    return code;
}
