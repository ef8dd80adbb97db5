#!/usr/bin/env python3
"""mapns.py MAP CMD [ARGS...] — runs CMD as uid 0 of a new user namespace
whose uid_map and gid_map are MAP: "INSIDE:OUTSIDE:COUNT" extents joined by
commas (e.g. "0:200000:65536"). Only the user namespace is new (the mount
namespace is still the caller's, owned by the parent user namespace). Needs
root for a map of more than the caller's own id. Exits with CMD's status;
125 when the namespace cannot be made or mapped."""
import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def main():
    if len(sys.argv) < 3:
        sys.stderr.write("usage: mapns.py INSIDE:OUTSIDE:COUNT[,...] CMD [ARGS...]\n")
        return 125
    lines = "".join(" ".join(e.split(":")) + "\n" for e in sys.argv[1].split(","))
    libc = ctypes.CDLL(None, use_errno=True)
    go_r, go_w = os.pipe()
    up_r, up_w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(go_w)
        os.close(up_r)
        if libc.unshare(CLONE_NEWUSER) != 0:
            os.write(up_w, b"E")
            os._exit(125)
        os.write(up_w, b"U")
        os.close(up_w)
        if os.read(go_r, 1) != b"G":  # the parent has written the maps
            os._exit(125)
        try:
            os.setresgid(0, 0, 0)
            os.setresuid(0, 0, 0)
            os.execvp(sys.argv[2], sys.argv[2:])
        finally:
            os._exit(127)
    os.close(go_r)
    os.close(up_w)
    ok = os.read(up_r, 1) == b"U"
    try:
        if ok:
            for name in ("uid_map", "gid_map"):
                with open("/proc/%d/%s" % (pid, name), "w") as f:
                    f.write(lines)
    except OSError as e:
        sys.stderr.write("mapns.py: writing the maps: %s\n" % e)
        ok = False
    if ok:
        os.write(go_w, b"G")
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    if not ok:
        return 125
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
