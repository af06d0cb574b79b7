// The engine race: the embedded engine (the default where no llama-server is found) against
// llama-server on the same model, threads, context and slots, side by side in one run (issues
// 26 and 41). Three rates, each the median over rounds run in a rotating order:
//   - prefill: a prompt of about 1,500 tokens, one token out: prompt tokens over the request's time;
//   - decode: a short prompt, 256 tokens out (ignore_eos: every request decodes to the limit):
//     completion tokens over the request's time less the same short prompt's one-token time;
//   - 4 clients: the decode request four times at once on 4 slots: all completion tokens over the
//     wall time of the four.
// On demo-chat (without its draft: speculative decoding would measure the draft, not the engine)
// and on the real-shape models (real-shape/): billion-parameter K-quants with 128–152 k-token
// vocabularies, where a token is tens of milliseconds of matrix work and not ~3 ms. 2 threads,
// 8,192 tokens of context over 4 slots for every model. Only the ratios mean anything on a shared
// machine; every table says the load it ran under.
//
// LLMTRAY_EMBEDDED_ENTRY adds a third contender: the embedded engine of another checkout
// (its dist/core/engine/embedded/main.js), whose node-llama-cpp was built another way, e.g. from
// its shipped source with OpenMP (`npx node-llama-cpp source download --gpu false`).
import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { llamaServerPath, machineLoad, roundsFromEnv, waitForQuietIfAsked } from './bench-env.js';
import { benchModels } from './bench-models.js';
import { benchSpec, startDirectEngine, type DirectEngine } from './engine-process.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';
import { fixed, median, printTable } from './stats.js';

const DECODE_TOKENS = 256;
const THREADS = 2;
const SLOTS = 4;
const CONTEXT = 8192;
/** About 1,500 tokens: the demo vocabulary, and the real shapes' that grows it, spell nearly a token a character (the answer's prompt_tokens says exactly). */
const LONG_PROMPT = 'the quick brown fox jumps over the lazy dog '.repeat(34);

interface Timed {
  ms: number;
  promptTokens: number;
  completionTokens: number;
}

async function complete(engine: DirectEngine, prompt: string, maxTokens: number): Promise<Timed> {
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${engine.port}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${engine.apiKey}` },
    // cache_prompt false: each prefill is a prefill, not a hit on the slot's last prompt.
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, cache_prompt: false, ignore_eos: true }),
  });
  const answer = (await res.json()) as { usage?: { prompt_tokens?: number; completion_tokens?: number }; error?: { message?: string } };
  if (!res.ok || answer.usage === undefined) throw new Error(`engine race: ${res.status} ${answer.error?.message ?? JSON.stringify(answer)}`);
  return { ms: performance.now() - started, promptTokens: answer.usage.prompt_tokens ?? 0, completionTokens: answer.usage.completion_tokens ?? 0 };
}

export interface RaceRates {
  prefill: number[];
  decode: number[];
  aggregate: number[];
}

async function round(engine: DirectEngine, rates: RaceRates): Promise<void> {
  const long = await complete(engine, LONG_PROMPT, 1);
  rates.prefill.push(long.promptTokens / (long.ms / 1000));
  const short = await complete(engine, 'Once upon a time', 1);
  const decode = await complete(engine, 'Once upon a time', DECODE_TOKENS);
  rates.decode.push((decode.completionTokens - 1) / (Math.max(1, decode.ms - short.ms) / 1000));
  const started = performance.now();
  const four = await Promise.all(Array.from({ length: SLOTS }, () => complete(engine, 'Once upon a time', DECODE_TOKENS)));
  rates.aggregate.push(four.reduce((sum, t) => sum + t.completionTokens, 0) / ((performance.now() - started) / 1000));
}

/** One engine in the race: how to start it on a model file. */
export interface RaceContender {
  name: string;
  start(modelPath: string): Promise<DirectEngine>;
}

export interface RaceModel {
  label: string;
  path: string;
}

export interface RaceResult {
  model: string;
  /** The load the rounds ran under, as machineLoad labels it, before and after. */
  loadBefore: string;
  loadAfter: string;
  rates: Map<string, RaceRates>;
}

/** The contenders for a CPU run with `gpuLayers` layers on the GPU (0 here; gpu-check passes its own). */
export function raceContenders(gpuLayers = 0): RaceContender[] {
  const spec = (path: string) => ({ ...benchSpec('bench-race', path, CONTEXT), threads: THREADS, parallel: SLOTS, gpuLayers });
  const contenders: RaceContender[] = [{ name: 'embedded', start: (path) => startDirectEngine(spec(path)) }];
  const other = process.env.LLMTRAY_EMBEDDED_ENTRY;
  if (other !== undefined && other !== '') {
    if (!existsSync(other)) throw new Error(`LLMTRAY_EMBEDDED_ENTRY names ${other}, which does not exist`);
    contenders.push({ name: 'embedded (other build)', start: (path) => startDirectEngine(spec(path), 'full', null, other) });
  }
  const binary = llamaServerPath();
  if (binary !== null) contenders.push({ name: 'llama-server', start: (path) => startDirectEngine({ ...spec(path), engine: 'llama-server' }, 'full', binary) });
  return contenders;
}

/**
 * Races `contenders` on one model for `rounds` rounds (after one unmeasured round each), one
 * engine resident at a time so that no engine's memory or threads weigh on another's rounds:
 * each round starts every engine in turn, in a rotating order, runs its requests and stops it.
 */
export async function raceOnModel(model: RaceModel, contenders: readonly RaceContender[], rounds: number): Promise<RaceResult> {
  await waitForQuietIfAsked();
  const loadBefore = machineLoad().label;
  const rates = new Map<string, RaceRates>(contenders.map((c) => [c.name, { prefill: [], decode: [], aggregate: [] }]));
  for (let r = -1; r < rounds; r++) {
    const order = r % 2 === 0 ? contenders : [...contenders].reverse();
    for (const contender of order) {
      const engine = await contender.start(model.path);
      try {
        await engine.readyLine;
        // The first round is unmeasured: page cache, first-graph allocations.
        await round(engine, r < 0 ? { prefill: [], decode: [], aggregate: [] } : (rates.get(contender.name) as RaceRates));
      } finally {
        await engine.stop();
      }
    }
  }
  return { model: model.label, loadBefore, loadAfter: machineLoad().label, rates };
}

/** Prints one model's race: every contender's rates and each against the last (llama-server). */
export function printRace(result: RaceResult): void {
  const names = [...result.rates.keys()];
  const reference = names[names.length - 1] as string;
  console.log(`### ${result.model} (${result.loadBefore} before, ${result.loadAfter} after)`);
  const row = (what: string, key: keyof RaceRates): string[] => {
    const ref = median(result.rates.get(reference)?.[key] ?? []);
    const cells = names.map((n) => fixed(median(result.rates.get(n)?.[key] ?? []), 1));
    const ratios = names.slice(0, -1).map((n) => `${fixed((100 * median(result.rates.get(n)?.[key] ?? [])) / ref, 1)} %`);
    return [what, ...cells, ...ratios];
  };
  printTable(['tokens/s', ...names, ...names.slice(0, -1).map((n) => `${n} / ${reference}`)], [
    row('prefill (~1,500-token prompt)', 'prefill'),
    row(`decode (${DECODE_TOKENS} tokens)`, 'decode'),
    row(`${SLOTS} clients at once, decode, all together`, 'aggregate'),
  ]);
  console.log();
}

export async function runEngineRaceBench(): Promise<void> {
  const demoRounds = roundsFromEnv('LLMTRAY_RACE_ROUNDS', 5);
  const realRounds = roundsFromEnv('LLMTRAY_RACE_ROUNDS', 3);
  console.log(`## The engine race, ${THREADS} threads, ${SLOTS} slots, ${CONTEXT} context (${demoRounds} rounds on demo-chat, ${realRounds} on each real shape)`);
  if (llamaServerPath() === null) {
    console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server; nothing to race)');
    return;
  }
  const contenders = raceContenders();
  const demo = await benchModels();
  printRace(await raceOnModel({ label: 'demo-chat (f16, 46 MiB, 358 tokens)', path: demo.chat.path }, contenders, demoRounds));
  for (const { shape, quant } of chosenRealShapes()) {
    const model = await realShapeModel(shape, quant);
    printRace(await raceOnModel({ label: model.label, path: model.path }, contenders, realRounds));
  }
}
