'use strict';
// fluebox — Node.js client for `fluebox serve` (docs/protocol.md).
// CommonJS entry; index.mjs re-exports the same objects for ESM, so classes
// (and `instanceof` checks on errors) are shared between the two.
const client = require('./lib/client.cjs');
const errors = require('./lib/errors.cjs');
const server = require('./lib/server.cjs');
const { version } = require('./package.json');

module.exports = {
  Fluebox: client.Fluebox,
  Session: client.Session,
  ExecStream: client.ExecStream,
  FlueboxError: errors.FlueboxError,
  ConnectionError: errors.ConnectionError,
  UntrustedServerError: errors.UntrustedServerError,
  SandboxDiedError: errors.SandboxDiedError,
  SessionDeadError: errors.SessionDeadError,
  NotFoundError: errors.NotFoundError,
  InvalidParamsError: errors.InvalidParamsError,
  LimitExceededError: errors.LimitExceededError,
  PermissionDeniedError: errors.PermissionDeniedError,
  NotSupportedError: errors.NotSupportedError,
  SandboxFailedError: errors.SandboxFailedError,
  TooLargeError: errors.TooLargeError,
  ShuttingDownError: errors.ShuttingDownError,
  ProtocolError: errors.ProtocolError,
  FileSystemError: errors.FileSystemError,
  CommitError: errors.CommitError,
  defaultSocketPath: server.defaultSocketPath,
  findBinary: server.findBinary,
  version,
};
