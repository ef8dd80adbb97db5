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
const { FlueboxError, UntrustedServerError } = require('./errors.cjs');

/** Why p is not a private directory of uid (null when it is): a directory,
 * not a symlink, owned by uid, mode 0700 (nobody else may add a socket). */
function privateDirProblem(p, uid) {
  let st;
  try {
    st = fs.lstatSync(p);
  } catch (e) {
    return `${p}: ${e.code}`;
  }
  if (!st.isDirectory()) return `${p} is not a directory`;
  if (st.uid !== uid) return `${p} is owned by uid ${st.uid}, not by you (uid ${uid})`;
  if (st.mode & 0o077) return `${p} has mode ${(st.mode & 0o7777).toString(8).padStart(4, '0')}; it must be 0700`;
  return null;
}

/** uid's id one user namespace up (/proc/self/uid_map), as the server names
 * its directories: uid 0 of an `unshare -r` namespace is not root. */
function outerUid(uid) {
  let map = '';
  try { map = fs.readFileSync('/proc/self/uid_map', 'utf8'); } catch { return uid; }
  for (const line of map.split('\n')) {
    const f = line.trim().split(/\s+/).map(Number);
    if (f.length === 3 && f.every(Number.isInteger) && uid >= f[0] && uid < f[0] + f[2]) return f[1] + (uid - f[0]);
  }
  return uid;
}

/** The socket path a client uses when none is given: in the user's private
 * directory, the same rule as the server's (docs/protocol.md section 1).
 * Throws UntrustedServerError when the last choice, /tmp/fluebox-UID, exists
 * but is not private (another user could have made it to catch the client). */
function defaultSocketPath(env = process.env) {
  if (env.FLUEBOX_SOCKET) return env.FLUEBOX_SOCKET;
  const uid = process.getuid ? process.getuid() : 0;
  const xdg = env.XDG_RUNTIME_DIR;
  if (xdg && path.isAbsolute(xdg) && !privateDirProblem(xdg, uid)) return path.join(xdg, 'fluebox.sock');
  const name = outerUid(uid);
  const run = `/run/user/${name}`;
  if (!privateDirProblem(run, uid)) return path.join(run, 'fluebox.sock');
  const d = `/tmp/fluebox-${name}`;
  let exists = true;
  try { fs.lstatSync(d); } catch { exists = false; }
  if (exists) {
    const why = privateDirProblem(d, uid);
    if (why) throw new UntrustedServerError(`refusing to use the socket in ${d}: ${why}`, { path: d });
  }
  return path.join(d, 'fluebox.sock');
}

/** Whose server a client talks to: the user's own, root's, and the one named
 * by `serverUid` or FLUEBOX_SERVER_UID (a server another user opened to you). */
function trustedUids(serverUid, env = process.env) {
  const uids = [process.getuid ? process.getuid() : 0, 0];
  let extra = serverUid;
  if (extra === undefined || extra === null) {
    if (env.FLUEBOX_SERVER_UID) {
      if (!/^[0-9]+$/.test(env.FLUEBOX_SERVER_UID)) throw new TypeError(`FLUEBOX_SERVER_UID must be a numeric uid, not ${JSON.stringify(env.FLUEBOX_SERVER_UID)}`);
      extra = Number(env.FLUEBOX_SERVER_UID);
    }
  }
  if (extra !== undefined && extra !== null) {
    if (!Number.isInteger(extra) || extra < 0) throw new TypeError(`serverUid must be a numeric uid, not ${JSON.stringify(extra)}`);
    uids.push(extra);
  }
  return uids;
}

/** Before connecting: the socket file belongs to a trusted uid, and so does
 * its directory, which nobody else may change (not writable by group or
 * others, unless sticky like /tmp). Node.js cannot read SO_PEERCRED; a
 * listener can only have bound a path that its owner could create, in a
 * directory where only trusted users can replace it, so this stands in for
 * the server's uid that the C and Python clients also check. */
function checkSocketPath(sockPath, uids) {
  const me = uids[0];
  const also = uids.length > 2 && !uids.slice(0, 2).includes(uids[2]) ? ` or uid ${uids[2]}` : ' (pass serverUid to trust another)';
  const dir = path.dirname(path.resolve(sockPath));
  let dst;
  try { dst = fs.statSync(dir); } catch { return; } // connect() says what is missing
  if (!uids.includes(dst.uid)) {
    throw new UntrustedServerError(`refusing to connect to ${sockPath}: its directory ${dir} is owned by uid ${dst.uid}, not by you (uid ${me}) or root${also}`, { path: sockPath });
  }
  if ((dst.mode & 0o022) && !(dst.mode & 0o1000)) {
    throw new UntrustedServerError(`refusing to connect to ${sockPath}: its directory ${dir} has mode ${(dst.mode & 0o7777).toString(8).padStart(4, '0')} (others could replace the socket)`, { path: sockPath });
  }
  let st;
  try { st = fs.lstatSync(sockPath); } catch { return; }
  if (!uids.includes(st.uid)) {
    throw new UntrustedServerError(`refusing to connect to ${sockPath}: the socket is owned by uid ${st.uid}, not by you (uid ${me}) or root${also}`, { path: sockPath });
  }
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

// The binary a published package carries (make dist puts it there), for the
// platform it was built for: vendor/PLATFORM-ARCH/fluebox.
const VENDOR = path.join(__dirname, '..', 'vendor');
const ELF_MACHINE = { x64: 62, arm64: 183, ia32: 3, arm: 40, riscv64: 243, s390x: 22, ppc64: 21 };

/** The platforms whose binary this package carries ("linux-x64"), if any. */
function bundledPlatforms() {
  try {
    return fs.readdirSync(VENDOR).filter((d) => isExecutable(path.join(VENDOR, d, 'fluebox')));
  } catch {
    return [];
  }
}

/** The ELF machine number of file p, or -1 when it is not an ELF file. */
function elfMachine(p) {
  const b = Buffer.alloc(20);
  let fd;
  try {
    fd = fs.openSync(p, 'r');
    if (fs.readSync(fd, b, 0, 20, 0) < 20 || b.readUInt32BE(0) !== 0x7f454c46) return -1;
    return b[5] === 2 ? b.readUInt16BE(18) : b.readUInt16LE(18);
  } catch {
    return -1;
  } finally {
    if (fd !== undefined) fs.closeSync(fd);
  }
}

/** The bundled binary for this machine, null when the package carries none,
 *  or a one-line error when it carries one that cannot run here. */
function bundledBinary() {
  const have = bundledPlatforms();
  if (!have.length) return null;
  const want = `${process.platform}-${process.arch}`;
  const p = path.join(VENDOR, want, 'fluebox');
  if (have.includes(want) && elfMachine(p) === ELF_MACHINE[process.arch]) return p;
  throw new FlueboxError(
    'binary_not_found',
    `the fluebox binary in this package is for ${have.join(', ')} and cannot run on this machine (${want}): ` +
      'set FLUEBOX_BIN or put a fluebox built for it on PATH (its `fluebox doctor` says what this machine offers)',
  );
}

/** The fluebox binary: the `binary` option, FLUEBOX_BIN, the one this
 *  package carries (an installed package from make dist), or `fluebox` on
 *  PATH. */
function findBinary(binary, env = process.env) {
  const candidates = [];
  if (binary) candidates.push(['the binary option', binary]);
  else if (env.FLUEBOX_BIN) candidates.push(['FLUEBOX_BIN', env.FLUEBOX_BIN]);
  for (const [from, p] of candidates) {
    if (isExecutable(p)) return path.resolve(p);
    throw new FlueboxError('binary_not_found', `fluebox binary not found: ${p} (from ${from}) is not an executable file`);
  }
  const bundled = bundledBinary();
  if (bundled) return bundled;
  const found = which('fluebox', env);
  if (found) return found;
  throw new FlueboxError(
    'binary_not_found',
    'fluebox binary not found: neither the binary option, FLUEBOX_BIN, this package nor PATH holds a fluebox executable',
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
   * Starts `fluebox serve --socket DIR/fluebox.sock --exit-with-parent --remove-dir
   * --ready-fd 3 ARGS...` and resolves once it has written "ready" (its
   * socket listens), with the first Connection.
   */
  static async start({ binary, serverArgs = [], startTimeoutMs = 20000, env } = {}) {
    const bin = findBinary(binary, env || process.env);
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'fluebox-client-'));
    fs.chmodSync(dir, 0o700);
    const socket = path.join(dir, 'fluebox.sock');
    // --exit-with-parent: the server shuts down cleanly when this process
    // dies, however it dies (SIGKILL included); --remove-dir: it removes
    // its directory as it stops, so nothing is left behind then either.
    const args = ['serve', '--socket', socket, '--exit-with-parent', '--remove-dir', '--ready-fd', '3', ...serverArgs];
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
      // One line, and where to look: doctor says which kernel feature or
      // setting this machine lacks.
      throw new FlueboxError(
        'server_failed',
        `fluebox serve (${bin}) ${why}${server.stderrText() ? ': ' + server.stderrText() : ''} (run \`${bin} doctor\` to see what this machine lacks)`,
      );
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

module.exports = { defaultSocketPath, trustedUids, checkSocketPath, findBinary, PrivateServer };
