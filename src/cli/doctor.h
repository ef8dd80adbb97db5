/* doctor.h — `fluebox doctor`: which of the layers fluebox builds a sandbox
 * from this machine offers. Each layer is tried for real in a throwaway
 * child process (doctor_probe.c: a user namespace is made and used, a proc
 * mounted, a seccomp filter loaded, a Landlock domain entered, a cgroup
 * created and removed), never guessed from version numbers; doctor.c says
 * for each missing layer what it costs (which guarantee is lost) and how to
 * get it (the sysctl, the AppArmor profile, the systemd delegation, the
 * container flag), as text or JSON. */
#ifndef FB_DOCTOR_H
#define FB_DOCTOR_H

#include "fb.h"
#include "userns.h"

enum fb_chk_status {
    FB_CHK_OK,       /* available */
    FB_CHK_INFO,     /* a fact, not a layer (the container, the seccomp filter above us) */
    FB_CHK_NA,       /* not used in this situation (idmapped mounts when not root) */
    FB_CHK_DEGRADED, /* available with less (cgroup limits partly; Landlock below ABI 6) */
    FB_CHK_MISSING,  /* not available */
};

struct fb_check {
    const char *id;    /* stable, for --json: "userns", "namespaces", ... */
    const char *layer; /* for people: "user namespaces" */
    enum fb_chk_status status;
    int err;           /* the errno that said no, or 0 */
    char detail[640];  /* what was seen */
    char cost[512];    /* what its absence costs ("" when available) */
    char fix[1024];    /* how to get it ("" when available) */
};

/* Facts gathered before the probes, which several fixes depend on. */
struct fb_doc_env {
    bool root;               /* euid 0 with ids beyond its own to map (not
                                uid 0 of `unshare -r`: see userns_idmode) */
    bool uid0;               /* euid 0, whatever it maps */
    bool init_userns;        /* in the initial user namespace */
    enum fb_idmode idmode;   /* which ids fluebox run maps here */
    int64_t outer_uid;       /* our uid one user namespace up, -1 unmapped */
    uint64_t mapped_uids;    /* how many ids our user namespace maps */
    uid_t uid;
    gid_t gid;
    bool in_container;
    char runtime[64];        /* "docker", "containerd", ... or "" */
    char evidence[320];      /* why we think so */
    int seccomp_filters;     /* filters already on this process (a runtime's) */
    bool nnp;                /* no_new_privs already set */
    bool cap_sys_admin;      /* in the effective set */
    char apparmor[128];      /* this process's AppArmor label, or "" */
    long unpriv_clone;       /* kernel.unprivileged_userns_clone, -1 absent */
    long max_userns;         /* user.max_user_namespaces, -1 absent */
    long aa_restrict;        /* kernel.apparmor_restrict_unprivileged_userns, -1 absent */
    int clone3_errno;        /* clone3 refused with this (ENOSYS: a runtime's seccomp) */
    char exe[512];           /* this binary, for the AppArmor profile */
};

void doctor_env(struct fb_doc_env *e);

/* The probes. ws: the workspace directory whose filesystem is checked. */
void doctor_userns(const struct fb_doc_env *e, bool unprivileged, struct fb_check *c);
void doctor_namespaces(const struct fb_doc_env *e, struct fb_check *c);
void doctor_procfs(const struct fb_doc_env *e, struct fb_check *c);
void doctor_pivot_root(const struct fb_doc_env *e, struct fb_check *c);
/* As root with a range of ids (FB_IDMODE_RANGE): fluebox prepares the
 * binds in the supervisor, which needs CAP_SYS_ADMIN over the mount
 * namespace it runs in. */
void doctor_root_mounts(const struct fb_doc_env *e, struct fb_check *c);
void doctor_seccomp(const struct fb_doc_env *e, bool notify, struct fb_check *c);
void doctor_idmap(const struct fb_doc_env *e, const char *ws, struct fb_check *c);
void doctor_overlay(const struct fb_doc_env *e, struct fb_check *c);
void doctor_cgroup(const struct fb_doc_env *e, struct fb_check *c);
void doctor_landlock(const struct fb_doc_env *e, struct fb_check *c, int *abi);

/* The AppArmor profile that grants the binary at path the userns
 * permission (Ubuntu 23.10+ restricts unprivileged user namespaces to
 * programs whose profile grants it, as it does for bubblewrap). */
void doctor_apparmor_profile(FILE *f, const char *path);

int cmd_doctor(int argc, char **argv);

#endif
