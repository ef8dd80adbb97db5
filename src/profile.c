/* profile.c — security profiles. PLACEHOLDER: built-in profiles coded in C
 * until the JSON profiles land. */
#include "profile.h"

#include <string.h>

static const char *const builtin[] = {"strict", "standard", "trusted", NULL};

const char *const *profile_builtin_names(void) { return builtin; }

static const char *const denied[] = {
    "mount", "umount2", "pivot_root", "chroot", "setns", "ptrace", "process_vm_readv",
    "process_vm_writev", "keyctl", "add_key", "request_key", "bpf", "perf_event_open",
    "userfaultfd", "io_uring_setup", "io_uring_enter", "io_uring_register", "kexec_load",
    "kexec_file_load", "init_module", "finit_module", "delete_module", "reboot", "swapon",
    "swapoff", "open_by_handle_at", "name_to_handle_at", "fsopen", "fsconfig", "fsmount",
    "fspick", "move_mount", "open_tree", "mount_setattr", "acct", "quotactl", "syslog",
    "uselib", "iopl", "ioperm", "vhangup", "lookup_dcookie", "fanotify_init",
};

int profile_load(struct fb_policy *p, const char *name, struct fb_err *err)
{
    if (strcmp(name, "strict") && strcmp(name, "standard") && strcmp(name, "trusted"))
        return fb_errf(err, FB_EXIT_SETUP, "--profile %s: unknown profile", name);
    free(p->profile_name);
    p->profile_name = fb_xstrdup(name);
    policy_clear_rules(p);
    for (size_t i = 0; i < FB_ARRAY_LEN(denied); i++) {
        struct fb_sc_rule r = {.name = (char *)denied[i], .action = FB_SC_ERRNO, .errno_val = EPERM};
        policy_add_rule(p, &r);
    }
    struct fb_sc_rule per = {.name = "personality", .action = FB_SC_ERRNO, .errno_val = EPERM,
                             .nargs = 2};
    per.args[0] = (struct fb_sc_arg){0, FB_SC_GT, 0, 0};
    per.args[1] = (struct fb_sc_arg){0, FB_SC_LT, 0xffffffffu, 0};
    policy_add_rule(p, &per);
    if (!strcmp(name, "trusted")) {
        p->net_host_allowed = true;
        p->limits.mem = -1;
        p->limits.pids = 4096;
    } else {
        p->limits.mem = 1024LL * 1024 * 1024;
        p->limits.pids = 512;
    }
    return 0;
}

char *profile_to_json(const struct fb_policy *p)
{
    return fb_xasprintf("{\"name\":\"%s\"}\n", p->profile_name);
}
