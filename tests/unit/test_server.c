/* Unit tests of the server's dispatch table (src/server/server_methods.c): it and
 * the protocol's method list come from the same list (methods.h), so every
 * method a request may name has a handler, and the file methods' argument
 * is a file operation the file code knows. */
#include "server.h"
#include "unit.h"

#include <stdlib.h>
#include <string.h>

void unit_server(void)
{
    size_t n = 0, missing = 0, badarg = 0;
    for (size_t i = 0; proto_methods[i]; i++, n++) {
        const struct method *m = server_method(proto_methods[i]);
        if (!m || !m->fn || strcmp(m->name, proto_methods[i]))
            missing++;
        else if (!strncmp(m->name, "file.", 5) && (m->arg < 0 || m->arg >= F_COUNT))
            badarg++;
    }
    CHECK(n >= 18 && !missing, "every method of the protocol (%zu) has a handler", n);
    CHECK(!badarg, "every file.* method names a file operation");
    CHECK(!server_method("file.chmod") && !server_method(""), "unlisted methods have no entry");
    CHECK(server_method("exec")->scope == SCOPE_LIVE &&
              server_method("session.destroy")->scope == SCOPE_DYING &&
              server_method("server.info")->scope == SCOPE_NONE,
          "methods say what session they need");
}

/* json_text (proto.c) writes what jansson would for the repaired text. */
void unit_json_text(void)
{
    unsigned seed = 12345;
    int bad = 0;
    for (int round = 0; round < 2000 && !bad; round++) {
        unsigned char in[64];
        size_t n = (size_t)(round % 64);
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            unsigned r = (seed >> 16) & 0xff;
            /* Mostly interesting bytes: controls, quotes, UTF-8 lead bytes. */
            in[i] = (unsigned char)(round % 3 ? r : (r & 0x3f) | (r & 0x40 ? 0x80 : 0));
        }
        char *rep = malloc(3 * n + 1);
        size_t used;
        size_t rl = utf8_repair(in, n, rep, true, &used);
        json_t *j = json_stringn(rep, rl);
        char *want = json_dumps(j, JSON_ENCODE_ANY);
        size_t len = json_text(in, n, NULL);
        char *got = malloc(len + 1);
        size_t len2 = json_text(in, n, got);
        got[len2] = 0;
        if (!want || len != len2 || strlen(want) != len + 2 || memcmp(want + 1, got, len))
            bad = round + 1;
        free(want);
        free(got);
        free(rep);
        json_decref(j);
    }
    CHECK(!bad, "json_text escapes and repairs as jansson does (2000 inputs; first bad: %d)", bad);
    unsigned char ctl[16];
    memset(ctl, 1, sizeof ctl);
    CHECK(json_text(ctl, sizeof ctl, NULL) == 6 * sizeof ctl, "a control byte takes 6 bytes as text");
}
