/* landlock.h — the fallback boundary, `--isolation landlock`: where no
 * namespace can be made (a container whose seccomp profile refuses them,
 * user namespaces switched off by a sysctl or by AppArmor), the command runs
 * in the caller's own namespaces under
 *   - a Landlock domain (ABI 4 or newer, Linux 6.7): the system trees, a
 *     short list of /etc and /proc files and /dev's harmless nodes read-only,
 *     the workspace, the run's private scratch directory and --bind sources
 *     read-write, --ro-bind sources and the interpreter's prefix read-only;
 *     TCP bind refused and TCP connect allowed only to the run's CONNECT
 *     proxy (with an allowlist) or to nothing; from ABI 6 signals and
 *     abstract unix sockets scoped to the sandbox;
 *   - the profile's seccomp filters, fixed rules included (no namespaces),
 *     plus one of its own (landlock_seccomp): no socket family but
 *     AF_INET/AF_INET6 stream sockets when the proxy is used (unix sockets
 *     only as socketpair), no listen(), no System V IPC or POSIX message
 *     queues (without an IPC namespace they would be the host's);
 *   - rlimits, the cgroup limits where a cgroup can be made, a clean
 *     environment and descriptors, no capabilities, no_new_privs, a new
 *     session, and as root an unprivileged uid.
 * It is never chosen silently: only with --isolation landlock or a profile's
 * "isolation": "landlock". What it does not guarantee that namespaces do is
 * said in one list (landlock_lost), which goes into the run report.
 *
 * The run's other half, the process handling, is landlock_spawn.c. */
#ifndef FB_LANDLOCK_H
#define FB_LANDLOCK_H

#include "policy.h"
#include "userns.h"

/* The oldest ABI the fallback accepts: 4 (Linux 6.7) handles truncate(2)
 * (3) and TCP (4); older ones would leave both open. */
#define FB_LANDLOCK_MIN_ABI 4

/* The Landlock ABI of the running kernel (the version landlock_create_ruleset
 * reports), or 0 with *why (static text) saying why there is none. */
int landlock_abi(const char **why);

/* How one run under Landlock is laid out: decided by the supervisor before
 * the fork (landlock_prepare), used by the child (landlock_child_setup) and
 * removed at the end (landlock_free). */
struct fb_ll {
    int abi;
    char *scratch;      /* the run's private directory (0700): tmp/, and
                           workspace/ when no --workspace was given */
    char *workspace;    /* the directory the command works in (host path) */
    char *tmpdir;       /* TMPDIR */
    char *cwd;          /* where the command starts */
    char *exec_path;    /* argv[0] under /workspace, as a host path, or NULL */
    uid_t uid;          /* the command's ids: the caller's own; as root the */
    gid_t gid;          /* workspace's owner, else the sandbox user of a range
                           of its own (userns.h), never 0 */
    bool set_ids;       /* fluebox runs as root: change to uid/gid */
    int proxy_fd;       /* the CONNECT proxy's listener (allowlist), or -1 */
    uint16_t proxy_port;
    struct fb_policy egress_policy; /* the run's policy with proxy_port, for egress.c
                                       (a shallow copy: the run's policy owns it all) */
};

/* Supervisor: check that p can run under Landlock here (ABI, options that
 * need a mount namespace, FB_MODE_RUN only), pick the command's ids (as
 * root a range is claimed into ids, released with userns_release_ids once
 * the command's processes are gone), make the scratch directory and the
 * proxy's listener. -1 with a one-line error that names the option. */
int landlock_prepare(const struct fb_policy *p, bool run_mode, struct fb_ids *ids,
                     struct fb_ll **out, struct fb_err *err);
/* Remove the scratch directory (whatever the command left in it) and free. */
void landlock_free(struct fb_ll *ll);

/* Child, before it changes ids: open what the rules name and build the
 * ruleset. Returns its fd, or -1 with err. */
int landlock_ruleset(const struct fb_policy *p, const struct fb_ll *ll, struct fb_err *err);
/* Child, with its final ids: no_new_privs, restrict itself to the ruleset
 * (closed here), and load the extra seccomp filter. */
int landlock_enforce(const struct fb_policy *p, const struct fb_ll *ll, int ruleset,
                     struct fb_err *err);

/* What does not hold under --isolation landlock for p on a kernel with this
 * ABI, one short sentence each (static text), into out (capacity cap).
 * Returns the count. */
size_t landlock_lost(const struct fb_policy *p, int abi, const char **out, size_t cap);

#endif
