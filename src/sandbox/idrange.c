/* idrange.c — claiming host id ranges for sandboxes started as root (see
 * idrange.h for the scheme: OFD locks on a lock file whose byte offsets are
 * host ids). */
#include "idrange.h"

#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>

/* The inode number of the initial user namespace (include/linux/proc_ns.h). */
#define PROC_USER_INIT_INO 0xEFFFFFFDu

void idrange_init(struct fb_idrange *r)
{
    r->base = r->count = 0;
    r->lock_fd = -1;
}

/* Shared claims (idrange_share): the pool slots this process holds are
 * locked through one open file description, and known here, since a lock
 * of the same description never conflicts with itself. */
static pthread_mutex_t share_mu = PTHREAD_MUTEX_INITIALIZER;
static bool share_on;
static int share_fd = -1;
static unsigned char share_mine[(FB_IDRANGE_POOL_SLOTS + 7) / 8];

void idrange_share(void)
{
    share_on = true;
}

static size_t slot_of(uint64_t base)
{
    return (size_t)((base - FB_IDRANGE_POOL_BASE) / FB_IDRANGE_SIZE);
}

void idrange_release(struct fb_idrange *r)
{
    if (!r)
        return;
    if (r->lock_fd == FB_IDRANGE_SHARED) {
        struct flock fl = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = (off_t)r->base,
                           .l_len = (off_t)r->count};
        pthread_mutex_lock(&share_mu);
        if (share_fd >= 0 && fcntl(share_fd, F_OFD_SETLK, &fl) == 0) {
            size_t i = slot_of(r->base);
            share_mine[i / 8] &= (unsigned char)~(1u << (i % 8));
        }
        /* (an unlock that failed keeps the slot: never handed out twice) */
        pthread_mutex_unlock(&share_mu);
    } else if (r->lock_fd >= 0) {
        close(r->lock_fd);
    }
    r->lock_fd = -1;
}

/* The lock file, created if needed. Its directory must be root's and
 * writable by root alone, the file a regular file of root's: nobody else
 * can then take or fake a claim. */
static int open_lock(struct fb_err *err)
{
    cleanup_close int dir = open(FB_IDRANGE_LOCK_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (dir < 0 && errno == ENOENT) {
        if (mkdir(FB_IDRANGE_LOCK_DIR, 0755) < 0 && errno != EEXIST)
            return fb_errno(err, FB_EXIT_SETUP, "host id ranges: creating %s", FB_IDRANGE_LOCK_DIR);
        dir = open(FB_IDRANGE_LOCK_DIR, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    }
    if (dir < 0)
        return fb_errno(err, FB_EXIT_SETUP, "host id ranges: %s", FB_IDRANGE_LOCK_DIR);
    struct stat st;
    if (fstat(dir, &st) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "host id ranges: %s", FB_IDRANGE_LOCK_DIR);
    if (st.st_uid != 0 || (st.st_mode & 022))
        return fb_errf(err, FB_EXIT_SETUP,
                       "host id ranges: %s must belong to root and be writable by root only",
                       FB_IDRANGE_LOCK_DIR);
    int fd = openat(dir, "idranges.lock", O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "host id ranges: %s", FB_IDRANGE_LOCK_FILE);
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) || st.st_uid != 0) {
        close(fd);
        return fb_errf(err, FB_EXIT_SETUP, "host id ranges: %s is not a regular file of root's",
                       FB_IDRANGE_LOCK_FILE);
    }
    return fd;
}

/* Ranges [start, start+count) as 64-bit numbers, so ends never wrap. */
struct span {
    uint64_t start, end;
};

struct spans {
    struct span v[256];
    size_t n;
};

static void spans_add(struct spans *s, uint64_t start, uint64_t count)
{
    if (s->n < FB_ARRAY_LEN(s->v) && count > 0)
        s->v[s->n++] = (struct span){start, start + count};
}

/* /etc/subuid and /etc/subgid: "name:start:count" lines; ranges handed to
 * users for their own rootless containers, never ours to use. */
static void read_subids(const char *path, struct spans *out)
{
    char buf[16384];
    if (fb_read_file(path, buf, sizeof buf) <= 0)
        return;
    for (char *line = buf, *next; line && *line; line = next) {
        next = strchr(line, '\n');
        if (next)
            *next++ = 0;
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        if (!c2)
            continue;
        uint64_t start, count;
        *c2 = 0;
        if (fb_parse_u64(c1 + 1, &start) == 0 && fb_parse_u64(c2 + 1, &count) == 0)
            spans_add(out, start, count);
    }
}

/* /etc/passwd and /etc/group: "name:password:ID:..." lines, the host's
 * accounts. Each id in [lo, hi) is added to out (the first account's name
 * into who, when given). */
static void read_accounts(const char *path, uint64_t lo, uint64_t hi, struct spans *out,
                          char *who, size_t cap)
{
    FILE *f = fopen(path, "re");
    if (!f)
        return;
    char *line = NULL;
    size_t len = 0;
    while (getline(&line, &len, f) > 0) {
        char *c1 = strchr(line, ':');
        char *c2 = c1 ? strchr(c1 + 1, ':') : NULL;
        char *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
        if (!c3)
            continue;
        *c3 = 0;
        uint64_t id;
        if (fb_parse_u64(c2 + 1, &id) < 0 || id < lo || id >= hi)
            continue;
        if (who && !out->n) {
            *c1 = 0;
            snprintf(who, cap, "%s", line);
        }
        spans_add(out, id, 1);
    }
    free(line);
    fclose(f);
}

/* The ids of our own user namespace that map to something
 * (/proc/self/uid_map's first and third columns). */
static void read_own_map(const char *path, struct spans *out)
{
    char buf[4096];
    if (fb_read_file(path, buf, sizeof buf) <= 0)
        return;
    unsigned long long in, outside, count;
    const char *s = buf;
    int used;
    while (sscanf(s, " %llu %llu %llu%n", &in, &outside, &count, &used) == 3) {
        spans_add(out, in, count);
        s += used;
    }
}

static bool overlaps(const struct spans *s, uint64_t start, uint64_t end)
{
    for (size_t i = 0; i < s->n; i++)
        if (start < s->v[i].end && s->v[i].start < end)
            return true;
    return false;
}

static bool inside(const struct spans *s, uint64_t start, uint64_t end)
{
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i].start <= start && end <= s->v[i].end)
            return true;
    return false;
}

/* 0 claimed, 1 in use, -1 error. */
static int try_lock(int fd, uint64_t base, uint64_t count)
{
    struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = (off_t)base,
                       .l_len = (off_t)count};
    if (fcntl(fd, F_OFD_SETLK, &fl) == 0)
        return 0;
    return errno == EAGAIN || errno == EACCES ? 1 : -1;
}

bool idrange_initial_userns(void)
{
    struct stat ns;
    return stat("/proc/self/ns/user", &ns) == 0 && ns.st_ino == PROC_USER_INIT_INO;
}

/* Our own user namespace's maps: every id in the initial one. */
static void own_maps(struct spans *uidmap, struct spans *gidmap)
{
    if (idrange_initial_userns()) {
        spans_add(uidmap, 0, 4294967295u);
        spans_add(gidmap, 0, 4294967295u);
    } else {
        read_own_map("/proc/self/uid_map", uidmap);
        read_own_map("/proc/self/gid_map", gidmap);
    }
}

bool idrange_mapped(uint32_t base, uint32_t count)
{
    struct spans uidmap = {.n = 0}, gidmap = {.n = 0};
    own_maps(&uidmap, &gidmap);
    uint64_t end = (uint64_t)base + count;
    return inside(&uidmap, base, end) && inside(&gidmap, base, end);
}

/* What decides which of the pool's slots are ours to use here: mapped in
 * our own user namespace and clear of /etc/subuid and /etc/subgid and of
 * the ids of /etc/passwd and /etc/group (sub holds all of those). */
struct pool_view {
    struct spans sub, uidmap, gidmap;
};

static void pool_view(struct pool_view *v)
{
    v->sub.n = v->uidmap.n = v->gidmap.n = 0;
    own_maps(&v->uidmap, &v->gidmap);
    read_subids("/etc/subuid", &v->sub);
    read_subids("/etc/subgid", &v->sub);
    uint64_t lo = FB_IDRANGE_POOL_BASE,
             hi = lo + (uint64_t)FB_IDRANGE_POOL_SLOTS * FB_IDRANGE_SIZE;
    read_accounts("/etc/passwd", lo, hi, &v->sub, NULL, 0);
    read_accounts("/etc/group", lo, hi, &v->sub, NULL, 0);
}

/* A pinned range [base, end) must be clear of what the pool avoids: the
 * host's accounts (a range holding `nobody` makes the sandbox's root that
 * account, whose other processes could then ptrace or read the sandbox's)
 * and the ranges handed to users for their own rootless containers. */
static int pinned_clear(uint32_t base, uint64_t end, struct fb_err *err)
{
    static const char *const acct[] = {"/etc/passwd", "/etc/group"};
    for (size_t i = 0; i < FB_ARRAY_LEN(acct); i++) {
        struct spans hit = {.n = 0};
        char who[64] = "";
        read_accounts(acct[i], base, end, &hit, who, sizeof who);
        if (hit.n)
            return fb_errf(err, FB_EXIT_SETUP,
                           "--host-id %u: host id %llu is the account \"%s\" of %s; a pinned "
                           "range must be clear of the host's users and groups",
                           base, (unsigned long long)hit.v[0].start, who, acct[i]);
    }
    static const char *const sub[] = {"/etc/subuid", "/etc/subgid"};
    for (size_t i = 0; i < FB_ARRAY_LEN(sub); i++) {
        struct spans s = {.n = 0};
        read_subids(sub[i], &s);
        if (overlaps(&s, base, end))
            return fb_errf(err, FB_EXIT_SETUP,
                           "--host-id %u: ids %u-%llu overlap a range of %s, a user's for their "
                           "own containers", base, base, (unsigned long long)end - 1, sub[i]);
    }
    return 0;
}

bool idrange_in_pool(uint32_t base, uint32_t count)
{
    uint64_t end = (uint64_t)base + (count ? count : FB_IDRANGE_SIZE);
    return base >= FB_IDRANGE_POOL_BASE &&
           end <= FB_IDRANGE_POOL_BASE + (uint64_t)FB_IDRANGE_POOL_SLOTS * FB_IDRANGE_SIZE;
}

static bool slot_usable(const struct pool_view *v, uint64_t b)
{
    uint64_t end = b + FB_IDRANGE_SIZE;
    return !overlaps(&v->sub, b, end) && inside(&v->uidmap, b, end) && inside(&v->gidmap, b, end);
}

static size_t count_usable(const struct pool_view *v)
{
    size_t n = 0;
    for (uint32_t i = 0; i < FB_IDRANGE_POOL_SLOTS; i++)
        n += slot_usable(v, FB_IDRANGE_POOL_BASE + (uint64_t)i * FB_IDRANGE_SIZE);
    return n;
}

size_t idrange_pool_usable(void)
{
    struct pool_view v;
    pool_view(&v);
    return count_usable(&v);
}

static int claim_slot(const struct pool_view *v, int fd, bool shared, struct fb_idrange *r,
                      struct fb_err *err);

int idrange_claim(uint32_t base, uint32_t count, struct fb_idrange *r, struct fb_err *err)
{
    idrange_init(r);
    if (count == 0)
        count = FB_IDRANGE_SIZE;

    if (base) {
        uint64_t end = (uint64_t)base + count;
        if (end > 4294967295u)
            return fb_errf(err, FB_EXIT_SETUP, "--host-id %u: the range of %u ids ends past 4294967294",
                           base, count);
        if (!idrange_mapped(base, count))
            return fb_errf(err, FB_EXIT_SETUP,
                           "--host-id %u: ids %u-%llu are not all mapped in fluebox's own user "
                           "namespace (/proc/self/uid_map)",
                           base, base, (unsigned long long)end - 1);
        if (pinned_clear(base, end, err) < 0)
            return -1;
        cleanup_close int fd = open_lock(err);
        if (fd < 0)
            return -1;
        int rc = try_lock(fd, base, count);
        if (rc < 0)
            return fb_errno(err, FB_EXIT_SETUP, "host id ranges: locking %s", FB_IDRANGE_LOCK_FILE);
        if (rc > 0)
            return fb_errf(err, FB_EXIT_SETUP,
                           "--host-id %u: host ids %u-%llu are in use by another sandbox", base,
                           base, (unsigned long long)end - 1);
        r->base = base;
        r->count = count;
        r->lock_fd = fb_steal_fd(fd);
        return 0;
    }

    /* Which slots first, before the lock file: in a user namespace that
     * maps none of them (`unshare -r`, a rootless container), /run/fluebox
     * is someone else's and nothing is claimed there. */
    struct pool_view v;
    pool_view(&v);
    if (!count_usable(&v))
        return 1; /* a user namespace that does not map the pool */
    if (share_on) {
        pthread_mutex_lock(&share_mu);
        if (share_fd < 0)
            share_fd = open_lock(err);
        int rc = share_fd < 0 ? -1 : claim_slot(&v, share_fd, true, r, err);
        pthread_mutex_unlock(&share_mu);
        return rc;
    }
    cleanup_close int fd = open_lock(err);
    if (fd < 0)
        return -1;
    int rc = claim_slot(&v, fd, false, r, err);
    if (rc == 0)
        r->lock_fd = fb_steal_fd(fd);
    return rc;
}

/* A free pool slot, locked through fd (shared: the process's one
 * description, skipping the slots it holds already). */
static int claim_slot(const struct pool_view *v, int fd, bool shared, struct fb_idrange *r,
                      struct fb_err *err)
{
    /* Start at a random slot: concurrent claims rarely try the same ones. */
    uint32_t start = 0;
    if (getrandom(&start, sizeof start, GRND_NONBLOCK) != (ssize_t)sizeof start)
        start = (uint32_t)getpid() * 2654435761u;
    size_t busy = 0;
    for (uint32_t i = 0; i < FB_IDRANGE_POOL_SLOTS; i++) {
        uint64_t b = FB_IDRANGE_POOL_BASE +
                     (uint64_t)((start + i) % FB_IDRANGE_POOL_SLOTS) * FB_IDRANGE_SIZE;
        if (!slot_usable(v, b))
            continue;
        size_t k = slot_of(b);
        if (shared && (share_mine[k / 8] & (1u << (k % 8)))) {
            busy++;
            continue;
        }
        int rc = try_lock(fd, b, FB_IDRANGE_SIZE);
        if (rc < 0)
            return fb_errno(err, FB_EXIT_SETUP, "host id ranges: locking %s", FB_IDRANGE_LOCK_FILE);
        if (rc > 0) {
            busy++;
            continue;
        }
        r->base = (uint32_t)b;
        r->count = FB_IDRANGE_SIZE;
        if (shared) {
            share_mine[k / 8] |= (unsigned char)(1u << (k % 8));
            r->lock_fd = FB_IDRANGE_SHARED;
        }
        return 0;
    }
    return fb_errf(err, FB_EXIT_SETUP, "no free host id range: all %zu are in use by other sandboxes",
                   busy);
}
