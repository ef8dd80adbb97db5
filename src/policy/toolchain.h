/* toolchain.h — which host trees are bound for the programs a sandbox runs,
 * and the environment that points at them (the inside PATH, VIRTUAL_ENV,
 * the TLS trust settings).
 *
 * The caller's environment (struct fb_callenv) decides: the command and the
 * interpreters agents call by name (python3, node, npm, ...) are looked up
 * on the caller's PATH, version managers' shims are resolved to the program
 * they would run, and for each program found the smallest tree that runs it
 * is bound read-only at its own path (toolchain.c says which). Everything
 * derived lands in the policy (tool_binds, tool_path, tool_env) with the
 * reason, for `fluebox run --print-path` and the report. */
#ifndef FB_TOOLCHAIN_H
#define FB_TOOLCHAIN_H

#include "callenv.h"
#include "policy.h"

#include <jansson.h>
#include <stdio.h>

/* The "toolchain" object of a report or a session's info: path, exec,
 * binds (src, dst, why), env (names). */
json_t *toolchain_json(const struct fb_policy *p);

/* The names whose programs follow the caller's PATH into the sandbox besides
 * the command (NULL-terminated). */
extern const char *const toolchain_names[];

/* The TLS trust settings passed by default (NULL-terminated). */
extern const char *const toolchain_trust_vars[];

/* Fill p->exec_path, p->tool_binds, p->tool_path and p->tool_env from the
 * caller's environment. Fails (FB_EXIT_SETUP, one line naming --ro-bind)
 * when the command lives where fluebox cannot tell what it needs. */
int toolchain_resolve(struct fb_policy *p, const struct fb_callenv *ce, struct fb_err *err);

/* `fluebox run --print-path`: the inside PATH, the command, each bind and
 * variable with its reason. */
void toolchain_print(const struct fb_policy *p, FILE *f);

#endif
