'use strict';
// errors.cjs — the error classes of the fluebox client.
//
// Every error the server sends ({"code", "message", ...}) becomes an instance
// of FlueboxError (or a subclass picked by its code) carrying `code` and any
// extra fields the server added (`param`, `limit`, `path`). Filesystem errors
// keep the errno name in `code` (ENOENT, EISDIR, ...), as Node's fs does.

const os = require('node:os');

class FlueboxError extends Error {
  /**
   * @param {string} code     stable error code (protocol section 3)
   * @param {string} message  one line for humans
   * @param {object} [extra]  further fields of the server's error object
   */
  constructor(code, message, extra) {
    super(message);
    this.name = 'FlueboxError';
    this.code = code;
    if (extra) {
      for (const [k, v] of Object.entries(extra)) {
        if (k !== 'code' && k !== 'message' && !(k in this)) this[k] = v;
      }
    }
  }
}

/** The connection to the server failed or closed before an answer came. */
class ConnectionError extends FlueboxError {
  constructor(message, cause) {
    super('connection_closed', message);
    this.name = 'ConnectionError';
    if (cause !== undefined) this.cause = cause;
  }
}

/** The socket, its directory or the server behind it is not the user's (nor
 * root's, nor the `serverUid` given): another user could have planted it.
 * Nothing was sent. */
class UntrustedServerError extends FlueboxError {
  constructor(message, extra) { super('untrusted_server', message, extra); this.name = 'UntrustedServerError'; }
}

/** The session's sandbox died (its init was killed, it was destroyed, or the
 * server went away) while the call was in flight. `code` is the server's
 * `session_dead` (or `connection_closed`); `type` is `sandbox_died`, the name
 * the Flue framework uses for this condition. */
class SandboxDiedError extends FlueboxError {
  constructor(message, extra) {
    super((extra && extra.code) || 'session_dead', message, extra);
    this.name = 'SandboxDiedError';
    this.type = 'sandbox_died';
  }
}

class NotFoundError extends FlueboxError {
  constructor(message, extra) { super('not_found', message, extra); this.name = 'NotFoundError'; }
}
class InvalidParamsError extends FlueboxError {
  constructor(message, extra) { super('invalid_params', message, extra); this.name = 'InvalidParamsError'; }
}
class LimitExceededError extends FlueboxError {
  constructor(message, extra) { super('limit_exceeded', message, extra); this.name = 'LimitExceededError'; }
}
class PermissionDeniedError extends FlueboxError {
  constructor(message, extra) { super('permission_denied', message, extra); this.name = 'PermissionDeniedError'; }
}
class NotSupportedError extends FlueboxError {
  constructor(message, extra) { super('not_supported', message, extra); this.name = 'NotSupportedError'; }
}
class SandboxFailedError extends FlueboxError {
  constructor(message, extra) { super('sandbox_failed', message, extra); this.name = 'SandboxFailedError'; }
}
class TooLargeError extends FlueboxError {
  constructor(message, extra) { super('too_large', message, extra); this.name = 'TooLargeError'; }
}
class ShuttingDownError extends FlueboxError {
  constructor(message, extra) { super('shutting_down', message, extra); this.name = 'ShuttingDownError'; }
}
/** parse_error, invalid_request, method_not_found, internal: the client and
 * the server disagree about the protocol, or the server has a bug. */
class ProtocolError extends FlueboxError {
  constructor(code, message, extra) { super(code, message, extra); this.name = 'ProtocolError'; }
}

/** A file operation failed inside the sandbox; `code` is the errno name. */
class FileSystemError extends FlueboxError {
  constructor(code, message, extra) {
    super(code, message, extra);
    this.name = 'FileSystemError';
    const n = os.constants.errno[code];
    if (typeof n === 'number') this.errno = -n;
  }
}

/** workspace.commit applied nothing (conflicts) or stopped half way. The
 * server's result is in `result`; `conflicts` lists { path, reason }. */
class CommitError extends FlueboxError {
  constructor(result) {
    const conflicts = Array.isArray(result.conflicts) ? result.conflicts : [];
    super(conflicts.length && !result.error ? 'commit_conflict' : 'commit_failed',
      result.reason || result.error || 'the changes were not committed');
    this.name = 'CommitError';
    this.conflicts = conflicts;
    this.applied = result.applied || 0;
    this.result = result;
  }
}

const BY_CODE = {
  not_found: NotFoundError,
  invalid_params: InvalidParamsError,
  limit_exceeded: LimitExceededError,
  permission_denied: PermissionDeniedError,
  not_supported: NotSupportedError,
  sandbox_failed: SandboxFailedError,
  too_large: TooLargeError,
  shutting_down: ShuttingDownError,
};

/** Builds the error object for a server error payload. */
function fromWire(err) {
  const code = err && typeof err.code === 'string' ? err.code : 'internal';
  const message = err && typeof err.message === 'string' ? err.message : code;
  const extra = {};
  if (err && typeof err === 'object') {
    for (const [k, v] of Object.entries(err)) if (k !== 'code' && k !== 'message') extra[k] = v;
  }
  if (code === 'session_dead') return new SandboxDiedError(message, { ...extra, code });
  if (/^E[A-Z0-9]+$/.test(code)) return new FileSystemError(code, message, extra);
  const Cls = BY_CODE[code];
  if (Cls) return new Cls(message, extra);
  return new ProtocolError(code, message, extra);
}

/** The error a call rejects with when its AbortSignal fires: a DOMException
 * named AbortError whose `cause` is the signal's reason. */
function abortError(signal, what) {
  const reason = signal && signal.reason;
  const e = new DOMException(`${what || 'operation'} was aborted`, 'AbortError');
  if (reason !== undefined) {
    try { Object.defineProperty(e, 'cause', { value: reason, configurable: true, writable: true }); } catch { /* ignore */ }
  }
  return e;
}

module.exports = {
  FlueboxError,
  ConnectionError,
  UntrustedServerError,
  SandboxDiedError,
  SessionDeadError: SandboxDiedError,
  NotFoundError,
  InvalidParamsError,
  LimitExceededError,
  PermissionDeniedError,
  NotSupportedError,
  SandboxFailedError,
  TooLargeError,
  ShuttingDownError,
  ProtocolError,
  FileSystemError,
  CommitError,
  fromWire,
  abortError,
};
