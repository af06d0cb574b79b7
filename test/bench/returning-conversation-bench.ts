// A returning conversation after a swap (issue 26): how much of its time to first token the
// saved conversation takes away, and what saving it adds to the swap.
//
// Per engine (embedded always; llama-server when LLMTRAY_LLAMA_SERVER or .llama-server names a
// built one), two real daemons in this process (startDaemon, as `serve` runs it), alike but for
// `engines.savedConversations` (true: the default; false: the baseline "without it"), each with
// demo-chat (A, ctx 4096) and demo-tiny (B) under a budget limit that holds one (priced as the
// daemon prices them once it has learned its engine's runtime), no warm spare,
// 1 thread. Each round, on each daemon in turn (the order alternating between rounds):
//   1. A: a conversation of about 1,500 prompt tokens, 8 tokens out (streamed). Each round's
//      conversation opens with its own text, so no earlier round's saved state shares its prefix;
//   2. B, the moment A's stream ends: the swap (A's last token → B's first token). With saving
//      on, the save of A's idle slot (embedded: when the slot goes idle; llama-server: once the
//      server has idled a second, so here, asked at once, before the eviction) may fall inside
//      it: the save's cost is this swap's difference between the daemons;
//   3. A again with a short unrelated prompt: the swap back (B's last token → A's first token),
//      the same work on both daemons, so that step 4 measures the cache alone;
//   4. A with the conversation, A's answer and a new user turn (streamed, usage included): the
//      returning conversation's time to first token and its `cached_tokens`.
// A returning user waits the swap back plus step 4; only step 4 differs with the cache.
// Targets: step 4 with the cache ≤ 10 % of without; the swap with saving ≤ 20 ms over without.
//
// Then the same with A a real-shape model (issue 41: the first non-MoE one LLMTRAY_REAL_SHAPES
// chooses, llama-3.2-1b Q4_K_M by default; none with `none`) and B demo-tiny, at about 1,500 and
// about 8,000 prompt tokens (ctx 10,240), LLMTRAY_RETURN_REAL_ROUNDS rounds (2 by default: an
// uncached 8,000-token prefill of a billion parameters takes minutes on two cores). Where the
// target is missed the table says which step costs what: the save and the restore (the engine's
// own lines: the embedded engine's output, llama-server's model log in the daemon), and the
// return's own `timings` (cache_n taken from the cache, prompt_n evaluated, prompt_ms: the tail's
// prefill with the render and the tokenizing before it), against the return's first token.
//
// `npm run gpu-check` runs the same tables with every layer on the GPU (scripts/gpu-check/
// returning.ts): the run builders, the engines and the table are exported for it.
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { llamaServerPath, machineLoad, roundsFromEnv, waitForQuietIfAsked } from './bench-env.js';
import { performance } from 'node:perf_hooks';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { createLogger } from '../../core/daemon/logger.js';
import { benchModels, scratchDir } from './bench-models.js';
import { observeSpawns, recordLines } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { chosenRealShapes, realShapeModel } from './real-shape/real-shape-models.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';

const A = 'return-chat';
const B = 'return-tiny';
/** A's context for the ~1,500-token conversation alone (demo-chat's tables). */
const DEMO_CTX = 4096;
/** A's context with the ~8,000-token conversation, its answer and the new turn. */
const REAL_CTX = 10_240;
/** The conversation sizes, in prompt tokens (about: the answer's prompt_tokens says exactly). */
const DEMO_TOKENS = 1500;
const LONG_TOKENS = 8000;
export const REAL_TOKENS: readonly number[] = [DEMO_TOKENS, LONG_TOKENS];
/** The conversation's tokens that do not repeat, whatever its size (a first run scaled all 1,500 and got 6,774 for 8,000). */
const FIXED_TOKENS = 280;
const TARGET_RATIO = 0.1;
const TARGET_SAVE_MS = 20;
/** A limit above any machine's memory: none, while the daemon learns its engine's runtime. */
const UNLIMITED_BYTES = 2 ** 50;
/** How long the runtime's lesson is awaited after A's first answer: a read of the process's RSS, or one nvidia-smi call. */
const LEARN_WAIT_MS = 10_000;

export type ReturnEngine = 'embedded' | 'llama-server';

/** What one table runs: A's file and context, the conversation's size, the rounds, the layers on the GPU. */
interface Setup {
  /** What the table calls A. */
  label: string;
  paths: { chat: string; tiny: string };
  ctx: number;
  tokens: number;
  rounds: number;
  gpuLayers: number;
}

function configText(engine: ReturnEngine, saving: boolean, setup: Setup, limitBytes: number, llamaServer: string | null): string {
  const { paths } = setup;
  return `modelDirs: []
budget:
  reserve: 0
  limit: ${limitBytes}
engines:
  warmSpare: false
  savedConversations: ${saving}
${llamaServer === null ? '' : `  llamaServer: ${JSON.stringify(llamaServer)}\n`}models:
  - id: ${A}
    path: ${JSON.stringify(paths.chat)}
    ctx: ${setup.ctx}
    gpuLayers: ${setup.gpuLayers}
    engine: ${engine}
  - id: ${B}
    path: ${JSON.stringify(paths.tiny)}
    ctx: 2048
    gpuLayers: ${setup.gpuLayers}
    engine: ${engine}
`;
}

type Message = { role: 'system' | 'user' | 'assistant'; content: string };

/**
 * About `tokens` prompt tokens (the demo vocabulary, and the real shapes' that extends it, spell
 * nearly a token a character; the answer's prompt_tokens says exactly), opened by `round`'s own
 * words. At 1,500 it is the conversation the demo rows have always run.
 */
function conversation(round: number, tokens: number): Message[] {
  // Of the 1,500, about 280 do not repeat (the template, the openings): only the rest grows.
  const times = (n: number): number => Math.max(1, Math.round((n * (tokens - FIXED_TOKENS)) / (DEMO_TOKENS - FIXED_TOKENS)));
  return [
    { role: 'system', content: `Conversation number ${round}. You are a careful assistant who keeps notes. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta iota kappa. '.repeat(times(6))}` },
    { role: 'user', content: `Here is what I wrote today: ${'the quick brown fox jumps over the lazy dog '.repeat(times(10))}` },
    { role: 'assistant', content: `I have read it. ${'The fox jumped and the dog lay still. '.repeat(times(4))}` },
    { role: 'user', content: `And more: ${'a journey of a thousand miles begins with a single step '.repeat(times(3))} What do you make of it?` },
  ];
}

/** The engine's own `timings` on an answer (llama-server's; the embedded engine reports the same fields). */
interface EngineTimings {
  cache_n?: number;
  prompt_n?: number;
  prompt_ms?: number;
}

interface Streamed {
  startedAt: number;
  firstTokenAt: number;
  endedAt: number;
  text: string;
  promptTokens: number;
  cachedTokens: number;
  /** The engine's `timings` on the stream's last chunk, where it sent them. */
  timings: EngineTimings | null;
}

/** A streamed chat with usage: its first token's and end's times, its text, prompt and cached tokens. */
function streamChat(port: number, messages: Message[], maxTokens: number): Promise<Streamed> {
  const body = Buffer.from(JSON.stringify({ model: A, messages, max_tokens: maxTokens, temperature: 0, stream: true, stream_options: { include_usage: true } }));
  return new Promise((done, fail) => {
    const startedAt = performance.now();
    let firstTokenAt = Number.NaN;
    let raw = '';
    let text = '';
    let usage: { prompt_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } } | undefined;
    let timings: EngineTimings | null = null;
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/v1/chat/completions', headers: { 'content-type': 'application/json', 'content-length': body.length } });
    req.once('error', fail);
    req.once('response', (res) => {
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        raw += chunk;
        let newline: number;
        while ((newline = raw.indexOf('\n')) >= 0) {
          const line = raw.slice(0, newline).trim();
          raw = raw.slice(newline + 1);
          if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
          const event = JSON.parse(line.slice('data: '.length)) as { choices?: { delta?: { content?: string } }[]; usage?: typeof usage; timings?: EngineTimings };
          if (event.timings != null) timings = event.timings;
          const content = event.choices?.[0]?.delta?.content;
          if (typeof content === 'string' && content.length > 0) {
            if (Number.isNaN(firstTokenAt)) firstTokenAt = performance.now();
            text += content;
          }
          if (event.usage != null) usage = event.usage;
        }
      });
      res.once('error', fail);
      res.once('end', () => {
        const endedAt = performance.now();
        if (res.statusCode !== 200) fail(new Error(`${A} answered ${res.statusCode}: ${raw.slice(0, 500)}`));
        else if (Number.isNaN(firstTokenAt)) fail(new Error(`${A}'s stream ended without a token`));
        else if (usage?.prompt_tokens === undefined) fail(new Error(`${A}'s stream carried no usage`));
        else done({ startedAt, firstTokenAt, endedAt, text, promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0, timings });
      });
    });
    req.end(body);
  });
}

interface Round {
  /** A's last token → B's first token. */
  swapMs: number;
  /** The save the engine reported inside that swap (its "saved … in N ms" line; embedded only), or NaN. */
  saveMs: number;
  /** The restore the engine reported for the returning conversation, or NaN. */
  restoreMs: number;
  /** B's last token → A's first token (a short prompt). */
  swapBackMs: number;
  /** The returning conversation: request → first token. */
  returnMs: number;
  promptTokens: number;
  cachedTokens: number;
  /** The return's own `timings`: prompt tokens taken from the cache, evaluated, and the prompt's time in the engine (NaN where none came). */
  cacheN: number;
  promptN: number;
  promptMs: number;
  /** The first, uncached request of the conversation: request → first token. */
  firstMs: number;
  /** The whole round, wall time. */
  roundMs: number;
  /** Every `conversations:` line an engine wrote during the round, with its step: printed for a saved round whose return was not restored. */
  said: string[];
}

/** What the engines said about saves and restores, by the step of the round it came in. */
interface EngineReport {
  step: 'swap' | 'return' | 'other';
  saveMs: number[];
  restoreMs: number[];
  said: string[];
}

/** Listens to every engine process this process starts: the embedded engine's lines on a save and a restore. */
function listenToEngines(report: EngineReport): () => void {
  return observeSpawns((child) =>
    recordLines(child, ({ text }) => {
      if (/ conversations: /.test(text) || /SIGTERM received/.test(text)) report.said.push(`[${report.step}, pid ${child.pid ?? '?'}] ${text.trim()}`);
      const saved = / conversations: slot \d+: saved \d+ tokens .* in (\d+) ms/.exec(text);
      if (saved !== null && report.step === 'swap') report.saveMs.push(Number(saved[1]));
      const restored = / conversations: slot \d+: restored \d+ of \d+ prompt tokens .* in (\d+) ms/.exec(text);
      if (restored !== null && report.step === 'return') report.restoreMs.push(Number(restored[1]));
    }),
  );
}

const sum = (values: number[]): number => (values.length === 0 ? Number.NaN : values.reduce((a, b) => a + b, 0));

/** Where A's log (the daemon's copy, `llmtray logs`) stands now. */
async function logPosition(daemon: RunningDaemon): Promise<number> {
  return (await daemon.admin.getLogs({ id: A })).next;
}

/**
 * llama-server's `conversations:` lines come from the daemon (core/engine/llama-server/saved-slots.ts),
 * not from the engine's output: they are read from A's log since `from` and counted for `step`
 * as the embedded engine's lines are.
 */
async function readDaemonLines(daemon: RunningDaemon, from: number, step: EngineReport['step'], report: EngineReport): Promise<number> {
  const { lines, next } = await daemon.admin.getLogs({ id: A });
  const fresh = lines.slice(Math.max(0, lines.length - (next - from)));
  for (const text of fresh) {
    if (!/ conversations: /.test(text)) continue;
    report.said.push(`[${step}, daemon] ${text.trim()}`);
    const saved = / conversations: slot \d+: saved \d+ tokens .* in (\d+) ms/.exec(text);
    if (saved !== null && step === 'swap') report.saveMs.push(Number(saved[1]));
    const restored = / conversations: slot \d+: restored \d+ of \d+ prompt tokens .* in (\d+) ms/.exec(text);
    if (restored !== null && step === 'return') report.restoreMs.push(Number(restored[1]));
  }
  return next;
}

async function oneRound(daemon: RunningDaemon, engine: ReturnEngine, setup: Setup, round: number, report: EngineReport): Promise<Round> {
  const port = daemon.port;
  const started = performance.now();
  const messages = conversation(round, setup.tokens);
  report.saveMs = [];
  report.restoreMs = [];
  report.said = [];
  report.step = 'other';
  const fromDaemon = engine === 'llama-server';
  let at = fromDaemon ? await logPosition(daemon) : 0;
  const first = await streamChat(port, messages, 8);
  if (fromDaemon) at = await readDaemonLines(daemon, at, 'other', report);
  // A's slot goes idle now: a save reported from here to B's answer is inside the swap.
  report.step = 'swap';
  const toB = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(B, true, 4));
  // A budget that held both would measure no swap at all.
  if (daemon.admin.snapshot().models.find((m) => m.id === A)?.upstream != null) throw new Error(`${A} stayed resident beside ${B}: the limit holds both`);
  // A's log keeps its evicted server's lines: the save before the eviction is among them.
  if (fromDaemon) at = await readDaemonLines(daemon, at, 'swap', report);
  report.step = 'other';
  const back = await timedStream(false, { port }, '/v1/chat/completions', chatBody(A, true));
  if (fromDaemon) at = await readDaemonLines(daemon, at, 'other', report);
  report.step = 'return';
  const returning = await streamChat(port, [...messages, { role: 'assistant', content: first.text }, { role: 'user', content: 'Thank you. Now say it in one word.' }], 4);
  if (fromDaemon) await readDaemonLines(daemon, at, 'return', report);
  report.step = 'other';
  const timing = (key: keyof EngineTimings): number => returning.timings?.[key] ?? Number.NaN;
  return {
    cacheN: timing('cache_n'),
    promptN: timing('prompt_n'),
    promptMs: timing('prompt_ms'),
    firstMs: first.firstTokenAt - first.startedAt,
    roundMs: performance.now() - started,
    swapMs: toB.firstTokenAt - first.endedAt,
    saveMs: sum(report.saveMs),
    restoreMs: sum(report.restoreMs),
    swapBackMs: back.firstTokenAt - toB.endedAt,
    returnMs: returning.firstTokenAt - returning.startedAt,
    promptTokens: returning.promptTokens,
    cachedTokens: returning.cachedTokens,
    said: [...report.said],
  };
}

interface Daemon {
  saving: boolean;
  daemon: RunningDaemon;
  log: string[];
  /** The measured rounds, by conversation size. */
  rounds: Map<number, Round[]>;
}

async function startOne(engine: ReturnEngine, saving: boolean, setup: Setup, threads: number, llamaServer: string | null): Promise<Daemon> {
  const dataDir = await scratchDir(`return-${engine}-${saving ? 'saving' : 'off'}`);
  const configPath = join(dataDir, 'config.yaml');
  // First without a limit: the daemon learns the engine's runtime from A's first server
  // (runtime-overhead.ts), which reprices every model — far over the prior for the embedded
  // engine (~170 MiB of RSS beyond the model), and for llama-server its own figure, which no
  // constant here knows. The limit then comes from the prices the daemon shows: each model fits
  // alone, the two together do not, as the daemon itself counts them.
  await writeFile(configPath, configText(engine, saving, setup, UNLIMITED_BYTES, llamaServer));
  const log: string[] = [];
  const daemon = await startDaemon({ configPath, dataDir, port: 0, threads, log: (subsystem) => createLogger(subsystem, (line) => log.push(line)) });
  const priced = (id: string): number => {
    const model = daemon.admin.snapshot().models.find((m) => m.id === id);
    if (model === undefined) throw new Error(`no model ${id}`);
    return model.estimateBytes.full;
  };
  const onThePrior = priced(A);
  await streamChat(daemon.port, [{ role: 'user', content: 'hello' }], 1);
  // The runtime is learned a moment after A's server is ready (its RSS read, or on a GPU the
  // driver's figure for it, asked of nvidia-smi), perhaps after the answer: a limit priced before
  // it would be priced on the prior (512 MiB for a GPU context, which may be more than a card's),
  // and could hold both models. Where it is never learned, the prior's prices stand.
  for (let waited = 0; priced(A) === onThePrior && waited < LEARN_WAIT_MS; waited += 50) await new Promise((resolve) => setTimeout(resolve, 50));
  const limit = Math.max(priced(A), priced(B)) + Math.floor(Math.min(priced(A), priced(B)) / 2);
  await writeFile(configPath, configText(engine, saving, setup, limit, llamaServer));
  for (let waited = 0; daemon.admin.snapshot().budget.limitBytes !== limit; waited += 50) {
    if (waited > 30_000) throw new Error(`the daemon did not take the limit of ${limit} bytes from its config`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { saving, daemon, log, rounds: new Map() };
}

/** One run of `setup.label` as A on one engine: the daemons, one unmeasured round at the first size, then `rounds` at each size. */
export interface ReturnRun {
  engine: ReturnEngine;
  label: string;
  ctx: number;
  threads: number;
  rounds: number;
  /** Printing each round as it ends: the real shapes' take minutes. */
  verbose: boolean;
  paths: { chat: string; tiny: string };
  sizes: readonly number[];
  /** A's and B's layers on the GPU: 0 here; gpu-check's every one. */
  gpuLayers: number;
}

/** The context a run at these sizes needs: the largest conversation, its answer and the new turn. */
export function contextFor(sizes: readonly number[]): number {
  return sizes.some((tokens) => tokens > DEMO_TOKENS) ? REAL_CTX : DEMO_CTX;
}

/** demo-chat as A, 1 thread, quietly: the tables the benchmark has always printed. */
export function demoChatRun(engine: ReturnEngine, paths: ReturnRun['paths'], rounds: number, sizes: readonly number[] = [DEMO_TOKENS], gpuLayers = 0): ReturnRun {
  return { engine, label: 'demo-chat', ctx: contextFor(sizes), threads: 1, rounds, verbose: false, paths, sizes, gpuLayers };
}

/** A real-shape model as A, round by round aloud. Two threads, as the engine race runs the real shapes: one would make each uncached 8,000-token prefill twice as long. */
export function realShapeRun(engine: ReturnEngine, label: string, paths: ReturnRun['paths'], rounds: number, sizes: readonly number[] = REAL_TOKENS, gpuLayers = 0): ReturnRun {
  return { engine, label, ctx: contextFor(sizes), threads: 2, rounds, verbose: true, paths, sizes, gpuLayers };
}

/** The engines a run compares: the embedded engine, and llama-server (with its path) when LLMTRAY_LLAMA_SERVER or the checkout's build names one. */
export function returnEngines(): { engine: ReturnEngine; llamaServer: string | null }[] {
  const binary = llamaServerPath();
  return [{ engine: 'embedded', llamaServer: null }, ...(binary === null ? [] : [{ engine: 'llama-server' as const, llamaServer: binary }])];
}

/** Runs `run` (two daemons, saving and not) and prints its table at each size. */
export async function benchReturningConversation(run: ReturnRun, llamaServer: string | null): Promise<void> {
  const { engine } = run;
  const setupAt = (tokens: number): Setup => ({ label: run.label, paths: run.paths, ctx: run.ctx, tokens, rounds: run.rounds, gpuLayers: run.gpuLayers });
  const daemons: Daemon[] = [];
  const report: EngineReport = { step: 'other', saveMs: [], restoreMs: [], said: [] };
  const stopListening = listenToEngines(report);
  await waitForQuietIfAsked();
  const loadBefore = machineLoad().label;
  try {
    for (const saving of [true, false]) daemons.push(await startOne(engine, saving, setupAt(run.sizes[0] ?? DEMO_TOKENS), run.threads, llamaServer));
    // Round 0 (at the first size) warms the page cache and the engines' first allocations.
    const plan: { tokens: number; measured: boolean }[] = [{ tokens: run.sizes[0] ?? DEMO_TOKENS, measured: false }];
    for (const tokens of run.sizes) for (let r = 0; r < run.rounds; r++) plan.push({ tokens, measured: true });
    for (const [r, step] of plan.entries()) {
      const order = r % 2 === 0 ? daemons : [...daemons].reverse();
      for (const d of order) {
        const round = await oneRound(d.daemon, engine, setupAt(step.tokens), r, report);
        if (run.verbose) console.log(`  (${run.label}, ${engine}, ${d.saving ? 'saved' : 'not saved'}, ${step.measured ? `~${step.tokens} tokens` : 'warm-up'}: round took ${fixed(round.roundMs / 1000, 1)} s; its first, uncached answer's first token ${fixed(round.firstMs / 1000, 1)} s; ${machineLoad().label})`);
        if (!step.measured) continue;
        const rounds = d.rounds.get(step.tokens) ?? [];
        rounds.push(round);
        d.rounds.set(step.tokens, rounds);
      }
    }
  } catch (error) {
    for (const d of daemons) console.error(d.log.slice(-20).join('\n'));
    throw error;
  } finally {
    stopListening();
    for (const d of daemons) await d.daemon.stop();
  }
  const loadAfter = machineLoad().label;
  const [on, off] = daemons;
  if (on === undefined || off === undefined) return;
  for (const tokens of run.sizes) printSize(run, tokens, on, off, `${loadBefore} before, ${loadAfter} after`);
}

function printSize(run: ReturnRun, tokens: number, on: Daemon, off: Daemon, load: string): void {
  const roundsOf = (d: Daemon): Round[] => d.rounds.get(tokens) ?? [];
  const med = (d: Daemon, pick: (r: Round) => number): number => median(roundsOf(d).map(pick));
  const ratio = med(on, (r) => r.returnMs) / med(off, (r) => r.returnMs);
  const saveCost = med(on, (r) => r.swapMs) - med(off, (r) => r.swapMs);
  const layers = run.gpuLayers === 0 ? '' : `, gpuLayers ${run.gpuLayers}`;
  console.log(`### ${run.engine}: a returning conversation after a swap (${run.label} ⇄ demo-tiny, ~${tokens} prompt tokens, ctx ${run.ctx}, ${run.threads} thread${run.threads === 1 ? '' : 's'}${layers}, a budget that holds one; ${run.rounds} rounds; ${load}; ms)`);
  console.log(`  save in it: the "saved … in N ms" for A's slot inside the swap; restore: the "restored … in N ms" before the return's prefill (embedded: the engine's output; llama-server: A's log in the daemon; – where none)`);
  console.log(`  cache_n, prompt_n, prompt_ms: the return's own timings from the engine (prompt tokens taken from the cache, evaluated, and the prompt's time in the engine: the tail's prefill)`);
  const rows = (d: Daemon): string[][] =>
    roundsOf(d).map((r, i) => [
      d.saving ? 'saved' : 'not saved', String(i + 1), fixed(r.swapMs, 1), fixed(r.saveMs, 0), fixed(r.swapBackMs, 1), fixed(r.restoreMs, 0), fixed(r.returnMs, 1), String(r.promptTokens), String(r.cachedTokens),
      fixed(r.cacheN, 0), fixed(r.promptN, 0), fixed(r.promptMs, 1),
    ]);
  const medianRow = (d: Daemon): string[] => [
    `median, ${d.saving ? 'saved' : 'not saved'}`, '', fixed(med(d, (r) => r.swapMs), 1), fixed(med(d, (r) => r.saveMs), 0), fixed(med(d, (r) => r.swapBackMs), 1), fixed(med(d, (r) => r.restoreMs), 0), fixed(med(d, (r) => r.returnMs), 1),
    fixed(med(d, (r) => r.promptTokens), 0), fixed(med(d, (r) => r.cachedTokens), 0), fixed(med(d, (r) => r.cacheN), 0), fixed(med(d, (r) => r.promptN), 0), fixed(med(d, (r) => r.promptMs), 1),
  ];
  printTable(
    ['conversation', 'round', 'swap A → B', 'save in it', 'swap back', 'restore', 'return: first token', 'prompt tokens', 'cached tokens', 'cache_n', 'prompt_n', 'prompt_ms'],
    [...rows(on), ...rows(off), medianRow(on), medianRow(off)],
  );
  console.log();
  console.log(`return's first token, saved / not saved: ${fixed(100 * ratio, 1)} % (target ≤ ${100 * TARGET_RATIO} %): ${verdict(ratio <= TARGET_RATIO)}`);
  if (!(ratio <= TARGET_RATIO)) {
    // Which step costs what (issue 41, item 4): the saved return's first token, split.
    const returnMs = med(on, (r) => r.returnMs);
    const restoreMs = med(on, (r) => (Number.isNaN(r.restoreMs) ? 0 : r.restoreMs));
    const promptMs = med(on, (r) => r.promptMs);
    console.log(
      `  the saved return's ${fixed(returnMs, 1)} ms (median): restore ${fixed(restoreMs, 0)} ms; the engine's prompt_ms ${fixed(promptMs, 1)} ms (prefill of the tail: ${fixed(med(on, (r) => r.promptN), 0)} tokens evaluated, ${fixed(med(on, (r) => r.cacheN), 0)} taken from the cache); ` +
        `the rest ${fixed(returnMs - restoreMs - promptMs, 1)} ms (the chat template's render and the tokenizing, the daemon's forward, the first token's way back); the uncached return took ${fixed(med(off, (r) => r.returnMs), 1)} ms`,
    );
  }
  console.log(`the save's cost in the swap A → B (median, saved − not saved): ${signed(saveCost, 1)} ms (target ≤ ${TARGET_SAVE_MS} ms): ${verdict(saveCost <= TARGET_SAVE_MS)}`);
  if (!(saveCost <= TARGET_SAVE_MS)) console.log(`  the save itself (its own line, median): ${fixed(med(on, (r) => r.saveMs), 0)} ms inside the swap`);
  // A saved conversation that did not come back is silent to its user: what the engines said of it.
  for (const [i, r] of roundsOf(on).entries()) {
    if (r.cachedTokens > r.promptTokens / 2) continue;
    console.log(`saved round ${i + 1} returned uncached (${r.cachedTokens} cached tokens); the engines said:`);
    for (const line of r.said.length > 0 ? r.said : ['(nothing about conversations)']) console.log(`  ${line}`);
  }
  console.log();
}

/** The first real-shape model LLMTRAY_REAL_SHAPES chooses that is not a mixture of experts (llama-3.2-1b Q4_K_M by default), or null with `none`. */
function realShapeChoice(): { shape: Parameters<typeof realShapeModel>[0]; quant: Parameters<typeof realShapeModel>[1] } | null {
  return chosenRealShapes().find((m) => !m.shape.includes('moe')) ?? null;
}

export async function runReturningConversationBench(): Promise<void> {
  console.log('## A returning conversation after a swap: the saved conversation against none');
  const demoRounds = roundsFromEnv('LLMTRAY_RETURN_ROUNDS', 3);
  const realRounds = roundsFromEnv('LLMTRAY_RETURN_REAL_ROUNDS', 2);
  const models = await benchModels();
  const engines = returnEngines();
  for (const { engine, llamaServer } of engines) await benchReturningConversation(demoChatRun(engine, { chat: models.chat.path, tiny: models.tiny.path }, demoRounds), llamaServer);
  if (engines.length === 1) console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server; the llama-server half is not run)');
  const choice = realShapeChoice();
  if (choice === null) return;
  const model = await realShapeModel(choice.shape, choice.quant);
  for (const { engine, llamaServer } of engines) {
    const started = performance.now();
    await benchReturningConversation(realShapeRun(engine, model.label, { chat: model.path, tiny: models.tiny.path }, realRounds), llamaServer);
    console.log(`(${model.label} on ${engine}: ${fixed((performance.now() - started) / 60_000, 1)} min)`);
    console.log();
  }
}
