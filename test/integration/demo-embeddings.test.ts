// `serve --demo` has a model for /v1/embeddings: a retrieval app pointed at the demo with the
// official client (which asks for base64 by default and decodes it) gets real vectors from
// demo-embed, the generated BERT encoder, loaded on demand like any model.
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEMO_EMBED_SHAPE } from '../../core/catalog/demo/demo-models.js';
import { removeDataDir, startDaemonProcess, type DaemonProcess } from '../support/daemon-process.js';

let daemon: DaemonProcess;

beforeAll(async () => {
  daemon = await startDaemonProcess();
});

afterAll(async () => {
  await daemon?.stop();
  if (daemon) await removeDataDir(daemon.dataDir);
});

describe('the demo\'s embedding model', () => {
  it('is listed, and answers the SDK\'s default (base64) request with the same unit vectors as a float one', async () => {
    expect((await daemon.state()).models.map((m) => m.id)).toContain('demo-embed');
    const client = new OpenAI({ baseURL: daemon.endpoint, apiKey: 'unused', maxRetries: 0, timeout: 120_000 });
    const decoded = await client.embeddings.create({ model: 'demo-embed', input: ['hello world', 'retrieval'] });
    const floats = await client.embeddings.create({ model: 'demo-embed', input: ['hello world', 'retrieval'], encoding_format: 'float' });
    expect(decoded.data.map((d) => d.embedding.length)).toEqual([DEMO_EMBED_SHAPE.nEmbd, DEMO_EMBED_SHAPE.nEmbd]);
    for (const [i, item] of decoded.data.entries()) {
      expect(Math.hypot(...item.embedding)).toBeCloseTo(1, 4);
      item.embedding.forEach((v, k) => expect(v).toBeCloseTo(floats.data[i]?.embedding[k] ?? Number.NaN, 5));
    }
    expect(decoded.data[0]?.embedding).not.toEqual(decoded.data[1]?.embedding);
    expect(decoded.usage.prompt_tokens).toBeGreaterThan(0);
  });

  it('refuses a chat, naming it an embedding model, instead of answering garbage', async () => {
    const response = await fetch(`${daemon.endpoint}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'demo-embed', messages: [{ role: 'user', content: 'hi' }] }),
    });
    expect(response.status).toBeGreaterThanOrEqual(400);
    const body = (await response.json()) as { error: { message: string } };
    expect(body.error.message).toMatch(/embedding/i);
  });
});
