// Copy-on-write sessions: diff, commit and reset (issue 9), against a real server.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { Fluebox, CommitError } from '../index.mjs';
import { startServer, tmpdir } from './helpers.mjs';

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

function repo() {
  const d = tmpdir('fbcow-');
  fs.writeFileSync(path.join(d, 'main.c'), 'int foo;\n');
  fs.writeFileSync(path.join(d, 'old.txt'), 'old\n');
  fs.writeFileSync(path.join(d, 'keep.txt'), 'keep\n');
  return d;
}

const read = (d, f) => fs.readFileSync(path.join(d, f), 'utf8');

test('the host directory is untouched; diff lists added, modified and deleted files', async () => {
  const d = repo();
  const s = await fb.createSession({ workspace: d, cow: true });
  try {
    await s.exec("sed -i s/foo/bar/ main.c && rm old.txt && echo new > n.txt");
    assert.equal(read(d, 'main.c'), 'int foo;\n');
    assert.ok(fs.existsSync(path.join(d, 'old.txt')));
    assert.equal(fs.existsSync(path.join(d, 'n.txt')), false);
    const r = await s.diff();
    const by = Object.fromEntries(r.changes.map((c) => [c.path, c]));
    assert.equal(by['main.c'].status, 'modified');
    assert.match(by['main.c'].diff, /-int foo;\n\+int bar;/);
    assert.equal(by['old.txt'].status, 'deleted');
    assert.equal(by['n.txt'].status, 'added');
    assert.equal(by['keep.txt'], undefined);
    assert.deepEqual(r.counts, { added: 1, modified: 1, deleted: 1, renamed: 0 });
    const only = await s.diff({ paths: ['main.c'], diffs: false });
    assert.deepEqual(only.changes.map((c) => c.path), ['main.c']);
    assert.equal(only.changes[0].diff, undefined);
  } finally {
    await s.destroy();
  }
});

test('diff as a patch that git apply accepts', async () => {
  const d = repo();
  const copy = tmpdir('fbcow-copy-');
  fs.cpSync(d, copy, { recursive: true });
  const s = await fb.createSession({ workspace: d, cow: true });
  try {
    await s.writeFile('main.c', 'int bar;\n');
    await s.writeFile('sub/new.txt', 'hello\n');
    const { patch } = await s.diff({ format: 'patch' });
    assert.equal(typeof patch, 'string');
    fs.writeFileSync(path.join(copy, 'p.diff'), patch);
    execFileSync('git', ['apply', 'p.diff'], { cwd: copy });
    assert.equal(read(copy, 'main.c'), 'int bar;\n');
    assert.equal(read(copy, 'sub/new.txt'), 'hello\n');
  } finally {
    await s.destroy();
  }
});

test('commit applies the changes to the host; reset discards them', async () => {
  const d = repo();
  const s = await fb.createSession({ workspace: d, cow: true });
  try {
    await s.writeFile('main.c', 'int committed;\n');
    await s.writeFile('other.txt', 'not chosen\n');
    const r = await s.commit({ paths: ['main.c'] });
    assert.equal(r.committed, true);
    assert.equal(read(d, 'main.c'), 'int committed;\n');
    assert.equal(fs.existsSync(path.join(d, 'other.txt')), false);
    assert.deepEqual((await s.diff()).changes.map((c) => c.path), ['other.txt']);
    assert.deepEqual(await s.reset(), { reset: true });
    assert.deepEqual((await s.diff()).changes, []);
    assert.equal(await s.exists('other.txt'), false);
    assert.equal(await s.readFile('main.c'), 'int committed;\n');
  } finally {
    await s.destroy();
  }
});

test('a conflict rejects with CommitError and applies nothing; force applies', async () => {
  const d = repo();
  const s = await fb.createSession({ workspace: d, cow: true });
  try {
    await s.writeFile('main.c', 'int sandbox;\n');
    await s.writeFile('added.txt', 'a\n');
    await new Promise((r) => setTimeout(r, 20));
    fs.writeFileSync(path.join(d, 'main.c'), 'int host;\n');
    await assert.rejects(s.commit(), (e) => {
      assert.ok(e instanceof CommitError);
      assert.equal(e.code, 'commit_conflict');
      assert.deepEqual(e.conflicts.map((c) => c.path), ['main.c']);
      assert.equal(e.result.committed, false);
      return true;
    });
    assert.equal(read(d, 'main.c'), 'int host;\n');
    assert.equal(fs.existsSync(path.join(d, 'added.txt')), false);
    const r = await s.commit({ force: true });
    assert.equal(r.committed, true);
    assert.equal(read(d, 'main.c'), 'int sandbox;\n');
    assert.equal(read(d, 'added.txt'), 'a\n');
  } finally {
    await s.destroy();
  }
});
