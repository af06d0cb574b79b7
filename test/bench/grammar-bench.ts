// What a JSON-schema grammar costs a generation, on the embedded engine and on llama-server,
// side by side: tokens per second of the same chat request (demo-chat, temperature 0, 64 tokens
// at most) without a response_format and with a json_schema one, which both engines enforce by
// grammar (the embedded engine through node-llama-cpp's createGrammarForJsonSchema, llama-server
// through its own json-schema-to-grammar). Only ratios measured in one run mean anything on a
// shared machine: each round runs the four cases in a rotating order, and the figure is the
// median rate over rounds. The schema is one of an agent's tool calls: an object with a string
// enum, a boolean and an integer, so a random-weight model has choices to make at every step.
import { performance } from 'node:perf_hooks';
import { benchModels } from './bench-models.js';
import { benchSpec, startDirectEngine, type DirectEngine } from './engine-process.js';
import { fixed, median, printTable } from './stats.js';
import { llamaServerPath } from './bench-env.js';

const ROUNDS = 7;
const MAX_TOKENS = 64;
const SCHEMA = {
  type: 'object',
  properties: { city: { type: 'string', enum: ['Paris', 'Oslo', 'Lima', 'Quito'] }, celsius: { type: 'boolean' }, days: { type: 'integer' }, note: { type: 'string' } },
  required: ['city', 'celsius', 'days', 'note'],
  additionalProperties: false,
};

/** One chat request; its completion tokens over its whole time, tokens/s; an engine's refusal as its message. */
async function rate(engine: DirectEngine, grammar: boolean): Promise<number | string> {
  const body = {
    messages: [{ role: 'user', content: 'Plan a trip: which city, in celsius or not, for how many days, and a note.' }],
    max_tokens: MAX_TOKENS,
    temperature: 0,
    ...(grammar ? { response_format: { type: 'json_schema', json_schema: { name: 'trip', strict: true, schema: SCHEMA } } } : {}),
  };
  const started = performance.now();
  const res = await fetch(`http://127.0.0.1:${engine.port}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${engine.apiKey}` },
    body: JSON.stringify(body),
  });
  const answer = (await res.json()) as { usage?: { completion_tokens?: number }; error?: { message?: string } };
  const seconds = (performance.now() - started) / 1000;
  const tokens = answer.usage?.completion_tokens;
  // A refusal is a finding to print, not a crash: llama-server refuses json_schema on the demo models.
  if (res.status === 400) return `refused: ${answer.error?.message ?? 'no message'}`;
  if (!res.ok || tokens === undefined) throw new Error(`grammar bench: ${res.status} ${answer.error?.message ?? JSON.stringify(answer)}`);
  return tokens / seconds;
}

export async function runGrammarBench(): Promise<void> {
  console.log(`## JSON-schema grammar: tokens/s with and without (${ROUNDS} rounds, demo-chat, ${MAX_TOKENS} tokens at most, temperature 0, 1 thread)`);
  const models = await benchModels();
  const engines: { name: string; engine: DirectEngine }[] = [];
  try {
    const embedded = await startDirectEngine(benchSpec('bench-chat', models.chat.path, 2048));
    await embedded.readyLine;
    engines.push({ name: 'embedded', engine: embedded });
    const llamaServer = llamaServerPath();
    if (llamaServer === null) console.log('(no llama-server: set LLMTRAY_LLAMA_SERVER or run npm run build:llama-server for its column)');
    else {
      const server = await startDirectDrivenLlamaServer(models.chat.path, llamaServer);
      engines.push({ name: 'llama-server', engine: server });
    }
    const cases = engines.flatMap(({ name, engine }) => [false, true].map((grammar) => ({ name, engine, grammar })));
    const rates = new Map<string, number[]>(cases.map((c) => [`${c.name}/${c.grammar}`, []]));
    const refusals = new Map<string, string>();
    // One unmeasured round warms each engine and its grammar cache.
    for (const c of cases) await rate(c.engine, c.grammar);
    for (let round = 0; round < ROUNDS; round++) {
      for (let i = 0; i < cases.length; i++) {
        const c = cases[(i + round) % cases.length];
        if (c === undefined) continue;
        const measured = await rate(c.engine, c.grammar);
        if (typeof measured === 'string') refusals.set(`${c.name}/${c.grammar}`, measured);
        else rates.get(`${c.name}/${c.grammar}`)?.push(measured);
      }
    }
    printTable(
      ['engine', 'free tokens/s', 'json_schema tokens/s', 'with grammar / without'],
      engines.map(({ name }) => {
        const free = median(rates.get(`${name}/false`) ?? []);
        const refused = refusals.get(`${name}/true`);
        if (refused !== undefined) return [name, fixed(free, 1), refused, '—'];
        const constrained = median(rates.get(`${name}/true`) ?? []);
        return [name, fixed(free, 1), fixed(constrained, 1), fixed(constrained / free, 2)];
      }),
    );
  } finally {
    for (const { engine } of engines) await engine.stop();
  }
}

/** llama-server on the same model with the supervisor's argv for a llama-server spec. */
async function startDirectDrivenLlamaServer(modelPath: string, binary: string): Promise<DirectEngine> {
  const engine = await startDirectEngine({ ...benchSpec('bench-chat', modelPath, 2048), engine: 'llama-server' }, 'full', binary);
  await engine.readyLine;
  return engine;
}
