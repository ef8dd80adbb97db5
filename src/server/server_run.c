/* server_run.c — `run` (docs/protocol.md 4.20): a one-shot command in a
 * fresh session, in one request. The session is made as session.create
 * would make it (from the warm pool when the options fit), the command runs
 * there as an exec, the answer is the exec's, and the session is destroyed
 * once it is given. With passFds the request brings the caller's stdin,
 * stdout and stderr (SCM_RIGHTS, in that order) and the command gets them
 * as its own: nothing of its input or output passes through the server.
 * The sandbox is the same as any session's: nothing is relaxed for speed. */
#include "server.h"

#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>

struct runreq {
    json_t *exec;  /* the exec's parameters */
    int fds[3];    /* passed: stdin, stdout, stderr; -1 when not */
    bool passed;
};

void run_free(struct runreq *r)
{
    if (!r)
        return;
    for (int i = 0; i < 3; i++)
        if (r->fds[i] >= 0)
            close(r->fds[i]);
    json_decref(r->exec);
    free(r);
}

/* A descriptor a command may be given as its stdin, stdout or stderr: what
 * a shell redirects to (a terminal, a pipe, a socket, a file, /dev/null),
 * not a directory or an O_PATH handle, which would let it open host files
 * relative to it from inside the sandbox. */
static bool stdio_ok(int fd)
{
    struct stat st;
    int fl = fcntl(fd, F_GETFL);
    return fl >= 0 && !(fl & O_PATH) && fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode);
}

void m_run(struct conn *c, const struct method *m, json_t *id, json_t *params, struct sess *unused)
{
    struct proto_err e = {0};
    json_t *create = json_object_get(params, "create");
    json_t *exec = json_object_get(params, "exec");
    bool pass;
    if (pget_bool(params, "passFds", &pass, false, &e) < 0)
        return send_error(c, id, &e);
    if (create && !json_is_null(create) && !json_is_object(create)) {
        perr_param(&e, "create", "create must be an object (session.create's parameters)");
        return send_error(c, id, &e);
    }
    if (!json_is_object(exec)) {
        perr_param(&e, "exec", "exec must be an object (exec's parameters, without session)");
        return send_error(c, id, &e);
    }
    struct runreq *r = fb_xcalloc(1, sizeof *r);
    r->fds[0] = r->fds[1] = r->fds[2] = -1;
    r->exec = json_deep_copy(exec);
    r->passed = pass;
    if (pass) {
        if (conn_take_fds(c, r->fds, 3) < 0) {
            run_free(r);
            perr_param(&e, "passFds", "passFds: the request did not come with 3 descriptors "
                                      "(stdin, stdout, stderr as SCM_RIGHTS)");
            return send_error(c, id, &e);
        }
        for (int i = 0; i < 3; i++)
            if (!stdio_ok(r->fds[i])) {
                run_free(r);
                perr_param(&e, "passFds", "passFds: descriptor %d is a directory or an O_PATH "
                                          "handle, not a stream a command may be given", i);
                return send_error(c, id, &e);
            }
    }
    json_t *cp = create && json_is_object(create) ? json_deep_copy(create) : json_object();
    session_create_for(c, id, cp, r);
    json_decref(cp);
}

void run_begin(struct sess *ss, struct conn *c, json_t *id, struct runreq *r, json_t *info)
{
    ss->run_once = true;
    /* The session's info first (its id for exec.kill, warnings). */
    send_event(c, id, "session", info);
    json_object_set_new(r->exec, "session", json_string(ss->s->id));
    int fds[3];
    memcpy(fds, r->fds, sizeof fds);
    r->fds[0] = r->fds[1] = r->fds[2] = -1; /* exec_start takes them */
    struct op *o = exec_start(c, id, r->exec, ss, r->passed ? fds : NULL);
    run_free(r);
    if (!o)
        run_end(ss);
}

void run_end(struct sess *ss)
{
    if (!ss || !ss->run_once || ss->dying || ss->dead)
        return;
    for (struct op *o = ss->ops; o; o = o->snext)
        if (o->kind == OP_EXEC && !o->dead)
            return; /* (one exec of its own; another may have been asked for) */
    sess_destroy(ss);
}
