// A llama-server's saved conversations: the KV types a saved state is tied to, read from its
// argv as llama.cpp reads it (a state saved under q8_0 and loaded under f16 would be read as the
// wrong bytes), and what restoreFor costs a request: the round trips it makes, and when it stops.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { IDLE_SAVE_DELAY_MS, kvTypeOf, LlamaServerSlots, RESTORE_MISSES_BEFORE_GIVING_UP } from '../../../core/engine/llama-server/saved-slots.js';
import { llamaServerStagingDir } from '../../../core/engine/saved-conversations/on-disk.js';

describe('kvTypeOf', () => {
  it("is llama.cpp's default f16/f16 where the argv names none", () => {
    expect(kvTypeOf(['-m', 'x.gguf', '-c', '2048'])).toBe('f16/f16');
  });

  it('reads both spellings, the last one winning as it does for llama.cpp', () => {
    expect(kvTypeOf(['-ctk', 'q8_0', '--cache-type-v', 'q4_0'])).toBe('q8_0/q4_0');
    expect(kvTypeOf(['--cache-type-k', 'q8_0', '-c', '1', '-ctk', 'f32'])).toBe('f32/f16');
  });
});

// What restoreFor asks of a llama-server: a stand-in on loopback that answers /slots, the save
// and restore actions (writing a state file as llama-server packs it), /apply-template (the
// messages' text joined) and /tokenize (one token per byte, as a byte-level vocabulary would),
// and records every path asked.
describe('LlamaServerSlots.restoreFor against a stand-in llama-server', () => {
  let root: string;
  let server: http.Server;
  let port: number;
  const asked: string[] = [];
  const lines: string[] = [];

  beforeAll(async () => {
    root = await mkdtemp(join(tmpdir(), 'llmtray-saved-slots-'));
    await writeFile(join(root, 'model.gguf'), 'not a real model: only its size and time are read');
    server = http.createServer((req, res) => {
      let raw = '';
      req.on('data', (chunk: Buffer) => (raw += chunk.toString()));
      req.on('end', () => {
        const path = req.url ?? '';
        asked.push(path.split('?')[0] === '/slots/0' ? path : path.split('?')[0] ?? path);
        const body = raw === '' ? {} : (JSON.parse(raw) as Record<string, unknown>);
        const answer = (value: unknown): void => {
          res.writeHead(200, { 'content-type': 'application/json' });
          res.end(JSON.stringify(value));
        };
        if (path === '/slots') return answer([{ id: 0, n_ctx: 2048, is_processing: false, n_prompt_tokens: SAVED.length, id_task: slotTask }]);
        if (path === '/slots/0?action=save') {
          // LLAMA_TOKEN_NULL, packing version 1, the count, the tokens, no media; then KV bytes.
          const packed = [-1, 1, SAVED.length, ...SAVED, 0];
          const head = Buffer.alloc(12 + packed.length * 4);
          head.writeUInt32LE(0x67677371, 0);
          head.writeUInt32LE(3, 4);
          head.writeUInt32LE(packed.length, 8);
          packed.forEach((t, i) => head.writeInt32LE(t, 12 + i * 4));
          void writeFile(join(llamaServerStagingDir(root), String(body['filename'])), Buffer.concat([head, Buffer.alloc(256, 7)])).then(() => answer({ n_saved: SAVED.length }));
          return;
        }
        if (path === '/slots/0?action=restore') return answer({ n_restored: SAVED.length });
        if (path === '/apply-template') return answer({ prompt: ((body['messages'] as { content: string }[]) ?? []).map((m) => m.content).join('') });
        if (path === '/tokenize') return answer({ tokens: [...Buffer.from(String(body['content']))] });
        res.writeHead(404).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(async () => {
    server.closeAllConnections();
    await new Promise((resolve) => server.close(resolve));
    await rm(root, { recursive: true, force: true });
  });

  /** The stand-in slot's last task, as /slots reports it: a new request is a new task. */
  let slotTask = 1;
  /** The saved conversation: 300 tokens, "a" (97) repeated, over the 256 worth a file. */
  const SAVED = Array.from({ length: 300 }, () => 97);
  const chat = (text: string) => ({ messages: [{ role: 'user', content: text }] });

  it('tokenizes no prompt too short to share minTokens, gives up after a run of long misses, and restores what matches', async () => {
    const slots = await LlamaServerSlots.open({ root, modelPath: join(root, 'model.gguf'), buildVersion: 'test', argv: [], port, apiKey: 'k', log: (line) => lines.push(line) });
    if (slots === null) throw new Error(`no slots: ${lines.join('\n')}`);
    await slots.saveAll();
    expect(lines.join('\n')).toMatch(/slot 0: saved 300 tokens/);

    asked.length = 0;
    await slots.restoreFor(chat('a'.repeat(200)));
    // 200 bytes are at most 201 tokens: no /tokenize, and no miss counted.
    expect(asked).toEqual(['/apply-template']);

    asked.length = 0;
    for (let i = 1; i < RESTORE_MISSES_BEFORE_GIVING_UP; i++) await slots.restoreFor(chat('b'.repeat(400)));
    expect(asked.filter((p) => p === '/tokenize')).toHaveLength(RESTORE_MISSES_BEFORE_GIVING_UP - 1);
    // A match before the run is complete is restored.
    asked.length = 0;
    await slots.restoreFor(chat('a'.repeat(400)));
    expect(asked).toEqual(['/apply-template', '/tokenize', '/slots', '/slots/0?action=restore']);
    expect(lines.join('\n')).toMatch(/slot 0: restored 300 of 400 prompt tokens/);
  });

  it('stops asking once that many long prompts in a row shared nothing, and says so', async () => {
    // A fresh server on the same store: the saved conversation is there to restore again.
    const slots = await LlamaServerSlots.open({ root, modelPath: join(root, 'model.gguf'), buildVersion: 'test', argv: [], port, apiKey: 'k', log: (line) => lines.push(line) });
    if (slots === null) throw new Error(`no slots: ${lines.join('\n')}`);
    asked.length = 0;
    for (let i = 0; i < RESTORE_MISSES_BEFORE_GIVING_UP; i++) await slots.restoreFor(chat('c'.repeat(400)));
    expect(asked.filter((p) => p === '/tokenize')).toHaveLength(RESTORE_MISSES_BEFORE_GIVING_UP);
    expect(lines.at(-1)).toMatch(/prompts in a row shared nothing .* not asking again while this server runs/);
    asked.length = 0;
    await slots.restoreFor(chat('a'.repeat(400)));
    expect(asked).toEqual([]);
  });

  it('saves an idle server’s changed slots a moment after its last request, so that the eviction then saves nothing; a busy server is not saved', async () => {
    const slots = await LlamaServerSlots.open({ root, modelPath: join(root, 'model.gguf'), buildVersion: 'test', argv: [], port, apiKey: 'k', log: (line) => lines.push(line) });
    if (slots === null) throw new Error(`no slots: ${lines.join('\n')}`);
    const saves = () => asked.filter((p) => p === '/slots/0?action=save').length;
    asked.length = 0;
    slotTask = 7;
    slots.idle(() => true);
    await vi.waitFor(() => expect(saves()).toBe(1), { timeout: 20_000, interval: 50 });
    // The eviction after it: the slot holds what was saved, so no second save.
    await slots.saveAll();
    expect(saves()).toBe(1);
    expect(lines.at(-1)).toMatch(/slot 0: unchanged since it was saved, nothing to save before the eviction/);
    // Another request (a new task) changed it: the eviction saves it.
    slotTask = 8;
    await slots.saveAll();
    expect(saves()).toBe(2);
    // A request that comes within the moment cancels the idle save; one still idle then is asked again.
    slotTask = 9;
    slots.idle(() => true);
    slots.busy();
    slots.idle(() => false);
    await new Promise((resolve) => setTimeout(resolve, IDLE_SAVE_DELAY_MS * 3));
    expect(saves()).toBe(2);
  });
});
