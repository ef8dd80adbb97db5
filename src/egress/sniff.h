/* sniff.h — what a client's first bytes say about where it wants to go: the
 * server name of a TLS ClientHello (SNI), the Host of an HTTP/1.x request,
 * the target of an HTTP CONNECT request. Pure functions on byte buffers;
 * egress compares the result with the name the connection was made for.
 *
 * The parsers are strict on purpose: anything ambiguous (two Host headers,
 * header folding, bare CR, a ClientHello with two names, the ESNI draft) is
 * reported as SNIFF_BAD rather than guessed at, because a server that reads
 * it differently would be a way around the check. An ECH extension is
 * reported (ech) but not refused: browsers send a placeholder one on every
 * connection, and its outer name is still the one checked. */
#ifndef FB_SNIFF_H
#define FB_SNIFF_H

#include "fb.h"

enum sniff_kind {
    SNIFF_MORE,  /* too few bytes to tell yet */
    SNIFF_TLS,   /* a TLS ClientHello; name = SNI ("" when it has none) */
    SNIFF_HTTP,  /* an HTTP/1.x request head; name = Host without port */
    SNIFF_OTHER, /* neither TLS nor HTTP */
    SNIFF_BAD,   /* TLS or HTTP, but malformed or ambiguous: why */
};

#define SNIFF_NAME_MAX 256

struct sniff {
    enum sniff_kind kind;
    char name[SNIFF_NAME_MAX]; /* lower-case, no trailing dot */
    char method[24];           /* HTTP: the request method */
    const char *why;           /* SNIFF_BAD: what is wrong */
    bool ech;                  /* TLS: has an encrypted_client_hello extension */
    size_t head_len;           /* HTTP: bytes up to and including the blank line */
    /* HTTP requests: how the request goes on after its head. A request
     * whose end a server could see elsewhere (two Content-Lengths, both
     * Content-Length and Transfer-Encoding, another coding than chunked)
     * is SNIFF_BAD. */
    uint8_t minor;             /* HTTP/1.minor */
    int64_t content_length;    /* body bytes (0 without the header) */
    bool chunked;              /* Transfer-Encoding: chunked */
    bool upgrade;              /* has an Upgrade header (h2c is SNIFF_BAD) */
    /* SNIFF_MORE: the answer cannot change before there are need bytes, or
     * (lf) before a new line feed arrives: a caller that gets its bytes in
     * pieces need not ask again before then (no quadratic re-parsing). */
    size_t need;
    bool lf;
};

/* Classify the first len bytes a client sent. */
void sniff_classify(const uint8_t *buf, size_t len, struct sniff *out);

/* After SNIFF_MORE for the first seen bytes with need and lf (0 when never
 * asked): can the answer be different for the first len bytes of buf? */
bool sniff_may_change(size_t seen, size_t need, bool lf, const uint8_t *buf, size_t len);

/* Parse an HTTP proxy request head ("CONNECT host:port HTTP/1.1" ...).
 * Returns SNIFF_MORE, SNIFF_BAD (why set; method holds a non-CONNECT method)
 * or SNIFF_HTTP with name = host (lower-case), *port and head_len set. */
void sniff_connect(const uint8_t *buf, size_t len, struct sniff *out, uint16_t *port);

/* Following every request of a plain-HTTP client stream, so that each
 * one's Host is checked, not only the first's: request heads (as
 * sniff_classify), bodies by Content-Length or the chunked coding, and an
 * Upgrade on the first request (after the server's 101 the stream is no
 * longer HTTP; if the server declines, requests go on). Zero-initialise. */
enum http_walk_state {
    HW_HEAD, HW_BODY, HW_CHUNK_SIZE, HW_CHUNK_DATA, HW_CHUNK_END, HW_TRAILER, HW_UPGRADE, HW_TUNNEL
};
struct http_walk {
    enum http_walk_state st;
    uint64_t left;     /* HW_BODY, HW_CHUNK_DATA: bytes still to pass */
    unsigned requests; /* request heads seen */
    bool upgrade;      /* the current request asks for an upgrade */
    /* Waiting for the rest of a head or line: how much of it was seen, and
     * what can change the answer (as struct sniff's need and lf). */
    size_t seen, need;
    bool lf;
};
enum http_walk_result {
    HW_MORE,    /* the first *used bytes may pass; more are needed to go on */
    HW_REQUEST, /* a request head ends at *used; req holds it: check it,
                   then call again with the bytes after it */
    HW_WAIT,    /* an upgrade request ends at *used: nothing more passes
                   until http_walk_answer() */
    HW_ERROR,   /* not a well-formed request stream: req->why */
};
enum http_walk_result http_walk(struct http_walk *w, const uint8_t *buf, size_t len, size_t *used,
                                struct sniff *req);
/* The server answered the upgrade request: with 101 (switched) or not. */
void http_walk_answer(struct http_walk *w, bool switched);

/* An HTTP/1.x response head: SNIFF_MORE, SNIFF_BAD, or SNIFF_HTTP with
 * *status and head_len set. */
void sniff_response(const uint8_t *buf, size_t len, struct sniff *out, int *status);

/* Lower-case a host name in place and drop one trailing dot; false if it is
 * empty or has bytes that cannot be in a host name. */
bool sniff_norm_host(char *s);

#endif
