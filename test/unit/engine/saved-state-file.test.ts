// The tokens a state file holds, as each engine writes them: node-llama-cpp plain, llama-server
// in its own packing (LLAMA_TOKEN_NULL, version 1, count, tokens, media). Real files in a temp
// dir; the packing as tools/server/server-common.cpp's server_tokens::serialize writes it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CorruptStateFile, readStateTokens } from '../../../core/engine/saved-conversations/state-file.js';

let dir: string;
beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-state-file-'));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** A sequence state: 'ggsq', version 3, the held list, then some KV bytes. */
async function stateFile(name: string, held: number[]): Promise<string> {
  const head = Buffer.alloc(12 + held.length * 4);
  head.writeUInt32LE(0x67677371, 0);
  head.writeUInt32LE(3, 4);
  head.writeUInt32LE(held.length, 8);
  held.forEach((t, i) => head.writeInt32LE(t, 12 + i * 4));
  const path = join(dir, name);
  await writeFile(path, Buffer.concat([head, Buffer.alloc(64, 7)]));
  return path;
}

describe('readStateTokens', () => {
  it("reads node-llama-cpp's plain token list as it is", async () => {
    expect((await readStateTokens(await stateFile('plain.state', [1, 50, 60, 70]))).tokens).toEqual([1, 50, 60, 70]);
  });

  it("reads the conversation inside llama-server's packing, not the packing", async () => {
    // -1, version 1, 3 tokens, then no media (a count of 0).
    const path = await stateFile('packed.state', [-1, 1, 3, 1, 50, 60, 0]);
    expect((await readStateTokens(path)).tokens).toEqual([1, 50, 60]);
  });

  it('refuses a packing of another version, or one that claims more tokens than it holds, by name', async () => {
    await expect(readStateTokens(await stateFile('v2.state', [-1, 2, 1, 5, 0]))).rejects.toThrow(/token packing version 2/);
    await expect(readStateTokens(await stateFile('short.state', [-1, 1, 9, 5, 0]))).rejects.toBeInstanceOf(CorruptStateFile);
  });
});
