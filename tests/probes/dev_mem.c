/* dev_mem: raw memory and disks. Opens /dev/mem, /dev/kmem and /dev/port for
 * reading, and every block device visible under /dev. Nothing is read. */
#include "probe.h"

static void try_open(struct probe_res *r, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "opened %s", path);
    } else if (errno != ENOENT) {
        res_note(r, "%s: %s", path, ename(errno));
    }
}

static void probe_attempt(struct probe_res *r)
{
    try_open(r, "/dev/mem");
    try_open(r, "/dev/kmem");
    try_open(r, "/dev/port");
    DIR *d = opendir("/dev");
    if (!d) {
        res_note(r, "/dev: %s", ename(errno));
        return;
    }
    int blk = 0, entries = 0;
    struct dirent *de;
    while ((de = readdir(d))) {
        char path[300];
        struct stat st;
        snprintf(path, sizeof(path), "/dev/%s", de->d_name);
        entries++;
        if (lstat(path, &st) == 0 && S_ISBLK(st.st_mode)) {
            blk++;
            try_open(r, path);
        }
    }
    closedir(d);
    res_note(r, "/dev has %d entries, %d block devices", entries, blk);
}

PROBE_MAIN("dev_mem")
