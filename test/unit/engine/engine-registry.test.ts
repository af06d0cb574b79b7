import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { commandLineHash, EngineRegistry } from '../../../core/engine/supervisor/engine-registry.js';

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), 'llmtray-registry-'));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('EngineRegistry', () => {
  it('writes every change to disk, and nothing of the command line but its hash', async () => {
    const registry = new EngineRegistry(join(dir, 'engines.json'));
    const commandLine = 'llama-server -m /m.gguf --api-key 0123456789abcdef';
    await registry.add({ modelId: 'a', pid: 101, commandHash: commandLineHash(commandLine), startedAt: 1 });
    await registry.add({ modelId: 'b', pid: 102, commandHash: 'h', startedAt: 2 });
    await registry.remove(101);
    const text = await readFile(join(dir, 'engines.json'), 'utf8');
    expect(JSON.parse(text).engines.map((e: { pid: number }) => e.pid)).toEqual([102]);
    expect(text).not.toContain('0123456789abcdef');
  });

  it('ends only recorded pids whose live command line matches, then starts empty', async () => {
    const file = join(dir, 'engines.json');
    const ours = 'node engine.js -m /m.gguf --api-key aaa';
    await writeFile(
      file,
      JSON.stringify({
        engines: [
          { modelId: 'orphan', pid: 201, commandHash: commandLineHash(ours), startedAt: 1 },
          { modelId: 'reused', pid: 202, commandHash: commandLineHash('node engine.js --api-key bbb'), startedAt: 1 },
          { modelId: 'gone', pid: 203, commandHash: 'x', startedAt: 1 },
          { modelId: 'unreadable', pid: 204, commandHash: 'y', startedAt: 1 },
        ],
      }),
    );
    const live = new Map<number, string | null>([
      [201, ours],
      [202, '/usr/bin/vim notes.txt'],
      [204, null],
    ]);
    const terminated: number[] = [];
    const registry = new EngineRegistry(file);
    const sweep = await registry.sweepOrphans({
      isRunning: async (pid) => live.has(pid),
      readCommandLine: async (pid) => live.get(pid) ?? null,
      terminate: async (pid) => terminated.push(pid),
    });
    expect(terminated).toEqual([201]);
    expect(sweep.ended.map((r) => r.modelId)).toEqual(['orphan']);
    expect(sweep.leftAlone.map((r) => r.modelId).sort()).toEqual(['reused', 'unreadable']);
    expect(JSON.parse(await readFile(file, 'utf8'))).toEqual({ engines: [] });
  });

  it('treats a missing or torn file as nothing to sweep', async () => {
    const file = join(dir, 'engines.json');
    const deps = { isRunning: async () => true, readCommandLine: async () => null, terminate: async () => undefined };
    expect(await new EngineRegistry(file).sweepOrphans(deps)).toEqual({ ended: [], leftAlone: [] });
    await writeFile(file, '{"engines": [{"modelId": "a", "pi');
    expect(await new EngineRegistry(file).sweepOrphans(deps)).toEqual({ ended: [], leftAlone: [] });
  });
});
