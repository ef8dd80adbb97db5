'use strict';
// client.cjs — the fluebox client: Fluebox (a connection to a server),
// Session (one sandbox), ExecStream (a streamed command).
//
// Each method maps to one protocol method of docs/protocol.md; the only
// client-side logic is chunking (files larger than one message), choosing
// exec ids (so a command can be killed before its first event arrives), and
// turning AbortSignals into exec.kill.

const crypto = require('node:crypto');
const { posix } = require('node:path');
const { Connection } = require('./connection.cjs');
const { defaultSocketPath, trustedUids, checkSocketPath, PrivateServer } = require('./server.cjs');
const {
  CommitError,
  ConnectionError,
  FlueboxError,
  SandboxDiedError,
  abortError,
} = require('./errors.cjs');

// Files are written in chunks of this many bytes (base64 of 8 MiB stays well
// under the server's 16 MiB line limit).
const WRITE_CHUNK = 8 * 1024 * 1024;
// A stream being iterated stops reading the socket when this much output is
// waiting for its consumer, and resumes below the low mark.
const STREAM_HIGH = 8 * 1024 * 1024;
const STREAM_LOW = 1024 * 1024;

const SESSION_KEYS = new Set([
  'profile', 'limits', 'memory', 'cpus', 'pids', 'disk', 'nofile', 'fsize', 'timeoutMs',
  'network', 'allowNet', 'workspace', 'cow', 'cwd', 'env', 'ttlMs', 'idleTimeoutMs',
  'options', 'pool', 'label', 'caller', 'publish', 'secrets', 'allowHttp', 'upstreamCa',
]);

/* The variables of the caller's environment fluebox reads to find the
 * caller's python3, node, npm (docs/protocol.md, "caller"); nothing else of
 * the environment is sent. */
const CALLER_ENV = new Set([
  'HOME', 'VIRTUAL_ENV', 'PYENV_VERSION', 'RUSTUP_HOME', 'RUSTUP_TOOLCHAIN', 'VOLTA_HOME',
  'ASDF_DEFAULT_TOOL_VERSIONS_FILENAME', 'NODE_EXTRA_CA_CERTS', 'SSL_CERT_FILE', 'SSL_CERT_DIR',
  'REQUESTS_CA_BUNDLE', 'CURL_CA_BUNDLE', 'PIP_CERT', 'GIT_SSL_CAINFO',
]);

/** This process's PATH, directory and the variables of CALLER_ENV. */
function callerOf(env = process.env, cwd = process.cwd()) {
  const e = {};
  for (const [k, v] of Object.entries(env)) {
    if (typeof v === 'string' && (CALLER_ENV.has(k) || /^ASDF_.+_VERSION$/.test(k))) e[k] = v;
  }
  const c = { env: e, cwd };
  if (typeof env.PATH === 'string') c.path = env.PATH;
  return c;
}
const LIMIT_KEYS = ['memory', 'cpus', 'pids', 'disk', 'nofile', 'fsize', 'timeoutMs'];
const EXEC_KEYS = new Set(['cwd', 'env', 'stdin', 'stdinOpen', 'tty', 'timeoutMs', 'signal', 'encoding', 'maxOutputBytes', 'execId']);
// What one exec.write carries at most (the server keeps 4 MiB of stdin
// waiting per exec and answers a request once its bytes are in the pipe).
const STDIN_CHUNK = 256 * 1024;

function checkKeys(opts, allowed, what) {
  if (opts == null) return {};
  if (typeof opts !== 'object') throw new TypeError(`${what}: options must be an object`);
  for (const k of Object.keys(opts)) {
    if (!allowed.has(k) && opts[k] !== undefined) throw new TypeError(`${what}: unknown option "${k}"`);
  }
  return opts;
}

function ceilMs(v, what) {
  if (v === undefined || v === null) return undefined;
  if (typeof v !== 'number' || !Number.isFinite(v) || v < 0) throw new TypeError(`${what} must be a non-negative number of milliseconds`);
  return Math.ceil(v);
}

function newExecId() {
  return 'n' + crypto.randomBytes(8).toString('hex');
}

function toBytes(data) {
  if (typeof data === 'string') return Buffer.from(data, 'utf8');
  if (Buffer.isBuffer(data)) return data;
  if (data instanceof Uint8Array) return Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  if (data instanceof ArrayBuffer) return Buffer.from(data);
  throw new TypeError('data must be a string, a Uint8Array or an ArrayBuffer');
}

/* A secret's value as read from a file: one trailing line break dropped
 * (what `fluebox run --secret NAME=@FILE:HOSTS` does). */
function valueFromFile(file, name) {
  let v;
  try {
    v = require('node:fs').readFileSync(file, 'utf8');
  } catch (e) {
    throw new TypeError(`secret ${name}: cannot read ${file}: ${e.code || e.message}`);
  }
  if (v.endsWith('\n')) v = v.slice(0, -1);
  if (v.endsWith('\r')) v = v.slice(0, -1);
  return v;
}

/**
 * One secret as session.create's {name, hosts, value}: the real value is
 * read here, on the caller's side (its environment, or a file), and sent to
 * the server; inside the session the variable holds a stand-in. A spec is
 * 'NAME:HOST[,HOST...]' (the value is env NAME), 'NAME=@FILE:HOST[,HOST...]',
 * or an object { name, hosts, value?, file? }. Errors name the variable,
 * never the value.
 */
function secretParam(spec, env = process.env) {
  let name;
  let hosts;
  let file;
  let value;
  if (typeof spec === 'string') {
    const m = /^([A-Za-z_][A-Za-z0-9_]*)(?:=@([^:]+))?(?::(.+))?$/.exec(spec);
    if (!m) throw new TypeError(`secrets: "${spec}" is not NAME:HOST[,HOST...] or NAME=@FILE:HOST[,HOST...]`);
    [, name, file] = m;
    hosts = m[3] === undefined ? null : m[3].split(',');
  } else if (spec && typeof spec === 'object') {
    ({ name, hosts, file, value } = spec);
    if (typeof hosts === 'string') hosts = hosts.split(',');
    if (typeof name !== 'string' || !/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new TypeError('secrets: name must be a variable name');
  } else {
    throw new TypeError('secrets: each secret is a string NAME:HOSTS or an object { name, hosts, value?, file? }');
  }
  // No hosts: the value of a secret the session's profile names.
  if (hosts !== null && hosts !== undefined &&
      (!Array.isArray(hosts) || !hosts.length || !hosts.every((h) => typeof h === 'string' && h))) {
    throw new TypeError(`secret ${name}: hosts must be a non-empty list of host patterns`);
  }
  if (value === undefined || value === null) {
    if (file) value = valueFromFile(file, name);
    else {
      value = env[name];
      if (value === undefined) throw new TypeError(`secret ${name}: the variable ${name} is not set in this process's environment`);
    }
  }
  if (Buffer.isBuffer(value)) value = value.toString('utf8');
  if (typeof value !== 'string') throw new TypeError(`secret ${name}: value must be a string`);
  if (!value) throw new TypeError(`secret ${name}: its value is empty`);
  return hosts ? { name, hosts, value } : { name, value };
}

/** Builds session.create params from the friendly options. */
function sessionParams(opts) {
  checkKeys(opts, SESSION_KEYS, 'createSession');
  const p = {};
  const limits = { ...(opts.limits || {}) };
  for (const k of LIMIT_KEYS) if (opts[k] !== undefined) limits[k] = opts[k];
  if (limits.timeoutMs !== undefined) limits.timeoutMs = ceilMs(limits.timeoutMs, 'timeoutMs');
  if (Object.keys(limits).length) p.limits = limits;
  for (const k of ['profile', 'network', 'allowNet', 'workspace', 'cow', 'cwd', 'env', 'options', 'pool', 'label', 'publish']) {
    if (opts[k] !== undefined) p[k] = opts[k];
  }
  // By default the session's exec finds the python3, node, npm this
  // process's PATH finds; `caller: false` sends nothing (the system's only).
  if (opts.caller === undefined || opts.caller === true) p.caller = callerOf();
  else if (opts.caller !== false && opts.caller !== null) p.caller = opts.caller;
  if (opts.ttlMs !== undefined) p.ttlMs = ceilMs(opts.ttlMs, 'ttlMs');
  if (opts.idleTimeoutMs !== undefined) p.idleTimeoutMs = ceilMs(opts.idleTimeoutMs, 'idleTimeoutMs');
  if (typeof p.workspace === 'string') p.workspace = require('node:path').resolve(p.workspace);
  if (opts.secrets !== undefined && opts.secrets !== null) {
    if (!Array.isArray(opts.secrets)) throw new TypeError('secrets must be an array');
    p.secrets = opts.secrets.map((x) => secretParam(x));
  }
  if (opts.allowHttp !== undefined) p.allowHttp = typeof opts.allowHttp === 'string' ? [opts.allowHttp] : opts.allowHttp;
  if (typeof opts.upstreamCa === 'string') p.upstreamCa = require('node:path').resolve(opts.upstreamCa);
  return p;
}

function decodeOut(data, encoding, wantBuffer) {
  if (data === undefined || data === null) return wantBuffer ? Buffer.alloc(0) : '';
  if (wantBuffer) return Buffer.from(data, encoding === 'base64' ? 'base64' : 'utf8');
  // The server may answer a big text in base64 (more compact when it is
  // mostly control bytes); `encoding` says so.
  return encoding === 'base64' ? Buffer.from(data, 'base64').toString('utf8') : data;
}

function statFromWire(r) {
  const st = { ...r };
  st.isFile = r.type === 'file';
  st.isDirectory = r.type === 'dir';
  st.isSymbolicLink = r.type === 'symlink';
  return st;
}

class Fluebox {
  /**
   * Connects to a fluebox server.
   * - `socket`: connect to this socket (and nothing else).
   * - otherwise: the default socket (FLUEBOX_SOCKET, XDG_RUNTIME_DIR, ...) if a
   *   server listens there; else a private `fluebox serve` is started (binary
   *   from `binary`, FLUEBOX_BIN or PATH) on a private socket, and stopped by
   *   close() or when this process exits.
   * - `private: true`: always start a private server.
   * - `autoStart: false`: never start one.
   * The socket must be this user's or root's, or `serverUid`'s (or
   * FLUEBOX_SERVER_UID's) when another user runs the server for you, in a
   * directory only they can change: otherwise UntrustedServerError, before
   * anything is sent.
   */
  static async connect(opts = {}) {
    checkKeys(opts, new Set(['socket', 'binary', 'private', 'autoStart', 'serverArgs', 'startTimeoutMs', 'connectTimeoutMs', 'env', 'serverUid']), 'Fluebox.connect');
    const uids = trustedUids(opts.serverUid, opts.env || process.env);
    if (opts.socket) {
      checkSocketPath(opts.socket, uids);
      const conn = await Connection.open(opts.socket, { timeoutMs: opts.connectTimeoutMs });
      return new Fluebox(conn, { socket: opts.socket, opts });
    }
    if (!opts.private) {
      const sock = defaultSocketPath(opts.env || process.env);
      checkSocketPath(sock, uids);
      try {
        const conn = await Connection.open(sock, { timeoutMs: opts.connectTimeoutMs });
        return new Fluebox(conn, { socket: sock, opts });
      } catch (e) {
        if (opts.autoStart === false) throw e;
      }
    }
    const { server, conn } = await PrivateServer.start({
      binary: opts.binary,
      serverArgs: opts.serverArgs,
      startTimeoutMs: opts.startTimeoutMs,
      env: opts.env,
    });
    return new Fluebox(conn, { socket: server.socket, server, opts });
  }

  constructor(conn, { socket, server, opts } = {}) {
    this._conn = conn;
    this._server = server || null;
    this._opts = opts || {};
    this._closed = false;
    /** The socket path this client is connected to. */
    this.socket = socket || conn.path;
  }

  /** The private server started by connect(), or null. */
  get server() {
    return this._server ? { pid: this._server.pid, socket: this._server.socket, binary: this._server.binary } : null;
  }

  get closed() { return this._closed || this._conn.closed; }

  /** Sends any protocol request and resolves with its result. */
  request(method, params, onEvent) {
    return this._conn.request(method, params, onEvent);
  }

  async serverInfo() {
    const info = await this.request('server.info', {});
    if (info.limits && info.limits.maxMessageBytes > 0) this._conn.maxMessageBytes = info.limits.maxMessageBytes;
    return info;
  }

  /** Creates a session (a sandbox); see the README for the options. */
  async createSession(opts = {}) {
    const info = await this.request('session.create', sessionParams(opts));
    return new Session(this, info.session, info);
  }

  /** A handle on an existing session (no request is made). */
  session(id) {
    if (typeof id !== 'string' || !id) throw new TypeError('session id must be a non-empty string');
    return new Session(this, id, null);
  }

  /** The caller's sessions (info objects), oldest first; `label` filters. */
  async listSessions(opts = {}) {
    checkKeys(opts, new Set(['label']), 'listSessions');
    const r = await this.request('session.list', opts.label !== undefined ? { label: opts.label } : {});
    return r.sessions || [];
  }

  /** Closes the connection, and stops the private server if this client
   * started one (which destroys its sessions). */
  async close() {
    if (this._closed) return;
    this._closed = true;
    await this._conn.close();
    if (this._server) await this._server.stop();
  }

}

class Session {
  constructor(fb, id, info) {
    this.fluebox = fb;
    /** The session id ("s-" and 16 hex digits). */
    this.id = id;
    /** The info object returned by session.create (or null for attached handles). */
    this.createInfo = info;
    this.dead = false;
  }

  /** The session's working directory (default /workspace). */
  get cwd() { return (this.createInfo && this.createInfo.cwd) || '/workspace'; }

  _req(method, params, onEvent, flow) {
    const p = this.fluebox._conn.send(method, { session: this.id, ...params }, onEvent, flow).promise;
    return p.catch((e) => {
      if (e instanceof SandboxDiedError) this.dead = true;
      throw e;
    });
  }

  info() { return this._req('session.info', {}); }

  async destroy() {
    await this._req('session.destroy', {});
    this.dead = true;
  }


  _execParams(command, opts, stream) {
    checkKeys(opts, EXEC_KEYS, 'exec');
    const p = {};
    if (typeof command === 'string') p.command = command;
    else if (Array.isArray(command) && command.length > 0 && command.every((a) => typeof a === 'string')) p.argv = command;
    else throw new TypeError('command must be a shell string or a non-empty array of strings');
    if (opts.cwd !== undefined) p.cwd = opts.cwd;
    if (opts.env !== undefined) p.env = opts.env;
    if (opts.stdin !== undefined && opts.stdin !== null) {
      if (typeof opts.stdin === 'string') p.stdin = opts.stdin;
      else { p.stdin = toBytes(opts.stdin).toString('base64'); p.stdinEncoding = 'base64'; }
    }
    const t = ceilMs(opts.timeoutMs, 'timeoutMs');
    if (t !== undefined) p.timeoutMs = t;
    if (opts.maxOutputBytes !== undefined) p.maxOutputBytes = opts.maxOutputBytes;
    const enc = opts.encoding || 'utf8';
    if (enc !== 'utf8' && enc !== 'buffer') throw new TypeError('encoding must be "utf8" or "buffer"');
    p.encoding = enc === 'buffer' ? 'base64' : 'utf8';
    p.execId = opts.execId || newExecId();
    if (stream) p.stream = true;
    if (opts.stdinOpen) p.stdinOpen = true;
    // A pseudo-terminal: true (24 x 80) or { rows, cols }; its stdin stays open.
    if (opts.tty) p.tty = opts.tty === true ? true : { rows: opts.tty.rows, cols: opts.tty.cols };
    return p;
  }

  /**
   * Runs a command (a shell string, or an argv array) and resolves with
   * { exitCode, stdout, stderr, signal, timedOut, oomKilled, durationMs, execId, ... }
   * whatever the exit code. `signal` (AbortSignal) kills the command and
   * rejects with an AbortError.
   */
  exec(command, opts = {}) {
    let p;
    try {
      p = this._execParams(command, opts, false);
    } catch (e) {
      return Promise.reject(e);
    }
    const wantBuffer = opts.encoding === 'buffer';
    const signal = opts.signal;
    if (signal && signal.aborted) return Promise.reject(abortError(signal, 'exec'));
    const run = this._req('exec', p).then((r) => {
      r.stdout = decodeOut(r.stdout, r.encoding, wantBuffer);
      r.stderr = decodeOut(r.stderr, r.encoding, wantBuffer);
      return r;
    });
    if (!signal) return run;
    return new Promise((resolve, reject) => {
      const onAbort = () => {
        reject(abortError(signal, 'exec'));
        this.kill(p.execId, 'SIGKILL').catch(() => {});
      };
      signal.addEventListener('abort', onAbort, { once: true });
      run.then(
        (r) => { signal.removeEventListener('abort', onAbort); resolve(r); },
        (e) => { signal.removeEventListener('abort', onAbort); reject(e); },
      );
    });
  }

  /**
   * Runs a command and streams its output: `for await (const c of s.stream(cmd))`
   * yields { stream: 'stdout' | 'stderr', data } as the output comes; then
   * `await st.result` gives the exit. Leaving the loop early kills the command.
   */
  stream(command, opts = {}) {
    const p = this._execParams(command, opts, true);
    return new ExecStream(this, p, opts.encoding === 'buffer', opts.signal);
  }

  /** Sends a signal (default SIGKILL) to a running exec's process group. */
  kill(execId, signal) {
    return this._req('exec.kill', { execId, ...(signal !== undefined ? { signal } : {}) });
  }

  /** Reads a UTF-8 text file (all of it, or `length` bytes from `offset`). */
  async readFile(path, opts = {}) {
    checkKeys(opts, new Set(['offset', 'length', 'encoding']), 'readFile');
    if (opts.encoding === 'buffer' || opts.encoding === null) return this.readFileBuffer(path, opts);
    const params = { path, encoding: 'utf8' };
    if (opts.offset !== undefined) params.offset = opts.offset;
    if (opts.length !== undefined) params.length = opts.length;
    const r = await this._req('file.read', params);
    if (r.eof || opts.length !== undefined) return decodeOut(r.data, r.encoding, false);
    // Larger than one message: read the bytes and decode once, so no
    // character is split between two chunks.
    return (await this.readFileBuffer(path, opts)).toString('utf8');
  }

  /** Reads a file's bytes (a Buffer, which is a Uint8Array). */
  async readFileBuffer(path, opts = {}) {
    checkKeys(opts, new Set(['offset', 'length', 'encoding']), 'readFileBuffer');
    let offset = opts.offset || 0;
    let remaining = opts.length;
    const parts = [];
    for (;;) {
      const params = { path, encoding: 'base64', offset };
      if (remaining !== undefined) params.length = remaining;
      let r;
      try {
        r = await this._req('file.read', params);
      } catch (e) {
        // `length` above the server's maxReadBytes: read without it, in chunks.
        if (e.code === 'too_large' && remaining !== undefined && params.length > 0) {
          delete params.length;
          r = await this._req('file.read', params);
        } else throw e;
      }
      const buf = Buffer.from(r.data || '', 'base64');
      parts.push(buf);
      offset += buf.length;
      if (remaining !== undefined) remaining -= buf.length;
      if (r.eof || buf.length === 0 || (remaining !== undefined && remaining <= 0)) break;
    }
    return parts.length === 1 ? parts[0] : Buffer.concat(parts);
  }

  /**
   * Writes a file (text or bytes), all or nothing. Creates missing parent
   * directories unless `parents: false`. Data that fits one request is one
   * file.write (the server writes it whole or not at all); larger data goes
   * to a hidden file next to the target in chunks, renamed over the target
   * once all of it is there, and removed if anything fails, so the target
   * is as it was (or absent). An append is written in place (the server cuts
   * a failed request back), as are the cases the server writes in place.
   */
  async writeFile(path, data, opts = {}) {
    checkKeys(opts, new Set(['mode', 'append', 'parents', 'exclusive']), 'writeFile');
    const base = { path };
    base.parents = opts.parents !== false;
    if (opts.mode !== undefined) base.mode = opts.mode;
    if (opts.exclusive) base.exclusive = true;
    const append = !!opts.append;
    if (typeof data === 'string' && data.length <= WRITE_CHUNK / 3) {
      const r = await this._req('file.write', { ...base, data, encoding: 'utf8', append });
      return r.bytesWritten;
    }
    const bytes = toBytes(data);
    if (bytes.length <= WRITE_CHUNK || append) return this._writeChunks(base, bytes, append);
    // Where the data lands: the last component's symlinks followed, as the
    // server's own write does; the new file takes the old one's mode.
    let target = path;
    let mode = opts.mode;
    for (let i = 0; i < 40; i++) {
      let st;
      try {
        st = await this._req('file.stat', { path: target, follow: false });
      } catch (e) {
        if (e.code !== 'ENOENT' && e.code !== 'ENOTDIR') throw e;
        break;
      }
      if (st.type === 'symlink' && typeof st.target === 'string') {
        target = st.target.startsWith('/') ? st.target : posix.join(posix.dirname(target), st.target);
        continue;
      }
      if (mode === undefined && st.type === 'file' && Number.isInteger(st.mode)) mode = st.mode & 0o7777;
      break;
    }
    const tmp = posix.join(posix.dirname(target), `.fluebox-write-${crypto.randomBytes(8).toString('hex')}.part`);
    const tbase = { path: tmp, parents: base.parents, exclusive: true };
    if (mode !== undefined) tbase.mode = mode;
    let written;
    try {
      written = await this._writeChunks(tbase, bytes.subarray(0, WRITE_CHUNK), false);
    } catch (e) {
      if (e.code !== 'EACCES') throw e;
      return this._writeChunks(base, bytes, false); // a directory the sandbox user may not write in
    }
    try {
      written += await this._writeChunks({ path: tmp }, bytes.subarray(WRITE_CHUNK), true);
      const rename = { from: tmp, to: target };
      if (opts.exclusive) rename.overwrite = false;
      await this._req('file.rename', rename);
    } catch (e) {
      await this._req('file.rm', { path: tmp, force: true }).catch(() => {});
      if (e.code !== 'EBUSY') throw e;
      return this._writeChunks(base, bytes, false); // a file that is a mount point of its own
    }
    return written;
  }

  /** file.write requests of at most WRITE_CHUNK bytes each, the first with
   * `append`, the rest appended. */
  async _writeChunks(base, bytes, append) {
    let written = 0;
    let off = 0;
    do {
      const chunk = bytes.subarray(off, off + WRITE_CHUNK);
      const params = { ...base, data: chunk.toString('base64'), encoding: 'base64', append };
      if (off > 0) { delete params.exclusive; delete params.parents; }
      const r = await this._req('file.write', params);
      written += r.bytesWritten || 0;
      off += chunk.length;
      append = true;
    } while (off < bytes.length);
    return written;
  }

  /** File metadata: { type, size, mode, uid, gid, nlink, mtimeMs, ...,
   * isFile, isDirectory, isSymbolicLink }. `follow: false` describes a
   * symlink itself. */
  async stat(path, opts = {}) {
    checkKeys(opts, new Set(['follow']), 'stat');
    const params = { path };
    if (opts.follow === false) params.follow = false;
    return statFromWire(await this._req('file.stat', params));
  }

  lstat(path) { return this.stat(path, { follow: false }); }

  /** Directory entry names, or { name, type } entries with `withTypes`. */
  async readdir(path, opts = {}) {
    checkKeys(opts, new Set(['withTypes']), 'readdir');
    const r = await this._req('file.readdir', { path });
    const entries = r.entries || [];
    return opts.withTypes ? entries : entries.map((e) => e.name);
  }

  async exists(path, opts = {}) {
    checkKeys(opts, new Set(['follow']), 'exists');
    const params = { path };
    if (opts.follow === false) params.follow = false;
    const r = await this._req('file.exists', params);
    return !!r.exists;
  }

  async mkdir(path, opts = {}) {
    checkKeys(opts, new Set(['recursive', 'mode']), 'mkdir');
    const params = { path };
    if (opts.recursive) params.recursive = true;
    if (opts.mode !== undefined) params.mode = opts.mode;
    const r = await this._req('file.mkdir', params);
    return !!r.created;
  }

  async rm(path, opts = {}) {
    checkKeys(opts, new Set(['recursive', 'force']), 'rm');
    const params = { path };
    if (opts.recursive) params.recursive = true;
    if (opts.force) params.force = true;
    const r = await this._req('file.rm', params);
    return !!r.removed;
  }

  async rename(from, to, opts = {}) {
    checkKeys(opts, new Set(['overwrite']), 'rename');
    const params = { from, to };
    if (opts.overwrite === false) params.overwrite = false;
    await this._req('file.rename', params);
  }

  /**
   * Copy-on-write sessions (createSession({ workspace, cow: true })): the
   * changes made in the sandbox relative to the host directory.
   * `format: 'json'` (default) gives { changes, counts, skipped, upper_full }
   * as the server sends it; `format: 'patch'` gives { patch } (a string that
   * `git apply` accepts; a Buffer when the patch is not UTF-8).
   */
  async diff(opts = {}) {
    checkKeys(opts, new Set(['format', 'diffs', 'paths']), 'diff');
    const r = await this._req('workspace.diff', { ...opts });
    if (r.encoding === 'base64' && typeof r.patch === 'string') r.patch = Buffer.from(r.patch, 'base64');
    return r;
  }

  /**
   * Applies the changes (all, or `paths`) to the host directory. Resolves
   * with the server's result when every selected change was applied;
   * rejects with a CommitError (code "commit_conflict" with `conflicts`, or
   * "commit_failed") otherwise. `force: true` applies despite conflicts.
   */
  async commit(opts = {}) {
    checkKeys(opts, new Set(['paths', 'force']), 'commit');
    const r = await this._req('workspace.commit', { ...opts });
    if (r.committed === false) throw new CommitError(r);
    return r;
  }

  /** Discards the changes: /workspace shows the host directory again. */
  async reset() { return this._req('workspace.reset', {}); }

  /**
   * Publishes a port of the session on the host's loopback: a server started
   * inside on `port` is reached at the result's `url` (127.0.0.1:hostPort;
   * a free port unless `hostPort`). Only this uid may connect unless
   * `anyUid: true`. `hosts: ['localhost']`: relay only HTTP requests whose
   * Host names one of them (against DNS rebinding). Resolves with
   * { port, hostPort, host, url, anyUid, hosts }.
   */
  async publish(port, opts = {}) {
    checkKeys(opts, new Set(['hostPort', 'anyUid', 'hosts']), 'publish');
    return this._req('session.publish', { port, ...opts });
  }

  /** Closes a published port's listener and its connections. */
  async unpublish(port) { await this._req('session.unpublish', { port }); }

  /**
   * A new session with this one's parameters whose workspace layer (the
   * copy-on-write layer, or a tmpfs /workspace), home and /tmp start as
   * copies of this one's; running processes are not copied. Resolves with
   * the new Session (its createInfo has forkedFrom and copyMs).
   */
  async fork(opts = {}) {
    checkKeys(opts, new Set(['label']), 'fork');
    const info = await this._req('session.fork', { ...opts });
    return new Session(this.fluebox, info.session, info);
  }

  /**
   * Changes the session's network rules while it runs (the owner only;
   * nothing inside the session can): one of
   *   { allowNet: 'name' | '*.name' [':port'] }
   *   { allowHttp: 'METHODS HOST[:PORT][/PATH-PREFIX]' }
   *   { secret: 'NAME:HOST[,HOST...]' | 'NAME=@FILE:HOSTS' | { name, hosts, value?, file? } }
   * A secret's value is read here (this process's environment, or the file);
   * the result's `standin` is the one the relay replaces (a secret new to
   * the session gets a new one, which is not in the environment of its
   * processes, made at its start; one it has keeps its own, with the new
   * value and hosts). `ttlMs` limits the
   * grant's life. Resolves with { kind, spec, ttlMs, expiresAt, standin? }.
   */
  async grant(what, opts = {}) {
    checkKeys(opts, new Set(['ttlMs']), 'grant');
    const p = grantParams(what, 'grant');
    if (opts.ttlMs !== undefined) p.ttlMs = ceilMs(opts.ttlMs, 'ttlMs');
    return this._req('session.grant', p);
  }

  /** Takes back what grant() gave (or what the session was created with):
   * the same forms, no value. */
  async revoke(what) {
    const p = grantParams(what, 'revoke');
    delete p.value;
    return this._req('session.revoke', p);
  }

  /** Saves the copy-on-write layer as `name` (cow sessions). */
  async snapshot(name) { return this._req('session.snapshot', { name }); }

  /** Puts the workspace back as it was at snapshot `name`. */
  async restore(name) { return this._req('session.restore', { name }); }
}

/** session.grant/revoke params from { allowNet } | { allowHttp } | { secret }. */
function grantParams(what, fn) {
  if (!what || typeof what !== 'object') throw new TypeError(`${fn}: expected { allowNet }, { allowHttp } or { secret }`);
  const keys = Object.keys(what).filter((k) => what[k] !== undefined);
  if (keys.length !== 1 || !['allowNet', 'allowHttp', 'secret'].includes(keys[0])) {
    throw new TypeError(`${fn}: expected exactly one of allowNet, allowHttp, secret`);
  }
  const kind = keys[0];
  const v = what[kind];
  if (kind !== 'secret') {
    if (typeof v !== 'string' || !v) throw new TypeError(`${fn}: ${kind} must be a non-empty string`);
    return { kind, spec: v };
  }
  if (fn === 'revoke') {
    const name = typeof v === 'string' ? v.replace(/=@[^:]*/, '')
      : v && (v.hosts ? `${v.name}:${[].concat(v.hosts).join(',')}` : v.name);
    return { kind, spec: name };
  }
  const s = secretParam(v);
  if (!s.hosts) throw new TypeError(`${fn}: secret ${s.name}: which hosts? (NAME:HOST[,HOST...])`);
  return { kind, spec: `${s.name}:${s.hosts.join(',')}`, value: s.value };
}

class ExecStream {
  constructor(session, params, wantBuffer, signal) {
    this.session = session;
    this.execId = params.execId;
    this.pid = null;
    this._wantBuffer = wantBuffer;
    this._queue = [];
    this._queued = 0;
    this._waiter = null;
    this._done = false;
    this._error = null;
    this._iterating = false;
    this._highSeen = false;
    const conn = session.fluebox._conn;
    this._conn = conn;
    let startResolve;
    this.started = new Promise((r) => { startResolve = r; });
    this.started.catch(() => {});

    if (signal && signal.aborted) {
      this._error = abortError(signal, 'exec');
      this._done = true;
      this.result = Promise.reject(this._error);
      this.result.catch(() => {});
      startResolve(null);
      return;
    }
    const onEvent = (msg) => {
      if (msg.event === 'start') {
        this.pid = msg.pid;
        startResolve(msg);
        return;
      }
      if (msg.event !== 'stdout' && msg.event !== 'stderr') return;
      const data = wantBuffer ? Buffer.from(msg.data || '', 'base64') : msg.data || '';
      this._queue.push({ stream: msg.event, data });
      this._queued += data.length;
      this._wake();
    };
    // Hysteresis: once above the high mark, stay paused until below the low one.
    const flow = {
      wantsPause: () => {
        if (!this._iterating) return false;
        if (this._queued > STREAM_HIGH) this._highSeen = true;
        else if (this._queued < STREAM_LOW) this._highSeen = false;
        return this._highSeen;
      },
    };
    const run = session._req('exec', params, onEvent, flow);
    let onAbort = null;
    this.result = new Promise((resolve, reject) => {
      const finish = (err, r) => {
        if (this._done && this._error) return; // already aborted
        this._done = true;
        if (err) { this._error = err; reject(err); } else resolve(r);
        startResolve(null);
        if (signal && onAbort) signal.removeEventListener('abort', onAbort);
        this._wake();
      };
      run.then((r) => finish(null, r), (e) => finish(e));
      if (signal) {
        onAbort = () => {
          const e = abortError(signal, 'exec');
          this._error = e;
          this._done = true;
          reject(e);
          startResolve(null);
          this.kill('SIGKILL').catch(() => {});
          this._wake();
        };
        signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    this.result.catch(() => {});
  }

  /** Sends a signal (default SIGKILL) to the command's process group. */
  kill(signal) { return this.session.kill(this.execId, signal); }

  /**
   * Streaming stdin (a stream started with `stdinOpen: true`): feeds `data`
   * (a string, as UTF-8, or bytes) to the command; resolves once the
   * sandbox's pipe has taken it, so a command that does not read holds the
   * writer up. Rejects with a FileSystemError (code EPIPE) when the
   * command's stdin is closed, NotFoundError when it ended.
   */
  async write(data) {
    const isStr = typeof data === 'string';
    const buf = isStr ? Buffer.from(data, 'utf8') : toBytes(data);
    for (let i = 0; i < buf.length || i === 0; i += STDIN_CHUNK) {
      const part = buf.subarray(i, i + STDIN_CHUNK);
      await this.session._req('exec.write', { execId: this.execId, data: part.toString('base64'), encoding: 'base64' });
      if (!buf.length) break;
    }
    return buf.length;
  }

  /** End of input: the command reads EOF once it has read what was written. */
  async closeStdin() { await this.session._req('exec.closeStdin', { execId: this.execId }); }

  /** A command started with `tty`: its terminal's new size (it gets SIGWINCH). */
  async resize(rows, cols) { await this.session._req('exec.resize', { execId: this.execId, rows, cols }); }

  /** The command's stdin as a node:stream Writable (end() closes it). */
  get stdin() {
    if (!this._stdin) {
      const { Writable } = require('node:stream');
      this._stdin = new Writable({
        write: (chunk, _enc, cb) => { this.write(chunk).then(() => cb(), cb); },
        final: (cb) => { this.closeStdin().then(() => cb(), cb); },
      });
    }
    return this._stdin;
  }

  _wake() {
    if (this._waiter) { const w = this._waiter; this._waiter = null; w(); }
  }

  _resumeIfLow() { this._conn.reflow(); }

  async *[Symbol.asyncIterator]() {
    this._iterating = true;
    let finished = false;
    try {
      for (;;) {
        if (this._queue.length) {
          const c = this._queue.shift();
          this._queued -= c.data.length;
          this._resumeIfLow();
          yield c;
          continue;
        }
        if (this._done) {
          finished = true;
          if (this._error) throw this._error;
          return;
        }
        await new Promise((r) => { this._waiter = r; });
      }
    } finally {
      this._iterating = false;
      this._conn.reflow();
      if (!finished && !this._done) this.kill('SIGKILL').catch(() => {});
    }
  }

  /** Collects the remaining output into { stdout, stderr } plus the result. */
  async collect() {
    const out = [];
    const err = [];
    for await (const c of this) (c.stream === 'stdout' ? out : err).push(c.data);
    const r = await this.result;
    const join = (a) => (this._wantBuffer ? Buffer.concat(a) : a.join(''));
    return { ...r, stdout: join(out), stderr: join(err) };
  }
}

// `await using fb = await Fluebox.connect()` where the runtime has explicit
// resource management (Symbol.asyncDispose exists from Node.js 20).
if (typeof Symbol.asyncDispose === 'symbol') {
  Fluebox.prototype[Symbol.asyncDispose] = async function dispose() { await this.close(); };
  Session.prototype[Symbol.asyncDispose] = async function dispose() {
    try { await this.destroy(); } catch (e) { if (!(e instanceof FlueboxError)) throw e; }
  };
}

module.exports = { Fluebox, Session, ExecStream, sessionParams, secretParam, callerOf, ConnectionError };
