// tests/mcp/lib.mjs — what the MCP tests share: result lines in the suite
// contract (tests/README.md), waiting for a condition, a raw JSON-RPC
// connection to `fluebox mcp` (lines on its stdin and stdout), and looking
// at /proc for what a run leaves behind.
import { spawn } from 'node:child_process';
import fs from 'node:fs';

export const FB = process.env.FB || 'fluebox';
let failed = 0;

export function ok(name) { console.log(`ok - ${name}`); }
export function fail(name, why) {
  failed++;
  console.log(`not ok - ${name}: ${String(why).replace(/\s+/g, ' ').slice(0, 600)}`);
}
export function check(name, cond, why) { if (cond) ok(name); else fail(name, why); }
export function end() { console.log('# end of suite'); process.exit(0); }

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
// Polls fn until it is true, up to ms; returns its last value.
export async function waitFor(fn, ms = 10000) {
  const until = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v || Date.now() > until) return v;
    await sleep(20);
  }
}

// A running process (not a zombie).
export function alive(pid) {
  try {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'Z';
  } catch { return false; }
}
// Host pids whose command line contains marker.
export function procsWith(marker) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d) || Number(d) === process.pid) continue;
    try {
      if (fs.readFileSync(`/proc/${d}/cmdline`, 'utf8').split('\0').join(' ').includes(marker) && alive(d))
        out.push(Number(d));
    } catch { /* gone */ }
  }
  return out;
}
export function children(pid) {
  try { return fs.readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter(Boolean).map(Number); } catch { return []; }
}
// The private server of a `fluebox mcp` and its socket's directory.
export function privateServer(mcpPid) {
  for (const c of children(mcpPid)) {
    try {
      const argv = fs.readFileSync(`/proc/${c}/cmdline`, 'utf8').split('\0');
      const i = argv.indexOf('--socket');
      if (argv.includes('serve') && i > 0) return { pid: c, dir: argv[i + 1].replace(/\/[^/]*$/, '') };
    } catch { /* gone */ }
  }
  return null;
}
// The host directories of the cgroups a process is in (v1 and v2).
export function cgroupDirs(pid) {
  const mounts = fs.readFileSync('/proc/mounts', 'utf8').split('\n').map((l) => l.split(' '));
  const dirs = [];
  let lines = [];
  try { lines = fs.readFileSync(`/proc/${pid}/cgroup`, 'utf8').trim().split('\n'); } catch { return dirs; }
  for (const line of lines) {
    const [, ctrls, path] = line.split(/:(.*?):/);
    if (!path || path === '/') continue;
    const m = ctrls === ''
      ? mounts.find((x) => x[2] === 'cgroup2')
      : mounts.find((x) => x[2] === 'cgroup' && x[3].split(',').includes(ctrls.split(',')[0].replace(/^name=/, 'name=')));
    if (m && fs.existsSync(m[1] + path)) dirs.push(m[1] + path);
  }
  return dirs;
}

// A raw connection: send objects or lines, wait for the answer of an id.
export class Raw {
  constructor(args, opts = {}) {
    this.p = spawn(FB, ['mcp', ...args], { stdio: ['pipe', 'pipe', 'pipe'], ...opts });
    this.buf = '';
    this.msgs = [];
    this.stderr = '';
    this.exited = new Promise((r) => this.p.on('exit', (code, sig) => r({ code, sig })));
    this.p.stdout.setEncoding('utf8');
    this.p.stdout.on('data', (d) => {
      this.buf += d;
      let i;
      while ((i = this.buf.indexOf('\n')) >= 0) {
        const line = this.buf.slice(0, i);
        this.buf = this.buf.slice(i + 1);
        try { this.msgs.push(JSON.parse(line)); } catch { this.msgs.push({ unparsable: line }); }
      }
    });
    this.p.stderr.on('data', (d) => { this.stderr += d; });
    this.p.stdin.on('error', () => {});
  }
  line(s) { this.p.stdin.write(s + '\n'); }
  send(o) { this.line(JSON.stringify(o)); }
  req(id, method, params) { this.send({ jsonrpc: '2.0', id, method, ...(params === undefined ? {} : { params }) }); }
  async answer(id, ms = 30000) {
    const m = await waitFor(() => this.msgs.find((x) => x.id === id && ('result' in x || 'error' in x)), ms);
    if (m) this.msgs.splice(this.msgs.indexOf(m), 1);
    return m;
  }
  async call(id, method, params, ms) { this.req(id, method, params); return this.answer(id, ms); }
  async init(version = '2025-06-18') {
    const r = await this.call(0, 'initialize', { protocolVersion: version, capabilities: {}, clientInfo: { name: 'raw', version: '1' } });
    this.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    return r;
  }
  close() { this.p.stdin.end(); return this.exited; }
}
