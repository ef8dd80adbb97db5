/* ipc_host: System V IPC objects and POSIX shared memory belong to the IPC
 * namespace and to /dev/shm; without a new IPC namespace and a private
 * /dev/shm a sandbox can read and write the host's shared memory. The
 * runner's host helper holds a System V segment (shmkey=) and a POSIX object
 * (shmname=, i.e. /dev/shm/NAME), both holding a known string. */
#include "probe.h"
#include <sys/ipc.h>
#include <sys/shm.h>

static void probe_attempt(struct probe_res *r)
{
    long key = parg_long("shmkey", 0);
    const char *name = parg("shmname");
    if (!key || !name) {
        res_skip(r, "need shmkey= and shmname=");
        return;
    }
    int id = shmget((key_t)key, 0, 0);
    if (id >= 0) {
        char *seg = shmat(id, NULL, SHM_RDONLY);
        bool same = seg != (void *)-1 && strncmp(seg, "FLUEBOX-HOSTMEM-", 16) == 0;
        if (seg != (void *)-1)
            shmdt(seg);
        res_escape(r, "host System V segment %#lx found%s", key, same ? " and read" : "");
    } else {
        res_note(r, "shmget(%#lx): %s", key, ename(errno));
    }
    char path[128], buf[128];
    snprintf(path, sizeof(path), "/dev/shm/%s", name);
    ssize_t n = read_small(path, buf, sizeof(buf));
    if (n > 0 && strncmp(buf, "FLUEBOX-HOSTMEM-", 16) == 0)
        res_escape(r, "read host POSIX shared memory %s", path);
    else
        res_note(r, "%s: %s", path, n < 0 ? ename(errno) : "other content");
}

PROBE_MAIN("ipc_host")
