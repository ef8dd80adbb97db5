/* scnotify.c — answers and records seccomp user notifications in the
 * supervisor (see scnotify.h). */
#include "scnotify.h"

#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/syscall.h>

#ifndef SECCOMP_USER_NOTIF_FLAG_CONTINUE
#define SECCOMP_USER_NOTIF_FLAG_CONTINUE (1UL << 0)
#endif

struct fb_scn {
    int fd;
    bool learn;
    const struct fb_policy *p;
    void *req, *resp;
    size_t req_size, resp_size;
    struct fb_sc_report rep;
};

struct fb_scn *scnotify_new(const struct fb_policy *p, int fd, struct fb_err *err)
{
    struct seccomp_notif_sizes sz;
    if (syscall(SYS_seccomp, SECCOMP_GET_NOTIF_SIZES, 0, &sz) < 0) {
        fb_errno(err, FB_EXIT_SETUP, "seccomp notification sizes");
        close(fd);
        return NULL;
    }
    struct fb_scn *n = fb_xcalloc(1, sizeof *n);
    n->fd = fd;
    n->p = p;
    n->learn = p->seccomp.learn;
    /* The kernel's structures may be larger than our headers' (newer kernel). */
    n->req_size = sz.seccomp_notif > sizeof(struct seccomp_notif) ? sz.seccomp_notif
                                                                  : sizeof(struct seccomp_notif);
    n->resp_size = sz.seccomp_notif_resp > sizeof(struct seccomp_notif_resp)
                       ? sz.seccomp_notif_resp
                       : sizeof(struct seccomp_notif_resp);
    n->req = fb_xcalloc(1, n->req_size);
    n->resp = fb_xcalloc(1, n->resp_size);
    n->rep.active = true;
    fcntl(fd, F_SETFD, FD_CLOEXEC);
    return n;
}

int scnotify_fd(const struct fb_scn *n) { return n->fd; }

static void read_comm(int pid, char *out, size_t cap)
{
    char path[64], buf[32];
    snprintf(path, sizeof path, "/proc/%d/comm", pid);
    out[0] = 0;
    if (fb_read_file(path, buf, sizeof buf) > 0) {
        buf[strcspn(buf, "\n")] = 0;
        snprintf(out, cap, "%.15s", buf);
    }
}

static void record(struct fb_scn *n, const struct seccomp_notif *req, int errno_val)
{
    struct fb_sc_report *r = &n->rep;
    r->total++;
    if (errno_val)
        r->denied++;
    int nr = req->data.nr;
    char name[32];
    if (!seccomp_syscall_name(nr, name, sizeof name))
        snprintf(name, sizeof name, "syscall_%d", nr);
    unsigned cls = seccomp_arg_classes(n->p, nr);
    uint64_t args[6];
    for (unsigned i = 0; i < 6; i++)
        args[i] = seccomp_arg_is32(name, i) ? req->data.args[i] & 0xffffffffu : req->data.args[i];
    for (size_t i = 0; i < r->n; i++) {
        struct fb_sc_seen *s = &r->seen[i];
        if (s->nr != nr || s->errno_val != errno_val)
            continue;
        bool same = true;
        for (unsigned k = 0; k < 6 && same; k++)
            if (cls & (1u << k))
                same = s->args[k] == args[k];
        if (same) {
            s->count++;
            return;
        }
    }
    if (r->n == FB_SC_SEEN_MAX) {
        r->truncated = true;
        return;
    }
    struct fb_sc_seen *s = &r->seen[r->n++];
    memset(s, 0, sizeof *s);
    s->nr = nr;
    snprintf(s->name, sizeof s->name, "%s", name);
    s->class_args = cls;
    memcpy(s->args, args, sizeof args);
    s->count = 1;
    s->errno_val = errno_val;
    s->pid = (int)req->pid;
    read_comm(s->pid, s->comm, sizeof s->comm);
}

/* Receive one notification and answer it. Returns false when there was none. */
static bool handle_one(struct fb_scn *n)
{
    struct seccomp_notif *req = n->req;
    struct seccomp_notif_resp *resp = n->resp;
    memset(req, 0, n->req_size);
    if (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_RECV, req) < 0)
        return errno == EINTR || errno == ENOENT; /* ENOENT: the caller is gone */
    memset(resp, 0, n->resp_size);
    resp->id = req->id;
    int errno_val = 0;
    if (n->learn) {
        resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    } else {
        /* What the filters answer without --seccomp-log: the fixed rule's
         * errno, else the profile's; a "log" rule lets the call through. */
        errno_val = seccomp_notified_errno(n->p, &req->data);
        if (errno_val)
            resp->error = -errno_val;
        else
            resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
    }
    record(n, req, errno_val);
    /* ENOENT: the caller died (or was interrupted) meanwhile: nothing to do. */
    while (ioctl(n->fd, SECCOMP_IOCTL_NOTIF_SEND, resp) < 0 && errno == EINTR)
        ;
    return true;
}

void scnotify_dispatch(struct fb_scn *n)
{
    if (!n)
        return;
    /* A bounded batch: other events of the supervisor get their turn. */
    for (int i = 0; i < 64; i++) {
        struct pollfd pfd = {.fd = n->fd, .events = POLLIN};
        if (poll(&pfd, 1, 0) <= 0 || !(pfd.revents & POLLIN))
            return;
        if (!handle_one(n))
            return;
    }
}

void scnotify_finish(struct fb_scn *n, struct fb_sc_report *out)
{
    if (!n) {
        if (out)
            memset(out, 0, sizeof *out);
        return;
    }
    if (out)
        *out = n->rep;
    close(n->fd);
    free(n->req);
    free(n->resp);
    free(n);
}

static int cmp_seen(const void *a, const void *b)
{
    const struct fb_sc_seen *x = a, *y = b;
    if (x->count != y->count)
        return x->count > y->count ? -1 : 1;
    return strcmp(x->name, y->name);
}

json_t *scnotify_report_json(const struct fb_sc_report *r, bool learn)
{
    json_t *o = json_object();
    json_object_set_new(o, "mode", json_string(learn ? "learn" : "log"));
    json_object_set_new(o, "notified", json_integer(r->total));
    json_object_set_new(o, "truncated", json_boolean(r->truncated));
    struct fb_sc_seen *v = fb_xcalloc(r->n ? r->n : 1, sizeof *v);
    memcpy(v, r->seen, r->n * sizeof *v);
    qsort(v, r->n, sizeof *v, cmp_seen);
    json_t *arr = json_array();
    for (size_t i = 0; i < r->n; i++) {
        json_t *e = json_object();
        json_object_set_new(e, "syscall", json_string(v[i].name));
        json_object_set_new(e, "count", json_integer(v[i].count));
        const char *en = v[i].errno_val ? strerrorname_np(v[i].errno_val) : NULL;
        json_object_set_new(e, "errno", v[i].errno_val ? json_string(en ? en : "?") : json_null());
        json_t *args = json_array();
        for (unsigned k = 0; k < 6; k++) {
            char buf[24];
            snprintf(buf, sizeof buf, "0x%llx", (unsigned long long)v[i].args[k]);
            json_array_append_new(args, json_string(buf));
        }
        json_object_set_new(e, "first_args", args);
        json_object_set_new(e, "first_pid", json_integer(v[i].pid));
        json_object_set_new(e, "first_comm", json_string(v[i].comm));
        json_array_append_new(arr, e);
    }
    free(v);
    json_object_set_new(o, learn ? "recorded" : "denied", arr);
    return o;
}
