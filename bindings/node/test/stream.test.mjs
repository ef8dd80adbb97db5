// Streaming, abort, timeouts and session death, against a real server.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import { Fluebox, ExecStream, SandboxDiedError, ConnectionError, NotFoundError } from '../index.mjs';
import { startServer, waitFor } from './helpers.mjs';

let srv;
let fb;
let s;

before(async () => {
  srv = await startServer();
  fb = await Fluebox.connect({ socket: srv.socket });
  s = await fb.createSession();
});

after(async () => {
  if (fb) await fb.close();
  if (srv) await srv.stop();
});

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function running(session) {
  return (await session.info()).execs.running;
}

describe('stream', () => {
  test('chunks arrive while the command runs, then the result', async () => {
    const st = s.stream('for i in 1 2 3; do echo line$i; sleep 0.2; done; echo oops >&2; exit 7');
    assert.ok(st instanceof ExecStream);
    const seen = [];
    let firstAt = null;
    const t0 = Date.now();
    for await (const c of st) {
      if (firstAt === null) firstAt = Date.now() - t0;
      seen.push(c);
    }
    const out = seen.filter((c) => c.stream === 'stdout').map((c) => c.data).join('');
    const err = seen.filter((c) => c.stream === 'stderr').map((c) => c.data).join('');
    assert.equal(out, 'line1\nline2\nline3\n');
    assert.equal(err, 'oops\n');
    const r = await st.result;
    assert.equal(r.exitCode, 7);
    assert.ok(st.pid > 0);
    // The first line came before the command ended (it sleeps 0.6 s in all):
    // checked by order, not timing: more than one stdout chunk arrived.
    assert.ok(seen.filter((c) => c.stream === 'stdout').length >= 2, 'output was delivered in pieces');
  });

  test('collect() joins the chunks', async () => {
    const r = await s.stream('printf a; printf b >&2; printf c').collect();
    assert.equal(r.stdout, 'ac');
    assert.equal(r.stderr, 'b');
    assert.equal(r.exitCode, 0);
  });

  test('buffer encoding streams bytes', async () => {
    const r = await s.stream(['head', '-c', '70000', '/dev/urandom'], { encoding: 'buffer' }).collect();
    assert.ok(Buffer.isBuffer(r.stdout));
    assert.equal(r.stdout.length, 70000);
  });

  test('a large output consumed slowly arrives complete (backpressure)', async () => {
    const st = s.stream('head -c 30000000 /dev/zero | tr "\\0" x');
    let n = 0;
    let i = 0;
    for await (const c of st) {
      n += c.data.length;
      if (++i % 50 === 0) await sleep(5);
    }
    assert.equal(n, 30000000);
    assert.equal((await st.result).exitCode, 0);
  });

  test('another request completes while a stream is behind', async () => {
    const st = s.stream('head -c 20000000 /dev/zero | tr "\\0" y');
    const it = st[Symbol.asyncIterator]();
    await it.next();
    await sleep(300); // let the stream get far ahead of its consumer
    assert.equal((await s.exec('echo side')).stdout, 'side\n');
    let n = 0;
    for (;;) { const { value, done } = await it.next(); if (done) break; n += value.data.length; }
    assert.ok(n > 0);
    assert.equal((await st.result).exitCode, 0);
  });

  test('leaving the loop early kills the command', async () => {
    const st = s.stream('while :; do echo tick; sleep 0.05; done');
    for await (const c of st) { assert.equal(c.stream, 'stdout'); break; }
    const r = await st.result;
    assert.equal(r.signal, 'SIGKILL');
    await waitFor(async () => !(await running(s)).includes(st.execId), 5000, 'exec gone');
  });

  test('kill() sends a signal to a streamed command', async () => {
    const st = s.stream('trap "echo got-term; exit 5" TERM; : > /tmp/trapped; while :; do sleep 0.05; done');
    // The signal once the trap is set (the file says so), not after a while.
    await waitFor(async () => (await s.exec('test -e /tmp/trapped')).exitCode === 0, 5000, 'the trap set');
    await st.kill('SIGTERM');
    const r = await st.collect();
    assert.equal(r.exitCode, 5);
    assert.match(r.stdout, /got-term/);
  });
});

describe('abort', () => {
  test('an AbortSignal rejects exec with an AbortError carrying the reason, and kills the command', async () => {
    const ac = new AbortController();
    const p = s.exec('sleep 30; touch /tmp/should-not-exist', { signal: ac.signal, execId: 'abort1' });
    await waitFor(async () => (await running(s)).includes('abort1'), 5000, 'exec started');
    const reason = new Error('user pressed stop');
    ac.abort(reason);
    await assert.rejects(p, (e) => {
      assert.equal(e.name, 'AbortError');
      assert.equal(e.cause, reason);
      return true;
    });
    await waitFor(async () => !(await running(s)).includes('abort1'), 5000, 'exec killed');
    assert.equal(await s.exists('/tmp/should-not-exist'), false);
  });

  test('an already-aborted signal rejects before anything runs', async () => {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(s.exec('touch /tmp/pre-aborted', { signal: ac.signal }), { name: 'AbortError' });
    assert.equal(await s.exists('/tmp/pre-aborted'), false);
  });

  test('aborting a stream ends iteration with AbortError and kills the command', async () => {
    const ac = new AbortController();
    const st = s.stream('while :; do echo x; sleep 0.05; done', { signal: ac.signal });
    let n = 0;
    await assert.rejects(async () => {
      for await (const c of st) { void c; if (++n === 2) ac.abort(); }
    }, { name: 'AbortError' });
    await assert.rejects(st.result, { name: 'AbortError' });
    await waitFor(async () => !(await running(s)).includes(st.execId), 5000, 'stream killed');
  });
});

describe('session death', () => {
  test('destroying a session fails its running exec with SandboxDiedError (session_dead)', async () => {
    const t = await fb.createSession();
    const other = await Fluebox.connect({ socket: srv.socket });
    try {
      const p = t.exec('sleep 30', { execId: 'victim' });
      p.catch(() => {}); // it rejects while the test is still busy destroying
      const st = t.stream('sleep 30');
      await waitFor(async () => (await running(t)).includes('victim'), 5000, 'exec started');
      await other.session(t.id).destroy();
      await assert.rejects(p, (e) => {
        assert.ok(e instanceof SandboxDiedError, `${e.name}: ${e.message}`);
        assert.equal(e.code, 'session_dead');
        assert.equal(e.type, 'sandbox_died');
        return true;
      });
      await assert.rejects(st.result, SandboxDiedError);
      assert.equal(t.dead, true);
      await assert.rejects(t.exec('true'), NotFoundError);
    } finally {
      await other.close();
    }
  });

  test('a server that dies fails calls in flight with ConnectionError', async () => {
    const own = await startServer();
    const c = await Fluebox.connect({ socket: own.socket });
    const t = await c.createSession();
    const p = t.exec('sleep 30', { execId: 'x' });
    p.catch(() => {});
    await waitFor(async () => (await running(t)).includes('x'), 5000, 'exec started');
    own.proc.kill('SIGKILL');
    await assert.rejects(p, ConnectionError);
    await assert.rejects(t.exec('true'), ConnectionError);
    assert.equal(c.closed, true);
    await c.close();
    await own.stop();
  });
});
