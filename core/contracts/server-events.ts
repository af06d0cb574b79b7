// What happens to a model server process, as its one owner (the engine supervisor) reports it.
//
// Why events and not a resident() snapshot the controller compares with the last one: a
// snapshot taken while a server loads lists it, and when that load then fails the next
// snapshot no longer does — one failure seen twice, once by the launch and once as "a server
// ended without being asked to", so an out-of-memory at attempt 1 became a crash at attempt 2
// and was retried unchanged. The owner sees every transition exactly once; the controller
// folds them into its records, and what is resident is a view of those records.
//
// Contract, per model, in order: a launch produces either `ServerExited` with no pid (it
// failed before a process ran), or `ServerSpawned` followed by exactly one of `ServerExited`
// (it failed while loading) or `ServerReady`; a ready server ends with exactly one
// `ServerExited` (it died, or was killed because it hung) or `ServerStopped` (we asked: an
// eviction, a cancelled load, a relaunch at another level, quit). A failure is reported
// once, as one `ServerExited`, with llama.cpp's own words.
import type { LaunchLevel } from './launch-level.js';
import type { FailureKind } from './recovery.js';

/**
 * A fault of the card in an engine's log (core/engine/gpu-fault.ts): the line, the device as the
 * engine or the kernel named it, and the plan's GPU that is, where the launch's placement says.
 */
export interface GpuFaultReport {
  line: string;
  /** The CUDA device the engine was on, in its own numbering; null when the log does not say. */
  cudaDevice: number | null;
  /** The card's PCI address where the kernel or nvidia-smi named it ("0000:06:00.0"); else null. */
  busAddress: string | null;
  /** The card itself is lost, not only a kernel that died on it. */
  cardLost: boolean;
  /** The plan's GPU index (GpuBudget.index) the fault was on, from the launch's placement; null when it cannot be told. */
  gpu: number | null;
}

/**
 * Where a model's server is in its life as these events tell it: `loading` from ServerSpawned,
 * `ready` from ServerReady; its end (ServerExited, ServerStopped) leaves no server. The same
 * words for the same states as the supervisor's own ServerPhase (core/engine/supervisor/
 * server-state.ts), which has more (spare, stopping, exited) that no event reports: the
 * controller folds the events into these words rather than a word of its own.
 */
export type ReportedServerPhase = 'loading' | 'ready';

/** A failure the recovery ladder acts on. */
export type ServerFailureKind = Exclude<FailureKind, 'none'>;

export type ServerEvent =
  /** A process was started for the model; it holds memory from now on and is loading. */
  | { type: 'ServerSpawned'; modelId: string; level: LaunchLevel; pid: number; at: number }
  /** The model's server answers /health: it serves from now on. */
  | { type: 'ServerReady'; modelId: string; level: LaunchLevel; pid: number; at: number }
  /**
   * The model's server failed: it could not be started (pid null), ended while loading, died
   * while serving, or was killed because it hung. `reason` is llama.cpp's most specific line
   * where there is one. Its memory is free again.
   */
  | {
      type: 'ServerExited';
      modelId: string;
      level: LaunchLevel;
      pid: number | null;
      kind: ServerFailureKind;
      reason: string;
      /** It had been ready: it died while serving rather than while loading. */
      wasReady: boolean;
      exitCode: number | null;
      signal: string | null;
      /** A fault of the card, with the device; absent when the log shows none. */
      gpuFault?: GpuFaultReport;
      at: number;
    }
  /** The model's server ended because it was asked to (eviction, cancelled load, relaunch, quit). Not a failure. */
  | { type: 'ServerStopped'; modelId: string; level: LaunchLevel; pid: number; at: number };
