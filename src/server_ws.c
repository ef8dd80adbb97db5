/* server_ws.c — the workspace.* methods of copy-on-write sessions:
 * workspace.diff / workspace.commit / workspace.reset are answered from the
 * session's upper layer (cow_session.c); not_supported unless the session
 * was created with "cow": true. */
#include "server.h"

#include "cow.h"

void m_workspace(struct conn *c, const struct method *m, json_t *id, json_t *params,
                 struct sess *ss)
{
    struct proto_err e = {0};
    json_t *r = cow_session_method(ss->s->sb.cow, m->name, params, &e);
    if (r)
        send_result(c, id, r);
    else
        send_error(c, id, &e);
}
