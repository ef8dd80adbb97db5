"""fluebox — Python client for `fluebox serve`, a lightweight sandbox for AI
agents. Standard library only.

    from fluebox import Fluebox
    with Fluebox.connect() as fb, fb.session(profile="strict", memory="256M") as s:
        r = s.exec("python3 solution.py", timeout=10)
        print(r.exit_code, r.stdout)

The asyncio client is ``fluebox.aio.AsyncFluebox`` (also exported here).
``python3 -m fluebox run ...`` runs the fluebox binary itself.
"""

from ._common import DirEntry, ExecResult, OutputChunk, Stat, default_socket_path, find_binary
from .aio import AsyncExecStream, AsyncFluebox, AsyncSession
from .client import Cancelled, ExecStream, Fluebox, Session
from .errors import (
    BinaryNotFound,
    CommitError,
    ConnectionClosed,
    FileSystemError,
    FlueboxError,
    InvalidParams,
    LimitExceeded,
    NotFound,
    NotSupported,
    PermissionDenied,
    ProtocolError,
    SandboxDiedError,
    SandboxFailed,
    ServerFailed,
    SessionDead,
    ShuttingDown,
    TooLarge,
    UntrustedServer,
)

__version__ = "0.1.0"

__all__ = [
    "Fluebox",
    "Session",
    "ExecStream",
    "AsyncFluebox",
    "AsyncSession",
    "AsyncExecStream",
    "ExecResult",
    "OutputChunk",
    "Stat",
    "DirEntry",
    "Cancelled",
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
    "UntrustedServer",
    "ShuttingDown",
    "ProtocolError",
    "BinaryNotFound",
    "ServerFailed",
    "FileSystemError",
    "CommitError",
    "default_socket_path",
    "find_binary",
    "__version__",
]
