/* options.h — the one command-line grammar of fluebox: tables of options
 * (one row per option: name, argument, where it is accepted, a setter, a
 * help line), parsed with getopt_long for every subcommand, and the --help
 * text generated from the same rows.
 *
 * A subcommand parses a list of tables, each with its own context: `run`
 * takes policy_opts.c's policy table (the options that shape a sandbox) and
 * nothing else; `learn` adds --out; `session create` takes the policy
 * rows a session accepts plus --socket, --ttl, ...; `exec`, `cp`, `serve`
 * have tables of their own. Every subcommand accepts --help (-h) and
 * `--opt=value` as well as `--opt value`; options stop at "--" or at the
 * first operand.
 *
 * Parsing only collects (row, value) pairs; the caller applies them
 * (opt_apply), which lets `run` apply --profile before everything else. */
#ifndef FB_OPTIONS_H
#define FB_OPTIONS_H

#include "fb.h"

/* What an option's value is. Host paths matter to clients that forward
 * options to the server (made absolute: the server has its own cwd). */
enum fb_opt_arg {
    FB_ARG_NONE,      /* a flag */
    FB_ARG_VALUE,     /* a value */
    FB_ARG_HOST_PATH, /* a path on the host */
    FB_ARG_HOST_BIND, /* SRC[:DST], SRC on the host */
    FB_ARG_PROFILE,   /* a profile name, or a profile file on the host */
};

/* Where an option is accepted (flags of a row). The session scopes are an
 * allow-list: a row without them is refused for sessions. */
enum {
    FB_OPT_RUN = 1 << 0,     /* fluebox run / learn */
    FB_OPT_SESSION = 1 << 1, /* a session of the server's own uid (or root) */
    FB_OPT_FOREIGN = 1 << 2, /* also a session of another uid, by default
                                (the server's configuration may narrow it) */
    FB_OPT_ANY = FB_OPT_RUN | FB_OPT_SESSION | FB_OPT_FOREIGN,
    FB_OPT_FIRST = 1 << 4,   /* applied before all others (--profile) */
    FB_OPT_QUIET = 1 << 5,   /* not listed among a policy's overrides */
    /* For opt_parse's scope argument only: options may follow operands
     * ("session rm ID --socket S"). Without it options stop at the first
     * operand, which begins a command line of its own. */
    FB_PARSE_PERMUTE = 1 << 8,
};

struct fb_opt {
    const char *name;  /* long name, without "--" */
    char short_name;   /* single-letter alias, or 0 */
    enum fb_opt_arg arg;
    const char *metavar; /* for --help ("SIZE"); NULL for flags */
    unsigned flags;    /* FB_OPT_* */
    /* Store the value (NULL for flags) into ctx. On error, a one-line
     * message that names the option and the value. */
    int (*set)(void *ctx, const struct fb_opt *o, const char *val, struct fb_err *err);
    const char *help;    /* one line; NULL: an alias, not listed */
    const char *section; /* a heading printed before this row in --help */
};

/* One table and the context its setters receive. */
struct fb_optset {
    const struct fb_opt *opts;
    size_t n;
    void *ctx;
};

/* One parsed option. */
struct fb_optval {
    const struct fb_opt *o;
    void *ctx;
    const char *val; /* points into argv; NULL for flags */
};

struct fb_parsed {
    struct fb_optval *v;
    size_t n;
    char **args;   /* the operands (after the options, or all of them with
                      FB_PARSE_PERMUTE), pointing into argv; NULL-terminated */
    int nargs;
    bool dashdash; /* options ended with "--" */
};

/* Parse argv[0..argc) (the arguments after the subcommand) against the
 * tables. scope: the FB_OPT_* bit a row needs to be accepted here; a row
 * without it is refused ("--report is not available for sessions"). cmd
 * names the subcommand in the hint of an unknown option ("see fluebox CMD
 * --help"). Returns 0, 1 when --help (-h) was asked for, or -1 with a
 * one-line error (exit code 125). Free out with opt_parsed_free. */
int opt_parse(int argc, char **argv, const struct fb_optset *sets, size_t nsets,
              unsigned scope, const char *cmd, struct fb_parsed *out, struct fb_err *err);
void opt_parsed_free(struct fb_parsed *p);

/* Call the setters of the parsed options of one table (its ctx), in order.
 * Returns 0 or -1 (err from the setter). */
int opt_apply(const struct fb_parsed *p, const void *ctx, struct fb_err *err);

/* The option list for --help: every row of the tables with the scope bit
 * and a help line, grouped by section headings. */
void opt_help(FILE *f, const struct fb_optset *sets, size_t nsets, unsigned scope);

/* Find a row by long name in a table (no "--"). */
const struct fb_opt *opt_find(const struct fb_opt *opts, size_t n, const char *name);

/* The name among names[0..n) closest to word (a small edit distance, for
 * "did you mean"), or NULL when none is close. */
const char *opt_closest(const char *word, const char *const *names, size_t n);

/* Convenience parsers for setters; each fills a message naming the option. */
int opt_count(const struct fb_opt *o, const char *v, int64_t max, bool allow_unlimited,
              int64_t *out, struct fb_err *err);
int opt_duration(const struct fb_opt *o, const char *v, int64_t *ms, struct fb_err *err);

#endif
