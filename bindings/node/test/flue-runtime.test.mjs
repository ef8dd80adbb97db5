// Flue's own standard tools (read, write, edit, bash, grep, glob from
// @flue/runtime) driving a fluebox sandbox, against a real server.
//
// @flue/runtime is not a dependency of this package. The test runs when it
// can be imported: from FLUE_RUNTIME_DIR (a directory whose node_modules has
// it; tests/suites/node-client.sh installs a pinned version from the npm
// registry into a cache and sets it), or from bindings/node/node_modules
// after `npm install --no-save @flue/runtime`. Otherwise it is skipped.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL, fileURLToPath } from 'node:url';
import { fluebox, closeAll } from '../flue.mjs';
import { startServer, tmpdir } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));

async function loadFlue() {
  const bases = [process.env.FLUE_RUNTIME_DIR, path.resolve(here, '..')].filter(Boolean);
  for (const base of bases) {
    try {
      // Its exports map has no ./package.json, so find the directory by hand.
      const req = createRequire(path.join(path.resolve(base), 'package.json'));
      const dir = req.resolve.paths('@flue/runtime').map((d) => path.join(d, '@flue', 'runtime')).find((d) => fs.existsSync(path.join(d, 'package.json')));
      if (!dir) continue;
      const pkgJson = path.join(dir, 'package.json');
      const pkg = JSON.parse(fs.readFileSync(pkgJson, 'utf8'));
      const entry = path.join(path.dirname(pkgJson), pkg.exports['.'].import);
      return await import(pathToFileURL(entry).href);
    } catch { /* try the next */ }
  }
  return null;
}

const flue = await loadFlue();
const skip = flue ? false : '@flue/runtime not installed (set FLUE_RUNTIME_DIR)';

let srv;
let root;
let sb;

before(async () => {
  if (!flue) return;
  srv = await startServer();
  root = tmpdir('fbflue-rt-');
  sb = await fluebox({ socket: srv.socket, workspaceRoot: root }).createSandbox({ id: 'flue-tools' });
});

after(async () => {
  await closeAll();
  if (srv) await srv.stop();
  if (root) fs.rmSync(root, { recursive: true, force: true });
});

function text(result) {
  return result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
}

test('write, read and edit tools', { skip }, async () => {
  const write = flue.createWriteTool(sb);
  await write.execute('t1', { path: 'src/app.py', content: 'print("hello")\nprint("bye")\n' });
  assert.equal(await sb.readFile('/workspace/src/app.py'), 'print("hello")\nprint("bye")\n');
  const read = flue.createReadTool(sb);
  assert.match(text(await read.execute('t2', { path: 'src/app.py' })), /hello/);
  const edit = flue.createEditTool(sb);
  await edit.execute('t3', { path: 'src/app.py', oldText: 'hello', newText: 'world' });
  assert.equal(await sb.readFile('src/app.py'), 'print("world")\nprint("bye")\n');
});

test('bash tool: output, a non-zero exit, and its timeout', { skip }, async () => {
  const bash = flue.createBashTool(sb);
  const ok = text(await bash.execute('t4', { command: 'python3 src/app.py' }));
  assert.match(ok, /world/);
  const bad = await bash.execute('t5', { command: 'echo about to fail; exit 3' }).then(text, (e) => `threw ${e.message}`);
  assert.match(bad, /about to fail/);
  const slow = await bash.execute('t6', { command: 'sleep 30', timeout: 1 }).then(text, (e) => `threw ${e.message}`);
  assert.match(slow, /124|timed out/i);
});

test('grep and glob tools', { skip }, async () => {
  await sb.writeFile('docs/a.md', 'needle here\n');
  await sb.writeFile('docs/b.txt', 'nothing\n');
  const grep = flue.createGrepTool(sb);
  assert.match(text(await grep.execute('t7', { pattern: 'needle' })), /docs\/a\.md/);
  const glob = flue.createGlobTool(sb);
  const found = text(await glob.execute('t8', { pattern: '*.md' }));
  assert.match(found, /a\.md/);
  assert.doesNotMatch(found, /b\.txt/);
});

test('the factory is accepted where Flue expects a SandboxFactory (its own error types line up)', { skip }, async () => {
  const e = await sb.exec('sleep 30', { signal: AbortSignal.abort('x') }).catch((x) => x);
  assert.equal(e.name, 'AbortError');
  // Flue classifies by `type`, so ours must carry the same strings as its classes.
  assert.equal(new flue.SandboxDiedError({ operation: 'exec', reason: 'stopped' }).type, 'sandbox_died');
  const unsupported = await sb.rm('x', { retries: 2 }).catch((x) => x);
  assert.deepEqual(unsupported.meta.options, ['retries']);
  assert.equal(unsupported.type, new flue.SandboxOperationUnsupportedError({ operation: 'rm', provider: 'x', options: ['retries'] }).type);
});
