#!/usr/bin/env python3
"""console.py SOCKET OUT — the receiving end of an OCI runtime's
--console-socket: accept one connection, take the pty master passed with
SCM_RIGHTS, and copy what the container writes to OUT until it closes.
Prints "ready" on stdout once listening."""
import array, os, socket, sys

path, out = sys.argv[1], sys.argv[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(path)
s.listen(1)
print("ready", flush=True)
c, _ = s.accept()
fds = array.array("i")
msg, anc, _, _ = c.recvmsg(1024, socket.CMSG_LEN(fds.itemsize))
for level, kind, data in anc:
    if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
        fds.frombytes(data[: len(data) - (len(data) % fds.itemsize)])
if not fds:
    sys.exit("no pty master received")
master = fds[0]
with open(out, "wb") as f:
    while True:
        try:
            b = os.read(master, 4096)
        except OSError:
            break
        if not b:
            break
        f.write(b)
        f.flush()
