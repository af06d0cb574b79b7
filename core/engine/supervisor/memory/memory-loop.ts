// What each ready server really uses, measured every few seconds: the figure the snapshot shows
// beside the plan's, and what the catalog learns a model's footprint from (the daemon wires the
// lessons; this loop only measures and hands each measurement on).
//
// Why a loop apart from the controller's pass: a pass prices with measure(), which must be cheap
// and answers at once with an estimate where there is no figure; this one asks for the figure
// (the driver, llama.cpp's buffers, the process tree's RSS) and may take its time.
import { Emitter, type Event } from '../../../common/emitter.js';
import type { Endpoint, Measurement } from '../supervisor-types.js';
import type { Supervisor } from '../supervisor.js';

/** How often each running server's memory is measured for the picture (and, on a GPU, learned). */
export const MEASURE_INTERVAL_MS = 5_000;

export interface MemoryLoopDeps {
  supervisor: Pick<Supervisor, 'endpointFor' | 'measured' | 'onServerEvent'>;
  /** The models to look at, in order; read at every round. */
  modelIds: () => readonly string[];
  /** Each measurement of a ready server, in turn: awaited before the next model is measured. */
  measuredOne: (modelId: string, measurement: Measurement, at: Endpoint) => Promise<void>;
  /** A round failed; the loop goes on. */
  failed: (error: unknown) => void;
}

export interface MemoryLoop {
  /** The last figure measured for the model's server, bytes; null when none runs or none was measured yet. O(1). */
  measuredBytes(modelId: string): number | null;
  /** Fires when a model's measured figure changed (the picture is out of date). */
  readonly onDidChange: Event<void>;
  /** Stops the timer and the subscription. Idempotent. */
  close(): void;
}

/** Starts measuring every MEASURE_INTERVAL_MS (the timer does not hold the process open). */
export function startMemoryLoop(deps: MemoryLoopDeps): MemoryLoop {
  const measured = new Map<string, number>();
  const changed = new Emitter<void>('the memory loop');
  // A server that ended holds nothing: its figure goes with it, not at the next round.
  const unsubscribe = deps.supervisor.onServerEvent((event) => {
    if (event.type === 'ServerExited' || event.type === 'ServerStopped') measured.delete(event.modelId);
  });
  const round = async (): Promise<void> => {
    for (const modelId of deps.modelIds()) {
      const at = deps.supervisor.endpointFor(modelId);
      if (at === null) continue;
      const measurement = await deps.supervisor.measured(modelId).catch(() => null);
      if (measurement === null) continue;
      if (measured.get(modelId) !== measurement.bytes) {
        measured.set(modelId, measurement.bytes);
        changed.fire();
      }
      await deps.measuredOne(modelId, measurement, at);
    }
  };
  const timer = setInterval(() => {
    round().catch(deps.failed);
  }, MEASURE_INTERVAL_MS);
  timer.unref();
  return {
    measuredBytes: (modelId) => measured.get(modelId) ?? null,
    onDidChange: changed.event,
    close: () => {
      clearInterval(timer);
      unsubscribe();
    },
  };
}
