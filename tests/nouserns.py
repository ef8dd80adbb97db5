#!/usr/bin/env python3
"""nouserns.py CMD [ARGS...] — runs CMD where no user namespace can be made:
in a new user namespace whose user.max_user_namespaces is 0 (that sysctl
belongs to each user namespace, so the host's stays as it is). That is how a
machine with unprivileged user namespaces switched off looks to fluebox.

Run as root, the namespace maps root and the ids fluebox's sandboxes use
(1000, 100000) to themselves; run as another user, it maps only that user,
as root of the namespace (so CMD can write the sysctl). Exits with CMD's
status; 125 when the namespace cannot be made."""
import ctypes
import os
import sys

CLONE_NEWUSER = 0x10000000


def main():
    if len(sys.argv) < 2:
        sys.stderr.write("usage: nouserns.py CMD [ARGS...]\n")
        return 125
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
        os.read(go_r, 1)  # the parent has written the maps
        with open("/proc/sys/user/max_user_namespaces", "w") as f:
            f.write("0")
        try:
            os.execvp(sys.argv[1], sys.argv[1:])
        finally:
            os._exit(127)
    os.close(go_r)
    os.close(up_w)
    if os.read(up_r, 1) != b"U":
        os.waitpid(pid, 0)
        sys.stderr.write("nouserns.py: cannot create a user namespace\n")
        return 125
    uid, gid = os.geteuid(), os.getegid()
    if uid == 0:
        umap = gmap = "0 0 1\n1000 1000 1\n100000 100000 1\n"
    else:
        with open("/proc/%d/setgroups" % pid, "w") as f:
            f.write("deny")
        umap, gmap = "0 %d 1\n" % uid, "0 %d 1\n" % gid
    with open("/proc/%d/uid_map" % pid, "w") as f:
        f.write(umap)
    with open("/proc/%d/gid_map" % pid, "w") as f:
        f.write(gmap)
    os.write(go_w, b"G")
    os.close(go_w)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


if __name__ == "__main__":
    sys.exit(main())
