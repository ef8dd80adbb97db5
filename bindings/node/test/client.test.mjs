// Every method of the Node.js client, against a real `fluebox serve`.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import {
  Fluebox, Session, FlueboxError, FileSystemError, NotFoundError, InvalidParamsError,
  NotSupportedError, SandboxDiedError,
} from '../index.mjs';
import { startServer, tmpdir, waitFor } from './helpers.mjs';

let srv;
let fb;
let s;

before(async () => {
  srv = await startServer();
  fb = await Fluebox.connect({ socket: srv.socket });
  s = await fb.createSession({ profile: 'standard', memory: '256M', env: { GREETING: 'hello' } });
});

after(async () => {
  if (fb) await fb.close();
  if (srv) await srv.stop();
});

describe('server and sessions', () => {
  test('server.info', async () => {
    const i = await fb.serverInfo();
    assert.equal(i.name, 'fluebox');
    assert.equal(i.protocol, 1);
    assert.ok(Array.isArray(i.methods) && i.methods.includes('exec'));
    assert.equal(typeof i.limits.maxMessageBytes, 'number');
  });

  test('session.create returns a Session with the info object', async () => {
    assert.ok(s instanceof Session);
    assert.match(s.id, /^s-[0-9a-f]{16}$/);
    assert.equal(s.createInfo.state, 'ready');
    assert.equal(s.cwd, '/workspace');
  });

  test('session.create maps limits and refuses unknown options before sending', async () => {
    await assert.rejects(fb.createSession({ memroy: '1G' }), TypeError);
    const before = (await fb.listSessions()).length;
    const t = await fb.createSession({ memory: '128M', pids: 64, cwd: '/tmp', ttlMs: 600000, idleTimeoutMs: 300000 });
    try {
      const i = await t.info();
      assert.equal(i.limits.memory, 128 * 1024 * 1024);
      assert.equal(i.limits.pids, 64);
      assert.equal(i.cwd, '/tmp');
      assert.equal(i.ttlMs, 600000);
      assert.equal(i.idleTimeoutMs, 300000);
      assert.equal((await fb.listSessions()).length, before + 1);
    } finally {
      await t.destroy();
    }
  });

  test('session.create with a bad value is InvalidParamsError naming the param', async () => {
    await assert.rejects(fb.createSession({ memory: 'lots' }), (e) => {
      assert.ok(e instanceof InvalidParamsError, e.stack);
      assert.equal(e.code, 'invalid_params');
      assert.match(String(e.param), /memory/);
      return true;
    });
  });

  test('session.list and session.info', async () => {
    const list = await fb.listSessions();
    assert.ok(list.some((i) => i.session === s.id));
    const info = await s.info();
    assert.equal(info.session, s.id);
    assert.equal(info.state, 'ready');
    assert.equal(typeof info.usage, 'object');
  });

  test('a handle from fb.session(id) reaches the same sandbox', async () => {
    await s.writeFile('attach.txt', 'same');
    const h = fb.session(s.id);
    assert.equal(await h.readFile('attach.txt'), 'same');
  });

  test('session.destroy; later calls are NotFoundError', async () => {
    const t = await fb.createSession();
    await t.destroy();
    assert.equal(t.dead, true);
    await assert.rejects(t.exec('true'), NotFoundError);
    await assert.rejects(fb.session('s-0000000000000000').info(), (e) => e instanceof NotFoundError && e.code === 'not_found');
  });

  test('a host workspace directory is bound at /workspace', async () => {
    const dir = tmpdir();
    fs.writeFileSync(path.join(dir, 'from-host.txt'), 'host data');
    const t = await fb.createSession({ workspace: dir });
    try {
      assert.equal(await t.readFile('/workspace/from-host.txt'), 'host data');
      await t.writeFile('from-sandbox.txt', 'sandbox data');
      assert.equal(fs.readFileSync(path.join(dir, 'from-sandbox.txt'), 'utf8'), 'sandbox data');
    } finally {
      await t.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  test('raw request() reaches any method', async () => {
    const r = await fb.request('session.info', { session: s.id });
    assert.equal(r.session, s.id);
    await assert.rejects(fb.request('no.such.method', {}), (e) => e instanceof FlueboxError && e.code === 'method_not_found');
  });
});

describe('exec', () => {
  test('a shell string; output collected; exit code passed through', async () => {
    const r = await s.exec('echo out; echo err >&2; exit 3');
    assert.equal(r.exitCode, 3);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    assert.equal(r.timedOut, false);
    assert.equal(r.oomKilled, false);
    assert.equal(typeof r.durationMs, 'number');
    assert.match(r.execId, /^n[0-9a-f]{16}$/);
  });

  test('an argv array is not parsed by a shell', async () => {
    const r = await s.exec(['printf', '%s|', 'a b', '$HOME', ';']);
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout, 'a b|$HOME|;|');
  });

  test('cwd, env (session and per exec), stdin text and bytes', async () => {
    await s.mkdir('/tmp/wd', { recursive: true });
    let r = await s.exec('pwd; echo "$GREETING $WHO"', { cwd: '/tmp/wd', env: { WHO: 'world' } });
    assert.equal(r.stdout, '/tmp/wd\nhello world\n');
    r = await s.exec('cat', { stdin: 'piped text' });
    assert.equal(r.stdout, 'piped text');
    r = await s.exec(['od', '-An', '-tx1'], { stdin: new Uint8Array([0, 255, 10]) });
    assert.equal(r.stdout.trim().replace(/\s+/g, ' '), '00 ff 0a');
  });

  test('encoding "buffer" returns bytes exactly', async () => {
    const r = await s.exec(['sh', '-c', 'printf "\\000\\377\\200"'], { encoding: 'buffer' });
    assert.ok(Buffer.isBuffer(r.stdout));
    assert.deepEqual([...r.stdout], [0, 255, 128]);
  });

  test('a missing command is exit code 127, not an error', async () => {
    const r = await s.exec(['no-such-command-here']);
    assert.equal(r.exitCode, 127);
    assert.match(r.stderr, /no-such-command-here/);
  });

  test('timeoutMs kills the command: exit code 124, timedOut', async () => {
    const r = await s.exec('echo started; sleep 30; echo never', { timeoutMs: 300 });
    assert.equal(r.exitCode, 124);
    assert.equal(r.timedOut, true);
    assert.equal(r.stdout, 'started\n');
  });

  test('fractional timeouts round up, never down', async () => {
    // 0.2 ms becomes 1 ms, so the command is killed; rounded down to 0 it
    // would mean "no timeout" and sleep would finish.
    const r = await s.exec('sleep 2', { timeoutMs: 0.2 });
    assert.equal(r.exitCode, 124);
    await assert.rejects(s.exec('true', { timeoutMs: -1 }), TypeError);
  });

  test('exec.kill by execId ends the command with the signal', async () => {
    const p = s.exec('sleep 30', { execId: 'killme' });
    await waitFor(async () => (await s.info()).execs.running.includes('killme'), 5000, 'exec running');
    await s.kill('killme', 'SIGTERM');
    const r = await p;
    assert.equal(r.signal, 'SIGTERM');
    assert.equal(r.exitCode, 128 + 15);
    await assert.rejects(s.kill('killme'), NotFoundError);
  });

  test('unknown exec options are refused', async () => {
    await assert.rejects(s.exec('true', { timeout: 5 }), TypeError);
    await assert.rejects(s.exec(42), TypeError);
    await assert.rejects(s.exec([]), TypeError);
  });

  test('collected output is capped by maxOutputBytes and flagged', async () => {
    const r = await s.exec('head -c 100000 /dev/zero', { maxOutputBytes: 1000 });
    assert.equal(r.exitCode, 0);
    assert.equal(r.stdout.length, 1000);
    assert.equal(r.stdoutTruncated, true);
    assert.equal(r.truncatedBy, 'maxOutputBytes');
  });
});

describe('files', () => {
  test('writeFile and readFile: text; parents created by default', async () => {
    await s.writeFile('deep/er/notes.md', '# hi\n');
    assert.equal(await s.readFile('deep/er/notes.md'), '# hi\n');
    assert.equal(await s.readFile('/workspace/deep/er/notes.md'), '# hi\n');
  });

  test('writeFile is all or nothing: a large write that fails part way leaves no file', async () => {
    // 20 MiB takes several file.write requests; the session's fsize (12M)
    // stops it part way: no partial file, no temporary left, an old file
    // keeps its content.
    const data = crypto.randomBytes(20 * 1024 * 1024);
    const t = await fb.createSession({ fsize: '12M' });
    try {
      await assert.rejects(t.writeFile('big.bin', data), (e) => e instanceof FileSystemError && e.code === 'EFBIG');
      assert.equal(await t.exists('big.bin'), false);
      await t.writeFile('old.bin', 'old content');
      await assert.rejects(t.writeFile('old.bin', data), (e) => e instanceof FileSystemError);
      assert.equal(await t.readFile('old.bin'), 'old content');
      // Through a symlink, the old file's mode kept: a write that fits.
      await t.writeFile('real.bin', 'x', { mode: 0o600 });
      await t.exec('ln -s real.bin link.bin');
      const ok = crypto.randomBytes(10 * 1024 * 1024);
      assert.equal(await t.writeFile('link.bin', ok), ok.length);
      assert.equal((await t.lstat('link.bin')).isSymbolicLink, true);
      assert.equal((await t.stat('real.bin')).mode, 0o600);
      assert.ok((await t.readFileBuffer('real.bin')).equals(ok));
      await assert.rejects(t.writeFile('real.bin', ok, { exclusive: true }), (e) => e.code === 'EEXIST');
      assert.deepEqual((await t.readdir('.')).map((e) => e.name ?? e).filter((n) => n.startsWith('.fluebox-write')), []);
    } finally {
      await t.destroy();
    }
  });

  test('writeFile with parents: false fails on a missing parent (ENOENT)', async () => {
    await assert.rejects(s.writeFile('nope/x.txt', 'x', { parents: false }), (e) => {
      assert.ok(e instanceof FileSystemError);
      assert.equal(e.code, 'ENOENT');
      assert.equal(e.errno, -2);
      return true;
    });
  });

  test('writeFile: bytes, append, mode, exclusive', async () => {
    await s.writeFile('bin.dat', new Uint8Array([1, 2, 3]));
    await s.writeFile('bin.dat', Buffer.from([4]), { append: true });
    assert.deepEqual([...(await s.readFileBuffer('bin.dat'))], [1, 2, 3, 4]);
    await s.writeFile('script.sh', '#!/bin/sh\necho ran\n', { mode: 0o755 });
    assert.equal((await s.stat('script.sh')).mode, 0o755);
    assert.equal((await s.exec('./script.sh')).stdout, 'ran\n');
    await assert.rejects(s.writeFile('bin.dat', 'x', { exclusive: true }), (e) => e.code === 'EEXIST');
  });

  test('readFile with offset and length; readFileBuffer returns a Uint8Array', async () => {
    await s.writeFile('abc.txt', 'abcdefghij');
    assert.equal(await s.readFile('abc.txt', { offset: 2, length: 3 }), 'cde');
    const b = await s.readFileBuffer('abc.txt', { offset: 8 });
    assert.ok(b instanceof Uint8Array);
    assert.equal(Buffer.from(b).toString(), 'ij');
  });

  test('reading a missing file: FileSystemError ENOENT with the path', async () => {
    await assert.rejects(s.readFile('missing.txt'), (e) => {
      assert.ok(e instanceof FileSystemError);
      assert.equal(e.code, 'ENOENT');
      assert.match(e.path, /missing\.txt$/);
      return true;
    });
    await assert.rejects(s.readFile('/workspace'), (e) => e.code === 'EISDIR');
  });

  test('stat, lstat and symlinks', async () => {
    await s.writeFile('target.txt', '12345');
    await s.exec('ln -sf target.txt link.txt');
    const st = await s.stat('link.txt');
    assert.equal(st.type, 'file');
    assert.equal(st.size, 5);
    assert.equal(st.isFile, true);
    assert.equal(typeof st.mtimeMs, 'number');
    const l = await s.lstat('link.txt');
    assert.equal(l.isSymbolicLink, true);
    assert.equal(l.target, 'target.txt');
    const d = await s.stat('/workspace');
    assert.equal(d.isDirectory, true);
    await assert.rejects(s.stat('nope'), (e) => e.code === 'ENOENT');
  });

  test('readdir: names, and entries withTypes, sorted', async () => {
    await s.mkdir('/tmp/ls', { recursive: true });
    await s.writeFile('/tmp/ls/b.txt', '');
    await s.mkdir('/tmp/ls/a');
    assert.deepEqual(await s.readdir('/tmp/ls'), ['a', 'b.txt']);
    assert.deepEqual(await s.readdir('/tmp/ls', { withTypes: true }), [
      { name: 'a', type: 'dir' },
      { name: 'b.txt', type: 'file' },
    ]);
    await assert.rejects(s.readdir('/tmp/ls/b.txt'), (e) => e.code === 'ENOTDIR');
  });

  test('exists', async () => {
    assert.equal(await s.exists('/workspace'), true);
    assert.equal(await s.exists('/no/such/path'), false);
    await s.exec('ln -sf /nowhere dangling');
    assert.equal(await s.exists('dangling'), false);
    assert.equal(await s.exists('dangling', { follow: false }), true);
  });

  test('mkdir: plain, recursive, existing', async () => {
    assert.equal(await s.mkdir('/tmp/m1'), true);
    await assert.rejects(s.mkdir('/tmp/m1'), (e) => e.code === 'EEXIST');
    await assert.rejects(s.mkdir('/tmp/m2/x'), (e) => e.code === 'ENOENT');
    assert.equal(await s.mkdir('/tmp/m2/x/y', { recursive: true }), true);
    assert.equal(await s.mkdir('/tmp/m2/x/y', { recursive: true }), false);
    await s.mkdir('/tmp/m3', { mode: 0o700 });
    assert.equal((await s.stat('/tmp/m3')).mode, 0o700);
  });

  test('rm: file, directory, recursive, force', async () => {
    await s.writeFile('/tmp/r/a/b.txt', 'x');
    await assert.rejects(s.rm('/tmp/r'), (e) => e.code === 'EISDIR');
    assert.equal(await s.rm('/tmp/r/a/b.txt'), true);
    assert.equal(await s.rm('/tmp/r', { recursive: true }), true);
    assert.equal(await s.exists('/tmp/r'), false);
    await assert.rejects(s.rm('/tmp/r'), (e) => e.code === 'ENOENT');
    assert.equal(await s.rm('/tmp/r', { force: true }), false);
  });

  test('rename, with and without overwrite', async () => {
    await s.writeFile('/tmp/mv1', 'one');
    await s.writeFile('/tmp/mv2', 'two');
    await assert.rejects(s.rename('/tmp/mv1', '/tmp/mv2', { overwrite: false }), (e) => e.code === 'EEXIST');
    await s.rename('/tmp/mv1', '/tmp/mv2');
    assert.equal(await s.readFile('/tmp/mv2'), 'one');
    assert.equal(await s.exists('/tmp/mv1'), false);
  });

  test('a symlink to a host file does not reach the host', async () => {
    const secret = path.join(tmpdir(), 'secret.txt');
    fs.writeFileSync(secret, 'host secret');
    await s.exec(['ln', '-sf', secret, 'to-host']);
    await assert.rejects(s.readFile('to-host'), (e) => e instanceof FileSystemError);
  });

  test('unknown file options are refused', async () => {
    await assert.rejects(s.rm('x', { recursve: true }), TypeError);
    await assert.rejects(s.mkdir('x', { parents: true }), TypeError);
    await assert.rejects(s.writeFile('x', 'y', { flag: 'a' }), TypeError);
    await assert.rejects(s.writeFile('x', 42), TypeError);
  });
});

describe('NUL characters', () => {
  test('in a path, argv or env: InvalidParamsError naming the param; the connection stays usable', async () => {
    await assert.rejects(s.readFile('a\0b'), (e) => e instanceof InvalidParamsError && e.param === 'path');
    await assert.rejects(s.exec(['echo', 'a\0b']), (e) => e instanceof InvalidParamsError && /argv/.test(e.param));
    await assert.rejects(s.exec('true', { env: { A: '\0' } }), (e) => e instanceof InvalidParamsError && /env/.test(e.param));
    assert.equal((await s.exec('echo fine')).stdout, 'fine\n');
  });

  test('in file data and stdin: kept, round trip intact', async () => {
    await s.writeFile('/tmp/nul.txt', 'a\0b');
    assert.deepEqual([...(await s.readFileBuffer('/tmp/nul.txt'))], [97, 0, 98]);
    const r = await s.exec(['od', '-An', '-c'], { stdin: 'x\0y' });
    assert.match(r.stdout, /x\s+\\0\s+y/);
  });
});

describe('labels', () => {
  test('a label is echoed in the info object and filters listSessions', async () => {
    const a = await fb.createSession({ label: 'agent-a' });
    const b = await fb.createSession({ label: 'agent-b' });
    try {
      assert.equal(a.createInfo.label, 'agent-a');
      assert.deepEqual((await fb.listSessions({ label: 'agent-a' })).map((i) => i.session), [a.id]);
      assert.deepEqual((await fb.listSessions({ label: 'nobody' })), []);
      assert.ok((await fb.listSessions()).length >= 3);
      await assert.rejects(fb.listSessions({ lable: 'x' }), TypeError);
    } finally {
      await a.destroy();
      await b.destroy();
    }
  });
});

describe('workspace methods without cow', () => {
  test('diff, commit and reset answer NotSupportedError on a session without cow', async () => {
    await assert.rejects(s.diff(), NotSupportedError);
    await assert.rejects(s.commit(), NotSupportedError);
    await assert.rejects(s.reset(), NotSupportedError);
    await assert.rejects(s.diff({ fromat: 'patch' }), TypeError);
  });
});

describe('errors', () => {
  test('SandboxDiedError carries code session_dead and type sandbox_died', () => {
    const e = new SandboxDiedError('x');
    assert.equal(e.code, 'session_dead');
    assert.equal(e.type, 'sandbox_died');
    assert.ok(e instanceof FlueboxError);
  });
});

describe('the caller\'s programs (caller)', () => {
  test('by default the caller is this process: its PATH, directory and only the variables fluebox reads', async () => {
    const { sessionParams } = await import('../lib/client.cjs');
    process.env.FLUEBOX_TEST_NOT_SENT = 'x';
    try {
      const p = sessionParams({});
      assert.equal(p.caller.path, process.env.PATH);
      assert.equal(p.caller.cwd, process.cwd());
      assert.equal(p.caller.env.FLUEBOX_TEST_NOT_SENT, undefined);
      assert.equal(sessionParams({ caller: false }).caller, undefined);
    } finally {
      delete process.env.FLUEBOX_TEST_NOT_SENT;
    }
  });

  test('an activated venv of the caller: exec (sh -c python) runs in it', async () => {
    const { execFileSync } = await import('node:child_process');
    const dir = tmpdir('fbvenv-');
    const venv = path.join(dir, 'venv');
    execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv]);
    const v = await fb.createSession({ caller: { path: `${venv}/bin:/usr/bin:/bin`, env: { VIRTUAL_ENV: venv } } });
    try {
      assert.ok(v.createInfo.toolchain.binds.some((b) => b.dst === venv), JSON.stringify(v.createInfo.toolchain));
      const r = await v.exec('python -c "import sys; print(sys.prefix)"; echo "$VIRTUAL_ENV"');
      assert.equal(r.stdout, `${venv}\n${venv}\n`);
    } finally {
      await v.destroy();
      fs.rmSync(dir, { recursive: true, force: true });
    }
    const none = await fb.createSession({ caller: false });
    try {
      assert.equal((await none.exec('command -v python3')).stdout, '/usr/bin/python3\n');
    } finally {
      await none.destroy();
    }
  });
});
