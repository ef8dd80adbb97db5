// Type declarations for `fluebox` (hand-written; the package is plain JS).
// The wire protocol these calls map to is docs/protocol.md in the fluebox
// repository.

/// <reference types="node" />

/** A size: bytes, or "512K", "256M", "1G", or -1 / "unlimited". */
export type Size = number | string;

export interface ConnectOptions {
  /** Connect to this socket, and nothing else. */
  socket?: string;
  /** The fluebox binary for a private server (else FLUEBOX_BIN, else PATH). */
  binary?: string;
  /** Always start a private server, even if one listens on the default socket. */
  private?: boolean;
  /** `false`: never start a private server (default `true`). */
  autoStart?: boolean;
  /** Extra arguments for the private `fluebox serve` (e.g. ["--pool", "2"]). */
  serverArgs?: string[];
  /** How long a private server may take to accept connections (default 20000). */
  startTimeoutMs?: number;
  connectTimeoutMs?: number;
  /** Also trust a server of this uid (a server another user opened to you);
   * by default only your own or root's (also FLUEBOX_SERVER_UID). */
  serverUid?: number;
  /** The environment used to find the socket and the binary (default process.env). */
  env?: Record<string, string | undefined>;
}

export interface Limits {
  memory?: Size;
  cpus?: number;
  pids?: number;
  disk?: Size;
  nofile?: number;
  fsize?: Size;
  /** Default timeout of each exec in this session (ms). */
  timeoutMs?: number;
}

export interface SessionOptions extends Limits {
  /** "strict", "standard" (default), "trusted", or a profile file on the server host. */
  profile?: string;
  limits?: Limits;
  /** "none" (loopback only), "allow" (the allowlist), "host" (where the profile permits). */
  network?: 'none' | 'allow' | 'host';
  /** Host patterns the sandbox may reach: "pypi.org", "*.npmjs.org:443". */
  allowNet?: string[];
  /** A host directory bound read-write at /workspace; default an empty tmpfs. */
  workspace?: string | null;
  /** Copy-on-write workspace (see Session.diff/commit/reset). */
  cow?: boolean;
  /** Working directory inside (default "/workspace"). */
  cwd?: string;
  /** Variables added to the clean environment of every exec. */
  env?: Record<string, string>;
  /** Destroy the session this long after creation (ms, 0 = never). */
  ttlMs?: number;
  /** Destroy the session after this long unused (ms; server default 30 min; 0 = never). */
  idleTimeoutMs?: number;
  /** Further `fluebox run` options, as on the command line. */
  options?: string[];
  /** `false`: never take a sandbox from the warm pool. */
  pool?: boolean;
  /**
   * Whose `python3`, `node`, `npm`... the session's exec finds: by default
   * this process's (its PATH, directory, HOME, VIRTUAL_ENV, version-manager
   * and TLS trust settings; nothing else of the environment is sent). An
   * object gives them explicitly; `false` sends none (the system's only).
   */
  caller?: boolean | { path?: string; cwd?: string; env?: Record<string, string> } | null;
  /** Free text (up to 256 bytes), echoed in the info object; listSessions can filter on it. */
  label?: string | null;
  /** Ports to publish as the session starts: 3000, "8080:3000" or { port, hostPort, anyUid }. */
  publish?: Array<number | string | { port: number; hostPort?: number; anyUid?: boolean; hosts?: string[] }>;
  /**
   * Credentials that never enter the sandbox (docs/secrets.md): inside, NAME
   * holds a stand-in, and the relay puts the real value in requests to the
   * secret's hosts only. "NAME:HOST[,HOST...]" takes the value from this
   * process's environment, "NAME=@FILE:HOSTS" from a file (read here, one
   * trailing line break dropped); an object may give `value` itself. The
   * hosts must be allowed (allowNet).
   */
  secrets?: Array<string | SecretSpec>;
  /** HTTP rules: "METHODS HOST[:PORT][/PATH-PREFIX]", e.g. "GET,HEAD api.example.com/v1/". */
  allowHttp?: string | string[];
  /** A PEM file (on the server host) of CAs also trusted for the inspected hosts' upstream TLS. */
  upstreamCa?: string;
}

export interface SecretSpec {
  name: string;
  hosts: string[] | string;
  /** The real value; default: this process's environment variable `name`, or `file`. */
  value?: string | Buffer;
  file?: string;
}

/** What Session.grant / Session.revoke take: exactly one key. */
export type GrantSpec =
  | { allowNet: string }
  | { allowHttp: string }
  | { secret: string | SecretSpec };

export interface GrantResult {
  kind: 'allowNet' | 'allowHttp' | 'secret';
  spec: string;
  ttlMs: number;
  /** When the grant lapses (ms since the epoch), or null. */
  expiresAt: number | null;
  /** A secret new to the session: its stand-in (not in the session's environment, which was made at its start). */
  standin?: string;
}

export interface PublishedPort {
  port: number;
  hostPort: number;
  host: '127.0.0.1';
  /** http://127.0.0.1:HOSTPORT/ */
  url: string;
  anyUid: boolean;
  /** The Host allowlist (lowercase), or null: any request, any protocol. */
  hosts: string[] | null;
  /** session.info only, with hosts: connections refused by the allowlist. */
  refused?: number;
  /** session.info only: connections being relayed now. */
  connections?: number;
}

export interface SnapshotResult {
  name: string;
  bytes: number;
  entries: number;
  createdAt: number;
  copyMs: number;
}

export interface SessionInfo {
  session: string;
  label: string | null;
  state: 'ready' | 'dead';
  /** Why the session is dead (state "dead"). */
  reason?: string;
  profile: string;
  pooled: boolean;
  workspace: string | null;
  cwd: string;
  network: string;
  createdAt: number;
  lastUsedAt: number;
  expiresAt: number | null;
  ttlMs: number;
  idleTimeoutMs: number;
  limits: { memory: number; cpus: number; pids: number; timeoutMs: number; applied: string; notApplied: string; [k: string]: unknown };
  execs: { running: string[]; total: number };
  usage: { memoryBytes: number; memoryPeakBytes: number; cpuMs: number; pidsPeak: number; oomKills: number; diskUsedBytes: number; [k: string]: unknown };
  /** The network allowlist's patterns. */
  allowNet?: string[];
  /** Published ports. */
  ports?: PublishedPort[];
  /** The session this one is a fork of, or null. */
  forkedFrom?: string | null;
  /** Names of its snapshots. */
  snapshots?: string[];
  /** session.fork's answer: how long the copy took. */
  copyMs?: number;
  [k: string]: unknown;
}

export interface ServerInfo {
  name: string;
  version: string;
  protocol: number;
  pid: number;
  uid: number;
  peerUid: number;
  socket: string;
  sessions: number;
  pool: { size: number; ready: number; profile: string };
  profiles: string[];
  methods: string[];
  limits: {
    maxMessageBytes: number;
    maxSessionsPerUid: number;
    maxExecsPerSession: number;
    maxOutputBytes: number;
    maxReadBytes: number;
    maxConnections: number;
  };
  [k: string]: unknown;
}

export interface ExecOptions<E extends 'utf8' | 'buffer' = 'utf8' | 'buffer'> {
  /** Working directory (default the session's cwd). */
  cwd?: string;
  /** Merged over the session's environment. */
  env?: Record<string, string>;
  /** Standard input, then end-of-file. */
  stdin?: string | Uint8Array;
  /** stream(): keep stdin open after `stdin` for ExecStream.write / stdin / closeStdin. */
  stdinOpen?: boolean;
  /** stream(): a pseudo-terminal (true: 24 x 80); output and input go through it (stdin stays open). */
  tty?: boolean | { rows: number; cols: number };
  /** Kill the command after this long (rounded up to whole ms); exit code 124. 0 = none. */
  timeoutMs?: number;
  /** Aborting kills the command and rejects with an AbortError (cause = the reason). */
  signal?: AbortSignal;
  /** "utf8" (default): strings; "buffer": Buffers. */
  encoding?: E;
  /** Bytes kept per stream in collect mode (more is dropped and flagged). */
  maxOutputBytes?: number;
  /** A name for kill() ([A-Za-z0-9._-], unique among running execs); default random. */
  execId?: string;
}

export interface ExecResult<T extends string | Buffer = string> {
  execId: string;
  /** The exit status; 128+N for signal N; 124 timeout; 126 not executable; 127 not found. */
  exitCode: number;
  signal: string | null;
  timedOut: boolean;
  /** The OOM killer of the session's memory cgroup ended it (exitCode 137, signal SIGKILL). */
  oomKilled: boolean;
  durationMs: number;
  stdout: T;
  stderr: T;
  stdoutTruncated?: boolean;
  stderrTruncated?: boolean;
  /** Why output was cut: maxOutputBytes (as asked) or the server's memory
   * budget for this user (rare; the first 64 KiB of each stream are kept). */
  truncatedBy?: 'maxOutputBytes' | 'memory';
}

export interface OutputChunk<T extends string | Buffer = string> {
  stream: 'stdout' | 'stderr';
  data: T;
}

export type FileType = 'file' | 'dir' | 'symlink' | 'fifo' | 'socket' | 'char' | 'block';

export interface Stat {
  type: FileType;
  size: number;
  /** Permission bits (& 0o7777). */
  mode: number;
  uid: number;
  gid: number;
  nlink: number;
  mtimeMs: number;
  atimeMs: number;
  ctimeMs: number;
  /** The link's target, for type "symlink". */
  target?: string;
  isFile: boolean;
  isDirectory: boolean;
  isSymbolicLink: boolean;
}

export interface WorkspaceChange {
  path: string;
  status: 'added' | 'modified' | 'deleted' | 'renamed';
  type: 'file' | 'symlink' | 'dir';
  /** renamed: the old path. */
  from?: string;
  mode?: string;
  old_mode?: string;
  size?: number;
  old_size?: number;
  content_changed?: boolean;
  binary?: boolean;
  lines_added?: number;
  lines_removed?: number;
  /** Unified diff hunks of a text file. */
  diff?: string;
  diff_omitted?: string;
  target?: string;
  old_target?: string;
  path_not_utf8?: boolean;
  [k: string]: unknown;
}

export interface WorkspaceDiff {
  workspace: string;
  changes: WorkspaceChange[];
  counts: { added: number; modified: number; deleted: number; renamed: number };
  skipped: string[];
  upper_full: boolean;
  [k: string]: unknown;
}

export interface CommitResult {
  committed: boolean;
  applied: number;
  conflicts: { path: string; reason: string }[];
  error: string | null;
  reason: string | null;
  [k: string]: unknown;
}

export interface DirEntry {
  name: string;
  type: FileType | 'unknown';
}

export declare class Fluebox {
  /** Connects to a server, or starts a private one (see ConnectOptions). */
  static connect(options?: ConnectOptions): Promise<Fluebox>;
  /** The socket path this client is connected to. */
  readonly socket: string;
  /** The private server this client started, or null. */
  readonly server: { pid: number; socket: string; binary: string } | null;
  readonly closed: boolean;
  serverInfo(): Promise<ServerInfo>;
  createSession(options?: SessionOptions): Promise<Session>;
  /** A handle on an existing session (no request is made). */
  session(id: string): Session;
  /** The caller's sessions, oldest first; `label` keeps those with exactly that label. */
  listSessions(options?: { label?: string }): Promise<SessionInfo[]>;
  /** Sends any protocol request; resolves with its result object. */
  request(method: string, params?: Record<string, unknown>, onEvent?: (msg: Record<string, unknown>) => void): Promise<Record<string, any>>;
  /** Closes the connection; stops the private server if this client started one. */
  close(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}

export declare class Session {
  readonly fluebox: Fluebox;
  readonly id: string;
  /** The info object from session.create (null for handles from fluebox.session(id)). */
  readonly createInfo: SessionInfo | null;
  /** True once the session is known to be destroyed or dead. */
  dead: boolean;
  /** The session's working directory. */
  readonly cwd: string;
  info(): Promise<SessionInfo>;
  destroy(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;

  exec(command: string | string[], options?: ExecOptions<'utf8'>): Promise<ExecResult<string>>;
  exec(command: string | string[], options: ExecOptions<'buffer'> & { encoding: 'buffer' }): Promise<ExecResult<Buffer>>;
  stream(command: string | string[], options?: ExecOptions<'utf8'>): ExecStream<string>;
  stream(command: string | string[], options: ExecOptions<'buffer'> & { encoding: 'buffer' }): ExecStream<Buffer>;
  /** Sends a signal (default SIGKILL) to a running exec's process group. */
  kill(execId: string, signal?: string | number): Promise<Record<string, never>>;

  readFile(path: string, options?: { offset?: number; length?: number; encoding?: 'utf8' }): Promise<string>;
  readFileBuffer(path: string, options?: { offset?: number; length?: number }): Promise<Buffer>;
  /** Creates missing parents unless `parents: false`. Resolves with the bytes written. */
  writeFile(path: string, data: string | Uint8Array | ArrayBuffer, options?: { mode?: number | string; append?: boolean; parents?: boolean; exclusive?: boolean }): Promise<number>;
  stat(path: string, options?: { follow?: boolean }): Promise<Stat>;
  lstat(path: string): Promise<Stat>;
  readdir(path: string): Promise<string[]>;
  readdir(path: string, options: { withTypes: true }): Promise<DirEntry[]>;
  exists(path: string, options?: { follow?: boolean }): Promise<boolean>;
  /** Resolves with whether a directory was created. */
  mkdir(path: string, options?: { recursive?: boolean; mode?: number | string }): Promise<boolean>;
  /** Resolves with whether something was removed. */
  rm(path: string, options?: { recursive?: boolean; force?: boolean }): Promise<boolean>;
  rename(from: string, to: string, options?: { overwrite?: boolean }): Promise<void>;

  /** Copy-on-write sessions (cow: true): the changes relative to the host workspace. */
  diff(options?: { format?: 'json'; diffs?: boolean; paths?: string[] }): Promise<WorkspaceDiff>;
  diff(options: { format: 'patch'; paths?: string[] }): Promise<{ patch: string | Buffer; encoding: 'utf8' | 'base64'; upper_full: boolean }>;
  /** Applies the changes (all, or `paths`) to the host workspace; rejects
   * with CommitError when anything stopped it (conflicts: nothing applied). */
  commit(options?: { paths?: string[]; force?: boolean }): Promise<CommitResult>;
  /** Discards the changes. */
  reset(): Promise<{ reset: true }>;

  /** Publishes `port` inside on 127.0.0.1 of the host (only this uid may connect unless anyUid). */
  publish(port: number, options?: { hostPort?: number; anyUid?: boolean; hosts?: string[] }): Promise<PublishedPort>;
  unpublish(port: number): Promise<void>;
  /** A new session starting from copies of this one's workspace layer, home and /tmp
   * (running processes are not copied). */
  fork(options?: { label?: string | null }): Promise<Session>;
  /** Adds a name, an HTTP rule or a secret binding to the running session's relay
   * (the owner only; nothing inside can), for `ttlMs` or for good. */
  grant(what: GrantSpec, options?: { ttlMs?: number }): Promise<GrantResult>;
  /** Takes one back. */
  revoke(what: GrantSpec): Promise<{ kind: string; spec: string }>;
  /** Copy-on-write sessions: save the layer as `name`; put it back. */
  snapshot(name: string): Promise<SnapshotResult>;
  restore(name: string): Promise<{ name: string; restored: true; copyMs: number }>;
}

export declare class ExecStream<T extends string | Buffer = string> implements AsyncIterable<OutputChunk<T>> {
  /** Streaming stdin (started with `stdinOpen: true`): resolves once the sandbox's pipe took the data. */
  write(data: string | Buffer | Uint8Array): Promise<number>;
  /** End of input. */
  closeStdin(): Promise<void>;
  /** A command started with `tty`: its terminal's new size. */
  resize(rows: number, cols: number): Promise<void>;
  /** The command's stdin as a Writable; end() closes it. */
  readonly stdin: import('node:stream').Writable;
  readonly session: Session;
  readonly execId: string;
  /** The pid inside the sandbox, once started. */
  readonly pid: number | null;
  /** Resolves when the command has started (with the start event, or null if it never did). */
  readonly started: Promise<{ execId: string; pid: number } | null>;
  /** The exit (stdout/stderr are not in it: they came as chunks). */
  readonly result: Promise<ExecResult<never> & { stdout?: undefined; stderr?: undefined }>;
  kill(signal?: string | number): Promise<Record<string, never>>;
  /** Leaving the loop early kills the command. */
  [Symbol.asyncIterator](): AsyncIterator<OutputChunk<T>>;
  /** Consumes the rest of the output and resolves with it and the exit. */
  collect(): Promise<ExecResult<T>>;
}

export declare class FlueboxError extends Error {
  constructor(code: string, message: string, extra?: Record<string, unknown>);
  /** The server's stable error code (or an errno name such as "ENOENT"). */
  readonly code: string;
  /** invalid_params: the parameter concerned. */
  readonly param?: string;
  /** limit_exceeded: the limit concerned. */
  readonly limit?: string;
  /** Filesystem errors: the path concerned. */
  readonly path?: string;
  [k: string]: unknown;
}
export declare class ConnectionError extends FlueboxError {
  /** The system error code of a failed connect (ENOENT, ECONNREFUSED, ...). */
  syscallCode?: string;
}
/** The socket, its directory or the server is not yours, root's or serverUid's:
 * code "untrusted_server"; nothing was sent. */
export declare class UntrustedServerError extends FlueboxError {}
/** The sandbox died while the call was in flight: code "session_dead", type "sandbox_died". */
export declare class SandboxDiedError extends FlueboxError {
  constructor(message: string, extra?: Record<string, unknown>);
  readonly type: 'sandbox_died';
}
export { SandboxDiedError as SessionDeadError };
export declare class NotFoundError extends FlueboxError {}
export declare class InvalidParamsError extends FlueboxError {}
export declare class LimitExceededError extends FlueboxError {}
export declare class PermissionDeniedError extends FlueboxError {}
export declare class NotSupportedError extends FlueboxError {}
export declare class SandboxFailedError extends FlueboxError {}
export declare class TooLargeError extends FlueboxError {}
export declare class ShuttingDownError extends FlueboxError {}
export declare class ProtocolError extends FlueboxError {}
/** A file operation failed inside the sandbox; `code` is the errno name. */
export declare class FileSystemError extends FlueboxError {
  /** Negative errno, as in Node's fs errors. */
  readonly errno?: number;
}

/** workspace.commit did not apply everything: code "commit_conflict"
 * (nothing applied; see `conflicts`) or "commit_failed" (`applied` changes
 * were made before an error). */
export declare class CommitError extends FlueboxError {
  readonly conflicts: { path: string; reason: string }[];
  readonly applied: number;
  readonly result: CommitResult;
}

/** The socket a client uses when none is given (FLUEBOX_SOCKET, XDG_RUNTIME_DIR, ...). */
export declare function defaultSocketPath(env?: Record<string, string | undefined>): string;
/** The fluebox binary: the argument, FLUEBOX_BIN, or `fluebox` on PATH. */
export declare function findBinary(binary?: string, env?: Record<string, string | undefined>): string;
export declare const version: string;

declare const _default: {
  Fluebox: typeof Fluebox;
  Session: typeof Session;
  ExecStream: typeof ExecStream;
  FlueboxError: typeof FlueboxError;
  SandboxDiedError: typeof SandboxDiedError;
  version: string;
  [k: string]: unknown;
};
export default _default;
