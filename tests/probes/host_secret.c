/* host_secret: read a secret file the runner wrote on the host, outside every
 * bind, by its host path; and the host's /etc/shadow. */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    const char *secret = parg("secret");
    int e;
    if (!secret) {
        res_skip(r, "no secret= given");
        return;
    }
    if (read_secret_at(AT_FDCWD, secret, &e))
        res_escape(r, "read %s", secret);
    else
        res_note(r, "%s: %s", secret, e ? ename(e) : "other content");

    char buf[64];
    if (read_small("/etc/shadow", buf, sizeof(buf)) > 0)
        res_escape(r, "read /etc/shadow");
    else
        res_note(r, "/etc/shadow: %s", ename(errno));
}

PROBE_MAIN("host_secret")
