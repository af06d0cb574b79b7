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
import { writeFile } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import { llamaServerPath, roundsFromEnv } from './bench-env.js';
import { performance } from 'node:perf_hooks';
import { startDaemon, type RunningDaemon } from '../../core/daemon.js';
import { createLogger } from '../../core/daemon/logger.js';
import { benchModels, scratchDir } from './bench-models.js';
import { observeSpawns, recordLines } from './engine-process.js';
import { chatBody, timedStream } from './http-client.js';
import { fixed, median, printTable, signed, verdict } from './stats.js';

const A = 'return-chat';
const B = 'return-tiny';
const CTX = 4096;
/** LLMTRAY_RETURN_ROUNDS shortens or lengthens the run; one more runs first, unmeasured. */
const ROUNDS = roundsFromEnv('LLMTRAY_RETURN_ROUNDS', 3);
const TARGET_RATIO = 0.1;
const TARGET_SAVE_MS = 20;
/** A limit above any machine's memory: none, while the daemon learns its engine's runtime. */
const UNLIMITED_BYTES = 2 ** 50;

type Engine = 'embedded' | 'llama-server';

function configText(engine: Engine, saving: boolean, paths: { chat: string; tiny: string }, limitBytes: number, llamaServer: string | null): string {
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
    ctx: ${CTX}
    gpuLayers: 0
    engine: ${engine}
  - id: ${B}
    path: ${JSON.stringify(paths.tiny)}
    ctx: 2048
    gpuLayers: 0
    engine: ${engine}
`;
}

type Message = { role: 'system' | 'user' | 'assistant'; content: string };

/** About 1,500 prompt tokens (the demo vocabulary spells nearly a token a character; the answer's prompt_tokens says exactly), opened by `round`'s own words. */
function conversation(round: number): Message[] {
  return [
    { role: 'system', content: `Conversation number ${round}. You are a careful assistant who keeps notes. ${'Remember the list: alpha beta gamma delta epsilon zeta eta theta iota kappa. '.repeat(6)}` },
    { role: 'user', content: `Here is what I wrote today: ${'the quick brown fox jumps over the lazy dog '.repeat(10)}` },
    { role: 'assistant', content: `I have read it. ${'The fox jumped and the dog lay still. '.repeat(4)}` },
    { role: 'user', content: `And more: ${'a journey of a thousand miles begins with a single step '.repeat(3)} What do you make of it?` },
  ];
}

interface Streamed {
  startedAt: number;
  firstTokenAt: number;
  endedAt: number;
  text: string;
  promptTokens: number;
  cachedTokens: number;
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
          const event = JSON.parse(line.slice('data: '.length)) as { choices?: { delta?: { content?: string } }[]; usage?: typeof usage };
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
        else done({ startedAt, firstTokenAt, endedAt, text, promptTokens: usage.prompt_tokens, cachedTokens: usage.prompt_tokens_details?.cached_tokens ?? 0 });
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

async function oneRound(daemon: RunningDaemon, round: number, report: EngineReport): Promise<Round> {
  const port = daemon.port;
  const messages = conversation(round);
  report.saveMs = [];
  report.restoreMs = [];
  report.said = [];
  report.step = 'other';
  const first = await streamChat(port, messages, 8);
  // A's slot goes idle now: a save reported from here to B's answer is inside the swap.
  report.step = 'swap';
  const toB = await timedStream(false, { port: daemon.port }, '/v1/chat/completions', chatBody(B, true, 4));
  // A budget that held both would measure no swap at all.
  if (daemon.admin.snapshot().models.find((m) => m.id === A)?.upstream != null) throw new Error(`${A} stayed resident beside ${B}: the limit holds both`);
  report.step = 'other';
  const back = await timedStream(false, { port }, '/v1/chat/completions', chatBody(A, true));
  report.step = 'return';
  const returning = await streamChat(port, [...messages, { role: 'assistant', content: first.text }, { role: 'user', content: 'Thank you. Now say it in one word.' }], 4);
  report.step = 'other';
  return {
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
  rounds: Round[];
}

async function startOne(engine: Engine, saving: boolean, paths: { chat: string; tiny: string }, llamaServer: string | null): Promise<Daemon> {
  const dataDir = await scratchDir(`return-${engine}-${saving ? 'saving' : 'off'}`);
  const configPath = join(dataDir, 'config.yaml');
  // First without a limit: the daemon learns the engine's runtime from A's first server
  // (runtime-overhead.ts), which reprices every model — far over the prior for the embedded
  // engine (~170 MiB of RSS beyond the model), and for llama-server its own figure, which no
  // constant here knows. The limit then comes from the prices the daemon shows: each model fits
  // alone, the two together do not, as the daemon itself counts them.
  await writeFile(configPath, configText(engine, saving, paths, UNLIMITED_BYTES, llamaServer));
  const log: string[] = [];
  const daemon = await startDaemon({ configPath, dataDir, port: 0, threads: 1, log: (subsystem) => createLogger(subsystem, (line) => log.push(line)) });
  await streamChat(daemon.port, [{ role: 'user', content: 'hello' }], 1);
  const priced = (id: string): number => {
    const model = daemon.admin.snapshot().models.find((m) => m.id === id);
    if (model === undefined) throw new Error(`no model ${id}`);
    return model.estimateBytes.full;
  };
  const limit = Math.max(priced(A), priced(B)) + Math.floor(Math.min(priced(A), priced(B)) / 2);
  await writeFile(configPath, configText(engine, saving, paths, limit, llamaServer));
  for (let waited = 0; daemon.admin.snapshot().budget.limitBytes !== limit; waited += 50) {
    if (waited > 30_000) throw new Error(`the daemon did not take the limit of ${limit} bytes from its config`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return { saving, daemon, log, rounds: [] };
}

async function benchEngine(engine: Engine, llamaServer: string | null): Promise<void> {
  const models = await benchModels();
  const paths = { chat: models.chat.path, tiny: models.tiny.path };
  const daemons: Daemon[] = [];
  const report: EngineReport = { step: 'other', saveMs: [], restoreMs: [], said: [] };
  const stopListening = listenToEngines(report);
  try {
    for (const saving of [true, false]) daemons.push(await startOne(engine, saving, paths, llamaServer));
    for (let r = 0; r <= ROUNDS; r++) {
      const order = r % 2 === 0 ? daemons : [...daemons].reverse();
      for (const d of order) {
        const round = await oneRound(d.daemon, r, report);
        // Round 0 warms the page cache and the engines' first allocations.
        if (r > 0) d.rounds.push(round);
      }
    }
  } catch (error) {
    for (const d of daemons) console.error(d.log.slice(-20).join('\n'));
    throw error;
  } finally {
    stopListening();
    for (const d of daemons) await d.daemon.stop();
  }
  const [on, off] = daemons;
  if (on === undefined || off === undefined) return;
  const med = (d: Daemon, pick: (r: Round) => number): number => median(d.rounds.map(pick));
  const ratio = med(on, (r) => r.returnMs) / med(off, (r) => r.returnMs);
  const saveCost = med(on, (r) => r.swapMs) - med(off, (r) => r.swapMs);
  console.log(`### ${engine}: a returning conversation after a swap (demo-chat ⇄ demo-tiny, ctx ${CTX}, 1 thread, a budget that holds one; ${ROUNDS} rounds; ms)`);
  console.log(`  save in it: the engine's own "saved … in N ms" for A's slot inside the swap; restore: its "restored … in N ms" before the return's prefill (embedded only; – where none)`);
  const rows = (d: Daemon): string[][] =>
    d.rounds.map((r, i) => [d.saving ? 'saved' : 'not saved', String(i + 1), fixed(r.swapMs, 1), fixed(r.saveMs, 0), fixed(r.swapBackMs, 1), fixed(r.restoreMs, 0), fixed(r.returnMs, 1), String(r.promptTokens), String(r.cachedTokens)]);
  const medianRow = (d: Daemon): string[] => [
    `median, ${d.saving ? 'saved' : 'not saved'}`, '', fixed(med(d, (r) => r.swapMs), 1), fixed(med(d, (r) => r.saveMs), 0), fixed(med(d, (r) => r.swapBackMs), 1), fixed(med(d, (r) => r.restoreMs), 0), fixed(med(d, (r) => r.returnMs), 1),
    fixed(med(d, (r) => r.promptTokens), 0), fixed(med(d, (r) => r.cachedTokens), 0),
  ];
  printTable(['conversation', 'round', 'swap A → B', 'save in it', 'swap back', 'restore', 'return: first token', 'prompt tokens', 'cached tokens'], [...rows(on), ...rows(off), medianRow(on), medianRow(off)]);
  console.log();
  console.log(`return's first token, saved / not saved: ${fixed(100 * ratio, 1)} % (target ≤ ${100 * TARGET_RATIO} %): ${verdict(ratio <= TARGET_RATIO)}`);
  console.log(`the save's cost in the swap A → B (median, saved − not saved): ${signed(saveCost, 1)} ms (target ≤ ${TARGET_SAVE_MS} ms): ${verdict(saveCost <= TARGET_SAVE_MS)}`);
  // A saved conversation that did not come back is silent to its user: what the engines said of it.
  for (const [i, r] of on.rounds.entries()) {
    if (r.cachedTokens > r.promptTokens / 2) continue;
    console.log(`saved round ${i + 1} returned uncached (${r.cachedTokens} cached tokens); the engines said:`);
    for (const line of r.said.length > 0 ? r.said : ['(nothing about conversations)']) console.log(`  ${line}`);
  }
  console.log();
}

export async function runReturningConversationBench(): Promise<void> {
  console.log('## A returning conversation after a swap: the saved conversation against none');
  await benchEngine('embedded', null);
  const binary = llamaServerPath();
  if (binary === null) {
    console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server; the llama-server half is not run)');
    return;
  }
  await benchEngine('llama-server', binary);
}
