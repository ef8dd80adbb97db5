// The scripted agent loop in examples/node runs against a real (private)
// server and every step behaves as expected.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { binary, tmpdir } from './helpers.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const example = path.resolve(here, '../../../examples/node/agent-loop.mjs');

test('examples/node/agent-loop.mjs', { timeout: 120000 }, async () => {
  const env = { ...process.env, FLUEBOX_BIN: binary(), FLUEBOX_SOCKET: path.join(tmpdir(), 'none.sock') };
  const { code, stdout, stderr } = await new Promise((resolve) => {
    execFile(process.execPath, [example], { env, timeout: 110000 }, (err, stdout, stderr) => {
      resolve({ code: err ? err.code : 0, stdout, stderr });
    });
  });
  assert.equal(code, 0, `${stdout}\n${stderr}`);
  assert.match(stdout, /every step behaved as expected/);
  assert.match(stdout, /example\.com\/ DENIED/);
  assert.match(stdout, /read via symlink: ENOENT/);
});
