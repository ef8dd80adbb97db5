/* commands.h — entry points of the subcommands, called by main.c with the
 * arguments after the subcommand name. Each returns fluebox's exit code. */
#ifndef FB_COMMANDS_H
#define FB_COMMANDS_H

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

#endif
