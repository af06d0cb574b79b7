// The router under benchmark, in a process of its own (forked by router-bench.ts):
// `node dist/test/bench/router-host.js`.
//
// Why a separate process: in production the router lives in the daemon and the clients are
// other programs. Hosting it in the benchmark's own process would put 32 clients' callbacks
// on the router's event loop, and charge the router for the client's work.
//
// What it hosts, all in front of one engine — the real daemon's own server for demo-tiny:
// - the real daemon (`startDaemon` with the demo models, demo-tiny pinned): its router, its
//   gateway over the controller, supervisor and activity, everything a user's request meets;
// - the router alone, over a fixed gateway (the model always ready at that engine): the
//   router's own logic, without the daemon's bookkeeping — the breakdown;
// - the same router recording every request as the daemon does (its request log and /metrics
//   histograms): against the router alone, what the recording costs, in the same run;
// - a bare proxy: the least any Node HTTP hop can do (accept, forward over a keep-alive pool,
//   pipe the answer back), with no parsing, guards or bookkeeping.
// The daemon's figures minus the bare proxy's are what llmtray's own logic costs; the bare
// proxy's minus direct are what putting any Node process in the path costs on this machine.
// It answers `{ cpu: true }` over IPC with this process's CPU time, so the benchmark can
// divide it by the requests served: a cost per request that machine load does not inflate.
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startDaemon } from '../../core/daemon.js';
import { apiKeyDir } from '../../core/engine/supervisor/api-key-file.js';
import { createRouter } from '../../core/router/router.js';
import { RequestLog } from '../../core/demand/request-log.js';
import { RequestHistograms } from '../../core/admin/request-histograms.js';
import { fixedGateway } from './fixed-gateway.js';
import { HOSTED_MODEL_ID, type RouterHostCpu, type RouterHostReady } from './router-host-protocol.js';

const send = process.send?.bind(process);
if (send === undefined) {
  console.error('router-host.js is forked by the router benchmark, with an IPC channel');
  process.exit(2);
}

const dataDir = await mkdtemp(join(tmpdir(), 'llmtray-router-bench-'));
// Silent: the benchmark prints tables, and a log line per request would be a cost of its own.
const quiet = { info() {}, warn() {}, error() {} };
const daemon = await startDaemon({ demo: true, dataDir, port: 0, threads: 1, log: () => quiet });

const pinned = await daemon.admin.runCommand({ id: HOSTED_MODEL_ID, command: 'pin' });
if (!pinned.ok) throw new Error(`could not pin ${HOSTED_MODEL_ID}: ${pinned.message}`);
const engineUrl = await new Promise<URL>((resolve, reject) => {
  const look = (): boolean => {
    const model = daemon.admin.snapshot().models.find((m) => m.id === HOSTED_MODEL_ID);
    if (model?.status.state === 'quarantined') reject(new Error(`${HOSTED_MODEL_ID} was quarantined: ${model.status.recovery.lastError ?? ''}`));
    if (model?.status.state !== 'ready' || model.upstream === null) return false;
    resolve(new URL(model.upstream.baseUrl));
    return true;
  };
  if (look()) return;
  const unsubscribe = daemon.admin.subscribe(() => {
    if (look()) unsubscribe();
  });
});
const engineKey = await keyOfEngine(engineUrl);

/**
 * The engine's key, read where the supervisor wrote it for the engine (a 0600 file in the data
 * dir, which this process owns): the snapshot never carries it. The one that the engine takes.
 */
async function keyOfEngine(url: URL): Promise<string> {
  const dir = apiKeyDir(dataDir);
  for (const name of await readdir(dir)) {
    const key = (await readFile(join(dir, name), 'utf8')).trim();
    const answer = await fetch(new URL('/v1/models', url), { headers: { authorization: `Bearer ${key}` } });
    await answer.body?.cancel();
    if (answer.ok) return key;
  }
  throw new Error(`no key in ${dir} opens the engine at ${url.origin}`);
}

const router = createRouter({ gateway: fixedGateway({ modelId: HOSTED_MODEL_ID, baseUrl: engineUrl.origin, apiKey: engineKey }) });
const listening = await router.listen({ port: 0, host: '127.0.0.1' });
// Recorded as core/daemon/serve-endpoint.ts records: into a ring of the default size, counted into the histograms; no bodies (the default).
const requestLog = new RequestLog();
const histograms = new RequestHistograms((id) => id === HOSTED_MODEL_ID);
const recordingRouter = createRouter({
  gateway: fixedGateway({ modelId: HOSTED_MODEL_ID, baseUrl: engineUrl.origin, apiKey: engineKey }),
  requests: {
    record: (record) => {
      requestLog.add(record);
      histograms.observe(record);
    },
    keepBodiesBytes: () => 0,
  },
});
const recordingListening = await recordingRouter.listen({ port: 0, host: '127.0.0.1' });

const proxyAgent = new http.Agent({ keepAlive: true });
const proxy = http.createServer((req, res) => {
  const upstream = http.request(
    {
      agent: proxyAgent,
      hostname: engineUrl.hostname,
      port: engineUrl.port,
      method: req.method,
      path: req.url,
      headers: { 'content-type': 'application/json', 'content-length': req.headers['content-length'] ?? 0, authorization: `Bearer ${engineKey}` },
    },
    (answer) => {
      const headers: http.OutgoingHttpHeaders = { 'content-type': answer.headers['content-type'] ?? 'application/json' };
      if (answer.headers['content-length'] !== undefined) headers['content-length'] = answer.headers['content-length'];
      res.writeHead(answer.statusCode ?? 502, headers);
      answer.pipe(res);
    },
  );
  upstream.on('error', () => res.destroy());
  req.pipe(upstream);
});
await new Promise<void>((resolve) => proxy.listen(0, '127.0.0.1', resolve));

process.on('message', (message) => {
  if ((message as { cpu?: boolean }).cpu !== true) return;
  const usage = process.cpuUsage();
  send({ cpuMicros: usage.user + usage.system } satisfies RouterHostCpu);
});
send({
  engine: { port: Number(engineUrl.port), apiKey: engineKey },
  daemonPort: daemon.port,
  routerPort: listening.port,
  recordingRouterPort: recordingListening.port,
  proxyPort: (proxy.address() as AddressInfo).port,
} satisfies RouterHostReady);
// The benchmark ends this process by disconnecting (or dying): nothing else should keep it alive.
process.once('disconnect', () => {
  proxy.close();
  proxy.closeAllConnections();
  proxyAgent.destroy();
  void Promise.all([listening.close(), recordingListening.close(), daemon.stop()])
    .then(() => rm(dataDir, { recursive: true, force: true }))
    .then(() => process.exit(0));
});
