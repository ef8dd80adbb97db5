#!/usr/bin/env python3
"""test_server.py — tests of `fluebox serve` through the wire protocol
(docs/protocol.md). Prints "ok - NAME" / "not ok - NAME: WHY" lines for
tests/run.sh (run by tests/suites/server.sh).

  FB=./fluebox [FB_ASAN=BIN] python3 tests/server/test_server.py [-k SUBSTRING]

The tests live in one module per concern, sharing srvtest.py (the Server
fixture, helpers, the runner); they run in this order, which is kept: the
tests that share one server see what the earlier ones left on it.

  test_sessions.py    server.info, session create/list/info/destroy, parameters
  test_exec.py        exec, streaming, exec.kill, exec and session limits
  test_files.py       the file.* methods, big files, a full disk, symlink escapes
  test_protocol.py    malformed input, vanishing and slow clients, load, stress
  test_boundaries.py  other uids, the --foreign-* rules, the network allowlist
  test_secrets.py     session secrets, session.grant/revoke and expiry (issue 24)
  test_lifecycle.py   dead sessions, TTLs, the pool, signals, restarts, memory
  test_limits.py      connection, descriptor, file-time and memory limits; ASan

Every test starts what it needs (its own server on a private socket) and
tries to cross the boundary it is about: another uid's sessions, a symlink to
a host file, malformed input, vanishing clients, a killed server. No timing
asserts: waits poll for a state with a generous deadline."""
import sys

from srvtest import main
# Each module registers its tests (@test) as it is imported: in this order.
import test_sessions  # noqa: F401,E402
import test_exec  # noqa: F401,E402
import test_files  # noqa: F401,E402
import test_protocol  # noqa: F401,E402
import test_boundaries  # noqa: F401,E402
import test_secrets  # noqa: F401,E402
import test_lifecycle  # noqa: F401,E402
import test_limits  # noqa: F401,E402
import test_density  # noqa: F401,E402


if __name__ == "__main__":
    sys.exit(main())
