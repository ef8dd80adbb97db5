/* http1.h — HTTP/1.x message heads for the inspecting relay (inspect.c):
 * parsing a request head strictly and writing it out again in one
 * canonical form (so what the relay checked is exactly what upstream
 * reads), swapping stand-ins for secret values in it, parsing a response
 * head, chunk-size lines, and the path shown in the net log. Pure
 * functions on byte buffers (tests/unit). */
#ifndef FB_HTTP1_H
#define FB_HTTP1_H

#include "fb.h"

#define HTTP_HEAD_MAX (64 * 1024)
#define HTTP_HDRS_MAX 128

struct http_hdr {
    const char *name, *val; /* into the parsed buffer */
    size_t nlen, vlen;
};

struct http_head {
    /* Requests: method and target; responses: status. */
    char method[24];
    const char *target;
    size_t tlen;
    int status;
    uint8_t minor;            /* HTTP/1.minor */
    struct http_hdr h[HTTP_HDRS_MAX];
    size_t nh;
    size_t head_len;          /* bytes up to and including the blank line */
    int64_t content_length;   /* -1: none */
    bool chunked;             /* Transfer-Encoding: chunked */
    bool upgrade;             /* has Upgrade (and Connection: upgrade) */
    bool expect_continue;     /* Expect: 100-continue */
    bool close;               /* Connection: close, or HTTP/1.0 without keep-alive */
    char host[256];           /* requests: Host, lower-case, without port ("" none) */
    const char *why;          /* -1: what is wrong */
};

/* 1: a complete head (h filled, pointing into buf); 0: more bytes needed;
 * -1: malformed or ambiguous (h->why). */
int http1_parse_request(const uint8_t *buf, size_t len, struct http_head *h);
int http1_parse_response(const uint8_t *buf, size_t len, struct http_head *h);

/* A chunk-size line (without its line end): the size; -1 if malformed. */
int http1_chunk_size(const uint8_t *line, size_t len, uint64_t *size);

/* The secrets a head is checked against. */
struct http_secret {
    const char *name;
    const char *standin;
    const uint8_t *value;     /* NULL for a secret not bound to this host */
    size_t vlen;
};

/* Write the request head h out again (request line, each header, blank
 * line) into a malloc'ed *out: every stand-in of a bound secret (value
 * set) swapped for its value in the target (percent-encoded there) and in
 * header values, including inside the base64 of Authorization: Basic;
 * Expect: 100-continue dropped when drop_expect. *used gets a bit per
 * secret swapped in. If the head carries the stand-in of a secret that is
 * not bound (value NULL) anywhere (request line, a header, a Basic
 * credential), nothing is written: returns the index of that secret + 1
 * (and *out is NULL). 0: written. */
int http1_rewrite(const struct http_head *h, const struct http_secret *s, size_t ns,
                  bool drop_expect, uint8_t **out, size_t *outlen, uint64_t *used);

/* The target for the log: the path, and of the query only the names
 * ("/a/b?x&y"), at most cap - 1 bytes. */
void http1_log_path(const char *target, size_t tlen, char *out, size_t cap);

/* Does the target's path have dot segments, encoded dots, slashes or
 * backslashes (a path whose meaning depends on who normalises it)? */
bool http1_path_unclear(const char *target, size_t tlen);

/* Does path (the target up to '?') fall under prefix: equal, or prefix
 * ends with '/' and path starts with it, or path continues with '/'. */
bool http1_prefix_match(const char *target, size_t tlen, const char *prefix);

/* Base64 (RFC 4648, with padding): encode n bytes into out (cap at least
 * 4 * ((n + 2) / 3) + 1); decode (whitespace not allowed) into out (cap
 * at least 3 * (n / 4)): the length, or -1. */
size_t http1_b64_encode(const uint8_t *in, size_t n, char *out);
ssize_t http1_b64_decode(const char *in, size_t n, uint8_t *out);

#endif
