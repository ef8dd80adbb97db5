/* env_leak: the caller's environment (API keys, tokens, SSH agent sockets)
 * must not reach the sandbox. The runner puts a marker value in the
 * environment of the sandbox launcher; the probe looks for it in its own
 * environment and in /proc/PID/environ of every process it can see (a
 * supervisor that forks without exec still carries the caller's). */
#include "probe.h"

extern char **environ;

static void probe_attempt(struct probe_res *r)
{
    const char *marker = parg("marker");
    if (!marker) {
        res_skip(r, "no marker= given");
        return;
    }
    char needle[160];
    snprintf(needle, sizeof(needle), "FLUEBOX_PROBE_ENV=%s", marker);
    int n = 0;
    for (char **e = environ; *e; e++) {
        n++;
        if (strcmp(*e, needle) == 0)
            res_escape(r, "marker variable in our environment");
    }
    static const char *const secrets[] = {"SSH_AUTH_SOCK", "AWS_SECRET_ACCESS_KEY",
                                          "GITHUB_TOKEN", "OPENAI_API_KEY",
                                          "ANTHROPIC_API_KEY", "DBUS_SESSION_BUS_ADDRESS"};
    for (size_t i = 0; i < sizeof(secrets) / sizeof(secrets[0]); i++)
        if (getenv(secrets[i]))
            res_escape(r, "%s present", secrets[i]);

    DIR *d = opendir("/proc");
    if (d) {
        struct dirent *de;
        while ((de = readdir(d))) {
            char *end;
            long pid = strtol(de->d_name, &end, 10);
            if (*end || pid <= 0 || pid == getpid())
                continue;
            char path[64];
            static char buf[65536];
            snprintf(path, sizeof(path), "/proc/%ld/environ", pid);
            ssize_t len = read_small(path, buf, sizeof(buf));
            for (ssize_t i = 0; i < len;) {
                if (strcmp(buf + i, needle) == 0) {
                    res_escape(r, "marker variable in /proc/%ld/environ", pid);
                    break;
                }
                i += (ssize_t)strlen(buf + i) + 1;
            }
        }
        closedir(d);
    }
    if (r->verdict != PV_ESCAPED) {
        char names[400] = "";
        for (char **e = environ; *e; e++) {
            size_t l = strcspn(*e, "=");
            if (strlen(names) + l + 2 < sizeof(names)) {
                strncat(names, *e, l);
                strcat(names, " ");
            }
        }
        res_note(r, "%d variables: %s", n, names);
    }
}

PROBE_MAIN("env_leak")
