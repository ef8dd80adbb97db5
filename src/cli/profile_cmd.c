/* profile_cmd.c — `fluebox profile list|show|check|bpf` (commands.h):
 * the built-in profiles, a profile's effective policy, its validation
 * (and for a built-in the comparison with its precompiled policy) and its
 * seccomp filters as libseccomp dumps them. */
#include "profile_int.h"

#include "commands.h"
#include "options.h"
#include "seccomp.h"

#include <string.h>

/* ---- fluebox profile ---- */

static const char profile_usage[] =
    "Usage: fluebox profile list\n"
    "       fluebox profile show NAME|FILE   the effective policy, as a profile (JSON)\n"
    "       fluebox profile check FILE...    validate; exit 0 if valid, 1 if not\n"
    "       fluebox profile bpf NAME|FILE [--seccomp-log|--learn]\n"
    "                                        the seccomp filters, as libseccomp dumps them\n";

static int profile_subcommand(const char *sub, int nops, char **ops, enum fb_sc_mode mode);

static int set_bpf_mode(void *ctx, const struct fb_opt *o, const char *v, struct fb_err *err)
{
    *(enum fb_sc_mode *)ctx = !strcmp(o->name, "learn") ? FB_SCM_LEARN : FB_SCM_LOG;
    return 0;
}

const struct fb_opt bpf_opts[] = {
    {"seccomp-log", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_bpf_mode,
     "the filters as --seccomp-log runs them", NULL},
    {"learn", 0, FB_ARG_NONE, NULL, FB_OPT_ANY, set_bpf_mode,
     "the filters as fluebox learn runs them", NULL},
};
const size_t bpf_opts_n = FB_ARRAY_LEN(bpf_opts);

int cmd_profile(int argc, char **argv)
{
    if (argc < 1 || !strcmp(argv[0], "--help") || !strcmp(argv[0], "-h")) {
        fputs(profile_usage, argc < 1 ? stderr : stdout);
        return argc < 1 ? FB_EXIT_SETUP : 0;
    }
    const char *sub = argv[0];
    static const struct {
        const char *name, *usage;
        int min, max;
    } subs[] = {
        {"list", "Usage: fluebox profile list\nThe built-in profiles.\n\n", 0, 0},
        {"show", "Usage: fluebox profile show NAME|FILE\nThe effective policy, as a profile (JSON).\n\n", 1, 1},
        {"check", "Usage: fluebox profile check NAME|FILE...\nValidates; exit 0 if valid, 1 if not.\n\n", 1, 1 << 20},
        {"bpf", "Usage: fluebox profile bpf [OPTIONS] NAME|FILE\nThe seccomp filters, as libseccomp dumps them.\n\n", 1, 1},
    };
    size_t k;
    for (k = 0; k < FB_ARRAY_LEN(subs) && strcmp(sub, subs[k].name); k++)
        ;
    if (k == FB_ARRAY_LEN(subs)) {
        fb_warn("profile %s: unknown subcommand (list, show, check, bpf; see fluebox profile --help)", sub);
        return FB_EXIT_SETUP;
    }
    enum fb_sc_mode mode = FB_SCM_ENFORCE;
    struct fb_optset set = {bpf_opts, !strcmp(sub, "bpf") ? FB_ARRAY_LEN(bpf_opts) : 0, &mode};
    struct fb_parsed parsed;
    struct fb_err perr = {0};
    char cmd[32];
    snprintf(cmd, sizeof cmd, "profile %s", sub);
    int r = opt_parse(argc - 1, argv + 1, &set, 1, FB_OPT_ANY | FB_PARSE_PERMUTE, cmd, &parsed, &perr);
    if (r == 1) {
        fputs(subs[k].usage, stdout);
        opt_help(stdout, &set, 1, FB_OPT_ANY);
        return 0;
    }
    if (r == 0 && (parsed.nargs < subs[k].min || parsed.nargs > subs[k].max)) {
        r = fb_errf(&perr, FB_EXIT_SETUP, "profile %s: expected %s (see fluebox profile %s --help)",
                    sub, subs[k].max == 0 ? "no arguments" : subs[k].max == 1 ? "one profile" : "profiles", sub);
        opt_parsed_free(&parsed);
    }
    if (r < 0 || opt_apply(&parsed, &mode, &perr) < 0) {
        opt_parsed_free(&parsed);
        fb_warn("%s", perr.msg);
        return FB_EXIT_SETUP;
    }
    int rc = profile_subcommand(sub, parsed.nargs, parsed.args, mode);
    opt_parsed_free(&parsed);
    return rc;
}

/* The subcommand, its operands checked for number. Exit codes, as every
 * command's: 125 when fluebox cannot do what was asked (a usage error, a
 * profile show or bpf cannot load), 0 when it did; `check` alone answers a
 * question, and its "no" (a profile that is missing or invalid) is 1. */
static int profile_subcommand(const char *sub, int nops, char **ops, enum fb_sc_mode mode)
{
    if (!strcmp(sub, "list")) {
        const char *const *names = profile_builtin_names();
        for (size_t i = 0; names[i]; i++) {
            struct fb_policy p;
            struct fb_err err = {0};
            policy_init(&p);
            if (profile_load(&p, names[i], &err) < 0)
                printf("%-10s (broken: %s)\n", names[i], err.msg);
            else
                printf("%-10s %s%s\n", names[i], p.description ? p.description : "",
                       !strcmp(names[i], FB_DEFAULT_PROFILE) ? " [default]" : "");
            policy_free(&p);
        }
        return 0;
    }
    if (!strcmp(sub, "show")) {
        struct fb_policy p;
        struct fb_err err = {0};
        policy_init(&p);
        if (profile_load(&p, ops[0], &err) < 0) {
            fb_warn("%s", err.msg);
            policy_free(&p);
            return FB_EXIT_SETUP;
        }
        char *s = profile_to_json(&p);
        fputs(s, stdout);
        free(s);
        policy_free(&p);
        return 0;
    }
    if (!strcmp(sub, "check")) {
        int rc = 0;
        for (int i = 0; i < nops; i++) {
            struct fb_policy p;
            struct fb_err err = {0};
            int pre = 1;
            policy_init(&p);
            if (profile_load(&p, ops[i], &err) < 0) {
                fb_warn("%s", err.msg);
                rc = 1;
            } else if (seccomp_check_compile(&p, &err) < 0) {
                fb_warn("%s: %s", ops[i], err.msg);
                rc = 1;
            } else if (!is_file_ref(ops[i]) && (pre = profile_builtin_verify(ops[i], &err)) < 0) {
                fb_warn("%s", err.msg);
                rc = 1;
            } else {
                char *def = action_str(p.seccomp.default_action, p.seccomp.default_errno);
                const char *from = p.profile_extends ? "extends "
                                   : is_file_ref(ops[i]) ? "no extends: starts from fluebox's bare defaults"
                                                          : "built-in";
                const char *how = is_file_ref(ops[i]) ? ""
                                  : pre == 0 ? ", precompiled policy identical to its JSON's"
                                             : ", not precompiled in this build";
                printf("%s: ok (%s%s%s; %zu seccomp rules, default %s)\n", ops[i], from,
                       p.profile_extends ? p.profile_extends : "", how, p.seccomp.nrules, def);
                free(def);
            }
            policy_free(&p);
        }
        return rc;
    }
    if (!strcmp(sub, "bpf")) {
        struct fb_policy p;
        struct fb_err err = {0};
        policy_init(&p);
        int rc = 0;
        fflush(stdout);
        if (profile_load(&p, ops[0], &err) < 0 || seccomp_dump(&p, mode, 1, &err) < 0) {
            fb_warn("%s", err.msg);
            rc = FB_EXIT_SETUP;
        }
        policy_free(&p);
        return rc;
    }
    return FB_EXIT_SETUP;
}
