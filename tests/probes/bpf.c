/* bpf: load an eBPF map and a trivial socket-filter program. The verifier and
 * JIT are a large attack surface (e.g. CVE-2021-3490); sandboxes deny bpf(2). */
#include "probe.h"
#include <linux/bpf.h>

static void probe_attempt(struct probe_res *r)
{
    union bpf_attr a;
    memset(&a, 0, sizeof(a));
    a.map_type = BPF_MAP_TYPE_ARRAY;
    a.key_size = 4;
    a.value_size = 4;
    a.max_entries = 1;
    int fd = (int)syscall(SYS_bpf, BPF_MAP_CREATE, &a, sizeof(a));
    if (fd >= 0) {
        close(fd);
        res_escape(r, "BPF_MAP_CREATE worked");
    } else {
        res_note(r, "BPF_MAP_CREATE: %s", ename(errno));
    }
    struct bpf_insn prog[2] = {
        {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = 0, .imm = 0}, /* r0 = 0 */
        {.code = BPF_JMP | BPF_EXIT},
    };
    memset(&a, 0, sizeof(a));
    a.prog_type = BPF_PROG_TYPE_SOCKET_FILTER;
    a.insns = (uint64_t)(uintptr_t)prog;
    a.insn_cnt = 2;
    a.license = (uint64_t)(uintptr_t) "GPL";
    fd = (int)syscall(SYS_bpf, BPF_PROG_LOAD, &a, sizeof(a));
    if (fd >= 0) {
        close(fd);
        res_escape(r, "BPF_PROG_LOAD worked");
    } else {
        res_note(r, "BPF_PROG_LOAD: %s", ename(errno));
    }
}

PROBE_MAIN("bpf")
