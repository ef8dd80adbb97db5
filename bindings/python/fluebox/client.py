"""The synchronous fluebox client.

One Fluebox object holds one Unix-socket connection to `fluebox serve`.
Requests are pipelined: a reader thread routes each response (and each
streamed exec's output) to the caller waiting for it, so a Fluebox object can
be shared by many threads (for example 20 sessions driven in parallel from a
ThreadPoolExecutor).

    from fluebox import Fluebox
    with Fluebox.connect() as fb, fb.session(profile="strict", memory="256M") as s:
        r = s.exec("python3 -c 'print(6*7)'", timeout=10)
        print(r.exit_code, r.stdout)
"""

import itertools
import json
import queue
import socket as _socket
import threading
import time
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from . import _common as C
from ._common import Command, Data, DirEntry, ExecResult, OutputChunk, Stat
from .errors import (CommitError, ConnectionClosed, FlueboxError, ProtocolError, SandboxDiedError,
                     TooLarge, from_wire)

__all__ = ["Fluebox", "Session", "ExecStream", "Cancelled"]

STREAM_HIGH = 8 * 1024 * 1024
STREAM_LOW = 1024 * 1024


class Cancelled(FlueboxError):
    """A command was cancelled by its ``cancel`` event; it has been killed."""

    def __init__(self, message: str = "exec was cancelled", data: Optional[Dict[str, Any]] = None):
        FlueboxError.__init__(self, "cancelled", message, data)


class _Pending:
    __slots__ = ("done", "result", "error", "on_event", "flow")

    def __init__(self, on_event, flow):
        self.done = threading.Event()
        self.result: Any = None
        self.error: Optional[BaseException] = None
        self.on_event = on_event
        self.flow = flow


class _Connection:
    """A socket, a reader thread, and the table of pending requests."""

    def __init__(self, path: str, connect_timeout: float = 10.0, server_uid: Optional[int] = None):
        uids = C.trusted_uids(server_uid)
        C.check_socket_path(path, uids)
        s = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
        s.settimeout(connect_timeout)
        try:
            s.connect(path)
            C.check_peer(s, path, uids)
        except OSError as e:
            s.close()
            raise ConnectionClosed("cannot connect to fluebox at %s: %s" % (path, e.strerror or e),
                                   {"errno": e.errno}) from e
        except BaseException:
            s.close()
            raise
        s.settimeout(None)
        self.path = path
        self._sock = s
        self._rfile = s.makefile("rb", buffering=1 << 16)
        self._ids = itertools.count(1)
        self._pending: Dict[int, _Pending] = {}
        self._lock = threading.Lock()  # pending table
        self._wlock = threading.Lock()  # socket writes
        self._flow = threading.Condition(self._lock)
        self._closed = False
        self._close_error: Optional[FlueboxError] = None
        self.unmatched_errors: List[FlueboxError] = []
        self.max_message_bytes = C.DEFAULT_MAX_MESSAGE
        self._reader = threading.Thread(target=self._read_loop, name="fluebox-reader", daemon=True)
        self._reader.start()

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, method: str, params: Mapping[str, Any], on_event=None, flow=None):
        rid = next(self._ids)
        p = _Pending(on_event, flow)
        text = json.dumps({"id": rid, "method": method, "params": dict(params)},
                          ensure_ascii=False, separators=(",", ":")) + "\n"
        bad = C.check_line(text, self.max_message_bytes)
        if bad is not None:
            p.error = bad
            p.done.set()
            return rid, p
        line = text.encode("utf-8")
        with self._lock:
            if self._closed:
                raise self._close_error or ConnectionClosed("connection to fluebox closed")
            self._pending[rid] = p
            self._flow.notify_all()
        try:
            with self._wlock:
                self._sock.sendall(line)
        except OSError as e:
            self._shutdown(ConnectionClosed("connection to fluebox lost: %s" % e))
        return rid, p

    def wait(self, p: _Pending, cancel: Optional[threading.Event] = None, on_cancel=None):
        if cancel is None:
            p.done.wait()
        else:
            while not p.done.wait(0.05):
                if cancel.is_set():
                    if on_cancel:
                        on_cancel()
                    raise Cancelled()
        if p.error is not None:
            raise p.error
        return p.result

    def request(self, method: str, params: Mapping[str, Any], on_event=None):
        _, p = self.send(method, params, on_event)
        return self.wait(p)

    def reflow(self) -> None:
        with self._lock:
            self._flow.notify_all()

    def _should_pause(self) -> bool:  # with _lock held
        if not self._pending:
            return False
        return all(p.flow is not None and p.flow() for p in self._pending.values())

    def _read_loop(self) -> None:
        err: FlueboxError = ConnectionClosed("connection to fluebox closed")
        try:
            while True:
                with self._lock:
                    while self._should_pause() and not self._closed:
                        self._flow.wait(0.5)
                    if self._closed:
                        return
                line = self._rfile.readline()
                if not line:
                    break
                if not line.endswith(b"\n"):
                    err = ConnectionClosed(C.cut_reply_message(line))
                    break
                self._on_line(line)
        except (OSError, ValueError) as e:
            if not self._closed:
                err = ConnectionClosed("connection to fluebox lost: %s" % e)
        self._shutdown(err)

    def _on_line(self, line: bytes) -> None:
        line = line.strip()
        if not line:
            return
        try:
            msg = json.loads(line)
        except ValueError as e:
            self._shutdown(ProtocolError("parse_error", C.not_json_message(line, e)))
            return
        if not isinstance(msg, dict):
            return
        rid = msg.get("id")
        if rid is None:
            e = from_wire(msg.get("error"))
            if e.code in ("limit_exceeded", "shutting_down"):
                self._shutdown(e)
            else:
                self.unmatched_errors.append(e)
            return
        with self._lock:
            p = self._pending.get(rid)
            if p is None:
                return
            if "event" in msg:
                pass
            else:
                del self._pending[rid]
        if "event" in msg:
            if p.on_event is not None:
                try:
                    p.on_event(msg)
                except Exception:  # a consumer's bug must not kill the reader
                    pass
            return
        if "error" in msg and msg["error"] is not None:
            p.error = from_wire(msg["error"])
        else:
            r = msg.get("result")
            p.result = r if isinstance(r, dict) else {}
        p.done.set()

    def _shutdown(self, err: FlueboxError) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
            self._close_error = err
            pending = list(self._pending.values())
            self._pending.clear()
            self._flow.notify_all()
        for p in pending:
            p.error = err
            p.done.set()
        try:
            self._sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass

    def close(self) -> None:
        self._shutdown(ConnectionClosed("connection closed by the client"))
        if threading.current_thread() is not self._reader:
            self._reader.join(2)
        try:
            self._rfile.close()
        except OSError:
            pass
        self._sock.close()


class Fluebox:
    """A connection to a fluebox server. Use ``Fluebox.connect()``."""

    def __init__(self, conn: _Connection, server: Optional[C.PrivateServerProcess] = None):
        self._conn = conn
        self._server = server
        self.socket = conn.path

    @classmethod
    def connect(
        cls,
        socket: Optional[str] = None,
        *,
        binary: Optional[str] = None,
        private: bool = False,
        auto_start: bool = True,
        server_args: Sequence[str] = (),
        start_timeout: float = 20.0,
        connect_timeout: float = 10.0,
        server_uid: Optional[int] = None,
    ) -> "Fluebox":
        """Connects to ``socket``; or, without it, to the default socket if a
        server listens there, else starts a private ``fluebox serve`` (binary
        from ``binary``, FLUEBOX_BIN or PATH) that stops with this client.

        The server must run as this user or root, or as ``server_uid`` (or
        FLUEBOX_SERVER_UID) when another user runs it for you; its socket and
        the directory it is in must belong to one of them. Otherwise
        UntrustedServer, before anything is sent."""
        if socket:
            return cls(_Connection(socket, connect_timeout, server_uid))
        if not private:
            try:
                return cls(_Connection(C.default_socket_path(), connect_timeout, server_uid))
            except ConnectionClosed:
                if not auto_start:
                    raise
        srv = C.PrivateServerProcess(binary, server_args)
        if not srv.read_ready(start_timeout):
            raise srv.failure(start_timeout)
        try:
            return cls(_Connection(srv.socket, connect_timeout), srv)
        except BaseException:
            srv.stop()
            raise

    # -- lifecycle --

    @property
    def closed(self) -> bool:
        return self._conn.closed

    @property
    def server_pid(self) -> Optional[int]:
        """The pid of the private server this client started, or None."""
        return self._server.pid if self._server else None

    def close(self) -> None:
        """Closes the connection, and stops the private server if this client
        started one (which destroys its sessions)."""
        self._conn.close()
        if self._server is not None:
            self._server.stop()

    def __enter__(self) -> "Fluebox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    # -- requests --

    def request(self, method: str, params: Optional[Mapping[str, Any]] = None,
                on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        """Sends any protocol request and returns its result."""
        return self._conn.request(method, params or {}, on_event)

    def server_info(self) -> Dict[str, Any]:
        info = self.request("server.info")
        limit = (info.get("limits") or {}).get("maxMessageBytes")
        if isinstance(limit, int) and limit > 0:
            self._conn.max_message_bytes = limit
        return info

    def create_session(self, profile: Optional[str] = None, **options: Any) -> "Session":
        """Creates a session. Keyword arguments: memory, cpus, pids, disk,
        nofile, fsize, timeout (default per exec, seconds), limits, network,
        allow_net, workspace, cow, cwd, env, ttl, idle_timeout (seconds),
        options (extra `fluebox run` flags), pool, label, publish (ports to
        publish at once), caller (whose python3/node/npm exec finds: this
        process's by default), secrets, allow_http, upstream_ca (credentials
        that never enter: docs/secrets.md)."""
        info = self.request("session.create", C.session_params(profile, **options))
        return Session(self, info["session"], info)

    def session(self, profile: Optional[str] = None, **options: Any) -> "Session":
        """Like create_session; as a context manager the session is destroyed
        at the end of the block."""
        return self.create_session(profile, **options)

    def attach(self, session_id: str) -> "Session":
        """A handle on an existing session (no request is made)."""
        return Session(self, session_id, None)

    def list_sessions(self, label: Optional[str] = None) -> List[Dict[str, Any]]:
        """The caller's sessions (info objects), oldest first; ``label``
        keeps those with exactly that label."""
        params = {"label": label} if label is not None else {}
        return list(self.request("session.list", params).get("sessions") or [])


class Session:
    """One sandbox. A context manager: leaving the block destroys it."""

    def __init__(self, fb: Fluebox, session_id: str, info: Optional[Dict[str, Any]]):
        self.fluebox = fb
        self.id = session_id
        self.create_info = info
        self.dead = False

    def __repr__(self) -> str:
        return "<fluebox.Session %s%s>" % (self.id, " dead" if self.dead else "")

    @property
    def cwd(self) -> str:
        return (self.create_info or {}).get("cwd") or "/workspace"

    def _send(self, method: str, params: Mapping[str, Any], on_event=None, flow=None):
        return self.fluebox._conn.send(method, dict(params, session=self.id), on_event, flow)

    def _wait(self, p, cancel=None, on_cancel=None):
        try:
            return self.fluebox._conn.wait(p, cancel, on_cancel)
        except SandboxDiedError:
            self.dead = True
            raise

    def _req(self, method: str, **params: Any) -> Dict[str, Any]:
        _, p = self._send(method, params)
        return self._wait(p)

    def __enter__(self) -> "Session":
        return self

    def __exit__(self, *exc) -> None:
        try:
            self.destroy()
        except FlueboxError:
            pass

    def info(self) -> Dict[str, Any]:
        return self._req("session.info")

    def destroy(self) -> None:
        self._req("session.destroy")
        self.dead = True

    # -- commands --

    def exec(
        self,
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
        cancel: Optional[threading.Event] = None,
    ) -> ExecResult:
        """Runs a command (a shell string, or an argv list) and returns its
        ExecResult whatever the exit code. ``timeout`` is in seconds (rounded
        up to whole ms); when it expires the command is killed and
        ``exit_code`` is 124. ``binary=True`` returns bytes. Setting the
        ``cancel`` event (or Ctrl-C) kills the command: Cancelled (or
        KeyboardInterrupt) is raised."""
        params = C.exec_params(command, cwd=cwd, env=env, stdin=stdin, timeout=timeout,
                               timeout_ms=timeout_ms, binary=binary,
                               max_output_bytes=max_output_bytes, exec_id=exec_id)
        if cancel is not None and cancel.is_set():
            raise Cancelled()
        _, p = self._send("exec", params)
        kill = lambda: self._kill_quietly(params["execId"])  # noqa: E731
        try:
            r = self._wait(p, cancel, kill)
        except KeyboardInterrupt:
            kill()
            raise
        return ExecResult.from_wire(r, binary)

    def stream(self, command: Command, **kwargs: Any) -> "ExecStream":
        """Runs a command and streams its output: iterate over the returned
        ExecStream for OutputChunk(stream, data) as it comes, then read
        ``.result``. Leaving the loop early (break) kills the command."""
        return ExecStream(self, command, **kwargs)

    def kill(self, exec_id: str, signal: Union[str, int, None] = None) -> None:
        """Sends a signal (default SIGKILL) to a running exec's process group."""
        params: Dict[str, Any] = {"execId": exec_id}
        if signal is not None:
            params["signal"] = signal
        self._req("exec.kill", **params)

    def _kill_quietly(self, exec_id: str) -> None:
        try:
            self._send("exec.kill", {"execId": exec_id})
        except FlueboxError:
            pass

    # -- files --

    def read_file(self, path: str, *, offset: int = 0, length: Optional[int] = None) -> str:
        """Reads a text file (UTF-8; invalid bytes become U+FFFD)."""
        params: Dict[str, Any] = {"path": path, "encoding": "utf8"}
        if offset:
            params["offset"] = offset
        if length is not None:
            params["length"] = length
        r = self._req("file.read", **params)
        if r.get("eof", True) or length is not None:
            return C.text_data(r)
        return self.read_bytes(path, offset=offset).decode("utf-8", "replace")

    def read_bytes(self, path: str, *, offset: int = 0, length: Optional[int] = None) -> bytes:
        """Reads a file's bytes (in several requests when it is large)."""
        parts: List[bytes] = []
        remaining = length
        while True:
            params: Dict[str, Any] = {"path": path, "encoding": "base64", "offset": offset}
            if remaining is not None:
                params["length"] = remaining
            try:
                r = self._req("file.read", **params)
            except TooLarge:
                if remaining is None:
                    raise
                del params["length"]
                r = self._req("file.read", **params)
            chunk = C.chunk_data(r, True)
            parts.append(chunk)
            offset += len(chunk)
            if remaining is not None:
                remaining -= len(chunk)
            if r.get("eof", True) or not chunk or (remaining is not None and remaining <= 0):
                break
        return parts[0] if len(parts) == 1 else b"".join(parts)

    def write_file(self, path: str, data: Data, *, parents: bool = True, mode: Union[int, str, None] = None,
                   append: bool = False, exclusive: bool = False) -> int:
        """Writes text or bytes; creates missing parent directories unless
        ``parents=False``. Returns the number of bytes written."""
        plan = C.write_plan(path, data, parents=parents, mode=mode, append=append, exclusive=exclusive)
        return C.run_plan(plan, lambda method, params: self._req(method, **params))

    def stat(self, path: str, *, follow: bool = True) -> Stat:
        params: Dict[str, Any] = {"path": path}
        if not follow:
            params["follow"] = False
        return Stat.from_wire(self._req("file.stat", **params))

    def lstat(self, path: str) -> Stat:
        return self.stat(path, follow=False)

    def listdir(self, path: str = ".") -> List[str]:
        """Entry names, sorted, without . and .."""
        return [e.name for e in self.readdir(path)]

    def readdir(self, path: str = ".") -> List[DirEntry]:
        r = self._req("file.readdir", path=path)
        return [DirEntry(e.get("name", ""), e.get("type", "unknown")) for e in r.get("entries") or []]

    def exists(self, path: str, *, follow: bool = True) -> bool:
        params: Dict[str, Any] = {"path": path}
        if not follow:
            params["follow"] = False
        return bool(self._req("file.exists", **params).get("exists"))

    def mkdir(self, path: str, *, parents: bool = False, mode: Union[int, str, None] = None) -> bool:
        """Creates a directory (``parents=True``: and missing parents, and no
        error if it exists). Returns whether it was created."""
        params: Dict[str, Any] = {"path": path}
        if parents:
            params["recursive"] = True
        if mode is not None:
            params["mode"] = mode
        return bool(self._req("file.mkdir", **params).get("created"))

    def rm(self, path: str, *, recursive: bool = False, force: bool = False) -> bool:
        params: Dict[str, Any] = {"path": path}
        if recursive:
            params["recursive"] = True
        if force:
            params["force"] = True
        return bool(self._req("file.rm", **params).get("removed"))

    def rename(self, src: str, dst: str, *, overwrite: bool = True) -> None:
        params: Dict[str, Any] = {"from": src, "to": dst}
        if not overwrite:
            params["overwrite"] = False
        self._req("file.rename", **params)

    # -- copy-on-write workspaces (session created with cow=True) --

    def diff(self, *, format: str = "json", diffs: bool = True,
             paths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """The changes made in the sandbox relative to the host workspace
        (sessions created with ``cow=True``). ``format="json"``: the server's
        {changes, counts, skipped, upper_full}; ``format="patch"``:
        {"patch": str (bytes if not UTF-8), ...} that ``git apply`` accepts."""
        return C.diff_result(self._req("workspace.diff", **C.diff_params(format, diffs, paths)))

    def commit(self, *, paths: Optional[Sequence[str]] = None, force: bool = False) -> Dict[str, Any]:
        """Applies the changes (all, or ``paths``) to the host directory.
        Raises CommitError (``conflicts``; nothing applied) unless every
        selected change was applied; ``force=True`` applies despite conflicts."""
        r = self._req("workspace.commit", **C.commit_params(paths, force))
        if r.get("committed") is False:
            raise CommitError(r)
        return r

    def reset(self) -> Dict[str, Any]:
        """Discards the changes: /workspace shows the host directory again."""
        return self._req("workspace.reset")

    # -- published ports, fork and snapshots (docs/protocol.md 4.17, 4.18) --

    def publish(self, port: int, *, host_port: Optional[int] = None,
                any_uid: bool = False,
                hosts: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """Makes a server started inside on ``port`` reachable from the host:
        returns {"port", "hostPort", "host": "127.0.0.1", "url", "anyUid",
        "hosts"}. Only this uid may connect unless ``any_uid``; ``host_port``:
        a given host port instead of a free one; ``hosts`` (e.g.
        ["localhost"]): relay only HTTP requests whose Host names one of them
        (against DNS rebinding, docs/server.md)."""
        return self._req("session.publish",
                         **C.publish_params(port, host_port, any_uid, hosts))

    def unpublish(self, port: int) -> None:
        """Closes the host listener of ``port`` and the connections it relays."""
        self._req("session.unpublish", port=port)

    def fork(self, *, label: Optional[str] = None) -> "Session":
        """A new session whose workspace layer, home and /tmp start as copies
        of this one's (running processes are not copied). Its create_info
        has "forkedFrom" and "copyMs". ``label``: the new session's (default:
        this one's)."""
        info = self._req("session.fork", **({"label": label} if label is not None else {}))
        return Session(self.fluebox, info["session"], info)

    # -- run-time network rules (docs/protocol.md 4.20, docs/secrets.md) --

    def grant(self, *, allow_net: Optional[str] = None, allow_http: Optional[str] = None,
              secret: Union[str, Mapping[str, Any], None] = None,
              ttl: Optional[float] = None) -> Dict[str, Any]:
        """Adds to the running session's network rules (its owner only;
        nothing inside the session can): exactly one of ``allow_net`` (a
        name or pattern), ``allow_http`` (an HTTP rule), ``secret`` (as in
        create_session's secrets: the value is read here). ``ttl``: seconds
        until it lapses. Returns {"kind", "spec", "ttlMs", "expiresAt",
        "standin"?}: a secret new to the session gets a stand-in there (the
        session's environment was made at its start)."""
        return self._req("session.grant", **C.grant_params("grant", allow_net, allow_http,
                                                            secret, ttl))

    def revoke(self, *, allow_net: Optional[str] = None, allow_http: Optional[str] = None,
               secret: Union[str, Mapping[str, Any], None] = None) -> Dict[str, Any]:
        """Takes back a grant (or a rule the session was created with)."""
        return self._req("session.revoke", **C.grant_params("revoke", allow_net, allow_http,
                                                             secret))

    def snapshot(self, name: str) -> Dict[str, Any]:
        """Saves the copy-on-write layer (sessions created with ``cow=True``)
        as ``name``: {"name", "bytes", "entries", "createdAt", "copyMs"}."""
        return self._req("session.snapshot", name=name)

    def restore(self, name: str) -> Dict[str, Any]:
        """Puts /workspace back as it was at snapshot ``name``."""
        return self._req("session.restore", name=name)


class StdinWriter:
    """The stdin of a streamed command started with ``stdin_open=True``, as
    a file: ``write(str|bytes)`` returns once the sandbox's pipe took it,
    ``close()`` sends end-of-file. Usable with ``print(..., file=w)``."""

    def __init__(self, stream: "ExecStream"):
        self._stream = stream
        self.closed = False

    def writable(self) -> bool:
        return True

    def write(self, data: Data) -> int:
        if self.closed:
            raise ValueError("write to a closed stdin")
        return self._stream.write(data)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        pass  # every write is in the pipe when it returns

    def close(self) -> None:
        if not self.closed:
            self.closed = True
            self._stream.close_stdin()

    def __enter__(self) -> "StdinWriter":
        return self

    def __exit__(self, *exc) -> None:
        self.close()


class ExecStream:
    """A running, streamed command. Iterate for OutputChunk objects; then
    ``.result`` (or ``.wait()``) gives the ExecResult (with empty stdout and
    stderr: the output was delivered as chunks)."""

    def __init__(self, session: Session, command: Command, *, binary: bool = False,
                 cancel: Optional[threading.Event] = None, **kwargs: Any):
        self.session = session
        self._binary = binary
        self._cancel = cancel
        params = C.exec_params(command, binary=binary, stream=True, **kwargs)
        self.exec_id: str = params["execId"]
        self.pid: Optional[int] = None
        self._q: "queue.Queue[Any]" = queue.Queue()
        self._queued = 0
        self._high = False
        self._iterating = False
        self._qlock = threading.Lock()
        self.started = threading.Event()
        _, self._p = session._send("exec", params, self._on_event, self._wants_pause)
        self._watch = threading.Thread(target=self._watch_done, daemon=True)
        self._watch.start()

    def _wants_pause(self) -> bool:
        if not self._iterating:
            return False
        if self._queued > STREAM_HIGH:
            self._high = True
        elif self._queued < STREAM_LOW:
            self._high = False
        return self._high

    def _on_event(self, msg: Dict[str, Any]) -> None:
        ev = msg.get("event")
        if ev == "start":
            self.pid = msg.get("pid")
            self.started.set()
        elif ev in ("stdout", "stderr"):
            data = C.chunk_data(msg, self._binary)
            with self._qlock:
                self._queued += len(data)
            self._q.put(OutputChunk(ev, data))

    def _watch_done(self) -> None:
        self._p.done.wait()
        self.started.set()
        self._q.put(None)

    def kill(self, signal: Union[str, int, None] = None) -> None:
        self.session.kill(self.exec_id, signal)

    # -- streaming stdin (started with stdin_open=True) --

    def write(self, data: Data) -> int:
        """Feeds ``data`` (str: UTF-8, or bytes) to the command's stdin;
        returns once the sandbox's pipe has taken it (a command that does
        not read holds the writer up). Raises FileSystemError (EPIPE) when
        the command's stdin is closed."""
        n = 0
        view = data if isinstance(data, str) else memoryview(C.to_bytes(data))
        step = C.STDIN_CHUNK if not isinstance(data, str) else C.STDIN_CHUNK // 4
        for i in range(0, len(view), step):
            part = view[i:i + step]
            self.session._req("exec.write", **C.write_params(self.exec_id, part if isinstance(part, str) else bytes(part)))
            n += len(part)
        return n

    def close_stdin(self) -> None:
        """End of input: the command reads EOF once what was written is read."""
        self.session._req("exec.closeStdin", execId=self.exec_id)

    def resize(self, rows: int, cols: int) -> None:
        """A command started with ``tty``: its terminal's new size (the
        command gets SIGWINCH)."""
        self.session._req("exec.resize", execId=self.exec_id, rows=rows, cols=cols)

    @property
    def stdin(self) -> "StdinWriter":
        """A file-like object (write, flush, close) over write/close_stdin."""
        return StdinWriter(self)

    def __iter__(self) -> Iterator[OutputChunk]:
        self._iterating = True
        finished = False
        try:
            while True:
                try:
                    item = self._q.get(timeout=0.05 if self._cancel is not None else None)
                except queue.Empty:
                    if self._cancel is not None and self._cancel.is_set():
                        self.session._kill_quietly(self.exec_id)
                        raise Cancelled()
                    continue
                if item is None:
                    finished = True
                    if self._p.error is not None:
                        if isinstance(self._p.error, SandboxDiedError):
                            self.session.dead = True
                        raise self._p.error
                    return
                with self._qlock:
                    self._queued -= len(item.data)
                self.session.fluebox._conn.reflow()
                yield item
        finally:
            self._iterating = False
            self.session.fluebox._conn.reflow()
            if not finished and not self._p.done.is_set():
                self.session._kill_quietly(self.exec_id)

    def wait(self) -> ExecResult:
        r = self.session._wait(self._p, self._cancel, lambda: self.session._kill_quietly(self.exec_id))
        return ExecResult.from_wire(r, self._binary)

    @property
    def result(self) -> ExecResult:
        return self.wait()

    def collect(self) -> ExecResult:
        """Consumes the remaining output and returns the ExecResult with it."""
        out: List[Any] = []
        err: List[Any] = []
        for c in self:
            (out if c.stream == "stdout" else err).append(c.data)
        r = self.wait()
        join = (lambda a: b"".join(a)) if self._binary else (lambda a: "".join(a))
        r.stdout, r.stderr = join(out), join(err)
        return r
