/* mcp.h — `fluebox mcp`: the sandbox as a Model Context Protocol server over
 * stdio (docs/mcp.md). Three files share this header:
 *   mcp.c          the JSON-RPC 2.0 / MCP loop: framing of stdin and stdout,
 *                  initialize and version negotiation, dispatch, progress
 *                  notifications, cancellation, bounded queues, shutdown;
 *   mcp_tools.c    the tools (exec, read_file, write_file, edit_file,
 *                  list_dir, diff, commit): their schemas, argument checks, and how
 *                  each maps to requests of the wire protocol and back;
 *   mcp_backend.c  the private `fluebox serve` this process starts (its own
 *                  socket in a 0700 directory), the one session it creates
 *                  with the command line's policy, and the non-blocking
 *                  connection to it.
 * One MCP connection (this process) is one session; the policy is fixed by
 * the command line and no tool can change it. */
#ifndef FB_MCP_H
#define FB_MCP_H

#include "client.h"

#include <sys/types.h>

#define MCP_MAX_LINE (16 << 20)     /* a request line from the client */
#define MCP_MAX_PENDING 64          /* tool calls in flight; then stdin waits */
#define MCP_OUT_HIGH (8 << 20)      /* queued for stdout: stop reading above */
#define MCP_DEFAULT_OUTPUT (1 << 20) /* bytes kept per exec stream / read */
#define MCP_DEFAULT_TIMEOUT_MS 600000 /* an exec's default timeout */
#define MCP_MAX_LIST 1000           /* list_dir entries given a size */
#define MCP_EDIT_MAX (16 << 20)     /* edit_file: the largest file it edits */

/* One tool call in flight: at most one request to the server at a time. */
struct mcp_op {
    struct mcp_op *next;
    json_t *rpc_id;    /* the client's request id */
    json_t *token;     /* its progressToken, or NULL */
    int tool;          /* index in mcp_tools.c's table */
    int step;          /* the tool's own state */
    int64_t srv_id;    /* the server request it waits for, 0 when none */
    int64_t started_ms, next_progress_ms;
    int64_t progress;  /* notifications sent */
    json_t *args;      /* the call's arguments (a reference) */
    json_t *acc;       /* what the tool has gathered (list_dir) */
    size_t idx;
    char xid[32];      /* exec: its execId, for a cancel */
    bool cancelled;    /* notifications/cancelled: no answer is sent */
};

struct mcp {
    /* the private server and its session (mcp_backend.c) */
    pid_t child;
    char dir[256], sock[300];
    struct cli c;          /* the connection; c.fd non-blocking */
    int logfd;             /* the server's stderr, -1 once it ended */
    struct fb_buf log;
    struct fb_buf srv_out; /* requests not yet written to the server */
    bool srv_gone;
    char *sid;             /* the session */
    bool cow;              /* --cow: the diff tool */
    bool allow_commit;     /* --mcp-allow-commit: the commit tool */
    int64_t timeout_ms;    /* an exec's default timeout */
    size_t max_output;     /* --max-output */
    /* the client side (mcp.c) */
    struct fb_buf in, out;
    bool in_eof, skipping, out_gone;
    const char *version;   /* negotiated protocol revision, NULL before */
    struct mcp_op *ops;
    int nops;
};

/* mcp_backend.c */
int mcp_backend_start(struct mcp *m, json_t *options, struct fb_err *err);
void mcp_backend_stop(struct mcp *m);
/* Pass the server's warnings on to our stderr (its JSON event log is not). */
void mcp_backend_log(struct mcp *m);
/* Queue one request for the server (steals params); op->srv_id is its id
 * (op NULL: an answer nobody waits for). */
void mcp_srv_send(struct mcp *m, struct mcp_op *op, const char *method, json_t *params);
/* Write what is queued (POLLOUT) / read what arrived (POLLIN): each whole
 * message is handed to mcp_srv_message. -1 when the server is gone. */
int mcp_srv_flush(struct mcp *m);
int mcp_srv_read(struct mcp *m);

/* mcp.c */
void mcp_srv_message(struct mcp *m, json_t *msg);
/* Answer the op's call with result (stolen) and free the op. */
void mcp_op_done(struct mcp *m, struct mcp_op *op, json_t *result);
/* A tool error result: isError with one line of text. */
void mcp_op_fail(struct mcp *m, struct mcp_op *op, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void mcp_emit(struct mcp *m, json_t *msg); /* queue a message for stdout (stolen) */
int64_t mcp_now_ms(void);
/* True when the negotiated revision is at least v ("2025-06-18"). */
bool mcp_version_at_least(const struct mcp *m, const char *v);

/* mcp_tools.c */
json_t *mcp_tools_list(const struct mcp *m);
int mcp_tool_find(const struct mcp *m, const char *name);
/* Start the call: 0 started (or answered), -1 with why: the arguments do
 * not fit the tool's schema. */
int mcp_tool_start(struct mcp *m, struct mcp_op *op, char *why, size_t cap);
/* The server's answer to op->srv_id (a borrowed message). */
void mcp_tool_reply(struct mcp *m, struct mcp_op *op, json_t *msg);
/* A bytes buffer as a JSON string (invalid UTF-8 replaced). */
json_t *mcp_jstr(const unsigned char *p, size_t n);

int cmd_mcp(int argc, char **argv);
/* Its option table (for fluebox completion, through main.c). */
extern const struct fb_opt mcp_opts[];
extern const size_t mcp_opts_n;

#endif
