/* keyctl: the kernel keyring is not namespaced by mount or pid namespaces; a
 * sandbox reaching it can read or plant keys in the host user's keyrings and
 * exercises a subsystem with a history of bugs (e.g. CVE-2016-0728). Only a
 * key in this process's own keyring is ever added; it dies with the process. */
#include "probe.h"
#include <linux/keyctl.h>

static void probe_attempt(struct probe_res *r)
{
    long id = syscall(SYS_keyctl, KEYCTL_GET_KEYRING_ID, KEY_SPEC_USER_KEYRING, 0);
    if (id >= 0)
        res_escape(r, "user keyring id %ld readable", id);
    else
        res_note(r, "keyctl(GET_KEYRING_ID): %s", ename(errno));
    long k = syscall(SYS_add_key, "user", "fluebox-probe", "x", 1, KEY_SPEC_PROCESS_KEYRING);
    if (k >= 0)
        res_escape(r, "add_key worked (key %ld)", k);
    else
        res_note(r, "add_key: %s", ename(errno));
    long q = syscall(SYS_request_key, "user", "fluebox-probe-none", NULL, 0);
    if (q >= 0 || errno == ENOKEY)
        res_escape(r, "request_key reached the keyring search (%s)", q >= 0 ? "found" : "ENOKEY");
    else
        res_note(r, "request_key: %s", ename(errno));
}

PROBE_MAIN("keyctl")
