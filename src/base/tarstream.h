/* tarstream.h — the tar streams of `fluebox cp -r` (client_cp.c): a writer
 * that turns a local directory into a tar stream, and a reader that
 * unpacks a stream that came out of a sandbox into a local directory.
 *
 * The format is POSIX ustar with pax extended headers for long names and
 * big files (what tar(1) reads), and on input also GNU tar's long-name
 * records (what tar(1) writes by default).
 *
 * Both sides are written for content nobody vouches for:
 *   writer  walks the directory from descriptors with O_NOFOLLOW: a symlink
 *           is stored as a symlink (its target is text), never followed;
 *           fifos, sockets and devices are skipped (each named once).
 *   reader  creates everything beneath the destination's descriptor, one
 *           component at a time with O_NOFOLLOW: a member whose path has
 *           ".." or goes through a symlink (one from the stream, or one
 *           that was already in the destination) is refused; symlinks are
 *           created as symlinks and never followed; set-id bits are
 *           dropped; files are owned by the caller; hard links, devices
 *           and fifos are skipped. Directory modes are applied at the end
 *           (a read-only directory still receives its files). */
#ifndef FB_TARSTREAM_H
#define FB_TARSTREAM_H

#include "fb.h"

/* ---- writer ---- */

/* emit(ctx, data, len): the stream's next bytes; -1 stops the walk. */
typedef int tar_emit_fn(void *ctx, const void *data, size_t len);

/* Stream the directory dir (a descriptor) under the name prefix (members
 * are "prefix/..."; "" or "." puts them at the top), then the end blocks.
 * warn(ctx, msg) hears about skipped entries (may be NULL). 0, or -1 with
 * err. */
int tar_write_dir(int dir, const char *prefix, tar_emit_fn *emit, void *ctx,
                  void (*warn)(void *ctx, const char *msg), struct fb_err *err);

/* ---- reader ---- */

struct tar_reader;

/* Unpack into the directory dest (a descriptor, not taken). strip: leading
 * path components to drop from each member (members with no more are
 * skipped). */
struct tar_reader *tar_reader_new(int dest, int strip);
/* Feed the next bytes of the stream. 0, or -1 with err (the first error
 * stops everything; what was unpacked stays). */
int tar_reader_feed(struct tar_reader *r, const void *data, size_t len, struct fb_err *err);
/* The stream ended: apply directory modes; -1 with err when it ended in the
 * middle of a member. Counts of what was unpacked and skipped. */
int tar_reader_finish(struct tar_reader *r, size_t *files, size_t *skipped, struct fb_err *err);
void tar_reader_free(struct tar_reader *r);

#endif
