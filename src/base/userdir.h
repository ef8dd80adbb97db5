/* userdir.h — the user's private runtime directory (where the server's
 * socket lives by default) and what fluebox keeps there: markers for
 * warnings said once per user and boot.
 *
 * The directory is $XDG_RUNTIME_DIR, else /run/user/UID, else
 * /tmp/fluebox-UID (created mode 0700). UID is the user's id one user
 * namespace up (/proc/self/uid_map): uid 0 of an `unshare -r` namespace is
 * not root and must not take root's directory in a shared /tmp. Each is used only when it is a
 * directory (not a symlink) owned by the user and closed to group and
 * others (mode & 077 == 0): anyone else who can write there could plant
 * a socket or a marker. */
#ifndef FB_USERDIR_H
#define FB_USERDIR_H

#include "fb.h"

/* Fill out (cap bytes) with the directory. create: make /tmp/fluebox-UID
 * (0700) when it is missing. Returns 0, or -1 with a one-line error naming
 * the directory and what is wrong with it. */
int fb_user_dir(char *out, size_t cap, bool create, struct fb_err *err);

/* The id uid has one user namespace up (/proc/self/uid_map); uid itself in
 * the initial namespace or when it is not mapped. */
uid_t fb_outer_uid(uid_t uid);

/* Is dir usable as the user's private directory? 0, or -1 with why. */
int fb_user_dir_check(const char *dir, uid_t uid, struct fb_err *err);

/* fb_note(), but only the first time since boot that this user is warned
 * about key (a marker in the user's directory holds the boot id). key: what
 * the warning is about, without what changes from run to run. When there
 * is no usable directory it warns every time. */
void fb_note_once(struct fb_err *err, const char *key, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif
