/* cgroup_int.h — what cgroup.c and cgroup_at.c share: the hierarchies, the
 * directories of one cgroup and the helpers both use. Not for other files:
 * they use cgroup.h. */
#ifndef FB_CGROUP_INT_H
#define FB_CGROUP_INT_H

#include "cgroup.h"

enum { C_MEM, C_PIDS, C_CPU, C_N };
#define BIT(c) (1u << (c))

/* A cgroup hierarchy we can use: its mount and fluebox's own cgroup in it. */
struct hier {
    int version;      /* 1 or 2; 0 = unused slot */
    unsigned ctrls;   /* v1: controllers mounted here (C_* bits); v2: available in own */
    bool cpuacct;     /* v1: cpuacct co-mounted (cpu,cpuacct) */
    char *mnt;        /* mount point */
    char *own;        /* absolute path of fluebox's own cgroup, NULL if unusable */
    char *names;      /* cgroup_at.c's discovery: v1 mount options (the
                         controllers), NULL in cgroup.c's own */
    /* cgroup.c, v2: what fluebox changed to pass controllers down
     * (v2_delegate), undone when its last run here ends (v2_restore). */
    unsigned own_added;    /* controllers it enabled in own's cgroup.subtree_control */
    unsigned parent_added; /* ... in <own>/fluebox's */
    char *self_leaf;       /* <own>/fluebox/fluebox-PID-self while fluebox is in it */
    unsigned users;        /* runs with a directory in this hierarchy */
};

/* One directory of a run. */
struct cg_dir {
    const struct hier *h;
    unsigned ctrls;   /* controllers whose limits live here */
    int fd;           /* O_PATH directory fd */
    int tasks_fd;     /* v1: its "tasks" file, for the child's cgroup_join_self */
    char *path;       /* <own>/fluebox/fluebox-PID-SEQ */
    char *parent;     /* <own>/fluebox */
    char *top;        /* cgroup_at.c: the highest directory it created (removed
                         with path when empty), or NULL */
};

struct fb_cgroup {
    struct cg_dir dirs[16]; /* 4 for cgroup_create; one per hierarchy at a path */
    size_t ndirs;
    unsigned seq;            /* the SEQ of fluebox-PID-SEQ, the same in every hierarchy */
    struct fb_limits limits; /* what was asked */
    unsigned wanted;         /* controllers with a limit */
    unsigned applied;        /* enforced by a cgroup */
    unsigned fallback;       /* enforced per process by an rlimit instead */
    unsigned fallback_ok;    /* which limits may fall back to an rlimit */
    bool need_prlimit;
    char applied_s[32], not_applied_s[32], fallback_s[64];
    char reason[400];        /* why something was not applied ("" if all was) */
    char cause[160];         /* the first reason, short, for the one warning */
};

unsigned cg_wanted_of(const struct fb_limits *l);
/* Write the limits of the controllers held in d; returns the bits applied. */
unsigned cg_write_limits(struct fb_cgroup *cg, struct cg_dir *d, const struct fb_limits *l);
void cg_finish_strings(struct fb_cgroup *cg);
/* Kill whatever is in d; remove d (and d->parent, d->top when empty). */
void cg_kill_all(const struct cg_dir *d);
void cg_dir_remove(struct cg_dir *d);
int cg_rmdir_retry(const char *path);

#endif
