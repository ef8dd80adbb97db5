#!/usr/bin/env python3
"""test_files.py — the file.* methods: every method and its errors, big
reads and writes, a full disk (ENOSPC leaves the old file whole), and the
boundary they keep: symlinks and /proc magic links into the host are never
followed out of the session. Run by test_server.py; alone:
python3 tests/server/test_files.py."""
import base64
import json
import os
import shutil
import sys
import tempfile

from srvtest import main, check, test


@test
def t_files(srv):
    c = srv.conn()
    s = c.call("session.create")["session"]
    S = {"session": s}

    def call(m, **p):
        p.update(S)
        return c.call(m, p)

    def err(m, **p):
        p.update(S)
        _, e = c.try_call(m, p)
        return e and e["code"]

    check("file.write", call("file.write", path="a.txt", data="hello\n") == {"bytesWritten": 6})
    check("file.write append", call("file.write", path="a.txt", data="more", append=True)["bytesWritten"] == 4)
    r = call("file.read", path="a.txt")
    check("file.read whole", r["data"] == "hello\nmore" and r["eof"] and r["size"] == 10 and r["bytesRead"] == 10, r)
    r = call("file.read", path="a.txt", offset=2, length=3)
    check("file.read offset/length", r["data"] == "llo" and not r["eof"], r)
    r = call("file.read", path="a.txt", offset=100)
    check("file.read past the end", r["data"] == "" and r["eof"] and r["bytesRead"] == 0, r)
    r = call("file.read", path="/workspace/a.txt", encoding="base64")
    check("file.read base64", base64.b64decode(r["data"]) == b"hello\nmore", r)
    check("file.write exclusive: EEXIST", err("file.write", path="a.txt", data="x", exclusive=True) == "EEXIST")
    check("file.write into a missing dir: ENOENT", err("file.write", path="no/dir/f", data="x") == "ENOENT")
    call("file.write", path="no/dir/f", data="x", parents=True, mode="0600")
    r = call("file.stat", path="no/dir/f")
    check("file.write parents and mode", r["type"] == "file" and r["mode"] == 0o600 and r["size"] == 1, r)
    call("file.write", path="bin.dat", data=base64.b64encode(bytes(range(256))).decode(), encoding="base64")
    r = call("file.read", path="bin.dat", encoding="base64")
    check("file.write/read binary roundtrip", base64.b64decode(r["data"]) == bytes(range(256)))
    r = call("file.read", path="bin.dat")
    check("file.read utf8 of binary is repaired, valid JSON", r["bytesRead"] == 256 and "\ufffd" in r["data"])
    check("file.write data with NUL characters (utf8)", call("file.write", path="nul.txt", data="a\x00b")["bytesWritten"] == 3
          and base64.b64decode(call("file.read", path="nul.txt", encoding="base64")["data"]) == b"a\x00b")
    check("file path with NUL: invalid_params naming path", err("file.stat", path="a\x00b") == "invalid_params")
    check("file.write bad base64: invalid_params", err("file.write", path="x", data="@@", encoding="base64") == "invalid_params")
    check("file.write to a dir: EISDIR", err("file.write", path="no", data="x") == "EISDIR")
    check("file.read a dir: EISDIR", err("file.read", path="no") == "EISDIR")
    check("file.read missing: ENOENT", err("file.read", path="missing") == "ENOENT")
    check("file.write read-only system: EROFS/EACCES", err("file.write", path="/usr/x", data="x") in ("EROFS", "EACCES"))
    check("file.read length above the limit: too_large", err("file.read", path="a.txt", length=1 << 30) == "too_large")
    check("file.read negative offset: invalid_params", err("file.read", path="a.txt", offset=-1) == "invalid_params")
    check("file.read empty path: invalid_params", err("file.read", path="") == "invalid_params")
    check("file.read path not a string: invalid_params", err("file.read", path=["a"]) == "invalid_params")
    # stat / exists / symlinks
    c.call("exec", {"session": s, "command": "ln -s a.txt link; ln -s nowhere dangling; mkfifo fifo"})
    r = call("file.stat", path="link")
    check("file.stat follows symlinks", r["type"] == "file" and r["size"] == 10, r)
    r = call("file.stat", path="link", follow=False)
    check("file.stat follow:false describes the link", r["type"] == "symlink" and r["target"] == "a.txt", r)
    check("file.stat dangling: ENOENT", err("file.stat", path="dangling") == "ENOENT")
    check("file.read a FIFO: EINVAL (never blocks)", err("file.read", path="fifo") == "EINVAL")
    check("file.write a FIFO: refused", err("file.write", path="fifo", data="x") in ("EINVAL", "ENXIO"))
    check("file.exists true", call("file.exists", path="a.txt") == {"exists": True, "type": "file"})
    check("file.exists false", call("file.exists", path="nope") == {"exists": False})
    check("file.exists under a file: false", call("file.exists", path="a.txt/x") == {"exists": False})
    # readdir
    r = call("file.readdir", path=".")
    names = [e["name"] for e in r["entries"]]
    types = {e["name"]: e["type"] for e in r["entries"]}
    check("file.readdir sorted with types", names == sorted(names) and types.get("no") == "dir"
          and types.get("link") == "symlink" and types.get("fifo") == "fifo" and "." not in names, r)
    check("file.readdir of a file: ENOTDIR", err("file.readdir", path="a.txt") == "ENOTDIR")
    c.call("exec", {"session": s, "command": "mkdir many && cd many && seq 1 5000 | xargs touch"})
    r = call("file.readdir", path="many")
    check("file.readdir big (through a helper)", len(r["entries"]) == 5000, len(r["entries"]))
    # mkdir / rm / rename
    check("file.mkdir", call("file.mkdir", path="d1") == {"created": True})
    check("file.mkdir existing: EEXIST", err("file.mkdir", path="d1") == "EEXIST")
    check("file.mkdir missing parent: ENOENT", err("file.mkdir", path="x/y/z") == "ENOENT")
    check("file.mkdir recursive", call("file.mkdir", path="x/y/z", recursive=True) == {"created": True})
    check("file.mkdir recursive existing", call("file.mkdir", path="x/y/z", recursive=True) == {"created": False})
    check("file.mkdir recursive over a file: EEXIST/ENOTDIR", err("file.mkdir", path="a.txt/q", recursive=True) in ("ENOTDIR", "EEXIST"))
    check("file.rm dir without recursive: EISDIR", err("file.rm", path="x") == "EISDIR")
    check("file.rm recursive", call("file.rm", path="x", recursive=True) == {"removed": True})
    check("file.rm missing: ENOENT", err("file.rm", path="x") == "ENOENT")
    check("file.rm missing force", call("file.rm", path="x", force=True) == {"removed": False})
    check("file.rm a symlink, not its target", call("file.rm", path="link") == {"removed": True}
          and call("file.exists", path="a.txt")["exists"])
    check("file.rm recursive of many files", call("file.rm", path="many", recursive=True) == {"removed": True})
    check("file.rm a mount point: EBUSY or refused", err("file.rm", path="/proc", recursive=True) is not None)
    call("file.write", path="b.txt", data="b")
    check("file.rename overwrite:false: EEXIST", err("file.rename", **{"from": "a.txt", "to": "b.txt", "overwrite": False}) == "EEXIST")
    check("file.rename", call("file.rename", **{"from": "a.txt", "to": "b.txt"}) == {})
    check("file.rename result", call("file.read", path="b.txt")["data"] == "hello\nmore")
    check("file.rename missing: ENOENT", err("file.rename", **{"from": "a.txt", "to": "c.txt"}) == "ENOENT")
    check("file.rename without to: invalid_params", err("file.rename", **{"from": "b.txt"}) == "invalid_params")
    check("workspace.diff: not_supported", err("workspace.diff") == "not_supported")
    c.call("session.destroy", S)


@test
def t_big_files(srv):
    c = srv.conn()
    s = c.call("session.create", {"limits": {"memory": "512M"}})["session"]
    data = os.urandom(10 << 20)
    r = c.call("file.write", {"session": s, "path": "ten", "data": base64.b64encode(data).decode(), "encoding": "base64"})
    check("file.write 10 MiB in one request", r["bytesWritten"] == len(data), r)
    r = c.call("file.read", {"session": s, "path": "ten", "encoding": "base64"})
    check("file.read 10 MiB in one request", base64.b64decode(r["data"]) == data and r["eof"])
    # 50 MiB: in chunks, both ways.
    big = os.urandom(50 << 20)
    chunk = 8 << 20
    for off in range(0, len(big), chunk):
        c.call("file.write", {"session": s, "path": "fifty", "append": off > 0, "encoding": "base64",
                              "data": base64.b64encode(big[off:off + chunk]).decode()})
    got = b""
    while True:
        r = c.call("file.read", {"session": s, "path": "fifty", "offset": len(got), "encoding": "base64"})
        got += base64.b64decode(r["data"])
        if r["eof"]:
            break
    check("file.write/read 50 MiB in chunks", got == big and r["size"] == len(big), len(got))
    r = c.call("file.read", {"session": s, "path": "fifty", "encoding": "base64"})
    check("file.read without length stops at maxReadBytes", r["bytesRead"] == 16 << 20 and not r["eof"], r["bytesRead"])
    c.call("session.destroy", {"session": s})


@test
def t_write_full_disk(srv):
    """file.write on a full file system (the session's own /tmp, a tmpfs of
    limits.disk) fails with ENOSPC and leaves the old file, or no file, never
    a partial one; an append is cut back to the old length."""
    c = srv.conn()
    s = c.call("session.create", {"limits": {"disk": "1M"}})["session"]
    S = {"session": s}

    def write(path, data, **kw):
        p = dict(S, path=path, data=base64.b64encode(data).decode(), encoding="base64", **kw)
        return c.try_call("file.write", p)

    def content(path):
        r, e = c.try_call("file.read", dict(S, path=path, encoding="base64"))
        return None if e else base64.b64decode(r["data"])

    write("/tmp/keep", b"old\n")
    big = os.urandom(2 << 20)  # more than the disk, sent through the bulk path
    _, e = write("/tmp/keep", big)
    check("file.write past a full disk (bulk): ENOSPC", e and e["code"] == "ENOSPC", e)
    check("file.write past a full disk (bulk): the old file is intact", content("/tmp/keep") == b"old\n")
    _, e = write("/tmp/new", big)
    check("file.write of a new file past a full disk: ENOSPC, no file",
          e and e["code"] == "ENOSPC" and content("/tmp/new") is None, e)
    _, e = write("/tmp/keep", big, append=True)
    check("file.write append past a full disk: ENOSPC, cut back to the old length",
          e and e["code"] == "ENOSPC" and content("/tmp/keep") == b"old\n", e)
    # Fill the disk, then a small write (inline in the request) fails the same way.
    c.call("exec", dict(S, command="head -c 2000000 /dev/zero > /tmp/fill; true"))
    _, e = write("/tmp/keep", b"x" * 50000)
    check("file.write on a full disk (inline): ENOSPC, the old file intact",
          e and e["code"] == "ENOSPC" and content("/tmp/keep") == b"old\n", e)
    r = c.call("exec", dict(S, command="ls -A /tmp"))
    check("file.write on a full disk leaves no temporary file", "fluebox" not in r["stdout"], r["stdout"])
    c.call("session.destroy", S)


@test
def t_symlink_escape(srv):
    """A symlink in a host workspace that points at a host secret must not
    let file operations reach it."""
    c = srv.conn()
    sec_dir = tempfile.mkdtemp(prefix="fbsecret.")
    secret = os.path.join(sec_dir, "secret")
    with open(secret, "w") as f:
        f.write("TOPSECRET")
    ws = tempfile.mkdtemp(prefix="fbws.")
    os.chmod(ws, 0o777)
    os.symlink(secret, os.path.join(ws, "abs"))
    os.symlink(os.path.relpath(secret, ws), os.path.join(ws, "rel"))
    os.symlink(sec_dir, os.path.join(ws, "dirlink"))
    os.symlink("/proc/self/mem", os.path.join(ws, "mem"))
    os.symlink("/proc/self/fd/0", os.path.join(ws, "fd0"))
    os.symlink("/proc/1/environ", os.path.join(ws, "initenv"))
    # Magic links that lead out of /proc: refused as such (docs/protocol.md 4.6).
    os.symlink("/proc/self/root/etc/hostname", os.path.join(ws, "rootlink"))
    with open(os.path.join(ws, "plain.txt"), "w") as f:
        f.write("plain")
    s = c.call("session.create", {"workspace": ws})["session"]
    for path in ("rootlink", "/proc/1/root/etc/hostname", "/proc/self/cwd/plain.txt",
                 "/proc/1/cwd/plain.txt"):
        r, e = c.try_call("file.read", {"session": s, "path": path})
        check("a /proc magic link (%s): file.read is ELOOP" % path, e is not None and e["code"] == "ELOOP", (r, e))
    r, e = c.try_call("file.write", {"session": s, "path": "/proc/1/cwd/new.txt", "data": "x"})
    check("a /proc magic link: file.write is ELOOP and creates nothing",
          e is not None and e["code"] == "ELOOP" and not os.path.exists(os.path.join(ws, "new.txt")), (r, e))
    r, e = c.try_call("file.readdir", {"session": s, "path": "/proc/1/root/etc"})
    check("a /proc magic link: file.readdir is ELOOP", e is not None and e["code"] == "ELOOP", (r, e))
    r, e = c.try_call("file.stat", {"session": s, "path": "/proc/1/root/etc/hostname"})
    check("a /proc magic link: file.stat is ELOOP", e is not None and e["code"] == "ELOOP", (r, e))
    r = c.call("file.read", {"session": s, "path": "plain.txt"})
    check("a plain file still reads", r.get("data") == "plain", r)
    for name in ("abs", "rel", "dirlink/secret"):
        r, e = c.try_call("file.read", {"session": s, "path": name})
        check("symlink to a host secret (%s): file.read fails" % name, e is not None and r is None
              and "TOPSECRET" not in json.dumps(e), (r, e))
    r, e = c.try_call("file.readdir", {"session": s, "path": "dirlink"})
    check("symlink to a host dir: file.readdir fails", e is not None, r)
    c.try_call("file.write", {"session": s, "path": "abs", "data": "OVERWRITTEN", "parents": True})
    c.try_call("file.write", {"session": s, "path": "dirlink/new", "data": "x", "parents": True})
    with open(secret) as f:
        check("symlink to a host secret: file.write does not reach it", f.read() == "TOPSECRET")
    check("symlink to a host dir: file.write creates nothing there", os.listdir(sec_dir) == ["secret"], os.listdir(sec_dir))
    c.try_call("file.rm", {"session": s, "path": "dirlink/secret"})
    check("symlink to a host dir: file.rm does not reach it", os.path.exists(secret))
    c.try_call("file.rm", {"session": s, "path": "dirlink", "recursive": True})
    check("file.rm recursive of a symlinked dir removes only the link", os.path.exists(secret))
    x = c.call("exec", {"session": s, "command": "cat abs rel dirlink/secret 2>&1; true"})
    check("symlink to a host secret: exec cannot read it either", "TOPSECRET" not in x["stdout"], x)
    for name in ("mem", "fd0", "initenv"):
        r, e = c.try_call("file.read", {"session": s, "path": name})
        check("symlink into /proc (%s): file.read refused" % name, e is not None, (r, e))
    r, e = c.try_call("file.write", {"session": s, "path": "mem", "data": "x"})
    check("symlink to /proc/self/mem: file.write refused", e is not None, (r, e))
    r, e = c.try_call("file.read", {"session": s, "path": "/proc/self/environ"})
    check("file.read /proc/self/environ (init's own) refused", e is not None and e["code"] == "EACCES", (r, e))
    c.call("session.destroy", {"session": s})
    shutil.rmtree(ws, ignore_errors=True)
    shutil.rmtree(sec_dir, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
