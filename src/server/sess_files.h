/* sess_files.h — between a session's init loop (sess_init.c) and its file
 * operations (sess_files.c): the operations and their unfinished work for
 * the loop, and the loop's replies for the operations. Both halves run in
 * init only. */
#ifndef FB_SESS_FILES_H
#define FB_SESS_FILES_H

#include <jansson.h>
#include <poll.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* sess_init.c: an answer to request tag on the control socket. */
void sinit_reply_ok(int64_t tag, json_t *result, const void *payload, size_t plen);
void sinit_reply_errno(int64_t tag, int e);

/* A request's fields: a non-empty string or NULL, an integer or d, true. */
static inline const char *hstr(json_t *h, const char *k)
{
    const char *s = json_string_value(json_object_get(h, k));
    return s && *s ? s : NULL;
}

static inline int64_t hint(json_t *h, const char *k, int64_t d)
{
    json_t *v = json_object_get(h, k);
    return json_is_integer(v) ? json_integer_value(v) : d;
}

static inline bool hbool(json_t *h, const char *k)
{
    return json_is_true(json_object_get(h, k));
}

/* sess_files.c: performs the file operation op (false: not one); it is
 * answered now or, for a transfer or removal, when that is done. */
bool sfile_dispatch(const char *op, int64_t tag, json_t *h, const char *payload, size_t plen,
                    int *fds, size_t nfds);
/* Transfers under way: how many descriptors they poll, and those (POLLIN
 * or POLLOUT on each pipe) into pf. */
size_t sfile_npoll(void);
size_t sfile_pollfds(struct pollfd *pf);
/* One turn: move what transfers can move without waiting (polled: their
 * descriptors were polled) and remove the next few entries of removals. */
void sfile_step(bool polled);
/* A removal is under way: the loop must not wait in poll. */
bool sfile_busy(void);
/* The server's deadline passed for tag: a transfer ends with ECANCELED, a
 * removal stops where it is. False when tag is no transfer or removal. */
bool sfile_cancel(int64_t tag);

#endif
