// tests/mcp/raw.mjs — `fluebox mcp` driven by raw JSON-RPC lines: version
// negotiation, bad input of every kind (each answered, the server serving
// on), a flood of calls, a command that never ends, and the end of the
// connection (stdin closed, SIGKILL): nothing may be left. Prints ok/not ok
// lines. Environment: FB.
import fs from 'node:fs';
import { spawnSync } from 'node:child_process';
import { FB, ok, fail, check, end, waitFor, alive, procsWith, privateServer, Raw } from './lib.mjs';

const code = (m) => m && m.error && m.error.code;
const text = (m) => m && m.result && m.result.content && m.result.content.map((c) => c.text).join('\n');

async function negotiation() {
  for (const [want, got] of [['2025-11-25', '2025-11-25'], ['2025-06-18', '2025-06-18'], ['2025-03-26', '2025-03-26'],
    ['2024-11-05', '2024-11-05'], ['1999-01-01', '2025-11-25'], ['2026-07-28', '2025-11-25']]) {
    const c = new Raw([]);
    const r = await c.init(want);
    const v = r && r.result && r.result.protocolVersion;
    check(`initialize asking ${want} is answered ${got}`, v === got, JSON.stringify(r));
    if (want === '2024-11-05') {
      const l = await c.call(1, 'tools/list');
      const tools = (l && l.result && l.result.tools) || [];
      check('2024-11-05: tools without outputSchema', tools.length === 5 && tools.every((t) => t.inputSchema && !t.outputSchema), JSON.stringify(l).slice(0, 300));
      const x = await c.call(2, 'tools/call', { name: 'exec', arguments: { command: 'echo old' } });
      check('2024-11-05: a result without structuredContent', x && x.result && !x.result.structuredContent && /old/.test(text(x)), JSON.stringify(x));
    }
    await c.close();
  }
  const c = new Raw([]);
  const r = await c.call(0, 'initialize', { capabilities: {} });
  check('initialize without protocolVersion: -32602', code(r) === -32602, JSON.stringify(r));
  await c.close();
}

async function badInput() {
  const c = new Raw([]);
  await c.init();
  c.line('{"jsonrpc":"2.0","id":1,"method":');
  let m = await waitFor(() => c.msgs.find((x) => x.id === null && x.error));
  check('malformed JSON: parse error -32700 with id null', m && m.error.code === -32700, JSON.stringify(m));
  c.msgs.length = 0;
  const p = await c.call(2, 'ping');
  check('after malformed JSON the server keeps serving (ping)', p && p.result && !p.error, JSON.stringify(p));
  check('unknown method: -32601', code(await c.call(3, 'resources/frobnicate', {})) === -32601);
  c.line('[{"jsonrpc":"2.0","id":4,"method":"ping"}]');
  m = await waitFor(() => c.msgs.find((x) => x.id === null && x.error));
  check('a batch: -32600', m && m.error.code === -32600, JSON.stringify(m));
  c.msgs.length = 0;
  c.line('"just a string"');
  m = await waitFor(() => c.msgs.find((x) => x.id === null && x.error));
  check('not an object: -32600', m && m.error.code === -32600, JSON.stringify(m));
  c.msgs.length = 0;
  check('params not an object: -32602', code(await c.call(5, 'tools/call', [1, 2])) === -32602);
  check('tools/call without a name: -32602', code(await c.call(6, 'tools/call', {})) === -32602);
  const u = await c.call(7, 'tools/call', { name: 'rm_rf', arguments: {} });
  check('unknown tool: -32602 naming it', code(u) === -32602 && /rm_rf/.test(u.error.message), JSON.stringify(u));
  const d = await c.call(8, 'tools/call', { name: 'diff', arguments: {} });
  check('diff without --cow: unknown tool', code(d) === -32602, JSON.stringify(d));
  for (const [i, args, why] of [[9, { command: 42 }, 'command a number'], [10, { argv: [] }, 'argv empty'],
    [11, { argv: ['ls', 3] }, 'argv with a number'], [12, { command: 'true', argv: ['true'] }, 'both command and argv'],
    [13, { command: 'true', timeout_ms: -5 }, 'a negative timeout'], [14, { command: 'true', env: { A: 1 } }, 'env with a number'],
    [15, { command: 'true', bogus: 1 }, 'an unknown argument'], [16, {}, 'neither command nor argv']]) {
    const r = await c.call(i, 'tools/call', { name: 'exec', arguments: args });
    check(`exec with ${why}: -32602 (2025-06-18)`, code(r) === -32602, JSON.stringify(r));
  }
  const a = await c.call(17, 'tools/call', { name: 'read_file', arguments: { path: 7 } });
  check('read_file with a number as path: -32602', code(a) === -32602, JSON.stringify(a));
  const e = await c.call(18, 'tools/call', { name: 'edit_file', arguments: { path: 'x', old_string: '', new_string: 'y' } });
  check('edit_file with an empty old_string: -32602', code(e) === -32602, JSON.stringify(e));
  const n = await c.call(19, 'tools/call', { name: 'read_file', arguments: { path: 'a\u0000b' } });
  check('a path with NUL: a tool error', n && n.result && n.result.isError, JSON.stringify(n));
  c.line('x'.repeat(17 << 20));
  m = await waitFor(() => c.msgs.find((x) => x.id === null && x.error), 30000);
  check('a 17 MiB line: -32600, skipped', m && m.error.code === -32600, JSON.stringify(m));
  c.msgs.length = 0;
  c.send({ jsonrpc: '2.0', id: 20, result: {} }); // a response to nothing: ignored
  c.send({ jsonrpc: '2.0', method: 'notifications/whatever' });
  const x = await c.call(21, 'tools/call', { name: 'exec', arguments: { command: 'echo still here' } });
  check('after all that the session still runs commands', /still here/.test(text(x)), JSON.stringify(x));
  check('no answer to notifications or responses', c.msgs.length === 0, JSON.stringify(c.msgs));
  const st = await c.close();
  check('bad input: exit 0 when stdin ends', st.code === 0, JSON.stringify(st) + c.stderr);
  const v = new Raw([]);
  await v.init('2025-11-25');
  const r = await v.call(1, 'tools/call', { name: 'exec', arguments: { command: 5 } });
  check('2025-11-25: bad arguments are a tool error (isError)', r && r.result && r.result.isError && /command/.test(text(r)), JSON.stringify(r));
  await v.close();
}

async function flood() {
  const c = new Raw([]);
  await c.init();
  const N = 200;
  for (let i = 0; i < N; i++) c.req(1000 + i, 'tools/call', { name: 'exec', arguments: { argv: ['echo', String(i)] } });
  const got = await waitFor(() => c.msgs.filter((x) => x.id >= 1000).length >= N, 120000);
  const bad = c.msgs.filter((x) => x.id >= 1000 && !(x.result && !x.result.isError && x.result.structuredContent.stdout === `${x.id - 1000}\n`));
  // The server runs 32 commands at once per session: more are refused
  // with a clear limit error, never lost.
  const limited = bad.filter((x) => /execsPerSession|limit/.test(text(x)));
  check(`${N} calls sent at once: each answered once, with its own output or a limit error`,
    got && c.msgs.filter((x) => x.id >= 1000).length === N && bad.length === limited.length, `${c.msgs.length} answers, ${bad.length - limited.length} wrong: ${JSON.stringify(bad.find((x) => !limited.includes(x)))}`);
  c.msgs.length = 0;
  const t = await c.call(2, 'tools/call', { name: 'exec', arguments: { command: 'sleep 60', timeout_ms: 300 } });
  const s = t && t.result && t.result.structuredContent;
  check('an exec that does not end: timed out, isError', s && s.timed_out && t.result.isError, JSON.stringify(t));
  await c.close();
}

// A client that sends calls with big output and does not read its stdout:
// fluebox mcp stops reading the server above 8 MiB queued (the commands then
// block on their pipes) instead of growing; once the client reads, every
// call is answered.
async function slowReader() {
  const c = new Raw([]);
  await c.init();
  const rss = () => { try { return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${c.p.pid}/status`, 'utf8'))[1]) * 1024; } catch { return 0; } };
  const base = rss();
  c.p.stdout.pause();
  const N = 40;
  for (let i = 0; i < N; i++) c.req(3000 + i, 'tools/call', { name: 'exec', arguments: { command: 'head -c 1000000 /dev/zero | tr "\\0" x' } });
  let peak = 0;
  const grew = await waitFor(() => { peak = Math.max(peak, rss()); return peak - base > 40 << 20; }, 8000);
  if (process.env.FB_MCP_ASAN) ok('a client that does not read: memory stays bounded # SKIP under ASan (its quarantine keeps freed memory)');
  else check('a client that does not read its answers: fluebox mcp grows by less than 40 MiB (40 calls of 2 MB each as JSON)', !grew, `grew by ${(peak - base) >> 20} MiB`);
  c.p.stdout.resume();
  const all = await waitFor(() => c.msgs.filter((x) => x.id >= 3000).length === N, 120000);
  const good = c.msgs.filter((x) => x.id >= 3000 && x.result && (x.result.structuredContent?.stdout?.length === 1000000 || /limit/.test(text(x))));
  check('once it reads, every call is answered (output whole, or the per-session limit)', all && good.length === N, `${c.msgs.length} answers, ${good.length} good`);
  await c.close();
}

async function cancel() {
  const c = new Raw([]);
  await c.init();
  c.req(1, 'tools/call', { name: 'exec', arguments: { command: 'exec sleep 3600.25' } });
  const pid = await waitFor(() => procsWith('sleep 3600.25')[0]);
  c.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1, reason: 'test' } });
  const gone = await waitFor(() => !alive(pid));
  check('notifications/cancelled kills the running exec', pid && gone, `pid ${pid}`);
  const p = await c.call(2, 'ping');
  check('the cancelled call gets no answer; the server serves on', p && p.result && !c.msgs.some((x) => x.id === 1), JSON.stringify(c.msgs));
  await c.close();
}

async function teardown() {
  // stdin closes while a command runs and a background process lives.
  let c = new Raw([]);
  await c.init();
  await c.call(1, 'tools/call', { name: 'exec', arguments: { command: 'sleep 3600.5 >/dev/null 2>&1 &' } });
  c.req(2, 'tools/call', { name: 'exec', arguments: { command: 'exec sleep 3600.75' } });
  await waitFor(() => procsWith('sleep 3600.75').length);
  const srv = privateServer(c.p.pid);
  const st = await Promise.race([c.close(), new Promise((r) => setTimeout(() => r('hung'), 30000))]);
  check('stdin closed during a command: fluebox mcp exits 0', st && st.code === 0, JSON.stringify(st));
  const clean = await waitFor(() => !procsWith('sleep 3600.5').length && !procsWith('sleep 3600.75').length && srv && !alive(srv.pid) && !fs.existsSync(srv.dir));
  check('stdin closed: no sandbox process, no server, no socket directory left', clean, JSON.stringify(srv) + procsWith('sleep 3600.'));
  // SIGKILL: the private server notices (--exit-with-parent) and cleans up.
  c = new Raw([]);
  await c.init();
  await c.call(1, 'tools/call', { name: 'exec', arguments: { command: 'sleep 3601.5 >/dev/null 2>&1 &' } });
  const s2 = privateServer(c.p.pid);
  c.p.kill('SIGKILL');
  await c.exited;
  const clean2 = await waitFor(() => !procsWith('sleep 3601.5').length && s2 && !alive(s2.pid) && !fs.existsSync(s2.dir), 20000);
  check('SIGKILL of fluebox mcp: its server and sandbox go, the socket directory is removed', clean2, JSON.stringify(s2));
}

// The private servers' socket directories that exist now.
function mcpDirs() {
  return [process.env.XDG_RUNTIME_DIR, '/tmp'].filter(Boolean).flatMap((d) => {
    try { return fs.readdirSync(d).filter((n) => n.startsWith('fluebox-mcp-')).map((n) => `${d}/${n}`); } catch { return []; }
  });
}

function cli() {
  let r = spawnSync(FB, ['mcp', '--help'], { encoding: 'utf8' });
  check('fluebox mcp --help: exit 0, names the tools and the policy options', r.status === 0 && /edit_file/.test(r.stdout) && /--workspace/.test(r.stdout), r.status + r.stderr);
  r = spawnSync(FB, ['--help'], { encoding: 'utf8' });
  check('fluebox --help lists mcp', r.status === 0 && /fluebox mcp/.test(r.stdout), r.stdout.slice(0, 200));
  const before = mcpDirs().length;
  r = spawnSync(FB, ['mcp', '--mem', 'lots'], { encoding: 'utf8', input: '' });
  check('a bad policy option: exit 125, one line naming it', r.status === 125 && r.stderr.trim().split('\n').length === 1 && /--mem/.test(r.stderr), r.status + r.stderr);
  r = spawnSync(FB, ['mcp', '--report', '/tmp/x.json'], { encoding: 'utf8', input: '' });
  check('an option a session cannot honour (--report): exit 125', r.status === 125 && /report/.test(r.stderr), r.status + r.stderr);
  r = spawnSync(FB, ['mcp', '--workspace', '/nonexistent/dir'], { encoding: 'utf8', input: '' });
  check('a workspace that does not exist: exit 125 with a message, nothing left',
    r.status === 125 && /nonexistent/.test(r.stderr) && mcpDirs().length === before, r.status + r.stderr);
  r = spawnSync(FB, ['mcp', '--mcp-allow-commit'], { encoding: 'utf8', input: '' });
  check('--mcp-allow-commit without --cow: exit 125, one line', r.status === 125 && r.stderr.trim().split('\n').length === 1 && /--cow/.test(r.stderr), r.status + r.stderr);
  r = spawnSync(FB, ['mcp', 'extra'], { encoding: 'utf8', input: '' });
  check('an operand: exit 125', r.status === 125, r.status + r.stderr);
}

// --secret: the value is fluebox mcp's own (the environment its MCP client
// gave it); the sandbox's tools see a stand-in, and a variable that is not
// set stops it before anything starts.
async function secret() {
  const value = 'mcp-real-value-51f0';
  const c = new Raw(['--allow-net', 'api.test', '--secret', 'MCP_TOKEN:api.test'], { env: { ...process.env, MCP_TOKEN: value } });
  await c.init();
  const x = await c.call(1, 'tools/call', { name: 'exec', arguments: { command: 'echo "$MCP_TOKEN"; env' } });
  const t = text(x) || '';
  check('--secret: the tools see a stand-in, the value is nowhere inside',
    /^fluebox-standin-[0-9a-f]{32}$/m.test(t) && !t.includes(value), JSON.stringify(x).slice(0, 300));
  await c.close();
  const env = { ...process.env };
  delete env.MCP_UNSET;
  const r = spawnSync(FB, ['mcp', '--allow-net', 'api.test', '--secret', 'MCP_UNSET:api.test'], { encoding: 'utf8', input: '', env });
  check('--secret of an unset variable: exit 125, one line naming it',
    r.status === 125 && r.stderr.trim().split('\n').length === 1 && /MCP_UNSET/.test(r.stderr), r.status + r.stderr);
}

cli();
await secret();
await negotiation();
await badInput();
await flood();
await slowReader();
await cancel();
await teardown();
end();
