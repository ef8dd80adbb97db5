'use strict';
// flue.cjs — fluebox as the sandbox of a Flue agent (`fluebox/flue`).
//
// `fluebox(options)` returns a Flue SandboxFactory: `createSandbox({ id })`
// resolves to an object with Flue's Sandbox surface (exec, readFile,
// readFileBuffer, writeFile, stat, readdir, exists, mkdir, rm, cwd,
// resolvePath). It follows the contract in the shared notes (and Flue's
// "Sandbox Adapter API" page) without importing @flue/runtime: the types are
// structural, and the two error types Flue recognises are reproduced by
// shape (`type: 'sandbox_died'`, `type: 'sandbox_operation_unsupported'`).
//
// Durability: each id gets its own host directory (under `workspaceRoot`,
// by default $XDG_STATE_HOME/fluebox/flue), bound at /workspace. The same id
// returns the same sandbox object in this process, and the same files
// always. If the session dies, calls in flight reject with SandboxDiedError;
// the next call starts a fresh session over the same directory.

const fs = require('node:fs');
const os = require('node:os');
const nodePath = require('node:path');
const crypto = require('node:crypto');
const { Fluebox } = require('./client.cjs');
const {
  FlueboxError,
  ConnectionError,
  FileSystemError,
  LimitExceededError,
  SandboxDiedError,
  NotFoundError,
  abortError,
} = require('./errors.cjs');

const posix = nodePath.posix;

class SandboxOperationUnsupportedError extends FlueboxError {
  /** @param {string} operation @param {string[]} options the option names refused */
  constructor(operation, options) {
    const names = Array.isArray(options) ? options.map(String) : [String(options)];
    super(
      'sandbox_operation_unsupported',
      `fluebox does not support ${operation} with ${names.map((n) => `"${n}"`).join(', ') || '(none)'}.`,
    );
    this.name = 'SandboxOperationUnsupportedError';
    this.type = 'sandbox_operation_unsupported';
    this.details = 'The requested operation was rejected before the filesystem was modified.';
    this.dev = '';
    this.meta = { operation, provider: 'fluebox', options: names };
  }
}

function died(operation, cause) {
  const e = new SandboxDiedError(
    `Sandbox ${operation} failed: the sandbox stopped while the call was in flight.`,
    { code: cause && cause.code ? cause.code : 'session_dead' },
  );
  e.details = 'The sandbox is no longer running; the interrupted call did not complete.';
  e.dev = cause && cause.message ? `fluebox: ${cause.message}` : '';
  e.meta = { operation, reason: 'stopped' };
  if (cause !== undefined) e.cause = cause;
  return e;
}

function isDeath(e) {
  return e instanceof SandboxDiedError || e instanceof ConnectionError;
}

function onlyKeys(operation, opts, allowed) {
  if (opts === undefined || opts === null) return {};
  if (typeof opts !== 'object') throw new SandboxOperationUnsupportedError(operation, [typeof opts]);
  const bad = Object.keys(opts).filter((k) => !allowed.includes(k) && opts[k] !== undefined);
  if (bad.length) throw new SandboxOperationUnsupportedError(operation, bad);
  for (const k of allowed) {
    if (k !== 'signal' && k !== 'env' && k !== 'cwd' && k !== 'timeoutMs' && opts[k] !== undefined && typeof opts[k] !== 'boolean') {
      throw new SandboxOperationUnsupportedError(operation, [k]);
    }
  }
  return opts;
}

/** Rejects as soon as `signal` fires, whatever `p` does later (the command
 * itself is killed by the exec's own signal handling). */
function raceAbort(p, signal) {
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(abortError(signal, 'exec'));
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(
      (r) => { signal.removeEventListener('abort', onAbort); resolve(r); },
      (e) => { signal.removeEventListener('abort', onAbort); reject(e); },
    );
  });
}

function stateDir() {
  const base = process.env.XDG_STATE_HOME || nodePath.join(os.homedir(), '.local', 'state');
  return nodePath.join(base, 'fluebox', 'flue');
}

/** A directory name for an id: readable prefix plus a hash (no traversal,
 * no collisions between ids that sanitize alike). */
function dirNameFor(id) {
  const clean = String(id).replace(/[^A-Za-z0-9._-]/g, '_').replace(/^\.+/, '_').slice(0, 48) || 'id';
  const h = crypto.createHash('sha256').update(String(id)).digest('hex').slice(0, 12);
  return `${clean}-${h}`;
}

/** Sessions are reused only when they were made with the same options. */
function optionsHash(sessionOpts, workspace, cwd) {
  // A secret given with its value counts by its name and hosts: no value in a label.
  const o = { ...sessionOpts };
  if (Array.isArray(o.secrets)) {
    o.secrets = o.secrets.map((x) => (x && typeof x === 'object' ? { name: x.name, hosts: x.hosts, file: x.file } : x));
  }
  return crypto.createHash('sha256').update(JSON.stringify([o, workspace, cwd])).digest('hex').slice(0, 12);
}

// Clients shared by every factory of this process, keyed by how they connect:
// Flue builds a new factory on every render, so nothing may be per-factory.
const clients = new Map();
const sandboxes = new Map();

function connectShared(connectOpts) {
  const key = JSON.stringify(connectOpts);
  let entry = clients.get(key);
  if (entry) {
    const alive = entry.then((fb) => (fb.closed ? null : fb), () => null);
    return alive.then((fb) => {
      if (fb) return fb;
      if (clients.get(key) === entry) clients.delete(key);
      return connectShared(connectOpts);
    });
  }
  entry = Fluebox.connect(connectOpts);
  clients.set(key, entry);
  entry.catch(() => { if (clients.get(key) === entry) clients.delete(key); });
  return entry;
}

const FACTORY_KEYS = new Set([
  'client', 'socket', 'binary', 'private', 'serverArgs', 'serverUid',
  'workspace', 'workspaceRoot', 'cwd', 'shell', 'reuse',
  'profile', 'limits', 'memory', 'cpus', 'pids', 'disk', 'nofile', 'fsize', 'timeoutMs',
  'network', 'allowNet', 'env', 'ttlMs', 'idleTimeoutMs', 'options', 'pool',
  'secrets', 'allowHttp', 'upstreamCa',
]);

/**
 * The Flue sandbox factory.
 * @param {object} [options] see flue.d.ts (FlueboxFlueOptions)
 */
function fluebox(options = {}) {
  for (const k of Object.keys(options)) {
    if (!FACTORY_KEYS.has(k)) throw new TypeError(`fluebox(): unknown option "${k}"`);
  }
  const o = { ...options };
  const connectOpts = {};
  for (const k of ['socket', 'binary', 'private', 'serverArgs', 'serverUid']) if (o[k] !== undefined) connectOpts[k] = o[k];
  const sessionOpts = {};
  for (const k of ['profile', 'limits', 'memory', 'cpus', 'pids', 'disk', 'nofile', 'fsize', 'timeoutMs',
    'network', 'allowNet', 'env', 'ttlMs', 'idleTimeoutMs', 'options', 'pool',
    'secrets', 'allowHttp', 'upstreamCa']) {
    if (o[k] !== undefined) sessionOpts[k] = o[k];
  }
  const cwd = o.cwd || '/workspace';
  if (!posix.isAbsolute(cwd)) throw new TypeError('fluebox(): cwd must be an absolute path inside the sandbox');

  function workspaceFor(id) {
    if (o.workspace === null || o.workspace === false) return null;
    if (typeof o.workspace === 'function') {
      const w = o.workspace(id);
      return w ? nodePath.resolve(w) : null;
    }
    if (typeof o.workspace === 'string') return nodePath.resolve(o.workspace);
    return nodePath.join(nodePath.resolve(o.workspaceRoot || stateDir()), dirNameFor(id));
  }

  return {
    /** Flue calls this once per initialized harness; the same id gives the
     * same sandbox (and the same files). */
    async createSandbox({ id } = {}) {
      if (id === undefined || id === null) throw new TypeError('createSandbox: id is required');
      const workspace = workspaceFor(String(id));
      const key = JSON.stringify({ c: o.client ? null : connectOpts, s: sessionOpts, w: workspace, cwd, id: workspace ? null : String(id), sh: o.shell ?? null });
      const cached = o.client ? null : sandboxes.get(key);
      if (cached) return cached;
      if (workspace) fs.mkdirSync(workspace, { recursive: true, mode: 0o755 });
      const getClient = o.client ? () => Promise.resolve(o.client) : () => connectShared(connectOpts);
      const label = `flue:${dirNameFor(String(id))}:${optionsHash(sessionOpts, workspace, cwd)}`;
      const sb = new FlueboxSandbox({ getClient, sessionOpts, workspace, cwd, shell: o.shell, reuse: o.reuse !== false, id: String(id), label });
      await sb._ensure('createSandbox');
      if (!o.client) sandboxes.set(key, sb);
      return sb;
    },
    /** @deprecated Flue's former name for createSandbox. */
    createSessionEnv(opts) { return this.createSandbox(opts); },
  };
}

class FlueboxSandbox {
  constructor({ getClient, sessionOpts, workspace, cwd, shell, reuse, id, label }) {
    this._getClient = getClient;
    this._sessionOpts = sessionOpts;
    this._reuse = reuse;
    this._shellOpt = shell;
    this._shellArgv = undefined;
    this._session = null;
    this._starting = null;
    /** The Flue instance id this sandbox was created for. */
    this.id = id;
    /** The host directory bound at /workspace (null: an in-memory tmpfs). */
    this.workspace = workspace;
    /** The working directory inside the sandbox. */
    this.cwd = cwd;
    /** The session label that finds this sandbox's session again (for
     * example after the application restarts while the server runs on). */
    this.label = label;
  }

  /** The current fluebox session (a native surface beyond Flue's verbs). */
  get session() { return this._session; }

  resolvePath(p) {
    if (typeof p !== 'string') throw new TypeError('path must be a string');
    return posix.resolve(this.cwd, p);
  }

  async _ensure(operation) {
    if (this._session && !this._session.dead && !this._session.fluebox.closed) return this._session;
    if (!this._starting) {
      this._starting = (async () => {
        try {
          const fb = await this._getClient();
          const old = this._session;
          if (old && old.dead && !old.fluebox.closed) old.destroy().catch(() => {}); // a dead init stays listed until destroyed
          let s = null;
          if (this._reuse) {
            const list = await fb.listSessions({ label: this.label });
            const mine = list.filter((i) => i.state === 'ready' && i.workspace === this.workspace && i.cwd === this.cwd);
            if (mine.length) s = fb.session(mine[mine.length - 1].session);
          }
          if (!s) s = await fb.createSession({ ...this._sessionOpts, workspace: this.workspace, cwd: this.cwd, label: this.label });
          this._session = s;
          this._shellArgv = undefined;
          return s;
        } finally {
          this._starting = null;
        }
      })();
    }
    try {
      return await this._starting;
    } catch (e) {
      if (e instanceof ConnectionError) throw died(operation, e);
      throw e;
    }
  }

  /** Runs `fn(session)`; a session that vanished before the call (expired,
   * destroyed) is replaced once; death during the call is SandboxDiedError. */
  async _call(operation, fn) {
    for (let attempt = 0; ; attempt++) {
      const s = await this._ensure(operation);
      try {
        return await fn(s);
      } catch (e) {
        if (e instanceof NotFoundError && attempt === 0) { s.dead = true; continue; }
        if (isDeath(e)) { s.dead = true; throw died(operation, e); }
        throw e;
      }
    }
  }

  async _shell(s) {
    if (this._shellArgv !== undefined) return this._shellArgv;
    let sh = this._shellOpt;
    if (sh === undefined) sh = (await s.exists('/bin/bash').catch(() => false)) ? '/bin/bash' : null;
    this._shellArgv = sh ? [sh, '-c'] : null;
    return this._shellArgv;
  }

  async exec(command, options) {
    const opts = onlyKeys('exec', options, ['cwd', 'env', 'timeoutMs', 'signal']);
    if (typeof command !== 'string') throw new TypeError('exec: command must be a string');
    const signal = opts.signal;
    if (signal && signal.aborted) throw abortError(signal, 'exec');
    let timeoutMs;
    if (opts.timeoutMs !== undefined && opts.timeoutMs !== null) {
      if (typeof opts.timeoutMs !== 'number' || !(opts.timeoutMs >= 0)) throw new TypeError('exec: timeoutMs must be a non-negative number');
      if (opts.timeoutMs > 0) timeoutMs = Math.ceil(opts.timeoutMs);
    }
    const cwd = opts.cwd !== undefined ? this.resolvePath(opts.cwd) : this.cwd;
    const run = this._call('exec', async (s) => {
      const shell = await this._shell(s);
      const argv = shell ? [...shell, command] : command;
      const execOpts = { cwd };
      if (opts.env) execOpts.env = opts.env;
      execOpts.timeoutMs = timeoutMs === undefined ? 0 : timeoutMs;
      if (signal) execOpts.signal = signal;
      return s.exec(argv, execOpts);
    });
    let r;
    try {
      r = signal ? await raceAbort(run, signal) : await run;
    } catch (e) {
      // The command could not be started (the session's pids or memory
      // limit, too many commands at once): like a shell that cannot fork,
      // that is a result with fluebox's own exit code 125, not a transport
      // failure. Death, aborts and bad arguments still reject.
      if (e instanceof FileSystemError || e instanceof LimitExceededError) {
        return { stdout: '', stderr: `fluebox: cannot start the command: ${e.message}\n`, exitCode: 125 };
      }
      throw e;
    }
    let stderr = r.stderr;
    let exitCode = r.exitCode;
    if (r.timedOut) {
      exitCode = 124;
      // The server adds "fluebox: the command timed out after N ms and was
      // killed"; older servers did not.
      if (!/timed out after/.test(stderr)) {
        if (stderr && !stderr.endsWith('\n')) stderr += '\n';
        stderr += `fluebox: the command timed out after ${timeoutMs} ms and was killed\n`;
      }
    }
    if (r.stdoutTruncated || r.stderrTruncated) {
      if (stderr && !stderr.endsWith('\n')) stderr += '\n';
      stderr += r.truncatedBy === 'memory'
        ? 'fluebox: output truncated (the server\'s memory budget for this user was full)\n'
        : 'fluebox: output truncated (larger than the server\'s maxOutputBytes)\n';
    }
    return { stdout: r.stdout, stderr, exitCode };
  }

  readFile(path) {
    const p = this.resolvePath(path);
    return this._call('readFile', (s) => s.readFile(p));
  }

  async readFileBuffer(path) {
    const p = this.resolvePath(path);
    const b = await this._call('readFileBuffer', (s) => s.readFileBuffer(p));
    return new Uint8Array(b.buffer, b.byteOffset, b.byteLength);
  }

  async writeFile(path, content) {
    if (typeof content !== 'string' && !(content instanceof Uint8Array)) {
      throw new TypeError('writeFile: content must be a string or a Uint8Array');
    }
    const p = this.resolvePath(path);
    await this._call('writeFile', (s) => s.writeFile(p, content, { parents: true }));
  }

  async stat(path) {
    const p = this.resolvePath(path);
    return this._call('stat', async (s) => {
      const l = await s.stat(p, { follow: false });
      let t = l;
      if (l.type === 'symlink') t = await s.stat(p);
      const out = { isFile: t.type === 'file', isDirectory: t.type === 'dir', isSymbolicLink: l.type === 'symlink' };
      if (typeof t.size === 'number' && t.size >= 0) out.size = t.size;
      if (typeof t.mtimeMs === 'number') out.mtime = new Date(t.mtimeMs);
      return out;
    });
  }

  readdir(path) {
    const p = this.resolvePath(path);
    return this._call('readdir', (s) => s.readdir(p));
  }

  async exists(path) {
    try {
      const p = this.resolvePath(path);
      return await this._call('exists', (s) => s.exists(p));
    } catch {
      return false;
    }
  }

  async mkdir(path, options) {
    const opts = onlyKeys('mkdir', options, ['recursive']);
    const p = this.resolvePath(path);
    await this._call('mkdir', (s) => s.mkdir(p, { recursive: !!opts.recursive }));
  }

  async rm(path, options) {
    const opts = onlyKeys('rm', options, ['recursive', 'force']);
    const p = this.resolvePath(path);
    await this._call('rm', (s) => s.rm(p, { recursive: !!opts.recursive, force: !!opts.force }));
  }

  // ---- beyond Flue's verbs: what an agent's tools may want of fluebox ----

  /** Makes a server the agent started inside on `port` reachable from the
   * host: resolves with { url, hostPort, ... } (127.0.0.1; only this uid may
   * connect unless anyUid). */
  publish(port, options) {
    const opts = onlyKeys('publish', options, ['anyUid', 'hosts']);
    const o = opts.anyUid ? { anyUid: true } : {};
    if (opts.hosts) o.hosts = opts.hosts;
    return this._call('publish', (s) => s.publish(port, o));
  }

  unpublish(port) {
    return this._call('unpublish', (s) => s.unpublish(port));
  }

  /** Adds a name, an HTTP rule or a secret binding to the sandbox's network
   * rules while it runs ({ allowNet } | { allowHttp } | { secret }, optional
   * { ttlMs }); the agent inside cannot. Session.grant in the client. */
  grant(what, options) {
    return this._call('grant', (s) => s.grant(what, options || {}));
  }

  /** Takes back a grant (or a rule the sandbox was created with). */
  revoke(what) {
    return this._call('revoke', (s) => s.revoke(what));
  }

  /** A second sandbox that starts as a copy of this one's files (its
   * workspace when it is in memory, or a copy-on-write one; home; /tmp),
   * without its running processes; the two then diverge. */
  async fork(options) {
    const opts = options || {};
    const s2 = await this._call('fork', (s) => s.fork({ label: this.label }));
    const f = new FlueboxSandbox({
      getClient: this._getClient,
      sessionOpts: this._sessionOpts,
      workspace: this.workspace,
      cwd: this.cwd,
      shell: this._shellOpt,
      reuse: false,
      id: opts.id || `${this.id}-fork-${s2.id}`,
      label: this.label,
    });
    f._session = s2;
    return f;
  }

  /** Copy-on-write sandboxes (cow: true): save the workspace layer as
   * `name`, and put it back. */
  snapshot(name) {
    return this._call('snapshot', (s) => s.snapshot(name));
  }

  restore(name) {
    return this._call('restore', (s) => s.restore(name));
  }
}

/** For tests and applications: stops every shared client (and the private
 * servers they started). Flue itself never calls this. */
async function closeAll() {
  const all = [...clients.values()];
  clients.clear();
  sandboxes.clear();
  for (const p of all) {
    try { (await p).close && (await (await p).close()); } catch { /* already gone */ }
  }
}

module.exports = {
  fluebox,
  FlueboxSandbox,
  SandboxDiedError,
  SandboxOperationUnsupportedError,
  closeAll,
};
