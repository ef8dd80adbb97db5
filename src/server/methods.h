/* methods.h — the one list of the protocol's methods (docs/protocol.md).
 *
 * Each entry: the method name, the server's handler, what the request must
 * name (SCOPE_NONE: no session; SCOPE_DYING: a session, even one being
 * destroyed; SCOPE_ANY: a session not being destroyed, dead or alive;
 * SCOPE_LIVE: a running session) and an argument for the handler (the file
 * operation of the file.* methods). proto.c takes the names from here (the
 * methods a request may name and server.info lists); server_methods.c takes
 * the whole entry for its dispatch table, so a listed method without a
 * handler does not compile. Keep server.info's order: it is what clients
 * see. */
#ifndef FB_METHODS_H
#define FB_METHODS_H

#define FB_METHODS(X)                                                  \
    X("session.create", m_session_create, SCOPE_NONE, 0)             \
    X("session.destroy", m_session_destroy, SCOPE_DYING, 0)          \
    X("session.list", m_session_list, SCOPE_NONE, 0)                 \
    X("session.info", m_session_info, SCOPE_ANY, 0)                  \
    X("session.publish", m_session_publish, SCOPE_LIVE, 0)            \
    X("session.unpublish", m_session_unpublish, SCOPE_LIVE, 0)        \
    X("session.fork", m_session_fork, SCOPE_LIVE, 0)                  \
    X("session.snapshot", m_workspace, SCOPE_LIVE, 0)                 \
    X("session.restore", m_workspace, SCOPE_LIVE, 0)                  \
    X("session.grant", m_session_grant, SCOPE_LIVE, 0)                \
    X("session.revoke", m_session_revoke, SCOPE_LIVE, 0)              \
    X("exec", m_exec, SCOPE_LIVE, 0)                                  \
    X("exec.kill", m_exec_kill, SCOPE_LIVE, 0)                        \
    X("exec.write", m_exec_write, SCOPE_LIVE, 0)                      \
    X("exec.closeStdin", m_exec_close_stdin, SCOPE_LIVE, 0)           \
    X("exec.resize", m_exec_resize, SCOPE_LIVE, 0)                    \
    X("file.read", m_file, SCOPE_LIVE, F_READ)                        \
    X("file.write", m_file, SCOPE_LIVE, F_WRITE)                      \
    X("file.stat", m_file, SCOPE_LIVE, F_STAT)                        \
    X("file.readdir", m_file, SCOPE_LIVE, F_READDIR)                  \
    X("file.exists", m_file, SCOPE_LIVE, F_EXISTS)                    \
    X("file.mkdir", m_file, SCOPE_LIVE, F_MKDIR)                      \
    X("file.rm", m_file, SCOPE_LIVE, F_RM)                            \
    X("file.rename", m_file, SCOPE_LIVE, F_RENAME)                    \
    X("server.info", m_server_info, SCOPE_NONE, 0)                   \
    X("workspace.diff", m_workspace, SCOPE_LIVE, 0)                   \
    X("workspace.commit", m_workspace, SCOPE_LIVE, 0)                 \
    X("workspace.reset", m_workspace, SCOPE_LIVE, 0)                   \
    X("workspace.cancel", m_workspace_cancel, SCOPE_LIVE, 0)           \
    X("run", m_run, SCOPE_NONE, 0)

#endif
