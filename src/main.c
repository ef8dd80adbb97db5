/* main.c — subcommand dispatch. Each subcommand lives with its concern:
 * run (here, through run/supervise.c), profile (cli/profile_cmd.c), learn
 * (cli/learn.c), serve (server/server.c), session / exec / cp (cli/client*.c),
 * oci (oci/oci.c), doctor (cli/doctor.c), mcp (mcp/mcp.c), record
 * (record/record_verify.c), completion (cli/completion.c). scripts/layers.txt says which folder may call which. */
#include "policy_opts.h"
#include "client.h"
#include "commands.h"
#include "mcp.h"
#include "profile.h"
#include "report.h"
#include "sess_sandbox.h"
#include "supervise.h"
#include "toolchain.h"

#include <string.h>

static int cmd_run(int argc, char **argv)
{
    int code;
    if (client_run_maybe(argc, argv, &code)) /* --server: client_run.c */
        return code;
    struct fb_policy p;
    /* The warnings of the lower layers come back here (fb_note) and are
     * printed once each: the policy's now, the sandbox's as it starts. */
    struct fb_notes notes = {.len = 0};
    struct fb_err err = {.notes = &notes};
    policy_init(&p);
    char cwd[4096];
    struct fb_callenv ce;
    callenv_self(&ce, cwd, sizeof cwd);
    int r = cli_parse_run("run", cli_run_usage, argc, argv, NULL, FB_DEFAULT_PROFILE, &p, &err);
    if (r > 0) {
        policy_free(&p);
        return 0;
    }
    extern char **environ;
    if (r < 0 || policy_finish(&p, &ce, &err) < 0 ||
        (!p.print_path && secrets_load(&p, (const char *const *)environ, &err) < 0)) {
        fb_notes_print(&notes);
        fb_warn("%s", err.msg);
        code = err.code ? err.code : FB_EXIT_SETUP;
        policy_free(&p);
        return code;
    }
    /* The real values now live only in the secrets' locked memory: wipe
     * them from this process's environment (and so from every process it
     * forks, and its /proc/PID/environ). */
    secrets_scrub_env(&p, environ);
    fb_notes_print(&notes);
    if (p.print_path) {
        toolchain_print(&p, stdout);
        policy_free(&p);
        return fflush(stdout) == 0 ? 0 : FB_EXIT_SETUP;
    }
    struct fb_result res;
    if (supervise_run(&p, &res, &err) < 0)
        fb_warn("%s", err.msg);
    code = res.exit_code;
    if (p.report) {
        /* A report that was asked for and is missing fails the run. */
        struct fb_err rerr = {0};
        if (report_write(p.report, &p, &res, &rerr) < 0) {
            fb_warn("%s", rerr.msg);
            code = FB_EXIT_SETUP;
        }
    }
    policy_free(&p);
    return code;
}

/* The subcommands (commands.h), each in the folder of its concern. */
static const struct {
    const char *name;
    int (*fn)(int, char **);
} cmds[] = {
    {"run", cmd_run},         {"profile", cmd_profile}, {"learn", cmd_learn},
    {"serve", cmd_serve},     {"session", cmd_session}, {"exec", cmd_exec},
    {"cp", cmd_cp},           {"oci", cmd_oci},         {"doctor", cmd_doctor},
    {"mcp", cmd_mcp},
    {"record", cmd_record},
    {"completion", cmd_completion},
};

/* Called as fluebox-oci (containerd's BinaryName, Docker's runtime path):
 * the OCI runtime; fluebox-oci-PROFILE runs every container with PROFILE. */
extern const char *oci_default_profile; /* oci_policy.c */

static bool called_as_oci(const char *argv0)
{
    const char *base = strrchr(argv0, '/');
    base = base ? base + 1 : argv0;
    if (strncmp(base, "fluebox-oci", 11) || (base[11] && base[11] != '-'))
        return false;
    if (base[11] == '-' && base[12])
        oci_default_profile = base + 12;
    return true;
}

int main(int argc, char **argv)
{
    /* A session's init in its fresh image (spawn.h): nothing else first. */
    if (argc >= 2 && !strcmp(argv[1], FB_SESSION_IMAGE_CMD))
        return sess_init_image(argc, argv);
    fb_proctitle_init(argc, argv);
    if (argc > 0 && called_as_oci(argv[0]))
        return cmd_oci(argc - 1, argv + 1);
    if (argc < 2) {
        cli_print_usage(stderr);
        return FB_EXIT_SETUP;
    }
    const char *c = argv[1];
    if (!strcmp(c, "--help") || !strcmp(c, "-h") || !strcmp(c, "help")) {
        cli_print_usage(stdout);
        return 0;
    }
    if (!strcmp(c, "--version") || !strcmp(c, "-V")) {
        printf("fluebox %s (%s)\n", fb_version, fb_commit);
        return fflush(stdout) == 0 ? 0 : FB_EXIT_SETUP;
    }
    if (!strcmp(c, "completion")) /* the layers above cli's, too */
        completion_add_command("mcp", "one sandbox as an MCP server on stdio", mcp_opts,
                               &mcp_opts_n);
    for (size_t i = 0; i < FB_ARRAY_LEN(cmds); i++)
        if (!strcmp(c, cmds[i].name))
            return cmds[i].fn(argc - 2, argv + 2);
    const char *names[FB_ARRAY_LEN(cmds)];
    for (size_t i = 0; i < FB_ARRAY_LEN(cmds); i++)
        names[i] = cmds[i].name;
    const char *near = opt_closest(c, names, FB_ARRAY_LEN(cmds));
    if (near)
        fb_warn("unknown command \"%s\": did you mean \"%s\"? (see fluebox --help)", c, near);
    else
        fb_warn("unknown command \"%s\" (see fluebox --help)", c);
    return FB_EXIT_SETUP;
}
