// fluebox — ESM entry. The implementation is the CommonJS one (index.cjs), so
// that ESM and CommonJS users share the same classes.
import cjs from './index.cjs';

export const {
  Fluebox,
  Session,
  ExecStream,
  FlueboxError,
  ConnectionError,
  UntrustedServerError,
  SandboxDiedError,
  SessionDeadError,
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
  defaultSocketPath,
  findBinary,
  version,
} = cjs;
export default cjs;
