/* cgroup_v2.c — making the controllers of a run's v2 cgroup available to it
 * (delegation), and putting back what that changed.
 *
 * cgroup v2 and the "no internal processes" rule: the controllers reach the
 * run's directory only when fluebox enables them in its own cgroup's
 * cgroup.subtree_control, and a non-root cgroup may not both hold processes
 * and pass domain controllers (memory) down. Threaded ones (pids, cpu) can
 * be written there, but that turns the cgroup into a thread root whose new
 * children are "domain invalid": the caller's cgroup would be broken. So
 * fluebox never writes cgroup.subtree_control of a cgroup that holds
 * processes (cg_v2_delegate): when fluebox is the only process there (a
 * scope or a service with Delegate=yes made for it), it first moves itself
 * into a leaf of its own, <own>/fluebox/fluebox-<pid>-self; when others are
 * there too, the limits are reported as not applied with the reason. A
 * write that fails is undone, and what fluebox enabled and its own move are
 * undone when its last run ends (cg_v2_restore): the caller's cgroup is left
 * as it was. The root cgroup may hold processes and pass controllers down;
 * what fluebox enables there stays (other cgroups may be using it by then). */
#include "cgroup_int.h"

#include <string.h>
#include <sys/stat.h>

/* The controllers (C_* bits) listed in the cgroup.subtree_control of the v2
 * cgroup at dir; -1 if it cannot be read. */
static int v2_enabled(const char *dir)
{
    char cur[256];
    cleanup_free char *f = fb_xasprintf("%s/cgroup.subtree_control", dir);
    if (fb_read_file(f, cur, sizeof cur) < 0)
        return -1;
    unsigned bits = 0;
    /* cgroup.subtree_control is a space-separated list. */
    for (char *s = cur; *s;) {
        size_t l = strcspn(s, " \n");
        for (int c = 0; c < C_N; c++)
            if (l == strlen(cg_ctrl_name[c]) && !strncmp(s, cg_ctrl_name[c], l))
                bits |= BIT(c);
        s += l;
        s += strspn(s, " \n");
    }
    return (int)bits;
}

/* Write "+memory +pids" (sign '+') or "-memory -pids" (sign '-') for the
 * controllers in bits to the cgroup.subtree_control of the v2 cgroup at dir. */
static int v2_write_control(const char *dir, char sign, unsigned bits)
{
    char want[64];
    size_t o = 0;
    want[0] = 0;
    for (int c = 0; c < C_N; c++)
        if (bits & BIT(c))
            o += (size_t)snprintf(want + o, sizeof want - o, "%s%c%s", o ? " " : "", sign,
                                  cg_ctrl_name[c]);
    cleanup_free char *f = fb_xasprintf("%s/cgroup.subtree_control", dir);
    return fb_write_file(f, want);
}

/* Enable the controllers in bits for the children of the v2 cgroup at dir;
 * *added gets those that were not enabled before. On failure whatever part
 * of the write took effect is disabled again, and errno is the write's. */
static int v2_enable(const char *dir, unsigned bits, unsigned *added)
{
    *added = 0;
    int before = v2_enabled(dir);
    if (before < 0)
        return -1;
    unsigned missing = bits & ~(unsigned)before;
    if (!missing)
        return 0;
    if (v2_write_control(dir, '+', missing) < 0) {
        int e = errno;
        int now = v2_enabled(dir);
        if (now > 0 && ((unsigned)now & missing))
            v2_write_control(dir, '-', (unsigned)now & missing);
        errno = e;
        return -1;
    }
    *added = missing;
    return 0;
}

/* The pids in the v2 cgroup at dir: 0 none, 1 only fluebox, 2 others too;
 * -1 if cgroup.procs cannot be read. */
static int v2_occupants(const char *dir)
{
    char buf[4096];
    cleanup_free char *f = fb_xasprintf("%s/cgroup.procs", dir);
    if (fb_read_file(f, buf, sizeof buf) < 0)
        return -1;
    int n = 0;
    for (char *s = buf; *s;) {
        char *end;
        long pid = strtol(s, &end, 10);
        if (end == s)
            break;
        if (pid != getpid())
            return 2;
        n = 1;
        s = end + strspn(end, "\n");
    }
    return n;
}

/* Is the v2 cgroup at dir the hierarchy's root (which has no cgroup.type)? */
static bool v2_is_root(const char *dir)
{
    cleanup_free char *f = fb_xasprintf("%s/cgroup.type", dir);
    return access(f, F_OK) < 0 && errno == ENOENT;
}

/* Undo what cg_v2_delegate changed in hierarchy h: disable the controllers it
 * enabled (in <own>/fluebox first: a controller a child passes down cannot be
 * disabled above it), move fluebox back into its own cgroup, remove its leaf
 * and the fluebox/ parent if empty. Best effort: what cannot be undone (a
 * concurrent fluebox using the same cgroups) stays, and a later run's sweep
 * removes the leaf once this process is gone. */
void cg_v2_restore(struct hier *h)
{
    cleanup_free char *parent = fb_xasprintf("%s/fluebox", h->own);
    if (h->parent_added && v2_write_control(parent, '-', h->parent_added) == 0)
        h->parent_added = 0;
    if (h->own_added && !h->parent_added && v2_write_control(h->own, '-', h->own_added) == 0)
        h->own_added = 0;
    if (h->self_leaf && !h->own_added) {
        char pid[16];
        snprintf(pid, sizeof pid, "%d", (int)getpid());
        cleanup_free char *procs = fb_xasprintf("%s/cgroup.procs", h->own);
        if (fb_write_file(procs, pid) == 0 && rmdir(h->self_leaf) == 0) {
            free(h->self_leaf);
            h->self_leaf = NULL;
        }
    }
    rmdir(parent); /* only if empty */
}

/* v2: make the controllers in bits available to the children of parent
 * (<own>/fluebox): enabled in own's and parent's cgroup.subtree_control,
 * without ever writing that of a cgroup that holds processes (see the top of
 * this file). */
int cg_v2_delegate(struct fb_cgroup *cg, struct hier *h, const char *parent, unsigned bits)
{
    unsigned added;
    int have = v2_enabled(h->own);
    if (have < 0) {
        cg_cause_errno(cg, errno);
        cg_add_reason(cg, "cgroup v2: reading %s/cgroup.subtree_control: %s", h->own,
                      strerror(errno));
        return -1;
    }
    if (bits & ~(unsigned)have) {
        int occ = v2_is_root(h->own) ? 0 : v2_occupants(h->own);
        if (occ == 2) {
            cg_set_cause(cg, "fluebox's cgroup v2 holds other processes too, so it cannot pass "
                          "controllers down");
            cg_add_reason(cg, "cgroup v2: %s holds other processes besides fluebox, so it cannot "
                           "pass controllers down (the \"no internal processes\" rule); start "
                           "fluebox in a cgroup of its own, e.g. systemd-run --user --scope -p "
                           "Delegate=yes",
                          h->own);
            errno = EBUSY;
            return -1;
        }
        if (occ == 1) {
            /* Alone here: into a leaf of our own first. */
            cleanup_free char *leaf = fb_xasprintf("%s/fluebox-%d-self", parent, (int)getpid());
            cleanup_free char *procs = fb_xasprintf("%s/cgroup.procs", leaf);
            char pid[16];
            snprintf(pid, sizeof pid, "%d", (int)getpid());
            if ((mkdir(leaf, 0755) < 0 && errno != EEXIST) || fb_write_file(procs, pid) < 0) {
                int e = errno;
                rmdir(leaf);
                errno = e;
                cg_cause_errno(cg, e);
                cg_add_reason(cg, "cgroup v2: moving fluebox into %s: %s", leaf, strerror(e));
                return -1;
            }
            h->self_leaf = fb_steal_ptr(leaf);
        } else if (occ < 0) {
            cg_cause_errno(cg, errno);
            cg_add_reason(cg, "cgroup v2: reading %s/cgroup.procs: %s", h->own, strerror(errno));
            return -1;
        }
        if (v2_enable(h->own, bits, &added) < 0) {
            int e = errno;
            cg_cause_errno(cg, e);
            cg_add_reason(cg, "cgroup v2: enabling controllers in %s/cgroup.subtree_control: %s",
                          h->own, strerror(e));
            if (!h->users)
                cg_v2_restore(h);
            errno = e;
            return -1;
        }
        if (!v2_is_root(h->own))
            h->own_added |= added;
    }
    if (v2_enable(parent, bits, &added) < 0) {
        int e = errno;
        cg_cause_errno(cg, e);
        cg_add_reason(cg, "cgroup v2: enabling controllers in %s/cgroup.subtree_control: %s",
                      parent, strerror(e));
        if (!h->users)
            cg_v2_restore(h);
        errno = e;
        return -1;
    }
    /* Only a fluebox/ parent of our own is put back; one in the root cgroup
     * may serve other fluebox processes at the same time. */
    if (h->self_leaf)
        h->parent_added |= added;
    return 0;
}

/* The controllers fluebox's own v2 cgroup offers (its cgroup.controllers),
 * read once. */
unsigned cg_v2_controllers(const struct hier *v2)
{
    static unsigned avail;
    static bool read;
    if (read || !v2 || !v2->own)
        return avail;
    read = true;
    char ctl[256] = "";
    cleanup_free char *f = fb_xasprintf("%s/cgroup.controllers", v2->own);
    fb_read_file(f, ctl, sizeof ctl);
    for (char *s = ctl; *s; s += strcspn(s, " \n"), s += strspn(s, " \n"))
        for (int c = 0; c < C_N; c++)
            if (strcspn(s, " \n") == strlen(cg_ctrl_name[c]) &&
                !strncmp(s, cg_ctrl_name[c], strlen(cg_ctrl_name[c])))
                avail |= BIT(c);
    return avail;
}
