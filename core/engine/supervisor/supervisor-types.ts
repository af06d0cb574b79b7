// The supervisor's shared types: what it is given (SupervisorDeps) and what it answers with.
// Types only, and the load timeout's default; a leaf of the folder: what its owners share with it
// is owner-port.ts, the warm spare's own shapes are warm-spare.ts'.
import type { RuntimeOverhead } from '../runtime-overhead.js';
import type { LaunchSpec } from '../launch-spec.js';
import type { EngineIdentityOf } from '../../contracts/gpu-identity.js';
import type { Clock } from '../../common/clock.js';
import type { EngineCommand } from './engine-command.js';
import type { SpawnFunction } from './server-process.js';
import type { ServerPhase } from './server-state.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';

export interface SupervisorDeps {
  /** The launch spec of a model, read at each launch; throwing makes the launch fail as a crash with that message. */
  specFor(modelId: string): LaunchSpec | Promise<LaunchSpec>;
  /** Which program runs a spec (see defaultEngineCommand). */
  engineCommand(spec: LaunchSpec): EngineCommand | Promise<EngineCommand>;
  /** The estimated device footprint of a model at a level, bytes (for measure() and the memory wait). */
  footprint(modelId: string, level: LaunchLevel): number;
  /** Where engines.json (the record of running servers) and the engines' API key files live. */
  dataDir: string;
  /** child_process.spawn by default. */
  spawn?: SpawnFunction;
  clock?: Clock;
  /** Free device memory now, bytes. Absent: evictions do not wait for memory to come back. */
  memoryProbe?: () => Promise<number>;
  /**
   * Device bytes per pid from the driver (core/gpu's queryComputeApps, summed per pid).
   * Absent: llama.cpp's buffer lines and RSS only.
   */
  gpuProcessMemory?: () => Promise<ReadonlyMap<number, number>>;
  /** How long a load may take; default 30 s plus 15 s per GiB of spec.estimateBytes. */
  loadTimeoutMs?: (spec: LaunchSpec) => number;
  /** How long a server with requests in flight may make no progress before it is hung, ms; default the spec's, else 60 s. */
  hangLimitMs?: (spec: LaunchSpec) => number;
  /**
   * True while host RAM is the device (no GPU): then what a server holds is its process tree's
   * RSS, and the first server of each engine kind teaches `runtime` that engine's own cost there
   * (on a GPU, the driver's per-process figure teaches it). Absent: never.
   */
  hostIsDevice?: () => boolean;
  /** Where the engines' runtime figures are learned (see runtime-overhead.ts). */
  runtime?: RuntimeOverhead;
  /**
   * Of footprint(modelId, level), the compute buffers (its draft's included): reserved at load,
   * but in host RAM not resident until whole micro-batches run through them, so not in a ready
   * server's RSS. Absent: 0.
   */
  computeBytes?: (modelId: string) => number;
  /** SIGTERM → SIGKILL grace, ms; default 5000. */
  stopGraceMs?: number;
  /** Lines of log kept per model; default 2000. */
  logLines?: number;
  /** The eviction memory wait; defaults: 75 % of the footprint, at most 5 s, probing every 100 ms. */
  memoryWait?: { fraction?: number; maxMs?: number; pollMs?: number };
  platform?: NodeJS.Platform;
  /**
   * The warm spare's program and environment (warm-spare.ts); whether one is kept is
   * setSpareWanted's. Absent: never one.
   */
  warmSpare?: { command(): Promise<EngineCommand>; env: Record<string, string>; note?(line: string): void; launchHoldMs?: number };
  /** Hears that the spare started, became ready, was adopted or ended. */
  onSpareChange?: () => void;
  /**
   * What the driver calls the plan's GPU `index` (from the live budget), read at each launch, so
   * that the engine's CUDA_VISIBLE_DEVICES, --device and --main-gpu name the card the plan
   * priced. Absent: the plan's index stands for the driver's number.
   */
  gpuIdentity?: EngineIdentityOf;
}

/** Where the router sends a ready model's requests. The key goes in `Authorization: Bearer`. */
export interface Endpoint {
  port: number;
  apiKey: string;
  pid: number;
  level: LaunchLevel;
  startedAt: number;
  readyAt: number;
}

export interface ServerStatus {
  modelId: string;
  phase: ServerPhase;
  level: LaunchLevel;
  pid: number;
  port: number;
  startedAt: number;
  readyAt: number | null;
  /** 0…1 while loading, where the engine reports it in its 503 body; null otherwise. */
  loadProgress: number | null;
  /**
   * How long this model's last load that became ready took (spawn to ready, at whatever level),
   * ms; null before its first. For estimating a load's progress where the engine reports none.
   */
  lastLoadMs: number | null;
  /** How it ended, once it has. */
  exit: { exitCode: number | null; signal: string | null } | null;
}

/** A line added to a model's server log, with its position in that log (see log-ring.ts). */
export interface LoggedLine {
  modelId: string;
  line: string;
  position: number;
}

/**
 * A loading server's own load fraction changed: `fraction` is what status().loadProgress says
 * from now on (0…1, or null where the engine's 503 body carries none).
 */
export interface LoadFraction {
  modelId: string;
  fraction: number | null;
}

/** A running server's memory: a device figure (driver or llama.cpp's buffers), or host RSS. */
export interface Measurement {
  bytes: number;
  where: 'device' | 'host';
}

/** What an eviction did: stopped the server (or there was none), or left it because a request had claimed it. */
export type { EvictOutcome } from '../../contracts/evict-outcome.js';

const GIB = 1024 ** 3;

/** 30 s to start a process and map a small model, plus 15 s per GiB to read a big one from a slow disk. */
export function defaultLoadTimeoutMs(spec: LaunchSpec): number {
  return 30_000 + Math.ceil((spec.estimateBytes ?? 0) / GIB) * 15_000;
}
