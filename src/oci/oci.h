/* oci.h — fluebox oci: a runc-compatible OCI runtime (docs/oci.md).
 *
 * containerd's runc shim (io.containerd.runc.v2 with BinaryName), Docker and
 * the OCI conformance suite call it as they call runc:
 *     fluebox oci [--root DIR] [--log FILE] [--log-format json] COMMAND ...
 * (or through a link named fluebox-oci). A container runs with the boundary
 * of `fluebox run`: its own user namespace with no host root mapped,
 * fluebox's fixed seccomp rules and the profile's, the egress allowlist,
 * the run report; the OCI spec says what runs and what it sees.
 *
 * Files:
 *   oci.c         command line, logging (--log), the commands
 *   oci_spec.c    config.json and process.json (jansson) -> struct oci_spec
 *   oci_policy.c  the spec's subset and the run.fluebox.* annotations ->
 *                 struct fb_policy, id maps, capabilities
 *   oci_state.c   the state directory under --root: one JSON file per
 *                 container, written atomically, commands serialised by flock
 *   oci_sup.c     create: the detached supervisor that spawns the sandbox
 *                 (spawn.c) and serves start
 *   oci_init.c    the container's init: builds nothing itself, waits for
 *                 start, runs the process as the spec says, reports its exit
 *   oci_mount.c   the container's root: an overlay over the idmapped bundle
 *                 rootfs, the spec's mounts, masked and read-only paths
 *   oci_exec.c    exec into a running container, the terminal (console
 *                 socket), ps
 *   oci_seccomp.c linux.seccomp -> a third, stacked filter (libseccomp)
 *   oci_hooks.c   the spec's hooks
 *   oci_upper.c   the root's upper layer on disk before Linux 6.6: an ext4
 *                 of run.fluebox.disk size on a loop device
 *
 * Processes (create):
 *   shim -> fluebox oci create (P) -> fork: supervisor (S, setsid)
 *   S: sandbox_spawn_ext(CLONE_PARENT) -> init is P's child, so when P
 *   exits (after writing --pid-file) init becomes the shim's child: the
 *   shim reaps it for the exit status, as with runc. S outlives P and
 *   serves start requests on <root>/<id>/sup.sock, the egress relay, and
 *   writes the report when init exits. */
#ifndef FB_OCI_H
#define FB_OCI_H

#include "policy.h"

#include <jansson.h>

/* ctl messages between the supervisor and the container's init. */
enum {
    FB_MSG_OCI_START = 200, /* supervisor -> init: run the process */
    FB_MSG_OCI_STARTED,     /* init -> supervisor: it runs (pid), or code != 0 */
    FB_MSG_OCI_PTY,         /* init -> supervisor: the terminal's master (fd) */
    FB_MSG_OCI_BIND,        /* init -> supervisor: the source of mounts[code], please;
                               supervisor -> init: here it is (fd) */
};

/* ---- logging (oci.c) ---- */

/* Errors go to stderr and, with --log, as the last {"level":"error",...}
 * line of the log file, which containerd shows to its user. */
void oci_log_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void oci_log_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void oci_log_debug(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* ---- the spec (oci_spec.c) ---- */

enum { OCI_CAP_BOUNDING, OCI_CAP_EFFECTIVE, OCI_CAP_INHERITABLE, OCI_CAP_PERMITTED,
       OCI_CAP_AMBIENT, OCI_CAP_NSETS };

struct oci_rlimit {
    int resource;
    uint64_t soft, hard;
};

struct oci_process {
    char **args;
    char **env;
    char *cwd;
    uint32_t uid, gid;
    uint32_t *gids;      /* additionalGids */
    size_t ngids;
    int64_t umask;       /* -1: not set */
    bool terminal;
    unsigned rows, cols; /* consoleSize, 0 = not set */
    bool caps_set;
    uint64_t caps[OCI_CAP_NSETS];
    bool no_new_privs;   /* as the spec says (every mount is nosuid anyway) */
    struct oci_rlimit *rlimits;
    size_t nrlimits;
    bool has_oom_score;
    int oom_score;
};

struct oci_mount {
    char *dst;           /* absolute */
    char *type;          /* "bind" for binds, "" when unset */
    char *src;           /* absolute for binds (made so against the bundle) */
    unsigned long flags; /* MS_RDONLY, MS_NOSUID, ... */
    unsigned long clear; /* flags the options turn off (rw, suid, dev, exec) */
    bool bind, recursive;
    unsigned long propagation; /* MS_PRIVATE, MS_SHARED ... or 0 */
    char *data;          /* the other options, comma-separated ("mode=755,size=65536k") */
};

struct oci_ns {
    int type;            /* CLONE_NEW* */
    char *path;          /* join this one; NULL: a new one */
};

struct oci_idmap {
    uint32_t inside, host, size;
};

struct oci_hook {
    char *path;
    char **args;
    char **env;
    int timeout;         /* seconds, 0 none */
};

enum { OCI_HOOK_PRESTART, OCI_HOOK_CREATE_RUNTIME, OCI_HOOK_CREATE_CONTAINER,
       OCI_HOOK_START_CONTAINER, OCI_HOOK_POSTSTART, OCI_HOOK_POSTSTOP, OCI_HOOK_NKINDS };

struct oci_spec {
    json_t *json;        /* the whole config, owned */
    char *bundle;        /* absolute */
    char *root;          /* rootfs, absolute */
    bool root_ro;
    char *hostname;
    struct oci_process proc;
    struct oci_mount *mounts;
    size_t nmounts;
    struct oci_ns ns[8];
    size_t nns;
    struct oci_idmap *uidmap, *gidmap;
    size_t nuidmap, ngidmap;
    char **masked, **readonly;
    size_t nmasked, nreadonly;
    char *cgroups_path;  /* NULL: not set */
    unsigned long rootfs_propagation;
    json_t *devices;     /* linux.devices, borrowed from json */
    json_t *resources;   /* borrowed from json */
    json_t *seccomp;
    json_t *sysctl;
    json_t *annotations;
    struct oci_hook *hooks[OCI_HOOK_NKINDS];
    size_t nhooks[OCI_HOOK_NKINDS];
};

/* A JSON file ("-": stdin) as the runtimes write them: numbers above
 * INT64_MAX (RLIM_INFINITY) are read as -1. */
json_t *oci_json_load(const char *path, json_error_t *je);
/* Read bundle/config.json (or, with path, that file). */
int oci_spec_load(const char *bundle, const char *path, struct oci_spec *s, struct fb_err *err);
/* A process object (process.json of exec, or config's "process"). */
int oci_process_parse(json_t *j, struct oci_process *pr, const char *where, struct fb_err *err);

/* oci_schema.c: the spec's JSON types, checked before it is read; the
 * annotations (kept in state.json) are bounded: Kubernetes allows 256 KiB. */
#define OCI_ANNOTATIONS_MAX (1024 * 1024)

/* oci_cgview.c: /sys/fs/cgroup inside, the container's own cgroup read-only
 * (own_ns: the container has its own cgroup namespace); empty read-only
 * tmpfs mounts (for masking; one with the fs/cgroup mount point for /sys). */
int oci_cgroup_view(int rootfd, const char *dst, bool own_ns, struct fb_err *err);
int oci_empty_ro(const char *what, struct fb_err *err);
int oci_sysfs_stub(const char *what, struct fb_err *err);
int oci_schema_spec(json_t *j, struct fb_err *err);
int oci_schema_process(json_t *j, const char *where, struct fb_err *err);
void oci_process_free(struct oci_process *pr);
void oci_spec_free(struct oci_spec *s);
/* "CAP_SYS_ADMIN" -> 21, -1 unknown; and back. */
int oci_cap_number(const char *name);
const char *oci_cap_name(int cap);
/* Does the spec name a namespace of type (CLONE_NEW*)? Its entry, or NULL. */
const struct oci_ns *oci_spec_ns(const struct oci_spec *s, int type);

/* ---- policy (oci_policy.c) ---- */

/* The container's policy: the profile named by run.fluebox.profile (or the
 * default), the other run.fluebox.* annotations as `fluebox run` options,
 * then the spec: what runs, its limits, hostname, namespaces. existing:
 * the container was created already (exec): its record (run.fluebox.record)
 * exists and is its supervisor's; p->record then only names it. */
int oci_policy(const struct oci_spec *s, struct fb_policy *p, bool existing, struct fb_err *err);
/* A namespace a spec joins by path (fd: the opened path) that is the
 * runtime's own (or its pid 1's), i.e. the host's: refused (-1, err set)
 * unless it is the network one and p's profile permits --net host; never
 * for pid, ipc, uts, cgroup or user. */
int oci_ns_check_host(int fd, int type, const char *path, const struct fb_policy *p,
                      struct fb_err *err);
/* The uid_map and gid_map text of the container (malloc'ed): the spec's
 * mappings when it has a user namespace with them, else the whole range
 * 0..65535 mapped to fluebox's host range. Host root is never mapped. */
int oci_id_maps(const struct oci_spec *s, uint32_t host_base, char **uid_map, char **gid_map,
                struct fb_err *err);
/* Set from the binary's name (fluebox-oci-strict): the profile every
 * container of this runtime runs, which annotations cannot change. */
extern const char *oci_default_profile;
/* Capabilities the spec may grant inside the container's user namespace;
 * asking for another is an error naming it. */
int oci_caps_check(const struct oci_process *pr, struct fb_err *err);

/* oci_podnet.c: a spec that joins a network namespace by path (a pod's) and
 * asks for the allowlist: OWNER, the pod's sandbox container, whose
 * supervisor takes that namespace and serves the relay for the pod; MEMBER,
 * another container of the pod, which may join only a namespace its
 * sandbox container (a fluebox container of the same root, running) owns
 * with the same allowlist (checked by oci_podnet_member_check, -1 with err
 * otherwise). */
enum oci_podnet { OCI_PODNET_NONE, OCI_PODNET_OWNER, OCI_PODNET_MEMBER };
enum oci_podnet oci_podnet_role(const struct oci_spec *s);
int oci_podnet_member_check(const char *root, const struct oci_spec *s, struct fb_err *err);

/* ---- state (oci_state.c) ---- */

enum oci_status { OCI_CREATING, OCI_CREATED, OCI_RUNNING, OCI_PAUSED, OCI_STOPPED };

struct oci_state {
    char *id;
    char *dir;           /* <root>/<id> */
    int dirfd;           /* locked (flock) while held */
    json_t *json;        /* state.json */
    pid_t pid;           /* init, 0 until created */
    uint64_t pid_start;  /* its start time (/proc/PID/stat), against pid reuse */
    pid_t sup;           /* the supervisor */
    uint64_t sup_start;
    bool started;
    char *bundle;
    char *cgroup;        /* cgroup path, or NULL */
};

/* The id's own rules: [A-Za-z0-9_+.-]+, not "." or "..", at most 1024. */
int oci_id_check(const char *id, struct fb_err *err);
/* Make <root>/<id> (an error when it exists) and lock it. */
int oci_state_create(const char *root, const char *id, struct oci_state *st, struct fb_err *err);
/* Open and lock an existing one; read state.json. */
int oci_state_open(const char *root, const char *id, struct oci_state *st, struct fb_err *err);
/* Write state.json from st (atomically: a temporary file renamed). */
int oci_state_save(struct oci_state *st, struct fb_err *err);
/* Unlock and free (the directory stays). */
void oci_state_close(struct oci_state *st);
/* Remove the directory and everything in it, then close. */
void oci_state_remove(struct oci_state *st);
enum oci_status oci_state_status(const struct oci_state *st);
const char *oci_status_name(enum oci_status s);
/* The OCI state object (ociVersion, id, status, pid, bundle, annotations). */
json_t *oci_state_json(const struct oci_state *st, enum oci_status s);
/* Start time of pid (field 22 of /proc/PID/stat); 0 when it is gone or a
 * zombie. */
uint64_t oci_pid_start(pid_t pid);
/* pid is alive and is the process that had start time start. */
bool oci_pid_alive(pid_t pid, uint64_t start);
/* List the ids under root (for `list`). */
int oci_state_list(const char *root, char ***ids, size_t *n);

/* ---- the commands' pieces ---- */

struct oci_create_args {
    const char *root, *id, *bundle, *pid_file, *console_socket;
    int preserve_fds;
};
int oci_create(const struct oci_create_args *a);         /* oci_sup.c */
int oci_start(const char *root, const char *id);         /* oci_sup.c */

struct oci_exec_args {
    const char *root, *id, *process, *pid_file, *console_socket, *cwd, *user;
    bool detach, tty, no_new_privs;
    char **env, **caps, **argv;
    int preserve_fds;
};
int oci_exec(const struct oci_exec_args *a);             /* oci_exec.c */
int oci_ps(const char *root, const char *id, bool json, char **ps_args);

/* The container's init (oci_init.c), called by spawn.c's child through
 * struct fb_spawn_ext with a struct oci_child. */
struct oci_child {
    const struct oci_spec *spec;
    int lower_fds[64];     /* the rootfs layers, idmapped (top first) */
    size_t nlower;
    int idmap_ns;          /* supervisor: the container's idmapping (a user
                              namespace) for the bind sources, or -1 */
    int upper_fd;          /* the upper layer's filesystem on disk (a detached
                              ext4 mount, oci_upper.c), or -1: a tmpfs the
                              child makes (Linux 6.6+) */
    int spec_filter;       /* memfd of the spec's seccomp filter, or -1 */
    int preserve_fds;      /* --preserve-fds: 3..3+N-1 go to the process */
    bool terminal;
};
#define OCI_PRESERVE_MAX 256 /* --preserve-fds at most */
__attribute__((noreturn)) void oci_init_main(const struct fb_policy *p, int ctl, void *arg);

/* oci_mount.c: in the child, with its inside ids: build the root from c and
 * pivot into it; the spec's masked and read-only paths last. With a
 * terminal, *pty_master is a pty of the container's devpts whose slave is
 * bound on /dev/console. */
int oci_mount_root(const struct fb_policy *p, const struct oci_child *c, int ctl,
                   int *pty_master, struct fb_err *err);
/* In the supervisor, as root: the rootfs layers (the bundle's rootfs, or
 * the layers of the overlay mounted there) as idmapped detached trees, and
 * the idmapping for the bind sources. */
int oci_mount_prepare(const struct oci_spec *s, const char *uid_map, const char *gid_map,
                      struct oci_child *c, struct fb_err *err);
/* In the supervisor, when the child asks (FB_MSG_OCI_BIND), in the order of
 * the spec's mounts so that they are made in that order (mountinfo lists
 * mounts by creation): for a bind, the source of mounts[i] as a detached
 * tree, idmapped when it is read-only; for proc, a procfs of the pid
 * namespace the spec joins (made from inside it, by a helper). */
int oci_mount_source(const struct oci_spec *s, int idmap_ns, size_t i, struct fb_err *err);
void oci_mount_release(const struct oci_spec *s, struct oci_child *c);

/* oci_upper.c: is the root's upper layer on disk (Linux before 6.6, or
 * FLUEBOX_OCI_UPPER=disk)? Then, in the supervisor as host root: a fresh
 * ext4 of size bytes (<= 0: as large as the free space) whose root belongs
 * to uid:gid, as a detached mount (nosuid, nodev) that nothing on the host
 * names; it goes, with its loop device and backing file, with the last
 * reference to it (docs/oci.md). -1 with err on failure. */
bool oci_upper_on_disk(void);
int oci_upper_disk(int64_t size, uid_t uid, gid_t gid, struct fb_err *err);

/* oci_seccomp.c: the spec's linux.seccomp as a filter in a memfd (-1 with
 * err on failure; -2 when the spec has none). */
int oci_seccomp_filter(json_t *seccomp, struct fb_err *err);

/* oci_hooks.c: run the hooks of kind with the state on their stdin; a
 * failure is an error (returned), except for poststart and poststop,
 * which only warn. */
int oci_hooks_run(const struct oci_spec *s, int kind, json_t *state, struct fb_err *err);

/* oci_exec.c / oci_init.c: the process's last steps, in the process that
 * then execs: identity, capabilities, no_new_privs, rlimits, seccomp (the
 * fluebox filters progs, then the spec's filter), execve. Never returns;
 * on failure writes "reason" to errfd and exits 127/126/1. */
struct fb_sc_progs;
__attribute__((noreturn)) void oci_exec_process(const struct fb_policy *p,
                                                const struct oci_process *pr,
                                                const struct fb_sc_progs *progs, int spec_filter,
                                                int errfd);
/* Is the command there (the spec's PATH inside the current root)? 0, or -1
 * with runc's message. */
int oci_find_command(const struct oci_process *pr, struct fb_err *err);

/* oci_exec.c: send the pty master over the console socket. */
int oci_console_send(const char *socket_path, int master, struct fb_err *err);

#endif
