/* callenv.h — the caller's environment: where a sandbox's programs are
 * looked up (toolchain.h). For `fluebox run`, this process's; for a session,
 * the creating client's, sent as session.create "caller" (docs/protocol.md)
 * and limited to the variables the resolution reads. */
#ifndef FB_CALLENV_H
#define FB_CALLENV_H

#include "fb.h"

#include <jansson.h>

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

/* The caller's home: $HOME made real, else the passwd entry of our uid
 * (read from /etc/passwd: no NSS in a static binary). malloc'ed or NULL. */
char *callenv_home(const struct fb_callenv *ce);

#endif
