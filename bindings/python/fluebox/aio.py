"""The asyncio fluebox client: the same calls as the synchronous one, as
coroutines.

    import asyncio
    from fluebox.aio import AsyncFluebox

    async def main():
        async with await AsyncFluebox.connect() as fb:
            async with fb.session(profile="strict") as s:
                r = await s.exec("echo hi")
                async for chunk in s.stream("for i in 1 2 3; do echo $i; sleep 0.1; done"):
                    print(chunk.stream, chunk.data)

    asyncio.run(main())

Cancelling a task that awaits ``exec`` (``task.cancel()``,
``asyncio.wait_for``) kills the command in the sandbox.
"""

import asyncio
import itertools
import json
from typing import Any, AsyncIterator, Callable, Dict, Generator, List, Mapping, Optional, Sequence, Union

from . import _common as C
from ._common import Command, Data, DirEntry, ExecResult, OutputChunk, Stat
from .errors import (CommitError, ConnectionClosed, FlueboxError, ProtocolError, SandboxDiedError,
                     TooLarge, from_wire)

__all__ = ["AsyncFluebox", "AsyncSession", "AsyncExecStream"]

STREAM_HIGH = 8 * 1024 * 1024
STREAM_LOW = 1024 * 1024
LINE_LIMIT = 64 * 1024 * 1024  # above the server's 16 MiB message limit


class _Pending:
    __slots__ = ("future", "on_event", "flow")

    def __init__(self, future, on_event, flow):
        self.future = future
        self.on_event = on_event
        self.flow = flow


class _AsyncConnection:
    def __init__(self, path: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter):
        self.path = path
        self._reader = reader
        self._writer = writer
        self._ids = itertools.count(1)
        self._pending: Dict[int, _Pending] = {}
        self._wlock = asyncio.Lock()
        self._flow_open = asyncio.Event()
        self._flow_open.set()
        self._closed = False
        self._close_error: Optional[FlueboxError] = None
        self.unmatched_errors: List[FlueboxError] = []
        self.max_message_bytes = C.DEFAULT_MAX_MESSAGE
        self._task = asyncio.ensure_future(self._read_loop())

    @classmethod
    async def open(cls, path: str, connect_timeout: float = 10.0,
                   server_uid: Optional[int] = None) -> "_AsyncConnection":
        uids = C.trusted_uids(server_uid)
        C.check_socket_path(path, uids)
        try:
            reader, writer = await asyncio.wait_for(
                asyncio.open_unix_connection(path, limit=LINE_LIMIT), connect_timeout)
        except (OSError, asyncio.TimeoutError) as e:
            raise ConnectionClosed("cannot connect to fluebox at %s: %s"
                                   % (path, getattr(e, "strerror", None) or e or "timed out")) from e
        try:
            C.check_peer(writer.get_extra_info("socket"), path, uids)
        except BaseException:
            writer.close()
            raise
        return cls(path, reader, writer)

    @property
    def closed(self) -> bool:
        return self._closed

    def send(self, method: str, params: Mapping[str, Any], on_event=None, flow=None):
        """Queues a request; returns (id, future)."""
        if self._closed:
            raise self._close_error or ConnectionClosed("connection to fluebox closed")
        rid = next(self._ids)
        fut = asyncio.get_event_loop().create_future()
        text = json.dumps({"id": rid, "method": method, "params": dict(params)},
                          ensure_ascii=False, separators=(",", ":")) + "\n"
        bad = C.check_line(text, self.max_message_bytes)
        if bad is not None:
            fut.set_exception(bad)
            return rid, fut
        self._pending[rid] = _Pending(fut, on_event, flow)
        self._writer.write(text.encode("utf-8"))
        self.reflow()
        asyncio.ensure_future(self._drain())
        return rid, fut

    async def _drain(self) -> None:
        try:
            async with self._wlock:
                await self._writer.drain()
        except (OSError, RuntimeError) as e:
            self._shutdown(ConnectionClosed("connection to fluebox lost: %s" % e))

    async def request(self, method: str, params: Mapping[str, Any], on_event=None) -> Dict[str, Any]:
        _, fut = self.send(method, params, on_event)
        return await fut

    def reflow(self) -> None:
        pause = bool(self._pending) and all(p.flow is not None and p.flow() for p in self._pending.values())
        if pause:
            self._flow_open.clear()
        else:
            self._flow_open.set()

    async def _read_loop(self) -> None:
        err: FlueboxError = ConnectionClosed("connection to fluebox closed")
        try:
            while True:
                await self._flow_open.wait()
                line = await self._reader.readline()
                if not line:
                    break
                if not line.endswith(b"\n"):
                    err = ConnectionClosed(C.cut_reply_message(line))
                    break
                self._on_line(line)
        except asyncio.CancelledError:
            err = ConnectionClosed("connection closed by the client")
        except (OSError, ValueError, asyncio.LimitOverrunError) as e:
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
        p = self._pending.get(rid)
        if p is None:
            return
        if "event" in msg:
            if p.on_event is not None:
                try:
                    p.on_event(msg)
                except Exception:
                    pass
            if p.flow is not None:
                self.reflow()
            return
        del self._pending[rid]
        self.reflow()
        if p.future.done():
            return
        if msg.get("error") is not None:
            p.future.set_exception(from_wire(msg["error"]))
        else:
            r = msg.get("result")
            p.future.set_result(r if isinstance(r, dict) else {})

    def _shutdown(self, err: FlueboxError) -> None:
        if self._closed:
            return
        self._closed = True
        self._close_error = err
        pending = list(self._pending.values())
        self._pending.clear()
        self._flow_open.set()
        for p in pending:
            if not p.future.done():
                p.future.set_exception(err)
                # Mark retrieved: nobody may be waiting on it any more.
                p.future.exception()
        try:
            self._writer.close()
        except (OSError, RuntimeError):
            pass

    async def close(self) -> None:
        self._shutdown(ConnectionClosed("connection closed by the client"))
        if not self._task.done():
            self._task.cancel()
        try:
            await self._task
        except (asyncio.CancelledError, Exception):
            pass
        try:
            await self._writer.wait_closed()
        except (OSError, RuntimeError, AttributeError):
            pass


class AsyncFluebox:
    """An asyncio connection to a fluebox server. Use ``await AsyncFluebox.connect()``."""

    def __init__(self, conn: _AsyncConnection, server: Optional[C.PrivateServerProcess] = None):
        self._conn = conn
        self._server = server
        self.socket = conn.path

    @classmethod
    async def connect(
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
    ) -> "AsyncFluebox":
        """As Fluebox.connect: a given socket, else the default one if a server
        listens there, else a private server that stops with this client; the
        same checks of whose server it is (``server_uid``)."""
        if socket:
            return cls(await _AsyncConnection.open(socket, connect_timeout, server_uid))
        if not private:
            try:
                return cls(await _AsyncConnection.open(C.default_socket_path(), connect_timeout,
                                                       server_uid))
            except ConnectionClosed:
                if not auto_start:
                    raise
        srv = C.PrivateServerProcess(binary, server_args)
        loop = asyncio.get_event_loop()
        if not await loop.run_in_executor(None, srv.read_ready, start_timeout):
            raise await loop.run_in_executor(None, srv.failure, start_timeout)
        try:
            return cls(await _AsyncConnection.open(srv.socket, connect_timeout), srv)
        except BaseException:
            await loop.run_in_executor(None, srv.stop)
            raise

    @property
    def closed(self) -> bool:
        return self._conn.closed

    @property
    def server_pid(self) -> Optional[int]:
        return self._server.pid if self._server else None

    async def close(self) -> None:
        await self._conn.close()
        if self._server is not None:
            await asyncio.get_event_loop().run_in_executor(None, self._server.stop)

    async def __aenter__(self) -> "AsyncFluebox":
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    async def request(self, method: str, params: Optional[Mapping[str, Any]] = None,
                      on_event: Optional[Callable[[Dict[str, Any]], None]] = None) -> Dict[str, Any]:
        return await self._conn.request(method, params or {}, on_event)

    async def server_info(self) -> Dict[str, Any]:
        info = await self.request("server.info")
        limit = (info.get("limits") or {}).get("maxMessageBytes")
        if isinstance(limit, int) and limit > 0:
            self._conn.max_message_bytes = limit
        return info

    async def create_session(self, profile: Optional[str] = None, **options: Any) -> "AsyncSession":
        info = await self.request("session.create", C.session_params(profile, **options))
        return AsyncSession(self, info["session"], info)

    def session(self, profile: Optional[str] = None, **options: Any) -> "_SessionContext":
        """``async with fb.session(...) as s`` (destroyed at the end), or
        ``s = await fb.session(...)``."""
        return _SessionContext(self, profile, options)

    def attach(self, session_id: str) -> "AsyncSession":
        return AsyncSession(self, session_id, None)

    async def list_sessions(self, label: Optional[str] = None) -> List[Dict[str, Any]]:
        params = {"label": label} if label is not None else {}
        return list((await self.request("session.list", params)).get("sessions") or [])


class _SessionContext:
    def __init__(self, fb: AsyncFluebox, profile, options):
        self._fb = fb
        self._profile = profile
        self._options = options
        self._session: Optional[AsyncSession] = None

    def __await__(self) -> Generator[Any, None, "AsyncSession"]:
        return self._fb.create_session(self._profile, **self._options).__await__()

    async def __aenter__(self) -> "AsyncSession":
        self._session = await self._fb.create_session(self._profile, **self._options)
        return self._session

    async def __aexit__(self, *exc) -> None:
        if self._session is not None:
            try:
                await self._session.destroy()
            except FlueboxError:
                pass


class AsyncSession:
    """One sandbox (asyncio). ``async with`` destroys it at the end."""

    def __init__(self, fb: AsyncFluebox, session_id: str, info: Optional[Dict[str, Any]]):
        self.fluebox = fb
        self.id = session_id
        self.create_info = info
        self.dead = False

    def __repr__(self) -> str:
        return "<fluebox.AsyncSession %s%s>" % (self.id, " dead" if self.dead else "")

    @property
    def cwd(self) -> str:
        return (self.create_info or {}).get("cwd") or "/workspace"

    def _send(self, method: str, params: Mapping[str, Any], on_event=None, flow=None):
        return self.fluebox._conn.send(method, dict(params, session=self.id), on_event, flow)

    async def _await(self, fut):
        try:
            return await fut
        except SandboxDiedError:
            self.dead = True
            raise

    async def _req(self, method: str, **params: Any) -> Dict[str, Any]:
        _, fut = self._send(method, params)
        return await self._await(fut)

    async def __aenter__(self) -> "AsyncSession":
        return self

    async def __aexit__(self, *exc) -> None:
        try:
            await self.destroy()
        except FlueboxError:
            pass

    async def info(self) -> Dict[str, Any]:
        return await self._req("session.info")

    async def destroy(self) -> None:
        await self._req("session.destroy")
        self.dead = True

    async def exec(
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
    ) -> ExecResult:
        """As Session.exec. Cancelling the awaiting task kills the command."""
        params = C.exec_params(command, cwd=cwd, env=env, stdin=stdin, timeout=timeout,
                               timeout_ms=timeout_ms, binary=binary,
                               max_output_bytes=max_output_bytes, exec_id=exec_id)
        _, fut = self._send("exec", params)
        try:
            r = await self._await(asyncio.shield(fut))
        except asyncio.CancelledError:
            self._kill_quietly(params["execId"])
            fut.add_done_callback(_consume)
            raise
        return ExecResult.from_wire(r, binary)

    def stream(self, command: Command, **kwargs: Any) -> "AsyncExecStream":
        """``async for chunk in s.stream(cmd)``; then ``await st.result()``."""
        return AsyncExecStream(self, command, **kwargs)

    async def kill(self, exec_id: str, signal: Union[str, int, None] = None) -> None:
        params: Dict[str, Any] = {"execId": exec_id}
        if signal is not None:
            params["signal"] = signal
        await self._req("exec.kill", **params)

    def _kill_quietly(self, exec_id: str) -> None:
        try:
            _, fut = self._send("exec.kill", {"execId": exec_id})
            fut.add_done_callback(_consume)
        except FlueboxError:
            pass

    async def read_file(self, path: str, *, offset: int = 0, length: Optional[int] = None) -> str:
        params: Dict[str, Any] = {"path": path, "encoding": "utf8"}
        if offset:
            params["offset"] = offset
        if length is not None:
            params["length"] = length
        r = await self._req("file.read", **params)
        if r.get("eof", True) or length is not None:
            return C.text_data(r)
        return (await self.read_bytes(path, offset=offset)).decode("utf-8", "replace")

    async def read_bytes(self, path: str, *, offset: int = 0, length: Optional[int] = None) -> bytes:
        parts: List[bytes] = []
        remaining = length
        while True:
            params: Dict[str, Any] = {"path": path, "encoding": "base64", "offset": offset}
            if remaining is not None:
                params["length"] = remaining
            try:
                r = await self._req("file.read", **params)
            except TooLarge:
                if remaining is None:
                    raise
                del params["length"]
                r = await self._req("file.read", **params)
            chunk = C.chunk_data(r, True)
            parts.append(chunk)
            offset += len(chunk)
            if remaining is not None:
                remaining -= len(chunk)
            if r.get("eof", True) or not chunk or (remaining is not None and remaining <= 0):
                break
        return parts[0] if len(parts) == 1 else b"".join(parts)

    async def write_file(self, path: str, data: Data, *, parents: bool = True,
                         mode: Union[int, str, None] = None, append: bool = False,
                         exclusive: bool = False) -> int:
        plan = C.write_plan(path, data, parents=parents, mode=mode, append=append, exclusive=exclusive)
        return await C.run_plan_async(plan, lambda method, params: self._req(method, **params))

    async def stat(self, path: str, *, follow: bool = True) -> Stat:
        params: Dict[str, Any] = {"path": path}
        if not follow:
            params["follow"] = False
        return Stat.from_wire(await self._req("file.stat", **params))

    async def lstat(self, path: str) -> Stat:
        return await self.stat(path, follow=False)

    async def listdir(self, path: str = ".") -> List[str]:
        return [e.name for e in await self.readdir(path)]

    async def readdir(self, path: str = ".") -> List[DirEntry]:
        r = await self._req("file.readdir", path=path)
        return [DirEntry(e.get("name", ""), e.get("type", "unknown")) for e in r.get("entries") or []]

    async def exists(self, path: str, *, follow: bool = True) -> bool:
        params: Dict[str, Any] = {"path": path}
        if not follow:
            params["follow"] = False
        return bool((await self._req("file.exists", **params)).get("exists"))

    async def mkdir(self, path: str, *, parents: bool = False, mode: Union[int, str, None] = None) -> bool:
        params: Dict[str, Any] = {"path": path}
        if parents:
            params["recursive"] = True
        if mode is not None:
            params["mode"] = mode
        return bool((await self._req("file.mkdir", **params)).get("created"))

    async def rm(self, path: str, *, recursive: bool = False, force: bool = False) -> bool:
        params: Dict[str, Any] = {"path": path}
        if recursive:
            params["recursive"] = True
        if force:
            params["force"] = True
        return bool((await self._req("file.rm", **params)).get("removed"))

    async def rename(self, src: str, dst: str, *, overwrite: bool = True) -> None:
        params: Dict[str, Any] = {"from": src, "to": dst}
        if not overwrite:
            params["overwrite"] = False
        await self._req("file.rename", **params)

    async def diff(self, *, format: str = "json", diffs: bool = True,
                   paths: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """As Session.diff."""
        return C.diff_result(await self._req("workspace.diff", **C.diff_params(format, diffs, paths)))

    async def commit(self, *, paths: Optional[Sequence[str]] = None, force: bool = False) -> Dict[str, Any]:
        """As Session.commit (raises CommitError unless everything was applied)."""
        r = await self._req("workspace.commit", **C.commit_params(paths, force))
        if r.get("committed") is False:
            raise CommitError(r)
        return r

    async def reset(self) -> Dict[str, Any]:
        return await self._req("workspace.reset")

    async def publish(self, port: int, *, host_port: Optional[int] = None,
                      any_uid: bool = False,
                      hosts: Optional[Sequence[str]] = None) -> Dict[str, Any]:
        """As Session.publish."""
        return await self._req("session.publish",
                               **C.publish_params(port, host_port, any_uid, hosts))

    async def unpublish(self, port: int) -> None:
        await self._req("session.unpublish", port=port)

    async def fork(self, *, label: Optional[str] = None) -> "AsyncSession":
        """As Session.fork."""
        info = await self._req("session.fork", **({"label": label} if label is not None else {}))
        return AsyncSession(self.fluebox, info["session"], info)

    async def grant(self, *, allow_net: Optional[str] = None, allow_http: Optional[str] = None,
                    secret: Union[str, Mapping[str, Any], None] = None,
                    ttl: Optional[float] = None) -> Dict[str, Any]:
        """As Session.grant."""
        return await self._req("session.grant", **C.grant_params("grant", allow_net, allow_http,
                                                                  secret, ttl))

    async def revoke(self, *, allow_net: Optional[str] = None, allow_http: Optional[str] = None,
                     secret: Union[str, Mapping[str, Any], None] = None) -> Dict[str, Any]:
        """As Session.revoke."""
        return await self._req("session.revoke", **C.grant_params("revoke", allow_net,
                                                                   allow_http, secret))

    async def snapshot(self, name: str) -> Dict[str, Any]:
        return await self._req("session.snapshot", name=name)

    async def restore(self, name: str) -> Dict[str, Any]:
        return await self._req("session.restore", name=name)


def _consume(fut: "asyncio.Future[Any]") -> None:
    if not fut.cancelled():
        fut.exception()


class AsyncExecStream:
    """A running, streamed command (asyncio)."""

    def __init__(self, session: AsyncSession, command: Command, *, binary: bool = False, **kwargs: Any):
        self.session = session
        self._binary = binary
        params = C.exec_params(command, binary=binary, stream=True, **kwargs)
        self.exec_id: str = params["execId"]
        self.pid: Optional[int] = None
        self._q: "asyncio.Queue[Any]" = asyncio.Queue()
        self._queued = 0
        self._high = False
        self._iterating = False
        self._started = asyncio.get_event_loop().create_future()
        _, self._fut = session._send("exec", params, self._on_event, self._wants_pause)
        self._fut.add_done_callback(self._on_done)

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
            if not self._started.done():
                self._started.set_result(self.pid)
        elif ev in ("stdout", "stderr"):
            data = C.chunk_data(msg, self._binary)
            self._queued += len(data)
            self._q.put_nowait(OutputChunk(ev, data))

    def _on_done(self, fut) -> None:
        if not self._started.done():
            self._started.set_result(None)
        self._q.put_nowait(None)

    async def started(self) -> Optional[int]:
        """Waits for the command to start; returns its pid inside the sandbox."""
        return await self._started

    async def kill(self, signal: Union[str, int, None] = None) -> None:
        await self.session.kill(self.exec_id, signal)

    async def write(self, data: Data) -> int:
        """As ExecStream.write (started with stdin_open=True)."""
        n = 0
        view = data if isinstance(data, str) else memoryview(C.to_bytes(data))
        step = C.STDIN_CHUNK if not isinstance(data, str) else C.STDIN_CHUNK // 4
        for i in range(0, len(view), step):
            part = view[i:i + step]
            await self.session._req("exec.write", **C.write_params(self.exec_id, part if isinstance(part, str) else bytes(part)))
            n += len(part)
        return n

    async def close_stdin(self) -> None:
        await self.session._req("exec.closeStdin", execId=self.exec_id)

    async def resize(self, rows: int, cols: int) -> None:
        await self.session._req("exec.resize", execId=self.exec_id, rows=rows, cols=cols)

    async def __aiter__(self) -> AsyncIterator[OutputChunk]:
        self._iterating = True
        finished = False
        try:
            while True:
                item = await self._q.get()
                if item is None:
                    finished = True
                    self._q.put_nowait(None)  # later iterations end at once
                    exc = self._fut.exception() if not self._fut.cancelled() else None
                    if exc is not None:
                        if isinstance(exc, SandboxDiedError):
                            self.session.dead = True
                        raise exc
                    return
                self._queued -= len(item.data)
                self.session.fluebox._conn.reflow()
                yield item
        finally:
            self._iterating = False
            if not self.session.fluebox._conn.closed:
                self.session.fluebox._conn.reflow()
            if not finished and not self._fut.done():
                self.session._kill_quietly(self.exec_id)

    async def result(self) -> ExecResult:
        """Waits for the exit. Cancelling the waiting task kills the command."""
        try:
            r = await self.session._await(asyncio.shield(self._fut))
        except asyncio.CancelledError:
            self.session._kill_quietly(self.exec_id)
            raise
        return ExecResult.from_wire(r, self._binary)

    async def collect(self) -> ExecResult:
        out: List[Any] = []
        err: List[Any] = []
        async for c in self:
            (out if c.stream == "stdout" else err).append(c.data)
        r = await self.result()
        join = (lambda a: b"".join(a)) if self._binary else (lambda a: "".join(a))
        r.stdout, r.stderr = join(out), join(err)
        return r
