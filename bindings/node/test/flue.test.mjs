// Contract test of `fluebox/flue`: one test per rule of Flue's sandbox
// contract (see the shared notes and Flue's "Sandbox Adapter API" page),
// against a real `fluebox serve`.
import { test, before, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fluebox, SandboxDiedError, SandboxOperationUnsupportedError, closeAll } from '../flue.mjs';
import { Fluebox } from '../index.mjs';
import { startServer, tmpdir, waitFor } from './helpers.mjs';

let srv;
let root;
let factory;
let sb;

before(async () => {
  srv = await startServer();
  root = tmpdir('fbflue-');
  factory = fluebox({ socket: srv.socket, workspaceRoot: root, memory: '256M' });
  sb = await factory.createSandbox({ id: 'conversation-1' });
});

after(async () => {
  await closeAll();
  if (srv) await srv.stop();
  fs.rmSync(root, { recursive: true, force: true });
});

const METHODS = ['exec', 'readFile', 'readFileBuffer', 'writeFile', 'stat', 'readdir', 'exists', 'mkdir', 'rm'];

describe('shape', () => {
  test('the factory has createSandbox (and the deprecated createSessionEnv)', () => {
    assert.equal(typeof factory.createSandbox, 'function');
    assert.equal(typeof factory.createSessionEnv, 'function');
  });

  test('the sandbox has every driver method, cwd and resolvePath', () => {
    for (const m of METHODS) assert.equal(typeof sb[m], 'function', m);
    assert.equal(sb.cwd, '/workspace');
    assert.equal(typeof sb.resolvePath, 'function');
  });

  test('fluebox/flue does not load @flue/runtime', () => {
    const require = createRequire(import.meta.url);
    const src = ['../flue.cjs', '../lib/flue.cjs', '../lib/client.cjs']
      .map((f) => fs.readFileSync(require.resolve(f), 'utf8')).join('\n');
    assert.doesNotMatch(src, /require\(['"]@flue|from ['"]@flue/);
  });
});

describe('exec', () => {
  test('resolves on a non-zero exit with stdout, stderr and exitCode', async () => {
    const r = await sb.exec('echo out; echo err >&2; exit 42');
    assert.deepEqual(r, { stdout: 'out\n', stderr: 'err\n', exitCode: 42 });
  });

  test('a command that is not found resolves too (127)', async () => {
    const r = await sb.exec('definitely-not-a-command');
    assert.equal(r.exitCode, 127);
  });

  test('the command is a shell string (bash when present)', async () => {
    const r = await sb.exec('x=$((6*7)); [[ $x == 42 ]] && echo "$x" | tr 4 f');
    assert.equal(r.stdout, 'f2\n');
  });

  test('its own timeout resolves with 124 and a note on stderr', async () => {
    const r = await sb.exec('echo before; sleep 30', { timeoutMs: 250 });
    assert.equal(r.exitCode, 124);
    assert.equal(r.stdout, 'before\n');
    assert.match(r.stderr, /timed out after 250 ms/);
  });

  test('timeouts are rounded up, never down', async () => {
    const r = await sb.exec('sleep 5', { timeoutMs: 100.2 });
    assert.equal(r.exitCode, 124);
    assert.match(r.stderr, /after 101 ms/);
    // 0.4 ms rounds up to 1 ms; rounded down to 0 it would mean no timeout.
    const tiny = await sb.exec('sleep 2', { timeoutMs: 0.4 });
    assert.equal(tiny.exitCode, 124);
  });

  test('an AbortSignal rejects with an AbortError carrying the reason, and kills the command', async () => {
    const ac = new AbortController();
    const marker = `/tmp/abort-${Date.now()}`;
    const p = sb.exec(`touch ${marker}.started; sleep 3.017; touch ${marker}`, { signal: ac.signal });
    await waitFor(() => sb.exists(`${marker}.started`), 5000, 'the command started');
    const reason = new Error('stop');
    ac.abort(reason);
    await assert.rejects(p, (e) => {
      assert.ok(e instanceof DOMException);
      assert.equal(e.name, 'AbortError');
      assert.equal(e.cause, reason);
      return true;
    });
    // Gone, not merely not finished yet: no "sleep 3.017" left in the sandbox.
    await waitFor(async () => (await sb.exec("cat /proc/[0-9]*/cmdline | tr '\\0' ' ' | grep -c 'sleep 3[.]017' || true")).stdout.trim() === '0',
      10000, 'the aborted command gone');
    assert.equal(await sb.exists(marker), false, 'the aborted command did not go on running');
  });

  test('an already-aborted signal rejects before anything runs', async () => {
    const ac = new AbortController();
    ac.abort('early');
    await assert.rejects(sb.exec('touch /workspace/pre', { signal: ac.signal }), (e) => e.name === 'AbortError' && e.cause === 'early');
    assert.equal(await sb.exists('/workspace/pre'), false);
  });

  test('cwd (relative to the sandbox cwd) and env', async () => {
    await sb.mkdir('sub/dir', { recursive: true });
    const r = await sb.exec('pwd; echo $A', { cwd: 'sub/dir', env: { A: 'b' } });
    assert.equal(r.stdout, '/workspace/sub/dir\nb\n');
    const abs = await sb.exec('pwd', { cwd: '/tmp' });
    assert.equal(abs.stdout, '/tmp\n');
  });

  test('a command that cannot be started resolves with 125 and the reason (too many at once)', async () => {
    const own = await startServer(['--max-execs', '2']);
    try {
      const t = await fluebox({ socket: own.socket, workspace: null }).createSandbox({ id: 'busy' });
      const a = t.exec('sleep 2');
      const b = t.exec('sleep 2');
      await new Promise((res) => setTimeout(res, 300));
      const c = await t.exec('echo never');
      assert.equal(c.exitCode, 125);
      assert.match(c.stderr, /cannot start the command/);
      assert.equal((await a).exitCode, 0);
      assert.equal((await b).exitCode, 0);
      assert.equal((await t.exec('echo again')).stdout, 'again\n');
    } finally {
      await closeAll();
      await own.stop();
      sb = await factory.createSandbox({ id: 'conversation-1' });
    }
  });

  test('an unsupported option is refused before anything changes', async () => {
    await assert.rejects(sb.exec('touch /workspace/unsupported', { shell: 'zsh' }), (e) => {
      assert.ok(e instanceof SandboxOperationUnsupportedError);
      assert.equal(e.type, 'sandbox_operation_unsupported');
      assert.equal(e.meta.operation, 'exec');
      assert.deepEqual(e.meta.options, ['shell']);
      assert.match(e.message, /fluebox does not support exec with "shell"/);
      return true;
    });
    assert.equal(await sb.exists('/workspace/unsupported'), false);
  });
});

describe('files', () => {
  test('writeFile creates missing parents; readFile reads text', async () => {
    await sb.writeFile('out/nested/report.md', '# report\n');
    assert.equal(await sb.readFile('out/nested/report.md'), '# report\n');
    assert.equal(await sb.readFile('/workspace/out/nested/report.md'), '# report\n');
  });

  test('writeFile takes bytes; readFileBuffer returns a Uint8Array', async () => {
    await sb.writeFile('bytes.bin', new Uint8Array([0, 1, 254, 255]));
    const b = await sb.readFileBuffer('bytes.bin');
    assert.ok(b instanceof Uint8Array);
    assert.equal(Buffer.isBuffer(b), false);
    assert.deepEqual([...b], [0, 1, 254, 255]);
  });

  test('readFile of a missing file or a directory throws', async () => {
    await assert.rejects(sb.readFile('nope.txt'), (e) => e.code === 'ENOENT' && /nope\.txt/.test(e.message));
    await assert.rejects(sb.readFile('/workspace'), (e) => e.code === 'EISDIR');
  });

  test('stat: file and directory', async () => {
    await sb.writeFile('five.txt', '12345');
    const st = await sb.stat('five.txt');
    assert.equal(st.isFile, true);
    assert.equal(st.isDirectory, false);
    assert.equal(st.isSymbolicLink, false);
    assert.equal(st.size, 5);
    assert.ok(st.mtime instanceof Date && !Number.isNaN(st.mtime.getTime()));
    const d = await sb.stat('/workspace');
    assert.equal(d.isDirectory, true);
    assert.deepEqual(Object.keys(st).sort(), ['isDirectory', 'isFile', 'isSymbolicLink', 'mtime', 'size']);
  });

  test('stat follows symlinks and reports that the path is one', async () => {
    await sb.writeFile('real.txt', 'abc');
    await sb.exec('ln -sf real.txt alias.txt; ln -sf /workspace/sub linkdir; ln -sf missing dangling');
    const st = await sb.stat('alias.txt');
    assert.equal(st.isSymbolicLink, true);
    assert.equal(st.isFile, true);
    assert.equal(st.size, 3);
    const d = await sb.stat('linkdir');
    assert.equal(d.isSymbolicLink, true);
    assert.equal(d.isDirectory, true);
    await assert.rejects(sb.stat('dangling'), (e) => e.code === 'ENOENT');
    await assert.rejects(sb.stat('absent'), (e) => e.code === 'ENOENT');
  });

  test('stat does not invent size or mtime', async () => {
    // Every field comes from the server: stat a device, whose size is 0 on
    // the real inode too; mtime must be the server's, not "now".
    const st = await sb.stat('/dev/null');
    assert.equal(st.isFile, false);
    assert.equal(st.isDirectory, false);
    const raw = await sb.session.stat('/dev/null');
    assert.equal(st.size, raw.size);
    assert.equal(st.mtime.getTime(), raw.mtimeMs);
  });

  test('readdir returns names only', async () => {
    await sb.mkdir('list', { recursive: true });
    await sb.writeFile('list/a.txt', '');
    await sb.mkdir('list/b');
    assert.deepEqual((await sb.readdir('list')).sort(), ['a.txt', 'b']);
    await assert.rejects(sb.readdir('list/a.txt'), (e) => e.code === 'ENOTDIR');
  });

  test('exists never throws', async () => {
    assert.equal(await sb.exists('list/a.txt'), true);
    assert.equal(await sb.exists('/no/such'), false);
    assert.equal(await sb.exists('list/a.txt/below-a-file'), false);
    assert.equal(await sb.exists('\0bad'), false);
    assert.equal(await sb.exists(undefined), false);
  });

  test('mkdir: recursive creates parents and tolerates an existing directory', async () => {
    await sb.mkdir('m/a/b', { recursive: true });
    await sb.mkdir('m/a/b', { recursive: true });
    await assert.rejects(sb.mkdir('m/a/b'), (e) => e.code === 'EEXIST');
    await assert.rejects(sb.mkdir('m/x/y'), (e) => e.code === 'ENOENT');
    assert.equal((await sb.stat('m/a/b')).isDirectory, true);
  });

  test('rm: recursive and force, exactly', async () => {
    await sb.writeFile('r/a/file', 'x');
    await assert.rejects(sb.rm('r'), (e) => e.code === 'EISDIR');
    await assert.rejects(sb.rm('r/none'), (e) => e.code === 'ENOENT');
    await sb.rm('r/none', { force: true });
    await assert.rejects(sb.rm('r', { force: true }), (e) => e.code === 'EISDIR'); // -f on a directory still errors
    await sb.rm('r', { recursive: true });
    assert.equal(await sb.exists('r'), false);
  });

  test('unsupported rm and mkdir options are refused before anything changes', async () => {
    await sb.writeFile('keep/me', 'x');
    await assert.rejects(sb.rm('keep', { recursive: true, maxRetries: 3 }), SandboxOperationUnsupportedError);
    assert.equal(await sb.exists('keep/me'), true);
    await assert.rejects(sb.mkdir('newdir', { recursive: true, mode: 0o700 }), SandboxOperationUnsupportedError);
    assert.equal(await sb.exists('newdir'), false);
  });
});

describe('paths', () => {
  test('cwd is absolute; resolvePath resolves relative paths against it', () => {
    assert.equal(sb.resolvePath('a/b'), '/workspace/a/b');
    assert.equal(sb.resolvePath('./a/../b/'), '/workspace/b');
    assert.equal(sb.resolvePath('/etc/hosts'), '/etc/hosts');
    assert.equal(sb.resolvePath('/tmp//x/./y'), '/tmp/x/y');
    assert.equal(sb.resolvePath('../up'), '/up');
  });

  test('two spellings of a path resolve to the same string', () => {
    assert.equal(sb.resolvePath('dir/file'), sb.resolvePath('/workspace/dir/./file'));
  });

  test('a custom cwd', async () => {
    const f = fluebox({ socket: srv.socket, workspaceRoot: root, cwd: '/tmp' });
    const t = await f.createSandbox({ id: 'cwd-test' });
    assert.equal(t.cwd, '/tmp');
    assert.equal((await t.exec('pwd')).stdout, '/tmp\n');
    await t.writeFile('rel.txt', 'x');
    assert.equal(await t.exists('/tmp/rel.txt'), true);
  });
});

describe('the caller\'s programs', () => {
  test('the bash tool finds the python3 of the process that created the sandbox (an activated venv)', async () => {
    const { execFileSync } = await import('node:child_process');
    const dir = tmpdir('fbflue-venv-');
    const venv = path.join(dir, 'venv');
    execFileSync('/usr/bin/python3', ['-m', 'venv', '--without-pip', venv]);
    const saved = { PATH: process.env.PATH, VIRTUAL_ENV: process.env.VIRTUAL_ENV };
    process.env.PATH = `${venv}/bin:${saved.PATH}`;
    process.env.VIRTUAL_ENV = venv;
    try {
      const f = fluebox({ socket: srv.socket, workspaceRoot: root });
      const t = await f.createSandbox({ id: 'caller-venv' });
      const r = await t.exec('python3 -c "import sys; print(sys.prefix)"; echo "$VIRTUAL_ENV"');
      assert.equal(r.stdout, `${venv}\n${venv}\n`, r.stderr);
    } finally {
      process.env.PATH = saved.PATH;
      if (saved.VIRTUAL_ENV === undefined) delete process.env.VIRTUAL_ENV;
      else process.env.VIRTUAL_ENV = saved.VIRTUAL_ENV;
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe('durability', () => {
  test('the same id returns the same sandbox and the same workspace', async () => {
    await sb.writeFile('durable.txt', 'kept');
    const again = await fluebox({ socket: srv.socket, workspaceRoot: root, memory: '256M' }).createSandbox({ id: 'conversation-1' });
    assert.equal(again, sb);
    assert.equal(await again.readFile('durable.txt'), 'kept');
    const other = await factory.createSandbox({ id: 'conversation-2' });
    assert.notEqual(other, sb);
    assert.equal(await other.exists('durable.txt'), false);
  });

  test('a restarted application finds the still-running session by its label', async () => {
    const own = await startServer();
    const wsRoot = tmpdir('fbflue4-');
    const first = await fluebox({ socket: own.socket, workspaceRoot: wsRoot }).createSandbox({ id: 'restart' });
    await first.exec('echo in-memory > /tmp/state');
    const id1 = first.session.id;
    await closeAll(); // the application goes away; the server keeps the session
    const second = await fluebox({ socket: own.socket, workspaceRoot: wsRoot }).createSandbox({ id: 'restart' });
    assert.notEqual(second, first);
    assert.equal(second.session.id, id1);
    assert.equal(await second.readFile('/tmp/state'), 'in-memory\n');
    const other = await fluebox({ socket: own.socket, workspaceRoot: wsRoot, memory: '64M' }).createSandbox({ id: 'restart' });
    assert.notEqual(other.session.id, id1, 'different options: a different session (same files)');
    await closeAll();
    await own.stop();
    fs.rmSync(wsRoot, { recursive: true, force: true });
    sb = await factory.createSandbox({ id: 'conversation-1' });
  });

  test('the workspace outlives the client and the server: a new one finds the files by id', async () => {
    const own = await startServer();
    const wsRoot = tmpdir('fbflue2-');
    const first = await fluebox({ socket: own.socket, workspaceRoot: wsRoot }).createSandbox({ id: 'user/42: chat' });
    await first.writeFile('notes/todo.md', '- ship it\n');
    assert.ok(first.workspace.startsWith(wsRoot + path.sep), first.workspace);
    await closeAll();
    await own.stop();
    const own2 = await startServer();
    const second = await fluebox({ socket: own2.socket, workspaceRoot: wsRoot }).createSandbox({ id: 'user/42: chat' });
    assert.equal(await second.readFile('notes/todo.md'), '- ship it\n');
    await closeAll();
    await own2.stop();
    fs.rmSync(wsRoot, { recursive: true, force: true });
    // Re-open the shared sandbox used by the other tests.
    sb = await factory.createSandbox({ id: 'conversation-1' });
  });
});

describe('sandbox death', () => {
  test('calls in flight reject with sandbox_died; the next call gets a fresh session on the same files', async () => {
    const t = await factory.createSandbox({ id: 'dies' });
    await t.writeFile('survives.txt', 'yes');
    const before = t.session.id;
    const p = t.exec('sleep 30');
    p.catch(() => {});
    const admin = await Fluebox.connect({ socket: srv.socket });
    await waitFor(async () => (await admin.session(before).info()).execs.running.length > 0, 5000, 'exec running');
    await admin.session(before).destroy();
    await admin.close();
    await assert.rejects(p, (e) => {
      assert.ok(e instanceof SandboxDiedError, `${e.name}: ${e.message}`);
      assert.equal(e.type, 'sandbox_died');
      assert.equal(e.meta.operation, 'exec');
      return true;
    });
    assert.equal(await t.readFile('survives.txt'), 'yes');
    assert.notEqual(t.session.id, before);
  });

  test('a server that dies fails calls in flight with sandbox_died', async () => {
    const own = await startServer();
    const t = await fluebox({ socket: own.socket, workspaceRoot: tmpdir('fbflue3-') }).createSandbox({ id: 'server-dies' });
    const p = t.exec('sleep 30');
    p.catch(() => {});
    await new Promise((res) => setTimeout(res, 300));
    own.proc.kill('SIGKILL');
    await assert.rejects(p, (e) => e instanceof SandboxDiedError && e.type === 'sandbox_died');
    assert.equal(await t.exists('anything'), false, 'exists still does not throw');
    await own.stop();
  });
});
