// llama.cpp's own request fields on the embedded engine as a real process on a generated model
// (core/engine/embedded/openai/native-fields.ts): cache_prompt, ignore_eos and repeat_last_n
// honoured on every generation path, the others refused by name unless they ask for nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { tinyModel } from '../support/test-models.js';

const KEY = 'test-key-native';

interface Answer {
  choices: { text?: string; message?: { content: string | null }; finish_reason: string }[];
  usage: { prompt_tokens: number; completion_tokens: number; prompt_tokens_details?: { cached_tokens: number } };
  timings?: { cache_n: number; prompt_n: number };
}

const weather = { type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string', enum: ['Paris', 'Oslo'] } }, required: ['city'] } } };

describe('embedded engine: llama.cpp’s own fields', () => {
  let engine: Engine;
  let base: string;
  const auth = { Authorization: `Bearer ${KEY}` };

  beforeAll(async () => {
    engine = startEngine(['-m', await tinyModel(), '-c', '2048', '-np', '1', '-t', '1', '--port', '0', '--api-key', KEY, '--alias', 'tiny']);
    base = `http://127.0.0.1:${await portOf(engine)}`;
    await engine.waitFor(/srv {2}llama_server: model loaded/);
  });

  afterAll(async () => {
    if (engine) await stopEngine(engine);
  });

  const send = (path: string, body: unknown): Promise<Response> => fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
  const answer = async (path: string, body: unknown): Promise<Answer> => {
    const r = await send(path, body);
    expect(r.status, await r.clone().text()).toBe(200);
    return (await r.json()) as Answer;
  };
  const slot0 = async (): Promise<{ n_prompt_tokens: number; n_prompt_tokens_processed: number }> =>
    ((await (await fetch(`${base}/slots`, { headers: auth })).json()) as { n_prompt_tokens: number; n_prompt_tokens_processed: number }[])[0]!;

  it.each([
    ['/v1/completions', { prompt: 'Marmots whistle when a hawk circles the meadow.', max_tokens: 4, temperature: 0 }],
    ['/v1/chat/completions', { messages: [{ role: 'user', content: 'Kestrels hover over the verge at dusk.' }], max_tokens: 4, temperature: 0 }],
  ] as const)('%s with cache_prompt false evaluates a repeated prompt whole; without it, reuses all but its last token', async (path, request) => {
    await answer(path, request);
    const uncached = await answer(path, { ...request, cache_prompt: false });
    const promptTokens = uncached.usage.prompt_tokens;
    expect(uncached.timings).toMatchObject({ cache_n: 0, prompt_n: promptTokens });
    expect(uncached.usage.prompt_tokens_details?.cached_tokens).toBe(0);
    expect(await slot0()).toMatchObject({ n_prompt_tokens: promptTokens, n_prompt_tokens_processed: promptTokens });

    const cached = await answer(path, { ...request, cache_prompt: true });
    expect(cached.timings).toMatchObject({ cache_n: promptTokens - 1, prompt_n: 1 });
    expect(cached.usage.prompt_tokens_details?.cached_tokens).toBe(promptTokens - 1);
    expect(await slot0()).toMatchObject({ n_prompt_tokens_processed: 1 });
  });

  it.each(['auto', 'required'] as const)('with tools (tool_choice %s) and cache_prompt false, counts none of a repeated prompt as cached', async (choice) => {
    const request = { messages: [{ role: 'user', content: `Weather for the ${choice} run?` }], tools: [weather], tool_choice: choice, max_tokens: 8, temperature: 0 };
    await answer('/v1/chat/completions', request);
    const uncached = await answer('/v1/chat/completions', { ...request, cache_prompt: false });
    expect(uncached.usage.prompt_tokens_details?.cached_tokens).toBe(0);
    expect((await slot0()).n_prompt_tokens_processed).toBeGreaterThanOrEqual(uncached.usage.prompt_tokens - 1);
    const cached = await answer('/v1/chat/completions', request);
    expect(cached.usage.prompt_tokens_details?.cached_tokens).toBeGreaterThan(cached.usage.prompt_tokens / 2);
  });

  it('with ignore_eos runs to max_tokens a request that ended at the end-of-sequence token without it', async () => {
    // The generated models keep </s> 20 logits below every printable token (spm-vocab.ts): out
    // of reach at ordinary temperatures, about as likely as any one of the ~190 printable tokens
    // at temperature 100 once no top_k, top_p or min_p cuts it first, so a long answer meets it
    // for nearly every seed.
    const maxTokens = 1500;
    const request = { prompt: 'Once', max_tokens: maxTokens, temperature: 100, top_k: 0, top_p: 1, min_p: 0 };
    let ended: { seed: number; tokens: number } | undefined;
    for (let seed = 1; seed <= 10 && ended === undefined; seed++) {
      const free = await answer('/v1/completions', { ...request, seed });
      if (free.choices[0]?.finish_reason === 'stop') ended = { seed, tokens: free.usage.completion_tokens };
    }
    expect(ended, 'no seed of 10 ended before max_tokens without ignore_eos').toBeDefined();
    expect(ended?.tokens).toBeLessThan(maxTokens);

    const held = await answer('/v1/completions', { ...request, seed: ended?.seed, ignore_eos: true });
    expect(held.choices[0]?.finish_reason).toBe('length');
    expect(held.usage.completion_tokens).toBe(maxTokens);
  });

  it('with repeat_last_n 0 turns the penalties off: the answer is the unpenalised one', async () => {
    const request = { prompt: 'abcabcabc', max_tokens: 48, temperature: 0 };
    const plain = (await answer('/v1/completions', request)).choices[0]?.text;
    const penalised = (await answer('/v1/completions', { ...request, repeat_penalty: 1.8, frequency_penalty: 1.5 })).choices[0]?.text;
    expect(penalised).not.toBe(plain);
    expect((await answer('/v1/completions', { ...request, repeat_penalty: 1.8, frequency_penalty: 1.5, repeat_last_n: 0 })).choices[0]?.text).toBe(plain);
  });

  const chat = { messages: [{ role: 'user', content: 'hi' }], max_tokens: 2 };
  it.each([
    ['mirostat', '/v1/completions', { prompt: 'hi', max_tokens: 2 }, 2, 0],
    ['samplers', '/v1/completions', { prompt: 'hi', max_tokens: 2 }, ['top_k', 'temperature'], ['penalties', 'dry', 'top_n_sigma', 'top_k', 'typ_p', 'top_p', 'min_p', 'xtc', 'temperature']],
    ['grammar', '/v1/chat/completions', chat, 'root ::= "a"', ''],
    ['n_probs', '/v1/chat/completions', chat, 5, 0],
    ['embd_normalize', '/v1/embeddings', { input: 'hi' }, -1, 2],
  ] as const)('refuses %s on %s with a 400 naming it, and takes it at the value that asks for nothing', async (field, path, request, asking, neutral) => {
    const r = await send(path, { ...request, [field]: asking });
    expect(r.status).toBe(400);
    const { error } = (await r.json()) as { error: { param: string; message: string; type: string } };
    expect(error).toMatchObject({ param: field, type: 'invalid_request_error' });
    expect(error.message).toContain(`'${field}'`);
    // With the inert fields beside it, which ask nothing of this engine's answer.
    expect((await send(path, { ...request, [field]: neutral, n_keep: 10, id_slot: 0, response_fields: ['content'], xtc_threshold: 0.2 })).status).toBe(200);
  });
});
