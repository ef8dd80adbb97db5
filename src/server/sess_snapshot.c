/* sess_snapshot.c — snapshots of a copy-on-write session's workspace layer
 * (session.snapshot / session.restore, docs/protocol.md): an agent tries
 * something, and rolls back to a named point, as often as it likes.
 *
 * A snapshot is a copy of the upper layer (what the session changed, not
 * the host workspace under it) in a directory "snapshots/NAME" of the
 * session's scratch tmpfs, which the sandbox never sees (only some of the
 * scratch space's directories are mounted inside): it counts against the
 * session's --disk, and goes with the session. The copy is made by a child
 * process in the session's cgroup (childjob.h), writing as the sandbox's
 * user (the tmpfs belongs to the sandbox's user namespace), through
 * treecopy.h, which follows no link of the tree the sandbox wrote.
 *
 * A restore replaces the overlay at /workspace by one whose upper layer is
 * a copy of the snapshot (cow_restore, as workspace.reset does with an
 * empty one): the snapshot stays, for the next restore. */
#include "cow_mount.h"

#include "childjob.h"
#include "proto.h"
#include "treecopy.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#define SNAPDIR "snapshots"
#define MAX_SNAPSHOTS 64

static bool name_ok(const char *s)
{
    size_t l = strlen(s);
    if (l < 1 || l > 64 || s[0] == '.')
        return false;
    for (size_t i = 0; i < l; i++) {
        char ch = s[i];
        if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') ||
              ch == '.' || ch == '_' || ch == '-'))
            return false;
    }
    return true;
}

static int get_name(json_t *params, const char **name, struct proto_err *e)
{
    if (pget_str(params, "name", name, NULL, true, 64, e) < 0)
        return -1;
    if (!name_ok(*name))
        return perr_param(e, "name", "name must be 1 to 64 characters of [A-Za-z0-9._-], not starting with a dot");
    return 0;
}

static int not_live(struct fb_cow *c, const char *what, struct proto_err *e)
{
    if (c->scratch >= 0 && c->upper >= 0 && c->userns >= 0 && !c->persistent)
        return 0;
    perr_set(e, "not_supported", "%s needs a session with a copy-on-write workspace", what);
    return -1;
}

struct snapjob {
    struct fb_cow *c;
    const char *name;
    uid_t uid;       /* the sandbox user's host ids: the writer */
    gid_t gid;
    int64_t bytes, entries;
};

/* In the child process: copy the upper layer to snapshots/.new-NAME, then
 * put it in place of snapshots/NAME. */
static int snap_copy(void *arg, struct fb_err *err)
{
    struct snapjob *j = arg;
    struct fb_cow *c = j->c;
    if (c->root && childjob_write_as(j->uid, j->gid, err) < 0)
        return -1;
    if (mkdirat(c->scratch, SNAPDIR, 0700) < 0 && errno != EEXIST)
        return fb_errno(err, FB_EXIT_SETUP, "snapshot: creating its directory");
    cleanup_close int dir = openat(c->scratch, SNAPDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0)
        return fb_errno(err, FB_EXIT_SETUP, "snapshot: opening its directory");
    char tmp[80], old[80];
    snprintf(tmp, sizeof tmp, ".new-%s", j->name);
    snprintf(old, sizeof old, ".old-%s", j->name);
    /* Leftovers of an earlier attempt that died half way. */
    const char *stale[2] = {tmp, old};
    for (int i = 0; i < 2; i++) {
        int d = openat(dir, stale[i], O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d >= 0) {
            tree_empty(d);
            close(d);
            unlinkat(dir, stale[i], AT_REMOVEDIR);
        }
    }
    if (mkdirat(dir, tmp, 0700) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "snapshot: creating it");
    cleanup_close int dst = openat(dir, tmp, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct tree_copy_opts o = {.chown = c->root};
    if (dst < 0 || tree_copy(c->upper, dst, &o, err) < 0) {
        if (dst >= 0) {
            tree_empty(dst);
            unlinkat(dir, tmp, AT_REMOVEDIR);
        }
        return err->msg[0] ? -1 : fb_errno(err, FB_EXIT_SETUP, "snapshot");
    }
    /* The copy's root keeps the layer's mode; the snapshot itself is the
     * server's business: nobody else's to list. */
    bool had = renameat(dir, j->name, dir, old) == 0;
    if (renameat(dir, tmp, dir, j->name) < 0) {
        int e = errno;
        if (had)
            renameat(dir, old, dir, j->name);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "snapshot: putting it in place");
    }
    if (had) {
        int d = openat(dir, old, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        if (d >= 0) {
            tree_empty(d);
            close(d);
        }
        unlinkat(dir, old, AT_REMOVEDIR);
    }
    return 0;
}

static int64_t wall_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static unsigned count_snapshots(const struct fb_cow *c)
{
    json_t *a = cow_snapshots_json(c);
    unsigned n = (unsigned)json_array_size(a);
    json_decref(a);
    return n;
}

json_t *cow_snapshot(struct fb_cow *c, json_t *params, struct proto_err *e)
{
    const char *name;
    if (get_name(params, &name, e) < 0 || not_live(c, "session.snapshot", e) < 0)
        return NULL;
    if (count_snapshots(c) >= MAX_SNAPSHOTS) {
        cleanup_close int dir = openat(c->scratch, SNAPDIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
        struct stat st;
        if (dir < 0 || fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
            perr_set(e, "limit_exceeded", "at most %d snapshots per session", MAX_SNAPSHOTS);
            snprintf(e->limit, sizeof e->limit, "snapshotsPerSession");
            return NULL;
        }
    }
    struct stat us;
    if (fstat(c->upper, &us) < 0) {
        perr_set(e, "internal", "snapshot: the upper layer: %s", strerror(errno));
        return NULL;
    }
    struct snapjob j = {.c = c, .name = name, .uid = us.st_uid, .gid = us.st_gid};
    struct fb_err err = {0};
    uint64_t t0 = fb_now_ns();
    if (childjob_run(c->cg, snap_copy, &j, &err) < 0) {
        bool full = strstr(err.msg, "No space left") != NULL;
        perr_set(e, full ? "ENOSPC" : "internal", "%s%s", err.msg,
                 full ? " (snapshots count against the session's limits.disk)" : "");
        return NULL;
    }
    int64_t ms = (int64_t)((fb_now_ns() - t0) / 1000000);
    cleanup_close int dir = openat(c->scratch, SNAPDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_close int snap = dir >= 0 ? openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    int64_t bytes = 0, entries = 0;
    if (snap >= 0)
        tree_measure(snap, &bytes, &entries);
    return json_pack("{s:s, s:I, s:I, s:I, s:I}", "name", name, "bytes", (json_int_t)bytes, "entries",
                     (json_int_t)entries, "createdAt", (json_int_t)wall_ms(), "copyMs", (json_int_t)ms);
}

json_t *cow_snapshot_restore(struct fb_cow *c, json_t *params, struct proto_err *e)
{
    const char *name;
    if (get_name(params, &name, e) < 0 || not_live(c, "session.restore", e) < 0)
        return NULL;
    cleanup_close int dir = openat(c->scratch, SNAPDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    cleanup_close int snap = dir >= 0 ? openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC) : -1;
    if (snap < 0) {
        perr_set(e, "not_found", "no snapshot \"%s\" in this session", name);
        return NULL;
    }
    struct fb_err err = {0};
    uint64_t t0 = fb_now_ns();
    if (cow_restore(c, snap, &err) < 0) {
        bool full = strstr(err.msg, "No space left") != NULL;
        perr_set(e, full ? "ENOSPC" : "internal", "%s", err.msg);
        return NULL;
    }
    return json_pack("{s:s, s:b, s:I}", "name", name, "restored", 1, "copyMs",
                     (json_int_t)((fb_now_ns() - t0) / 1000000));
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(json_string_value(*(json_t *const *)a), json_string_value(*(json_t *const *)b));
}

json_t *cow_snapshots_json(const struct fb_cow *c)
{
    if (!c || c->scratch < 0)
        return NULL;
    int dir = openat(c->scratch, SNAPDIR, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    DIR *d = dir >= 0 ? fdopendir(dir) : NULL;
    if (!d) {
        if (dir >= 0)
            close(dir);
        return json_array();
    }
    json_t *v[MAX_SNAPSHOTS + 8];
    size_t n = 0;
    struct dirent *de;
    while ((de = readdir(d)) && n < FB_ARRAY_LEN(v))
        if (de->d_name[0] != '.')
            v[n++] = json_string(de->d_name);
    closedir(d);
    qsort(v, n, sizeof *v, cmp_str);
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, v[i]);
    return a;
}
