// Type declarations for `fluebox/flue`: fluebox as the sandbox of a Flue
// agent. The types are structural copies of Flue's SandboxFactory / Sandbox
// surface, so nothing here depends on @flue/runtime, and the factory is
// assignable wherever Flue expects a SandboxFactory.

/// <reference types="node" />

import type { Fluebox, GrantResult, GrantSpec, Limits, PublishedPort, Session, SessionOptions, SnapshotResult } from './index.js';
import { FlueboxError, SandboxDiedError } from './index.js';

export interface ShellResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export interface FileStat {
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink?: boolean;
  size?: number;
  mtime?: Date;
}

export interface FlueExecOptions {
  cwd?: string;
  env?: Record<string, string>;
  timeoutMs?: number;
  signal?: AbortSignal;
}

/** Flue's Sandbox surface. */
export interface FlueSandbox {
  exec(command: string, options?: FlueExecOptions): Promise<ShellResult>;
  readFile(path: string): Promise<string>;
  readFileBuffer(path: string): Promise<Uint8Array>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  stat(path: string): Promise<FileStat>;
  readdir(path: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void>;
  cwd: string;
  resolvePath(p: string): string;
}

/** Flue's SandboxFactory surface. */
export interface FlueSandboxFactory {
  createSandbox(options: { id: string }): Promise<FlueSandbox>;
  /** @deprecated Flue's former name for createSandbox. */
  createSessionEnv(options: { id: string }): Promise<FlueSandbox>;
}

export interface FlueboxFlueOptions extends Limits {
  /** Use this client instead of a shared one. */
  client?: Fluebox;
  /** Connect to this socket (else the default socket, else a private server). */
  socket?: string;
  /** The fluebox binary for a private server (else FLUEBOX_BIN, else PATH). */
  binary?: string;
  /** Always use a private server. */
  private?: boolean;
  serverArgs?: string[];
  /** Also trust a server of this uid (see ConnectOptions.serverUid). */
  serverUid?: number;
  /**
   * The host directory bound at /workspace: a path (every id shares it), a
   * function of the id, or null for a tmpfs that does not outlive the session.
   * Default: a directory per id under `workspaceRoot`.
   */
  workspace?: string | ((id: string) => string | null) | null | false;
  /** Where per-id workspaces live (default $XDG_STATE_HOME/fluebox/flue). */
  workspaceRoot?: string;
  /** The sandbox's working directory (default "/workspace"). */
  cwd?: string;
  /** The shell that runs commands: default /bin/bash when present, else /bin/sh. */
  shell?: string | null;
  /** Reuse a running session over the same workspace (default true). */
  reuse?: boolean;
  profile?: SessionOptions['profile'];
  limits?: Limits;
  network?: SessionOptions['network'];
  allowNet?: string[];
  env?: Record<string, string>;
  ttlMs?: number;
  idleTimeoutMs?: number;
  options?: string[];
  pool?: boolean;
  /** Credentials that never enter the sandbox: see SessionOptions.secrets and docs/secrets.md. */
  secrets?: SessionOptions['secrets'];
  allowHttp?: SessionOptions['allowHttp'];
  upstreamCa?: string;
}

/** The sandbox object: Flue's surface plus a few fluebox properties. */
export declare class FlueboxSandbox implements FlueSandbox {
  /** The Flue instance id. */
  readonly id: string;
  /** The host directory bound at /workspace, or null. */
  readonly workspace: string | null;
  /** The current fluebox session (replaced after the sandbox dies). */
  readonly session: Session | null;
  /** The session label ("flue:" + id + options hash) used to find it again. */
  readonly label: string;
  cwd: string;
  resolvePath(p: string): string;
  exec(command: string, options?: FlueExecOptions): Promise<ShellResult>;
  readFile(path: string): Promise<string>;
  readFileBuffer(path: string): Promise<Uint8Array>;
  writeFile(path: string, content: string | Uint8Array): Promise<void>;
  stat(path: string): Promise<FileStat>;
  readdir(path: string): Promise<string[]>;
  exists(path: string): Promise<boolean>;
  mkdir(path: string, options?: { recursive?: boolean }): Promise<void>;
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<void>;
  /** Beyond Flue's verbs: reach a server started inside on `port` from the host. */
  publish(port: number, options?: { anyUid?: boolean; hosts?: string[] }): Promise<PublishedPort>;
  unpublish(port: number): Promise<void>;
  /** Adds a name, an HTTP rule or a secret binding while it runs (the agent inside cannot). */
  grant(what: GrantSpec, options?: { ttlMs?: number }): Promise<GrantResult>;
  revoke(what: GrantSpec): Promise<{ kind: string; spec: string }>;
  /** A second sandbox starting from copies of this one's files (no processes). */
  fork(options?: { id?: string }): Promise<FlueboxSandbox>;
  /** Copy-on-write sandboxes: save and restore the workspace layer. */
  snapshot(name: string): Promise<SnapshotResult>;
  restore(name: string): Promise<{ name: string; restored: true; copyMs: number }>;
}

/** Refused before anything changed: type "sandbox_operation_unsupported". */
export declare class SandboxOperationUnsupportedError extends FlueboxError {
  readonly type: 'sandbox_operation_unsupported';
  readonly details: string;
  readonly dev: string;
  readonly meta: { operation: string; provider: 'fluebox'; options: string[] };
}

export { SandboxDiedError } from './index.js';

/** The Flue sandbox factory: `useSandbox(fluebox({ ... }), { cwd })`. */
export declare function fluebox(options?: FlueboxFlueOptions): FlueSandboxFactory;

/** Closes the clients (and private servers) shared by every factory of this
 * process. Flue never calls it; applications and tests may. */
export declare function closeAll(): Promise<void>;

declare const _default: {
  fluebox: typeof fluebox;
  FlueboxSandbox: typeof FlueboxSandbox;
  SandboxDiedError: typeof SandboxDiedError;
  SandboxOperationUnsupportedError: typeof SandboxOperationUnsupportedError;
  closeAll: typeof closeAll;
};
export default _default;
