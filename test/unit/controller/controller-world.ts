// The controller's test world, shared by the files that test it part by part (reconcile-pass,
// recovery-ladder, move-up, read-model, controller): a recording fake server, a fake desired
// state and a fake clock, wired to a real Controller. No sleeps: time moves only through
// FakeClock.advance, and promise work settles on one event-loop turn.
import { Controller } from '../../../core/controller/index.js';
import type { ModelDemand } from '../../../core/controller/effects.js';
import type { ControllerEvent } from '../../../core/contracts/controller-events.js';
import type { ServerFailureKind } from '../../../core/contracts/server-events.js';
import { footprintAt } from '../../../core/policy/levels.js';
import { FakeClock, settle } from '../../support/fake-clock.js';
import { FakeDesired, RecordingServer, ScriptedLaunchError, type ScriptedFailure } from '../../support/recording-server.js';

export const GiB = 1024 ** 3;

/** A launch failure as the supervisor reports it: the kind and llama.cpp's words. */
export function failure(kind: ServerFailureKind, beforeSpawn = false): ScriptedFailure {
  return { kind, reason: `scripted ${kind} failure`, beforeSpawn };
}

export class RecordingLog {
  readonly lines: { level: 'info' | 'warn' | 'error'; message: string }[] = [];
  info(message: string): void {
    this.lines.push({ level: 'info', message });
  }
  warn(message: string): void {
    this.lines.push({ level: 'warn', message });
  }
  error(message: string): void {
    this.lines.push({ level: 'error', message });
  }
  count(pattern: RegExp): number {
    return this.lines.filter((l) => pattern.test(l.message)).length;
  }
}

/** A wanted model of `gib` GiB at full; smaller-context is a quarter of the KV cache smaller. */
export function model(modelId: string, gib: number, extra: Partial<ModelDemand> = {}): ModelDemand {
  return {
    modelId,
    priority: 0,
    pinned: false,
    wanted: true,
    inFlight: 0,
    estimate: { weightsBytes: gib * GiB, kvBytesPerToken: 0, contextTokens: 4096, computeBytes: 0, layers: 8 },
    definitionHash: 'v1',
    ...extra,
  };
}

const stops: (() => Promise<void>)[] = [];

/**
 * Stops every controller a world started. Each test file registers it with afterEach: why not
 * here, at import, is that the unit project shares one module cache between files (isolate:
 * false), so a hook registered when this module loads would belong to the first file alone.
 */
export async function stopWorlds(): Promise<void> {
  for (const stop of stops.splice(0)) await stop();
}

/** For a controller a test wires itself: stopped with the worlds, after the test. */
export function stopAfterTest(stop: () => Promise<void>): void {
  stops.push(stop);
}

export function world(models: ModelDemand[], { budgetGiB = 24, hostFreeGiB = 64 } = {}) {
  const clock = new FakeClock();
  const desired = new FakeDesired({ models, budgetBytes: budgetGiB * GiB, hostFreeBytes: hostFreeGiB * GiB });
  const server = new RecordingServer((id, level) => footprintAt(level, desired.model(id).estimate).deviceBytes, () => clock.now());
  const log = new RecordingLog();
  const controller = new Controller({
    provider: desired,
    server,
    clock,
    log,
    classify: (error) => (error instanceof ScriptedLaunchError ? error.kind : 'crash'),
  });
  const events: ControllerEvent[] = [];
  controller.onEvent((event) => events.push(event));
  const abort = new AbortController();
  let running: Promise<void> = Promise.resolve();
  const stop = async (): Promise<void> => {
    abort.abort();
    await running;
  };
  const start = async (): Promise<void> => {
    running = controller.run(abort.signal);
    stops.push(stop);
    await settle();
  };
  const state = (id: string) => controller.status(id)?.state;
  const ofType = <T extends ControllerEvent['type']>(type: T) =>
    events.filter((e): e is Extract<ControllerEvent, { type: T }> => e.type === type);
  const states = (id: string) => ofType('ModelStateChanged').filter((e) => e.modelId === id).map((e) => e.status.state);
  return { clock, desired, server, log, controller, events, start, stop, state, ofType, states };
}
