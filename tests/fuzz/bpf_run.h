/* bpf_run.h — a classic-BPF interpreter for seccomp programs, for tests
 * only: runs the programs libseccomp exports for fluebox on a struct
 * seccomp_data in user space, so that they can be compared with what the
 * rules mean (seccomp_fixed_decision, seccomp_profile_decision). fluebox
 * itself never builds or reads BPF instructions; this is the test's own
 * model of the kernel's seccomp checker, limited to what libseccomp 2.5
 * emits (LD W ABS, ALU AND K, JA, JEQ/JGT/JGE/JSET K, RET K). Anything else,
 * a jump out of range or falling off the end is reported as a failure
 * (returns BPF_RUN_BAD, which no seccomp action equals). Header-only. */
#ifndef FB_BPF_RUN_H
#define FB_BPF_RUN_H

#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define BPF_RUN_BAD 0xdeadbeefu

static inline uint32_t bpf_run(const struct sock_filter *f, size_t n, const struct seccomp_data *d)
{
    uint32_t a = 0;
    size_t pc = 0;
    size_t steps = 0;
    while (pc < n && steps++ < 100000) {
        const struct sock_filter *i = &f[pc];
        switch (i->code) {
        case BPF_LD | BPF_W | BPF_ABS:
            if (i->k > sizeof *d - 4 || (i->k & 3))
                return BPF_RUN_BAD;
            memcpy(&a, (const char *)d + i->k, 4);
            pc++;
            break;
        case BPF_ALU | BPF_AND | BPF_K:
            a &= i->k;
            pc++;
            break;
        case BPF_JMP | BPF_JA:
            pc += 1 + (size_t)i->k;
            break;
        case BPF_JMP | BPF_JEQ | BPF_K:
            pc += 1 + (a == i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JGT | BPF_K:
            pc += 1 + (a > i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JGE | BPF_K:
            pc += 1 + (a >= i->k ? i->jt : i->jf);
            break;
        case BPF_JMP | BPF_JSET | BPF_K:
            pc += 1 + ((a & i->k) ? i->jt : i->jf);
            break;
        case BPF_RET | BPF_K:
            return i->k;
        default:
            return BPF_RUN_BAD;
        }
    }
    return BPF_RUN_BAD;
}

#endif
