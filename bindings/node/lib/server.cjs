'use strict';
// server.cjs — finding a running `fluebox serve`, or starting a private one.
//
// The default socket follows the rule of docs/protocol.md section 1 (the
// same rule the server and the CLI use). A private server gets a socket in a
// fresh 0700 directory, runs as a child of this process, and is stopped when
// the client closes or the process exits (and, through --exit-with-parent,
// when this process is killed).

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Connection } = require('./connection.cjs');
const { FlueboxError } = require('./errors.cjs');

function ownedDir(p, uid) {
  try {
    const st = fs.statSync(p);
    return st.isDirectory() && st.uid === uid;
  } catch {
    return false;
  }
}

/** The socket path a client uses when none is given. */
function defaultSocketPath(env = process.env) {
  if (env.FLUEBOX_SOCKET) return env.FLUEBOX_SOCKET;
  const uid = process.getuid ? process.getuid() : 0;
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && ownedDir(xdg, uid)) return path.join(xdg, 'fluebox.sock');
  const run = `/run/user/${uid}`;
  if (ownedDir(run, uid)) return path.join(run, 'fluebox.sock');
  return `/tmp/fluebox-${uid}/fluebox.sock`;
}

function isExecutable(p) {
  try {
    fs.accessSync(p, fs.constants.X_OK);
    return fs.statSync(p).isFile();
  } catch {
    return false;
  }
}

function which(name, env = process.env) {
  for (const dir of (env.PATH || '').split(':')) {
    if (!dir) continue;
    const p = path.join(dir, name);
    if (isExecutable(p)) return p;
  }
  return null;
}

/** The fluebox binary: the `binary` option, FLUEBOX_BIN, or `fluebox` on PATH. */
function findBinary(binary, env = process.env) {
  const candidates = [];
  if (binary) candidates.push(['the binary option', binary]);
  else if (env.FLUEBOX_BIN) candidates.push(['FLUEBOX_BIN', env.FLUEBOX_BIN]);
  for (const [from, p] of candidates) {
    if (isExecutable(p)) return path.resolve(p);
    throw new FlueboxError('binary_not_found', `fluebox binary not found: ${p} (from ${from}) is not an executable file`);
  }
  const found = which('fluebox', env);
  if (found) return found;
  throw new FlueboxError(
    'binary_not_found',
    'fluebox binary not found: neither the binary option, FLUEBOX_BIN nor PATH names a fluebox executable',
  );
}

const live = new Set();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const s of live) s.killNow();
  });
}

class PrivateServer {
  /**
   * Starts `fluebox serve --socket DIR/fluebox.sock --exit-with-parent
   * --ready-fd 3 ARGS...` and resolves once it has written "ready" (its
   * socket listens), with the first Connection.
   */
  static async start({ binary, serverArgs = [], startTimeoutMs = 20000, env } = {}) {
    const bin = findBinary(binary, env || process.env);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fluebox-client-'));
    fs.chmodSync(dir, 0o700);
    const socket = path.join(dir, 'fluebox.sock');
    // --exit-with-parent: the server shuts down cleanly when this process
    // dies, however it dies (SIGKILL included).
    const args = ['serve', '--socket', socket, '--exit-with-parent', '--ready-fd', '3', ...serverArgs];
    const child = spawn(bin, args, { stdio: ['ignore', 'ignore', 'pipe', 'pipe'], env: env || process.env });
    const server = new PrivateServer(child, dir, socket, bin);
    const ready = await new Promise((resolve) => {
      let got = '';
      const timer = setTimeout(() => resolve('timeout'), startTimeoutMs);
      const done = (v) => { clearTimeout(timer); resolve(v); };
      child.stdio[3].on('data', (b) => { got += b; if (got.includes('ready\n')) done('ready'); });
      child.stdio[3].on('error', () => {});
      child.once('exit', () => done('exited'));
    });
    child.stdio[3].destroy();
    if (ready !== 'ready') {
      if (!server.exited) await server.stop();
      else server._cleanup();
      await server.waitExit(1000);
      const why = ready === 'timeout' ? `did not become ready within ${startTimeoutMs} ms` : `exited (${server.exitDescription()}) before it was ready`;
      throw new FlueboxError('server_failed', `fluebox serve ${why}${server.stderrText() ? ': ' + server.stderrText() : ''}`);
    }
    try {
      const conn = await Connection.open(socket, { timeoutMs: 5000 });
      return { server, conn };
    } catch (e) {
      await server.stop();
      throw e;
    }
  }

  constructor(child, dir, socket, binary) {
    this.child = child;
    this.dir = dir;
    this.socket = socket;
    this.binary = binary;
    this.exited = false;
    this.exitCode = null;
    this.exitSignal = null;
    this._stderr = [];
    this._stderrBytes = 0;
    this._exitWaiters = [];
    child.stderr.on('data', (b) => {
      if (this._stderrBytes < 65536) { this._stderr.push(b); this._stderrBytes += b.length; }
    });
    child.on('exit', (code, sig) => {
      this.exited = true;
      this.exitCode = code;
      this.exitSignal = sig;
      live.delete(this);
      for (const w of this._exitWaiters) w();
      this._exitWaiters = [];
    });
    child.on('error', () => { /* reported through 'exit' */ });
    child.unref();
    child.stderr.unref?.();
    live.add(this);
    installExitHook();
  }

  get pid() { return this.child.pid; }

  stderrText() {
    return Buffer.concat(this._stderr).toString('utf8').trim().split('\n').slice(-5).join(' | ');
  }

  exitDescription() {
    return this.exitSignal ? `signal ${this.exitSignal}` : `exit code ${this.exitCode}`;
  }

  waitExit(timeoutMs) {
    if (this.exited) return Promise.resolve(true);
    return new Promise((resolve) => {
      const t = setTimeout(() => resolve(false), timeoutMs);
      this._exitWaiters.push(() => { clearTimeout(t); resolve(true); });
    });
  }

  /** SIGTERM (the server destroys its sessions and exits), then SIGKILL. */
  async stop(graceMs = 5000) {
    if (!this.exited) {
      try { this.child.kill('SIGTERM'); } catch { /* gone */ }
      if (!(await this.waitExit(graceMs))) {
        try { this.child.kill('SIGKILL'); } catch { /* gone */ }
        await this.waitExit(2000);
      }
    }
    this._cleanup();
  }

  /** At process exit: no time to wait, so just signal it. */
  killNow() {
    if (!this.exited) {
      try { this.child.kill('SIGTERM'); } catch { /* gone */ }
    }
  }

  _cleanup() {
    live.delete(this);
    try { fs.rmSync(this.dir, { recursive: true, force: true }); } catch { /* best effort */ }
  }
}

module.exports = { defaultSocketPath, findBinary, PrivateServer };
