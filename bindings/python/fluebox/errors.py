"""Exceptions of the fluebox client.

Every error the server sends becomes a FlueboxError (or a subclass chosen by
its code) with ``code`` (the stable string of docs/protocol.md section 3),
``message`` and ``data`` (any further fields: ``param``, ``limit``,
``path``). Filesystem errors (codes like ``ENOENT``) are also OSErrors, so
``except FileNotFoundError`` works.
"""

import errno as _errno
from typing import Any, Dict, Optional

__all__ = [
    "FlueboxError",
    "ConnectionClosed",
    "SandboxDiedError",
    "SessionDead",
    "NotFound",
    "InvalidParams",
    "LimitExceeded",
    "PermissionDenied",
    "NotSupported",
    "SandboxFailed",
    "TooLarge",
    "ShuttingDown",
    "ProtocolError",
    "BinaryNotFound",
    "ServerFailed",
    "UntrustedServer",
    "FileSystemError",
    "CommitError",
    "from_wire",
]


class FlueboxError(Exception):
    """An error reported by the fluebox server (or by this client)."""

    def __init__(self, code: str, message: str, data: Optional[Dict[str, Any]] = None):
        Exception.__init__(self, message)
        self.code = code
        self.message = message
        self.data: Dict[str, Any] = dict(data or {})

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return "%s(%r, %r)" % (type(self).__name__, self.code, self.message)


class ConnectionClosed(FlueboxError):
    """The connection to the server failed or closed before the answer came."""

    def __init__(self, message: str, data: Optional[Dict[str, Any]] = None):
        FlueboxError.__init__(self, "connection_closed", message, data)


class SandboxDiedError(FlueboxError):
    """The session's sandbox died (destroyed, killed, or the server went away)
    while the call was in flight. ``code`` is the server's ``session_dead``;
    ``type`` is ``sandbox_died``."""

    type = "sandbox_died"

    def __init__(self, message: str, data: Optional[Dict[str, Any]] = None, code: str = "session_dead"):
        FlueboxError.__init__(self, code, message, data)


SessionDead = SandboxDiedError


def _simple(name: str, code: str, doc: str):
    def __init__(self, message: str, data: Optional[Dict[str, Any]] = None):
        FlueboxError.__init__(self, code, message, data)

    return type(name, (FlueboxError,), {"__init__": __init__, "__doc__": doc})


NotFound = _simple("NotFound", "not_found", "No such session for this uid, or no such running exec.")
InvalidParams = _simple("InvalidParams", "invalid_params", "A parameter is missing or invalid; data['param'] names it.")
LimitExceeded = _simple("LimitExceeded", "limit_exceeded", "A quota is reached; data['limit'] names it.")
PermissionDenied = _simple("PermissionDenied", "permission_denied", "A host path option from a uid other than the server's.")
NotSupported = _simple("NotSupported", "not_supported", "Known but not available in this server.")
SandboxFailed = _simple("SandboxFailed", "sandbox_failed", "The sandbox could not be created.")
TooLarge = _simple("TooLarge", "too_large", "A message or parameter exceeds its limit.")
ShuttingDown = _simple("ShuttingDown", "shutting_down", "The server is stopping; the request was not executed.")
BinaryNotFound = _simple("BinaryNotFound", "binary_not_found", "No fluebox binary to start a private server with.")
ServerFailed = _simple("ServerFailed", "server_failed", "A private fluebox server could not be started.")
UntrustedServer = _simple(
    "UntrustedServer", "untrusted_server",
    "The socket or the process behind it is not the user's (nor root's, nor the "
    "``server_uid`` given): another user could have planted it. Nothing was sent.")


class CommitError(FlueboxError):
    """workspace.commit did not apply everything: code ``commit_conflict``
    (nothing applied; ``conflicts`` lists {path, reason}) or
    ``commit_failed`` (``applied`` changes were made before an error).
    ``result`` is the server's result."""

    def __init__(self, result: Dict[str, Any]):
        conflicts = list(result.get("conflicts") or [])
        code = "commit_conflict" if conflicts and not result.get("error") else "commit_failed"
        FlueboxError.__init__(self, code, result.get("reason") or result.get("error")
                              or "the changes were not committed", {"result": result})
        self.conflicts = conflicts
        self.applied = int(result.get("applied") or 0)
        self.result = result


class ProtocolError(FlueboxError):
    """parse_error, invalid_request, method_not_found, internal, or an unknown
    code: the client and the server disagree, or the server has a bug."""


class FileSystemError(FlueboxError, OSError):
    """A file operation failed inside the sandbox; ``code`` is the errno name
    (``ENOENT``), ``errno`` its number and ``filename`` the path."""

    def __init__(self, code: str, message: str, data: Optional[Dict[str, Any]] = None):
        data = dict(data or {})
        OSError.__init__(self, getattr(_errno, code, 0), message, data.get("path"))
        self.code = code
        self.message = message
        self.data = data
        self.path = data.get("path")

    def __str__(self) -> str:
        return self.message

    def __reduce__(self):  # keep pickling (multiprocessing) working
        return (type(self), (self.code, self.message, self.data))


_FS_BUILTIN = {
    "ENOENT": FileNotFoundError,
    "EEXIST": FileExistsError,
    "EISDIR": IsADirectoryError,
    "ENOTDIR": NotADirectoryError,
    "EACCES": PermissionError,
    "EPERM": PermissionError,
    "EPIPE": BrokenPipeError,
}
_FS_CLASSES: Dict[str, type] = {}


def _fs_class(code: str) -> type:
    cls = _FS_CLASSES.get(code)
    if cls is None:
        base = _FS_BUILTIN.get(code)
        bases = (FileSystemError, base) if base else (FileSystemError,)
        cls = type("FileSystemError_" + code, bases, {})
        _FS_CLASSES[code] = cls
    return cls


_BY_CODE = {
    "not_found": NotFound,
    "invalid_params": InvalidParams,
    "limit_exceeded": LimitExceeded,
    "permission_denied": PermissionDenied,
    "not_supported": NotSupported,
    "sandbox_failed": SandboxFailed,
    "too_large": TooLarge,
    "shutting_down": ShuttingDown,
}


def from_wire(err: Any) -> FlueboxError:
    """Builds the exception for a server ``error`` object."""
    if not isinstance(err, dict):
        return ProtocolError("internal", "malformed error from server: %r" % (err,))
    code = err.get("code") if isinstance(err.get("code"), str) else "internal"
    message = err.get("message") if isinstance(err.get("message"), str) else code
    data = {k: v for k, v in err.items() if k not in ("code", "message")}
    if code == "session_dead":
        return SandboxDiedError(message, data)
    if code.startswith("E") and code[1:].replace("_", "").isalnum() and code.upper() == code:
        return _fs_class(code)(code, message, data)
    cls = _BY_CODE.get(code)
    if cls is not None:
        return cls(message, data)
    return ProtocolError(code, message, data)
