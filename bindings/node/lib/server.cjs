'use strict';
// server.cjs — finding a running `fluebox serve`, or starting a private one.
//
// The default socket follows the rule of docs/protocol.md section 1 (the
// same rule the server and the CLI use). A private server gets a socket in a
// fresh 0700 directory, runs as a child of this process, and is stopped when
// the client closes or the process exits; where setpriv(1) exists it is
// started with a parent-death signal, so it also goes away if this process
// is killed with SIGKILL.

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn } = require('node:child_process');
const { Connection } = require('./connection.cjs');
const { ConnectionError, FlueboxError } = require('./errors.cjs');

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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

class PrivateServer {
  /**
   * Starts `fluebox serve --socket DIR/fluebox.sock ARGS...` and resolves
   * once the socket accepts connections, with the first Connection.
   */
  static async start({ binary, serverArgs = [], startTimeoutMs = 20000, env } = {}) {
    const bin = findBinary(binary, env || process.env);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fluebox-client-'));
    fs.chmodSync(dir, 0o700);
    const socket = path.join(dir, 'fluebox.sock');
    const args = ['serve', '--socket', socket, ...serverArgs];
    const setpriv = which('setpriv');
    const [cmd, argv] = setpriv
      ? [setpriv, ['--pdeathsig', 'TERM', '--', bin, ...args]]
      : [bin, args];
    const child = spawn(cmd, argv, { stdio: ['ignore', 'ignore', 'pipe'], env: env || process.env });
    const server = new PrivateServer(child, dir, socket, bin);
    const deadline = Date.now() + startTimeoutMs;
    let delay = 5;
    for (;;) {
      if (server.exited) {
        server._cleanup();
        throw new FlueboxError(
          'server_failed',
          `fluebox serve exited (${server.exitDescription()}) before it was ready${server.stderrText() ? ': ' + server.stderrText() : ''}`,
        );
      }
      if (fs.existsSync(socket)) {
        try {
          const conn = await Connection.open(socket, { timeoutMs: 2000 });
          return { server, conn };
        } catch (e) {
          if (!(e instanceof ConnectionError)) throw e;
        }
      }
      if (Date.now() > deadline) {
        await server.stop();
        throw new FlueboxError('server_failed', `fluebox serve did not accept connections on ${socket} within ${startTimeoutMs} ms${server.stderrText() ? ': ' + server.stderrText() : ''}`);
      }
      await sleep(delay);
      delay = Math.min(delay * 2, 100);
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
