/* options.c — the command-line grammar (see options.h): getopt_long over
 * option tables, errors as one line, --help from the same tables.
 *
 * getopt_long keeps its state in libc globals (optind, optarg): parsing is
 * done on one thread at a time (the CLI's main thread; the server's event
 * loop, never its spawn worker). */
#include "options.h"

#include <getopt.h>
#include <string.h>

enum { VAL_BASE = 256 }; /* getopt values of table rows: VAL_BASE + index */

struct row {
    const struct fb_opt *o;
    void *ctx;
};

static const char *scope_where(unsigned scope)
{
    if (scope & FB_OPT_FOREIGN)
        return "to other users' sessions";
    if (scope & FB_OPT_SESSION)
        return "for sessions";
    return "here";
}

static void push(struct fb_parsed *out, const struct row *r, const char *val)
{
    out->v = fb_xrealloc(out->v, (out->n + 1) * sizeof *out->v);
    out->v[out->n++] = (struct fb_optval){r->o, r->ctx, val};
}

/* The text of the argument getopt stopped at, up to '=' (for messages). */
static char *arg_name(const char *a)
{
    return fb_xstrndup(a, strcspn(a, "="));
}

/* The edit distance of a and b (insertions, deletions, substitutions and
 * swaps of two neighbours count 1), or cap + 1 when it is over cap. */
static size_t edit_distance(const char *a, const char *b, size_t cap)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 64 || lb > 64 || (la > lb ? la - lb : lb - la) > cap)
        return cap + 1;
    size_t d[65][65];
    for (size_t i = 0; i <= la; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= lb; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= la; i++) {
        for (size_t j = 1; j <= lb; j++) {
            size_t c = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < c)
                c = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < c)
                c = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && d[i - 2][j - 2] + 1 < c)
                c = d[i - 2][j - 2] + 1;
            d[i][j] = c;
        }
    }
    return d[la][lb] <= cap ? d[la][lb] : cap + 1;
}

const char *opt_closest(const char *word, const char *const *names, size_t n)
{
    size_t len = strlen(word);
    size_t cap = len <= 3 ? 1 : len <= 8 ? 2 : 3, best = cap + 1;
    const char *near = NULL;
    for (size_t i = 0; i < n; i++) {
        size_t d = edit_distance(word, names[i], cap);
        if (d < best) {
            best = d;
            near = names[i];
        }
    }
    return near;
}

/* Options of docker and podman that fluebox does not take as they are,
 * with what to use instead (the ones it takes are aliases in the tables). */
static const struct {
    const char *name, *answer;
} docker_habits[] = {
    {"read-only", "the system is always read-only in fluebox; what is writable is /workspace, "
                  "/tmp and the home (--ro-bind DIR:/workspace makes the workspace read-only)"},
    {"rm", "every fluebox sandbox is removed when its command exits"},
    {"detach", "a sandbox that outlives the command is a session: fluebox session create"},
    {"privileged", "fluebox has no privileged mode; --profile trusted is the least confined"},
    {"publish", "ports are published from sessions: fluebox session create --publish"},
    {"name", "sessions get an id from the server; fluebox session create --label NAME"},
};

/* The one-line answer to an unknown long option "--NAME" (n: NAME). */
static int unknown_long(const char *n, const struct row *rows, size_t total, const char *cmd,
                        struct fb_err *err)
{
    size_t matches = 0;
    for (size_t i = 0; i < total; i++)
        matches += !strncmp(rows[i].o->name, n, strlen(n));
    if (matches > 1)
        return fb_errf(err, FB_EXIT_SETUP, "ambiguous option --%s (see fluebox %s --help)", n, cmd);
    for (size_t i = 0; i < FB_ARRAY_LEN(docker_habits); i++)
        if (!strcmp(n, docker_habits[i].name))
            return fb_errf(err, FB_EXIT_SETUP, "unknown option --%s: %s", n, docker_habits[i].answer);
    const char **names = fb_xcalloc(total + 1, sizeof *names);
    for (size_t i = 0; i < total; i++)
        names[i] = rows[i].o->name;
    names[total] = "help";
    const char *near = opt_closest(n, names, total + 1);
    int rc = near ? fb_errf(err, FB_EXIT_SETUP, "unknown option --%s: did you mean --%s? (see fluebox %s --help)",
                            n, near, cmd)
                  : fb_errf(err, FB_EXIT_SETUP, "unknown option --%s (see fluebox %s --help)", n, cmd);
    free(names);
    return rc;
}

int opt_parse(int argc, char **argv, const struct fb_optset *sets, size_t nsets, unsigned scope,
              const char *cmd, struct fb_parsed *out, struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    size_t total = 0;
    for (size_t s = 0; s < nsets; s++)
        total += sets[s].n;
    struct option *lo = fb_xcalloc(total + 2, sizeof *lo);
    struct row *rows = fb_xcalloc(total + 1, sizeof *rows);
    /* "+": stop at the first operand (a command's own options are its own);
     * ":": report a missing value as ':' rather than '?'. */
    char *shorts = fb_xcalloc(1, 2 * total + 8);
    strcpy(shorts, scope & FB_PARSE_PERMUTE ? ":h" : "+:h");
    size_t k = 0;
    for (size_t s = 0; s < nsets; s++) {
        for (size_t i = 0; i < sets[s].n; i++, k++) {
            const struct fb_opt *o = &sets[s].opts[i];
            rows[k] = (struct row){o, sets[s].ctx};
            lo[k] = (struct option){o->name, o->arg ? required_argument : no_argument, NULL,
                                    VAL_BASE + (int)k};
            if (o->short_name) {
                size_t l = strlen(shorts);
                shorts[l] = o->short_name;
                if (o->arg)
                    shorts[l + 1] = ':';
            }
        }
    }
    lo[k] = (struct option){"help", no_argument, NULL, 'h'};
    /* getopt wants the program name at argv[0]. */
    char **av = fb_xcalloc((size_t)argc + 2, sizeof *av);
    av[0] = "fluebox";
    for (int i = 0; i < argc; i++)
        av[i + 1] = argv[i];
    int ac = argc + 1;

    int rc = 0;
    optind = 0; /* a full re-initialisation (glibc) */
    opterr = 0;
    for (;;) {
        int c = getopt_long(ac, av, shorts, lo, NULL);
        if (c == -1)
            break;
        if (c == 'h') {
            rc = 1;
            break;
        }
        const char *cur = av[optind - 1 < ac ? optind - 1 : ac - 1];
        if (c == ':' || c == '?') {
            /* optopt: the row's value for a known option (a missing value,
             * or a value given to a flag), the letter for an unknown short
             * one, 0 for an unknown or ambiguous long one. */
            if (optopt >= VAL_BASE && optopt < VAL_BASE + (int)total) {
                const struct fb_opt *o = rows[optopt - VAL_BASE].o;
                rc = c == ':' ? fb_errf(err, FB_EXIT_SETUP, "--%s needs a value", o->name)
                              : fb_errf(err, FB_EXIT_SETUP, "--%s takes no value", o->name);
            } else if (optopt > 0 && optopt < 256) {
                const struct fb_opt *o = NULL;
                for (size_t i = 0; i < total && !o; i++)
                    if (rows[i].o->short_name == optopt)
                        o = rows[i].o;
                rc = c == ':' && o ? fb_errf(err, FB_EXIT_SETUP, "-%c needs a value", optopt)
                                   : fb_errf(err, FB_EXIT_SETUP,
                                             "unknown option -%c (see fluebox %s --help)", optopt,
                                             cmd);
            } else {
                cleanup_free char *n = arg_name(cur);
                rc = n[0] == '-' && n[1] == '-'
                         ? unknown_long(n + 2, rows, total, cmd, err)
                         : fb_errf(err, FB_EXIT_SETUP, "unknown option %s (see fluebox %s --help)",
                                   n, cmd);
            }
            break;
        }
        const struct row *r = NULL;
        if (c >= VAL_BASE && c < VAL_BASE + (int)total)
            r = &rows[c - VAL_BASE];
        for (size_t i = 0; i < total && !r; i++)
            if (rows[i].o->short_name == c)
                r = &rows[i];
        if (!r) {
            rc = fb_errf(err, FB_EXIT_SETUP, "unknown option %s", cur);
            break;
        }
        if (!(r->o->flags & scope)) {
            rc = fb_errf(err, FB_EXIT_SETUP, "--%s is not available %s", r->o->name,
                         scope_where(scope));
            break;
        }
        /* "--mem -- cmd": getopt would take "--" as the value. */
        if (r->o->arg && optarg == cur && !strcmp(optarg, "--")) {
            rc = fb_errf(err, FB_EXIT_SETUP, "--%s needs a value", r->o->name);
            break;
        }
        push(out, r, r->o->arg ? optarg : NULL);
    }
    if (rc == 0) {
        out->dashdash = optind >= 2 && optind <= ac && !strcmp(av[optind - 1], "--");
        out->nargs = ac - optind;
        out->args = fb_xcalloc((size_t)out->nargs + 1, sizeof *out->args);
        for (int i = 0; i < out->nargs; i++)
            out->args[i] = av[optind + i];
    }
    free(av);
    free(shorts);
    free(rows);
    free(lo);
    if (rc != 0)
        opt_parsed_free(out);
    return rc;
}

void opt_parsed_free(struct fb_parsed *p)
{
    free(p->v);
    free(p->args);
    memset(p, 0, sizeof *p);
}

int opt_apply(const struct fb_parsed *p, const void *ctx, struct fb_err *err)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct fb_optval *v = &p->v[i];
        if (v->ctx != ctx || !v->o->set)
            continue;
        if (v->o->set(v->ctx, v->o, v->val, err) < 0)
            return -1;
    }
    return 0;
}

const struct fb_opt *opt_find(const struct fb_opt *opts, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(opts[i].name, name))
            return &opts[i];
    return NULL;
}

void opt_help(FILE *f, const struct fb_optset *sets, size_t nsets, unsigned scope)
{
    for (size_t s = 0; s < nsets; s++) {
        for (size_t i = 0; i < sets[s].n; i++) {
            const struct fb_opt *o = &sets[s].opts[i];
            if (o->section && (o->flags & scope))
                fprintf(f, "%s\n", o->section);
            if (!o->help || !(o->flags & scope))
                continue;
            char l[96], sh[8] = "";
            if (o->short_name)
                snprintf(sh, sizeof sh, "-%c, ", o->short_name);
            snprintf(l, sizeof l, "%s--%s%s%s", sh, o->name, o->metavar ? " " : "",
                     o->metavar ? o->metavar : "");
            if (strlen(l) <= 20)
                fprintf(f, "  %-21s %s\n", l, o->help);
            else
                fprintf(f, "  %s\n  %-21s %s\n", l, "", o->help);
        }
    }
    fprintf(f, "  %-21s %s\n", "-h, --help", "this help");
}

/* ---- value parsers for setters ---- */

int opt_count(const struct fb_opt *o, const char *v, int64_t max, bool allow_unlimited,
              int64_t *out, struct fb_err *err)
{
    if (allow_unlimited && (!strcmp(v, "unlimited") || !strcmp(v, "max"))) {
        *out = -1;
        return 0;
    }
    uint64_t n;
    if (fb_parse_u64(v, &n) < 0 || (max && n > (uint64_t)max))
        return fb_errf(err, FB_EXIT_SETUP, "--%s %s: expected a number%s", o->name, v,
                       allow_unlimited ? " or \"unlimited\"" : "");
    *out = (int64_t)n;
    return 0;
}

int opt_duration(const struct fb_opt *o, const char *v, int64_t *ms, struct fb_err *err)
{
    if (fb_parse_duration_ms(v, ms) < 0)
        return fb_errf(err, FB_EXIT_SETUP,
                       "--%s %s: expected a duration such as 500ms, 30s or 5m", o->name, v);
    return 0;
}
