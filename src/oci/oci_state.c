/* oci_state.c — the state directory of fluebox oci: <root>/<id>/ holds
 *   state.json   what the other commands need: init's pid and start time,
 *                the supervisor's, the bundle, the cgroup, whether started
 *   config.json  the config as create read it (later edits of the bundle
 *                must not change a created container; hooks come from here)
 *   sup.sock     the supervisor's socket (start)
 *
 * Concurrent calls: create makes the directory with mkdir(2), which fails
 * when the id exists; every command that reads or changes a container
 * holds flock(LOCK_EX) on its directory for as long as it works on it, and
 * a command that got the lock after a delete finds no state.json and says
 * the container does not exist. state.json is replaced with rename(2), so
 * a reader without the lock (state, ps) never sees half a file.
 *
 * Status: "creating" until create wrote init's pid; then from init itself,
 * checked against its start time so that a recycled pid is not taken for
 * it: gone or a zombie is "stopped", else "paused" when its cgroup is
 * frozen, "running" once start succeeded, "created" before. */
#include "oci.h"

#include "cgroup.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

int oci_id_check(const char *id, struct fb_err *err)
{
    size_t n = strlen(id);
    if (!n || n > 1024 || !strcmp(id, ".") || !strcmp(id, ".."))
        return fb_errf(err, FB_EXIT_SETUP, "invalid container id \"%s\"", id);
    for (const char *s = id; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ||
              *s == '_' || *s == '+' || *s == '-' || *s == '.'))
            return fb_errf(err, FB_EXIT_SETUP,
                           "invalid container id \"%s\": only letters, digits and _+-. ", id);
    return 0;
}

static int lock_dir(int fd)
{
    while (flock(fd, LOCK_EX) < 0)
        if (errno != EINTR)
            return -1;
    return 0;
}

/* mkdir -p, 0700 for what it makes. */
static int mkdir_parents(const char *path)
{
    char buf[4096];
    if (snprintf(buf, sizeof buf, "%s", path) >= (int)sizeof buf) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *s = buf + 1;; s++) {
        char *slash = strchr(s, '/');
        if (slash)
            *slash = 0;
        if (mkdir(buf, 0700) < 0 && errno != EEXIST)
            return -1;
        if (!slash)
            return 0;
        *slash = '/';
        s = slash;
    }
}

static void state_init(struct oci_state *st)
{
    memset(st, 0, sizeof *st);
    st->dirfd = -1;
}

int oci_state_create(const char *root, const char *id, struct oci_state *st, struct fb_err *err)
{
    state_init(st);
    if (oci_id_check(id, err) < 0)
        return -1;
    if (mkdir_parents(root) < 0)
        return fb_errno(err, FB_EXIT_SETUP, "creating the state directory %s", root);
    st->id = fb_xstrdup(id);
    st->dir = fb_xasprintf("%s/%s", root, id);
    if (mkdir(st->dir, 0700) < 0) {
        int e = errno;
        oci_state_close(st);
        errno = e;
        if (e == EEXIST)
            return fb_errf(err, FB_EXIT_SETUP, "container with id %s already exists", id);
        return fb_errno(err, FB_EXIT_SETUP, "creating %s/%s", root, id);
    }
    st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dirfd < 0 || lock_dir(st->dirfd) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "%s", st->dir);
        oci_state_remove(st);
        return -1;
    }
    st->json = json_object();
    return 0;
}

static uint64_t ju64(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

int oci_state_open(const char *root, const char *id, struct oci_state *st, struct fb_err *err)
{
    state_init(st);
    if (oci_id_check(id, err) < 0)
        return -1;
    st->id = fb_xstrdup(id);
    st->dir = fb_xasprintf("%s/%s", root, id);
    st->dirfd = open(st->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (st->dirfd < 0 || lock_dir(st->dirfd) < 0) {
        int e = errno;
        oci_state_close(st);
        if (e == ENOENT)
            return fb_errf(err, FB_EXIT_SETUP, "container %s does not exist", id);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "%s/%s", root, id);
    }
    /* Deleted while we waited for the lock: state.json is gone. */
    int sfd = openat(st->dirfd, "state.json", O_RDONLY | O_CLOEXEC);
    if (sfd < 0) {
        int e = errno;
        oci_state_close(st);
        if (e == ENOENT)
            return fb_errf(err, FB_EXIT_SETUP, "container %s does not exist", id);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "reading the state of %s", id);
    }
    /* The whole file, whatever its size: it holds the spec's annotations,
     * which Kubernetes allows up to 256 KiB of (and create has bounded). */
    json_error_t je;
    st->json = json_loadfd(sfd, 0, &je);
    close(sfd);
    if (!json_is_object(st->json)) {
        oci_state_close(st);
        return fb_errf(err, FB_EXIT_SETUP, "the state of %s is damaged: %s", id, je.text);
    }
    st->pid = (pid_t)ju64(st->json, "pid");
    st->pid_start = ju64(st->json, "pid_start");
    st->sup = (pid_t)ju64(st->json, "sup_pid");
    st->sup_start = ju64(st->json, "sup_start");
    st->started = json_is_true(json_object_get(st->json, "started"));
    const char *b = json_string_value(json_object_get(st->json, "bundle"));
    st->bundle = b ? fb_xstrdup(b) : NULL;
    const char *c = json_string_value(json_object_get(st->json, "cgroup"));
    st->cgroup = c ? fb_xstrdup(c) : NULL;
    return 0;
}

int oci_state_save(struct oci_state *st, struct fb_err *err)
{
    json_object_set_new(st->json, "id", json_string(st->id));
    if (st->pid > 0) {
        json_object_set_new(st->json, "pid", json_integer(st->pid));
        json_object_set_new(st->json, "pid_start", json_integer((json_int_t)st->pid_start));
    }
    if (st->sup > 0) {
        json_object_set_new(st->json, "sup_pid", json_integer(st->sup));
        json_object_set_new(st->json, "sup_start", json_integer((json_int_t)st->sup_start));
    }
    json_object_set_new(st->json, "started", json_boolean(st->started));
    if (st->bundle)
        json_object_set_new(st->json, "bundle", json_string(st->bundle));
    if (st->cgroup)
        json_object_set_new(st->json, "cgroup", json_string(st->cgroup));
    cleanup_free char *text = json_dumps(st->json, JSON_COMPACT);
    if (!text)
        return fb_errf(err, FB_EXIT_SETUP, "encoding the state of %s", st->id);
    int fd = openat(st->dirfd, "state.json.tmp", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "writing the state of %s", st->id);
    int rc = fb_write_all(fd, text, strlen(text));
    if (close(fd) < 0)
        rc = -1;
    if (rc < 0 || renameat(st->dirfd, "state.json.tmp", st->dirfd, "state.json") < 0) {
        int e = errno;
        unlinkat(st->dirfd, "state.json.tmp", 0);
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "writing the state of %s", st->id);
    }
    return 0;
}

void oci_state_close(struct oci_state *st)
{
    if (st->dirfd >= 0)
        close(st->dirfd); /* drops the lock */
    json_decref(st->json);
    free(st->id);
    free(st->dir);
    free(st->bundle);
    free(st->cgroup);
    state_init(st);
}

void oci_state_remove(struct oci_state *st)
{
    if (st->dirfd >= 0) {
        /* Only files: the directory is flat. */
        int fd = dup(st->dirfd);
        DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
        if (!d && fd >= 0)
            close(fd);
        struct dirent *e;
        while (d && (e = readdir(d)))
            if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
                unlinkat(st->dirfd, e->d_name, 0);
        if (d)
            closedir(d);
    }
    if (st->dir && rmdir(st->dir) < 0 && errno != ENOENT)
        oci_log_warn("cannot remove %s: %s", st->dir, strerror(errno));
    oci_state_close(st);
}

uint64_t oci_pid_start(pid_t pid)
{
    if (pid <= 0)
        return 0;
    char path[64], buf[1024];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    if (fb_read_file(path, buf, sizeof buf) < 0)
        return 0;
    /* After the ")" of the command: state is field 3, starttime field 22. */
    const char *s = strrchr(buf, ')');
    if (!s || s[1] != ' ')
        return 0;
    s += 2;
    if (*s == 'Z' || *s == 'X')
        return 0;
    for (int field = 3; field < 22; field++) {
        s = strchr(s, ' ');
        if (!s)
            return 0;
        s++;
    }
    return strtoull(s, NULL, 10);
}

bool oci_pid_alive(pid_t pid, uint64_t start)
{
    uint64_t now = oci_pid_start(pid);
    return now && now == start;
}

enum oci_status oci_state_status(const struct oci_state *st)
{
    if (st->pid <= 0)
        return OCI_CREATING;
    if (!oci_pid_alive(st->pid, st->pid_start))
        return OCI_STOPPED;
    if (st->cgroup) {
        struct fb_cgroup *cg;
        struct fb_err e;
        if (cgroup_open_at(st->cgroup, &cg, &e) == 0) {
            int frozen = cgroup_frozen(cg);
            cgroup_close(cg);
            if (frozen)
                return OCI_PAUSED;
        }
    }
    return st->started ? OCI_RUNNING : OCI_CREATED;
}

const char *oci_status_name(enum oci_status s)
{
    static const char *const names[] = {"creating", "created", "running", "paused", "stopped"};
    return names[s];
}

json_t *oci_state_json(const struct oci_state *st, enum oci_status s)
{
    json_t *o = json_object();
    json_object_set_new(o, "ociVersion", json_string("1.0.2"));
    json_object_set_new(o, "id", json_string(st->id));
    json_object_set_new(o, "status", json_string(oci_status_name(s)));
    json_object_set_new(o, "pid", json_integer(s == OCI_STOPPED ? 0 : st->pid));
    json_object_set_new(o, "bundle", json_string(st->bundle ? st->bundle : ""));
    json_t *ann = json_object_get(st->json, "annotations");
    json_object_set_new(o, "annotations", json_is_object(ann) ? json_incref(ann) : json_object());
    json_t *created = json_object_get(st->json, "created");
    if (json_is_string(created))
        json_object_set(o, "created", created);
    return o;
}

int oci_state_list(const char *root, char ***ids, size_t *n)
{
    *ids = NULL;
    *n = 0;
    DIR *d = opendir(root);
    if (!d)
        return errno == ENOENT ? 0 : -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (e->d_name[0] == '.')
            continue;
        *ids = fb_xrealloc(*ids, (*n + 1) * sizeof **ids);
        (*ids)[(*n)++] = fb_xstrdup(e->d_name);
    }
    closedir(d);
    return 0;
}
