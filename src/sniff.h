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
};

/* Classify the first len bytes a client sent. */
void sniff_classify(const uint8_t *buf, size_t len, struct sniff *out);

/* Parse an HTTP proxy request head ("CONNECT host:port HTTP/1.1" ...).
 * Returns SNIFF_MORE, SNIFF_BAD (why set; method holds a non-CONNECT method)
 * or SNIFF_HTTP with name = host (lower-case), *port and head_len set. */
void sniff_connect(const uint8_t *buf, size_t len, struct sniff *out, uint16_t *port);

/* Lower-case a host name in place and drop one trailing dot; false if it is
 * empty or has bytes that cannot be in a host name. */
bool sniff_norm_host(char *s);

#endif
