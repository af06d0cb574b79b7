// What the router adds to a request for a hot model, against the same engine asked directly.
//
// One engine (demo-tiny, one thread), and in a process of its own in front of it the router
// with a fixed gateway (the model always ready at that engine) and a bare Node proxy (see
// router-host.ts), so the figures are the router's own cost: parsing and validating the body,
// the guards, the upstream request over a keep-alive pool, and relaying the answer. Each
// scenario runs the paths in batches, rotating their order every round, so a stall on this
// shared machine lands on every path alike rather than on whichever ran last. Targets: at most
// 0.5 ms added to the median one-token request, and at least 90 % of direct throughput.
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { benchModels } from './bench-models.js';
import { benchSpec, pollUntilHealthy, startDirectEngine } from './engine-process.js';
import { chatBody, timedPost, timedStream, type Target } from './http-client.js';
import type { RouterHostCpu, RouterHostReady } from './router-host.js';
import { fixed, percentile, printTable, signed, verdict } from './stats.js';

const MODEL_ID = 'demo-tiny';
const CHAT_PATH = '/v1/chat/completions';
const TARGET_ADDED_P50_MS = 0.5;
const TARGET_THROUGHPUT_RATIO = 0.9;

interface Scenario {
  clients: number;
  /** Requests per batch; each round runs one batch per path. */
  batch: number;
  rounds: number;
  warmup: number;
}

const SCENARIOS: Scenario[] = [
  { clients: 1, batch: 80, rounds: 9, warmup: 60 },
  { clients: 32, batch: 256, rounds: 6, warmup: 128 },
];
const STREAM: Scenario = { clients: 1, batch: 40, rounds: 6, warmup: 20 };

type PathName = 'direct' | 'bare proxy' | 'router';

interface Path {
  name: PathName;
  target: Target;
  /** Whether the path runs through the host process, whose CPU time is then charged to it. */
  hosted: boolean;
}

interface Samples {
  latencies: number[];
  requests: number;
  wallMs: number;
  /** The host's CPU time over this path's batches, microseconds; 0 for the direct path. */
  hostCpuMicros: number;
}

/** Runs `count` requests over `clients` concurrent loops; resolves with each latency and the batch's wall time. */
async function runBatch(count: number, clients: number, send: () => Promise<number>): Promise<{ latencies: number[]; wallMs: number }> {
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  const loop = async (): Promise<void> => {
    while (next < count) {
      next++;
      latencies.push(await send());
    }
  };
  await Promise.all(Array.from({ length: clients }, loop));
  return { latencies, wallMs: performance.now() - started };
}

/**
 * Interleaved rounds over every path: round r runs the paths rotated by r, so each path takes
 * each position equally often. Per path: every latency, the summed wall time and host CPU.
 */
async function interleaved(
  paths: readonly Path[],
  scenario: Scenario,
  hostCpu: () => Promise<number>,
  sendOn: (path: Path, agent: http.Agent, counted: boolean) => Promise<number>,
): Promise<Map<PathName, Samples>> {
  const agents = new Map(paths.map((path) => [path.name, new http.Agent({ keepAlive: true, maxSockets: scenario.clients })]));
  const agentOf = (path: Path): http.Agent => agents.get(path.name) as http.Agent;
  const totals = new Map<PathName, Samples>(paths.map((path) => [path.name, { latencies: [], requests: 0, wallMs: 0, hostCpuMicros: 0 }]));
  try {
    for (const path of paths) await runBatch(scenario.warmup, scenario.clients, () => sendOn(path, agentOf(path), false));
    for (let round = 0; round < scenario.rounds; round++) {
      const shift = round % paths.length;
      const order = [...paths.slice(shift), ...paths.slice(0, shift)];
      for (const path of order) {
        const cpuBefore = path.hosted ? await hostCpu() : 0;
        const batch = await runBatch(scenario.batch, scenario.clients, () => sendOn(path, agentOf(path), true));
        const cpuAfter = path.hosted ? await hostCpu() : 0;
        const total = totals.get(path.name) as Samples;
        total.latencies.push(...batch.latencies);
        total.requests += scenario.batch;
        total.wallMs += batch.wallMs;
        total.hostCpuMicros += cpuAfter - cpuBefore;
      }
    }
  } finally {
    for (const agent of agents.values()) agent.destroy();
  }
  return totals;
}

interface RouterHost {
  child: ChildProcess;
  ready: RouterHostReady;
  /** The host's CPU time so far, microseconds. */
  cpu(): Promise<number>;
  stop(): Promise<void>;
}

async function startRouterHost(modelId: string, baseUrl: string, apiKey: string): Promise<RouterHost> {
  const entry = join(dirname(fileURLToPath(import.meta.url)), 'router-host.js');
  const child = fork(entry, [modelId, baseUrl, apiKey], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  const ready = await new Promise<RouterHostReady>((resolve, reject) => {
    child.once('message', (message) => resolve(message as RouterHostReady));
    child.once('exit', (code) => reject(new Error(`the router host exited with code ${code} before listening`)));
    child.once('error', reject);
  });
  return {
    child,
    ready,
    cpu: () =>
      new Promise((resolve) => {
        child.once('message', (message) => resolve((message as RouterHostCpu).cpuMicros));
        child.send({ cpu: true });
      }),
    stop: async () => {
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.disconnect();
      await exited;
    },
  };
}

const clientsLabel = (clients: number): string => `${clients} client${clients === 1 ? '' : 's'}`;

export async function runRouterBench(): Promise<void> {
  const models = await benchModels();
  const engine = await startDirectEngine(benchSpec(MODEL_ID, models.tiny.path, 2048));
  let host: RouterHost | null = null;
  try {
    await pollUntilHealthy(engine, 5);
    host = await startRouterHost(MODEL_ID, `http://127.0.0.1:${engine.port}`, engine.apiKey);
    const hostCpu = host.cpu;
    const paths: Path[] = [
      { name: 'direct', target: { port: engine.port, apiKey: engine.apiKey }, hosted: false },
      { name: 'bare proxy', target: { port: host.ready.proxyPort }, hosted: true },
      { name: 'router', target: { port: host.ready.routerPort }, hosted: true },
    ];
    const plain = chatBody(MODEL_ID, false);
    const streamed = chatBody(MODEL_ID, true);

    console.log(`router overhead: one-token chat completions on ${MODEL_ID} (1 engine thread), direct vs a bare Node proxy vs the router, interleaved`);
    const rows: string[][] = [];
    const verdicts: string[] = [];
    for (const scenario of SCENARIOS) {
      const totals = await interleaved(paths, scenario, hostCpu, (path, agent) => timedPost(agent, path.target, CHAT_PATH, plain));
      const direct = totals.get('direct') as Samples;
      const directP50 = percentile(direct.latencies, 50);
      const directRate = (direct.requests * 1000) / direct.wallMs;
      for (const path of paths) {
        const samples = totals.get(path.name) as Samples;
        const p50 = percentile(samples.latencies, 50);
        const rate = (samples.requests * 1000) / samples.wallMs;
        rows.push([
          `${clientsLabel(scenario.clients)}, ${path.name}`,
          String(samples.requests),
          fixed(p50, 2),
          fixed(percentile(samples.latencies, 99), 2),
          path.hosted ? signed(p50 - directP50, 2) : '',
          fixed(rate, 0),
          path.hosted ? `${fixed((rate / directRate) * 100, 1)} %` : '',
          path.hosted ? fixed(samples.hostCpuMicros / samples.requests, 0) : '',
        ]);
        if (path.name !== 'router') continue;
        if (scenario.clients === 1) {
          verdicts.push(`added p50 at 1 client: ${signed(p50 - directP50, 2)} ms (target ≤ ${TARGET_ADDED_P50_MS} ms): ${verdict(p50 - directP50 <= TARGET_ADDED_P50_MS)}`);
        }
        const ratio = rate / directRate;
        verdicts.push(`throughput at ${clientsLabel(scenario.clients)}: ${fixed(ratio * 100, 1)} % of direct (target ≥ ${TARGET_THROUGHPUT_RATIO * 100} %): ${verdict(ratio >= TARGET_THROUGHPUT_RATIO)}`);
      }
    }
    printTable(['clients, path', 'requests', 'p50 ms', 'p99 ms', 'added p50', 'req/s', 'of direct', 'host CPU µs/req'], rows);

    const streamTimes = new Map<PathName, { firstByte: number[]; firstToken: number[] }>(paths.map((path) => [path.name, { firstByte: [], firstToken: [] }]));
    await interleaved(paths, STREAM, hostCpu, async (path, agent, counted) => {
      const times = await timedStream(agent, path.target, CHAT_PATH, streamed);
      const bucket = streamTimes.get(path.name);
      if (counted) {
        bucket?.firstByte.push(times.firstByteAt - times.startedAt);
        bucket?.firstToken.push(times.firstTokenAt - times.startedAt);
      }
      return times.endedAt - times.startedAt;
    });
    const directStream = streamTimes.get('direct') as { firstByte: number[]; firstToken: number[] };
    console.log();
    console.log(`streaming, 1 client, ${STREAM.batch * STREAM.rounds} requests per path: time to the first body byte (the role event) and to the first token event`);
    const streamRows = paths.map((path) => {
      const times = streamTimes.get(path.name) as { firstByte: number[]; firstToken: number[] };
      const added = (values: number[], base: number[]): string => (path.hosted ? signed(percentile(values, 50) - percentile(base, 50), 2) : '');
      return [
        path.name,
        fixed(percentile(times.firstByte, 50), 2),
        fixed(percentile(times.firstByte, 99), 2),
        added(times.firstByte, directStream.firstByte),
        fixed(percentile(times.firstToken, 50), 2),
        fixed(percentile(times.firstToken, 99), 2),
        added(times.firstToken, directStream.firstToken),
      ];
    });
    printTable(['path', 'first byte p50 ms', 'p99 ms', 'added p50', 'first token p50 ms', 'p99 ms', 'added p50'], streamRows);
    console.log();
    for (const line of verdicts) console.log(line);
  } finally {
    await host?.stop();
    await engine.stop();
  }
}
