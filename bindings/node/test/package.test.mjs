// Packaging: ESM and CommonJS share one implementation, the exports map
// resolves `fluebox` and `fluebox/flue`, and `npm install ./bindings/node`
// works without the network.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import * as esm from '../index.mjs';
import * as esmFlue from '../flue.mjs';
import { tmpdir } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgDir = path.resolve(here, '..');
const require = createRequire(import.meta.url);

test('ESM and CommonJS export the same objects', () => {
  const cjs = require('../index.cjs');
  for (const k of Object.keys(cjs)) assert.equal(esm[k], cjs[k], k);
  const flue = require('../flue.cjs');
  for (const k of Object.keys(flue)) assert.equal(esmFlue[k], flue[k], k);
  assert.equal(esmFlue.SandboxDiedError, esm.SandboxDiedError);
});

test('no runtime dependencies', () => {
  const pkg = JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8'));
  assert.equal(pkg.name, 'fluebox');
  assert.deepEqual(Object.keys(pkg.dependencies || {}), []);
  assert.deepEqual(Object.keys(pkg.peerDependencies || {}), []);
  for (const f of ['index.cjs', 'index.mjs', 'index.d.ts', 'flue.cjs', 'flue.mjs', 'flue.d.ts']) {
    assert.ok(fs.existsSync(path.join(pkgDir, f)), f);
  }
});

test('every export is declared in the .d.ts files', () => {
  const dts = fs.readFileSync(path.join(pkgDir, 'index.d.ts'), 'utf8');
  for (const k of Object.keys(require('../index.cjs'))) {
    assert.match(dts, new RegExp(`export (declare )?(class|function|const|type|interface) ${k}\\b|export \\{[^}]*\\b${k}\\b`), k);
  }
  const fdts = fs.readFileSync(path.join(pkgDir, 'flue.d.ts'), 'utf8');
  for (const k of Object.keys(require('../flue.cjs'))) {
    assert.match(fdts, new RegExp(`export (declare )?(class|function|const) ${k}\\b|export \\{[^}]*\\b${k}\\b`), k);
  }
});

test('npm install ./bindings/node, then require and import by name', { timeout: 120000 }, () => {
  const app = tmpdir('fbnpm-');
  try {
    fs.writeFileSync(path.join(app, 'package.json'), '{"name":"app","version":"1.0.0","private":true}');
    execFileSync('npm', ['install', '--offline', '--no-audit', '--no-fund', '--ignore-scripts', pkgDir], { cwd: app, stdio: 'pipe' });
    const out = execFileSync(process.execPath, ['-e', `
      const a = require('fluebox'); const b = require('fluebox/flue');
      import('fluebox').then(async (m) => {
        const f = await import('fluebox/flue');
        console.log([typeof a.Fluebox.connect, typeof b.fluebox, m.Fluebox === a.Fluebox, f.fluebox === b.fluebox].join(' '));
      });`], { cwd: app, encoding: 'utf8' });
    assert.equal(out.trim(), 'function function true true');
  } finally {
    fs.rmSync(app, { recursive: true, force: true });
  }
});
