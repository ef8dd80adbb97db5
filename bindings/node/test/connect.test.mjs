// Fluebox.connect: a given socket, the default socket, a private server
// (found through the option, FLUEBOX_BIN or PATH) that exits with the client.
import { test, after, describe } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Fluebox, ConnectionError, FlueboxError, UntrustedServerError, defaultSocketPath, findBinary } from '../index.mjs';
import { binary, startServer, tmpdir, pidAlive, waitFor } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const indexPath = path.resolve(here, '../index.cjs');
const cleanup = [];
after(async () => { for (const f of cleanup.reverse()) await f(); });

describe('connect', () => {
  test('to an explicit socket', async () => {
    const srv = await startServer();
    cleanup.push(() => srv.stop());
    const fb = await Fluebox.connect({ socket: srv.socket });
    assert.equal(fb.socket, srv.socket);
    assert.equal(fb.server, null);
    assert.equal((await fb.serverInfo()).name, 'fluebox');
    await fb.close();
  });

  test('an explicit socket with no server is a ConnectionError (no private server)', async () => {
    const sock = path.join(tmpdir(), 'none.sock');
    await assert.rejects(Fluebox.connect({ socket: sock }), (e) => e instanceof ConnectionError && e.syscallCode === 'ENOENT');
  });

  test('the default socket: FLUEBOX_SOCKET', async () => {
    const srv = await startServer();
    cleanup.push(() => srv.stop());
    assert.equal(defaultSocketPath({ FLUEBOX_SOCKET: srv.socket }), srv.socket);
    const fb = await Fluebox.connect({ env: { ...process.env, FLUEBOX_SOCKET: srv.socket }, autoStart: false });
    assert.equal(fb.socket, srv.socket);
    await fb.close();
  });

  test('the default socket rule without FLUEBOX_SOCKET', () => {
    const uid = process.getuid();
    const xdg = tmpdir();
    fs.chmodSync(xdg, 0o700);
    assert.equal(defaultSocketPath({ XDG_RUNTIME_DIR: xdg }), path.join(xdg, 'fluebox.sock'));
    const fallback = [`/run/user/${uid}/fluebox.sock`, `/tmp/fluebox-${uid}/fluebox.sock`];
    const p = defaultSocketPath({ XDG_RUNTIME_DIR: '/nonexistent' });
    assert.ok(fallback.includes(p), p);
    // A runtime directory others can enter is not the user's private one.
    fs.chmodSync(xdg, 0o755);
    assert.ok(fallback.includes(defaultSocketPath({ XDG_RUNTIME_DIR: xdg })));
  });

  test('autoStart: false with nothing listening rejects', async () => {
    const env = { ...process.env, FLUEBOX_SOCKET: path.join(tmpdir(), 'nothing.sock') };
    await assert.rejects(Fluebox.connect({ env, autoStart: false }), ConnectionError);
  });

  test('a private server from the binary option; close() stops it and removes its socket', async () => {
    const fb = await Fluebox.connect({ private: true, binary: binary() });
    const { pid, socket } = fb.server;
    assert.ok(pidAlive(pid));
    const s = await fb.createSession();
    assert.equal((await s.exec('echo private')).stdout, 'private\n');
    await fb.close();
    await waitFor(() => !pidAlive(pid), 10000, 'private server exit');
    assert.equal(fs.existsSync(socket), false);
  });

  test('a private server from FLUEBOX_BIN, and from PATH', async () => {
    const fb1 = await Fluebox.connect({ private: true, env: { ...process.env, FLUEBOX_BIN: binary() } });
    assert.equal(fb1.server.binary, path.resolve(binary()));
    await fb1.close();
    const bindir = path.dirname(binary());
    // PATH lookup needs the file to be called "fluebox".
    if (path.basename(binary()) === 'fluebox') {
      const env = { ...process.env, PATH: `${bindir}:${process.env.PATH}` };
      delete env.FLUEBOX_BIN;
      assert.equal(findBinary(undefined, env), path.join(bindir, 'fluebox'));
      const fb2 = await Fluebox.connect({ private: true, env });
      assert.equal((await fb2.serverInfo()).name, 'fluebox');
      await fb2.close();
    }
  });

  test('no binary anywhere: a clear error', async () => {
    const env = { PATH: tmpdir(), FLUEBOX_SOCKET: path.join(tmpdir(), 'x.sock') };
    await assert.rejects(Fluebox.connect({ env }), (e) => e instanceof FlueboxError && e.code === 'binary_not_found');
    await assert.rejects(Fluebox.connect({ private: true, binary: '/nonexistent/fluebox' }), /not an executable/);
  });

  test('a private server that cannot start reports its stderr', async () => {
    await assert.rejects(
      Fluebox.connect({ private: true, binary: binary(), serverArgs: ['--no-such-option'] }),
      (e) => e.code === 'server_failed',
    );
  });

  for (const how of ['exits without close()', 'is killed with SIGKILL']) {
    test(`the private server exits when the client process ${how}`, async () => {
      const script = `
        const { Fluebox } = require(${JSON.stringify(indexPath)});
        (async () => {
          const fb = await Fluebox.connect({ private: true, binary: ${JSON.stringify(binary())} });
          await fb.createSession();
          process.stdout.write(JSON.stringify(fb.server) + '\\n');
          ${how.startsWith('exits') ? '' : 'setInterval(() => {}, 1000);'}
        })().catch((e) => { console.error(e); process.exit(2); });`;
      const child = spawn(process.execPath, ['-e', script], { stdio: ['ignore', 'pipe', 'inherit'] });
      const exited = new Promise((r) => child.once('exit', r));
      let out = '';
      child.stdout.on('data', (b) => { out += b; });
      await waitFor(() => out.includes('\n'), 20000, 'child connected');
      const info = JSON.parse(out);
      if (!how.startsWith('exits')) {
        assert.ok(fs.existsSync(path.dirname(info.socket))); // the client is still running
        child.kill('SIGKILL');
      }
      await exited;
      await waitFor(() => !pidAlive(info.pid), 15000, 'private server exit');
      // Nobody is left to clean up but the server: it removes its own
      // directory (socket and lock) as it stops.
      await waitFor(() => !fs.existsSync(path.dirname(info.socket)), 15000, "the private server's directory removed");
    });
  }
});

// Whose server the client talks to (docs/protocol.md section 1): its own, root's,
// or serverUid's; a socket of anyone else is refused before anything is sent.
function otherUid() {
  if (process.getuid() !== 0) return null;
  try {
    const line = fs.readFileSync('/etc/passwd', 'utf8').split('\n').find((l) => l.startsWith('fbtest:'));
    return line ? Number(line.split(':')[2]) : null;
  } catch { return null; }
}

// A listener of another uid (setpriv), in a directory of that uid; it records
// whatever a client sends it.
async function fakeServer(uid) {
  const dir = tmpdir('fbfake-');
  fs.chownSync(dir, uid, uid);
  const sock = path.join(dir, 'fake.sock');
  const got = path.join(dir, 'got');
  const code = `const net=require('net'),fs=require('fs');net.createServer(c=>c.on('data',d=>fs.appendFileSync(${JSON.stringify(got)},d))).listen(${JSON.stringify(sock)},()=>console.log('ready'));`;
  const proc = spawn('setpriv', [`--reuid=${uid}`, `--regid=${uid}`, '--clear-groups', process.execPath, '-e', code], { stdio: ['ignore', 'pipe', 'inherit'] });
  await new Promise((resolve, reject) => {
    proc.stdout.once('data', resolve);
    proc.once('exit', (c) => reject(new Error(`fake server exited ${c}`)));
  });
  cleanup.push(async () => { proc.kill('SIGKILL'); fs.rmSync(dir, { recursive: true, force: true }); });
  return { sock, got, dir };
}

describe('trust', () => {
  const uid = otherUid();
  test('a socket of another user is refused, nothing sent', { skip: uid === null && 'needs root and the fbtest user' }, async () => {
    const f = await fakeServer(uid);
    await assert.rejects(Fluebox.connect({ socket: f.sock }),
      (e) => e instanceof UntrustedServerError && e.code === 'untrusted_server' && /owned by uid \d+, not by you/.test(e.message));
    assert.equal(fs.existsSync(f.got), false);
    // Told to trust that uid: it connects.
    const fb = await Fluebox.connect({ socket: f.sock, serverUid: uid });
    await fb.close();
    const fb2 = await Fluebox.connect({ socket: f.sock, env: { ...process.env, FLUEBOX_SERVER_UID: String(uid) } });
    await fb2.close();
  });

  test('the default directory of someone else is refused', { skip: uid === null && 'needs root and the fbtest user' }, async () => {
    const f = await fakeServer(uid);
    assert.notEqual(defaultSocketPath({ XDG_RUNTIME_DIR: f.dir }), f.sock.replace('fake.sock', 'fluebox.sock'));
    await assert.rejects(Fluebox.connect({ env: { ...process.env, FLUEBOX_SOCKET: f.sock }, autoStart: false }), UntrustedServerError);
  });

  test('a socket in a directory others may write is refused', async () => {
    const d = tmpdir();
    fs.chmodSync(d, 0o777);
    await assert.rejects(Fluebox.connect({ socket: path.join(d, 's.sock') }), (e) => e instanceof UntrustedServerError && /others could replace the socket/.test(e.message));
  });

  test('a bad serverUid is a TypeError', async () => {
    await assert.rejects(Fluebox.connect({ socket: path.join(tmpdir(), 'x.sock'), serverUid: 'alice' }), TypeError);
  });
});

// A one-connection stand-in for the server: answers the first request with
// `reply` (ID replaced by its id) and closes.
function standIn(reply) {
  const sock = path.join(tmpdir(), 'fake.sock');
  const srv = net.createServer((c) => {
    let buf = '';
    c.on('data', (d) => {
      buf += d;
      const nl = buf.indexOf('\n');
      if (nl < 0) return;
      const req = JSON.parse(buf.slice(0, nl));
      c.end(reply.replace('ID', JSON.stringify(req.id)));
      srv.close();
    });
  });
  srv.listen(sock);
  return new Promise((resolve) => srv.on('listening', () => resolve(sock)));
}

describe('framing errors say what they are', () => {
  test('the connection lost inside a reply is a ConnectionError saying so', async () => {
    const sock = await standIn('{"id":ID,"result":{"name":"fluebox","stdout":"abc');
    const fb = await Fluebox.connect({ socket: sock });
    await assert.rejects(fb.serverInfo(), (e) => e instanceof ConnectionError &&
      /lost in the middle of a reply/.test(e.message));
    await fb.close();
  });

  test('a line that is not JSON is a parse_error naming the line', async () => {
    const sock = await standIn('{"id":ID,"result":nope}\n');
    const fb = await Fluebox.connect({ socket: sock });
    await assert.rejects(fb.serverInfo(), (e) => e.code === 'parse_error' &&
      /not JSON/.test(e.message) && /nope/.test(e.message));
    await fb.close();
  });
});
