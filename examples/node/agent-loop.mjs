#!/usr/bin/env node
// A scripted "agent loop": the fixed list of tool calls an agent might make,
// run in a fluebox session, printing what happened at each step.
//
//   node examples/node/agent-loop.mjs
//
// It connects to the server on the default socket (FLUEBOX_SOCKET, ...) or
// starts a private one (binary from FLUEBOX_BIN or PATH). It exits 0 when
// every step behaved as expected (allowed things worked, forbidden things
// were denied), 1 otherwise. No traffic leaves this machine: the one allowed
// host is mapped to a small HTTP server on 127.0.0.1 that this script starts,
// and the forbidden one is refused by the sandbox's own DNS.
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

let fluebox;
try {
  fluebox = await import('fluebox'); // installed: npm install ./bindings/node
} catch {
  const here = path.dirname(fileURLToPath(import.meta.url));
  fluebox = await import(path.join(here, '../../bindings/node/index.mjs')); // from the repository
}
const { Fluebox, FileSystemError } = fluebox;

let failures = 0;
function step(n, tool, what, ok, detail) {
  if (!ok) failures++;
  console.log(`[${n}] ${tool.padEnd(6)} ${what}`);
  for (const line of String(detail).trimEnd().split('\n')) console.log(`         ${line}`);
  console.log(`         -> ${ok ? 'as expected' : 'UNEXPECTED'}`);
}

// A secret on the host, outside anything the sandbox is given.
const secretDir = fs.mkdtempSync(path.join(os.tmpdir(), 'fluebox-example-'));
const secret = path.join(secretDir, 'api-key.txt');
fs.writeFileSync(secret, 'sk-host-secret-do-not-leak\n', { mode: 0o600 });

// The one host the agent may reach, served locally.
const api = http.createServer((req, res) => res.end(`{"weather": "sunny", "path": "${req.url}"}\n`));
await new Promise((r) => api.listen(0, '127.0.0.1', r));
const port = api.address().port;

const fb = await Fluebox.connect();
const s = await fb.createSession({
  profile: 'standard',
  memory: '256M',
  allowNet: ['api.example.test:80'],
  // Tests and demos map the allowed name to a local server (like curl --resolve).
  options: ['--egress-resolve', `api.example.test:80=127.0.0.1:${port}`],
});
console.log(`session ${s.id} on ${fb.socket}\n`);

try {
  // 1. write: the agent writes a program.
  const program = [
    "const primes = [];",
    "for (let n = 2; primes.length < 10; n++) if (primes.every((p) => n % p)) primes.push(n);",
    "console.log('first primes:', primes.join(' '));",
  ].join('\n');
  await s.writeFile('src/primes.js', program + '\n');
  const st = await s.stat('src/primes.js');
  step(1, 'write', 'src/primes.js', st.isFile && st.size > 0, `${st.size} bytes written (parent directory created)`);

  // 2. bash: the agent runs it.
  const run = await s.exec('node src/primes.js > out.txt && echo done', { timeoutMs: 10000 });
  step(2, 'bash', 'node src/primes.js > out.txt', run.exitCode === 0, `exit ${run.exitCode}: ${run.stdout}${run.stderr}`);

  // 3. read: the agent reads the output.
  const out = await s.readFile('out.txt');
  step(3, 'read', 'out.txt', out.includes('2 3 5 7 11 13 17 19 23 29'), out);

  // 4. read a host secret: by path, through the shell, through a symlink.
  let denied = [];
  try {
    await s.readFile(secret);
  } catch (e) {
    if (e instanceof FileSystemError) denied.push(`read ${secret}: ${e.code}`);
  }
  const cat = await s.exec(['cat', secret, '/etc/shadow']);
  if (cat.exitCode !== 0 && !cat.stdout.includes('sk-host')) denied.push(`cat: exit ${cat.exitCode}: ${cat.stderr.trim().replace(/\n/g, '; ')}`);
  await s.exec(['ln', '-s', secret, 'key-link']);
  try {
    await s.readFile('key-link');
  } catch (e) {
    denied.push(`read via symlink: ${e.code}`);
  }
  step(4, 'read', `the host secret ${secret}`, denied.length === 3, denied.join('\n'));

  // 5. network: the allowed host answers; any other host does not exist.
  await s.writeFile('fetch.js', [
    'for (const url of process.argv.slice(2)) {',
    '  try { const r = await fetch(url, { signal: AbortSignal.timeout(5000) }); console.log(url, r.status, (await r.text()).trim()); }',
    '  catch (e) { console.log(url, "DENIED", e.cause ? e.cause.code || e.cause.message : e.message); }',
    '}',
  ].join('\n'));
  const net = await s.exec(['node', 'fetch.js', 'http://api.example.test/today', 'http://example.com/'], { timeoutMs: 20000 });
  const lines = net.stdout.trim().split('\n');
  step(5, 'bash', 'fetch an allowed and a non-allowed host',
    /api\.example\.test\/today 200 .*sunny/.test(lines[0] || '') && /example\.com\/ DENIED/.test(lines[1] || ''),
    net.stdout + net.stderr);

  // 6. a runaway command hits its timeout: exit code 124, the sandbox lives on.
  const slow = await s.exec('sleep 30', { timeoutMs: 500 });
  step(6, 'bash', 'sleep 30 with a 500 ms timeout', slow.exitCode === 124 && slow.timedOut, `exit ${slow.exitCode}; ${slow.stderr.trim()}`);

  // 7. what did the session cost?
  const info = await s.info();
  const u = (v, unit) => (v < 0 ? 'not measured' : `${v} ${unit}`); // -1: no cgroup controller for it
  step(7, 'info', 'session usage', info.state === 'ready',
    `memory peak ${u(info.usage.memoryPeakBytes, 'bytes')}, cpu ${u(info.usage.cpuMs, 'ms')}, ${info.execs.total} execs`);
} finally {
  await s.destroy();
  await fb.close();
  api.close();
  fs.rmSync(secretDir, { recursive: true, force: true });
}

console.log(failures ? `\n${failures} step(s) did not behave as expected` : '\nevery step behaved as expected');
process.exit(failures ? 1 : 0);
