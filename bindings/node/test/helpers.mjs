// Test helpers: a real `fluebox serve` per test file (never a mock).
// The binary: FB (set by tests/run.sh), FLUEBOX_BIN, or ../../fluebox.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import net from 'node:net';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));

export function binary() {
  const b = process.env.FB || process.env.FLUEBOX_BIN || path.resolve(here, '../../../fluebox');
  if (!fs.existsSync(b)) throw new Error(`fluebox binary not found at ${b} (set FB)`);
  return b;
}

// Every directory made here is removed when the test process exits.
const made = [];
process.on('exit', () => {
  for (const d of made) {
    try { fs.rmSync(d, { recursive: true, force: true }); } catch { /* best effort */ }
  }
});

export function tmpdir(prefix = 'fbnode-') {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  fs.chmodSync(d, 0o755);
  made.push(d);
  return d;
}

function canConnect(sock) {
  return new Promise((resolve) => {
    const c = net.createConnection({ path: sock });
    c.once('connect', () => { c.destroy(); resolve(true); });
    c.once('error', () => resolve(false));
  });
}

/** Starts `fluebox serve --socket DIR/s.sock ARGS` and waits until it accepts. */
export async function startServer(args = []) {
  const dir = tmpdir('fbsrv-');
  const socket = path.join(dir, 's.sock');
  const proc = spawn(binary(), ['serve', '--socket', socket, ...args], { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  proc.stderr.on('data', (b) => { if (stderr.length < 20000) stderr += b; });
  let exited = null;
  const exitP = new Promise((r) => proc.once('exit', (code, sig) => { exited = { code, sig }; r(exited); }));
  const deadline = Date.now() + 20000;
  while (!(fs.existsSync(socket) && (await canConnect(socket)))) {
    if (exited) throw new Error(`fluebox serve exited ${JSON.stringify(exited)}: ${stderr}`);
    if (Date.now() > deadline) { proc.kill('SIGKILL'); throw new Error(`fluebox serve not ready: ${stderr}`); }
    await new Promise((r) => setTimeout(r, 20));
  }
  return {
    socket,
    dir,
    proc,
    get stderr() { return stderr; },
    get exited() { return exited; },
    async stop(sig = 'SIGTERM') {
      if (!exited) {
        proc.kill(sig);
        const t = setTimeout(() => proc.kill('SIGKILL'), 10000);
        await exitP;
        clearTimeout(t);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export function pidAlive(pid) {
  try { process.kill(pid, 0); return true; } catch (e) { return e.code === 'EPERM'; }
}

export async function waitFor(cond, ms = 10000, what = 'condition') {
  const end = Date.now() + ms;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}
