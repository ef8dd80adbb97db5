/* robind_write: write into a directory bound read-only (--ro-bind), both a new
 * file and an existing one, and try to remount the bind read-write. */
#include "probe.h"
#include <sys/mount.h>

static void probe_attempt(struct probe_res *r)
{
    const char *data = parg("data");
    if (!data) {
        res_skip(r, "no data= given");
        return;
    }
    char path[4096];
    snprintf(path, sizeof(path), "%s/new-by-probe-%d", data, (int)getpid());
    int fd = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0600);
    if (fd >= 0) {
        close(fd);
        unlink(path);
        res_escape(r, "created a file in %s", data);
    } else {
        res_note(r, "create: %s", ename(errno));
    }
    snprintf(path, sizeof(path), "%s/data.txt", data);
    fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC);
    if (fd >= 0) {
        close(fd); /* opened for writing is enough; nothing is written */
        res_escape(r, "opened %s for writing", path);
    } else {
        res_note(r, "data.txt: %s", ename(errno));
    }
    if (mount(NULL, data, NULL, MS_REMOUNT | MS_BIND, NULL) == 0)
        res_escape(r, "remounted %s read-write", data);
    else
        res_note(r, "remount: %s", ename(errno));
}

PROBE_MAIN("robind_write")
