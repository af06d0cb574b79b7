// Swap-aware queueing: how many swaps, and what latency, mixed requests for two models that
// cannot share the memory budget cost when they are served first come, first served across
// models (FIFO, `swapTurn: 0`) and when they are grouped (a model keeps taking requests, and is
// held for its client's next one, until a waiting model has waited its turn).
//
// Each client sends non-streamed chat completions one after another. Three ways of choosing
// the model of each request: `random` (each for one of the two at random; 2, 4 and 8 clients),
// `alternating` (each client alternates, the two clients out of phase: the issue's own trial),
// and `own model` (each client keeps to one model, as two apps each on their own model do).
// A configuration's requests are split evenly among its clients. Every configuration runs on
// its own daemon core (swap-daemon.ts: the real controller, gateway, router and supervisor over
// real fake-engine processes), and they take turns: each configuration's requests are cut into
// rounds, and the configurations run their rounds one after another in an order that rotates
// every round, so a stall on the shared machine lands on every configuration alike. The model
// sequences are seeded and the same for every configuration: client i sends the very same
// requests in the same order under each, so the configurations differ only in how the daemon
// orders them.
//
// A swap is a launch of a model that was not resident, counted from the supervisor's
// lifecycle events (ServerSpawned); an unmeasured warm-up request first makes one model
// resident, so every launch counted is a swap. Latency is request start → end of response.
import http from 'node:http';
import { loadavg } from 'node:os';
import { performance } from 'node:perf_hooks';
import { DEFAULT_SWAP_TURN_MS } from '../../core/catalog/config/schema.js';
import { seededRandom } from '../../core/catalog/demo/seeded-random.js';
import { scratchDir } from './bench-models.js';
import { chatBody, timedPost } from './http-client.js';
import { fixed, median, percentile, printTable, verdict } from './stats.js';
import { startSwapDaemon, type SwapDaemon } from './swap-daemon.js';

const CHAT_PATH = '/v1/chat/completions';
const MODELS = ['model-a', 'model-b'] as const;

/** How each client picks the model of each request (see the header). */
export type QueueingPattern = 'random' | 'alternating' | 'own model';

export interface QueueingScenario {
  pattern: QueueingPattern;
  clients: number;
}

export interface QueueingBenchOptions {
  /** Requests per configuration and scenario. */
  requests: number;
  scenarios: readonly QueueingScenario[];
  /** Each configuration's requests are cut into this many rounds, interleaved with the others'. */
  rounds: number;
  /**
   * An engine's load: spawn → /health 200 on top of starting a Node process (~40–80 ms here).
   * Real loads take seconds; what matters for the comparison is that a swap costs several
   * answers, as it does for real models.
   */
  loadMs: number;
  /** An engine's answer: a short chat completion on a GPU. */
  answerMs: number;
  /** The turns compared; 0 is FIFO. */
  turns: readonly { name: string; turnMs: number }[];
}

/**
 * 200 requests per configuration by default, counted per 1,000: at 1,000 a run takes most of an
 * hour on the project's 2-core machine (a swap costs ~0.5 s, and 2 clients swap every other
 * request), which no one runs beside the other benchmarks. QUEUEING_REQUESTS=1000 runs the full
 * count; the comparison is the same, its percentiles steadier.
 */
export const DEFAULT_QUEUEING_OPTIONS: QueueingBenchOptions = {
  requests: Number(process.env['QUEUEING_REQUESTS'] ?? 200),
  scenarios: scenariosNamed(process.env['QUEUEING_SCENARIOS'] ?? 'random,alternating,own model'),
  rounds: 5,
  loadMs: 200,
  answerMs: 50,
  // Around one swap (a launch takes ~0.4–0.8 s here) and the default.
  turns: [
    { name: 'FIFO (turn 0)', turnMs: 0 },
    { name: 'grouped, turn 0.5 s', turnMs: 500 },
    { name: `grouped, turn ${DEFAULT_SWAP_TURN_MS / 1000} s (default)`, turnMs: DEFAULT_SWAP_TURN_MS },
  ],
};

interface Totals {
  latencies: number[];
  refused: string[];
  swaps: number;
  wallMs: number;
}

/** QUEUEING_SCENARIOS: a comma-separated choice of patterns; random runs at 2, 4 and 8 clients, the others at 2. */
function scenariosNamed(list: string): QueueingScenario[] {
  return list.split(',').flatMap((name): QueueingScenario[] => {
    const pattern = name.trim();
    if (pattern === 'random') return [2, 4, 8].map((clients) => ({ pattern, clients }));
    if (pattern === 'alternating' || pattern === 'own model') return [{ pattern, clients: 2 }];
    throw new Error(`QUEUEING_SCENARIOS: "${pattern}" is not a pattern; use random, alternating or own model`);
  });
}

/** Client i's models, the same under every configuration. */
function sequences(pattern: QueueingPattern, clients: number, perClient: number): string[][] {
  return Array.from({ length: clients }, (_, client) => {
    const random = seededRandom(1_000 * clients + client);
    return Array.from({ length: perClient }, (_, i) => {
      const at = pattern === 'random' ? Math.floor(random.next() * MODELS.length) : pattern === 'alternating' ? (client + i) % MODELS.length : client % MODELS.length;
      return MODELS[at] as string;
    });
  });
}

/** Every client sends its requests one after another; resolves when all have ended. */
async function runRound(daemon: SwapDaemon, agent: http.Agent, work: readonly (readonly string[])[], totals: Totals): Promise<void> {
  const bodies = new Map(MODELS.map((model) => [model as string, chatBody(model, false)]));
  const before = daemon.counts().launches;
  const started = performance.now();
  await Promise.all(
    work.map(async (models) => {
      for (const model of models) {
        try {
          totals.latencies.push(await timedPost(agent, { port: daemon.port }, CHAT_PATH, bodies.get(model) as Buffer));
        } catch (error) {
          totals.refused.push(error instanceof Error ? error.message : String(error));
        }
      }
    }),
  );
  totals.wallMs += performance.now() - started;
  totals.swaps += daemon.counts().launches - before;
}

const HEADER = ['clients, queueing', 'requests', 'swaps', 'swaps / 1,000 req', 'req / swap', 'p50 ms', 'p99 ms', 'max ms', 'refused', 'wall s'];

const load = (): string => loadavg().map((n) => n.toFixed(2)).join(' ');

export async function runQueueingBench(options: QueueingBenchOptions = DEFAULT_QUEUEING_OPTIONS): Promise<void> {
  const { requests, rounds, turns } = options;
  console.log(
    `queueing: ${requests} non-streamed chat completions per configuration, each for ${MODELS.join(' or ')} (the same sequences for every configuration), ` +
      `which do not fit together; fake engines: load ${options.loadMs} ms, answer ${options.answerMs} ms; ${rounds} interleaved rounds`,
  );
  const rows: string[][] = [];
  const verdicts: string[] = [];
  for (const { pattern, clients } of options.scenarios) {
    const perClient = Math.floor(requests / clients);
    const work = sequences(pattern, clients, perClient);
    const scenario = `${clients} clients, ${pattern}`;
    const daemons: SwapDaemon[] = [];
    const agents: http.Agent[] = [];
    try {
      for (const turn of turns) {
        daemons.push(
          await startSwapDaemon({
            modelIds: MODELS,
            turnMs: turn.turnMs,
            loadMs: options.loadMs,
            answerMs: options.answerMs,
            dataDir: await scratchDir('queueing'),
          }),
        );
        agents.push(new http.Agent({ keepAlive: true, maxSockets: clients }));
      }
      const totals: Totals[] = turns.map(() => ({ latencies: [], refused: [], swaps: 0, wallMs: 0 }));
      const warmup: Totals = { latencies: [], refused: [], swaps: 0, wallMs: 0 };
      for (const [i, daemon] of daemons.entries()) await runRound(daemon, agents[i] as http.Agent, [[MODELS[0]]], warmup);
      if (warmup.refused.length > 0) throw new Error(`the warm-up request was refused: ${warmup.refused[0]}`);

      for (let round = 0; round < rounds; round++) {
        const from = Math.floor((round * perClient) / rounds);
        const to = Math.floor(((round + 1) * perClient) / rounds);
        const slice = work.map((models) => models.slice(from, to));
        for (let k = 0; k < turns.length; k++) {
          const i = (round + k) % turns.length;
          await runRound(daemons[i] as SwapDaemon, agents[i] as http.Agent, slice, totals[i] as Totals);
        }
      }

      const loads = daemons.flatMap((daemon) => daemon.counts().loadMs);
      console.log(`  ${scenario}: a launch takes ${fixed(median(loads), 0)} ms from spawn to ready (median of ${loads.length}; p99 ${fixed(percentile(loads, 99), 0)} ms)`);
      const fifoSwaps = totals[0]?.swaps ?? Number.NaN;
      for (const [i, turn] of turns.entries()) {
        const t = totals[i] as Totals;
        const served = t.latencies.length;
        const sent = served + t.refused.length;
        rows.push([
          `${scenario}, ${turn.name}`,
          String(sent),
          String(t.swaps),
          fixed((t.swaps * 1000) / sent, 0),
          fixed(served / Math.max(1, t.swaps), 1),
          fixed(percentile(t.latencies, 50), 0),
          fixed(percentile(t.latencies, 99), 0),
          fixed(Math.max(...t.latencies), 0),
          String(t.refused.length),
          fixed(t.wallMs / 1000, 1),
        ]);
        const problems = daemons[i]?.problems() ?? [];
        for (const line of problems.slice(0, 3)) console.log(`  ${scenario}, ${turn.name}: ${line}`);
        for (const message of t.refused.slice(0, 3)) console.log(`  ${scenario}, ${turn.name}: refused: ${message}`);
        if (turn.turnMs > 0) {
          // Alternating clients: each client's next request is always for the other model, so one
          // residency serves at most one request per client; counting the warm-up's resident model,
          // no queueing can do with fewer swaps than a client's requests less one.
          const floor = pattern === 'alternating' ? perClient - 1 : 0;
          const atFloor = pattern === 'alternating' && fifoSwaps <= floor + 1 && t.swaps <= fifoSwaps;
          const floorWords = pattern === 'alternating' ? `; the floor for this pattern is ${floor}, which no queueing can beat` : '';
          verdicts.push(`${scenario}, ${turn.name}: ${t.swaps} swaps against FIFO's ${fifoSwaps}${floorWords} (target: fewer): ${atFloor ? 'both at the floor' : verdict(t.swaps < fifoSwaps)}`);
        }
        verdicts.push(`${scenario}, ${turn.name}: ${t.refused.length} refused (target 0): ${verdict(t.refused.length === 0)}`);
      }
      // A full run takes most of an hour on the shared 2-core machine: each client count's rows
      // print as soon as they are measured, so a run cut short still reports what it measured.
      printTable(HEADER, rows.slice(-turns.length));
      console.log(`  (load average after ${scenario}: ${load()})`);
    } finally {
      for (const agent of agents) agent.destroy();
      await Promise.all(daemons.map((daemon) => daemon.stop()));
    }
  }
  console.log();
  printTable(HEADER, rows);
  console.log();
  for (const line of verdicts) console.log(line);
}
