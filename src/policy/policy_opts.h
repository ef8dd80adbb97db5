/* policy_opts.h — the options that shape a sandbox (policy_opts.c): the table shared by
 * `run`, `learn`, `session create` and session.create's "options", and
 * parsing them into a policy. The grammar itself is options.h's. */
#ifndef FB_CLI_H
#define FB_CLI_H

#include "options.h"
#include "policy.h"

/* The policy options: one row each (options.h). ctx of their setters: the
 * struct fb_policy. */
extern const struct fb_opt cli_policy_opts[];
extern const size_t cli_npolicy_opts;

/* Parse argv against the policy table (setters get p) and, if extra is
 * given, a subcommand's own table. Nothing is applied yet. Returns as
 * opt_parse (1: --help). */
int cli_parse(int argc, char **argv, struct fb_policy *p, const struct fb_optset *extra,
              unsigned scope, const char *cmd, struct fb_parsed *out, struct fb_err *err);
/* The --profile given (the last one), or NULL. */
const char *cli_profile_of(const struct fb_parsed *parsed);
/* Apply the parsed policy options to p (the profile must be loaded already),
 * in order, each recorded in p->overrides. 0 or -1 with err. */
int cli_apply(struct fb_policy *p, const struct fb_parsed *parsed, struct fb_err *err);

/* `run` and `learn`: parse argv (the arguments after the subcommand) into p:
 * the profile named by --profile (or default_profile) first, then every other
 * option over it, then the command after "--" into p->argv. extra: the
 * subcommand's own options (applied too), or NULL. On --help prints usage
 * and the options and returns 1. Returns 0, or -1 with a one-line error. */
int cli_parse_run(const char *cmd, const char *usage, int argc, char **argv,
                  const struct fb_optset *extra, const char *default_profile, struct fb_policy *p,
                  struct fb_err *err);

/* Option words (not a command line of a user: fluebox oci's annotations)
 * into p: the profile named by --profile (or the default) first, then the
 * others, with the command after "--" when want_cmd. 0, or -1 with err. */
int cli_parse_policy(int argc, char **argv, struct fb_policy *p, bool want_cmd,
                     struct fb_err *err);

/* `fluebox --help`, and the head of `fluebox run --help`. */
void cli_print_usage(FILE *f);
extern const char cli_run_usage[];

#endif
