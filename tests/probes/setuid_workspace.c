/* setuid_workspace: leave a set-user-ID or set-group-ID file behind in the
 * workspace, which is a host directory. nosuid on the sandbox's mount only
 * stops exec inside the sandbox; on the host the file keeps its mode and, with
 * an idmapped workspace of a root-owned directory, belongs to root: a
 * setuid-root program planted for any host user who can reach it (the reason
 * access to a rootful container runtime's bind mounts is root access). Tries
 * creating the file with the bits (open O_CREAT mode 06755) and adding them
 * later (fchmod, fchmodat), and giving it file capabilities (the
 * security.capability attribute, CAP_SETUID); the files are deleted before
 * the verdict. */
#include "probe.h"
#include <sys/xattr.h>

static void judge(struct probe_res *r, const char *how, const char *name)
{
    struct stat st;
    if (stat(name, &st) < 0) {
        res_note(r, "%s: stat: %s", how, ename(errno));
        return;
    }
    if (st.st_mode & (S_ISUID | S_ISGID))
        res_escape(r, "%s left mode %04o on a workspace file", how, st.st_mode & 07777);
    else
        res_note(r, "%s: mode %04o", how, st.st_mode & 07777);
}

static void probe_attempt(struct probe_res *r)
{
    char a[64], b[64];
    snprintf(a, sizeof(a), "suid-create-by-probe-%d", (int)getpid());
    snprintf(b, sizeof(b), "suid-chmod-by-probe-%d", (int)getpid());
    umask(0);
    int fd = open(a, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 06755);
    if (fd >= 0) {
        close(fd);
        judge(r, "open(O_CREAT, 06755)", a);
        unlink(a);
    } else {
        res_note(r, "create: %s", ename(errno));
    }
    fd = open(b, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0755);
    if (fd < 0) {
        res_note(r, "create: %s", ename(errno));
        return;
    }
    if (fchmod(fd, 04755) < 0)
        res_note(r, "fchmod 04755: %s", ename(errno));
    close(fd);
    judge(r, "fchmod", b);
    if (chmod(b, 02755) < 0)
        res_note(r, "chmod 02755: %s", ename(errno));
    else
        judge(r, "chmod 02755", b);
    /* File capabilities: revision 2, effective, CAP_SETUID (7) permitted. */
    uint32_t cap[5] = {0x02000001, 1u << 7, 0, 0, 0};
    if (setxattr(b, "security.capability", cap, sizeof(cap), 0) == 0)
        res_escape(r, "security.capability (CAP_SETUID) set on a workspace file");
    else
        res_note(r, "file capabilities: %s", ename(errno));
    unlink(b);
}

PROBE_MAIN("setuid_workspace")
