/* cgroup.h — resource limits through cgroups, v2 or v1 behind one interface.
 *
 * cgroup.c decides which hierarchy to use (v2 when the unified hierarchy has
 * the memory/pids/cpu controllers, v1 per controller otherwise), creates the
 * run's cgroup as fluebox-<unique> under "<fluebox's own cgroup>/fluebox",
 * writes the limits, attaches the sandbox, reads usage back for the report and
 * removes everything at the end. It never mounts, unmounts or rebinds a
 * hierarchy. Limits that cannot be applied (no delegation) are recorded in
 * the result, not fatal, unless the policy requires them. */
#ifndef FB_CGROUP_H
#define FB_CGROUP_H

#include "policy.h"

struct fb_cgroup;

/* What the cgroup measured, for the report. -1 = not available. */
struct fb_cg_usage {
    int64_t mem_peak;      /* bytes */
    int64_t mem_current;
    int64_t pids_peak;
    int64_t cpu_usage_us;  /* total CPU time of the group */
    int64_t cpu_user_us, cpu_system_us; /* its user and system parts */
    bool oom_killed;       /* at least one OOM kill inside the group */
    int64_t oom_kills;
    int64_t pids_max_hits; /* forks refused by pids.max (pids.events "max") */
    int64_t cpu_throttled_us; /* time the CPU quota held the group back */
};

/* Create the cgroup and apply p->limits. On success *out is set (it may be a
 * cgroup with no controllers at all when nothing could be applied; then
 * cgroup_not_applied() names what is missing). Returns -1 only on a hard
 * error or when p->limits.require is set and something could not be applied. */
int cgroup_create(const struct fb_policy *p, struct fb_cgroup **out, struct fb_err *err);

/* Whether p's cgroup is best made before the clone: when one v2 directory
 * will hold every controller p limits, so that clone3(CLONE_INTO_CGROUP)
 * places the child there (moving a process into a v2 cgroup afterwards
 * takes the lock described at cgroup_join_self), and with --require-limits
 * (its error comes before anything starts). Otherwise (v1, no
 * delegation) spawn.c makes it while the child builds its root and the
 * child joins it before init runs anything (cgroup_attach_late). */
bool cgroup_before_clone(const struct fb_policy *p);

/* A directory fd for clone3(CLONE_INTO_CGROUP) when the v2 backend holds every
 * controller in use, or -1. */
int cgroup_clone_fd(const struct fb_cgroup *cg);

/* In the child, right after the clone: join the v1 cgroups of the run by
 * writing "0" to their "tasks" files (opened by cgroup_create). A task that
 * moves itself skips the global lock that moving another task takes, which
 * costs an RCU grace period (5-15 ms on an idle machine) per move. Closes the
 * child's copies of those files. No-op without v1 directories. */
int cgroup_join_self(const struct fb_cgroup *cg, struct fb_err *err);

/* The calling process (a helper working for the sandbox: childjob.h) joins
 * every hierarchy's cgroup of cg, so that what it allocates is charged to
 * the sandbox. Not for the sandbox's own child (cgroup_join_self). */
int cgroup_enter(const struct fb_cgroup *cg, struct fb_err *err);

/* Move pid into the cgroup (every hierarchy that it did not join itself with
 * cgroup_join_self); a hierarchy it cannot join becomes a per-process
 * fallback (cgroup_fallback_limits). pid must not have started the command
 * yet. Called whenever cgroup_clone_fd() returned -1. */
int cgroup_attach(struct fb_cgroup *cg, pid_t pid, struct fb_err *err);

/* For a child made before its cgroup: the v1 "tasks" files it joins by
 * itself (cgroup_join_fds), moved into fds (*n of them, at most cap; the
 * caller sends and closes them); every other directory gets pid as
 * cgroup_attach() does it. The child must not have started the command. */
int cgroup_attach_late(struct fb_cgroup *cg, pid_t pid, int *fds, size_t cap, size_t *n,
                       struct fb_err *err);
/* In that child: write "0" to each of those files (a task moving itself,
 * without the global lock). The caller closes them. */
int cgroup_join_fds(const int *fds, size_t n, struct fb_err *err);

/* The rlimits that stand in for limits no cgroup holds, for the sandbox's
 * init to set on itself before it runs anything: RLIMIT_NPROC for pids,
 * RLIMIT_DATA (bytes) for memory; 0 = none. cg may be NULL. */
void cgroup_fallback_limits(const struct fb_cgroup *cg, int64_t *nproc, int64_t *data);

/* Read usage counters. */
void cgroup_usage(struct fb_cgroup *cg, struct fb_cg_usage *u);
/* The group's OOM kills so far (memory.events or memory.oom_control's
 * oom_kill), -1 when it has no memory controller or no such counter. */
int64_t cgroup_oom_kills(struct fb_cgroup *cg);

/* Comma-separated names of limits applied / not applied ("memory,pids", ...).
 * Pointers stay valid until cgroup_destroy. */
const char *cgroup_applied(const struct fb_cgroup *cg);
const char *cgroup_not_applied(const struct fb_cgroup *cg);
const char *cgroup_backend(const struct fb_cgroup *cg); /* "v2", "v1", "v1+v2", "none" */
/* Limits enforced per process instead ("memory:RLIMIT_DATA,pids:RLIMIT_NPROC"),
 * and why something was not applied ("" when everything was). */
const char *cgroup_fallbacks(const struct fb_cgroup *cg);
const char *cgroup_reason(const struct fb_cgroup *cg);

/* Change limits of a live cgroup (sessions taken from the warm pool).
 * Returns -1 with err when one cannot be changed in place (its controller
 * was not in use when the cgroup was made, or an rlimit stands in for it):
 * the caller then needs a fresh sandbox. */
int cgroup_set_limits(struct fb_cgroup *cg, const struct fb_limits *l, struct fb_err *err);

/* Kill every process left in the cgroup, remove the directories, free. NULL ok. */
void cgroup_destroy(struct fb_cgroup *cg);

/* Close the cgroup's directory descriptors; the calls above open them
 * again for as long as each needs them (by path: the directories are
 * fluebox's, under its own cgroup). A server with thousands of idle
 * sandboxes holds none for them. Before it, the cgroup must be joined. */
void cgroup_park(struct fb_cgroup *cg);

/* ---- a cgroup at a given path (cgroup_at.c), for fluebox oci ---- */

/* Make the cgroup at path (the spec's linux.cgroupsPath: "/a/b" below each
 * hierarchy's root, "a/b" below the caller's own cgroup) in every mounted
 * hierarchy, with the parents it lacks, and apply p->limits there. A limit
 * that cannot be applied is an error; nothing is left behind then. */
int cgroup_create_at(const struct fb_policy *p, const char *path, struct fb_cgroup **out,
                     struct fb_err *err);
/* Open the directories of an existing one (a later command). */
int cgroup_open_at(const char *path, struct fb_cgroup **out, struct fb_err *err);
/* The highest directories cgroup_create_at made (absolute paths, valid
 * until the cgroup is freed): kept by the caller, given back with
 * cgroup_set_tops() so that cgroup_destroy() removes them when empty. */
size_t cgroup_tops(const struct fb_cgroup *cg, const char **tops, size_t cap);
void cgroup_set_tops(struct fb_cgroup *cg, const char *const *tops, size_t n);
/* Write or read a file of the directory holding controller ctrl ("memory",
 * "cpu", "cpuset", "freezer", ...; the v2 directory holds them all). */
int cgroup_set_file(const struct fb_cgroup *cg, const char *ctrl, const char *file,
                    const char *value, struct fb_err *err);
ssize_t cgroup_get_file(const struct fb_cgroup *cg, const char *ctrl, const char *file,
                        char *buf, size_t cap);
/* 1 or 2: the version of the hierarchy holding ctrl; 0 none. */
int cgroup_version_of(const struct fb_cgroup *cg, const char *ctrl);
/* The processes in it (malloc'ed), and a signal to each. */
int cgroup_procs(const struct fb_cgroup *cg, pid_t **out, size_t *n);
int cgroup_signal_all(const struct fb_cgroup *cg, int sig);
/* Freeze or thaw every process in it (v1 freezer, v2 cgroup.freeze), and
 * whether it is frozen. */
int cgroup_freeze(const struct fb_cgroup *cg, bool frozen, struct fb_err *err);
int cgroup_frozen(const struct fb_cgroup *cg);
/* Free without removing anything (the cgroup outlives this process). */
void cgroup_close(struct fb_cgroup *cg);

/* Remove stale fluebox-* cgroups left by a fluebox that was SIGKILLed:
 * those whose creating process is gone. Cheap; called at start-up. */
void cgroup_sweep_stale(void);

#endif
