// The router under benchmark, in a process of its own (forked by router-bench.ts):
// `node dist/test/bench/router-host.js MODEL_ID ENGINE_BASE_URL ENGINE_API_KEY`.
//
// Why a separate process: in production the router lives in the daemon and the clients are
// other programs. Hosting it in the benchmark's own process would put 32 clients' callbacks
// on the router's event loop, and charge the router for the client's work.
//
// Beside the router it hosts a bare proxy: the least any Node HTTP hop can do (accept, forward
// over a keep-alive pool, pipe the answer back), with no parsing, guards or bookkeeping. The
// router's figures minus the bare proxy's are what the router's own logic costs; the bare
// proxy's minus direct are what putting any Node process in the path costs on this machine.
// It answers `{ cpu: true }` over IPC with this process's CPU time, so the benchmark can
// divide it by the requests served: a cost per request that machine load does not inflate.
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRouter } from '../../core/router/router.js';
import { fixedGateway } from './fixed-gateway.js';

export interface RouterHostReady {
  routerPort: number;
  proxyPort: number;
}

/** CPU time of the host so far, microseconds (user + system). */
export interface RouterHostCpu {
  cpuMicros: number;
}

const [modelId, baseUrl, apiKey] = process.argv.slice(2);
const send = process.send?.bind(process);
if (modelId === undefined || baseUrl === undefined || apiKey === undefined || send === undefined) {
  console.error('usage (forked with IPC): router-host.js MODEL_ID ENGINE_BASE_URL ENGINE_API_KEY');
  process.exit(2);
}

const router = createRouter({ gateway: fixedGateway({ modelId, baseUrl, apiKey }) });
const listening = await router.listen({ port: 0, host: '127.0.0.1' });

const engine = new URL(baseUrl);
const proxyAgent = new http.Agent({ keepAlive: true });
const proxy = http.createServer((req, res) => {
  const upstream = http.request(
    {
      agent: proxyAgent,
      hostname: engine.hostname,
      port: engine.port,
      method: req.method,
      path: req.url,
      headers: { 'content-type': 'application/json', 'content-length': req.headers['content-length'] ?? 0, authorization: `Bearer ${apiKey}` },
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
send({ routerPort: listening.port, proxyPort: (proxy.address() as AddressInfo).port } satisfies RouterHostReady);
// The benchmark ends this process by disconnecting (or dying): nothing else should keep it alive.
process.once('disconnect', () => {
  proxy.close();
  proxy.closeAllConnections();
  proxyAgent.destroy();
  void listening.close().then(() => process.exit(0));
});
