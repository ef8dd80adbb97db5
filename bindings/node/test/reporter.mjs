// A node:test reporter that prints one "ok - NAME" / "not ok - NAME: WHY" line
// per test (suites themselves are not counted), the format tests/run.sh counts.
// Usage: node --test --test-reporter=./test/reporter.mjs test/
import { basename } from 'node:path';

function oneLine(s) {
  return String(s).replace(/\s+/g, ' ').trim().slice(0, 400);
}

export default async function* reporter(source) {
  let pass = 0;
  let fail = 0;
  for await (const ev of source) {
    if (ev.type !== 'test:pass' && ev.type !== 'test:fail') {
      if (ev.type === 'test:diagnostic' && process.env.VERBOSE) yield `# ${ev.data.message}\n`;
      continue;
    }
    const d = ev.data;
    if (d.details && d.details.type === 'suite' && ev.type === 'test:pass') continue;
    const where = d.file ? basename(d.file).replace(/\.test\.[cm]?js$/, '') : 'node';
    const name = `${process.env.FLUEBOX_TEST_TAG ? process.env.FLUEBOX_TEST_TAG + ' ' : ''}${where}: ${d.name}`;
    if (ev.type === 'test:pass') {
      pass++;
      yield `ok - ${name}${d.skip ? ` # skip ${d.skip === true ? '' : d.skip}` : ''}${d.todo ? ' # todo' : ''}\n`;
    } else {
      // A failing suite is reported once for its hook or load error only.
      const err = d.details && d.details.error;
      const cause = err && (err.cause || err);
      if (d.details && d.details.type === 'suite' && err && err.failureType === 'subtestsFailed') continue;
      fail++;
      yield `not ok - ${name}: ${oneLine(cause && cause.message ? cause.message : cause)}\n`;
      if (cause && cause.stack) yield `# ${cause.stack.split('\n').slice(0, 6).join('\n# ')}\n`;
    }
  }
  yield `# node client: ${pass} passed, ${fail} failed\n`;
  yield '# end of suite\n'; // ran to its end (tests/tap.sh)
}
