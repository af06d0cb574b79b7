// Reading what the saved conversations hold, per model file, from the folders the store itself
// writes: real files in a temp dir, written through SavedConversations, so that a change of the
// store's layout that the reader does not follow fails here.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ServerEvent } from '../../../core/contracts/server-events.js';
import { watchSavedConversations } from '../../../core/daemon/saved-conversations-view.js';
import { readSavedTotals } from '../../../core/engine/saved-conversations/on-disk.js';
import { SavedConversations, type StateIdentity } from '../../../core/engine/saved-conversations/store.js';

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'llmtray-saved-read-'));
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

function identity(modelPath: string, contextPerSlot = 4096): StateIdentity {
  return { modelPath, modelSize: 1000, modelMtimeMs: 1, modelInode: 7, engineBuild: 'test build', contextPerSlot, kvType: 'f16/f16' };
}

/** A llama.cpp sequence state's head ('ggsq', version 3, the tokens) and `kvBytes` of KV data. */
function stateBytes(tokens: number[], kvBytes: number): Buffer {
  const head = Buffer.alloc(12 + tokens.length * 4);
  head.writeUInt32LE(0x67677371, 0);
  head.writeUInt32LE(3, 4);
  head.writeUInt32LE(tokens.length, 8);
  tokens.forEach((t, i) => head.writeInt32LE(t, 12 + i * 4));
  return Buffer.concat([head, Buffer.alloc(kvBytes, 1)]);
}

async function saveOne(store: SavedConversations, tokens: number[], kvBytes: number): Promise<number> {
  const bytes = stateBytes(tokens, kvBytes);
  const saved = await store.save(tokens.length, (path) => writeFile(path, bytes));
  expect(saved).toBeDefined();
  return bytes.length;
}

const range = (from: number, n: number): number[] => Array.from({ length: n }, (_, i) => from + i);

async function open(modelPath: string, contextPerSlot?: number): Promise<SavedConversations> {
  return SavedConversations.open({ root, identity: identity(modelPath, contextPerSlot), minTokens: 8, budgetBytes: 1024 ** 3, log: () => undefined });
}

describe('readSavedTotals', () => {
  it('counts each model file its saved conversations and their bytes, and all of them in the total', async () => {
    const a = await open('/models/a.gguf');
    const aBytes = (await saveOne(a, range(0, 20), 500)) + (await saveOne(a, range(1000, 30), 700));
    const b = await open('/models/b.gguf');
    const bBytes = await saveOne(b, range(5000, 12), 300);

    const { byModel, total } = await readSavedTotals(root);
    expect(byModel.get('/models/a.gguf')).toEqual({ count: 2, bytes: aBytes });
    expect(byModel.get('/models/b.gguf')).toEqual({ count: 1, bytes: bBytes });
    expect(total).toEqual({ count: 3, bytes: aBytes + bBytes });
  });

  it("follows the store's discard of a changed identity, and counts a folder without an identity in the total only", async () => {
    const small = await open('/models/a.gguf', 2048);
    await saveOne(small, range(0, 20), 100);
    // The model relaunched at another context: its old conversations are gone, not counted.
    const large = await open('/models/a.gguf', 8192);
    const second = await saveOne(large, range(100, 20), 200);
    const stray = join(root, 'no-identity');
    await mkdir(stray);
    await writeFile(join(stray, 'x.state'), Buffer.alloc(50));

    const { byModel, total } = await readSavedTotals(root);
    expect(byModel.get('/models/a.gguf')).toEqual({ count: 1, bytes: second });
    expect(total).toEqual({ count: 2, bytes: second + 50 });
  });

  it('is none for a root that does not exist', async () => {
    const { byModel, total } = await readSavedTotals(join(root, 'never-made'));
    expect(byModel.size).toBe(0);
    expect(total).toEqual({ count: 0, bytes: 0 });
  });
});

describe('watchSavedConversations', () => {
  it('reads the folder again when a server stops, and says it changed', async () => {
    let listener: ((event: ServerEvent) => void) | undefined;
    const view = watchSavedConversations({ root, onServerEvent: (l) => { listener = l; return () => { listener = undefined; }; }, intervalMs: 3_600_000 });
    try {
      await view.refresh();
      expect(view.forModel('/models/a.gguf')).toEqual({ count: 0, bytes: 0 });
      const a = await open('/models/a.gguf');
      const bytes = await saveOne(a, range(0, 20), 400);
      // Nothing read yet: the view reads on a server's end, not on each ask.
      expect(view.forModel('/models/a.gguf')).toEqual({ count: 0, bytes: 0 });
      const changed = new Promise<void>((resolve) => view.onDidChange(resolve));
      listener?.({ type: 'ServerStopped', modelId: 'a', level: 'full', pid: 1, at: 0 });
      await changed;
      expect(view.forModel('/models/a.gguf')).toEqual({ count: 1, bytes });
      expect(view.totalBytes()).toBe(bytes);
    } finally {
      view.close();
    }
    expect(listener).toBeUndefined();
  });
});
