/* report.c — the JSON run report (see report.h and the README). */
#include "report.h"

#include <fcntl.h>
#include <jansson.h>
#include <string.h>

static json_t *opt_int(int64_t v) { return v < 0 ? json_null() : json_integer(v); }

int report_write(const char *path, const struct fb_policy *p, const struct fb_result *r,
                 struct fb_err *err)
{
    json_t *o = json_object();
    json_object_set_new(o, "exit_code", json_integer(r->exit_code));
    json_object_set_new(o, "status", r->status_code >= 0 ? json_integer(r->status_code) : json_null());
    json_object_set_new(o, "signal", r->signal ? json_integer(r->signal) : json_null());
    json_object_set_new(o, "timed_out", json_boolean(r->timed_out));
    json_object_set_new(o, "oom_killed", json_boolean(r->oom_killed));
    json_object_set_new(o, "setup_failed", json_boolean(r->setup_failed));
    json_object_set_new(o, "error", r->error[0] ? json_string(r->error) : json_null());
    json_object_set_new(o, "wall_ms", json_integer(r->wall_ms));
    json_object_set_new(o, "user_ms", json_integer(r->user_ms));
    json_object_set_new(o, "sys_ms", json_integer(r->sys_ms));
    json_object_set_new(o, "memory_peak_bytes", opt_int(r->cg.mem_peak));
    json_object_set_new(o, "pids_peak", opt_int(r->cg.pids_peak));
    json_object_set_new(o, "profile", json_string(p->profile_name ? p->profile_name : ""));
    char *s = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (!s)
        return fb_errf(err, FB_EXIT_SETUP, "--report: cannot encode");
    int fd = strcmp(path, "-") ? open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644) : 2;
    if (fd < 0) {
        free(s);
        return fb_errno(err, FB_EXIT_SETUP, "--report %s", path);
    }
    int rc = fb_write_all(fd, s, strlen(s));
    if (rc == 0)
        rc = fb_write_all(fd, "\n", 1);
    if (fd != 2)
        close(fd);
    free(s);
    return rc < 0 ? fb_errno(err, FB_EXIT_SETUP, "--report %s", path) : 0;
}
