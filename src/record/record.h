/* record.h — the flight recorder's writer (--record FILE): one JSON object
 * per line, each naming the SHA-256 of the line before it, so that any edit,
 * removal, reordering or insertion breaks the chain; with --record-key an
 * Ed25519 signature of the chain head at checkpoints and on the last line.
 *
 * It knows the format (docs/record.md) and nothing of what is recorded:
 * callers hand it events as JSON objects. A NULL struct fb_record (no
 * --record) is valid everywhere and records nothing. The verifier and the
 * summary are record_verify.c and record_show.c; the crypto they share is
 * record_crypto.c. */
#ifndef FB_RECORD_H
#define FB_RECORD_H

#include "fb.h"

#include <jansson.h>

#define FB_RECORD_FORMAT 1
/* The "prev" of the first line: there is no line before it. */
#define FB_RECORD_GENESIS "0000000000000000000000000000000000000000000000000000000000000000"
/* With a key: a signed checkpoint after this many lines or seconds since
 * the last signature (checked as lines are written), and fsync with it. */
#define FB_RECORD_CHECKPOINT_LINES 1000
#define FB_RECORD_CHECKPOINT_SEC 30

struct fb_record;

/* Create path (never an existing file: O_CREAT|O_EXCL|O_NOFOLLOW, 0600) and
 * write its first line ("record": the format, fluebox's version, the public
 * key). key_path (NULL: unsigned) is an Ed25519 private key in PEM: read and
 * checked here, then forgotten; it is read again from its open descriptor
 * for each signature and wiped right after, so no copy of the supervisor's
 * memory (a sandbox cloned from it) holds it. On failure
 * nothing is left behind (the file is removed) and err names the problem
 * (FB_EXIT_SETUP). */
struct fb_record *record_open(const char *path, const char *key_path, struct fb_err *err);

/* Append one event: o is {"event": NAME, ...}, consumed; seq, time and prev
 * are put before its fields. Written with one write(); a write that fails
 * (a full disk) stops the record there (record_close says so). */
void record_event(struct fb_record *r, json_t *o);

/* The last line: {"event":"end", ...o} (o may be NULL), signed with the
 * key; fsync; close; free. Returns -1 (with err) when a line could not be
 * written or signed, so a record that was asked for is known incomplete. */
int record_close(struct fb_record *r, json_t *o, struct fb_err *err);

/* Close and remove the file: nothing happened that it should keep (a
 * request refused before it started). NULL: nothing. */
void record_discard(struct fb_record *r);

/* Close without an end line (a forked child's copy, or giving up). */
void record_abandon(struct fb_record *r);

/* The record's descriptor (to keep out of children), or -1. */
int record_fd(const struct fb_record *r);

#endif
