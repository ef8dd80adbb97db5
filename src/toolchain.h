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

#include "policy.h"

#include <jansson.h>
#include <stdio.h>

/* The caller's view of the host: where names are looked up. */
struct fb_callenv {
    const char *path;  /* the caller's PATH; NULL or "" = /usr/local/bin:/usr/bin:/bin */
    const char *cwd;   /* the caller's directory (.python-version and the like are
                          looked up from it); NULL = none */
    char *const *envp; /* the caller's environment, "K=V", NULL-terminated (HOME,
                          PYENV_VERSION, VIRTUAL_ENV, the TLS settings ...); may be NULL */
};

/* This process's own: PATH, the current directory (into cwd), environ. */
void callenv_self(struct fb_callenv *ce, char *cwd, size_t cap);

/* The caller's value of K, or NULL. */
const char *callenv_get(const struct fb_callenv *ce, const char *k);

/* The variables of the caller's environment the resolution reads (HOME,
 * VIRTUAL_ENV, the version managers' settings, the TLS trust settings): a
 * client sends these and no others. */
bool toolchain_env_name(const char *k);

/* The caller as a session.create "caller" object: {"path", "cwd", "env"},
 * env limited to toolchain_env_name(). */
json_t *callenv_to_json(const struct fb_callenv *ce);

/* Read a "caller" object into ce; ce's strings borrow from j, *envp (the
 * filtered "K=V" list, NULL-terminated) is the caller's to free with
 * callenv_free_envp(). Returns NULL, or the message of what is wrong. */
const char *callenv_from_json(json_t *j, struct fb_callenv *ce, char ***envp);
void callenv_free_envp(char **envp);

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
