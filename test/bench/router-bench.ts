// What llmtray adds to a request for a hot model, against the same engine asked directly.
//
// One engine — the real daemon's own server for demo-tiny (one thread) — and in a process of
// its own in front of it (see router-host.ts) the real daemon, the router alone over a fixed
// gateway, and a bare Node proxy. The daemon is what a user's request meets; the bare proxy is
// the least any Node hop costs, so the daemon over the bare proxy is llmtray's own cost; the
// router alone is the breakdown (parsing, guards, relaying, without the daemon's bookkeeping).
// Each scenario runs the paths in batches, rotating their order every round, so a stall on
// this shared machine lands on every path alike rather than on whichever ran last.
// Targets (issue 14): the daemon's p50 over the bare proxy at most 0.10 ms at 1 client, its
// throughput at 32 clients at least 95 % of the bare proxy's, and its streamed first token
// within 0.10 ms of the bare proxy's.
import { fork, type ChildProcess } from 'node:child_process';
import http from 'node:http';
import { dirname, join } from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { chatBody, timedPost, timedStream, type Target } from './http-client.js';
import { HOSTED_MODEL_ID, type RouterHostCpu, type RouterHostReady } from './router-host-protocol.js';
import { fixed, percentile, printTable, signed, verdict } from './stats.js';

const MODEL_ID = HOSTED_MODEL_ID;
const CHAT_PATH = '/v1/chat/completions';
const TARGET_OVER_PROXY_P50_MS = 0.1;
const TARGET_THROUGHPUT_OF_PROXY = 0.95;
const TARGET_FIRST_TOKEN_OVER_PROXY_MS = 0.1;

interface Scenario {
  clients: number;
  /** Requests per batch; each round runs one batch per path. */
  batch: number;
  rounds: number;
  warmup: number;
}

// The warm-up is long enough for V8 to have optimised each path's code (a few hundred requests):
// a daemon serves for hours, and its steady state is what a user's requests meet. Many short
// rounds rather than a few long ones: this machine's stalls come and go within seconds.
const SCENARIOS: Scenario[] = [
  { clients: 1, batch: 80, rounds: 24, warmup: 400 },
  { clients: 32, batch: 256, rounds: 6, warmup: 256 },
];
const STREAM: Scenario = { clients: 1, batch: 40, rounds: 18, warmup: 200 };

type PathName = 'direct' | 'bare proxy' | 'router alone' | 'router recording' | 'daemon';

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
  /** Each round's batch p50, in round order: the paths' batches of one round ran back to back. */
  roundP50s: number[];
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
  const totals = new Map<PathName, Samples>(paths.map((path) => [path.name, { latencies: [], requests: 0, wallMs: 0, hostCpuMicros: 0, roundP50s: [] }]));
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
        total.roundP50s.push(percentile(batch.latencies, 50));
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

async function startRouterHost(): Promise<RouterHost> {
  const entry = join(dirname(fileURLToPath(import.meta.url)), 'router-host.js');
  const child = fork(entry, [], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
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

/**
 * What recording each request (core/router/http/request-trace.ts, the usage tap, the request log
 * and the histograms) costs: the recording router against the same router without, in the same
 * rounds — p50, the same-round median of the difference, throughput and host CPU per request.
 */
function recordingCost(on: { p50: number; rate: number; samples: Samples }, off: { p50: number; rate: number; samples: Samples }, scenario: Scenario): string {
  const byRound = percentile(on.samples.roundP50s.map((p50, round) => p50 - (off.samples.roundP50s[round] ?? p50)), 50);
  const cpu = (s: Samples): number => s.hostCpuMicros / s.requests;
  return `recording on against off (the router over the same fixed gateway), ${clientsLabel(scenario.clients)}: p50 ${signed(on.p50 - off.p50, 2)} ms (same-round median ${signed(byRound, 2)}), throughput ${fixed((on.rate / off.rate) * 100, 1)} %, host CPU ${signed(cpu(on.samples) - cpu(off.samples), 0)} µs/req`;
}

const clientsLabel = (clients: number): string => `${clients} client${clients === 1 ? '' : 's'}`;

export async function runRouterBench(): Promise<void> {
  const host = await startRouterHost();
  try {
    const { ready } = host;
    const paths: Path[] = [
      { name: 'direct', target: { port: ready.engine.port, apiKey: ready.engine.apiKey }, hosted: false },
      { name: 'bare proxy', target: { port: ready.proxyPort }, hosted: true },
      { name: 'router alone', target: { port: ready.routerPort }, hosted: true },
      { name: 'router recording', target: { port: ready.recordingRouterPort }, hosted: true },
      { name: 'daemon', target: { port: ready.daemonPort }, hosted: true },
    ];
    const plain = chatBody(MODEL_ID, false);
    const streamed = chatBody(MODEL_ID, true);

    console.log(
      `router overhead: one-token chat completions on ${MODEL_ID} (1 engine thread), direct vs a bare Node proxy vs the router over a fixed gateway vs the real daemon, interleaved`,
    );
    const rows: string[][] = [];
    const verdicts: string[] = [];
    for (const scenario of SCENARIOS) {
      const totals = await interleaved(paths, scenario, host.cpu, (path, agent) => timedPost(agent, path.target, CHAT_PATH, plain));
      const of = (name: PathName): { p50: number; rate: number; samples: Samples } => {
        const samples = totals.get(name) as Samples;
        return { p50: percentile(samples.latencies, 50), rate: (samples.requests * 1000) / samples.wallMs, samples };
      };
      const direct = of('direct');
      const proxy = of('bare proxy');
      for (const path of paths) {
        const { p50, rate, samples } = of(path.name);
        const overProxy = path.name !== 'direct' && path.name !== 'bare proxy';
        rows.push([
          `${clientsLabel(scenario.clients)}, ${path.name}`,
          String(samples.requests),
          fixed(p50, 2),
          fixed(percentile(samples.latencies, 99), 2),
          path.hosted ? signed(p50 - direct.p50, 2) : '',
          overProxy ? signed(p50 - proxy.p50, 2) : '',
          fixed(rate, 0),
          path.hosted ? `${fixed((rate / direct.rate) * 100, 1)} %` : '',
          overProxy ? `${fixed((rate / proxy.rate) * 100, 1)} %` : '',
          path.hosted ? fixed(samples.hostCpuMicros / samples.requests, 0) : '',
        ]);
      }
      const daemon = of('daemon');
      if (scenario.clients === 1) {
        const over = daemon.p50 - proxy.p50;
        verdicts.push(`daemon p50 over the bare proxy at 1 client: ${signed(over, 2)} ms (target ≤ ${TARGET_OVER_PROXY_P50_MS} ms): ${verdict(over <= TARGET_OVER_PROXY_P50_MS)}`);
        // A cross-check that a stall cannot tilt: each round's daemon batch against the proxy
        // batch of the same round (seconds apart), the median of those differences.
        const overProxyByRound = (name: PathName): number => percentile(of(name).samples.roundP50s.map((p50, round) => p50 - (proxy.samples.roundP50s[round] ?? p50)), 50);
        verdicts.push(
          `  cross-check, median over ${scenario.rounds} rounds of (batch p50 − the same round's bare proxy batch p50): daemon ${signed(overProxyByRound('daemon'), 2)} ms, router alone ${signed(overProxyByRound('router alone'), 2)} ms, router recording ${signed(overProxyByRound('router recording'), 2)} ms`,
        );
        verdicts.push(recordingCost(of('router recording'), of('router alone'), scenario));
      } else {
        const ratio = daemon.rate / proxy.rate;
        verdicts.push(recordingCost(of('router recording'), of('router alone'), scenario));
        verdicts.push(
          `daemon throughput at ${clientsLabel(scenario.clients)}: ${fixed(ratio * 100, 1)} % of the bare proxy's (target ≥ ${TARGET_THROUGHPUT_OF_PROXY * 100} %): ${verdict(ratio >= TARGET_THROUGHPUT_OF_PROXY)}`,
        );
      }
    }
    printTable(['clients, path', 'requests', 'p50 ms', 'p99 ms', 'added p50', 'over proxy', 'req/s', 'of direct', 'of proxy', 'host CPU µs/req'], rows);

    const streamTimes = new Map<PathName, { firstByte: number[]; firstToken: number[] }>(paths.map((path) => [path.name, { firstByte: [], firstToken: [] }]));
    await interleaved(paths, STREAM, host.cpu, async (path, agent, counted) => {
      const times = await timedStream(agent, path.target, CHAT_PATH, streamed);
      const bucket = streamTimes.get(path.name);
      if (counted) {
        bucket?.firstByte.push(times.firstByteAt - times.startedAt);
        bucket?.firstToken.push(times.firstTokenAt - times.startedAt);
      }
      return times.endedAt - times.startedAt;
    });
    const timesOf = (name: PathName): { firstByte: number[]; firstToken: number[] } => streamTimes.get(name) as { firstByte: number[]; firstToken: number[] };
    const directStream = timesOf('direct');
    const proxyStream = timesOf('bare proxy');
    console.log();
    console.log(`streaming, 1 client, ${STREAM.batch * STREAM.rounds} requests per path: time to the first body byte (the role event) and to the first token event`);
    const streamRows = paths.map((path) => {
      const times = timesOf(path.name);
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
    const firstTokenOver = percentile(timesOf('daemon').firstToken, 50) - percentile(proxyStream.firstToken, 50);
    verdicts.push(
      `daemon streamed first token over the bare proxy, p50: ${signed(firstTokenOver, 2)} ms (target ≤ ${TARGET_FIRST_TOKEN_OVER_PROXY_MS} ms): ${verdict(firstTokenOver <= TARGET_FIRST_TOKEN_OVER_PROXY_MS)}`,
    );
    const recordingFirstToken = percentile(timesOf('router recording').firstToken, 50) - percentile(timesOf('router alone').firstToken, 50);
    verdicts.push(`recording on against off, streamed first token p50: ${signed(recordingFirstToken, 2)} ms`);
    console.log();
    for (const line of verdicts) console.log(line);
  } finally {
    await host.stop();
  }
}
