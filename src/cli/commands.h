/* commands.h — entry points of the subcommands, called by main.c with the
 * arguments after the subcommand name. Each returns fluebox's exit code. */
#ifndef FB_COMMANDS_H
#define FB_COMMANDS_H

#include "options.h"

int cmd_profile(int argc, char **argv); /* profile_cmd.c */
int cmd_learn(int argc, char **argv);   /* learn.c */
int cmd_serve(int argc, char **argv);   /* server.c */
int cmd_session(int argc, char **argv); /* client.c */
int cmd_exec(int argc, char **argv);    /* client.c */
int cmd_cp(int argc, char **argv);      /* client.c */
int cmd_oci(int argc, char **argv);     /* oci.c (also run as fluebox-oci[-PROFILE]) */
int cmd_doctor(int argc, char **argv);  /* doctor.c */
int cmd_mcp(int argc, char **argv);     /* mcp/mcp.c */
int cmd_record(int argc, char **argv);  /* record_verify.c: verify, show */
int cmd_completion(int argc, char **argv); /* completion.c */
/* A subcommand of a higher layer (main.c adds mcp's) for `fluebox completion`:
 * its own table, and the policy options a session takes. */
void completion_add_command(const char *name, const char *desc, const struct fb_opt *opts,
                            const size_t *n);

/* The subcommands' own option tables (options.h), each defined beside its
 * subcommand, for `fluebox completion` (the policy table is policy_opts.h's). */
extern const struct fb_opt serve_opts[], create_opts[], session_opts[], exec_opts[], cp_opts[],
    doc_opts[], learn_opts[], ws_opts[], bpf_opts[];
extern const size_t serve_opts_n, create_opts_n, session_opts_n, exec_opts_n, cp_opts_n,
    doc_opts_n, learn_opts_n, ws_opts_n, bpf_opts_n;

#endif
