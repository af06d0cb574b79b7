// The recovery ladder for real: the controller driving a real Supervisor that runs the real
// embedded engine on a generated demo-chat, with real failures — llama.cpp refusing a KV cache
// that does not fit the address space, and a kill -9 in the middle of a streamed answer.
// Real clock (the degrade step is immediate, a crash retry waits the 1 s backoff): the waits
// are by notification and bounded by the test timeout, never by a sleep.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../core/common/clock.js';
import type { ModelStatus } from '../../core/contracts/model-status.js';
import type { ControllerEvent } from '../../core/contracts/controller-events.js';
import { Controller } from '../../core/controller/controller.js';
import type { Log, ModelDemand } from '../../core/controller/effects.js';
import { LaunchError } from '../../core/engine/failure-classifier.js';
import { EMBEDDED_CAPABILITIES, type LaunchSpec } from '../../core/engine/launch-spec.js';
import { embeddedEntryPath, type EngineCommand } from '../../core/engine/supervisor/engine-command.js';
import { isRunning } from '../../core/engine/supervisor/process-tree.js';
import { Supervisor, type EngineExit } from '../../core/engine/supervisor/supervisor.js';
import { degradedContext } from '../../core/policy/levels.js';
import { demoModels } from '../support/test-models.js';

const GIB = 1024 ** 3;
/** demo-chat's KV cache per token: 8 layers × K and V × 4 KV heads × 64 × 2 bytes (f16). */
const DEMO_CHAT_KV_BYTES_PER_TOKEN = 8 * 2 * 4 * 64 * 2;
/**
 * The address-space limit the engine runs under, and a context that does not fit it at
 * 'full' but does at 'degraded'. Measured: Node with node-llama-cpp and demo-chat loaded
 * peaks at ~1.40 GB of address space at 512 tokens and ~2.03 GB at 65536 (a 512 MiB cache),
 * so the full launch needs ~3.55 GB (a 2 GiB cache) and the degraded one ~2.03 GB: 2.75 GB
 * misses the first by ~0.8 GB and clears the second by ~0.7 GB, both far past run-to-run noise.
 */
const ADDRESS_SPACE_BYTES = 2_750_000_000;
const OOM_CONTEXT = 262_144;

let demoChat: string;
let dataDir: string | undefined;
const cleanups: (() => Promise<void>)[] = [];

beforeAll(async () => {
  if (!existsSync(embeddedEntryPath())) throw new Error(`${embeddedEntryPath()} is missing: run npm run build first (npm test does)`);
  demoChat = (await demoModels()).chat.path;
});
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  if (dataDir !== undefined) await rm(dataDir, { recursive: true, force: true });
  dataDir = undefined;
});

const quietLog: Log = { info: () => {}, warn: () => {}, error: () => {} };
interface Rig {
  supervisor: Supervisor;
  controller: Controller;
  events: ControllerEvent[];
  /** Resolves with the first event (already seen or still to come) that `match` accepts. */
  nextEvent<T extends ControllerEvent>(match: (event: ControllerEvent) => event is T): Promise<T>;
}

/**
 * One pinned model `modelId` on demo-chat, a budget that holds anything, a real supervisor
 * and a running controller wired as the daemon wires them (onExit → serverDied).
 */
async function rig(options: { modelId: string; contextTokens: number; engineCommand: EngineCommand }): Promise<Rig> {
  dataDir = await mkdtemp(join(tmpdir(), 'llmtray-recovery-'));
  const spec: LaunchSpec = {
    modelId: options.modelId,
    engine: 'embedded',
    modelPath: demoChat,
    contextTokens: options.contextTokens,
    gpuLayers: 0,
    threads: 1,
    aliases: [],
    extraArgs: [],
    env: {},
  };
  const supervisor = await Supervisor.start({
    specFor: () => spec,
    engineCommand: () => options.engineCommand,
    footprint: () => 0,
    dataDir,
    stopGraceMs: 2_000,
  });
  cleanups.push(() => supervisor.close());
  const demand: ModelDemand = {
    modelId: options.modelId,
    priority: 0,
    pinned: true,
    wanted: true,
    inFlight: 0,
    estimate: { weightsBytes: 48e6, kvBytesPerToken: DEMO_CHAT_KV_BYTES_PER_TOKEN, contextTokens: options.contextTokens, computeBytes: 0 },
    definitionHash: 'v1',
  };
  const controller = new Controller({
    provider: { read: async () => ({ models: [demand], budgetBytes: 1024 * GIB, hostFreeBytes: 1024 * GIB }) },
    server: supervisor,
    classify: (error) => (error instanceof LaunchError ? error.kind : 'crash'),
    clock: realClock,
    log: quietLog,
  });
  const events: ControllerEvent[] = [];
  const waiters = new Set<(event: ControllerEvent) => void>();
  controller.onEvent((event) => {
    events.push(event);
    for (const waiter of [...waiters]) waiter(event);
  });
  supervisor.onExit((modelId, exit) => controller.serverDied(modelId, exit.kind, exit.reason));
  const stop = new AbortController();
  const running = controller.run(stop.signal);
  cleanups.push(async () => {
    stop.abort();
    await running;
  });
  const nextEvent = <T extends ControllerEvent>(match: (event: ControllerEvent) => event is T): Promise<T> =>
    new Promise((resolve) => {
      const seen = events.find(match);
      if (seen !== undefined) return resolve(seen);
      const waiter = (event: ControllerEvent): void => {
        if (!match(event)) return;
        waiters.delete(waiter);
        resolve(event);
      };
      waiters.add(waiter);
    });
  return { supervisor, controller, events, nextEvent };
}

type LaunchFailed = Extract<ControllerEvent, { type: 'LaunchFailed' }>;
const launchFailed = (event: ControllerEvent): event is LaunchFailed => event.type === 'LaunchFailed';

/** Every status the model published, oldest first. */
function statuses(events: readonly ControllerEvent[], modelId: string): ModelStatus[] {
  return events.flatMap((e) => (e.type === 'ModelStateChanged' && e.modelId === modelId ? [e.status] : []));
}

async function chat(port: number, apiKey: string): Promise<Response> {
  return fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
    method: 'POST',
    headers: { authorization: `Bearer ${apiKey}`, 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hello' }], max_tokens: 4 }),
  });
}

/** Reads a stream to its end; `error` is what cut it off, or null when it ended normally. */
async function drain(reader: ReadableStreamDefaultReader<Uint8Array>): Promise<{ text: string; error: unknown }> {
  const decoder = new TextDecoder();
  let text = '';
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) return { text, error: null };
      text += decoder.decode(value, { stream: true });
    }
  } catch (error) {
    return { text, error };
  }
}

describe('an out-of-memory launch through the controller', () => {
  it("fails at full with llama.cpp's cause, relaunches at degraded, and serves", async () => {
    const { supervisor, controller, events } = await rig({
      modelId: 'big-context',
      contextTokens: OOM_CONTEXT,
      engineCommand: {
        command: 'prlimit',
        args: [`--as=${ADDRESS_SPACE_BYTES}`, process.execPath, embeddedEntryPath()],
        capabilities: EMBEDDED_CAPABILITIES,
      },
    });
    await controller.waitUntilReady('big-context', AbortSignal.timeout(50_000));

    const failures = events.filter(launchFailed);
    expect(failures).toHaveLength(1);
    expect(failures[0]).toMatchObject({ modelId: 'big-context', level: 'full', kind: 'oom', attempts: 1, nextAction: 'degrade' });
    const seen = statuses(events, 'big-context');
    const failed = seen.find((s) => s.state === 'failed');
    expect(failed?.recovery).toMatchObject({ kind: 'oom', attempts: 1, nextAction: 'degrade' });
    expect(failed?.recovery.lastError).toMatch(/failed to allocate buffer for kv cache/);
    expect(failed?.level).toBe('degraded'); // where the ladder goes next
    expect(seen.filter((s) => s.state === 'loading').map((s) => s.level)).toEqual(['full', 'degraded']);

    expect(controller.status('big-context')).toMatchObject({
      state: 'degraded',
      level: 'degraded',
      recovery: { kind: 'none', attempts: 0, nextAction: null, lastError: null },
    });
    const log = supervisor.logs('big-context');
    const starts = log.filter((line) => line.startsWith("── llmtray: starting 'big-context'"));
    expect(starts.map((line) => / -c (\d+) /.exec(line)?.[1])).toEqual([String(OOM_CONTEXT), String(degradedContext(OOM_CONTEXT))]);
    expect(log.filter((line) => /^── llmtray: 'big-context' \(pid \d+\) ended: exit code 1$/.test(line))).toHaveLength(1);

    const endpoint = supervisor.endpointFor('big-context');
    if (endpoint === null) throw new Error('degraded but no endpoint');
    expect(endpoint.level).toBe('degraded');
    const response = await chat(endpoint.port, endpoint.apiKey);
    expect(response.status).toBe(200);
    const body = (await response.json()) as { choices: { message: { role: string; content: string } }[] };
    expect(body.choices[0]?.message.role).toBe('assistant');
  });
});

describe('a ready engine killed mid-stream', () => {
  it('is reported as a crash, retried after the backoff, and ready again on a new process', async () => {
    const { supervisor, controller, events, nextEvent } = await rig({
      modelId: 'victim',
      contextTokens: 4096,
      engineCommand: { command: process.execPath, args: [embeddedEntryPath()], capabilities: EMBEDDED_CAPABILITIES },
    });
    const exits: EngineExit[] = [];
    supervisor.onExit((_modelId, exit) => exits.push(exit));
    await controller.waitUntilReady('victim', AbortSignal.timeout(50_000));
    const first = supervisor.endpointFor('victim');
    if (first === null) throw new Error('ready but no endpoint');

    // A long streamed answer: 4000 tokens of demo-chat on one thread take many seconds, so the
    // kill lands while it is still streaming.
    const response = await fetch(`http://127.0.0.1:${first.port}/v1/completions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${first.apiKey}`, 'content-type': 'application/json' },
      body: JSON.stringify({ prompt: 'Tell a long story', max_tokens: 4000, stream: true }),
    });
    expect(response.status).toBe(200);
    const reader = (response.body ?? new ReadableStream<Uint8Array>()).getReader();
    const firstChunk = await reader.read();
    expect(new TextDecoder().decode(firstChunk.value)).toContain('data: {');
    process.kill(first.pid, 'SIGKILL');
    const streamEnd = await drain(reader);
    expect(streamEnd.error).toBeInstanceOf(Error); // cut off, not finished
    expect(streamEnd.text).not.toContain('[DONE]');

    const failure = await nextEvent(launchFailed);
    expect(exits).toHaveLength(1);
    expect(exits[0]).toMatchObject({ kind: 'crash', signal: 'SIGKILL', exitCode: null, level: 'full' });
    expect(exits[0]?.reason).toMatch(/killed by SIGKILL while serving/);
    expect(failure).toMatchObject({ modelId: 'victim', level: 'full', kind: 'crash', attempts: 1, nextAction: 'retry' });
    expect(failure.error).toBe(exits[0]?.reason);
    const failed = statuses(events, 'victim').find((s) => s.state === 'failed');
    expect(failed?.recovery).toMatchObject({ kind: 'crash', attempts: 1, nextAction: 'retry', nextAttemptAt: failure.at + 1_000 });
    expect(failed?.next).toBe('retrying in 1 s');

    await controller.waitUntilReady('victim', AbortSignal.timeout(50_000));
    const second = supervisor.endpointFor('victim');
    if (second === null) throw new Error('ready again but no endpoint');
    expect(second.pid).not.toBe(first.pid);
    expect(second.apiKey).not.toBe(first.apiKey);
    expect(await isRunning(first.pid)).toBe(false);
    expect(controller.status('victim')).toMatchObject({ state: 'ready', level: 'full', recovery: { kind: 'none', attempts: 0, lastError: null } });
    expect(statuses(events, 'victim').filter((s) => s.state === 'loading')).toHaveLength(2);
    expect((await chat(second.port, second.apiKey)).status).toBe(200);
    expect(events.filter(launchFailed)).toHaveLength(1);
  });
});
