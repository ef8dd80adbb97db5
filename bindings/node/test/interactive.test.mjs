// Interactive sessions (issue 16): published ports, fork, snapshot and
// restore, from the Node client and the Flue adapter, against a real server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { Fluebox, NotSupportedError } from '../index.mjs';
import { fluebox as flueFactory, closeAll } from '../flue.mjs';
import { startServer, tmpdir } from './helpers.mjs';

let srv;
let fb;

before(async () => {
  srv = await startServer();
  fb = await Fluebox.connect({ socket: srv.socket });
});

after(async () => {
  await closeAll();
  if (fb) await fb.close();
  if (srv) await srv.stop();
});

/** GET url until it answers (the server inside is starting), or time out.
 * Each try has its own deadline: a connection the relay closes before the
 * request is written (nothing listens inside yet) can leave node's fetch
 * waiting instead of failing. */
async function fetchWhenUp(url, ms = 15000) {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      const r = await fetch(url, { signal: AbortSignal.timeout(2000) });
      return { status: r.status, body: await r.text() };
    } catch (e) {
      if (Date.now() > deadline) throw e;
      await new Promise((r) => setTimeout(r, 50));
    }
  }
}

const startHttp = (s, port, text) =>
  s.exec(`mkdir -p /tmp/www && echo '${text}' > /tmp/www/index.html && cd /tmp/www && ` +
         `(python3 -m http.server ${port} --bind 127.0.0.1 >/dev/null 2>&1 &)`);

test('publish: http.server inside reached from the host, listed in info, closed by unpublish', async () => {
  const s = await fb.createSession();
  try {
    await startHttp(s, 8000, 'hello node');
    const p = await s.publish(8000);
    assert.equal(p.port, 8000);
    assert.equal(p.host, '127.0.0.1');
    assert.match(p.url, /^http:\/\/127\.0\.0\.1:\d+\/$/);
    const r = await fetchWhenUp(p.url + 'index.html');
    assert.equal(r.body, 'hello node\n');
    const info = await s.info();
    assert.deepEqual(info.ports.map((x) => [x.port, x.hostPort]), [[8000, p.hostPort]]);
    await s.unpublish(8000);
    await assert.rejects(fetch(p.url), /fetch failed/);
  } finally {
    await s.destroy();
  }
});

test('publish at create time', async () => {
  const s = await fb.createSession({ publish: [8001] });
  try {
    assert.equal(s.createInfo.ports.length, 1);
    await startHttp(s, 8001, 'at create');
    const r = await fetchWhenUp(s.createInfo.ports[0].url);
    assert.equal(r.status, 200);
  } finally {
    await s.destroy();
  }
});

test('fork: the fork starts from the files, not the processes, and the two diverge', async () => {
  const a = await fb.createSession();
  try {
    await a.writeFile('state.txt', 'one\n');
    await a.exec('echo cfg > ~/.cfg; (sleep 300 >/dev/null 2>&1 &)');
    const b = await a.fork();
    try {
      assert.notEqual(b.id, a.id);
      assert.equal(b.createInfo.forkedFrom, a.id);
      assert.equal(typeof b.createInfo.copyMs, 'number');
      assert.equal(await b.readFile('state.txt'), 'one\n');
      assert.equal((await b.exec('cat ~/.cfg')).stdout, 'cfg\n');
      assert.equal((await b.exec('ps -eo args | grep -c "^sleep 300" || true')).stdout.trim(), '0');
      await b.writeFile('state.txt', 'fork\n');
      await a.writeFile('state.txt', 'original\n');
      assert.equal(await a.readFile('state.txt'), 'original\n');
      assert.equal(await b.readFile('state.txt'), 'fork\n');
    } finally {
      await b.destroy();
    }
  } finally {
    await a.destroy();
  }
});

test('snapshot and restore a copy-on-write session; fork of a host workspace is refused', async () => {
  const d = tmpdir('fbsnap-');
  fs.writeFileSync(path.join(d, 'f.txt'), 'host\n');
  const s = await fb.createSession({ workspace: d, cow: true });
  try {
    await s.writeFile('f.txt', 'v1\n');
    const snap = await s.snapshot('v1');
    assert.equal(snap.name, 'v1');
    await s.writeFile('f.txt', 'v2\n');
    await s.writeFile('g.txt', 'later\n');
    await s.restore('v1');
    assert.equal(await s.readFile('f.txt'), 'v1\n');
    assert.equal(await s.exists('g.txt'), false);
    assert.deepEqual((await s.info()).snapshots, ['v1']);
    assert.equal(fs.readFileSync(path.join(d, 'f.txt'), 'utf8'), 'host\n');
  } finally {
    await s.destroy();
  }
  const h = await fb.createSession({ workspace: d });
  try {
    await assert.rejects(h.fork(), NotSupportedError);
  } finally {
    await h.destroy();
  }
});

test('the Flue adapter: publish and fork', async () => {
  const factory = flueFactory({ socket: srv.socket, workspace: null });
  const sb = await factory.createSandbox({ id: 'interactive-' + process.pid });
  await sb.writeFile('/workspace/a.txt', 'flue\n');
  await sb.exec("mkdir -p /tmp/www && echo 'from flue' > /tmp/www/index.html && cd /tmp/www && (python3 -m http.server 8002 --bind 127.0.0.1 >/dev/null 2>&1 &)");
  const p = await sb.publish(8002);
  assert.equal((await fetchWhenUp(p.url)).body, 'from flue\n');
  const f = await sb.fork();
  assert.equal(await f.readFile('/workspace/a.txt'), 'flue\n');
  await f.writeFile('/workspace/a.txt', 'forked\n');
  assert.equal(await sb.readFile('/workspace/a.txt'), 'flue\n');
  await f.session.destroy();
  await sb.session.destroy();
});

/** Reads stdout chunks from it (an async iterator of the stream) until acc.out has text. */
async function readUntil(it, text, acc) {
  while (!acc.out.includes(text)) {
    const { value, done } = await it.next();
    if (done) throw new Error(`ended before ${JSON.stringify(text)}: ${JSON.stringify(acc.out)}`);
    if (value.stream === 'stdout') acc.out += value.data;
  }
}

test('streaming stdin: a REPL fed line by line answers each line before the next is sent', async () => {
  const s = await fb.createSession();
  try {
    const st = s.stream(['python3', '-q', '-u', '-i'], { stdinOpen: true });
    const it = st[Symbol.asyncIterator]();
    const acc = { out: '' };
    await st.write('x = 6 * 7\nprint(x)\n');
    await readUntil(it, '42\n', acc);
    st.stdin.write('print(x + 1)\n');
    await readUntil(it, '43\n', acc);
    await new Promise((resolve, reject) => st.stdin.end(Buffer.from("print('end')\n"), (e) => (e ? reject(e) : resolve())));
    for (;;) {
      const { value, done } = await it.next();
      if (done) break;
      if (value.stream === 'stdout') acc.out += value.data;
    }
    assert.equal((await st.result).exitCode, 0);
    assert.equal(acc.out, '42\n43\nend\n');
    // The command ended: nothing to write to.
    await assert.rejects(st.write('more'), (e) => e.code === 'not_found');
  } finally {
    await s.destroy();
  }
});

test('streaming stdin: a command that closed its stdin gives EPIPE; a stream without stdinOpen refuses', async () => {
  const s = await fb.createSession();
  try {
    const st = s.stream('exec <&-; echo closed; sleep 60', { stdinOpen: true });
    const it = st[Symbol.asyncIterator]();
    await readUntil(it, 'closed\n', { out: '' });
    await assert.rejects(st.write('x\n'), (e) => e.code === 'EPIPE');
    await st.kill();
    await st.result;
    const plain = s.stream('sleep 60');
    await assert.rejects(plain.write('x'), (e) => e.code === 'invalid_params');
    await plain.kill();
    await plain.result;
  } finally {
    await s.destroy();
  }
});

test('tty: a terminal of the given size, resized, Ctrl-C to the foreground process group', async () => {
  const s = await fb.createSession();
  try {
    const st = s.stream("trap 'stty size' WINCH; trap 'echo INT; exit 3' INT; tty; stty size; echo ready; " +
                        'until read x; do :; done', { tty: { rows: 33, cols: 101 } });
    const it = st[Symbol.asyncIterator]();
    const acc = { out: '' };
    await readUntil(it, 'ready', acc);
    assert.match(acc.out, /^\/dev\/pts\/\d+\r\n33 101\r\n/);
    await st.resize(40, 120);
    await readUntil(it, '40 120', acc);
    await st.write('\x03');
    await readUntil(it, 'INT', acc);
    for (;;) { const { done } = await it.next(); if (done) break; }
    assert.equal((await st.result).exitCode, 3);
  } finally {
    await s.destroy();
  }
});
