// The engine race: the embedded engine (the default) against llama-server on the same model,
// threads, context and slots, side by side in one run (issue 26, item 3). Three rates, each the
// median over rounds run in a rotating order:
//   - prefill: a prompt of about 1,500 tokens, one token out: prompt tokens over the request's time;
//   - decode: a short prompt, 256 tokens out (no stop: the demo models never end a turn early at
//     temperature 0 within the limit): completion tokens over the request's time less the same
//     short prompt's one-token time;
//   - 4 clients: the decode request four times at once on 4 slots: all completion tokens over the
//     wall time of the four.
// demo-chat without its draft (speculative decoding would measure the draft, not the engine),
// 2 threads, 8192 tokens of context over 4 slots. Only the ratios mean anything on a shared
// machine; the rates move with whatever else runs.
import { performance } from 'node:perf_hooks';
import { llamaServerPath, roundsFromEnv } from './bench-env.js';
import { benchModels } from './bench-models.js';
import { benchSpec, startDirectEngine, type DirectEngine } from './engine-process.js';
import { fixed, median, printTable } from './stats.js';

/** LLMTRAY_RACE_ROUNDS shortens the run while iterating on the engine; the figures in BENCHMARKS.md use 5. */
const ROUNDS = roundsFromEnv('LLMTRAY_RACE_ROUNDS', 5);
const DECODE_TOKENS = 256;
const THREADS = 2;
const SLOTS = 4;
const CONTEXT = 8192;
/** About 1,500 tokens: the demo vocabulary spells nearly a token a character (the answer's prompt_tokens says exactly). */
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

interface Rates {
  prefill: number[];
  decode: number[];
  aggregate: number[];
}

async function round(engine: DirectEngine, rates: Rates): Promise<void> {
  const long = await complete(engine, LONG_PROMPT, 1);
  rates.prefill.push(long.promptTokens / (long.ms / 1000));
  const short = await complete(engine, 'Once upon a time', 1);
  const decode = await complete(engine, 'Once upon a time', DECODE_TOKENS);
  rates.decode.push((decode.completionTokens - 1) / (Math.max(1, decode.ms - short.ms) / 1000));
  const started = performance.now();
  const four = await Promise.all(Array.from({ length: SLOTS }, () => complete(engine, 'Once upon a time', DECODE_TOKENS)));
  rates.aggregate.push(four.reduce((sum, t) => sum + t.completionTokens, 0) / ((performance.now() - started) / 1000));
}

export async function runEngineRaceBench(): Promise<void> {
  console.log(`## The engine race: embedded vs llama-server, demo-chat, ${THREADS} threads, ${SLOTS} slots, ${CONTEXT} context (${ROUNDS} rounds)`);
  const binary = llamaServerPath();
  if (binary === null) {
    console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server; nothing to race)');
    return;
  }
  const models = await benchModels();
  const spec = { ...benchSpec('bench-chat', models.chat.path, CONTEXT), threads: THREADS, parallel: SLOTS };
  const engines: { name: string; engine: DirectEngine; rates: Rates }[] = [];
  try {
    for (const [name, start] of [
      ['embedded', () => startDirectEngine(spec)],
      ['llama-server', () => startDirectEngine({ ...spec, engine: 'llama-server' }, 'full', binary)],
    ] as const) {
      const engine = await start();
      await engine.readyLine;
      engines.push({ name, engine, rates: { prefill: [], decode: [], aggregate: [] } });
    }
    // One unmeasured round each: page cache, first-graph allocations.
    for (const { engine } of engines) await round(engine, { prefill: [], decode: [], aggregate: [] });
    for (let r = 0; r < ROUNDS; r++) {
      const order = r % 2 === 0 ? engines : [...engines].reverse();
      for (const { engine, rates } of order) await round(engine, rates);
    }
    const [embedded, server] = engines;
    if (embedded === undefined || server === undefined) return;
    const row = (what: string, key: keyof Rates): string[] => {
      const a = median(embedded.rates[key]);
      const b = median(server.rates[key]);
      return [what, fixed(a, 1), fixed(b, 1), `${fixed((100 * a) / b, 1)} %`];
    };
    printTable(['tokens/s', 'embedded', 'llama-server', 'embedded / llama-server'], [
      row('prefill (~1,500-token prompt)', 'prefill'),
      row(`decode (${DECODE_TOKENS} tokens)`, 'decode'),
      row(`${SLOTS} clients at once, decode, all together`, 'aggregate'),
    ]);
  } finally {
    for (const { engine } of engines) await engine.stop();
  }
}
