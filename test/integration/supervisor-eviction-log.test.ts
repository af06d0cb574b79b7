// The line the supervisor writes in a server's log when an eviction stops it, read by the soak's
// own parser (test/soak/server-log.ts): the soak's "evictions of a claimed server" row counts
// these lines, so a change to their wording must break here, not silently leave the soak with
// no evidence. Against a real process (test/support/fake-engine.mjs), as the soak's are.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { EMBEDDED_CAPABILITIES, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { Supervisor } from '../../core/engine/supervisor/supervisor.js';
import { parseEvictionLine } from '../soak/server-log.js';

const FAKE_ENGINE = fileURLToPath(new URL('../support/fake-engine.mjs', import.meta.url));

let dataDir: string;
let supervisor: Supervisor | null = null;

beforeEach(async () => {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-eviction-log-'));
});
afterEach(async () => {
  await supervisor?.close();
  supervisor = null;
  await rm(dataDir, { recursive: true, force: true });
});

it('an eviction that stops a server logs the requests in flight at that moment; one a claim refused logs nothing', async () => {
  supervisor = await Supervisor.start({
    specFor: (modelId): LaunchSpec => ({ modelId, engine: 'embedded', modelPath: `/models/${modelId}.gguf`, contextTokens: 2048, gpuLayers: 'all', threads: 1, aliases: [], extraArgs: [], env: {} }),
    engineCommand: () => ({ command: process.execPath, args: [FAKE_ENGINE], capabilities: EMBEDDED_CAPABILITIES }),
    footprint: () => 0,
    dataDir,
    stopGraceMs: 1_000,
  });
  await supervisor.launch('busy', 'full');
  const pid = supervisor.status('busy')?.pid;
  const evictions = (): unknown[] => (supervisor?.logs('busy') ?? []).flatMap((line) => parseEvictionLine(line) ?? []);

  const claim = supervisor.claim('busy');
  expect(await supervisor.evict('busy')).toBe('claimed');
  expect(evictions()).toEqual([]);

  claim?.release();
  expect(await supervisor.evict('busy')).toBe('stopped');
  expect(evictions()).toEqual([{ modelId: 'busy', pid, phase: 'ready', inFlight: 0 }]);
});
