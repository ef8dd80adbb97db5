/* seccomp.c — compiles policy->seccomp into a BPF filter and loads it.
 *
 * The profile's rules are a first-match list (seccomp.h). libseccomp cannot
 * express that: in its model an unconditional rule for a syscall silently
 * absorbs every conditional rule for it, two comparisons on one argument are
 * refused, and a rule whose action equals the default is refused — so
 * "personality: allow 0 and 0xffffffff, deny the rest" cannot be written for a
 * default-allow filter. So the filter is generated here, from one flattened
 * rule list that seccomp_eval() also interprets directly; the tests check on
 * random input that the two always agree (tests/fuzz). libseccomp provides
 * the syscall name table and the notification helpers (scnotify.c).
 *
 * Fixed rules, before the profile's (no profile can change them):
 *   - clone3 -> ENOSYS (libc falls back to clone, whose flags a filter sees);
 *   - clone/unshare with any namespace flag -> EPERM;
 *   - ioctl TIOCSTI, TIOCLINUX -> EPERM (terminal injection);
 *   - chmod/fchmod/fchmodat(2) with S_ISUID or S_ISGID, and file creation
 *     (open/openat with O_CREAT or O_TMPFILE, creat, mknod) with either bit in
 *     the mode -> EPERM: no set-id file can be left in a host directory;
 *   - openat2 -> ENOSYS (its mode is in memory, out of the filter's sight).
 *
 * Layout of the program:
 *   arch != native                          -> KILL_PROCESS
 *   x86_64: nr has the x32 bit (not -1)     -> KILL_PROCESS
 *   nr > last syscall this build knows      -> ERRNO(ENOSYS)
 *   binary search on nr over the syscalls that have rules:
 *     one unconditional rule                -> its action, inline
 *     otherwise a block: each rule's conditions in order, the first that
 *     holds returns its action; then the default
 *   anything else                           -> default
 *
 * Arguments that the kernel declares int or unsigned int are compared on
 * their low 32 bits, as the kernel sees them: ioctl(fd, TIOCSTI | 1UL << 32)
 * is TIOCSTI to the kernel and must be to the filter too. */
#include "seccomp.h"

#include "ctl.h"

#include <linux/audit.h>
#include <linux/sched.h>
#include <linux/fs.h>
#include <seccomp.h>
#include <signal.h>
#include <fcntl.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <linux/netlink.h>

#ifndef TIOCLINUX
#define TIOCLINUX 0x541C
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

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
#define ARG_HI(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i) + 4))
#else
#define ARG_LO(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i) + 4))
#define ARG_HI(i) ((uint32_t)(offsetof(struct seccomp_data, args) + 8 * (i)))
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
    C(AF_UNSPEC, ""),
    /* Protocols depend on the family: parsed, never printed. */
    C(NETLINK_ROUTE, ""), C(NETLINK_SOCK_DIAG, ""), C(NETLINK_AUDIT, ""),
    C(NETLINK_KOBJECT_UEVENT, ""), C(NETLINK_GENERIC, ""), C(NETLINK_NETFILTER, ""),
    C(NETLINK_XFRM, ""), C(NETLINK_SELINUX, ""), C(NETLINK_CONNECTOR, ""),
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

/* ---- the flattened rule list ---- */

struct ccond {
    uint8_t idx;
    uint8_t op; /* enum fb_sc_op */
    bool is32;
    uint64_t v, mask;
};

struct crule {
    int nr;
    uint32_t ret;
    unsigned ncond;
    struct ccond c[6];
};

struct fb_sc_prog {
    uint32_t arch;
    bool x32;          /* x86_64: kill the x32 numbers */
    int last_known;    /* above: ENOSYS; < 0 = no such cut */
    uint32_t def;
    bool notifies;
    struct crule *r;
    size_t n, cap;
};

static struct crule *prog_add(struct fb_sc_prog *g, int nr, uint32_t ret)
{
    if (g->n == g->cap) {
        g->cap = g->cap ? 2 * g->cap : 64;
        g->r = fb_xrealloc(g->r, g->cap * sizeof *g->r);
    }
    struct crule *r = &g->r[g->n++];
    memset(r, 0, sizeof *r);
    r->nr = nr;
    r->ret = ret;
    if (ret == SECCOMP_RET_USER_NOTIF)
        g->notifies = true;
    return r;
}

static void cond_add(struct crule *r, unsigned idx, enum fb_sc_op op, uint64_t v, uint64_t mask,
                     bool is32)
{
    struct ccond *c = &r->c[r->ncond++];
    c->idx = (uint8_t)idx;
    c->op = (uint8_t)op;
    c->is32 = is32;
    c->v = is32 ? (v & 0xffffffffu) : v;
    c->mask = is32 ? (mask & 0xffffffffu) : mask;
}

static uint32_t ret_of(enum fb_sc_action a, int e, enum fb_sc_mode m, bool fixed)
{
    switch (a) {
    case FB_SC_ALLOW:
        return SECCOMP_RET_ALLOW;
    case FB_SC_ERRNO:
        if (m == FB_SCM_LOG || (m == FB_SCM_LEARN && !fixed))
            return SECCOMP_RET_USER_NOTIF;
        return SECCOMP_RET_ERRNO | ((uint32_t)e & SECCOMP_RET_DATA);
    case FB_SC_KILL:
        return m == FB_SCM_LEARN ? SECCOMP_RET_USER_NOTIF : SECCOMP_RET_KILL_PROCESS;
    case FB_SC_LOG:
        if (m == FB_SCM_LOG)
            return SECCOMP_RET_USER_NOTIF;
        return m == FB_SCM_LEARN ? SECCOMP_RET_ALLOW : SECCOMP_RET_LOG;
    case FB_SC_TRACE:
        return SECCOMP_RET_TRACE;
    }
    return SECCOMP_RET_KILL_PROCESS;
}

void seccomp_prog_free(struct fb_sc_prog *g)
{
    if (!g)
        return;
    free(g->r);
    free(g);
}

bool seccomp_prog_notifies(const struct fb_sc_prog *g) { return g->notifies; }

/* The value as the kernel sees a 32-bit argument: a negative 32-bit number
 * written sign-extended (-1) is accepted too. */
static bool fits32(uint64_t v)
{
    return (v >> 32) == 0 || ((v >> 32) == 0xffffffffu && (v & 0x80000000u));
}

/* No set-user-ID or set-group-ID file can be made: the workspace and --bind
 * directories are host directories, and a set-id file left there works on
 * the host (setuid root, when root runs fluebox on a root-owned workspace
 * through an idmapped mount). chmod and friends with either bit, and file
 * creation (open/openat with O_CREAT or O_TMPFILE, creat, mknod) with either
 * bit in the mode fail with EPERM. */
static void add_setid_rules(struct fb_sc_prog *g, uint32_t eperm)
{
    static const struct {
        const char *name;
        int mode_arg;  /* index of the mode argument */
        int flags_arg; /* index of open flags, -1 = always creates */
    } calls[] = {
        {"chmod", 1, -1},  {"fchmod", 1, -1}, {"fchmodat", 2, -1}, {"fchmodat2", 2, -1},
        {"creat", 1, -1},  {"mknod", 1, -1},  {"mknodat", 2, -1},  {"open", 2, 1},
        {"openat", 3, 2},
    };
    static const uint64_t bits[] = {S_ISUID, S_ISGID};
    static const uint64_t creating[] = {O_CREAT, O_TMPFILE & ~O_DIRECTORY};
    for (size_t i = 0; i < FB_ARRAY_LEN(calls); i++) {
        int nr = seccomp_syscall_nr(calls[i].name);
        if (nr < 0)
            continue;
        for (size_t b = 0; b < FB_ARRAY_LEN(bits); b++) {
            if (calls[i].flags_arg < 0) {
                cond_add(prog_add(g, nr, eperm), (unsigned)calls[i].mode_arg, FB_SC_MASKED_EQ,
                         bits[b], bits[b], true);
                continue;
            }
            for (size_t c = 0; c < FB_ARRAY_LEN(creating); c++) {
                struct crule *r = prog_add(g, nr, eperm);
                cond_add(r, (unsigned)calls[i].flags_arg, FB_SC_MASKED_EQ, creating[c],
                         creating[c], true);
                cond_add(r, (unsigned)calls[i].mode_arg, FB_SC_MASKED_EQ, bits[b], bits[b], true);
            }
        }
    }
}

int seccomp_compile(const struct fb_policy *p, enum fb_sc_mode mode, struct fb_sc_prog **out,
                    struct fb_err *err)
{
    const struct fb_seccomp *s = &p->seccomp;
    struct fb_sc_prog *g = fb_xcalloc(1, sizeof *g);
    g->arch = seccomp_arch_native();
    g->x32 = g->arch == SCMP_ARCH_X86_64;
    g->last_known = newer_table_applies() ? LAST_KNOWN_NR : -1;
    g->def = ret_of(s->default_action, s->default_errno, mode, false);
    if (g->def == SECCOMP_RET_USER_NOTIF)
        g->notifies = true;

    /* Fixed rules. */
    int nr = seccomp_syscall_nr("clone3");
    if (nr >= 0)
        prog_add(g, nr, SECCOMP_RET_ERRNO | ENOSYS);
    uint32_t eperm = ret_of(FB_SC_ERRNO, EPERM, mode, true);
    static const char *const nsc[] = {"clone", "unshare"};
    for (size_t c = 0; c < FB_ARRAY_LEN(nsc); c++) {
        nr = seccomp_syscall_nr(nsc[c]);
        if (nr < 0)
            continue;
        /* One rule per flag: "any of these bits set". */
        static const uint64_t bits[] = {CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC,
                                        CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET,
                                        CLONE_NEWCGROUP, CLONE_NEWTIME};
        for (size_t b = 0; b < FB_ARRAY_LEN(bits); b++)
            cond_add(prog_add(g, nr, eperm), 0, FB_SC_MASKED_EQ, bits[b], bits[b], false);
    }
    nr = seccomp_syscall_nr("ioctl");
    if (nr >= 0) {
        cond_add(prog_add(g, nr, eperm), 1, FB_SC_EQ, TIOCSTI, 0, true);
        cond_add(prog_add(g, nr, eperm), 1, FB_SC_EQ, TIOCLINUX, 0, true);
    }
    add_setid_rules(g, eperm);
    /* openat2 passes its mode in memory, out of a filter's sight: ENOSYS,
     * and callers fall back to openat (which the rules above can see). */
    nr = seccomp_syscall_nr("openat2");
    if (nr >= 0)
        prog_add(g, nr, SECCOMP_RET_ERRNO | ENOSYS);

    for (size_t i = 0; i < s->nrules; i++) {
        const struct fb_sc_rule *r = &s->rules[i];
        nr = seccomp_syscall_nr(r->name);
        if (nr == -1) {
            seccomp_prog_free(g);
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: unknown syscall \"%s\"", r->name);
        }
        if (nr < 0)
            continue; /* not a syscall of this architecture */
        if (r->nargs > 6) {
            seccomp_prog_free(g);
            return fb_errf(err, FB_EXIT_SETUP, "seccomp: rule for %s: too many conditions",
                           r->name);
        }
        struct crule *c = prog_add(g, nr, ret_of(r->action, r->errno_val, mode, false));
        for (unsigned k = 0; k < r->nargs; k++) {
            const struct fb_sc_arg *a = &r->args[k];
            bool is32 = seccomp_arg_is32(r->name, a->index);
            if (a->index > 5 || (unsigned)a->op > FB_SC_MASKED_EQ ||
                (is32 && (!fits32(a->value) || (a->op == FB_SC_MASKED_EQ && !fits32(a->mask))))) {
                seccomp_prog_free(g);
                return fb_errf(err, FB_EXIT_SETUP, "seccomp: rule for %s: bad condition %u",
                               r->name, k);
            }
            cond_add(c, a->index, a->op, a->value, a->mask, is32);
        }
    }
    *out = g;
    return 0;
}

/* ---- reference semantics ---- */

static bool cond_holds(const struct ccond *c, const struct seccomp_data *d)
{
    uint64_t x = d->args[c->idx];
    if (c->is32)
        x &= 0xffffffffu;
    switch ((enum fb_sc_op)c->op) {
    case FB_SC_EQ: return x == c->v;
    case FB_SC_NE: return x != c->v;
    case FB_SC_LT: return x < c->v;
    case FB_SC_LE: return x <= c->v;
    case FB_SC_GT: return x > c->v;
    case FB_SC_GE: return x >= c->v;
    case FB_SC_MASKED_EQ: return (x & c->mask) == c->v;
    }
    return false;
}

uint32_t seccomp_eval(const struct fb_sc_prog *g, const struct seccomp_data *d)
{
    if (d->arch != g->arch)
        return SECCOMP_RET_KILL_PROCESS;
    uint32_t nr = (uint32_t)d->nr;
    if (g->x32 && nr >= 0x40000000u && nr != 0xffffffffu)
        return SECCOMP_RET_KILL_PROCESS;
    if (g->last_known >= 0 && nr > (uint32_t)g->last_known)
        return SECCOMP_RET_ERRNO | ENOSYS;
    for (size_t i = 0; i < g->n; i++) {
        const struct crule *r = &g->r[i];
        if ((uint32_t)r->nr != nr)
            continue;
        bool all = true;
        for (unsigned k = 0; k < r->ncond && all; k++)
            all = cond_holds(&r->c[k], d);
        if (all)
            return r->ret;
    }
    return g->def;
}

/* ---- BPF generation ---- */

struct as {
    struct sock_filter *ins;
    size_t n, cap;
    bool overflow; /* a conditional jump did not fit in 8 bits */
};

static size_t emit(struct as *a, uint16_t code, uint8_t jt, uint8_t jf, uint32_t k)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? 2 * a->cap : 256;
        a->ins = fb_xrealloc(a->ins, a->cap * sizeof *a->ins);
    }
    a->ins[a->n] = (struct sock_filter){code, jt, jf, k};
    return a->n++;
}

#define LD_ABS(off) emit(a, BPF_LD | BPF_W | BPF_ABS, 0, 0, (off))
#define RET(k) emit(a, BPF_RET | BPF_K, 0, 0, (k))

/* Point jump field (jt or jf) of instruction at to the instruction target. */
static void patch(struct as *a, size_t at, bool jt, size_t target)
{
    size_t d = target - at - 1;
    if (target <= at || d > 255) {
        a->overflow = true;
        return;
    }
    if (jt)
        a->ins[at].jt = (uint8_t)d;
    else
        a->ins[at].jf = (uint8_t)d;
}

/* Pending jumps to "the condition failed" (the next rule) and "the condition
 * held" (the next condition). */
struct fixups {
    size_t at[16];
    bool jt[16];
    size_t n;
};

static void fix_add(struct fixups *f, size_t at, bool jt)
{
    f->at[f->n] = at;
    f->jt[f->n] = jt;
    f->n++;
}

static void fix_resolve(struct as *a, struct fixups *f, size_t target)
{
    for (size_t i = 0; i < f->n; i++)
        patch(a, f->at[i], f->jt[i], target);
    f->n = 0;
}

/* Emit one condition: falls through when it holds, jumps to a "fail" fixup
 * otherwise. */
static void emit_cond(struct as *a, const struct ccond *c, struct fixups *fail)
{
    uint32_t vlo = (uint32_t)c->v, vhi = (uint32_t)(c->v >> 32);
    uint32_t mlo = (uint32_t)c->mask, mhi = (uint32_t)(c->mask >> 32);
    struct fixups ok = {.n = 0};
    size_t j;
    if (c->is32) {
        LD_ABS(ARG_LO(c->idx));
        switch ((enum fb_sc_op)c->op) {
        case FB_SC_EQ: fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), false); break;
        case FB_SC_NE: fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), true); break;
        case FB_SC_GT: fix_add(fail, emit(a, BPF_JMP | BPF_JGT | BPF_K, 0, 0, vlo), false); break;
        case FB_SC_GE: fix_add(fail, emit(a, BPF_JMP | BPF_JGE | BPF_K, 0, 0, vlo), false); break;
        case FB_SC_LT: fix_add(fail, emit(a, BPF_JMP | BPF_JGE | BPF_K, 0, 0, vlo), true); break;
        case FB_SC_LE: fix_add(fail, emit(a, BPF_JMP | BPF_JGT | BPF_K, 0, 0, vlo), true); break;
        case FB_SC_MASKED_EQ:
            emit(a, BPF_ALU | BPF_AND | BPF_K, 0, 0, mlo);
            fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), false);
            break;
        }
        return;
    }
    switch ((enum fb_sc_op)c->op) {
    case FB_SC_EQ:
        LD_ABS(ARG_HI(c->idx));
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vhi), false);
        LD_ABS(ARG_LO(c->idx));
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), false);
        break;
    case FB_SC_NE:
        LD_ABS(ARG_HI(c->idx));
        fix_add(&ok, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vhi), false);
        LD_ABS(ARG_LO(c->idx));
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), true);
        break;
    case FB_SC_GT:
    case FB_SC_GE:
        LD_ABS(ARG_HI(c->idx));
        fix_add(&ok, emit(a, BPF_JMP | BPF_JGT | BPF_K, 0, 0, vhi), true);
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vhi), false);
        LD_ABS(ARG_LO(c->idx));
        j = emit(a, BPF_JMP | (c->op == FB_SC_GT ? BPF_JGT : BPF_JGE) | BPF_K, 0, 0, vlo);
        fix_add(fail, j, false);
        break;
    case FB_SC_LT:
    case FB_SC_LE:
        LD_ABS(ARG_HI(c->idx));
        fix_add(fail, emit(a, BPF_JMP | BPF_JGT | BPF_K, 0, 0, vhi), true);
        fix_add(&ok, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vhi), false);
        LD_ABS(ARG_LO(c->idx));
        j = emit(a, BPF_JMP | (c->op == FB_SC_LT ? BPF_JGE : BPF_JGT) | BPF_K, 0, 0, vlo);
        fix_add(fail, j, true);
        break;
    case FB_SC_MASKED_EQ:
        LD_ABS(ARG_HI(c->idx));
        emit(a, BPF_ALU | BPF_AND | BPF_K, 0, 0, mhi);
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vhi), false);
        LD_ABS(ARG_LO(c->idx));
        emit(a, BPF_ALU | BPF_AND | BPF_K, 0, 0, mlo);
        fix_add(fail, emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 0, vlo), false);
        break;
    }
    fix_resolve(a, &ok, a->n);
}

/* One syscall's entry in the dispatch: its rules (indices into g->r). */
struct sysent {
    uint32_t nr;
    size_t first; /* index of its first rule in g->r */
    bool simple;  /* a single unconditional rule decides: inline RET */
    size_t ja;    /* the dispatch's "ja block" instruction, to patch */
};

static int cmp_sysent(const void *x, const void *y)
{
    const struct sysent *a = x, *b = y;
    return a->nr < b->nr ? -1 : a->nr > b->nr;
}

static void emit_tree(struct as *a, const struct fb_sc_prog *g, struct sysent *e, size_t lo,
                      size_t hi)
{
    if (hi - lo <= 4) {
        for (size_t i = lo; i < hi; i++) {
            emit(a, BPF_JMP | BPF_JEQ | BPF_K, 0, 1, e[i].nr);
            if (e[i].simple)
                RET(g->r[e[i].first].ret);
            else
                e[i].ja = emit(a, BPF_JMP | BPF_JA, 0, 0, 0);
        }
        RET(g->def);
        return;
    }
    size_t mid = lo + (hi - lo) / 2;
    emit(a, BPF_JMP | BPF_JGE | BPF_K, 0, 1, e[mid].nr);
    size_t ja = emit(a, BPF_JMP | BPF_JA, 0, 0, 0);
    emit_tree(a, g, e, lo, mid);
    a->ins[ja].k = (uint32_t)(a->n - ja - 1);
    emit_tree(a, g, e, mid, hi);
}

int seccomp_bpf(const struct fb_sc_prog *g, struct sock_filter **insns, size_t *n,
                struct fb_err *err)
{
    /* The syscalls that have rules, in order of first appearance. */
    struct sysent *e = fb_xcalloc(g->n ? g->n : 1, sizeof *e);
    size_t ne = 0;
    for (size_t i = 0; i < g->n; i++) {
        size_t k;
        for (k = 0; k < ne; k++)
            if (e[k].nr == (uint32_t)g->r[i].nr)
                break;
        if (k < ne) {
            e[k].simple = false;
            continue;
        }
        e[ne] = (struct sysent){(uint32_t)g->r[i].nr, i, g->r[i].ncond == 0, 0};
        ne++;
    }
    /* A syscall whose first rule is unconditional is decided by it. */
    for (size_t k = 0; k < ne; k++)
        if (g->r[e[k].first].ncond == 0)
            e[k].simple = true;
    qsort(e, ne, sizeof *e, cmp_sysent);

    struct as as = {0}, *a = &as;
    LD_ABS(offsetof(struct seccomp_data, arch));
    emit(a, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, g->arch);
    RET(SECCOMP_RET_KILL_PROCESS);
    LD_ABS(offsetof(struct seccomp_data, nr));
    if (g->x32) {
        emit(a, BPF_JMP | BPF_JGE | BPF_K, 0, 2, 0x40000000u);
        emit(a, BPF_JMP | BPF_JEQ | BPF_K, 1, 0, 0xffffffffu);
        RET(SECCOMP_RET_KILL_PROCESS);
    }
    if (g->last_known >= 0) {
        emit(a, BPF_JMP | BPF_JGT | BPF_K, 0, 1, (uint32_t)g->last_known);
        RET(SECCOMP_RET_ERRNO | ENOSYS);
    }
    emit_tree(a, g, e, 0, ne);

    /* The blocks of syscalls with conditions. */
    for (size_t k = 0; k < ne; k++) {
        if (e[k].simple)
            continue;
        a->ins[e[k].ja].k = (uint32_t)(a->n - e[k].ja - 1);
        bool uncond = false;
        for (size_t i = e[k].first; i < g->n; i++) {
            const struct crule *r = &g->r[i];
            if ((uint32_t)r->nr != e[k].nr)
                continue;
            struct fixups fail = {.n = 0};
            for (unsigned c = 0; c < r->ncond; c++)
                emit_cond(a, &r->c[c], &fail);
            RET(r->ret);
            fix_resolve(a, &fail, a->n);
            if (r->ncond == 0) {
                uncond = true;
                break; /* nothing after it can be reached */
            }
        }
        if (!uncond)
            RET(g->def);
    }
    free(e);
    if (a->overflow || a->n > BPF_MAXINSNS) {
        free(a->ins);
        return fb_errf(err, FB_EXIT_SETUP,
                       "seccomp: the profile's rules make a filter too large (%zu instructions)",
                       a->n);
    }
    *insns = a->ins;
    *n = a->n;
    return 0;
}

/* ---- loading ---- */

static enum fb_sc_mode mode_of(const struct fb_policy *p, int ctl)
{
    if (p->seccomp.learn)
        return FB_SCM_LEARN;
    if (p->seccomp.log_denied)
        return ctl >= 0 ? FB_SCM_LOG : FB_SCM_AUDIT;
    return FB_SCM_ENFORCE;
}

int seccomp_apply_ctl(const struct fb_policy *p, int ctl, struct fb_err *err)
{
    if (!p->seccomp.enabled)
        return 0;
    enum fb_sc_mode mode = mode_of(p, ctl);
    if (mode == FB_SCM_LEARN && ctl < 0)
        return fb_errf(err, FB_EXIT_SETUP, "seccomp: learn mode needs a supervisor");
    struct fb_sc_prog *g;
    if (seccomp_compile(p, mode, &g, err) < 0)
        return -1;
    struct sock_filter *ins;
    size_t n;
    int rc = seccomp_bpf(g, &ins, &n, err);
    bool notify = g->notifies;
    seccomp_prog_free(g);
    if (rc < 0)
        return -1;
    struct sock_fprog fprog = {.len = (unsigned short)n, .filter = ins};
    unsigned long flags = 0;
    if (notify)
        flags |= SECCOMP_FILTER_FLAG_NEW_LISTENER;
    if (mode == FB_SCM_AUDIT)
        flags |= SECCOMP_FILTER_FLAG_LOG;
    long fd = syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, flags, &fprog);
    int e = errno;
    free(ins);
    if (fd < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "loading the seccomp filter");
    }
    if (!notify)
        return 0;
    /* The listener goes to the supervisor. Until it has it, a notifying
     * syscall here would wait forever: the profile allows sendmsg and close
     * (seccomp_validate checks what init needs). */
    struct fb_msg m = {.type = FB_MSG_SECCOMP_FD};
    int lfd = (int)fd;
    rc = ctl_send(ctl, &m, &lfd, 1);
    e = errno;
    close(lfd);
    if (rc < 0) {
        errno = e;
        return fb_errno(err, FB_EXIT_SETUP, "passing the seccomp listener");
    }
    return 0;
}

int seccomp_apply(const struct fb_policy *p, struct fb_err *err)
{
    return seccomp_apply_ctl(p, -1, err);
}

/* ---- validation ---- */

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

/* What fluebox's init does under the filter before and while it runs the
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
    }
    struct fb_sc_prog *g;
    if (seccomp_compile(p, FB_SCM_ENFORCE, &g, err) < 0)
        return -1;
    struct sock_filter *ins;
    size_t n;
    if (seccomp_bpf(g, &ins, &n, err) < 0) {
        seccomp_prog_free(g);
        return -1;
    }
    free(ins);
    for (size_t i = 0; i < FB_ARRAY_LEN(init_needs); i++) {
        int nr = seccomp_syscall_nr(init_needs[i].name);
        if (nr < 0)
            continue;
        struct seccomp_data d = {.nr = nr, .arch = g->arch};
        d.args[0] = init_needs[i].a0;
        uint32_t ret = seccomp_eval(g, &d);
        uint32_t act = ret & SECCOMP_RET_ACTION_FULL;
        if (act != SECCOMP_RET_ALLOW && act != SECCOMP_RET_LOG) {
            seccomp_prog_free(g);
            return fb_errf(err, FB_EXIT_SETUP,
                           "seccomp: the profile denies %s, which fluebox's init needs to run "
                           "the command",
                           init_needs[i].name);
        }
    }
    seccomp_prog_free(g);
    return 0;
}
