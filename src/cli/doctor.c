/* doctor.c — `fluebox doctor [--workspace DIR] [--json] [--fix]`: runs the
 * probes (doctor_probe.c), then says for each layer whether it is there,
 * what its absence costs and how to get it, and the verdict: full
 * isolation, only the --isolation landlock fallback, or nothing.
 *
 * Exit status: 0 full isolation works here; 1 only --isolation landlock
 * does (fluebox run refuses without it); 2 neither; 125 bad usage. */
#include "doctor.h"

#include "landlock.h"
#include "options.h"

#include <jansson.h>
#include <stdint.h>
#include <limits.h>
#include <string.h>
#include <sys/utsname.h>

struct doc_opts {
    char *workspace;
    bool json;
    bool fix;
    char *apparmor_path; /* --apparmor-profile PATH: print the profile and stop */
};

#define DOC(ctx) ((struct doc_opts *)(ctx))

static int set_ws(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    char real[PATH_MAX];
    if (!realpath(v, real))
        return fb_errno(err, FB_EXIT_SETUP, "--workspace %s", v);
    free(DOC(ctx)->workspace);
    DOC(ctx)->workspace = fb_xstrdup(real);
    return 0;
}
static int set_json(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    DOC(ctx)->json = true;
    return 0;
}
static int set_fix(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    DOC(ctx)->fix = true;
    return 0;
}
static int set_aa(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    if (v[0] != '/')
        return fb_errf(err, FB_EXIT_SETUP, "--apparmor-profile %s: give the binary's absolute path",
                       v);
    free(DOC(ctx)->apparmor_path);
    DOC(ctx)->apparmor_path = fb_xstrdup(v);
    return 0;
}

const struct fb_opt doc_opts[] = {
    {"workspace", 0, FB_ARG_HOST_PATH, "DIR", FB_OPT_RUN, set_ws,
     "the directory whose filesystem to check (default: the current one)", NULL},
    {"json", 0, FB_ARG_NONE, NULL, FB_OPT_RUN, set_json, "one JSON object, for tools", NULL},
    {"fix", 0, FB_ARG_NONE, NULL, FB_OPT_RUN, set_fix,
     "print the commands that add what is missing (nothing is changed)", NULL},
    {"apparmor-profile", 0, FB_ARG_HOST_PATH, "PATH", FB_OPT_RUN, set_aa,
     "print the AppArmor profile granting the fluebox at PATH user namespaces", NULL},
};
const size_t doc_opts_n = FB_ARRAY_LEN(doc_opts);

static const char doc_usage[] =
    "Usage: fluebox doctor [--workspace DIR] [--json] [--fix]\n"
    "Tries every layer fluebox builds a sandbox from (user and other namespaces, procfs,\n"
    "pivot_root, seccomp, idmapped mounts, overlayfs, cgroups, Landlock), each in a\n"
    "throwaway process, and says what is missing, what that costs and how to add it.\n"
    "Exit status: 0 full isolation works here; 1 only --isolation landlock does;\n"
    "2 neither.\n\n";

void doctor_apparmor_profile(FILE *f, const char *path)
{
    /* Ubuntu 23.10 and later (kernel.apparmor_restrict_unprivileged_userns
     * = 1) let a program use user namespaces only when its profile grants
     * "userns"; the profile is otherwise unconfined. */
    fprintf(f,
            "# AppArmor profile for fluebox: lets %s create user namespaces where\n"
            "# kernel.apparmor_restrict_unprivileged_userns = 1 (Ubuntu 23.10 and later),\n"
            "# and confines nothing else. Install as /etc/apparmor.d/fluebox and load it\n"
            "# with: apparmor_parser -r /etc/apparmor.d/fluebox\n"
            "abi <abi/4.0>,\n"
            "include <tunables/global>\n"
            "\n"
            "profile fluebox %s flags=(unconfined) {\n"
            "  userns,\n"
            "\n"
            "  include if exists <local/fluebox>\n"
            "}\n",
            path, path);
}

/* ---- what a missing layer costs, and the fix ---- */

static const char container_fix[] =
    "in a container, fluebox needs one that may make namespaces: a seccomp profile that "
    "allows clone, clone3 and unshare with namespace flags (Docker: --security-opt "
    "seccomp=unconfined; Kubernetes: securityContext.seccompProfile.type: Unconfined), no "
    "AppArmor profile that denies mount (Docker: --security-opt apparmor=unconfined) and an "
    "unmasked /proc (Docker: --security-opt systempaths=unconfined; Kubernetes: procMount: "
    "Unmasked) — or make fluebox the container's runtime (fluebox oci, docs/oci.md); or opt "
    "in to --isolation landlock";

static void userns_fix(const struct fb_doc_env *e, struct fb_check *c, bool unprivileged)
{
    snprintf(c->cost, sizeof c->cost,
             unprivileged
                 ? "ordinary users cannot run fluebox with namespaces (root still can); they "
                   "get only --isolation landlock"
                 : "no sandbox with namespaces at all: fluebox run and serve refuse; "
                   "--isolation landlock is the opt-in fallback (fewer guarantees)");
    if (e->unpriv_clone == 0)
        snprintf(c->fix, sizeof c->fix,
                 "sysctl -w kernel.unprivileged_userns_clone=1 (and the same line in "
                 "/etc/sysctl.d/50-fluebox.conf to keep it)");
    else if (e->max_userns == 0)
        snprintf(c->fix, sizeof c->fix,
                 "sysctl -w user.max_user_namespaces=15000 (and in "
                 "/etc/sysctl.d/50-fluebox.conf to keep it)%s",
                 e->init_userns ? "" : "; here it is 0 in this user namespace, set by whoever "
                                       "made it");
    else if (e->aa_restrict == 1 && (unprivileged || !e->root))
        snprintf(c->fix, sizeof c->fix,
                 "AppArmor restricts unprivileged user namespaces "
                 "(kernel.apparmor_restrict_unprivileged_userns = 1): install the profile that "
                 "grants fluebox \"userns\", as Ubuntu does for bubblewrap — make install does, "
                 "or: fluebox doctor --apparmor-profile %s > /etc/apparmor.d/fluebox && "
                 "apparmor_parser -r /etc/apparmor.d/fluebox (or, for every program, sysctl -w "
                 "kernel.apparmor_restrict_unprivileged_userns=0)",
                 e->exe[0] ? e->exe : "/usr/local/bin/fluebox");
    else if (e->in_container || e->seccomp_filters)
        snprintf(c->fix, sizeof c->fix, "%s", container_fix);
    else
        snprintf(c->fix, sizeof c->fix,
                 "a kernel with CONFIG_USER_NS (every distribution kernel has it); check "
                 "the security modules and sysctls that restrict it");
}

static void explain(const struct fb_doc_env *e, struct fb_check *c, int abi)
{
    if (c->status == FB_CHK_OK || c->status == FB_CHK_INFO || c->status == FB_CHK_NA)
        return;
    const char *id = c->id;
    if (!strcmp(id, "userns"))
        userns_fix(e, c, false);
    else if (!strcmp(id, "userns_unprivileged"))
        userns_fix(e, c, true);
    else if (!strcmp(id, "namespaces")) {
        snprintf(c->cost, sizeof c->cost,
                 "fluebox run needs every one of them (a profile can turn pid, ipc, uts and "
                 "cgroup off, at the cost of what each isolates); without them it refuses");
        snprintf(c->fix, sizeof c->fix, "%s",
                 e->in_container ? container_fix
                                 : "a kernel with CONFIG_PID_NS, CONFIG_NET_NS, CONFIG_IPC_NS, "
                                   "CONFIG_UTS_NS and CONFIG_CGROUPS; check user.max_*_namespaces");
    } else if (!strcmp(id, "procfs")) {
        snprintf(c->cost, sizeof c->cost,
                 "fluebox run cannot give the sandbox a /proc of its own and refuses");
        snprintf(c->fix, sizeof c->fix,
                 "the kernel allows a new procfs only where the existing /proc is not partly "
                 "covered: %s",
                 e->in_container ? "run the container with an unmasked /proc (Docker: "
                                   "--security-opt systempaths=unconfined; Kubernetes: "
                                   "securityContext.procMount: Unmasked), or use fluebox oci "
                                   "as its runtime"
                                 : "unmount what covers parts of /proc");
    } else if (!strcmp(id, "pivot_root")) {
        snprintf(c->cost, sizeof c->cost, "no sandbox root of its own: fluebox run refuses");
        snprintf(c->fix, sizeof c->fix, "%s",
                 e->in_container ? container_fix
                                 : "pivot_root fails when / is the initramfs (rootfs): boot "
                                   "with a real root filesystem");
    } else if (!strcmp(id, "root_mounts")) {
        snprintf(c->cost, sizeof c->cost,
                 "fluebox run as root cannot prepare the sandbox's binds and refuses (an ordinary "
                 "user's fluebox prepares them inside its own user namespace instead)");
        if (!e->init_userns && e->cap_sys_admin)
            snprintf(c->fix, sizeof c->fix,
                     "root of this user namespace holds CAP_SYS_ADMIN over the mounts of mount "
                     "namespaces its user namespace owns, and this one is older: start fluebox "
                     "in a mount namespace of its own (unshare -m), or run it as an ordinary "
                     "user");
        else
            snprintf(c->fix, sizeof c->fix,
                     "root here lacks CAP_SYS_ADMIN (a container's default): run fluebox as an "
                     "ordinary user inside (Docker: --user 1000), or grant the capability "
                     "(Docker: --cap-add SYS_ADMIN)");
    } else if (!strcmp(id, "seccomp")) {
        snprintf(c->cost, sizeof c->cost,
                 "no system-call filter: fluebox refuses to run anything, in either isolation");
        snprintf(c->fix, sizeof c->fix,
                 "a kernel with CONFIG_SECCOMP_FILTER; in a container, a seccomp profile that "
                 "allows seccomp(2) and prctl(PR_SET_SECCOMP)");
    } else if (!strcmp(id, "seccomp_notify")) {
        snprintf(c->cost, sizeof c->cost,
                 "--seccomp-log and fluebox learn cannot see denied calls (runs still work)");
        snprintf(c->fix, sizeof c->fix, "Linux 5.5 or newer, and a seccomp filter above this "
                                        "process that allows user notification");
    } else if (!strcmp(id, "idmap")) {
        snprintf(c->cost, sizeof c->cost,
                 "as root, a workspace owned by someone else is bound without an id mapping: "
                 "the sandbox user can write only where \"other\" permissions allow");
        snprintf(c->fix, sizeof c->fix,
                 "a workspace on a filesystem with idmapped mounts (ext4, xfs, btrfs, tmpfs from "
                 "Linux 6.3, overlayfs), or a workspace owned by --host-id, or run fluebox as "
                 "the workspace's owner");
    } else if (!strcmp(id, "overlay")) {
        snprintf(c->cost, sizeof c->cost, "--cow (copy-on-write workspaces) is not available");
        snprintf(c->fix, sizeof c->fix,
                 "Linux 5.11 or newer (overlayfs in a user namespace); a tmpfs upper layer needs "
                 "user extended attributes on tmpfs (Linux 6.6)");
    } else if (!strcmp(id, "cgroup")) {
        snprintf(c->cost, sizeof c->cost,
                 "limits not applied by a cgroup fall back to rlimits: --mem per process "
                 "(RLIMIT_DATA), --pids as RLIMIT_NPROC, no --cpus; --require-limits refuses");
        if (e->in_container)
            snprintf(c->fix, sizeof c->fix,
                     "a container gets its cgroup read-only: give it a writable cgroup "
                     "(cgroup v2 with a private cgroup namespace and delegation, e.g. Docker "
                     "--cgroupns=private on a systemd host with Delegate=yes), or set the "
                     "limits on the container itself");
        else if (!e->root)
            snprintf(c->fix, sizeof c->fix,
                     "delegate the controllers to your user with systemd: systemctl edit "
                     "user@.service, add \"[Service]\" and \"Delegate=memory pids cpu\", then "
                     "log in again (or run fluebox under systemd-run --user --scope -p "
                     "Delegate=yes); cgroup v1 cannot be delegated safely: use cgroup v2 "
                     "(systemd.unified_cgroup_hierarchy=1)");
        else
            snprintf(c->fix, sizeof c->fix,
                     "mount the cgroup controllers (cgroup v2: memory, pids and cpu enabled in "
                     "cgroup.subtree_control of fluebox's cgroup)");
    } else if (!strcmp(id, "landlock")) {
        snprintf(c->cost, sizeof c->cost,
                 abi >= FB_LANDLOCK_MIN_ABI
                     ? "--isolation landlock works, but the command can signal other processes "
                       "of the same uid (signal scoping needs ABI 6, Linux 6.12)"
                     : "--isolation landlock is not available: where namespaces cannot be made, "
                       "nothing can be sandboxed");
        if (abi == 0 && c->err == EOPNOTSUPP)
            snprintf(c->fix, sizeof c->fix,
                     "add \"landlock\" to the lsm= kernel boot parameter (see "
                     "/sys/kernel/security/lsm for the current list)");
        else if (abi == 0 && (e->in_container || e->seccomp_filters))
            snprintf(c->fix, sizeof c->fix,
                     "a container seccomp profile that allows landlock_create_ruleset, "
                     "landlock_add_rule and landlock_restrict_self (Docker's and containerd's "
                     "defaults do)");
        else
            snprintf(c->fix, sizeof c->fix, "Linux 6.7 or newer (6.12 for ABI 6), with "
                                            "CONFIG_SECURITY_LANDLOCK and landlock in lsm=");
    }
}

/* ---- output ---- */

static const char *status_name(enum fb_chk_status s)
{
    static const char *const n[] = {"ok", "info", "n/a", "degraded", "missing"};
    return n[s];
}

static void container_check(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "container";
    c->layer = "inside a container";
    c->status = FB_CHK_INFO;
    size_t o = 0;
    if (e->in_container)
        o += (size_t)snprintf(c->detail, sizeof c->detail, "yes%s%s (%s)",
                              e->runtime[0] ? ": " : "", e->runtime, e->evidence);
    else
        o += (size_t)snprintf(c->detail, sizeof c->detail, "no sign of one");
    if (o < sizeof c->detail && e->seccomp_filters)
        o += (size_t)snprintf(c->detail + o, sizeof c->detail - o,
                              "; %d seccomp filter%s already on this process%s", e->seccomp_filters,
                              e->seccomp_filters > 1 ? "s" : "",
                              e->clone3_errno == ENOSYS
                                  ? ", answering clone3 with ENOSYS as the default profiles of "
                                    "Docker, containerd and Podman do"
                                  : "");
    if (o < sizeof c->detail && e->apparmor[0] && strncmp(e->apparmor, "unconfined", 10))
        o += (size_t)snprintf(c->detail + o, sizeof c->detail - o, "; AppArmor profile %s",
                              e->apparmor);
    if (o < sizeof c->detail && e->in_container)
        snprintf(c->detail + o, sizeof c->detail - o, "; CAP_SYS_ADMIN %s",
                 e->cap_sys_admin ? "held" : "not held");
}

/* Which ids fluebox maps here, from the user namespace it runs in. */
static void ids_check(const struct fb_doc_env *e, struct fb_check *c)
{
    c->id = "ids";
    c->layer = "the ids a sandbox gets";
    c->status = FB_CHK_INFO;
    char where[200];
    if (e->init_userns)
        snprintf(where, sizeof where, "the initial user namespace");
    else if (e->outer_uid >= 0)
        snprintf(where, sizeof where,
                 "a user namespace mapping %llu id%s, where uid %u is uid %lld one namespace up",
                 (unsigned long long)e->mapped_uids, e->mapped_uids == 1 ? "" : "s",
                 (unsigned)e->uid, (long long)e->outer_uid);
    else
        snprintf(where, sizeof where, "a user namespace mapping %llu ids",
                 (unsigned long long)e->mapped_uids);
    switch (e->idmode) {
    case FB_IDMODE_RANGE:
        snprintf(c->detail, sizeof c->detail,
                 "%s; as root, each sandbox maps its ids 0-65535 to a range of 65,536 host ids "
                 "of its own (%zu ranges usable here)",
                 where, idrange_pool_usable());
        break;
    case FB_IDMODE_LEGACY:
        snprintf(c->detail, sizeof c->detail,
                 "%s; as root, but no range of the pool (ids %u and up) is mapped here: every "
                 "sandbox runs as id %u, shared by all",
                 where, FB_IDRANGE_POOL_BASE, FB_IDRANGE_LEGACY_ID);
        snprintf(c->cost, sizeof c->cost,
                 "sandboxes share one id, and with it the kernel's per-user counters (inotify, "
                 "pipe pages, processes)");
        snprintf(c->fix, sizeof c->fix,
                 "map ids %u-%u into this user namespace (or run fluebox outside it)",
                 FB_IDRANGE_POOL_BASE,
                 FB_IDRANGE_POOL_BASE + FB_IDRANGE_POOL_SLOTS * FB_IDRANGE_SIZE - 1);
        break;
    case FB_IDMODE_OWN:
        if (!e->uid0) {
            snprintf(c->detail, sizeof c->detail,
                     "%s; rootless: the sandbox user is you (uid %u), other ids inside from "
                     "/etc/subuid when newuidmap is there",
                     where, (unsigned)e->uid);
            break;
        }
        snprintf(c->detail, sizeof c->detail,
                 "%s; uid 0 has its capabilities in this namespace only, which maps no "
                 "other id fluebox could use: fluebox runs rootless here, the sandbox user is "
                 "this uid 0",
                 where);
        if (e->outer_uid == 0)
            snprintf(c->cost, sizeof c->cost,
                     "that id is host root's uid 0 one namespace up (`unshare -r` as root): "
                     "the sandbox runs as it without capabilities, and only read-only mounts "
                     "keep it from host root's files that the sandbox can see; no range of ids "
                     "of its own per sandbox");
        break;
    }
}

static void print_text(FILE *f, const struct fb_doc_env *e, const struct fb_check *c, size_t n,
                       const char *verdict, const char *ws)
{
    struct utsname u;
    uname(&u);
    fprintf(f, "fluebox doctor: fluebox %s, Linux %s %s, as %s (uid %u), workspace %s\n\n",
            FB_VERSION, u.release, u.machine,
            e->root   ? "root"
            : e->uid0 ? "uid 0 of a user namespace, rootless here"
                      : "an ordinary user",
            (unsigned)e->uid, ws);
    for (size_t i = 0; i < n; i++) {
        fprintf(f, "%-9s %s: %s\n", status_name(c[i].status), c[i].layer, c[i].detail);
        if (c[i].cost[0])
            fprintf(f, "          costs: %s\n", c[i].cost);
        if (c[i].fix[0])
            fprintf(f, "          fix:   %s\n", c[i].fix);
    }
    fprintf(f, "\n%s\n", verdict);
}

static void print_json(FILE *f, const struct fb_doc_env *e, const struct fb_check *c, size_t n,
                       const char *verdict_id, const char *verdict, int abi, const char *ws)
{
    struct utsname u;
    uname(&u);
    json_t *o = json_object();
    json_object_set_new(o, "fluebox", json_string(FB_VERSION));
    json_object_set_new(o, "kernel", json_string(u.release));
    json_object_set_new(o, "arch", json_string(u.machine));
    json_object_set_new(o, "uid", json_integer(e->uid));
    json_object_set_new(o, "root", json_boolean(e->root));
    json_t *un = json_object();
    static const char *const modes[] = {"range", "legacy", "own"};
    json_object_set_new(un, "initial", json_boolean(e->init_userns));
    json_object_set_new(un, "mapped_uids", json_integer((json_int_t)e->mapped_uids));
    json_object_set_new(un, "outer_uid", e->outer_uid < 0 ? json_null() : json_integer(e->outer_uid));
    json_object_set_new(un, "ids", json_string(modes[e->idmode]));
    json_object_set_new(o, "user_namespace", un);
    json_object_set_new(o, "workspace", json_string(ws));
    json_t *ct = json_object();
    json_object_set_new(ct, "inside", json_boolean(e->in_container));
    json_object_set_new(ct, "runtime", e->runtime[0] ? json_string(e->runtime) : json_null());
    json_object_set_new(ct, "evidence", json_string(e->evidence));
    json_object_set_new(ct, "seccomp_filters", json_integer(e->seccomp_filters));
    json_object_set_new(ct, "clone3", json_string(e->clone3_errno ? strerror(e->clone3_errno)
                                                                  : "ok"));
    json_object_set_new(ct, "apparmor", e->apparmor[0] ? json_string(e->apparmor) : json_null());
    json_object_set_new(ct, "cap_sys_admin", json_boolean(e->cap_sys_admin));
    json_object_set_new(o, "container", ct);
    json_t *sy = json_object();
    json_object_set_new(sy, "kernel.unprivileged_userns_clone",
                        e->unpriv_clone < 0 ? json_null() : json_integer(e->unpriv_clone));
    json_object_set_new(sy, "user.max_user_namespaces",
                        e->max_userns < 0 ? json_null() : json_integer(e->max_userns));
    json_object_set_new(sy, "kernel.apparmor_restrict_unprivileged_userns",
                        e->aa_restrict < 0 ? json_null() : json_integer(e->aa_restrict));
    json_object_set_new(o, "sysctls", sy);
    json_object_set_new(o, "verdict", json_string(verdict_id));
    json_object_set_new(o, "summary", json_string(verdict));
    json_object_set_new(o, "landlock_abi", json_integer(abi));
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        json_t *j = json_object();
        json_object_set_new(j, "id", json_string(c[i].id));
        json_object_set_new(j, "layer", json_string(c[i].layer));
        json_object_set_new(j, "status", json_string(status_name(c[i].status)));
        json_object_set_new(j, "available", json_boolean(c[i].status == FB_CHK_OK ||
                                                         c[i].status == FB_CHK_DEGRADED));
        json_object_set_new(j, "detail", json_string(c[i].detail));
        json_object_set_new(j, "errno", c[i].err ? json_string(strerrorname_np(c[i].err))
                                                 : json_null());
        json_object_set_new(j, "cost", c[i].cost[0] ? json_string(c[i].cost) : json_null());
        json_object_set_new(j, "fix", c[i].fix[0] ? json_string(c[i].fix) : json_null());
        json_array_append_new(arr, j);
    }
    json_object_set_new(o, "checks", arr);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (s) {
        fprintf(f, "%s\n", s);
        free(s);
    }
}

static void print_fix(FILE *f, const struct fb_doc_env *e, const struct fb_check *c, size_t n)
{
    fprintf(f, "# What fluebox doctor found missing here, and how to add it. Nothing was\n"
               "# changed; review before running any of it (as root).\n");
    bool any = false;
    for (size_t i = 0; i < n; i++) {
        if (!c[i].fix[0])
            continue;
        any = true;
        fprintf(f, "\n# %s: %s\n#   %s\n", c[i].layer, c[i].detail, c[i].fix);
        if ((!strcmp(c[i].id, "userns") || !strcmp(c[i].id, "userns_unprivileged"))) {
            if (e->unpriv_clone == 0)
                fprintf(f, "sysctl -w kernel.unprivileged_userns_clone=1\n"
                           "echo kernel.unprivileged_userns_clone=1 > "
                           "/etc/sysctl.d/50-fluebox.conf\n");
            else if (e->max_userns == 0 && e->init_userns)
                fprintf(f, "sysctl -w user.max_user_namespaces=15000\n"
                           "echo user.max_user_namespaces=15000 > /etc/sysctl.d/50-fluebox.conf\n");
            else if (e->aa_restrict == 1) {
                fprintf(f, "cat > /etc/apparmor.d/fluebox <<'EOF'\n");
                doctor_apparmor_profile(f, e->exe[0] ? e->exe : "/usr/local/bin/fluebox");
                fprintf(f, "EOF\napparmor_parser -r /etc/apparmor.d/fluebox\n");
            }
        }
    }
    if (!any)
        fprintf(f, "\n# nothing: every layer fluebox uses is available\n");
}

int cmd_doctor(int argc, char **argv)
{
    struct doc_opts o = {0};
    struct fb_optset set = {doc_opts, FB_ARRAY_LEN(doc_opts), &o};
    struct fb_parsed parsed;
    struct fb_err err = {0};
    int r = opt_parse(argc, argv, &set, 1, FB_OPT_RUN, "doctor", &parsed, &err);
    if (r == 1) {
        fputs(doc_usage, stdout);
        opt_help(stdout, &set, 1, FB_OPT_RUN);
        return 0;
    }
    if (r < 0 || opt_apply(&parsed, &o, &err) < 0 ||
        (parsed.nargs && fb_errf(&err, FB_EXIT_SETUP, "unexpected argument \"%s\"",
                                 parsed.args[0]) < 0)) {
        fb_warn("%s", err.msg);
        opt_parsed_free(&parsed);
        free(o.workspace);
        free(o.apparmor_path);
        return FB_EXIT_SETUP;
    }
    opt_parsed_free(&parsed);
    if (o.apparmor_path) {
        doctor_apparmor_profile(stdout, o.apparmor_path);
        free(o.apparmor_path);
        free(o.workspace);
        return 0;
    }
    char cwd[PATH_MAX];
    const char *ws = o.workspace ? o.workspace : getcwd(cwd, sizeof cwd) ? cwd : "/";

    struct fb_doc_env e;
    doctor_env(&e);
    struct fb_check c[16];
    memset(c, 0, sizeof c);
    size_t n = 0;
    container_check(&e, &c[n++]);
    ids_check(&e, &c[n++]);
    size_t i_userns = n;
    doctor_userns(&e, false, &c[n++]);
    if (e.root)
        doctor_userns(&e, true, &c[n++]);
    size_t i_ns = n;
    doctor_namespaces(&e, &c[n++]);
    size_t i_proc = n;
    doctor_procfs(&e, &c[n++]);
    size_t i_pivot = n;
    doctor_pivot_root(&e, &c[n++]);
    size_t i_rm = SIZE_MAX;
    if (e.root && e.idmode == FB_IDMODE_RANGE) {
        i_rm = n;
        doctor_root_mounts(&e, &c[n++]);
    }
    size_t i_sc = n;
    doctor_seccomp(&e, false, &c[n++]);
    doctor_seccomp(&e, true, &c[n++]);
    doctor_idmap(&e, ws, &c[n++]);
    doctor_overlay(&e, &c[n++]);
    doctor_cgroup(&e, &c[n++]);
    int abi = 0;
    size_t i_ll = n;
    doctor_landlock(&e, &c[n++], &abi);
    /* What follows from a missing user namespace is not news. */
    if (c[i_userns].status == FB_CHK_MISSING)
        for (size_t i = i_ns; i < n; i++)
            if (i != i_sc && i != i_sc + 1 && i != i_ll && c[i].status == FB_CHK_MISSING &&
                strstr(c[i].detail, "user namespace") && strcmp(c[i].id, "idmap")) {
                c[i].status = FB_CHK_NA;
                snprintf(c[i].detail, sizeof c[i].detail, "not tried: no user namespace");
            }
    for (size_t i = 0; i < n; i++)
        explain(&e, &c[i], abi);

    bool full = c[i_userns].status == FB_CHK_OK && c[i_ns].status == FB_CHK_OK &&
                c[i_proc].status == FB_CHK_OK && c[i_pivot].status == FB_CHK_OK &&
                c[i_sc].status == FB_CHK_OK &&
                (i_rm == SIZE_MAX || c[i_rm].status == FB_CHK_OK);
    bool ll = abi >= FB_LANDLOCK_MIN_ABI && c[i_sc].status == FB_CHK_OK &&
              c[i_ll].status != FB_CHK_MISSING;
    char verdict[1024];
    const char *vid;
    if (full) {
        vid = "full";
        bool limits = false;
        for (size_t i = 0; i < n; i++)
            if (!strcmp(c[i].id, "cgroup"))
                limits = c[i].status == FB_CHK_OK;
        snprintf(verdict, sizeof verdict,
                 "verdict: fluebox run works here with full isolation (namespaces, seccomp%s).",
                 limits ? ", cgroup limits" : "; limits as rlimits where no cgroup holds them");
    } else {
        const struct fb_check *b = c[i_userns].status != FB_CHK_OK  ? &c[i_userns]
                                   : c[i_ns].status != FB_CHK_OK    ? &c[i_ns]
                                   : c[i_proc].status != FB_CHK_OK  ? &c[i_proc]
                                   : c[i_pivot].status != FB_CHK_OK ? &c[i_pivot]
                                   : c[i_sc].status != FB_CHK_OK    ? &c[i_sc]
                                                                    : &c[i_rm];
        if (ll) {
            vid = "landlock";
            snprintf(verdict, sizeof verdict,
                     "verdict: no namespaces here (%s: %s), so fluebox run refuses; "
                     "--isolation landlock works instead (Landlock ABI %d), with fewer "
                     "guarantees (its run report lists them).",
                     b->layer, b->detail, abi);
        } else {
            vid = "none";
            snprintf(verdict, sizeof verdict,
                     "verdict: fluebox cannot sandbox anything here: no namespaces (%s: %s) "
                     "and no usable Landlock (%s).",
                     b->layer, b->detail, c[i_ll].detail);
        }
    }
    if (o.json)
        print_json(stdout, &e, c, n, vid, verdict, abi, ws);
    else if (o.fix)
        print_fix(stdout, &e, c, n);
    else
        print_text(stdout, &e, c, n, verdict, ws);
    free(o.workspace);
    return full ? 0 : ll ? 1 : 2;
}
