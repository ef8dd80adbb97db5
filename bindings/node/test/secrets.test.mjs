// Secrets and run-time rules through the Node.js client (issue 24,
// docs/secrets.md): createSession({ secrets }) reads the value from this
// process's environment or a file, and the relay puts it in at its host
// only; grant()/revoke() with a ttl, polled for its end; the Flue adapter
// passes secrets on. Against a real server and a local HTTPS server with a
// test CA made now (tests/server/https_echo.py), loopback only.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import readline from 'node:readline';
import { spawn, execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Fluebox, InvalidParamsError } from '../index.mjs';
import { fluebox as flueSandbox, closeAll } from '../flue.mjs';
import { startServer, tmpdir, waitFor } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const echoScript = path.resolve(here, '../../../tests/server/https_echo.py');
const REAL = 'nodereal-2b7f91c0d3e4';

function have(cmd) {
  try { execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' }); return true; } catch { return false; }
}
const skip = !have('curl') || !have('openssl') || !have('python3') ? 'needs curl, openssl and python3' : false;

let srv;
let fb;
let web;
let port;
let ca;
let log;

before(async () => {
  if (skip) return;
  const d = tmpdir('fbnodesec-');
  web = spawn('python3', [echoScript, d, 'api.test', 'other.test', 'late.test'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const line = await new Promise((resolve, reject) => {
    readline.createInterface({ input: web.stdout }).once('line', resolve);
    web.once('exit', (c) => reject(new Error(`https_echo.py exited ${c}`)));
  });
  [port, ca, log] = line.split(' ');
  port = Number(port);
  fs.chmodSync(ca, 0o644);
  srv = await startServer();
  fb = await Fluebox.connect({ socket: srv.socket });
});

after(async () => {
  await closeAll();
  if (fb) await fb.close();
  if (srv) await srv.stop();
  if (web) web.kill('SIGTERM');
});

function opts(extra = {}) {
  return {
    allowNet: [`api.test:${port}`, `other.test:${port}`],
    allowHttp: [`* other.test:${port}`], // the relay reads other.test's requests too
    upstreamCa: ca,
    options: ['--ro-bind', `${path.dirname(ca)}:/testca`, '--egress-resolve', 'api.test=127.0.0.1', '--egress-resolve', 'other.test=127.0.0.1',
      '--egress-resolve', 'late.test=127.0.0.1'],
    ...extra,
  };
}

function received(p) {
  if (!fs.existsSync(log)) return [];
  return fs.readFileSync(log, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)).filter((q) => q.path === p);
}

const api = () => `api.test:${port}`;
// late.test is passed end to end: its certificate is the test CA's.
const late = (s, p) => curl(s, 'late.test', p, '--cacert', '/testca/ca.pem');

async function curl(s, name, p, ...args) {
  const r = await s.exec(['curl', '-sS', '-m', '10', '-o', '/dev/null', '-w', '%{http_code}', ...args,
    `https://${name}:${port}${p}`], { timeoutMs: 30000 });
  return Number(r.stdout.trim() || '0') || 0;
}

test('a secret from the environment and one from a file: stand-ins inside, values at their host only', { skip }, async () => {
  process.env.FBNODE_TOKEN = REAL;
  const f = path.join(tmpdir('fbnodetok-'), 'tok');
  fs.writeFileSync(f, `${REAL}-file\n`);
  const s = await fb.createSession(opts({ secrets: [`FBNODE_TOKEN:${api()}`, { name: 'FILE_TOKEN', hosts: [api()], file: f }] }));
  try {
    delete process.env.FBNODE_TOKEN;
    assert.deepEqual(s.createInfo.secrets.map((x) => x.name), ['FBNODE_TOKEN', 'FILE_TOKEN']);
    const [a, b] = (await s.exec('echo $FBNODE_TOKEN; echo $FILE_TOKEN')).stdout.split('\n');
    assert.match(a, /^fluebox-standin-/);
    assert.match(b, /^fluebox-standin-/);
    assert.ok(!(await s.exec('env')).stdout.includes(REAL));
    assert.equal(await curl(s, 'api.test', '/node-env', '-H', `Authorization: Bearer ${a}`), 200);
    assert.equal(received('/node-env').at(-1).headers.Authorization, `Bearer ${REAL}`);
    assert.equal(await curl(s, 'api.test', '/node-file', '-H', `X-Key: ${b}`), 200);
    assert.equal(received('/node-file').at(-1).headers['X-Key'], `${REAL}-file`);
    assert.equal(await curl(s, 'other.test', '/node-leak', '-H', `X-Key: ${b}`), 403);
    assert.deepEqual(received('/node-leak'), []);
  } finally {
    await s.destroy();
  }
});

test('an unset variable is refused by the client, naming it', { skip }, async () => {
  delete process.env.FBNODE_UNSET;
  await assert.rejects(fb.createSession(opts({ secrets: [`FBNODE_UNSET:${api()}`] })), /FBNODE_UNSET/);
});

test('grant with a ttl: reachable, then refused again; revoke', { skip }, async () => {
  const s = await fb.createSession(opts());
  try {
    assert.equal(await late(s, '/node-late'), 0);
    const r = await s.grant({ allowNet: `late.test:${port}` }, { ttlMs: 2000 });
    assert.equal(r.kind, 'allowNet');
    assert.equal(typeof r.expiresAt, 'number');
    assert.equal(await late(s, '/node-late'), 200);
    await waitFor(async () => (await late(s, '/node-late')) === 0, 30000, 'the grant to lapse');
    await s.grant({ allowNet: `late.test:${port}` });
    assert.equal(await late(s, '/node-late'), 200);
    await s.revoke({ allowNet: `late.test:${port}` });
    assert.equal(await late(s, '/node-late'), 0);
  } finally {
    await s.destroy();
  }
});

test('grant a secret: its stand-in comes back; bad grants are errors', { skip }, async () => {
  const s = await fb.createSession(opts());
  try {
    const r = await s.grant({ secret: { name: 'NODE_LATE', hosts: [api()], value: REAL } });
    assert.match(r.standin, /^fluebox-standin-/);
    assert.equal(await curl(s, 'api.test', '/node-granted', '-H', `X-Key: ${r.standin}`), 200);
    assert.equal(received('/node-granted').at(-1).headers['X-Key'], REAL);
    await s.revoke({ secret: 'NODE_LATE' });
    await assert.rejects(s.grant({}), TypeError);
    await assert.rejects(s.grant({ allowNet: 'a.test', allowHttp: 'GET a.test' }), TypeError);
    await assert.rejects(s.grant({ allowHttp: 'FETCH api.test' }), InvalidParamsError);
  } finally {
    await s.destroy();
  }
});

test('the Flue adapter passes secrets on', { skip }, async () => {
  process.env.FBNODE_FLUE = REAL;
  try {
    const factory = flueSandbox({ socket: srv.socket, workspace: null, reuse: false, ...opts({ secrets: [`FBNODE_FLUE:${api()}`] }) });
    const sb = await factory.createSandbox({ id: 'secrets-test' });
    const r = await sb.exec('echo $FBNODE_FLUE');
    assert.match(r.stdout, /^fluebox-standin-/);
    assert.ok(!sb.label.includes(REAL));
  } finally {
    delete process.env.FBNODE_FLUE;
  }
});
