/* seccomp_names.c — the names a profile uses (seccomp.h): syscall names
 * and numbers (libseccomp's, and a table of syscalls newer than it),
 * constants for argument values (parsed, and printed where they belong to
 * the argument) and which arguments the kernel reads as 32 bits. */
#include "seccomp_int.h"

#include <linux/fs.h>
#include <linux/netlink.h>
#include <netinet/in.h>
#include <string.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>

#ifndef AF_MCTP
#define AF_MCTP 45
#endif

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

bool newer_table_applies(void)
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
