/* cli.h — command-line parsing of the options shared by `run`, `learn` and
 * `session create` into a policy. */
#ifndef FB_CLI_H
#define FB_CLI_H

#include "policy.h"

/* Parse argv (starting after the subcommand) into p: the profile named by
 * --profile (or the default) is applied first, then every other option over
 * it. When want_cmd is set, "--" must be followed by the command, which is
 * stored in p->argv. Returns 0, or -1 with a one-line error in err. */
int cli_parse_policy(int argc, char **argv, struct fb_policy *p, bool want_cmd,
                     struct fb_err *err);

/* Text of `fluebox --help`. */
extern const char cli_usage[];

#endif
