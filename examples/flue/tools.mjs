// examples/flue/tools.mjs — Flue's own standard tools (write, read, edit,
// bash, grep, glob from @flue/runtime) running in a fluebox sandbox: what a
// Flue agent's model calls, here called in a fixed order instead of by a
// model, so it runs without an API key.
//
//   npm install fluebox @flue/runtime     (or ./fluebox-VERSION.tgz)
//   node tools.mjs
//
// In an agent, the same sandbox is one line: useSandbox(fluebox()) (see
// docs/clients.md). The fluebox binary is the package's own, FLUEBOX_BIN's,
// or the one on PATH; each run gets a private server that stops with it.
import {
  createBashTool, createEditTool, createGlobTool, createGrepTool, createReadTool, createWriteTool,
} from '@flue/runtime';
import { fluebox, closeAll } from 'fluebox/flue';

const text = (result) => result.content.filter((c) => c.type === 'text').map((c) => c.text).join('\n');
let failed = 0;
function check(what, ok, got) {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}${ok ? '' : `: got ${JSON.stringify(got)}`}`);
  if (!ok) failed++;
}

const sandbox = await fluebox({ profile: 'strict' }).createSandbox({ id: 'flue-example' });
try {
  const write = createWriteTool(sandbox), read = createReadTool(sandbox), edit = createEditTool(sandbox);
  const bash = createBashTool(sandbox), grep = createGrepTool(sandbox), glob = createGlobTool(sandbox);

  await write.execute('1', { path: 'src/hello.js', content: 'console.log("hello from " + process.platform);\n' });
  check('write, then read it back', /hello from/.test(text(await read.execute('2', { path: 'src/hello.js' }))));

  await edit.execute('3', { path: 'src/hello.js', oldText: 'hello from', newText: 'greetings from' });
  const ran = text(await bash.execute('4', { command: 'node src/hello.js' }));
  check('edit, then bash runs it in the sandbox', /greetings from linux/.test(ran), ran);

  const found = text(await grep.execute('5', { pattern: 'greetings', path: '.' }));
  check('grep finds it', /hello\.js/.test(found), found);
  const files = text(await glob.execute('6', { pattern: '*.js' }));
  check('glob lists it', /hello\.js/.test(files), files);

  // The boundary: the host's files are not there, the network is loopback only.
  const secret = text(await bash.execute('7', { command: 'cat /etc/shadow; echo "exit $?"' }));
  check('the host\'s /etc/shadow is not in the sandbox', /exit [12]/.test(secret), secret);
  const net = text(await bash.execute('8', { command: 'node -e "require(\'dns\').lookup(\'example.com\', (e) => console.log(e ? \'no network\' : \'network\'))"' }));
  check('no network', /no network/.test(net), net);
} finally {
  await closeAll();
}
console.log(failed ? `${failed} step(s) failed` : 'every step behaved as expected');
process.exit(failed ? 1 : 0);
