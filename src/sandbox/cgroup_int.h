/* cgroup_int.h — what the cgroup files share (cgroup.c, cgroup_hier.c,
 * cgroup_v2.c, cgroup_limits.c, cgroup_attach.c, and cgroup_at.c): the
 * hierarchies, the directories of one cgroup and the helpers they use. Not
 * for other files: they use cgroup.h. */
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
                         controllers), NULL in cgroup_hier.c's own */
    /* cgroup_v2.c: what fluebox changed to pass controllers down
     * (cg_v2_delegate), undone when its last run here ends (cg_v2_restore). */
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
    bool parked;             /* cgroup_park: the dirs' fds are opened per use */
};

/* A parked cgroup's directories, opened for one call (cg_unpark returns
 * whether it did; cg_repark closes them again then). */
bool cg_unpark(struct fb_cgroup *cg);
void cg_repark(struct fb_cgroup *cg, bool was);

/* "memory", "pids", "cpu", by C_* index (cgroup_hier.c). */
extern const char *const cg_ctrl_name[C_N];

/* ---- cgroup.c: the run's cgroup ---- */
unsigned cg_wanted_of(const struct fb_limits *l);
void cg_finish_strings(struct fb_cgroup *cg);
/* Kill whatever is in d; remove d (and d->parent, d->top when empty). */
void cg_kill_all(const struct cg_dir *d);
void cg_dir_remove(struct cg_dir *d);
int cg_rmdir_retry(const char *path);
void cg_sleep_ms(long ms);
/* Why something was not applied: appended to cg->reason ("; " between),
 * and the first short cause kept in cg->cause for the one warning. */
void cg_add_reason(struct fb_cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void cg_set_cause(struct fb_cgroup *cg, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* The short cause of a failed mkdir/write/attach on cgroupfs. */
void cg_cause_errno(struct fb_cgroup *cg, int e);
/* "memory,pids" for the C_* bits in bits. */
void cg_names_of(unsigned bits, char *buf, size_t cap);

/* ---- cgroup_hier.c: the hierarchies (found once per process) ---- */
void cg_discover(void);
struct hier *cg_find_v2(void);
struct hier *cg_find_v1(int c);
/* Whether tok is one of the comma-separated names of list. */
bool cg_has_token(const char *list, const char *tok);
/* h as one of cg_discover's hierarchies (writable), or NULL when it is
 * not one (cgroup_at.c's). */
struct hier *cg_own_hier(const struct hier *h);
/* Remove what a SIGKILLed fluebox left in parent (<own>/fluebox of h),
 * the first time this process uses h. */
void cg_sweep_once(const struct hier *h, const char *parent);

/* ---- cgroup_v2.c: passing controllers down ---- */
/* The controllers fluebox's own v2 cgroup offers (C_* bits), read once. */
unsigned cg_v2_controllers(const struct hier *v2);
/* Make the controllers in bits available to the children of parent
 * (<own>/fluebox); -1 with the reason recorded in cg and errno set. */
int cg_v2_delegate(struct fb_cgroup *cg, struct hier *h, const char *parent, unsigned bits);
/* Undo what cg_v2_delegate changed in h (best effort). */
void cg_v2_restore(struct hier *h);

/* ---- cgroup_limits.c ---- */
/* Write the limits of the controllers held in d; returns the bits applied. */
unsigned cg_write_limits(struct fb_cgroup *cg, struct cg_dir *d, const struct fb_limits *l);

#endif
