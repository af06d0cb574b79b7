// The embedded engine as a real child process from dist/, talking real HTTP on 127.0.0.1,
// serving real generated GGUF models, driven by the official openai client.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { portOf, startEngine, stopEngine, type Engine } from '../support/embedded-engine-process.js';
import { corruptModel, demoModels, modelWithShape, tinyDraftModel, tinyModel, TINY_SHAPE } from '../support/test-models.js';

const PRINTABLE_ASCII = /^[\x20-\x7e]*$/;
const KEY = 'test-key-1234';

describe('embedded engine serving a tiny model with two slots', () => {
  let engine: Engine;
  let base: string;
  let client: OpenAI;
  let firstHealth: { status: number; body: Record<string, unknown> };
  const auth = { Authorization: `Bearer ${KEY}` };

  beforeAll(async () => {
    engine = startEngine(['-m', await tinyModel(), '-c', '4096', '-np', '2', '-t', '1', '--port', '0', '--api-key', KEY, '--alias', 'tiny']);
    base = `http://127.0.0.1:${await portOf(engine)}`;
    const r = await fetch(`${base}/health`);
    firstHealth = { status: r.status, body: (await r.json()) as Record<string, unknown> };
    await engine.waitFor(/srv {2}llama_server: model loaded/);
    client = new OpenAI({ baseURL: `${base}/v1`, apiKey: KEY, maxRetries: 0 });
  });
  afterAll(async () => {
    if (engine) await stopEngine(engine);
  });

  it('answers /health with 503 and progress while loading, then 200', async () => {
    expect(firstHealth.status).toBe(503);
    expect(firstHealth.body['error']).toEqual({ code: 503, message: 'Loading model', type: 'unavailable_error' });
    expect(firstHealth.body['progress']).toBeGreaterThanOrEqual(0);
    expect(firstHealth.body['progress']).toBeLessThanOrEqual(1);
    const r = await fetch(`${base}/health`);
    expect(r.status).toBe(200);
    expect(await r.json()).toEqual({ status: 'ok' });
    expect(engine.stderr()).toMatch(/main: server is listening on http:\/\/127\.0\.0\.1:\d+ - starting the main loop/);
    expect(engine.stderr()).toMatch(/n_slots = 2, n_ctx_slot = 2048/);
  });

  it('refuses every endpoint but /health without the key, in OpenAI error shape', async () => {
    for (const [method, path] of [['GET', '/v1/models'], ['POST', '/v1/chat/completions'], ['GET', '/slots'], ['GET', '/metrics']] as const) {
      const r = await fetch(`${base}${path}`, { method, headers: { Authorization: 'Bearer wrong' }, ...(method === 'POST' ? { body: '{}' } : {}) });
      expect(r.status).toBe(401);
      expect(await r.json()).toEqual({ error: { code: 401, message: 'Invalid API Key', type: 'authentication_error' } });
    }
    await expect(new OpenAI({ baseURL: `${base}/v1`, apiKey: 'nope', maxRetries: 0 }).models.list()).rejects.toMatchObject({ status: 401 });
  });

  it('lists the model under its alias', async () => {
    const models = await client.models.list();
    expect(models.data.map((m) => m.id)).toEqual(['tiny']);
  });

  it('chats without streaming: printable text, max_tokens honoured, usage counted', async () => {
    const r = await client.chat.completions.create({ model: 'tiny', messages: [{ role: 'user', content: 'Say something.' }], max_tokens: 24, temperature: 0 });
    const text = r.choices[0]?.message.content ?? '';
    expect(PRINTABLE_ASCII.test(text)).toBe(true);
    expect(r.choices[0]?.finish_reason).toBe('length');
    expect(r.usage?.completion_tokens).toBe(24);
    expect(r.usage?.prompt_tokens).toBeGreaterThan(5);
    expect(r.model).toBe('tiny');
  });

  it('streams chat with the same text as without streaming', async () => {
    const request = { model: 'tiny', messages: [{ role: 'user' as const, content: 'Stream please.' }], max_tokens: 30, temperature: 0 };
    const whole = await client.chat.completions.create(request);
    const stream = await client.chat.completions.create({ ...request, stream: true, stream_options: { include_usage: true } });
    let text = '';
    let finish: string | null | undefined;
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      text += chunk.choices[0]?.delta.content ?? '';
      finish = chunk.choices[0]?.finish_reason ?? finish;
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(whole.choices[0]?.message.content);
    expect(finish).toBe('length');
    expect(usage?.completion_tokens).toBe(30);
  });

  it('completes text, stops at a stop string, and repeats itself for the same seed', async () => {
    const base = { model: 'tiny', prompt: 'Once upon a time', max_tokens: 40, temperature: 0 };
    const free = (await client.completions.create(base)).choices[0]?.text ?? '';
    expect(free.length).toBeGreaterThan(10);
    const stop = free.slice(10, 12);
    const stopped = await client.completions.create({ ...base, stop: [stop] });
    expect(stopped.choices[0]?.text).toBe(free.slice(0, free.indexOf(stop)));
    expect(stopped.choices[0]?.finish_reason).toBe('stop');

    const sampled = { ...base, temperature: 1.5, top_p: 1, seed: 1234 };
    const a = (await client.completions.create(sampled)).choices[0]?.text;
    const b = (await client.completions.create(sampled)).choices[0]?.text;
    expect(a).toBe(b);
    expect(PRINTABLE_ASCII.test(a ?? '')).toBe(true);
  });

  it('streams completions', async () => {
    const stream = await client.completions.create({ model: 'tiny', prompt: 'abc', max_tokens: 12, stream: true, temperature: 0 });
    const parts: string[] = [];
    for await (const chunk of stream) parts.push(chunk.choices[0]?.text ?? '');
    expect(parts.join('')).toBe((await client.completions.create({ model: 'tiny', prompt: 'abc', max_tokens: 12, temperature: 0 })).choices[0]?.text);
  });

  it('embeds text', async () => {
    const r = await client.embeddings.create({ model: 'tiny', input: ['hello', 'world'] });
    expect(r.data).toHaveLength(2);
    expect(r.data[0]?.embedding).toHaveLength(TINY_SHAPE.nEmbd);
    expect(r.data[0]?.embedding).not.toEqual(r.data[1]?.embedding);
  });

  it('counts a chat prompt as a chat completion pays for it: /apply-template renders it, /tokenize with add_special counts it', async () => {
    const post = async (path: string, body: unknown): Promise<Record<string, unknown>> => {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      expect(r.status, path).toBe(200);
      return (await r.json()) as Record<string, unknown>;
    };
    const conversations = [
      [{ role: 'user', content: 'hi' }],
      [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: ' a leading space, émoji 🎉' },
        { role: 'assistant', content: 'two  spaces' },
        { role: 'user', content: 'x' },
      ],
    ] as const;
    for (const messages of conversations) {
      const { prompt } = await post('/apply-template', { messages });
      expect(typeof prompt).toBe('string');
      for (const message of messages) expect(prompt).toContain(message.content);
      const counted = (await post('/tokenize', { content: prompt, add_special: true }))['tokens'] as number[];
      const chat = await client.chat.completions.create({ model: 'tiny', messages: [...messages], max_tokens: 1 });
      expect(counted.length).toBe(chat.usage?.prompt_tokens);
      // add_special is the beginning of the sequence, and only that.
      const plain = (await post('/tokenize', { content: prompt }))['tokens'] as number[];
      expect(counted.slice(1)).toEqual(plain);
    }
    // llama-server's "mixed" content: token ids pass as they are, text is tokenized.
    const ids = (await post('/tokenize', { content: 'ab' }))['tokens'] as number[];
    expect((await post('/tokenize', { content: [7, 'ab'] }))['tokens']).toEqual([7, ...ids]);
  });

  it("prompts with the model's own chat template, as llama-server renders it", async () => {
    const r = await fetch(`${base}/apply-template`, {
      method: 'POST',
      headers: auth,
      body: JSON.stringify({ messages: [{ role: 'system', content: 'Be brief.' }, { role: 'user', content: 'hi' }, { role: 'assistant', content: 'yo' }, { role: 'user', content: 'again' }] }),
    });
    expect(((await r.json()) as { prompt: string }).prompt).toBe(
      '<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nhi<|im_end|>\n<|im_start|>assistant\nyo<|im_end|>\n<|im_start|>user\nagain<|im_end|>\n<|im_start|>assistant\n',
    );
  });

  it('refuses a /tokenize or /apply-template it cannot honour with 400 naming the field', async () => {
    for (const [path, body, field] of [
      ['/tokenize', { content: 5 }, 'content'],
      ['/tokenize', { content: 'x', with_pieces: true }, 'with_pieces'],
      ['/tokenize', { content: 'x', add_special: 'yes' }, 'add_special'],
      ['/apply-template', { messages: [] }, 'messages'],
    ] as const) {
      const r = await fetch(`${base}${path}`, { method: 'POST', headers: auth, body: JSON.stringify(body) });
      expect(r.status, `${path} ${JSON.stringify(body)}`).toBe(400);
      expect(((await r.json()) as { error: { message: string } }).error.message).toContain(`'${field}'`);
    }
  });

  it('rejects a bad request with 400 naming the field', async () => {
    await expect(client.chat.completions.create({ model: 'tiny', messages: [] })).rejects.toMatchObject({ status: 400 });
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ prompt: 'x', temperature: 'hot' }) });
    expect(r.status).toBe(400);
    expect(((await r.json()) as { error: { message: string } }).error.message).toMatch(/'temperature' must be a number/);
  });

  it('serves two requests at once on two slots, and counts decoded tokens', async () => {
    const before = await (await fetch(`${base}/metrics`, { headers: auth })).text();
    const predicted = (t: string) => Number(t.match(/^llamacpp:tokens_predicted_total (\d+)$/m)?.[1]);
    const [a, b] = await Promise.all([0, 1].map((i) => client.completions.create({ model: 'tiny', prompt: `parallel ${i}`, max_tokens: 50, temperature: 0 })));
    expect(a?.usage?.completion_tokens).toBe(50);
    expect(b?.usage?.completion_tokens).toBe(50);
    const after = await (await fetch(`${base}/metrics`, { headers: auth })).text();
    expect(predicted(after) - predicted(before)).toBe(100);
    const slots = (await (await fetch(`${base}/slots`, { headers: auth })).json()) as { id: number; n_decoded: number; is_processing: boolean }[];
    expect(slots.map((s) => [s.id, s.n_decoded, s.is_processing])).toEqual([[0, 50, false], [1, 50, false]]);
  });

  it('stops generating when the client disconnects', async () => {
    const controller = new AbortController();
    const r = await fetch(`${base}/v1/completions`, {
      method: 'POST', headers: auth, signal: controller.signal,
      body: JSON.stringify({ prompt: 'long story', max_tokens: 1500, stream: true, temperature: 0 }),
    });
    const reader = r.body!.getReader();
    await reader.read();
    controller.abort();
    // Looked at until the slots are idle, however long a busy machine takes: an engine that
    // ignored the disconnect is idle too once it has decoded all 1500, which the count tells.
    let slots: { is_processing: boolean; n_decoded: number }[];
    for (;;) {
      slots = (await (await fetch(`${base}/slots`, { headers: auth })).json()) as typeof slots;
      if (slots.every((s) => !s.is_processing)) break;
      await new Promise((resolve) => setTimeout(resolve, 25));
    }
    expect(Math.max(...slots.map((s) => s.n_decoded))).toBeLessThan(1500);
  });

  it('exits with code 0 on SIGTERM', async () => {
    engine.child.kill('SIGTERM');
    expect(await engine.exited).toEqual({ code: 0, signal: null });
  });
});

describe('embedded engine with its key in a file (--api-key-file)', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'llmtray-keyfile-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('reads the key from the file and requires it, as with --api-key', async () => {
    const keyFile = join(dir, 'engine.key');
    // llama-server's format: '#' comments and blank lines around the key are skipped.
    await writeFile(keyFile, '# per-launch key\n\n  file-key-5678  \n', { mode: 0o600 });
    const engine = startEngine(['-m', await tinyModel(), '-c', '512', '-t', '1', '--port', '0', '--api-key-file', keyFile]);
    try {
      const url = `http://127.0.0.1:${await portOf(engine)}`;
      await engine.waitFor(/srv {2}llama_server: model loaded/);
      expect((await fetch(`${url}/health`)).status).toBe(200);
      expect((await fetch(`${url}/v1/models`)).status).toBe(401);
      expect((await fetch(`${url}/v1/models`, { headers: { Authorization: 'Bearer # per-launch key' } })).status).toBe(401);
      const models = await fetch(`${url}/v1/models`, { headers: { Authorization: 'Bearer file-key-5678' } });
      expect(models.status).toBe(200);
      const chat = await new OpenAI({ baseURL: `${url}/v1`, apiKey: 'file-key-5678', maxRetries: 0 }).chat.completions.create({
        model: 'm', messages: [{ role: 'user', content: 'hi' }], max_tokens: 3,
      });
      expect(chat.choices[0]?.message.role).toBe('assistant');
    } finally {
      await stopEngine(engine);
    }
  });

  it('exits 1 before loading when the key file is missing, holds no key or two, or comes with --api-key', async () => {
    const empty = join(dir, 'empty.key');
    const two = join(dir, 'two.key');
    await writeFile(empty, '# nothing here\n\n');
    await writeFile(two, 'first\nsecond\n');
    const cases: [string[], RegExp][] = [
      [['--api-key-file', join(dir, 'absent.key')], /error: --api-key-file: cannot read .*absent\.key: ENOENT/],
      [['--api-key-file', empty], /error: --api-key-file: .*empty\.key holds 0 keys; the embedded engine takes exactly one/],
      [['--api-key-file', two], /error: --api-key-file: .*two\.key holds 2 keys/],
      [['--api-key-file', two, '--api-key', 'k'], /error: give --api-key or --api-key-file, not both/],
    ];
    for (const [flags, message] of cases) {
      const engine = startEngine(['-m', 'never-loaded.gguf', '--port', '0', ...flags]);
      expect((await engine.exited).code).toBe(1);
      expect(engine.stderr()).toMatch(message);
      expect(engine.stderr()).not.toMatch(/HTTP server is listening/);
    }
  });
});

describe('embedded engine with a draft model', () => {
  it('gives the same greedy text as without the draft', async () => {
    const request = { model: 'm', prompt: 'Speculate about this', max_tokens: 100, temperature: 0 };
    const texts: string[] = [];
    for (const extra of [[], ['-md', await tinyDraftModel()]]) {
      const engine = startEngine(['-m', await tinyModel(), '-c', '1024', '-t', '1', '--port', '0', ...extra]);
      try {
        const port = await portOf(engine);
        await engine.waitFor(/srv {2}llama_server: model loaded/);
        const r = await new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey: 'none', maxRetries: 0 }).completions.create(request);
        texts.push(r.choices[0]?.text ?? '');
        if (extra.length) {
          expect(engine.stderr()).toMatch(/speculative = draft \(1 token\)/);
          const slots = (await (await fetch(`http://127.0.0.1:${port}/slots`)).json()) as { draft: { validated: number } }[];
          expect(slots[0]?.draft.validated).toBeGreaterThan(0);
        }
      } finally {
        await stopEngine(engine);
      }
    }
    expect(PRINTABLE_ASCII.test(texts[1] ?? '')).toBe(true);
    expect(texts[1]).toBe(texts[0]);
    expect(texts[0]?.length).toBeGreaterThan(20);
  });
});

describe('embedded engine evaluating a long prompt', () => {
  // demo-chat's size: one thread evaluates a 512-token batch of it in a few hundred ms at
  // best, so a ~2000-token prompt spends seconds in four batches before its first token,
  // and 100 ms polls see every batch on an idle machine and more polls on a loaded one.
  const PROMPT_SHAPE = { name: 'test-prompt-progress', nLayer: 8, nEmbd: 512, nHead: 8, nHeadKv: 4, nFf: 1408, contextLength: 4096, fileType: 'f16', seed: 11 } as const;
  const prompt = Array.from({ length: 300 }, (_, i) => `word${i % 97}`).join(' ');
  type SlotView = { is_processing: boolean; n_prompt_tokens: number; n_prompt_tokens_processed: number; n_decoded: number };
  let engine: Engine;
  let base: string;
  const auth = { Authorization: `Bearer ${KEY}` };
  const slot0 = async (): Promise<SlotView> => ((await (await fetch(`${base}/slots`, { headers: auth })).json()) as SlotView[])[0]!;
  const promptTokensTotal = async (): Promise<number> =>
    Number((await (await fetch(`${base}/metrics`, { headers: auth })).text()).match(/^llamacpp:prompt_tokens_total (\d+)$/m)?.[1]);
  const complete = async (): Promise<OpenAI.Completion> => {
    const r = await fetch(`${base}/v1/completions`, { method: 'POST', headers: auth, body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0 }) });
    return (await r.json()) as OpenAI.Completion;
  };

  beforeAll(async () => {
    engine = startEngine(['-m', await modelWithShape(PROMPT_SHAPE), '-c', '4096', '-np', '1', '-t', '1', '--port', '0', '--api-key', KEY]);
    base = `http://127.0.0.1:${await portOf(engine)}`;
    await engine.waitFor(/srv {2}llama_server: model loaded/);
  });
  afterAll(async () => {
    if (engine) await stopEngine(engine);
  });

  it('shows n_prompt_tokens_processed moving before the first token, then the whole prompt', async () => {
    let answered = false;
    const answer = complete().finally(() => { answered = true; });
    const seen: SlotView[] = [];
    while (!answered) {
      const slot = await slot0();
      // A view that arrived after the answer may show the finished request; only views taken
      // while no answer byte had arrived say anything about evaluation.
      if (!answered) seen.push(slot);
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    const promptTokens = (await answer).usage?.prompt_tokens ?? 0;
    expect(promptTokens).toBeGreaterThan(1536);
    const during = seen.filter((s) => s.is_processing);
    expect(during.every((s) => s.n_prompt_tokens === promptTokens)).toBe(true);
    const processed = during.map((s) => s.n_prompt_tokens_processed);
    expect(processed).toEqual([...processed].sort((a, b) => a - b));
    const partial = new Set(processed.filter((n) => n > 0 && n < promptTokens));
    expect(partial.size, `n_prompt_tokens_processed seen while evaluating: ${processed.join(', ')}`).toBeGreaterThanOrEqual(2);

    expect(await slot0()).toMatchObject({ is_processing: false, n_prompt_tokens: promptTokens, n_prompt_tokens_processed: promptTokens, n_decoded: 1 });
    expect(await promptTokensTotal()).toBe(promptTokens);
  });

  it('evaluates only the last token again when the same prompt comes back (cached prefix)', async () => {
    const before = await promptTokensTotal();
    const promptTokens = (await complete()).usage?.prompt_tokens ?? 0;
    expect(await slot0()).toMatchObject({ n_prompt_tokens: promptTokens, n_prompt_tokens_processed: 1 });
    expect(await promptTokensTotal()).toBe(before + 1);
  });
});

describe('embedded engine failures', () => {
  it('exits 1 with llama.cpp\'s own cause for a corrupt model', async () => {
    const engine = startEngine(['-m', await corruptModel(), '-c', '512', '-t', '1', '--port', '0']);
    expect((await engine.exited).code).toBe(1);
    expect(engine.stderr()).toMatch(/tensor '[^']+' data is not within the file bounds, model is corrupted or incomplete/);
    expect(engine.stderr()).toMatch(/srv {2}llama_server: exiting due to model loading error/);
  });

  it('exits 1 naming an unknown flag', async () => {
    const engine = startEngine(['-m', 'x.gguf', '--flash-everything']);
    expect((await engine.exited).code).toBe(1);
    expect(engine.stderr()).toMatch(/error: invalid argument: --flash-everything/);
  });

  it('fails with llama.cpp\'s allocation error when the context does not fit the address space', async () => {
    // demo-chat at 262144 tokens needs a 2 GiB KV cache. Node with node-llama-cpp loaded
    // reserves about 1.3-1.4 GB of address space on its own, so a 3 GB limit lets the
    // process start and the weights map, and leaves too little for the cache.
    const { chat } = await demoModels();
    const engine = startEngine(['-m', chat.path, '-c', '262144', '-t', '1', '-ngl', '0', '--port', '0'], 3_000_000_000);
    const { code } = await engine.exited;
    expect(code).not.toBe(0);
    expect(engine.stderr()).toMatch(/failed to allocate buffer for kv cache|insufficient memory|failed to allocate/);
  });
});
