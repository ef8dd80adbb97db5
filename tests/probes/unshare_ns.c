/* unshare_ns: unshare(2) into each namespace type other than user (that one
 * is userns_nested), including the time namespace, which clone cannot create. */
#include "probe.h"
#include <sched.h>

#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif

static const struct {
    int flag;
    const char *name;
} nss[] = {
    {CLONE_NEWNS, "mnt"},  {CLONE_NEWPID, "pid"}, {CLONE_NEWNET, "net"},
    {CLONE_NEWUTS, "uts"}, {CLONE_NEWIPC, "ipc"}, {CLONE_NEWCGROUP, "cgroup"},
    {CLONE_NEWTIME, "time"},
};

static void one(struct probe_res *r, void *arg)
{
    int i = *(int *)arg;
    if (unshare(nss[i].flag) == 0)
        res_escape(r, "%s", nss[i].name);
    else
        res_note(r, "%s=%s", nss[i].name, ename(errno));
}

static void probe_attempt(struct probe_res *r)
{
    /* One process per namespace type: an unshare that worked changes the caller. */
    for (int i = 0; i < (int)(sizeof(nss) / sizeof(nss[0])); i++) {
        int st;
        probe_fork(one, &i, r, 5, &st);
        if (WIFSIGNALED(st))
            res_note(r, "%s: killed by signal %d", nss[i].name, WTERMSIG(st));
    }
}

PROBE_MAIN("unshare_ns")
