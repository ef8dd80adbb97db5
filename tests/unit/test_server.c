/* Unit tests of the server's dispatch table (src/server_methods.c): it and
 * the protocol's method list come from the same list (methods.h), so every
 * method a request may name has a handler, and the file methods' argument
 * is a file operation the file code knows. */
#include "server.h"
#include "unit.h"

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
