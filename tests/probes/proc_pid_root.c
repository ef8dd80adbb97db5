/* proc_pid_root: /proc/PID/root and /proc/PID/cwd are magic links into
 * another process's filesystem view; through a host process they lead to the
 * host's root. Tries pid 1, the runner's host helper (by its host pid) and
 * every process visible in /proc, and reads the host secret through each. */
#include "probe.h"

static void try_pid(struct probe_res *r, pid_t pid, const char *secret, int *tried)
{
    char path[4096];
    const char *rel = secret[0] == '/' ? secret + 1 : secret;
    const char *base = strrchr(secret, '/');
    base = base ? base + 1 : secret;
    int e = 0;
    /* root: the host path as is; cwd: the helper runs in the secret's directory. */
    snprintf(path, sizeof(path), "/proc/%d/root/%s", (int)pid, rel);
    if (read_secret_at(AT_FDCWD, path, &e)) {
        res_escape(r, "read the secret via /proc/%d/root", (int)pid);
        return;
    }
    snprintf(path, sizeof(path), "/proc/%d/cwd/%s", (int)pid, base);
    int e2 = 0;
    if (read_secret_at(AT_FDCWD, path, &e2)) {
        res_escape(r, "read the secret via /proc/%d/cwd", (int)pid);
        return;
    }
    if (*tried < 4)
        res_note(r, "pid %d: root %s, cwd %s", (int)pid, e ? ename(e) : "-",
                 e2 ? ename(e2) : "-");
    (*tried)++;
}

static void probe_attempt(struct probe_res *r)
{
    const char *secret = parg("secret");
    if (!secret) {
        res_skip(r, "no secret= given");
        return;
    }
    int tried = 0;
    pid_t self = getpid();
    try_pid(r, 1, secret, &tried);
    long hp = parg_long("hostpid", 0);
    if (hp > 1 && hp != self)
        try_pid(r, (pid_t)hp, secret, &tried);
    DIR *d = opendir("/proc");
    if (!d) {
        res_note(r, "/proc: %s", ename(errno));
        return;
    }
    struct dirent *de;
    while ((de = readdir(d)) && r->verdict != PV_ESCAPED) {
        char *end;
        long pid = strtol(de->d_name, &end, 10);
        if (*end || pid <= 1 || pid == self || pid == hp)
            continue;
        try_pid(r, (pid_t)pid, secret, &tried);
    }
    closedir(d);
    res_note(r, "%d processes tried", tried);
}

PROBE_MAIN("proc_pid_root")
