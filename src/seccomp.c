/* seccomp.c — policy->seccomp as libseccomp filters: building, exporting,
 * passing to the sandbox and loading them, and the same rules' meaning
 * computed directly (for the supervisor's answers to notifications, the
 * checks and the tests).
 *
 * libseccomp generates every BPF program fluebox loads. Its model decides
 * the profile format (docs/profiles.md):
 *   - per syscall, one unconditional rule or conditional rules: libseccomp
 *     lets an unconditional rule absorb the conditional ones of the same
 *     syscall, so fluebox refuses the mix;
 *   - conditional rules are OR'ed and must not overlap (which rule of two
 *     actions would win is libseccomp's internal order; and on rules of one
 *     action that overlap, libseccomp 2.5's tree pruning takes time out of
 *     all proportion and leaks memory), which fluebox checks exactly;
 *   - a rule compares each argument once; a call no rule matches gets the
 *     filter's default action; a rule with the default action is not added
 *     (libseccomp refuses it; it changes nothing).
 * Every condition is given to libseccomp as MASKED_EQ comparisons ("terms",
 * (argument & mask) == value): eq and masked_eq are one term, a range or ne
 * the few aligned blocks that cover it. That is the only way to compare a
 * 32-bit argument on its low 32 bits as the kernel reads it (ioctl(fd,
 * TIOCSTI | 1UL << 32) is TIOCSTI), and the only comparison libseccomp 2.5
 * combines correctly across several rules of one syscall: with ranges and
 * ne it merges rules of one syscall wrongly (tests/fuzz checks this).
 *
 * Two filters, because the kernel runs every filter and the stricter answer
 * wins, so nothing in a profile can relax the fixed rules:
 *   fixed (default allow): other ABIs are killed (libseccomp's bad-arch
 *     action, x32 numbers on x86_64 included); clone3 and openat2 (flags and
 *     mode in memory, out of a filter's sight: libc falls back to clone and
 *     openat) and syscall numbers above the last one this build has reviewed
 *     fail with ENOSYS; clone/unshare with any namespace flag, ioctl TIOCSTI
 *     and TIOCLINUX, making set-user-ID or set-group-ID files (chmod family;
 *     open/openat with O_CREAT or O_TMPFILE, creat, mknod with either bit)
 *     and personality other than PER_LINUX, PER_LINUX32 and the query fail
 *     with EPERM;
 *   profile: seccomp.default and seccomp.rules, and the fixed ENOSYS rules.
 * Load order: the fixed filter first, because loading the second filter is
 * a seccomp() call that the first must allow (strict does not). When both
 * answer with an errno the kernel takes the last loaded filter's, the
 * profile's: so the fixed ENOSYS answers are in the profile filter too
 * (clone3 under a default-deny profile must stay ENOSYS for libc to fall
 * back to clone). With --seccomp-log and learn the profile filter has the
 * listener (a task may have one, and the filter that answers last on a tie
 * is the one whose listener is asked): its errno rules become
 * notifications; with --seccomp-log the fixed EPERM rules are merged into
 * it as notifications too (the profile's rules restricted to the calls
 * those rules do not cover), so that the supervisor sees and counts them;
 * the fixed filter still returns a notification for them, which without a
 * listener fails the call: nothing the fixed rules deny gets through even
 * if the merge were wrong.
 *
 * Built-in profiles' filters are compiled at build time (the table
 * fb_sc_precompiled); others by a helper process the supervisor starts
 * first thing in sandbox_spawn (seccomp_job_start), so that libseccomp's
 * milliseconds overlap the sandbox's creation. */
#include "seccomp.h"

#include "ctl.h"

#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/fs.h>
#include <pthread.h>
#include <seccomp.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <linux/netlink.h>
#include <netinet/in.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
#endif
#ifndef AF_MCTP
#define AF_MCTP 45
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SECCOMP_RET_KILL_PROCESS
#define SECCOMP_RET_KILL_PROCESS 0x80000000U
#endif
#ifndef SECCOMP_RET_USER_NOTIF
#define SECCOMP_RET_USER_NOTIF 0x7fc00000U
#endif
#ifndef SECCOMP_RET_LOG
#define SECCOMP_RET_LOG 0x7ffc0000U
#endif
#ifndef SECCOMP_FILTER_FLAG_LOG
#define SECCOMP_FILTER_FLAG_LOG (1UL << 1)
#endif
#ifndef SECCOMP_FILTER_FLAG_NEW_LISTENER
#define SECCOMP_FILTER_FLAG_NEW_LISTENER (1UL << 3)
#endif

#define NS_FLAGS                                                                         \
    (CLONE_NEWNS | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID |         \
     CLONE_NEWNET | CLONE_NEWCGROUP | CLONE_NEWTIME)

/* ---- syscall names ---- */

/* Syscalls newer than the libseccomp this was built against. Since Linux 5.1
 * every architecture but alpha numbers new syscalls alike, so this table
 * holds for x86_64 and aarch64, the two fluebox builds for. */
static const struct {
    const char *name;
    int nr;
} newer[] = {
    {"cachestat", 451},      {"fchmodat2", 452},       {"map_shadow_stack", 453},
    {"futex_wake", 454},     {"futex_wait", 455},      {"futex_requeue", 456},
    {"statmount", 457},      {"listmount", 458},       {"lsm_get_self_attr", 459},
    {"lsm_set_self_attr", 460}, {"lsm_list_modules", 461}, {"mseal", 462},
    {"setxattrat", 463},     {"getxattrat", 464},      {"listxattrat", 465},
    {"removexattrat", 466},  {"open_tree_attr", 467},  {"file_getattr", 468},
    {"file_setattr", 469},
};
/* The last syscall number this build knows; anything above is answered
 * ENOSYS, as an older kernel would, so libc falls back and a deny list is
 * never asked to judge a syscall nobody has reviewed. */
#define LAST_KNOWN_NR 469

static bool newer_table_applies(void)
{
    uint32_t a = seccomp_arch_native();
    return a == SCMP_ARCH_X86_64 || a == SCMP_ARCH_AARCH64;
}

int seccomp_syscall_nr(const char *name)
{
    int nr = seccomp_syscall_resolve_name(name);
    if (nr == __NR_SCMP_ERROR) {
        if (newer_table_applies())
            for (size_t i = 0; i < FB_ARRAY_LEN(newer); i++)
                if (!strcmp(newer[i].name, name))
                    return newer[i].nr;
        return -1;
    }
    return nr < 0 ? -2 : nr;
}

const char *seccomp_syscall_name(int nr, char *buf, size_t cap)
{
    char *n = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, nr);
    if (n) {
        snprintf(buf, cap, "%s", n);
        free(n);
        return buf;
    }
    if (newer_table_applies())
        for (size_t i = 0; i < FB_ARRAY_LEN(newer); i++)
            if (newer[i].nr == nr) {
                snprintf(buf, cap, "%s", newer[i].name);
                return buf;
            }
    return NULL;
}

/* ---- constants ---- */

#ifndef PR_SET_VMA
#define PR_SET_VMA 0x53564d41
#endif
#ifndef PR_GET_AUXV
#define PR_GET_AUXV 0x41555856
#endif
#ifndef PR_SET_MDWE
#define PR_SET_MDWE 65
#define PR_GET_MDWE 66
#endif
#ifndef PR_SCHED_CORE
#define PR_SCHED_CORE 62
#endif

/* ctx names the syscall arguments a constant belongs to, for printing
 * ("socket:0" = socket's argument 0); "" = only for parsing. */
static const struct sc_const {
    const char *name;
    uint64_t v;
    const char *ctx;
} consts[] = {
#define C(n, ctx) {#n, (uint64_t)(n), ctx}
    C(AF_UNIX, "socket:0 socketpair:0"), C(AF_INET, "socket:0 socketpair:0"),
    C(AF_INET6, "socket:0 socketpair:0"), C(AF_NETLINK, "socket:0 socketpair:0"),
    C(AF_PACKET, "socket:0 socketpair:0"), C(AF_KEY, "socket:0"), C(AF_ALG, "socket:0"),
    C(AF_VSOCK, "socket:0"), C(AF_BLUETOOTH, "socket:0"), C(AF_CAN, "socket:0"),
    C(AF_TIPC, "socket:0"), C(AF_RDS, "socket:0"), C(AF_XDP, "socket:0"),
    C(AF_APPLETALK, "socket:0"), C(AF_X25, "socket:0"), C(AF_AX25, "socket:0"),
    C(AF_LLC, "socket:0"), C(AF_PHONET, "socket:0"), C(AF_SMC, "socket:0"),
    C(AF_IUCV, "socket:0"), C(AF_NFC, "socket:0"), C(AF_IB, "socket:0"), C(AF_MPLS, "socket:0"),
    C(AF_KCM, "socket:0"), C(AF_QIPCRTR, "socket:0"), C(AF_ATMPVC, "socket:0"),
    C(AF_ATMSVC, "socket:0"), C(AF_DECnet, "socket:0"), C(AF_ROSE, "socket:0"),
    C(AF_NETROM, "socket:0"), C(AF_IRDA, "socket:0"), C(AF_PPPOX, "socket:0"),
    C(AF_WANPIPE, "socket:0"), C(AF_ISDN, "socket:0"), C(AF_IEEE802154, "socket:0"),
    C(AF_CAIF, "socket:0"), C(AF_RXRPC, "socket:0"), C(AF_SECURITY, "socket:0"),
    C(AF_ASH, "socket:0"), C(AF_ECONET, "socket:0"), C(AF_SNA, "socket:0"),
    C(AF_BRIDGE, "socket:0"), C(AF_NETBEUI, "socket:0"), C(AF_IPX, "socket:0"),
    C(AF_MCTP, "socket:0"), C(AF_UNSPEC, ""),
    /* Protocols depend on the family: parsed, never printed. */
    C(NETLINK_ROUTE, ""), C(NETLINK_SOCK_DIAG, ""), C(NETLINK_AUDIT, ""),
    C(NETLINK_KOBJECT_UEVENT, ""), C(NETLINK_GENERIC, ""), C(NETLINK_NETFILTER, ""),
    C(NETLINK_XFRM, ""), C(NETLINK_SELINUX, ""), C(NETLINK_CONNECTOR, ""),
    C(IPPROTO_IP, ""), C(IPPROTO_ICMP, ""), C(IPPROTO_TCP, ""), C(IPPROTO_UDP, ""),
    C(IPPROTO_ICMPV6, ""), C(IPPROTO_SCTP, ""), C(IPPROTO_UDPLITE, ""), C(IPPROTO_MPTCP, ""),
    C(MSG_OOB, ""), C(MSG_PEEK, ""), C(MSG_DONTWAIT, ""),
    C(SOCK_STREAM, ""), C(SOCK_DGRAM, ""), C(SOCK_RAW, ""), C(SOCK_SEQPACKET, ""),
    C(SOCK_NONBLOCK, ""), C(SOCK_CLOEXEC, ""),
    C(CLONE_NEWNS, ""), C(CLONE_NEWUTS, ""), C(CLONE_NEWIPC, ""), C(CLONE_NEWUSER, ""),
    C(CLONE_NEWPID, ""), C(CLONE_NEWNET, ""), C(CLONE_NEWCGROUP, ""), C(CLONE_NEWTIME, ""),
    C(CLONE_VM, ""), C(CLONE_FS, ""), C(CLONE_FILES, ""), C(CLONE_SIGHAND, ""),
    C(CLONE_THREAD, ""), C(CLONE_VFORK, ""), C(CLONE_SYSVSEM, ""), C(CLONE_PIDFD, ""),
    C(TCGETS, "ioctl:1"), C(TCSETS, "ioctl:1"), C(TCSETSW, "ioctl:1"), C(TCSETSF, "ioctl:1"),
    C(TCGETA, "ioctl:1"), C(TCSETA, "ioctl:1"), C(TCSETAW, "ioctl:1"), C(TCSETAF, "ioctl:1"),
    C(TCSBRK, "ioctl:1"), C(TCXONC, "ioctl:1"), C(TCFLSH, "ioctl:1"), C(TIOCEXCL, "ioctl:1"),
    C(TIOCNXCL, "ioctl:1"), C(TIOCSCTTY, "ioctl:1"), C(TIOCGPGRP, "ioctl:1"),
    C(TIOCSPGRP, "ioctl:1"), C(TIOCOUTQ, "ioctl:1"), C(TIOCSTI, "ioctl:1"),
    C(TIOCGWINSZ, "ioctl:1"), C(TIOCSWINSZ, "ioctl:1"), C(TIOCMGET, "ioctl:1"),
    {"TCGETS2", 0x802c542aU, "ioctl:1"}, {"TCSETS2", 0x402c542bU, "ioctl:1"},
    {"TCSETSW2", 0x402c542cU, "ioctl:1"}, {"TCSETSF2", 0x402c542dU, "ioctl:1"},
    {"FS_IOC_FIEMAP", 0xc020660bU, "ioctl:1"},
    C(FIONREAD, "ioctl:1"), C(TIOCLINUX, "ioctl:1"), C(TIOCCONS, "ioctl:1"),
    C(FIONBIO, "ioctl:1"), C(TIOCNOTTY, "ioctl:1"), C(TIOCSETD, "ioctl:1"),
    C(TIOCGETD, "ioctl:1"), C(TCSBRKP, "ioctl:1"), C(TIOCSBRK, "ioctl:1"),
    C(TIOCCBRK, "ioctl:1"), C(TIOCGSID, "ioctl:1"),
    C(TIOCGPTN, "ioctl:1"), C(TIOCSPTLCK, "ioctl:1"), C(TIOCGPTLCK, "ioctl:1"),
    C(TIOCGPTPEER, "ioctl:1"), C(TIOCGDEV, "ioctl:1"), C(TIOCVHANGUP, "ioctl:1"),
    C(FIONCLEX, "ioctl:1"), C(FIOCLEX, "ioctl:1"), C(FIOASYNC, "ioctl:1"),
    C(FIOQSIZE, "ioctl:1"), C(TIOCGEXCL, "ioctl:1"), C(TIOCGPKT, "ioctl:1"),
    C(TIOCPKT, "ioctl:1"), C(TIOCSIG, "ioctl:1"), C(TIOCGICOUNT, "ioctl:1"),
    C(FICLONE, "ioctl:1"), C(FICLONERANGE, "ioctl:1"), C(FIDEDUPERANGE, "ioctl:1"),
    C(FIGETBSZ, "ioctl:1"), C(FS_IOC_GETFLAGS, "ioctl:1"), C(FS_IOC_SETFLAGS, "ioctl:1"),
    C(FS_IOC_GETVERSION, "ioctl:1"), C(FIBMAP, "ioctl:1"),
    C(FIFREEZE, "ioctl:1"), C(FITHAW, "ioctl:1"), C(BLKGETSIZE64, "ioctl:1"),
    C(SIOCGIFCONF, "ioctl:1"), C(SIOCGIFFLAGS, "ioctl:1"), C(SIOCGIFADDR, "ioctl:1"),
    C(SIOCGIFINDEX, "ioctl:1"), C(SIOCGIFNAME, "ioctl:1"), C(SIOCGIFMTU, "ioctl:1"),
    C(SIOCGIFHWADDR, "ioctl:1"), C(SIOCGIFNETMASK, "ioctl:1"), C(SIOCATMARK, "ioctl:1"),
    C(PR_SET_PDEATHSIG, "prctl:0"), C(PR_GET_PDEATHSIG, "prctl:0"),
    C(PR_GET_DUMPABLE, "prctl:0"), C(PR_SET_DUMPABLE, "prctl:0"),
    C(PR_GET_KEEPCAPS, "prctl:0"), C(PR_SET_KEEPCAPS, "prctl:0"),
    C(PR_SET_NAME, "prctl:0"), C(PR_GET_NAME, "prctl:0"), C(PR_GET_SECCOMP, "prctl:0"),
    C(PR_SET_SECCOMP, "prctl:0"), C(PR_CAPBSET_READ, "prctl:0"),
    C(PR_CAPBSET_DROP, "prctl:0"), C(PR_GET_TSC, "prctl:0"), C(PR_SET_TSC, "prctl:0"),
    C(PR_GET_SECUREBITS, "prctl:0"), C(PR_SET_SECUREBITS, "prctl:0"),
    C(PR_SET_TIMERSLACK, "prctl:0"), C(PR_GET_TIMERSLACK, "prctl:0"),
    C(PR_MCE_KILL, "prctl:0"), C(PR_MCE_KILL_GET, "prctl:0"), C(PR_SET_MM, "prctl:0"),
    C(PR_SET_PTRACER, "prctl:0"), C(PR_SET_CHILD_SUBREAPER, "prctl:0"),
    C(PR_GET_CHILD_SUBREAPER, "prctl:0"), C(PR_SET_NO_NEW_PRIVS, "prctl:0"),
    C(PR_GET_NO_NEW_PRIVS, "prctl:0"), C(PR_GET_TID_ADDRESS, "prctl:0"),
    C(PR_SET_THP_DISABLE, "prctl:0"), C(PR_GET_THP_DISABLE, "prctl:0"),
    C(PR_CAP_AMBIENT, "prctl:0"), C(PR_GET_SPECULATION_CTRL, "prctl:0"),
    C(PR_SET_SPECULATION_CTRL, "prctl:0"), C(PR_SET_IO_FLUSHER, "prctl:0"),
    C(PR_GET_IO_FLUSHER, "prctl:0"), C(PR_SET_SYSCALL_USER_DISPATCH, "prctl:0"),
    C(PR_SET_TAGGED_ADDR_CTRL, "prctl:0"), C(PR_GET_TAGGED_ADDR_CTRL, "prctl:0"),
    C(PR_SET_FP_MODE, "prctl:0"), C(PR_GET_FP_MODE, "prctl:0"), C(PR_SCHED_CORE, "prctl:0"),
    C(PR_SET_VMA, "prctl:0"), C(PR_GET_AUXV, "prctl:0"), C(PR_SET_MDWE, "prctl:0"),
    C(PR_GET_MDWE, "prctl:0"), C(PR_SET_ENDIAN, "prctl:0"), C(PR_GET_ENDIAN, "prctl:0"),
    C(PR_SET_FPEMU, "prctl:0"), C(PR_GET_FPEMU, "prctl:0"), C(PR_SET_UNALIGN, "prctl:0"),
    C(PR_GET_UNALIGN, "prctl:0"), C(PR_TASK_PERF_EVENTS_DISABLE, "prctl:0"),
    C(PR_TASK_PERF_EVENTS_ENABLE, "prctl:0"), C(PR_SET_TIMING, "prctl:0"),
    C(PR_GET_TIMING, "prctl:0"),
    C(PER_LINUX, ""), C(PER_LINUX32, "personality:0"), C(UNAME26, "personality:0"),
    C(ADDR_NO_RANDOMIZE, "personality:0"), C(READ_IMPLIES_EXEC, "personality:0"),
    C(ADDR_COMPAT_LAYOUT, "personality:0"), C(MMAP_PAGE_ZERO, "personality:0"),
    C(ADDR_LIMIT_32BIT, "personality:0"), C(ADDR_LIMIT_3GB, "personality:0"),
    C(SHORT_INODE, "personality:0"), C(WHOLE_SECONDS, "personality:0"),
    C(STICKY_TIMEOUTS, "personality:0"), C(FDPIC_FUNCPTRS, "personality:0"),
#undef C
};

/* Is ctx (e.g. "socket:0 socketpair:0") naming argument idx of syscall? */
static bool ctx_has(const char *ctx, const char *syscall, unsigned idx)
{
    char want[48];
    snprintf(want, sizeof want, "%s:%u", syscall, idx);
    size_t wl = strlen(want);
    for (const char *s = ctx; (s = strstr(s, want)); s += wl)
        if ((s == ctx || s[-1] == ' ') && (s[wl] == 0 || s[wl] == ' '))
            return true;
    return false;
}

const char *seccomp_const_name(const char *syscall, unsigned idx, uint64_t v)
{
    if (!strcmp(syscall, "personality") && idx == 0 && (v == 0 || v == 0xffffffffu))
        return v ? NULL : "PER_LINUX";
    for (size_t i = 0; i < FB_ARRAY_LEN(consts); i++)
        if (consts[i].v == v && ctx_has(consts[i].ctx, syscall, idx))
            return consts[i].name;
    return NULL;
}

int seccomp_const_parse(const char *s, uint64_t *out)
{
    uint64_t sum = 0;
    if (!*s)
        return -1;
    while (*s) {
        size_t l = strcspn(s, "|");
        char tok[64];
        /* trim spaces around a term */
        while (l && *s == ' ') {
            s++;
            l--;
        }
        size_t tl = l;
        while (tl && s[tl - 1] == ' ')
            tl--;
        if (tl == 0 || tl >= sizeof tok)
            return -1;
        memcpy(tok, s, tl);
        tok[tl] = 0;
        uint64_t v;
        bool found = false;
        if ((tok[0] >= '0' && tok[0] <= '9')) {
            char *end;
            errno = 0;
            v = strtoull(tok, &end, 0);
            if (errno || *end)
                return -1;
            found = true;
        } else {
            for (size_t i = 0; i < FB_ARRAY_LEN(consts); i++)
                if (!strcmp(consts[i].name, tok)) {
                    v = consts[i].v;
                    found = true;
                    break;
                }
        }
        if (!found)
            return -1;
        sum |= v;
        s += l;
        if (*s == '|') {
            s++;
            if (!*s)
                return -1;
        }
    }
    *out = sum;
    return 0;
}

/* ---- 32-bit arguments ---- */

/* Arguments the kernel declares int or unsigned int (x86_64 and aarch64
 * agree), for the syscalls profiles put conditions on. */
static const struct {
    const char *name;
    unsigned mask; /* bit i: argument i is 32-bit */
} args32[] = {
    {"ioctl", 1u << 1},          {"personality", 1u << 0},   {"socket", 7u},
    {"socketpair", 7u},          {"prctl", 1u << 0},         {"fcntl", 1u << 1},
    {"setsockopt", 6u},          {"getsockopt", 6u},         {"kill", 1u << 1},
    {"tkill", 1u << 1},          {"tgkill", 1u << 2},        {"arch_prctl", 1u << 0},
    {"open", 3u << 1},           {"openat", 3u << 2},        {"madvise", 1u << 2},
    {"creat", 1u << 1},          {"fchmodat2", 1u << 2},
    {"seccomp", 1u << 0},        {"keyctl", 1u << 0},        {"bpf", 1u << 0},
    {"setns", 1u << 1},          {"io_uring_setup", 1u << 0}, {"mknod", 1u << 1},
    {"mknodat", 1u << 2},        {"chmod", 1u << 1},         {"fchmod", 1u << 1},
    {"fchmodat", 1u << 2},       {"dup3", 1u << 2},          {"pipe2", 1u << 1},
    {"accept4", 1u << 3},        {"eventfd2", 3u},           {"memfd_create", 1u << 1},
    {"rt_sigaction", 1u << 0},   {"rt_sigprocmask", 1u << 0}, {"waitid", 1u << 0 | 1u << 3},
    {"clock_gettime", 1u << 0},  {"prlimit64", 1u << 1},     {"getrlimit", 1u << 0},
    {"setrlimit", 1u << 0},      {"sched_setscheduler", 1u << 1}, {"epoll_ctl", 1u << 1},
    {"flock", 1u << 1},          {"shutdown", 1u << 1},      {"listen", 1u << 1},
};

bool seccomp_arg_is32(const char *name, unsigned idx)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(args32); i++)
        if (!strcmp(args32[i].name, name))
            return idx < 6 && (args32[i].mask >> idx) & 1;
    return false;
}

/* ---- terms: what libseccomp is given ---- */

/* Syscall numbers from LAST_KNOWN_NR + 1 to this one fail with ENOSYS. The
 * fixed filter names each one (libseccomp has no ranges of syscall
 * numbers, and every rule makes its compile slower: these 130 cost about
 * 0.3 ms in the fixed filter, the next 400 would cost 3 ms more). New
 * syscalls get the next free number, seven or eight a year since Linux 5.1,
 * so this covers the next fifteen years of kernels; numbers above the
 * kernel's own last syscall fail with ENOSYS anyway. */
#define RAW_ENOSYS_LAST 599

/* A condition on one argument is a union of terms: (arg & mask) == val. */
struct term {
    uint64_t mask, val;
};

/* A range of 64-bit values is covered by at most 2 * 64 aligned blocks. */
#define MAX_TERMS 130
/* At most this many libseccomp rules come from one profile rule (the
 * product of its conditions' term counts: one range), and from all the
 * rules of one syscall: libseccomp's time grows faster than the number of
 * rules (seconds for ten thousand comparisons of several arguments). */
#define MAX_EXPAND 128
#define MAX_PER_SYSCALL 1024

static uint64_t width_mask(bool is32) { return is32 ? 0xffffffffu : ~(uint64_t)0; }

/* Aligned blocks covering [lo, hi] (lo <= hi <= wmask), appended at out[n]. */
static size_t range_terms(uint64_t lo, uint64_t hi, uint64_t wmask, struct term *out, size_t n)
{
    for (;;) {
        unsigned k = lo ? (unsigned)__builtin_ctzll(lo) : (wmask == ~(uint64_t)0 ? 64 : 32);
        uint64_t span;
        for (;; k--) {
            span = k >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1;
            if (span <= hi - lo)
                break;
        }
        out[n++] = (struct term){wmask & ~span, lo};
        if (hi - lo == span)
            return n;
        lo += span + 1;
    }
}

/* The terms of one condition on an argument of width wmask; 0 = never holds. */
static size_t cond_terms(const struct fb_sc_arg *a, bool is32, struct term *out)
{
    uint64_t w = width_mask(is32), v = a->value & w;
    switch (a->op) {
    case FB_SC_EQ:
        out[0] = (struct term){w, v};
        return 1;
    case FB_SC_MASKED_EQ:
        out[0] = (struct term){a->mask & w, v & a->mask};
        return 1;
    case FB_SC_NE: {
        /* x != v: x agrees with v above bit k and differs at bit k, for
         * exactly one k. */
        size_t n = 0;
        for (int k = is32 ? 31 : 63; k >= 0; k--) {
            uint64_t m = w & ~(((uint64_t)1 << k) - 1);
            out[n++] = (struct term){m, (v & m) ^ ((uint64_t)1 << k)};
        }
        return n;
    }
    case FB_SC_LT: return v ? range_terms(0, v - 1, w, out, 0) : 0;
    case FB_SC_LE: return range_terms(0, v, w, out, 0);
    case FB_SC_GT: return v < w ? range_terms(v + 1, w, w, out, 0) : 0;
    case FB_SC_GE: return range_terms(v, w, w, out, 0);
    }
    return 0;
}

/* Does condition a hold for argument value x (as the kernel reads it)? */
static bool cond_holds(const struct fb_sc_arg *a, bool is32, uint64_t x)
{
    uint64_t w = width_mask(is32), v = a->value & w;
    x &= w;
    switch (a->op) {
    case FB_SC_EQ: return x == v;
    case FB_SC_NE: return x != v;
    case FB_SC_LT: return x < v;
    case FB_SC_LE: return x <= v;
    case FB_SC_GT: return x > v;
    case FB_SC_GE: return x >= v;
    case FB_SC_MASKED_EQ: return (x & a->mask) == (v & a->mask);
    }
    return false;
}

/* One libseccomp rule: all its comparisons hold. */
struct cmp {
    unsigned arg;
    uint64_t mask, val;
};

struct srule {
    int nr;
    uint32_t act; /* SCMP_ACT_* */
    unsigned n;
    struct cmp c[6];
};

/* One filter as libseccomp will get it. */
struct sfilter {
    uint32_t def;
    struct srule *r;
    size_t n, cap;
};

static struct srule *sf_add(struct sfilter *f, int nr, uint32_t act)
{
    if (f->n == f->cap) {
        f->cap = f->cap ? 2 * f->cap : 128;
        f->r = fb_xrealloc(f->r, f->cap * sizeof *f->r);
    }
    struct srule *r = &f->r[f->n++];
    memset(r, 0, sizeof *r);
    r->nr = nr;
    r->act = act;
    return r;
}

/* r and (arg & t.mask) == t.val; false when no call satisfies both. */
static bool srule_and(struct srule *r, unsigned arg, struct term t)
{
    if (!t.mask)
        return true;
    for (unsigned i = 0; i < r->n; i++) {
        struct cmp *c = &r->c[i];
        if (c->arg != arg)
            continue;
        if ((c->val ^ t.val) & c->mask & t.mask)
            return false;
        c->mask |= t.mask;
        c->val |= t.val & t.mask;
        return true;
    }
    r->c[r->n++] = (struct cmp){arg, t.mask, t.val & t.mask};
    return true;
}

static bool srules_overlap(const struct srule *a, const struct srule *b)
{
    for (unsigned i = 0; i < a->n; i++)
        for (unsigned j = 0; j < b->n; j++)
            if (a->c[i].arg == b->c[j].arg &&
                ((a->c[i].val ^ b->c[j].val) & a->c[i].mask & b->c[j].mask))
                return false;
    return true;
}

/* Does every call that matches a match b? */
static bool srule_within(const struct srule *a, const struct srule *b)
{
    for (unsigned j = 0; j < b->n; j++) {
        bool covered = false;
        for (unsigned i = 0; i < a->n && !covered; i++)
            covered = a->c[i].arg == b->c[j].arg && (a->c[i].mask & b->c[j].mask) == b->c[j].mask &&
                      !((a->c[i].val ^ b->c[j].val) & b->c[j].mask);
        if (!covered)
            return false;
    }
    return true;
}

/* The terms of each condition of rule r; returns the number of libseccomp
 * rules they make (the product), saturating above MAX_EXPAND. */
static size_t rule_terms(const struct fb_sc_rule *r, struct term (*t)[MAX_TERMS], size_t *nt)
{
    size_t total = 1;
    for (unsigned k = 0; k < r->nargs && k < 6; k++) {
        nt[k] = cond_terms(&r->args[k], seccomp_arg_is32(r->name, r->args[k].index), t[k]);
        total *= nt[k];
        if (total > MAX_EXPAND)
            total = MAX_EXPAND + 1;
    }
    return total;
}

/* Append rule r's libseccomp rules (the cross product of its conditions'
 * terms) to f. Returns how many, or -1 when more than MAX_EXPAND. */
static long expand_rule(const struct fb_sc_rule *r, int nr, uint32_t act, struct sfilter *f)
{
    static __thread struct term t[6][MAX_TERMS];
    size_t nt[6] = {0}, pos[6] = {0};
    size_t total = rule_terms(r, t, nt);
    if (total > MAX_EXPAND)
        return -1;
    for (size_t i = 0; i < total; i++) {
        struct srule *s = sf_add(f, nr, act);
        bool ok = true;
        for (unsigned k = 0; k < r->nargs; k++)
            ok = ok && srule_and(s, r->args[k].index, t[k][pos[k]]);
        if (!ok)
            f->n--; /* cannot happen: one comparison per argument */
        for (unsigned k = 0; k < r->nargs; k++) {
            if (++pos[k] < nt[k])
                break;
            pos[k] = 0;
        }
    }
    return (long)total;
}

/* ---- the fixed rules ---- */

enum fx_kind {
    FX_ALL,    /* every call */
    FX_BITS,   /* any of bits set in arg */
    FX_BITS2,  /* any of bits set in arg, and any of bits2 in arg2 */
    FX_IN,     /* arg (32-bit) is one of set */
    FX_NOT_IN, /* arg (32-bit) is none of set */
};

struct fixed {
    const char *name;
    enum fx_kind kind;
    int err;
    unsigned arg;
    uint64_t bits;
    unsigned arg2;
    uint64_t bits2;
    const uint64_t *set;
    size_t nset;
};

#ifndef __O_TMPFILE
#define __O_TMPFILE (O_TMPFILE & ~O_DIRECTORY)
#endif
#define SETID_BITS ((uint64_t)(S_ISUID | S_ISGID))
#define CREATING ((uint64_t)(O_CREAT | __O_TMPFILE))

static const uint64_t tty_inject[] = {TIOCSTI, TIOCLINUX};
/* Sorted. PER_LINUX32 is what linux32/setarch use for 32-bit builds; no
 * flags (ADDR_NO_RANDOMIZE, READ_IMPLIES_EXEC, MMAP_PAGE_ZERO, ... weaken
 * the process against exploits, UNAME26 fakes the kernel version). */
static const uint64_t personas[] = {PER_LINUX, PER_LINUX32, 0xffffffffu};

static const struct fixed fixed[] = {
    {"clone3", FX_ALL, ENOSYS, 0, 0, 0, 0, NULL, 0},
    {"openat2", FX_ALL, ENOSYS, 0, 0, 0, 0, NULL, 0},
    {"clone", FX_BITS, EPERM, 0, NS_FLAGS, 0, 0, NULL, 0},
    {"unshare", FX_BITS, EPERM, 0, NS_FLAGS, 0, 0, NULL, 0},
    {"ioctl", FX_IN, EPERM, 1, 0, 0, 0, tty_inject, FB_ARRAY_LEN(tty_inject)},
    {"chmod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"fchmod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"fchmodat", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"fchmodat2", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"creat", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"mknod", FX_BITS, EPERM, 1, SETID_BITS, 0, 0, NULL, 0},
    {"mknodat", FX_BITS, EPERM, 2, SETID_BITS, 0, 0, NULL, 0},
    {"open", FX_BITS2, EPERM, 1, CREATING, 2, SETID_BITS, NULL, 0},
    {"openat", FX_BITS2, EPERM, 2, CREATING, 3, SETID_BITS, NULL, 0},
    {"personality", FX_NOT_IN, EPERM, 0, 0, 0, 0, personas, FB_ARRAY_LEN(personas)},
};

static int fixed_nrs[FB_ARRAY_LEN(fixed)];
static uint32_t native_arch;
static bool x32_kill;     /* x86_64: numbers with the x32 bit are another ABI */
static bool raw_enosys;   /* the numbering above LAST_KNOWN_NR is known */
static pthread_once_t fixed_once = PTHREAD_ONCE_INIT;

static void fixed_init(void)
{
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        fixed_nrs[i] = seccomp_syscall_nr(fixed[i].name);
    native_arch = seccomp_arch_native();
    x32_kill = native_arch == SCMP_ARCH_X86_64;
    raw_enosys = newer_table_applies();
}

static void fixed_ready(void) { pthread_once(&fixed_once, fixed_init); }

static bool in_set(const struct fixed *fx, uint64_t x)
{
    x &= 0xffffffffu;
    for (size_t i = 0; i < fx->nset; i++)
        if (fx->set[i] == x)
            return true;
    return false;
}

static bool fixed_matches(const struct fixed *fx, const struct seccomp_data *d)
{
    uint64_t x = d->args[fx->arg];
    switch (fx->kind) {
    case FX_ALL: return true;
    case FX_BITS: return x & fx->bits;
    case FX_BITS2: return (x & fx->bits) && (d->args[fx->arg2] & fx->bits2);
    case FX_IN: return in_set(fx, x);
    case FX_NOT_IN: return !in_set(fx, x);
    }
    return false;
}

/* The calls fx denies, as libseccomp rules with action act. */
static void fixed_rules(const struct fixed *fx, int nr, uint32_t act, struct sfilter *f)
{
    static __thread struct term t[MAX_TERMS];
    switch (fx->kind) {
    case FX_ALL:
        sf_add(f, nr, act);
        return;
    case FX_BITS: {
        /* "any of bits" as rules that exclude each other: the lowest set
         * bit of them is b */
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            srule_and(sf_add(f, nr, act), fx->arg, (struct term){below | bit, bit});
            below |= bit;
        }
        return;
    }
    case FX_BITS2: {
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            uint64_t below2 = 0;
            for (int c = 0; c < 64; c++) {
                uint64_t bit2 = (uint64_t)1 << c;
                if (!(fx->bits2 & bit2))
                    continue;
                struct srule *r = sf_add(f, nr, act);
                srule_and(r, fx->arg, (struct term){below | bit, bit});
                srule_and(r, fx->arg2, (struct term){below2 | bit2, bit2});
                below2 |= bit2;
            }
            below |= bit;
        }
        return;
    }
    case FX_IN:
        for (size_t i = 0; i < fx->nset; i++)
            srule_and(sf_add(f, nr, act), fx->arg, (struct term){0xffffffffu, fx->set[i]});
        return;
    case FX_NOT_IN: {
        /* The gaps between the (sorted) allowed values, as aligned blocks. */
        size_t n = 0;
        uint64_t lo = 0;
        for (size_t i = 0; i <= fx->nset; i++) {
            uint64_t hi = i < fx->nset ? fx->set[i] : (uint64_t)0x100000000;
            if (hi > lo)
                n = range_terms(lo, hi - 1, 0xffffffffu, t, n);
            lo = i < fx->nset ? fx->set[i] + 1 : lo;
        }
        for (size_t i = 0; i < n; i++)
            srule_and(sf_add(f, nr, act), fx->arg, t[i]);
        return;
    }
    }
}

/* One way for a call to be outside a fixed rule: all of its terms hold. */
struct alt {
    unsigned n;
    unsigned arg[2];
    struct term t[2];
};

static void alt_one(struct alt *a, unsigned arg, struct term t)
{
    a->n = 1;
    a->arg[0] = arg;
    a->t[0] = t;
}

/* The calls fx does not deny, as alternatives that exclude each other (so
 * that the rules they make never overlap: libseccomp 2.5 leaks memory on
 * rules of one action that overlap). Returns how many. */
static size_t fixed_complement(const struct fixed *fx, struct alt *out)
{
    size_t n = 0;
    switch (fx->kind) {
    case FX_ALL:
        return 0;
    case FX_BITS:
        alt_one(&out[n++], fx->arg, (struct term){fx->bits, 0});
        return n;
    case FX_BITS2: {
        /* none of bits; or the first set bit is b, and none of bits2 */
        alt_one(&out[n++], fx->arg, (struct term){fx->bits, 0});
        uint64_t below = 0;
        for (int b = 0; b < 64; b++) {
            uint64_t bit = (uint64_t)1 << b;
            if (!(fx->bits & bit))
                continue;
            struct alt *a = &out[n++];
            a->n = 2;
            a->arg[0] = fx->arg;
            a->t[0] = (struct term){below | bit, bit};
            a->arg[1] = fx->arg2;
            a->t[1] = (struct term){fx->bits2, 0};
            below |= bit;
        }
        return n;
    }
    case FX_IN: {
        static __thread struct term t[MAX_TERMS];
        uint64_t lo = 0;
        uint64_t sorted[8];
        size_t ns = fx->nset < 8 ? fx->nset : 8, nt = 0;
        memcpy(sorted, fx->set, ns * sizeof *sorted);
        for (size_t i = 1; i < ns; i++)
            for (size_t j = i; j > 0 && sorted[j - 1] > sorted[j]; j--) {
                uint64_t x = sorted[j];
                sorted[j] = sorted[j - 1];
                sorted[j - 1] = x;
            }
        for (size_t i = 0; i <= ns; i++) {
            uint64_t hi = i < ns ? sorted[i] : (uint64_t)0x100000000;
            if (hi > lo)
                nt = range_terms(lo, hi - 1, 0xffffffffu, t, nt);
            lo = i < ns ? sorted[i] + 1 : lo;
        }
        for (size_t i = 0; i < nt; i++)
            alt_one(&out[n++], fx->arg, t[i]);
        return n;
    }
    case FX_NOT_IN:
        for (size_t i = 0; i < fx->nset; i++)
            alt_one(&out[n++], fx->arg, (struct term){0xffffffffu, fx->set[i]});
        return n;
    }
    return 0;
}

static uint32_t fixed_act(const struct fixed *fx, enum fb_sc_mode mode)
{
    if (fx->err == EPERM && mode == FB_SCM_LOG)
        return SCMP_ACT_NOTIFY;
    return SCMP_ACT_ERRNO((uint32_t)fx->err);
}

static void fixed_filter(enum fb_sc_mode mode, struct sfilter *f)
{
    fixed_ready();
    f->def = SCMP_ACT_ALLOW;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        if (fixed_nrs[i] >= 0)
            fixed_rules(&fixed[i], fixed_nrs[i], fixed_act(&fixed[i], mode), f);
    if (raw_enosys)
        for (int nr = LAST_KNOWN_NR + 1; nr <= RAW_ENOSYS_LAST; nr++)
            sf_add(f, nr, SCMP_ACT_ERRNO(ENOSYS));
}

uint32_t seccomp_fixed_decision(const struct seccomp_data *d)
{
    fixed_ready();
    uint32_t nr = (uint32_t)d->nr;
    if (d->arch != native_arch || (x32_kill && nr >= 0x40000000u && nr != 0xffffffffu))
        return SECCOMP_RET_KILL_PROCESS;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++)
        if (fixed_nrs[i] >= 0 && (uint32_t)fixed_nrs[i] == nr && fixed_matches(&fixed[i], d))
            return SECCOMP_RET_ERRNO | (uint32_t)fixed[i].err;
    if (raw_enosys && nr > LAST_KNOWN_NR && nr <= RAW_ENOSYS_LAST)
        return SECCOMP_RET_ERRNO | ENOSYS;
    return SECCOMP_RET_ALLOW;
}

/* ---- the profile's rules ---- */

/* The action of a profile rule (or default) in mode, as SCMP_ACT_*. */
static uint32_t act_of(enum fb_sc_action a, int e, enum fb_sc_mode m)
{
    switch (a) {
    case FB_SC_ALLOW:
        return SCMP_ACT_ALLOW;
    case FB_SC_ERRNO:
        if (m == FB_SCM_LOG || m == FB_SCM_LEARN)
            return SCMP_ACT_NOTIFY;
        return SCMP_ACT_ERRNO((uint32_t)e & SECCOMP_RET_DATA);
    case FB_SC_KILL:
        return m == FB_SCM_LEARN ? SCMP_ACT_NOTIFY : SCMP_ACT_KILL_PROCESS;
    case FB_SC_LOG:
        if (m == FB_SCM_LOG)
            return SCMP_ACT_NOTIFY;
        return m == FB_SCM_LEARN ? SCMP_ACT_ALLOW : SCMP_ACT_LOG;
    case FB_SC_TRACE:
        return SCMP_ACT_TRACE(0);
    }
    return SCMP_ACT_KILL_PROCESS;
}

/* --seccomp-log: the fixed EPERM rules join the profile filter as
 * notifications. For each such syscall, the profile's rules keep their
 * action only on calls the fixed rule allows (each is intersected with the
 * complement's alternatives, so they stay apart from the new rules), and
 * the calls the fixed rule denies notify. */
static void merge_fixed_notify(struct sfilter *f)
{
    static __thread struct alt ca[MAX_TERMS];
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++) {
        const struct fixed *fx = &fixed[i];
        int nr = fixed_nrs[i];
        if (nr < 0 || fx->err != EPERM)
            continue;
        bool covered = false;
        for (size_t k = 0; k < f->n; k++)
            if (f->r[k].nr == nr && !f->r[k].n && f->r[k].act == SCMP_ACT_NOTIFY)
                covered = true;
        if (covered)
            continue;
        size_t nc = fixed_complement(fx, ca);
        struct sfilter out = {.def = f->def};
        for (size_t k = 0; k < f->n; k++) {
            const struct srule *r = &f->r[k];
            if (r->nr != nr) {
                *sf_add(&out, r->nr, r->act) = *r;
                continue;
            }
            for (size_t a = 0; a < nc; a++) {
                struct srule *s = sf_add(&out, r->nr, r->act);
                *s = *r;
                bool ok = true;
                for (unsigned j = 0; j < ca[a].n && ok; j++)
                    ok = srule_and(s, ca[a].arg[j], ca[a].t[j]);
                if (!ok)
                    out.n--;
            }
        }
        fixed_rules(fx, nr, SCMP_ACT_NOTIFY, &out);
        free(f->r);
        *f = out;
    }
}

/* The fixed ENOSYS rules join the profile filter, replacing the profile's
 * rules for those syscalls: the profile filter is loaded last, and where
 * both filters answer with an errno the kernel takes the last one's, but
 * these must stay ENOSYS whatever the profile says (libc falls back to
 * clone and openat only on ENOSYS, and so do programs trying a syscall this
 * kernel may not have). The unreviewed numbers only matter when the
 * profile's default denies: otherwise the fixed filter's ENOSYS stands. */
static void merge_fixed_enosys(struct sfilter *f)
{
    bool def_denies = f->def != SCMP_ACT_ALLOW && f->def != SCMP_ACT_LOG;
    for (size_t i = 0; i < FB_ARRAY_LEN(fixed); i++) {
        int nr = fixed_nrs[i];
        if (nr < 0 || fixed[i].err != ENOSYS)
            continue;
        size_t o = 0;
        for (size_t k = 0; k < f->n; k++)
            if (f->r[k].nr != nr)
                f->r[o++] = f->r[k];
        f->n = o;
        fixed_rules(&fixed[i], nr, SCMP_ACT_ERRNO(ENOSYS), f);
    }
    if (raw_enosys && def_denies)
        for (int nr = LAST_KNOWN_NR + 1; nr <= RAW_ENOSYS_LAST; nr++)
            sf_add(f, nr, SCMP_ACT_ERRNO(ENOSYS));
}

static int profile_filter(const struct fb_policy *p, enum fb_sc_mode mode, struct sfilter *f,
                          struct fb_err *err)
{
    const struct fb_seccomp *s = &p->seccomp;
    f->def = act_of(s->default_action, s->default_errno, mode);
    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        int nr = seccomp_syscall_nr(r->name);
        if (nr == -1)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: unknown syscall \"%s\"", r->name);
        if (nr < 0)
            continue; /* not a syscall of this architecture */
        if (r->nargs > 6 || expand_rule(r, nr, act_of(r->action, r->errno_val, mode), f) < 0)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s has too many comparisons",
                           r->name);
    }
    fixed_ready();
    merge_fixed_enosys(f);
    if (mode == FB_SCM_LOG)
        merge_fixed_notify(f);
    return 0;
}

/* Does the profile filter of p in mode have notifications (a listener)? */
static bool profile_notifies(const struct fb_policy *p, enum fb_sc_mode mode)
{
    if (mode == FB_SCM_LOG)
        return true; /* the fixed EPERM rules at least */
    if (mode != FB_SCM_LEARN)
        return false;
    const struct fb_seccomp *s = &p->seccomp;
    if (act_of(s->default_action, s->default_errno, mode) == SCMP_ACT_NOTIFY)
        return true;
    for (size_t i = 0; i < s->nrules; i++)
        if (act_of(s->rules[i].action, s->rules[i].errno_val, mode) == SCMP_ACT_NOTIFY &&
            seccomp_syscall_nr(s->rules[i].name) >= 0)
            return true;
    return false;
}

static uint32_t ret_of_action(enum fb_sc_action a, int e)
{
    switch (a) {
    case FB_SC_ALLOW: return SECCOMP_RET_ALLOW;
    case FB_SC_ERRNO: return SECCOMP_RET_ERRNO | ((uint32_t)e & SECCOMP_RET_DATA);
    case FB_SC_KILL: return SECCOMP_RET_KILL_PROCESS;
    case FB_SC_LOG: return SECCOMP_RET_LOG;
    case FB_SC_TRACE: return SECCOMP_RET_TRACE;
    }
    return SECCOMP_RET_KILL_PROCESS;
}

static bool rule_matches(const struct fb_sc_rule *r, const struct seccomp_data *d)
{
    for (unsigned k = 0; k < r->nargs; k++)
        if (r->args[k].index > 5 ||
            !cond_holds(&r->args[k], seccomp_arg_is32(r->name, r->args[k].index),
                        d->args[r->args[k].index]))
            return false;
    return true;
}

uint32_t seccomp_profile_decision(const struct fb_policy *p, const struct seccomp_data *d)
{
    fixed_ready();
    uint32_t nr = (uint32_t)d->nr;
    if (d->arch != native_arch || (x32_kill && nr >= 0x40000000u && nr != 0xffffffffu))
        return SECCOMP_RET_KILL_PROCESS;
    const struct fb_seccomp *s = &p->seccomp;
    char buf[64];
    const char *name = (int32_t)nr >= 0 ? seccomp_syscall_name((int)nr, buf, sizeof buf) : NULL;
    if (name)
        for (size_t i = 0; i < s->nrules; i++)
            if (!strcmp(s->rules[i].name, name) && rule_matches(&s->rules[i], d))
                return ret_of_action(s->rules[i].action, s->rules[i].errno_val);
    return ret_of_action(s->default_action, s->default_errno);
}

/* The kernel's choice between two filters' answers: the lower action value
 * (signed) is stricter; on a tie, the later loaded filter's. */
static uint32_t stricter(uint32_t first, uint32_t last)
{
    return (int32_t)(first & SECCOMP_RET_ACTION_FULL) < (int32_t)(last & SECCOMP_RET_ACTION_FULL)
               ? first
               : last;
}

uint32_t seccomp_decision(const struct fb_policy *p, const struct seccomp_data *d)
{
    uint32_t f = seccomp_fixed_decision(d);
    if (f == (SECCOMP_RET_ERRNO | ENOSYS))
        return f; /* in both filters (merge_fixed_enosys) */
    return stricter(f, seccomp_profile_decision(p, d));
}

int seccomp_notified_errno(const struct fb_policy *p, const struct seccomp_data *d)
{
    uint32_t r = seccomp_decision(p, d);
    switch (r & SECCOMP_RET_ACTION_FULL) {
    case SECCOMP_RET_ERRNO:
        return (int)(r & SECCOMP_RET_DATA);
    case SECCOMP_RET_ALLOW:
    case SECCOMP_RET_LOG:
        return 0;
    }
    /* A "kill" rule where a fixed rule denies: with --seccomp-log the fixed
     * rule's notification is what the filters return. */
    uint32_t f = seccomp_fixed_decision(d);
    return (f & SECCOMP_RET_ACTION_FULL) == SECCOMP_RET_ERRNO ? (int)(f & SECCOMP_RET_DATA) : EPERM;
}

enum fb_sc_mode seccomp_mode(const struct fb_policy *p, bool run_mode)
{
    if (p->seccomp.learn)
        return FB_SCM_LEARN;
    if (p->seccomp.log_denied)
        return run_mode ? FB_SCM_LOG : FB_SCM_AUDIT;
    return FB_SCM_ENFORCE;
}

/* ---- libseccomp ---- */

static bool srules_same(const struct srule *a, const struct srule *b)
{
    return a->nr == b->nr && a->act == b->act && srule_within(a, b) && srule_within(b, a);
}

/* Each syscall's rules must be consistent before libseccomp sees them (it
 * would not say): an unconditional rule alone, the others disjoint. */
static int sfilter_consistent(const struct sfilter *f, struct fb_err *err)
{
    for (size_t i = 0; i < f->n; i++)
        for (size_t j = 0; j < i; j++) {
            const struct srule *a = &f->r[j], *b = &f->r[i];
            if (a->nr != b->nr || srules_same(a, b))
                continue;
            bool bad = (!a->n || !b->n) ? (a->n != b->n || a->act != b->act)
                                        : srules_overlap(a, b);
            if (bad) {
                char buf[64];
                const char *name = seccomp_syscall_name(a->nr, buf, sizeof buf);
                return fb_errf(err, FB_EXIT_SETUP,
                               "seccomp: rules for %s contradict each other (internal error)",
                               name ? name : "?");
            }
        }
    return 0;
}

static int by_nr(const void *x, const void *y)
{
    int a = *(const int *)x, b = *(const int *)y;
    return (a > b) - (a < b);
}

/* No syscall gets more than MAX_PER_SYSCALL libseccomp rules. */
static int sfilter_bounded(const struct sfilter *f, struct fb_err *err)
{
    int *nrs = fb_xcalloc(f->n ? f->n : 1, sizeof *nrs);
    size_t n = 0;
    for (size_t i = 0; i < f->n; i++)
        if (f->r[i].act != f->def)
            nrs[n++] = f->r[i].nr;
    qsort(nrs, n, sizeof *nrs, by_nr);
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t e = i + 1;
        while (e < n && nrs[e] == nrs[i])
            e++;
        if (e - i > MAX_PER_SYSCALL) {
            char buf[64];
            const char *name = seccomp_syscall_name(nrs[i], buf, sizeof buf);
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "seccomp: the rules for %s make %zu comparisons (at most %d): use fewer "
                         "ranges, or compare the argument the fixed rules check",
                         name ? name : "?", e - i, MAX_PER_SYSCALL);
        }
        i = e;
    }
    free(nrs);
    return rc;
}

/* Rules that another rule of the same action covers change nothing: leave
 * them out (less work for libseccomp, which also leaks memory on some of
 * them). */
static void sfilter_prune(struct sfilter *f)
{
    size_t o = 0;
    for (size_t i = 0; i < f->n; i++) {
        bool redundant = false;
        for (size_t j = 0; j < f->n && !redundant; j++)
            redundant = j != i && f->r[j].nr == f->r[i].nr && f->r[j].act == f->r[i].act &&
                        srule_within(&f->r[i], &f->r[j]) &&
                        (!srule_within(&f->r[j], &f->r[i]) || j < i);
        if (!redundant)
            f->r[o++] = f->r[i];
    }
    f->n = o;
}

static int sfilter_compile(struct sfilter *f, scmp_filter_ctx *out, struct fb_err *err)
{
    sfilter_prune(f);
    if (sfilter_bounded(f, err) < 0 || sfilter_consistent(f, err) < 0)
        return -1;
    scmp_filter_ctx ctx = seccomp_init(f->def);
    if (!ctx)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp cannot make a filter");
    int rc = seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_KILL_PROCESS);
    if (rc == 0)
        rc = seccomp_attr_set(ctx, SCMP_FLTATR_CTL_OPTIMIZE, 2); /* binary search on nr */
    for (size_t i = 0; i < f->n && rc == 0; i++) {
        const struct srule *r = &f->r[i];
        if (r->act == f->def)
            continue; /* libseccomp refuses it; it would change nothing */
        struct scmp_arg_cmp c[6];
        for (unsigned k = 0; k < r->n; k++)
            c[k] = r->c[k].mask == ~(uint64_t)0
                       ? (struct scmp_arg_cmp){r->c[k].arg, SCMP_CMP_EQ, r->c[k].val, 0}
                       : (struct scmp_arg_cmp){r->c[k].arg, SCMP_CMP_MASKED_EQ, r->c[k].mask,
                                               r->c[k].val};
        rc = seccomp_rule_add_exact_array(ctx, r->act, r->nr, r->n, c);
        if (rc < 0) {
            char buf[64];
            const char *name = seccomp_syscall_name(r->nr, buf, sizeof buf);
            seccomp_release(ctx);
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp refuses a rule for %s: %s",
                           name ? name : "?", strerror(-rc));
        }
    }
    if (rc < 0) {
        seccomp_release(ctx);
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp: %s", strerror(-rc));
    }
    *out = ctx;
    return 0;
}

/* Build filter (fixed, or p's profile filter) for mode into a libseccomp
 * context. */
static int build_ctx(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                     scmp_filter_ctx *ctx, struct fb_err *err)
{
    struct sfilter f = {0};
    int rc;
    if (is_fixed) {
        fixed_filter(mode == FB_SCM_LOG ? FB_SCM_LOG : FB_SCM_ENFORCE, &f);
        rc = 0;
    } else {
        rc = profile_filter(p, mode == FB_SCM_AUDIT ? FB_SCM_ENFORCE : mode, &f, err);
    }
    if (rc == 0)
        rc = sfilter_compile(&f, ctx, err);
    free(f.r);
    return rc;
}

static int new_memfd(struct fb_err *err)
{
    int fd = memfd_create("fluebox-seccomp", MFD_CLOEXEC);
    if (fd < 0)
        return fb_errno(err, FB_EXIT_SETUP, "seccomp: memfd_create");
    return fd;
}

/* libseccomp's program for ctx, written to the (empty) file fd. */
static int export_into(scmp_filter_ctx ctx, int fd, struct fb_err *err)
{
    int rc = seccomp_export_bpf(ctx, fd);
    if (rc < 0)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: exporting the filter: %s", strerror(-rc));
    off_t sz = lseek(fd, 0, SEEK_END);
    if (sz <= 0 || sz % (off_t)sizeof(struct sock_filter))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: libseccomp exported %lld bytes",
                       (long long)sz);
    if (sz > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
        return fb_errf(err, FB_EXIT_SETUP,
                       "seccomp: the rules make a filter of %lld instructions, more than the "
                       "kernel takes (%d)",
                       (long long)(sz / (off_t)sizeof(struct sock_filter)), BPF_MAXINSNS);
    return 0;
}

/* libseccomp's program for ctx, into a new memfd. */
static int export_fd(scmp_filter_ctx ctx, struct fb_err *err)
{
    int fd = new_memfd(err);
    if (fd < 0)
        return -1;
    if (export_into(ctx, fd, err) < 0) {
        close(fd);
        return -1;
    }
    return fd;
}

static const struct fb_sc_precompiled *precompiled(bool is_fixed, uint64_t key, int mode)
{
    if (!fb_sc_precompiled)
        return NULL;
    for (const struct fb_sc_precompiled *e = fb_sc_precompiled; e->prog; e++)
        if (e->fixed == is_fixed && e->mode == mode && (is_fixed || e->key == key))
            return e;
    return NULL;
}

/* The mode whose program a filter uses (audit loads enforce's with a flag;
 * the fixed filter differs only under --seccomp-log). */
static int prog_mode(bool is_fixed, enum fb_sc_mode mode)
{
    if (mode == FB_SCM_AUDIT)
        return FB_SCM_ENFORCE;
    if (is_fixed && mode != FB_SCM_LOG)
        return FB_SCM_ENFORCE;
    return mode;
}

static int program_fd(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                      uint64_t key, bool *was_pre, struct fb_err *err)
{
    const struct fb_sc_precompiled *e = precompiled(is_fixed, key, prog_mode(is_fixed, mode));
    if (e) {
        int fd = new_memfd(err);
        if (fd < 0)
            return -1;
        size_t len = (size_t)e->len * sizeof *e->prog;
        if (fb_write_all(fd, e->prog, len) < 0) {
            close(fd);
            return fb_errno(err, FB_EXIT_SETUP, "seccomp: writing the filter");
        }
        *was_pre = true;
        return fd;
    }
    scmp_filter_ctx ctx;
    if (build_ctx(p, is_fixed, mode, &ctx, err) < 0)
        return -1;
    int fd = export_fd(ctx, err);
    seccomp_release(ctx);
    return fd;
}

int seccomp_programs(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_progs *out,
                     struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    out->fd[0] = out->fd[1] = -1;
    uint64_t key = seccomp_policy_key(p);
    /* Load order: see the header comment. */
    static const bool order_fixed[2] = {true, false};
    for (size_t i = 0; i < 2; i++) {
        bool was_pre = false;
        int fd = program_fd(p, order_fixed[i], mode, key, &was_pre, err);
        if (fd < 0) {
            seccomp_programs_close(out);
            return -1;
        }
        unsigned flags = 0;
        if (mode == FB_SCM_AUDIT)
            flags |= SECCOMP_FILTER_FLAG_LOG;
        if (!order_fixed[i] && profile_notifies(p, mode))
            flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
        if (!order_fixed[i])
            out->precompiled = was_pre;
        out->fd[i] = fd;
        out->flags[i] = flags;
        out->n = i + 1;
    }
    return 0;
}

void seccomp_programs_close(struct fb_sc_progs *pr)
{
    for (size_t i = 0; i < FB_SC_NPROG; i++)
        if (pr->fd[i] >= 0) {
            close(pr->fd[i]);
            pr->fd[i] = -1;
        }
    pr->n = 0;
}

int seccomp_export_one(const struct fb_policy *p, bool is_fixed, enum fb_sc_mode mode,
                       struct sock_filter **prog, size_t *len, struct fb_err *err)
{
    scmp_filter_ctx ctx;
    if (build_ctx(p, is_fixed, mode, &ctx, err) < 0)
        return -1;
    int fd = export_fd(ctx, err);
    seccomp_release(ctx);
    if (fd < 0)
        return -1;
    off_t sz = lseek(fd, 0, SEEK_END);
    *prog = fb_xmalloc((size_t)sz);
    ssize_t r = pread(fd, *prog, (size_t)sz, 0);
    close(fd);
    if (r != sz) {
        free(*prog);
        *prog = NULL;
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: reading the exported filter");
    }
    *len = (size_t)sz / sizeof(struct sock_filter);
    return 0;
}

int seccomp_dump(const struct fb_policy *p, enum fb_sc_mode mode, int fd, struct fb_err *err)
{
    static const bool order_fixed[2] = {true, false};
    for (size_t i = 0; i < 2; i++) {
        scmp_filter_ctx ctx;
        if (build_ctx(p, order_fixed[i], mode, &ctx, err) < 0)
            return -1;
        dprintf(fd, "# filter %zu of 2 (loaded %s): the %s filter\n", i + 1,
                i ? "last" : "first", order_fixed[i] ? "fixed" : "profile");
        int rc = seccomp_export_pfc(ctx, fd);
        seccomp_release(ctx);
        if (rc < 0)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: %s", strerror(-rc));
    }
    return 0;
}

/* ---- passing and loading ---- */

static void job_init(struct fb_sc_job *job)
{
    memset(job, 0, sizeof *job);
    job->pr.fd[0] = job->pr.fd[1] = -1;
    job->helper = -1;
    job->errfd = -1;
}

/* Is this process one thread? ("Threads:" in /proc/self/status; when it
 * cannot be read, assume not.) */
static bool single_threaded(void)
{
    char buf[2048];
    if (fb_read_file("/proc/self/status", buf, sizeof buf) < 0)
        return false;
    const char *t = strstr(buf, "\nThreads:");
    return t && strtol(t + 9, NULL, 10) == 1;
}

int seccomp_job_start(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_job *job,
                      struct fb_err *err)
{
    job_init(job);
    if (!p->seccomp.enabled)
        return 0;
    job->active = true;
    uint64_t key = seccomp_policy_key(p);
    static const bool order_fixed[2] = {true, false}; /* load order: header comment */
    bool need[2] = {false, false};
    for (size_t i = 0; i < 2; i++) {
        int fd = new_memfd(err);
        if (fd < 0) {
            seccomp_job_cancel(job);
            return -1;
        }
        job->pr.fd[i] = fd;
        job->pr.n = i + 1;
        unsigned flags = 0;
        if (mode == FB_SCM_AUDIT)
            flags |= SECCOMP_FILTER_FLAG_LOG;
        if (!order_fixed[i] && profile_notifies(p, mode))
            flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
        job->pr.flags[i] = flags;
        const struct fb_sc_precompiled *e =
            precompiled(order_fixed[i], key, prog_mode(order_fixed[i], mode));
        if (!e) {
            need[i] = true;
            continue;
        }
        if (!order_fixed[i])
            job->pr.precompiled = true;
        if (fb_write_all(fd, e->prog, (size_t)e->len * sizeof *e->prog) < 0) {
            fb_errno(err, FB_EXIT_SETUP, "seccomp: writing the filter");
            seccomp_job_cancel(job);
            return -1;
        }
    }
    if (!need[0] && !need[1])
        return 0;
    /* libseccomp takes milliseconds: a helper process compiles while this
     * one creates the sandbox and the sandbox builds its root. Only from a
     * single-threaded process (`run`): forked from the server, whose other
     * threads may hold an allocator lock at that instant, the helper could
     * wait on that lock forever; there the spawn thread compiles itself. */
    int pfd[2];
    bool piped = single_threaded() && pipe2(pfd, O_CLOEXEC) == 0;
    pid_t pid = piped ? fork() : -1;
    if (pid == 0) {
        close(pfd[0]);
        struct fb_err e2 = {0};
        for (size_t i = 0; i < 2; i++) {
            scmp_filter_ctx ctx;
            if (!need[i])
                continue;
            if (build_ctx(p, order_fixed[i], mode, &ctx, &e2) < 0)
                break;
            int rc = export_into(ctx, job->pr.fd[i], &e2);
            seccomp_release(ctx);
            if (rc < 0)
                break;
        }
        if (e2.msg[0])
            fb_write_all(pfd[1], e2.msg, strlen(e2.msg));
        _exit(e2.msg[0] ? 1 : 0);
    }
    if (pid > 0) {
        close(pfd[1]);
        job->helper = pid;
        job->errfd = pfd[0];
        return 0;
    }
    /* No helper: compile here. */
    if (piped) {
        close(pfd[0]);
        close(pfd[1]);
    }
    for (size_t i = 0; i < 2; i++) {
        scmp_filter_ctx ctx;
        if (!need[i])
            continue;
        int rc = build_ctx(p, order_fixed[i], mode, &ctx, err);
        if (rc == 0) {
            rc = export_into(ctx, job->pr.fd[i], err);
            seccomp_release(ctx);
        }
        if (rc < 0) {
            seccomp_job_cancel(job);
            return -1;
        }
    }
    return 0;
}

/* Wait for the helper; its error text, if any, goes to err. */
static int job_wait(struct fb_sc_job *job, struct fb_err *err)
{
    if (job->helper < 0)
        return 0;
    char msg[sizeof err->msg];
    size_t n = 0;
    for (;;) {
        ssize_t r = read(job->errfd, msg + n, sizeof msg - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        n += (size_t)r;
        if (n == sizeof msg - 1)
            break;
    }
    msg[n] = 0;
    close(job->errfd);
    job->errfd = -1;
    int st = 0;
    while (waitpid(job->helper, &st, 0) < 0 && errno == EINTR)
        ;
    job->helper = -1;
    if (n)
        return fb_errf(err, FB_EXIT_SETUP, "%s", msg);
    if (!WIFEXITED(st) || WEXITSTATUS(st))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: generating the filters failed");
    return 0;
}

int seccomp_job_send(struct fb_sc_job *job, int ctl, struct fb_err *err)
{
    if (!job->active)
        return 0;
    if (job_wait(job, err) < 0) {
        seccomp_job_cancel(job);
        return -1;
    }
    struct fb_msg m = {.type = FB_MSG_SECCOMP_PROG, .code = (int32_t)job->pr.n};
    m.arg = (int64_t)(job->pr.flags[0] | (uint64_t)job->pr.flags[1] << 16);
    /* If this fails the child is gone: it said why (FB_MSG_ERR) before it
     * went, and the caller's next read says so better than EPIPE here. */
    ctl_send(ctl, &m, job->pr.fd, job->pr.n);
    seccomp_job_cancel(job);
    return 0;
}

void seccomp_job_close(struct fb_sc_job *job)
{
    seccomp_programs_close(&job->pr);
    if (job->errfd >= 0)
        close(job->errfd);
    job->errfd = -1;
    job->helper = -1;
}

void seccomp_job_cancel(struct fb_sc_job *job)
{
    if (job->helper > 0) {
        kill(job->helper, SIGKILL);
        while (waitpid(job->helper, NULL, 0) < 0 && errno == EINTR)
            ;
    }
    seccomp_job_close(job);
    job->active = false;
}

int seccomp_send(const struct fb_policy *p, enum fb_sc_mode mode, int ctl, struct fb_err *err)
{
    struct fb_sc_job job;
    if (seccomp_job_start(p, mode, &job, err) < 0)
        return -1;
    return seccomp_job_send(&job, ctl, err);
}

/* Load the program in memfd fd. Returns the listener fd, 0 without one, -1. */
static int load_fd(int fd, unsigned flags, struct fb_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0 || st.st_size <= 0 ||
        st.st_size % (off_t)sizeof(struct sock_filter) ||
        st.st_size > (off_t)(BPF_MAXINSNS * sizeof(struct sock_filter)))
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: a filter of %lld bytes",
                       (long long)st.st_size);
    void *ins = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (ins == MAP_FAILED)
        return fb_errno(err, FB_EXIT_SETUP, "seccomp: mapping the filter");
    struct sock_fprog fprog = {.len = (unsigned short)(st.st_size / (off_t)sizeof(struct sock_filter)),
                               .filter = ins};
    long r = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
    int e = errno;
    munmap(ins, (size_t)st.st_size);
    if (r < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "loading the seccomp filter");
    }
    return (flags & SECCOMP_FILTER_FLAG_NEW_LISTENER) ? (int)r : 0;
}

int seccomp_receive(const struct fb_policy *p, int ctl, struct fb_sc_progs *out,
                    struct fb_err *err)
{
    memset(out, 0, sizeof *out);
    if (!p->seccomp.enabled)
        return 0;
    struct fb_msg m;
    int fds[FB_CTL_MAX_FDS];
    size_t nfds = FB_CTL_MAX_FDS;
    int r = ctl_recv(ctl, &m, fds, &nfds);
    if (r <= 0 || m.type != FB_MSG_SECCOMP_PROG || m.code < 1 || m.code > FB_SC_NPROG ||
        nfds != (size_t)m.code) {
        for (size_t i = 0; r > 0 && i < nfds; i++)
            close(fds[i]);
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: no filter from the supervisor");
    }
    out->n = nfds;
    for (size_t i = 0; i < nfds; i++) {
        out->fd[i] = fds[i];
        out->flags[i] = (unsigned)((uint64_t)m.arg >> (16 * i)) & 0xffffu;
    }
    return 0;
}

int seccomp_load_progs(const struct fb_sc_progs *pr, int ctl, struct fb_err *err)
{
    int rc = 0;
    for (size_t i = 0; i < pr->n; i++) {
        int lfd = rc < 0 ? -1 : load_fd(pr->fd[i], pr->flags[i], err);
        if (lfd < 0) {
            rc = -1;
            continue;
        }
        if (lfd == 0)
            continue;
        /* The listener goes to the supervisor. Until it has it, a notifying
         * syscall here would wait forever: the profile allows sendmsg and
         * close (seccomp_validate checks what init needs). */
        struct fb_msg lm = {.type = FB_MSG_SECCOMP_FD};
        int s = ctl_send(ctl, &lm, &lfd, 1);
        int e = errno;
        close(lfd);
        if (s < 0) {
            errno = e;
            rc = fb_errno(err, FB_EXIT_SETUP, "passing the seccomp listener");
        }
    }
    return rc;
}

int seccomp_receive_and_load(const struct fb_policy *p, int ctl, struct fb_err *err)
{
    struct fb_sc_progs pr;
    if (seccomp_receive(p, ctl, &pr, err) < 0)
        return -1;
    int rc = seccomp_load_progs(&pr, ctl, err);
    for (size_t i = 0; i < pr.n; i++)
        close(pr.fd[i]);
    return rc;
}

/* ---- checks ---- */

unsigned seccomp_arg_classes(const struct fb_policy *p, int nr)
{
    unsigned m = 0;
    char buf[64];
    const char *name = seccomp_syscall_name(nr, buf, sizeof buf);
    if (!name)
        return 0;
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        const struct fb_sc_rule *r = &p->seccomp.rules[i];
        if (strcmp(r->name, name))
            continue;
        for (unsigned k = 0; k < r->nargs; k++)
            m |= 1u << r->args[k].index;
    }
    return m;
}

static void action_name(enum fb_sc_action a, int e, char *buf, size_t cap)
{
    const char *en;
    switch (a) {
    case FB_SC_ALLOW: snprintf(buf, cap, "allow"); return;
    case FB_SC_KILL: snprintf(buf, cap, "kill"); return;
    case FB_SC_LOG: snprintf(buf, cap, "log"); return;
    case FB_SC_TRACE: snprintf(buf, cap, "trace"); return;
    case FB_SC_ERRNO:
        en = strerrorname_np(e);
        if (en)
            snprintf(buf, cap, "errno(%s)", en);
        else
            snprintf(buf, cap, "errno(%d)", e);
        return;
    }
    snprintf(buf, cap, "?");
}

static bool same_action(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    return a->action == b->action && (a->action != FB_SC_ERRNO || a->errno_val == b->errno_val);
}

/* a and b (expanded to libseccomp rules fa, fb) overlap; *ex gets one call
 * both match. */
static bool overlap_example(const struct sfilter *fa, const struct sfilter *fb, uint64_t ex[6])
{
    for (size_t i = 0; i < fa->n; i++)
        for (size_t j = 0; j < fb->n; j++)
            if (srules_overlap(&fa->r[i], &fb->r[j])) {
                memset(ex, 0, 6 * sizeof *ex);
                for (unsigned k = 0; k < fa->r[i].n; k++)
                    ex[fa->r[i].c[k].arg] |= fa->r[i].c[k].val;
                for (unsigned k = 0; k < fb->r[j].n; k++)
                    ex[fb->r[j].c[k].arg] |= fb->r[j].c[k].val;
                return true;
            }
    return false;
}

bool seccomp_rules_overlap(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    struct sfilter fa = {0}, fb = {0};
    uint64_t ex[6];
    bool r = expand_rule(a, 0, 0, &fa) >= 0 && expand_rule(b, 0, 0, &fb) >= 0 &&
             overlap_example(&fa, &fb, ex);
    free(fa.r);
    free(fb.r);
    return r;
}

static bool same_rule(const struct fb_sc_rule *a, const struct fb_sc_rule *b)
{
    if (!same_action(a, b) || a->nargs != b->nargs)
        return false;
    for (unsigned k = 0; k < a->nargs; k++)
        if (a->args[k].index != b->args[k].index || a->args[k].op != b->args[k].op ||
            a->args[k].value != b->args[k].value ||
            (a->args[k].op == FB_SC_MASKED_EQ && a->args[k].mask != b->args[k].mask))
            return false;
    return true;
}

static int by_name(const void *x, const void *y, void *arg)
{
    const struct fb_sc_rule *r = arg;
    size_t i = *(const size_t *)x, j = *(const size_t *)y;
    int c = strcmp(r[i].name, r[j].name);
    return c ? c : (i > j) - (i < j);
}

/* The call, up to the last argument either rule compares. */
static void call_example(const struct fb_sc_rule *a, const struct fb_sc_rule *b,
                         const uint64_t ex[6], char *call, size_t cap)
{
    unsigned last = 0;
    for (unsigned k = 0; k < a->nargs; k++)
        last = a->args[k].index > last ? a->args[k].index : last;
    for (unsigned k = 0; k < b->nargs; k++)
        last = b->args[k].index > last ? b->args[k].index : last;
    size_t at = 0;
    call[0] = 0;
    for (unsigned k = 0; k <= last && at < cap; k++)
        at += (size_t)snprintf(call + at, cap - at, ex[k] < 256 ? "%s%llu" : "%s%#llx",
                               k ? ", " : "", (unsigned long long)ex[k]);
}

int seccomp_check_rules(const struct fb_sc_rule *r, size_t n, const size_t *idx,
                        struct fb_err *err)
{
    static __thread struct term t[6][MAX_TERMS];
    char where[48], other[32], an[32], bn[32], call[160];
#define WHERE(i)                                                                          \
    (idx ? (snprintf(where, sizeof where, "seccomp.rules[%zu]: ", idx[i]), where) : "seccomp: ")
#define OTHER(j)                                                                          \
    (idx ? (snprintf(other, sizeof other, "rules[%zu]", idx[j]), other)                   \
         : (snprintf(other, sizeof other, "another rule"), other))
    size_t *cost = fb_xcalloc(n ? n : 1, sizeof *cost);
    for (size_t i = 0; i < n; i++) {
        size_t nt[6];
        cost[i] = rule_terms(&r[i], t, nt);
        if (cost[i] > MAX_EXPAND) {
            free(cost);
            return fb_errf(err, FB_EXIT_SETUP,
                           "%s\"%s\": the conditions make more than %d comparisons (use "
                           "at most one range or ne per rule)",
                           WHERE(i), r[i].name, MAX_EXPAND);
        }
    }
    /* Rules grouped by syscall, in their order within each group. */
    size_t *o = fb_xcalloc(n ? n : 1, sizeof *o);
    struct sfilter *ex = fb_xcalloc(n ? n : 1, sizeof *ex); /* each rule's comparisons */
    for (size_t i = 0; i < n; i++)
        o[i] = i;
    qsort_r(o, n, sizeof *o, by_name, (void *)r);
    int rc = 0;
    for (size_t g = 0; g < n && rc == 0;) {
        size_t e = g + 1;
        while (e < n && !strcmp(r[o[e]].name, r[o[g]].name))
            e++;
        size_t sum = 0;
        for (size_t x = g; x < e; x++)
            sum += cost[o[x]];
        if (sum > MAX_PER_SYSCALL) {
            rc = fb_errf(err, FB_EXIT_SETUP,
                         "%s\"%s\": the rules for it make %zu comparisons (at most %d)",
                         WHERE(o[e - 1]), r[o[g]].name, sum, MAX_PER_SYSCALL);
            break;
        }
        for (size_t x = g; x < e && e - g > 1; x++)
            expand_rule(&r[o[x]], 0, 0, &ex[o[x]]);
        for (size_t x = g + 1; x < e && rc == 0; x++)
            for (size_t y = g; y < x && rc == 0; y++) {
                const struct fb_sc_rule *a = &r[o[y]], *b = &r[o[x]]; /* a first */
                size_t ia = o[y], ib = o[x];
                uint64_t exv[6];
                if (same_rule(a, b))
                    continue; /* the same rule twice changes nothing */
                if (!a->nargs && !b->nargs) {
                    rc = fb_errf(err, FB_EXIT_SETUP,
                                 "%s\"%s\" already has an unconditional rule with another "
                                 "action (%s)",
                                 WHERE(ib), b->name, OTHER(ia));
                } else if (!a->nargs) {
                    rc = fb_errf(err, FB_EXIT_SETUP,
                                 "%s\"%s\" has an unconditional rule (%s); conditional rules for "
                                 "it would be ignored",
                                 WHERE(ib), b->name, OTHER(ia));
                } else if (!b->nargs) {
                    rc = fb_errf(err, FB_EXIT_SETUP,
                                 "%s\"%s\" has conditional rules (%s); an unconditional rule "
                                 "for it would replace them",
                                 WHERE(ib), b->name, OTHER(ia));
                } else if (overlap_example(&ex[ia], &ex[ib], exv)) {
                    call_example(a, b, exv, call, sizeof call);
                    if (same_action(a, b)) {
                        rc = fb_errf(err, FB_EXIT_SETUP,
                                     "%s\"%s\": this rule and %s both match %s(%s); the rules "
                                     "of a syscall must exclude each other",
                                     WHERE(ib), b->name, OTHER(ia), b->name, call);
                    } else {
                        action_name(b->action, b->errno_val, bn, sizeof bn);
                        action_name(a->action, a->errno_val, an, sizeof an);
                        rc = fb_errf(err, FB_EXIT_SETUP,
                                     "%s\"%s\": this rule (%s) and %s (%s) both match %s(%s); "
                                     "the rules of a syscall must exclude each other",
                                     WHERE(ib), b->name, bn, OTHER(ia), an, b->name, call);
                    }
                }
            }
        g = e;
    }
#undef WHERE
#undef OTHER
    for (size_t i = 0; i < n; i++)
        free(ex[i].r);
    free(ex);
    free(o);
    free(cost);
    return rc;
}

/* What fluebox's init does under the filters before and while it runs the
 * command (init.c): read its signalfd, fork (clone without namespace
 * flags), wait, forward signals, talk to the supervisor, and in the child
 * reset signals, setpgid, chdir, close_range and execve. A profile that
 * denies one of these could never start anything. */
static const struct {
    const char *name;
    uint64_t a0;
} init_needs[] = {
    {"read", 0},          {"write", 0},        {"close", 0},           {"sendmsg", 0},
    {"recvmsg", 0},       {"wait4", 0},        {"kill", 0},            {"exit_group", 0},
    {"rt_sigprocmask", 0}, {"rt_sigaction", 0}, {"setpgid", 0},         {"chdir", 0},
    {"close_range", 0},   {"execve", 0},       {"brk", 0},             {"mmap", 0},
    {"munmap", 0},        {"clone", SIGCHLD | CLONE_CHILD_SETTID | CLONE_CHILD_CLEARTID},
};

int seccomp_validate(const struct fb_policy *p, struct fb_err *err)
{
    for (size_t i = 0; i < p->seccomp.nrules; i++) {
        const struct fb_sc_rule *r = &p->seccomp.rules[i];
        if (seccomp_syscall_nr(r->name) == -1)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp.rules[%zu].name: unknown syscall \"%s\"",
                           i, r->name);
        if (r->nargs > 6)
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s has %u conditions",
                           r->name, r->nargs);
        for (unsigned k = 0; k < r->nargs; k++)
            if (r->args[k].index > 5 || (unsigned)r->args[k].op > FB_SC_MASKED_EQ)
                return fb_errf(err, FB_EXIT_SETUP, "seccomp: a rule for %s: bad condition %u",
                               r->name, k);
    }
    /* The rules' consistency is checked file by file while loading
     * (profile_rules.c): every syscall's rules come from one file. */
    fixed_ready();
    for (size_t i = 0; i < FB_ARRAY_LEN(init_needs); i++) {
        int nr = seccomp_syscall_nr(init_needs[i].name);
        if (nr < 0)
            continue;
        struct seccomp_data d = {.nr = nr, .arch = native_arch};
        d.args[0] = init_needs[i].a0;
        uint32_t act = seccomp_decision(p, &d) & SECCOMP_RET_ACTION_FULL;
        if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_LOG)
            return fb_errf(err, FB_EXIT_SETUP,
                           "seccomp: the profile denies %s, which fluebox's init needs to run "
                           "the command",
                           init_needs[i].name);
    }
    return 0;
}

static bool same_prog(const struct sock_filter *a, size_t na, const struct sock_filter *b,
                      size_t nb)
{
    return na == nb && !memcmp(a, b, na * sizeof *a);
}

int seccomp_check_compile(const struct fb_policy *p, struct fb_err *err)
{
    if (seccomp_validate(p, err) < 0 ||
        seccomp_check_rules(p->seccomp.rules, p->seccomp.nrules, NULL, err) < 0)
        return -1;
    uint64_t key = seccomp_policy_key(p);
    for (int m = 0; m < FB_SCM_COUNT; m++)
        for (int f = 0; f < 2; f++) {
            struct sock_filter *prog;
            size_t len;
            if (seccomp_export_one(p, f, (enum fb_sc_mode)m, &prog, &len, err) < 0)
                return -1;
            const struct fb_sc_precompiled *e = precompiled(f, key, prog_mode(f, m));
            bool differs = e && !same_prog(prog, len, e->prog, e->len);
            free(prog);
            if (differs)
                return fb_errf(err, FB_EXIT_SETUP,
                               "seccomp: the %s filter built into fluebox differs from what "
                               "libseccomp makes of the rules now (rebuild fluebox)",
                               f ? "fixed" : "profile");
        }
    return 0;
}

/* ---- the key of the build-time table ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
    const unsigned char *s = p;
    for (size_t i = 0; i < n; i++)
        h = (h ^ s[i]) * 0x100000001b3ull;
    return h;
}

uint64_t seccomp_policy_key(const struct fb_policy *p)
{
    const struct fb_seccomp *s = &p->seccomp;
    uint64_t h = 0xcbf29ce484222325ull;
    int32_t hdr[3] = {s->enabled, (int32_t)s->default_action,
                      s->default_action == FB_SC_ERRNO ? s->default_errno : 0};
    h = fnv(h, hdr, sizeof hdr);
    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        h = fnv(h, r->name, strlen(r->name) + 1);
        int32_t rh[3] = {(int32_t)r->action, r->action == FB_SC_ERRNO ? r->errno_val : 0,
                         (int32_t)r->nargs};
        h = fnv(h, rh, sizeof rh);
        for (unsigned k = 0; k < r->nargs && k < 6; k++) {
            uint64_t a[4] = {r->args[k].index, (uint64_t)r->args[k].op, r->args[k].value,
                             r->args[k].op == FB_SC_MASKED_EQ ? r->args[k].mask : 0};
            h = fnv(h, a, sizeof a);
        }
    }
    return h;
}
