/* sethostname: change the hostname the host sees. The probe sets the
 * hostname (and the NIS domain name) to the value it already has, so even
 * success changes nothing, and judges by whether our uts namespace is the
 * host's (the runner passes the host's uts namespace inode). */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    char cur[256] = "";
    gethostname(cur, sizeof(cur) - 1);
    long host_uts = parg_long("utsns", 0);
    unsigned long own = own_ns_inode("uts");
    bool shared = host_uts && own == (unsigned long)host_uts;
    if (sethostname(cur, strlen(cur)) == 0) {
        if (shared)
            res_escape(r, "sethostname worked in the host's uts namespace");
        else
            res_note(r, "sethostname worked, but in a private uts namespace");
    } else {
        res_note(r, "sethostname: %s", ename(errno));
    }
    char dom[256] = "";
    if (getdomainname(dom, sizeof(dom) - 1) == 0 && setdomainname(dom, strlen(dom)) == 0 &&
        shared)
        res_escape(r, "setdomainname worked in the host's uts namespace");
    res_note(r, "hostname \"%s\", uts ns %s", cur, shared ? "shared with host" : "private");
}

PROBE_MAIN("sethostname")
