"""What the synchronous and the asyncio clients share: result types, the
mapping from keyword arguments to protocol parameters, the default socket
path, finding the binary and starting a private server."""

import base64
import math
import os
import posixpath
import queue
import re
import secrets
import shutil
import stat as _stat
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from .errors import BinaryNotFound, FlueboxError, TooLarge, UntrustedServer

# The server's default request line limit (server.info limits.maxMessageBytes).
DEFAULT_MAX_MESSAGE = 16 * 1024 * 1024


def check_line(line: str, limit: int) -> Optional[FlueboxError]:
    """Not worth sending a line the server would only skip."""
    n = len(line.encode("utf-8")) if len(line) * 4 > limit else len(line)
    if n > limit:
        return TooLarge("request of %d bytes is larger than the server's message limit (%d)" % (n, limit))
    return None

# Data larger than this is written in several file.write requests (base64 of
# 8 MiB stays well below the server's 16 MiB line limit).
WRITE_CHUNK = 8 * 1024 * 1024

Command = Union[str, Sequence[str]]
Data = Union[str, bytes, bytearray, memoryview]


def _truncated_by(r: Mapping[str, Any]) -> Optional[str]:
    why = r.get("truncatedBy")
    if why == "memory":
        warnings.warn("fluebox: the output of exec %s was cut: the server's memory budget for this "
                      "user was full (its first 64 KiB per stream are kept; see stdout_truncated)"
                      % r.get("execId", "?"), RuntimeWarning, stacklevel=4)
    return why if isinstance(why, str) else None


@dataclass
class ExecResult:
    """The end of a command: it ran, whatever its exit code."""

    exit_code: int
    stdout: Union[str, bytes] = ""
    stderr: Union[str, bytes] = ""
    signal: Optional[str] = None
    timed_out: bool = False
    oom_killed: bool = False  # ended by the OOM killer of the session's memory cgroup
    duration_ms: int = 0
    exec_id: str = ""
    stdout_truncated: bool = False
    stderr_truncated: bool = False
    # Why output was cut: "maxOutputBytes" (as asked) or "memory" (the
    # server's memory budget for this user was full; the first 64 KiB of
    # each stream are always kept). None when nothing was cut.
    truncated_by: Optional[str] = None

    @property
    def ok(self) -> bool:
        return self.exit_code == 0

    @classmethod
    def from_wire(cls, r: Mapping[str, Any], as_bytes: bool, stdout=None, stderr=None) -> "ExecResult":
        enc = r.get("encoding", "utf8")

        def dec(v):
            if v is None:
                return b"" if as_bytes else ""
            if as_bytes:
                return base64.b64decode(v) if enc == "base64" else v.encode("utf-8")
            # The server may answer a big text in base64 (more compact when
            # it is mostly control bytes); "encoding" says so.
            return base64.b64decode(v).decode("utf-8", "replace") if enc == "base64" else v

        return cls(
            exit_code=int(r.get("exitCode", -1)),
            stdout=stdout if stdout is not None else dec(r.get("stdout")),
            stderr=stderr if stderr is not None else dec(r.get("stderr")),
            signal=r.get("signal"),
            timed_out=bool(r.get("timedOut", False)),
            oom_killed=bool(r.get("oomKilled", False)),
            duration_ms=int(r.get("durationMs", 0) or 0),
            exec_id=r.get("execId", ""),
            stdout_truncated=bool(r.get("stdoutTruncated", False)),
            stderr_truncated=bool(r.get("stderrTruncated", False)),
            truncated_by=_truncated_by(r),
        )


@dataclass
class OutputChunk:
    """A piece of a streamed command's output."""

    stream: str  # "stdout" or "stderr"
    data: Union[str, bytes]


@dataclass
class Stat:
    """file.stat's result. ``type`` is file, dir, symlink, fifo, socket,
    char or block. Times are milliseconds since the epoch."""

    type: str
    size: Optional[int] = None
    mode: Optional[int] = None
    uid: Optional[int] = None
    gid: Optional[int] = None
    nlink: Optional[int] = None
    mtime_ms: Optional[int] = None
    atime_ms: Optional[int] = None
    ctime_ms: Optional[int] = None
    target: Optional[str] = None
    raw: Dict[str, Any] = field(default_factory=dict, repr=False)

    @property
    def is_file(self) -> bool:
        return self.type == "file"

    @property
    def is_dir(self) -> bool:
        return self.type == "dir"

    @property
    def is_symlink(self) -> bool:
        return self.type == "symlink"

    @property
    def mtime(self) -> Optional[float]:
        """Modification time in seconds since the epoch (as os.stat)."""
        return None if self.mtime_ms is None else self.mtime_ms / 1000.0

    @classmethod
    def from_wire(cls, r: Mapping[str, Any]) -> "Stat":
        return cls(
            type=r.get("type", "unknown"),
            size=r.get("size"),
            mode=r.get("mode"),
            uid=r.get("uid"),
            gid=r.get("gid"),
            nlink=r.get("nlink"),
            mtime_ms=r.get("mtimeMs"),
            atime_ms=r.get("atimeMs"),
            ctime_ms=r.get("ctimeMs"),
            target=r.get("target"),
            raw=dict(r),
        )


@dataclass
class DirEntry:
    name: str
    type: str


# ---- parameters -------------------------------------------------------------

_LIMIT_KEYS = {
    "memory": "memory",
    "cpus": "cpus",
    "pids": "pids",
    "disk": "disk",
    "nofile": "nofile",
    "fsize": "fsize",
}


def ceil_ms(seconds: Optional[float] = None, ms: Optional[float] = None, what: str = "timeout") -> Optional[int]:
    """Seconds (or milliseconds) to whole milliseconds, rounded up."""
    if seconds is not None and ms is not None:
        raise TypeError("give %s or %s_ms, not both" % (what, what))
    for name, v in ((what, seconds), (what + "_ms", ms)):
        if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float))):
            raise TypeError("%s must be a number of %s (e.g. %s=%s), not %r"
                            % (name, "seconds" if name == what else "milliseconds", name,
                               "10" if name == what else "10000", v))
    if seconds is not None:
        ms = seconds * 1000.0
    if ms is None:
        return None
    if isinstance(ms, bool) or not isinstance(ms, (int, float)) or ms < 0 or math.isnan(ms):
        raise ValueError("%s must be a non-negative number" % what)
    return int(math.ceil(ms))


def session_params(
    profile: Optional[str] = None,
    *,
    memory: Union[str, int, None] = None,
    cpus: Optional[float] = None,
    pids: Optional[int] = None,
    disk: Union[str, int, None] = None,
    nofile: Optional[int] = None,
    fsize: Union[str, int, None] = None,
    timeout: Optional[float] = None,
    timeout_ms: Optional[float] = None,
    limits: Optional[Mapping[str, Any]] = None,
    network: Optional[str] = None,
    allow_net: Optional[Sequence[str]] = None,
    workspace: Union[str, "os.PathLike[str]", None] = None,
    cow: Optional[bool] = None,
    cwd: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    ttl: Optional[float] = None,
    idle_timeout: Optional[float] = None,
    options: Optional[Sequence[str]] = None,
    pool: Optional[bool] = None,
    label: Optional[str] = None,
    caller: Union[bool, Mapping[str, Any], None] = True,
    publish: Optional[Sequence[Union[int, str, Mapping[str, Any]]]] = None,
    secrets: Optional[Sequence[Union[str, Mapping[str, Any]]]] = None,
    allow_http: Union[str, Sequence[str], None] = None,
    upstream_ca: Union[str, "os.PathLike[str]", None] = None,
) -> Dict[str, Any]:
    """session.create parameters. Durations are in seconds (``timeout`` is the
    default timeout of each exec; ``ttl`` and ``idle_timeout`` the session's).
    ``caller``: whose python3, node, npm the session's exec finds: True (the
    default) this process's (see caller_of), a mapping {"path", "cwd", "env"}
    to give them, False or None for the system's only. ``publish``: ports to
    publish as the session starts, each 3000, "8080:3000" or {"port",
    "hostPort", "anyUid"} (docs/protocol.md, session.publish).
    ``secrets``: credentials that never enter the sandbox (docs/secrets.md),
    each "NAME:HOST[,HOST...]" (the value is this process's environment
    variable NAME), "NAME=@FILE:HOSTS" (read from FILE here) or a mapping
    {"name", "hosts", "value"?, "file"?}; ``allow_http``: HTTP rules
    "METHODS HOST[:PORT][/PATH-PREFIX]"; ``upstream_ca``: a PEM file also
    trusted for the inspected hosts' upstream TLS."""
    p: Dict[str, Any] = {}
    lim: Dict[str, Any] = dict(limits or {})
    for k, wire in _LIMIT_KEYS.items():
        v = locals()[k]
        if v is not None:
            lim[wire] = v
    t = ceil_ms(timeout, timeout_ms)
    if t is not None:
        lim["timeoutMs"] = t
    if lim:
        p["limits"] = lim
    if profile is not None:
        p["profile"] = profile
    if network is not None:
        p["network"] = network
    if allow_net is not None:
        if isinstance(allow_net, str):
            allow_net = [allow_net]
        p["allowNet"] = list(allow_net)
    if workspace is not None:
        p["workspace"] = os.path.abspath(os.fspath(workspace))
    if cow is not None:
        p["cow"] = bool(cow)
    if cwd is not None:
        p["cwd"] = cwd
    if env is not None:
        p["env"] = dict(env)
    if ttl is not None:
        p["ttlMs"] = ceil_ms(ttl, what="ttl")
    if idle_timeout is not None:
        p["idleTimeoutMs"] = ceil_ms(idle_timeout, what="idle_timeout")
    if options is not None:
        p["options"] = list(options)
    if pool is not None:
        p["pool"] = bool(pool)
    if label is not None:
        p["label"] = label
    if caller is True:
        p["caller"] = caller_of()
    elif caller:
        p["caller"] = dict(caller)
    if publish is not None:
        p["publish"] = [dict(x) if isinstance(x, Mapping) else x for x in publish]
    if secrets is not None:
        if isinstance(secrets, (str, Mapping)):
            secrets = [secrets]  # type: ignore[list-item]
        p["secrets"] = [secret_param(x) for x in secrets]
    if allow_http is not None:
        p["allowHttp"] = [allow_http] if isinstance(allow_http, str) else list(allow_http)
    if upstream_ca is not None:
        p["upstreamCa"] = os.path.abspath(os.fspath(upstream_ca))
    return p


_SECRET_RE = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)(?:=@([^:]+))?(?::(.+))?$")
_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def _value_from_file(path: str, name: str) -> str:
    try:
        with open(path, "r", encoding="utf-8") as f:
            v = f.read()
    except OSError as e:
        raise ValueError("secret %s: cannot read %s: %s" % (name, path, e.strerror)) from None
    if v.endswith("\n"):
        v = v[:-1]
    if v.endswith("\r"):
        v = v[:-1]
    return v


def secret_param(spec: Union[str, Mapping[str, Any]],
                 environ: Optional[Mapping[str, str]] = None) -> Dict[str, Any]:
    """One secret as session.create's {"name", "hosts", "value"}: the real
    value is read here, on the caller's side (``environ``, default
    os.environ, or the file), never by the server. Errors name the variable,
    never the value."""
    environ = os.environ if environ is None else environ
    value: Any = None
    file: Optional[str] = None
    if isinstance(spec, str):
        m = _SECRET_RE.match(spec)
        if not m:
            raise ValueError("secrets: %r is not NAME:HOST[,HOST...] or NAME=@FILE:HOST[,HOST...]"
                             % spec)
        name, file, hosts_s = m.group(1), m.group(2), m.group(3)
        hosts: Any = hosts_s.split(",") if hosts_s is not None else None
    elif isinstance(spec, Mapping):
        name = spec.get("name")
        hosts = spec.get("hosts")
        value = spec.get("value")
        file = spec.get("file")
        if isinstance(hosts, str):
            hosts = hosts.split(",")
        if not isinstance(name, str) or not _NAME_RE.match(name):
            raise ValueError("secrets: name must be a variable name")
    else:
        raise TypeError("secrets: each secret is a string NAME:HOSTS or a mapping "
                        "{name, hosts, value?, file?}")
    # No hosts: the value of a secret the session's profile names.
    if hosts is not None and (not isinstance(hosts, (list, tuple)) or not hosts or
                              not all(isinstance(h, str) and h for h in hosts)):
        raise ValueError("secret %s: hosts must be a non-empty list of host patterns" % name)
    if value is None:
        if file:
            value = _value_from_file(os.fspath(file), name)
        else:
            value = environ.get(name)
            if value is None:
                raise ValueError("secret %s: the variable %s is not set in this process's "
                                 "environment" % (name, name))
    if isinstance(value, (bytes, bytearray)):
        value = bytes(value).decode("utf-8")
    if not isinstance(value, str):
        raise TypeError("secret %s: value must be a string" % name)
    if not value:
        raise ValueError("secret %s: its value is empty" % name)
    out: Dict[str, Any] = {"name": name, "value": value}
    if hosts is not None:
        out["hosts"] = list(hosts)
    return out


def grant_params(fn: str, allow_net: Optional[str] = None, allow_http: Optional[str] = None,
                 secret: Union[str, Mapping[str, Any], None] = None,
                 ttl: Optional[float] = None) -> Dict[str, Any]:
    """session.grant / session.revoke parameters: exactly one of allow_net
    (a name or pattern), allow_http (an HTTP rule), secret (as in
    session_params' secrets); ``ttl`` in seconds (grant only)."""
    given = [(k, v) for k, v in (("allowNet", allow_net), ("allowHttp", allow_http),
                                 ("secret", secret)) if v is not None]
    if len(given) != 1:
        raise TypeError("%s: give exactly one of allow_net, allow_http, secret" % fn)
    kind, v = given[0]
    p: Dict[str, Any] = {"kind": kind}
    if kind != "secret":
        if not isinstance(v, str) or not v:
            raise TypeError("%s: %s must be a non-empty string" % (fn, kind))
        p["spec"] = v
    elif fn == "revoke":
        if isinstance(v, str):
            p["spec"] = re.sub(r"=@[^:]*", "", v, count=1)
        else:
            h = v.get("hosts")
            p["spec"] = v.get("name") if not h else "%s:%s" % (v.get("name"), h if isinstance(h, str) else ",".join(h))
    else:
        sp = secret_param(v)
        if "hosts" not in sp:
            raise TypeError("grant: secret %s: which hosts? (NAME:HOST[,HOST...])" % sp["name"])
        p["spec"] = "%s:%s" % (sp["name"], ",".join(sp["hosts"]))
        if "value" in sp:
            p["value"] = sp["value"]
    if ttl is not None:
        if fn != "grant":
            raise TypeError("revoke takes no ttl")
        p["ttlMs"] = ceil_ms(ttl, what="ttl")
    return p


def publish_params(port: int, host_port: Optional[int], any_uid: bool,
                   hosts: Optional[Sequence[str]] = None) -> Dict[str, Any]:
    """session.publish parameters (the session's id is added by the caller)."""
    p: Dict[str, Any] = {"port": port}
    if host_port is not None:
        p["hostPort"] = host_port
    if any_uid:
        p["anyUid"] = True
    if hosts is not None:
        if isinstance(hosts, str):
            raise TypeError("hosts must be a list of host names, not a string")
        p["hosts"] = list(hosts)
    return p


# The variables of the caller's environment fluebox reads to find its
# programs (docs/protocol.md, "caller"); nothing else is sent.
CALLER_ENV = frozenset({
    "HOME", "VIRTUAL_ENV", "PYENV_VERSION", "RUSTUP_HOME", "RUSTUP_TOOLCHAIN", "VOLTA_HOME",
    "ASDF_DEFAULT_TOOL_VERSIONS_FILENAME", "NODE_EXTRA_CA_CERTS", "SSL_CERT_FILE",
    "SSL_CERT_DIR", "REQUESTS_CA_BUNDLE", "CURL_CA_BUNDLE", "PIP_CERT", "GIT_SSL_CAINFO",
})


def caller_of(env: Optional[Mapping[str, str]] = None, cwd: Optional[str] = None) -> Dict[str, Any]:
    """This process's PATH, directory and the variables of CALLER_ENV: a
    session.create "caller" object."""
    env = os.environ if env is None else env
    e = {k: v for k, v in env.items()
         if k in CALLER_ENV or (k.startswith("ASDF_") and k.endswith("_VERSION") and len(k) > 13)}
    c: Dict[str, Any] = {"env": e, "cwd": cwd if cwd is not None else os.getcwd()}
    if "PATH" in env:
        c["path"] = env["PATH"]
    return c


def new_exec_id() -> str:
    return "p" + secrets.token_hex(8)


def exec_params(
    command: Command,
    *,
    cwd: Optional[str] = None,
    env: Optional[Mapping[str, str]] = None,
    stdin: Optional[Data] = None,
    timeout: Optional[float] = None,
    timeout_ms: Optional[float] = None,
    binary: bool = False,
    max_output_bytes: Optional[int] = None,
    exec_id: Optional[str] = None,
    stream: bool = False,
    stdin_open: bool = False,
    tty: Any = None,
) -> Dict[str, Any]:
    p: Dict[str, Any] = {}
    if isinstance(command, str):
        p["command"] = command
    else:
        argv = list(command)
        if not argv or not all(isinstance(a, str) for a in argv):
            raise TypeError("command must be a shell string or a non-empty sequence of strings")
        p["argv"] = argv
    if cwd is not None:
        p["cwd"] = cwd
    if env is not None:
        p["env"] = dict(env)
    if stdin is not None:
        if isinstance(stdin, str):
            p["stdin"] = stdin
        else:
            p["stdin"] = base64.b64encode(to_bytes(stdin)).decode("ascii")
            p["stdinEncoding"] = "base64"
    t = ceil_ms(timeout, timeout_ms)
    if t is not None:
        p["timeoutMs"] = t
    if max_output_bytes is not None:
        p["maxOutputBytes"] = int(max_output_bytes)
    p["encoding"] = "base64" if binary else "utf8"
    p["execId"] = exec_id or new_exec_id()
    if stream:
        p["stream"] = True
    if stdin_open:
        p["stdinOpen"] = True
    if tty:
        # True (24 x 80) or (rows, cols): a pseudo-terminal; stdin stays open.
        p["tty"] = True if tty is True else {"rows": int(tty[0]), "cols": int(tty[1])}
    return p


def write_params(exec_id: str, data: Data) -> Dict[str, Any]:
    """exec.write parameters: text as UTF-8, bytes as base64."""
    if isinstance(data, str):
        return {"execId": exec_id, "data": data}
    return {"execId": exec_id, "data": base64.b64encode(to_bytes(data)).decode("ascii"),
            "encoding": "base64"}


# What one exec.write carries at most (the server holds 4 MiB of stdin
# waiting per exec; a request is answered once its bytes are in the pipe).
STDIN_CHUNK = 256 * 1024


def diff_params(format: str, diffs: bool, paths) -> Dict[str, Any]:
    if format not in ("json", "patch"):
        raise ValueError('format must be "json" or "patch"')
    p: Dict[str, Any] = {"format": format}
    if format == "json" and not diffs:
        p["diffs"] = False
    if paths is not None:
        p["paths"] = [paths] if isinstance(paths, str) else list(paths)
    return p


def diff_result(r: Dict[str, Any]) -> Dict[str, Any]:
    if r.get("encoding") == "base64" and isinstance(r.get("patch"), str):
        r["patch"] = base64.b64decode(r["patch"])
    return r


def commit_params(paths, force: bool) -> Dict[str, Any]:
    p: Dict[str, Any] = {}
    if paths is not None:
        p["paths"] = [paths] if isinstance(paths, str) else list(paths)
    if force:
        p["force"] = True
    return p


def to_bytes(data: Data) -> bytes:
    if isinstance(data, str):
        return data.encode("utf-8")
    if isinstance(data, (bytes, bytearray, memoryview)):
        return bytes(data)
    raise TypeError("data must be str or bytes")


def write_requests(path: str, data: Data, *, parents: bool, mode, append: bool, exclusive: bool):
    """The file.write parameter sets for ``data`` (several for large data)."""
    base: Dict[str, Any] = {"path": path, "parents": bool(parents)}
    if mode is not None:
        base["mode"] = mode
    if exclusive:
        base["exclusive"] = True
    if isinstance(data, str) and len(data) <= WRITE_CHUNK // 3:
        return [dict(base, data=data, encoding="utf8", append=bool(append))]
    raw = to_bytes(data)
    out = []
    off = 0
    first = True
    while first or off < len(raw):
        chunk = raw[off : off + WRITE_CHUNK]
        req = dict(base, data=base64.b64encode(chunk).decode("ascii"), encoding="base64",
                   append=bool(append) or not first)
        if not first:
            req.pop("exclusive", None)
            req.pop("parents", None)
        out.append(req)
        off += len(chunk)
        first = False
    return out


def _errno_code(exc: BaseException) -> Optional[str]:
    return getattr(exc, "code", None)


def write_plan(path: str, data: Data, *, parents: bool, mode, append: bool, exclusive: bool):
    """A file write, all or nothing, as the requests it takes: a generator
    that yields (method, params), is sent each result (or thrown its error)
    and returns the bytes written. Data that fits one file.write goes in
    one (the server writes it whole or not at all). Larger data goes to a
    hidden file next to the target, in chunks, renamed over the target once
    all of it is there; when anything fails that file is removed and the
    target is as it was (or absent). An append is written in place (the
    server cuts a failed append back; only the last chunk's failure is
    undone for larger data), as are the cases the server writes in place
    (a directory the sandbox user may not write in, a file that is a mount
    point of its own)."""
    reqs = write_requests(path, data, parents=parents, mode=mode, append=append, exclusive=exclusive)
    if len(reqs) == 1 or append:
        written = 0
        for params in reqs:
            written += int((yield ("file.write", params)).get("bytesWritten", 0))
        return written
    # Where the data lands: the last component's symlinks followed, as the
    # server's own write does; the new file takes the old one's mode.
    target = path
    for _ in range(40):
        try:
            st = yield ("file.stat", {"path": target, "follow": False})
        except Exception as e:  # noqa: BLE001 - only "not there" is expected
            if _errno_code(e) not in ("ENOENT", "ENOTDIR"):
                raise
            break
        if st.get("type") == "symlink" and isinstance(st.get("target"), str):
            t = st["target"]
            target = t if t.startswith("/") else posixpath.join(posixpath.dirname(target), t)
            continue
        if mode is None and st.get("type") == "file" and isinstance(st.get("mode"), int):
            mode = st["mode"] & 0o7777
        break
    tmp = posixpath.join(posixpath.dirname(target), ".fluebox-write-%s.part" % secrets.token_hex(8))
    parts = write_requests(tmp, data, parents=parents, mode=mode, append=False, exclusive=True)
    written = 0
    try:
        written += int((yield ("file.write", parts[0])).get("bytesWritten", 0))
    except Exception as e:  # noqa: BLE001
        if _errno_code(e) != "EACCES":
            raise
        parts = None  # a directory the sandbox user may not write in
    if parts is None:
        for params in reqs:
            written += int((yield ("file.write", params)).get("bytesWritten", 0))
        return written
    try:
        for params in parts[1:]:
            written += int((yield ("file.write", params)).get("bytesWritten", 0))
        rename = {"from": tmp, "to": target}
        if exclusive:
            rename["overwrite"] = False
        yield ("file.rename", rename)
    except BaseException as e:
        try:
            yield ("file.rm", {"path": tmp, "force": True})
        except Exception:  # noqa: BLE001 - the first error is the one to report
            pass
        if _errno_code(e) != "EBUSY":
            raise
        written = 0  # a file that is a mount point of its own: in place
        for params in reqs:
            written += int((yield ("file.write", params)).get("bytesWritten", 0))
    return written


def run_plan(gen, call):
    """Drives a write_plan with call(method, params) -> result."""
    try:
        step = next(gen)
        while True:
            try:
                r = call(*step)
            except BaseException as e:  # noqa: BLE001 - handed to the plan
                step = gen.throw(e)
                continue
            step = gen.send(r)
    except StopIteration as stop:
        return stop.value


async def run_plan_async(gen, call):
    """run_plan for an async call(method, params)."""
    try:
        step = next(gen)
        while True:
            try:
                r = await call(*step)
            except BaseException as e:  # noqa: BLE001 - handed to the plan
                step = gen.throw(e)
                continue
            step = gen.send(r)
    except StopIteration as stop:
        return stop.value


def chunk_data(r: Mapping[str, Any], as_bytes: bool) -> Union[str, bytes]:
    d = r.get("data") or ""
    if as_bytes:
        return base64.b64decode(d)
    return d


# ---- finding and starting a server -----------------------------------------


def _private_dir_problem(p: str, uid: int) -> Optional[str]:
    """Why p is not a private directory of uid (None when it is): a directory,
    not a symlink, owned by uid, mode 0700 (nobody else may add a socket)."""
    try:
        st = os.lstat(p)
    except OSError as e:
        return "%s: %s" % (p, e.strerror)
    if not _stat.S_ISDIR(st.st_mode):
        return "%s is not a directory" % p
    if st.st_uid != uid:
        return "%s is owned by uid %d, not by you (uid %d)" % (p, st.st_uid, uid)
    if st.st_mode & 0o077:
        return "%s has mode %04o; it must be 0700" % (p, _stat.S_IMODE(st.st_mode))
    return None


def _outer_uid(uid: int) -> int:
    """uid's id one user namespace up (/proc/self/uid_map), as the server
    names its directories: uid 0 of an `unshare -r` namespace is not root."""
    try:
        with open("/proc/self/uid_map") as f:
            for line in f:
                parts = line.split()
                if len(parts) == 3:
                    inside, outside, count = (int(x) for x in parts)
                    if inside <= uid < inside + count:
                        return outside + (uid - inside)
    except (OSError, ValueError):
        pass
    return uid


def default_socket_path(env: Optional[Mapping[str, str]] = None) -> str:
    """The socket a client uses when none is given (docs/protocol.md, 1): in
    the user's private directory, the same rule as the server's. Raises
    UntrustedServer when the last choice, /tmp/fluebox-UID, exists but is not
    private (another user could have made it to catch the connection)."""
    env = os.environ if env is None else env
    if env.get("FLUEBOX_SOCKET"):
        return env["FLUEBOX_SOCKET"]
    uid = os.getuid()
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg and os.path.isabs(xdg) and _private_dir_problem(xdg, uid) is None:
        return os.path.join(xdg, "fluebox.sock")
    name = _outer_uid(uid)
    run = "/run/user/%d" % name
    if _private_dir_problem(run, uid) is None:
        return os.path.join(run, "fluebox.sock")
    d = "/tmp/fluebox-%d" % name
    if os.path.lexists(d):
        why = _private_dir_problem(d, uid)
        if why:
            raise UntrustedServer("refusing to use the socket in %s: %s" % (d, why), {"path": d})
    return os.path.join(d, "fluebox.sock")


def trusted_uids(server_uid: Optional[int] = None,
                 env: Optional[Mapping[str, str]] = None) -> List[int]:
    """Whose server a client talks to: the user's own, root's, and the one
    named by ``server_uid`` or FLUEBOX_SERVER_UID (a server another user
    opened to you)."""
    env = os.environ if env is None else env
    uids = [os.getuid(), 0]
    if server_uid is None and env.get("FLUEBOX_SERVER_UID"):
        try:
            server_uid = int(env["FLUEBOX_SERVER_UID"])
        except ValueError:
            raise ValueError("FLUEBOX_SERVER_UID must be a numeric uid, not %r"
                             % env["FLUEBOX_SERVER_UID"]) from None
    if server_uid is not None:
        if isinstance(server_uid, bool) or not isinstance(server_uid, int) or server_uid < 0:
            raise TypeError("server_uid must be a numeric uid, not %r" % (server_uid,))
        uids.append(server_uid)
    return uids


def check_socket_path(path: str, uids: Sequence[int]) -> None:
    """Before connecting: the socket file belongs to a trusted uid, and its
    directory too and nobody else can replace what is in it (not writable by
    group or others, unless sticky like /tmp)."""
    d = os.path.dirname(os.path.abspath(path)) or "/"
    try:
        dst = os.stat(d)
    except OSError:
        return  # connect() will say what is missing
    if dst.st_uid not in uids:
        raise UntrustedServer("refusing to connect to %s: its directory %s is owned by uid %d, "
                              "not by you (uid %d) or root%s" % (path, d, dst.st_uid, os.getuid(),
                                                                 _also(uids)), {"path": path})
    if dst.st_mode & 0o022 and not dst.st_mode & _stat.S_ISVTX:
        raise UntrustedServer("refusing to connect to %s: its directory %s has mode %04o (others "
                              "could replace the socket)" % (path, d, _stat.S_IMODE(dst.st_mode)),
                              {"path": path})
    try:
        st = os.lstat(path)
    except OSError:
        return
    if st.st_uid not in uids:
        raise UntrustedServer("refusing to connect to %s: the socket is owned by uid %d, not by "
                              "you (uid %d) or root%s" % (path, st.st_uid, os.getuid(), _also(uids)),
                              {"path": path})


def check_peer(sock: Any, path: str, uids: Sequence[int]) -> None:
    """After connecting: the process that listens is a trusted uid's
    (SO_PEERCRED: the credentials it had when it called listen)."""
    import socket as _socket
    import struct
    raw = sock.getsockopt(_socket.SOL_SOCKET, getattr(_socket, "SO_PEERCRED", 17),
                          struct.calcsize("3i"))
    _pid, uid, _gid = struct.unpack("3i", raw)
    if uid not in uids:
        raise UntrustedServer("refusing to talk to the server at %s: it runs as uid %d, not as you "
                              "(uid %d) or root%s" % (path, uid, os.getuid(), _also(uids)),
                              {"path": path, "uid": uid})


def _also(uids: Sequence[int]) -> str:
    extra = [u for u in uids[2:] if u not in uids[:2]]
    return (" or uid %d" % extra[0]) if extra else " (pass server_uid=N to trust another)"


# The binary a platform wheel carries (make dist puts it there): _bin/fluebox,
# with _bin/PLATFORM naming the machine it was built for ("linux-x86_64").
_BIN_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_bin")
_ELF_MACHINE = {"x86_64": 62, "aarch64": 183, "i686": 3, "armv7l": 40, "riscv64": 243,
                "s390x": 22, "ppc64le": 21}


def _elf_machine(path: str) -> int:
    """The ELF machine number of the file, or -1 when it is not ELF."""
    try:
        with open(path, "rb") as f:
            head = f.read(20)
    except OSError:
        return -1
    if len(head) < 20 or head[:4] != b"\x7fELF":
        return -1
    return int.from_bytes(head[18:20], "big" if head[5] == 2 else "little")


def bundled_binary() -> Optional[str]:
    """The binary this package carries, None when it carries none; raises
    BinaryNotFound (one line) when it carries one that cannot run here."""
    path = os.path.join(_BIN_DIR, "fluebox")
    if not os.path.exists(path):
        return None
    here = "%s-%s" % (sys.platform, os.uname().machine)
    if _elf_machine(path) == _ELF_MACHINE.get(os.uname().machine) and sys.platform == "linux":
        if os.access(path, os.X_OK):
            return path
        raise BinaryNotFound("the fluebox binary in this package (%s) is not executable: "
                             "reinstall the package, or set FLUEBOX_BIN" % path)
    raise BinaryNotFound("the fluebox binary in this package is for another machine and cannot "
                         "run on this one (%s): set FLUEBOX_BIN or put a fluebox built for it on "
                         "PATH (its `fluebox doctor` says what this machine offers)" % here)


def find_binary(binary: Optional[str] = None, env: Optional[Mapping[str, str]] = None) -> str:
    """The fluebox binary: ``binary``, FLUEBOX_BIN, the one this package
    carries (a wheel from make dist), or ``fluebox`` on PATH."""
    env = os.environ if env is None else env
    given = binary or env.get("FLUEBOX_BIN")
    if given:
        if os.path.isfile(given) and os.access(given, os.X_OK):
            return os.path.abspath(given)
        raise BinaryNotFound("fluebox binary not found: %s (from %s) is not an executable file"
                             % (given, "the binary argument" if binary else "FLUEBOX_BIN"))
    bundled = bundled_binary()
    if bundled:
        return bundled
    found = shutil.which("fluebox", path=env.get("PATH"))
    if found:
        return found
    raise BinaryNotFound("fluebox binary not found: neither the binary argument, FLUEBOX_BIN, "
                         "this package nor PATH holds a fluebox executable")


_spawner_lock = threading.Lock()
_spawner_queue: "Optional[queue.Queue[Any]]" = None


def _spawner_loop(q) -> None:
    while True:
        fn, args, kwargs, box, done = q.get()
        try:
            box.append((True, fn(*args, **kwargs)))
        except BaseException as e:  # handed back to the caller
            box.append((False, e))
        done.set()


def _spawn_from_lasting_thread(fn, *args, **kwargs):
    """Runs fn (subprocess.Popen) in a daemon thread that lives as long as
    the process. --exit-with-parent uses PR_SET_PDEATHSIG, which fires when
    the *thread* that forked the child exits: a client created in a
    short-lived worker thread must not lose its server when that thread ends."""
    global _spawner_queue
    with _spawner_lock:
        if _spawner_queue is None:
            _spawner_queue = queue.Queue()
            threading.Thread(target=_spawner_loop, args=(_spawner_queue,), name="fluebox-spawner",
                             daemon=True).start()
    box: List[Any] = []
    done = threading.Event()
    _spawner_queue.put((fn, args, kwargs, box, done))
    done.wait()
    ok, value = box[0]
    if not ok:
        raise value
    return value


class PrivateServerProcess:
    """A `fluebox serve` child on a socket in a fresh 0700 directory, started
    with --exit-with-parent (it shuts down cleanly when the thread that
    started it, or this process, dies), --remove-dir (it removes that
    directory, its log included, as it stops: nothing is left behind when
    this process is killed) and --ready-fd (it says when its socket
    listens). Also stopped by stop() and at interpreter exit."""

    def __init__(self, binary: Optional[str] = None, server_args: Sequence[str] = (),
                 env: Optional[Mapping[str, str]] = None):
        self.ready_fd = -1
        self.binary = find_binary(binary, env)
        self.dir = tempfile.mkdtemp(prefix="fluebox-client-")
        os.chmod(self.dir, 0o700)
        self.socket = os.path.join(self.dir, "fluebox.sock")
        self._stderr_path = os.path.join(self.dir, "server.log")
        self._stderr = open(self._stderr_path, "wb")
        rfd, wfd = os.pipe()
        try:
            self.proc = _spawn_from_lasting_thread(
                subprocess.Popen,
                [self.binary, "serve", "--socket", self.socket, "--exit-with-parent",
                 "--remove-dir", "--ready-fd", str(wfd)] + list(server_args),
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=self._stderr,
                env=dict(env) if env is not None else None,
                pass_fds=(wfd,),
            )
        except BaseException:
            os.close(rfd)
            os.close(wfd)
            self._cleanup()
            raise
        os.close(wfd)
        self.ready_fd = rfd  # reads "ready\n", or EOF if the server exits first
        _live.add(self)

    def read_ready(self, timeout: float) -> bool:
        """Waits for the server's "ready" line (blocking, with a timeout)."""
        import select

        buf = b""
        end = time.monotonic() + timeout
        try:
            while b"ready\n" not in buf:
                left = end - time.monotonic()
                if left <= 0:
                    return False
                r, _, _ = select.select([self.ready_fd], [], [], left)
                if not r:
                    return False
                chunk = os.read(self.ready_fd, 64)
                if not chunk:
                    return False
                buf += chunk
            return True
        finally:
            self.close_ready_fd()

    def close_ready_fd(self) -> None:
        if self.ready_fd >= 0:
            os.close(self.ready_fd)
            self.ready_fd = -1

    def failure(self, timeout: float) -> "FlueboxError":
        from .errors import ServerFailed

        if self.proc.poll() is None:
            why = "did not become ready within %.0f s" % timeout
            self.proc.kill()
            self.proc.wait()
        else:
            why = "exited (%s) before it was ready" % self.exit_description()
        tail = self.stderr_text()
        self._cleanup()
        # One line, and where to look: doctor says which kernel feature or
        # setting this machine lacks.
        return ServerFailed("fluebox serve (%s) %s%s (run `%s doctor` to see what this machine "
                            "lacks)" % (self.binary, why, ": " + tail if tail else "", self.binary))

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_text(self) -> str:
        try:
            with open(self._stderr_path, "rb") as f:
                lines = f.read()[-65536:].decode("utf-8", "replace").strip().splitlines()
            return " | ".join(lines[-5:])
        except OSError:
            return ""

    def exit_description(self) -> str:
        rc = self.proc.returncode
        if rc is None:
            return "running"
        return "signal %d" % -rc if rc < 0 else "exit code %d" % rc

    def stop(self, grace: float = 5.0) -> None:
        if self.proc.poll() is None:
            try:
                self.proc.terminate()
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(2)
            except OSError:
                pass
        self._cleanup()

    def _cleanup(self) -> None:
        _live.discard(self)
        self.close_ready_fd()
        try:
            self._stderr.close()
        except OSError:
            pass
        shutil.rmtree(self.dir, ignore_errors=True)


_live: "set[PrivateServerProcess]" = set()


def _stop_all_at_exit():
    for s in list(_live):
        try:
            if s.proc.poll() is None:
                s.proc.terminate()
        except OSError:
            pass


import atexit  # noqa: E402

atexit.register(_stop_all_at_exit)



def cut_reply_message(part: bytes) -> str:
    """What to say when the connection ends inside a reply line."""
    return ("connection to fluebox lost in the middle of a reply (%d bytes of it received)"
            % len(part))


def not_json_message(line: bytes, err: Exception) -> str:
    """What to say about a complete line that does not parse."""
    return ("the server sent a line that is not JSON (%d bytes, %s; it starts %r)"
            % (len(line), err, line[:40]))


def text_data(r: Mapping[str, Any]) -> str:
    """file.read's data as text, whichever encoding the server chose."""
    d = r.get("data") or ""
    if r.get("encoding") == "base64":
        return base64.b64decode(d).decode("utf-8", "replace")
    return d
