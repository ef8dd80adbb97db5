// tests/cri/cri.mjs — drives containerd's CRI plugin the way the kubelet
// does (RunPodSandbox with a runtime handler, CreateContainer,
// StartContainer, ExecSync, ContainerStats, UpdateContainerResources,
// StopContainer, RemoveContainer, StopPodSandbox, RemovePodSandbox), over
// the CRI API definition read at test time (CRI_PROTO: the shared
// api.proto, never a copy in the repository), with @grpc/grpc-js and
// @grpc/proto-loader from GRPC_DIR (scripts/deps.sh installs them).
//
// Every scenario runs with the handler "runc" and with "fluebox", and the
// outcomes are compared; then a pod annotated run.fluebox.allow-net (fluebox
// only): its containers reach the allowed name (mapped to a server on the
// host's loopback) and nothing else. Prints "ok - ..." / "not ok - ..." lines.
//
// Environment: CRI_SOCK, CRI_PROTO, GRPC_DIR, CRI_IMAGE, CRI_CGROUP (the
// cgroup parent), CRI_LOGS (a directory for the pods' logs).
import { createRequire } from 'node:module';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';

const env = (k) => {
  if (!process.env[k]) throw new Error(`${k} is not set`);
  return process.env[k];
};
const require = createRequire(path.join(env('GRPC_DIR'), 'package.json'));
const grpc = require('@grpc/grpc-js');
const loader = require('@grpc/proto-loader');

const def = loader.loadSync(env('CRI_PROTO'), { keepCase: true, longs: String, enums: String, defaults: true, oneofs: true });
const api = grpc.loadPackageDefinition(def).runtime.v1;
const addr = `unix://${env('CRI_SOCK')}`;
const rt = new api.RuntimeService(addr, grpc.credentials.createInsecure());
const IMG = env('CRI_IMAGE');
const CG = env('CRI_CGROUP');
const LOGS = env('CRI_LOGS');

let failed = 0;
const ok = (name) => console.log(`ok - engine-cri: ${name}`);
const notok = (name, why) => { failed++; console.log(`not ok - engine-cri: ${name}: ${why}`); };
const check = (name, cond, why) => (cond ? ok(name) : notok(name, why));

function call(method, req, secs = 60) {
  return new Promise((resolve, reject) => {
    rt[method](req, { deadline: Date.now() + secs * 1000 }, (err, res) => (err ? reject(err) : resolve(res)));
  });
}
// The call's outcome as a short text: "ok" or "error: <message>".
async function outcome(method, req, secs) {
  try { await call(method, req, secs); return 'ok'; } catch (e) { return `error: ${e.details || e.message}`; }
}
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function waitFor(what, secs, fn) {
  const end = Date.now() + secs * 1000;
  for (;;) {
    const v = await fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

function podConfig(handler, name, annotations = {}) {
  const dir = path.join(LOGS, `${handler}-${name}`);
  fs.mkdirSync(dir, { recursive: true });
  return {
    metadata: { name: `${name}-${handler}`, uid: `uid-${name}-${handler}`, namespace: 'fbtest', attempt: 0 },
    hostname: `pod-${name.replace(/[0-9]+$/, '')}`,
    log_directory: dir,
    annotations,
    linux: {
      cgroup_parent: `${CG}/${handler}-${name}`,
      security_context: { namespace_options: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } },
    },
  };
}

async function runPod(handler, name, annotations) {
  const config = podConfig(handler, name, annotations);
  const r = await call('RunPodSandbox', { config, runtime_handler: handler });
  return { id: r.pod_sandbox_id, config };
}

async function create(pod, name, command) {
  const r = await call('CreateContainer', {
    pod_sandbox_id: pod.id,
    sandbox_config: pod.config,
    config: {
      metadata: { name, attempt: 0 },
      image: { image: IMG },
      command,
      log_path: `${name}.log`,
      linux: { resources: {}, security_context: {} },
    },
  });
  return r.container_id;
}

const status = async (id) => (await call('ContainerStatus', { container_id: id })).status;
const logOf = (pod, name) => {
  try { return fs.readFileSync(path.join(pod.config.log_directory, `${name}.log`), 'utf8'); } catch { return ''; }
};
// The CRI log format: "TIME STREAM TAG TEXT" per line; the texts.
const logLines = (text) => text.split('\n').filter(Boolean).map((l) => l.split(' ').slice(3).join(' '));
const exited = (id, secs = 30) => waitFor(`${id} to exit`, secs, async () => {
  const s = await status(id);
  return s.state === 'CONTAINER_EXITED' ? s : null;
});
async function exec(id, cmd, secs = 20) {
  try {
    const r = await call('ExecSync', { container_id: id, cmd, timeout: secs }, secs + 10);
    return { code: r.exit_code, out: Buffer.from(r.stdout).toString(), err: Buffer.from(r.stderr).toString() };
  } catch (e) {
    return { code: -1, out: '', err: e.details || e.message };
  }
}

async function removePod(pod) {
  await call('StopPodSandbox', { pod_sandbox_id: pod.id });
  await call('RemovePodSandbox', { pod_sandbox_id: pod.id });
}

// One pod's life with each handler; returns scenario -> outcome.
const BIG = 'x'.repeat(200 * 1024); // Kubernetes allows 256 KiB of annotations
async function lifecycle(handler, round) {
  const R = {};
  const pod = await runPod(handler, `life${round}`, { 'fbtest.big': BIG });
  const c1 = await create(pod, 'main', ['sh', '-c',
    'echo out-$((6*7)); echo err-1 >&2; trap "echo got-term; exit 0" TERM; echo ready; while :; do sleep 0.1; done']);
  await call('StartContainer', { container_id: c1 });
  await waitFor('ready in the log', 30, async () => logOf(pod, 'main').includes('ready'));
  R.logs = logLines(logOf(pod, 'main')).sort().join('|');
  const e = await exec(c1, ['sh', '-c', 'echo exec-ok; hostname; exit 7']);
  R.exec = `${e.code} ${e.out.trim().replace(/\n/g, ',')}`;
  try {
    const st = await call('ContainerStats', { container_id: c1 });
    R.stats = st.stats && st.stats.memory && Number(st.stats.memory.working_set_bytes.value) > 0 ? 'memory' : 'no memory';
  } catch (err) { R.stats = `error: ${err.details}`; }
  R.update = await outcome('UpdateContainerResources', {
    container_id: c1, linux: { memory_limit_in_bytes: 64 * 1024 * 1024 },
  });
  const lim = await exec(c1, ['sh', '-c', 'cat /sys/fs/cgroup/memory/memory.limit_in_bytes 2>/dev/null || cat /sys/fs/cgroup/memory.max']);
  R.limit = lim.out.trim();
  // A second container of the pod shares its uts (hostname) and ipc.
  const c2 = await create(pod, 'second', ['sh', '-c', 'hostname; exit 3']);
  await call('StartContainer', { container_id: c2 });
  const s2 = await exited(c2);
  R.second = `${s2.exit_code} ${logLines(logOf(pod, 'second')).join('|')}`;
  // Stop: SIGTERM to pid 1, which traps it; the log ends cleanly.
  R.stop = await outcome('StopContainer', { container_id: c1, timeout: 10 });
  const s1 = await exited(c1);
  R.stopped = `${s1.exit_code} ${logLines(logOf(pod, 'main')).slice(-1)[0]} terminated-lines:${(logOf(pod, 'main').match(/Terminated/g) || []).length}`;
  // Stopping an exited container again (the runtime's kill of a stopped one).
  R.restop = await outcome('StopContainer', { container_id: c1, timeout: 2 });
  // A missing command: StartContainer fails with the runtime's message.
  const c3 = await create(pod, 'nocmd', ['/no/such/cmd']);
  const start3 = await outcome('StartContainer', { container_id: c3 });
  R.nocmd = start3 === 'ok' ? 'started' : /no such file or directory/.test(start3) ? 'no such file' : start3;
  for (const c of [c1, c2, c3]) await call('RemoveContainer', { container_id: c });
  await removePod(pod);
  const left = (await call('ListContainers', { filter: { pod_sandbox_id: pod.id } })).containers.length;
  const pods = (await call('ListPodSandbox', {})).items.filter((p) => p.id === pod.id).length;
  R.left = `${left} containers, ${pods} pods`;
  return R;
}

async function allowNetPod() {
  let hits = 0;
  const srv = http.createServer((req, res) => { hits++; res.end('hello-from-host\n'); });
  await new Promise((r) => srv.listen(0, '127.0.0.1', r));
  const port = srv.address().port;
  try {
    const netlog = path.join(LOGS, 'net.jsonl');
    const pod = await runPod('fluebox', 'net', {
      'run.fluebox.profile': 'standard',
      'run.fluebox.allow-net': `allowed.test:${port}`,
      'run.fluebox.egress-resolve': 'allowed.test=127.0.0.1',
      'run.fluebox.net-log': netlog,
    });
    ok('a pod annotated run.fluebox.allow-net runs (its sandbox container takes the CNI namespace)');
    const loop = ['sh', '-c', 'echo ready; while :; do sleep 0.1; done'];
    const c1 = await create(pod, 'agent', loop);
    await call('StartContainer', { container_id: c1 });
    const c2 = await create(pod, 'helper', loop);
    await call('StartContainer', { container_id: c2 });
    // busybox-static's wget crashes without NSS (static glibc): nslookup
    // (busybox's own resolver, through /etc/resolv.conf) gives the address,
    // and nc sends the request with the name in Host, as a client would.
    const get = (id, url) => {
      const u = new URL(url);
      return exec(id, ['sh', '-c', `h=${u.hostname}; case $h in *[a-z]) ip=$(nslookup $h 2>/dev/null | awk '/^Address/ && !/:53$/ {a=$NF} END {print a}'); [ -n "$ip" ] || exit 9 ;; *) ip=$h ;; esac; ` +
        `printf 'GET ${u.pathname} HTTP/1.0\\r\\nHost: %s\\r\\n\\r\\n' "$h:${u.port}" | nc -w 5 $ip ${u.port} | grep . || exit 8`]);
    };
    let r = await get(c1, `http://allowed.test:${port}/`);
    check('pod allow-net: a container reaches the allowed name', r.code === 0 && r.out.includes('hello-from-host'), JSON.stringify(r));
    r = await get(c2, `http://allowed.test:${port}/`);
    check('pod allow-net: a second container of the pod reaches it through the same relay', r.code === 0 && r.out.includes('hello-from-host'), JSON.stringify(r));
    const before = hits;
    r = await get(c1, `http://denied.test:${port}/`);
    check('pod allow-net: a name not on the list does not resolve', r.code !== 0, JSON.stringify(r));
    r = await get(c1, `http://10.254.0.1:${port}/`);
    check('pod allow-net: the CNI network (gateway by address) is unreachable (no route)', r.code !== 0 && /unreachable/i.test(r.err), JSON.stringify(r));
    r = await get(c1, `http://127.0.0.1:${port}/`);
    check('pod allow-net: the host\'s loopback by address is not reached', r.code !== 0, JSON.stringify(r));
    r = await exec(c1, ['sh', '-c', 'ip route; ip -6 route; ip link | grep -c "state UP"; cat /etc/resolv.conf']);
    check('pod allow-net: no route, no interface up but loopback, the relay\'s resolver', r.code === 0 && !/default|10\.254/.test(r.out) && /127\.0\.0\.53/.test(r.out), JSON.stringify(r));
    r = await exec(c1, ['ip', 'link', 'set', 'eth0', 'up']);
    const r2 = await exec(c1, ['ip', 'route', 'add', 'default', 'via', '10.254.0.1']);
    check('pod allow-net: a container cannot bring the pod\'s interface up or add a route', r.code !== 0 && r2.code !== 0, JSON.stringify([r, r2]));
    check('pod allow-net: the host\'s server saw only the allowed requests', hits === before && hits === 2, `hits ${hits}`);
    for (const c of [c1, c2]) {
      await call('StopContainer', { container_id: c, timeout: 2 });
      await call('RemoveContainer', { container_id: c });
    }
    await removePod(pod);
    ok('pod allow-net: the pod stops and is removed');
    // The sandbox container's relay kept the pod's net log.
    let log = [];
    try { log = fs.readFileSync(netlog, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)); } catch { /* none */ }
    const allowed = log.filter((e) => e.name === 'allowed.test' && e.event === 'connect' && e.verdict === 'allow').length;
    const denied = log.filter((e) => e.name === 'denied.test' && e.verdict === 'deny').length;
    const starts = log.filter((e) => e.event === 'start').length;
    check('pod allow-net: the pod\'s net log (run.fluebox.net-log, the sandbox container\'s relay) has the allowed name and the denied one, one start', allowed >= 1 && denied >= 1 && starts === 1, JSON.stringify(log.filter((e) => e.event !== 'dns' || e.type === 'A')).slice(0, 1500));
  } catch (e) {
    notok('pod allow-net', e.details || e.message);
  } finally {
    srv.close();
  }
}

async function main() {
  const rounds = {};
  for (const h of ['runc', 'fluebox']) {
    for (const round of [1, 2]) {
      try {
        rounds[`${h}${round}`] = await lifecycle(h, round);
      } catch (e) {
        notok(`${h}: pod lifecycle, round ${round}`, e.details || e.message);
      }
    }
  }
  const a = rounds.runc1;
  if (a) {
    for (const k of Object.keys(a)) {
      for (const round of [1, 2]) {
        const b = rounds[`fluebox${round}`];
        if (!b) continue;
        check(`${k} (round ${round}): fluebox as runc: ${a[k]}`, a[k] === b[k], `runc: ${a[k]}; fluebox: ${b[k]}`);
      }
    }
    check('runc: exit codes and logs as expected', a.exec.startsWith('7 exec-ok') && a.second.startsWith('3 ') && a.stopped.startsWith('0 got-term') && a.nocmd === 'no such file', JSON.stringify(a));
  }
  await allowNetPod();
  rt.close();
  process.exit(failed ? 1 : 0);
}
main().catch((e) => { console.log(`not ok - engine-cri: client: ${e.stack}`); process.exit(1); });
