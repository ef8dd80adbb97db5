/* home_secrets: read the credentials that sit next to the program in a home
 * directory. The runner starts this probe from a fake home's ~/.cargo/bin
 * (as `cargo install` leaves tools), with HOME ending in '/' and ~/bin and
 * ~/.local/bin, holding copies named node and python3, first on PATH: the
 * layouts whose automatic interpreter bind exposed ~/.cargo, ~/.local and
 * the whole home (issue 19). */
#include "probe.h"

static void probe_attempt(struct probe_res *r)
{
    const char *home = parg("home");
    if (!home) {
        res_skip(r, "no home= given");
        return;
    }
    static const char *const files[] = {".cargo/credentials.toml", ".local/share/keyring",
                                        ".ssh/id_rsa", ".npmrc"};
    for (size_t i = 0; i < sizeof(files) / sizeof(files[0]); i++) {
        char path[4096];
        int e;
        snprintf(path, sizeof(path), "%s/%s", home, files[i]);
        if (read_secret_at(AT_FDCWD, path, &e))
            res_escape(r, "read ~/%s", files[i]);
        else
            res_note(r, "~/%s: %s", files[i], e ? ename(e) : "other content");
    }
}

PROBE_MAIN("home_secrets")
