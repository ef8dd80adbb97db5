/* host_vm_readv: read another process's memory with process_vm_readv(): the
 * runner's helper publishes the address of a string it holds. */
#include "probe.h"
#include <sys/uio.h>

static void probe_attempt(struct probe_res *r)
{
    long hp = parg_long("hostpid", 0);
    const char *addr = parg("memaddr");
    long len = parg_long("memlen", 0);
    if (hp <= 1 || !addr || len <= 0 || len > 256) {
        res_skip(r, "need hostpid=, memaddr=, memlen=");
        return;
    }
    pid_t pid = (pid_t)hp;
    if (is_own_process(pid)) {
        res_note(r, "pid %d is a sandbox process, not the helper", (int)pid);
        return;
    }
    char buf[257] = {0};
    struct iovec local = {.iov_base = buf, .iov_len = (size_t)len};
    struct iovec remote = {.iov_base = (void *)strtoul(addr, NULL, 0), .iov_len = (size_t)len};
    ssize_t n = process_vm_readv(pid, &local, 1, &remote, 1, 0);
    if (n > 0 && strncmp(buf, "FLUEBOX-HOSTMEM-", 16) == 0)
        res_escape(r, "read %zd bytes of host pid %d", n, (int)pid);
    else if (n > 0)
        res_escape(r, "process_vm_readv returned %zd bytes (content differs)", n);
    else
        res_note(r, "process_vm_readv: %s", ename(errno));
}

PROBE_MAIN("host_vm_readv")
