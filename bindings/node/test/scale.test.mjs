// Concurrency, large files and unicode paths, against a real server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import { Fluebox } from '../index.mjs';
import { startServer } from './helpers.mjs';

let srv;
let fb;

before(async () => {
  srv = await startServer();
  fb = await Fluebox.connect({ socket: srv.socket });
});

after(async () => {
  if (fb) await fb.close();
  if (srv) await srv.stop();
});

test('20 sessions in parallel from one client', async () => {
  const N = 20;
  const results = await Promise.all(Array.from({ length: N }, async (_, i) => {
    const s = await fb.createSession({ memory: '128M' });
    try {
      await s.writeFile(`n.txt`, String(i));
      const r = await s.exec('cat n.txt; echo " $(hostname)"; ls /workspace');
      const back = await s.readFile('n.txt');
      return { i, id: s.id, out: r.stdout, back };
    } finally {
      await s.destroy();
    }
  }));
  assert.equal(new Set(results.map((r) => r.id)).size, N);
  for (const r of results) {
    assert.equal(r.back, String(r.i));
    // Each session sees only its own file: no sharing between sandboxes.
    assert.equal(r.out, `${r.i} fluebox\nn.txt\n`);
  }
});

test('50 MB round trip, checksummed on both sides', async () => {
  const s = await fb.createSession({ disk: '256M' });
  try {
    const data = crypto.randomBytes(50 * 1024 * 1024);
    const want = crypto.createHash('sha256').update(data).digest('hex');
    assert.equal(await s.writeFile('/tmp/big.bin', data), data.length);
    const st = await s.stat('/tmp/big.bin');
    assert.equal(st.size, data.length);
    const inside = await s.exec(['sha256sum', '/tmp/big.bin']);
    assert.equal(inside.stdout.split(' ')[0], want, 'checksum inside the sandbox');
    const back = await s.readFileBuffer('/tmp/big.bin');
    assert.equal(back.length, data.length);
    assert.equal(crypto.createHash('sha256').update(back).digest('hex'), want, 'checksum after reading back');
  } finally {
    await s.destroy();
  }
});

test('a large text file is read back whole, multi-byte characters intact', async () => {
  const s = await fb.createSession({ disk: '128M' });
  try {
    const line = 'ünïcødé ✓ 日本語 🎉\n';
    const text = line.repeat(Math.ceil((20 * 1024 * 1024) / Buffer.byteLength(line)));
    await s.writeFile('/tmp/big.txt', text);
    const back = await s.readFile('/tmp/big.txt');
    assert.equal(back.length, text.length);
    assert.ok(back === text, 'identical text');
  } finally {
    await s.destroy();
  }
});

test('unicode paths: write, list, stat, exec, read, rename, rm', async () => {
  const s = await fb.createSession();
  try {
    const dir = 'ünïcødé dir/日本語';
    const name = 'файл 🎉 "quoted" $x.txt';
    const p = `${dir}/${name}`;
    await s.writeFile(p, 'contenu: é');
    assert.deepEqual(await s.readdir(dir), [name]);
    assert.equal((await s.stat(p)).size, Buffer.byteLength('contenu: é'));
    const r = await s.exec(['cat', `/workspace/${p}`]);
    assert.equal(r.stdout, 'contenu: é');
    const ls = await s.exec(['ls', '/workspace/ünïcødé dir']);
    assert.equal(ls.stdout, '日本語\n');
    await s.rename(p, `${dir}/ok ✓`);
    assert.equal(await s.readFile(`${dir}/ok ✓`), 'contenu: é');
    await s.rm('ünïcødé dir', { recursive: true });
    assert.equal(await s.exists('ünïcødé dir'), false);
  } finally {
    await s.destroy();
  }
});
