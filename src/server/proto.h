/* proto.h — the wire protocol's pure parts (docs/protocol.md): request
 * parsing and validation, typed parameter getters with stable error codes,
 * response/event encoding, JSON text of output bytes, errno and signal
 * names, and the default socket path (the byte queue, base64 and UTF-8 are
 * in base/bytes.h). No I/O on sockets here, so the
 * parser can be fuzzed (tests/fuzz/fuzz_proto.c) and unit-tested. */
#ifndef FB_PROTO_H
#define FB_PROTO_H

#include "bytes.h"
#include "fb.h"

#include <jansson.h>

#define FB_PROTO_VERSION 1

/* An error for the client: a stable code (docs/protocol.md section 3), a
 * message, and optionally the parameter / path / limit it concerns. */
struct proto_err {
    const char *code;
    char message[512];
    char param[64]; /* error.param, or "" */
    char limit[32]; /* error.limit, or "" */
    char *path;     /* error.path (malloc'ed) or NULL */
};
int perr_set(struct proto_err *e, const char *code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
int perr_param(struct proto_err *e, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void perr_clear(struct proto_err *e);

/* A parsed request. root owns everything; id and params are borrowed. */
struct proto_req {
    json_t *root;
    json_t *id;         /* string or integer; NULL when unknown */
    const char *method;
    json_t *params;     /* always an object */
};
/* Parse one line (without the newline). Returns 0, or -1 with e filled
 * (parse_error / invalid_request); req->id is set if it could be read (the
 * caller echoes it) and req->root must still be freed with proto_req_free. */
int proto_parse_request(const char *line, size_t len, struct proto_req *req, struct proto_err *e);
void proto_req_free(struct proto_req *req);
/* Strings at least this long without escapes skip jansson's lexer (a speed
 * matter only; the fuzz target lowers it to compare both paths). */
extern size_t proto_bulk_min;
/* The id of a request from the first bytes of its line, when the line
 * starts with {"id": and a string without escapes or an integer (how the
 * clients write them): used to answer a line too long to parse. New
 * reference or NULL. */
json_t *proto_peek_id(const char *buf, size_t n);
/* Is the method one the protocol defines? */
bool proto_method_known(const char *method);
extern const char *const proto_methods[];

/* Typed parameter getters. key may be "a.b" for a nested object (the
 * parent must be an object or absent). A missing key (or null, where noted)
 * yields the default; a wrong type or bad value fills e with invalid_params
 * naming the parameter and returns -1. Strings (pget_str, arrays and maps of
 * strings) must not contain NUL; pget_bytes takes any string with its length. */
int pget_bytes(json_t *params, const char *key, const char **out, size_t *len, bool required,
               struct proto_err *e);
int pget_str(json_t *params, const char *key, const char **out, const char *dflt, bool required,
             size_t maxlen, struct proto_err *e);
int pget_bool(json_t *params, const char *key, bool *out, bool dflt, struct proto_err *e);
int pget_int(json_t *params, const char *key, int64_t *out, int64_t dflt, int64_t min,
             int64_t max, struct proto_err *e);
/* Size: integer bytes, "512M", -1 or "unlimited" (-1). */
int pget_size(json_t *params, const char *key, int64_t *out, int64_t dflt, struct proto_err *e);
/* Mode: integer or octal string; masked to 07777. */
int pget_mode(json_t *params, const char *key, unsigned *out, unsigned dflt, struct proto_err *e);
/* Encoding: "utf8"/"text" -> false, "base64" -> true. */
int pget_encoding(json_t *params, const char *key, bool *base64, struct proto_err *e);
/* A path: 1..4095 bytes (NUL is already impossible in jansson strings). */
int pget_path(json_t *params, const char *key, const char **out, struct proto_err *e);
/* Array of strings (each non-empty if nonempty); *out is borrowed json. */
int pget_strarray(json_t *params, const char *key, json_t **out, bool nonempty_items,
                  struct proto_err *e);
/* Object of string -> string. */
int pget_strmap(json_t *params, const char *key, json_t **out, struct proto_err *e);

/* Encoders: return a malloc'ed line ending in "\n" and its length. They
 * steal `result` / `extra`. */
char *proto_result_line(json_t *id, json_t *result, size_t *len);
char *proto_error_line(json_t *id, const struct proto_err *e, size_t *len);
char *proto_event_line(json_t *id, const char *event, json_t *fields, size_t *len);

/* The body of a JSON string (without quotes) holding in taken as UTF-8,
 * repaired as utf8_repair does with final set, escaped as jansson does.
 * Returns its length; writes it to out unless out is NULL (so a first call
 * sizes the buffer). A byte becomes at most 6. */
size_t json_text(const unsigned char *in, size_t n, char *out);

/* "ENOENT" etc.; "EIO" for unknown numbers. */
const char *proto_errno_name(int e);
/* Signal from a JSON value: "SIGTERM", "TERM", 15. Only the signals the
 * protocol allows. Returns the number or -1. */
int proto_signal_parse(json_t *v);
/* "SIGKILL" for 9, or NULL. */
const char *proto_signal_name(int sig);

/* Default socket path (docs/protocol.md section 1). With create, makes the
 * /tmp/fluebox-UID directory (0700) when that is the one chosen. */
int proto_default_socket(char *out, size_t cap, bool create, struct fb_err *err);

#endif
