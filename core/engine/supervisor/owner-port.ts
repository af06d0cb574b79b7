// What a launch (launch.ts) needs of its model's owner (model-owner.ts), and what every owner
// shares with the supervisor that made it. Its own file so that the owner runs launches and a
// launch reports through its owner without either importing the other: the owner implements
// this port, the launch only sees it.
import type { ServerEvent } from '../../contracts/server-events.js';
import type { Clock } from '../../common/clock.js';
import type { LaunchLevel } from '../../contracts/launch-level.js';
import type { Placement } from '../../contracts/plan.js';
import type { LaunchError } from '../failure-classifier.js';
import type { LaunchSpec } from '../launch-spec.js';
import type { EngineRegistry } from './engine-registry.js';
import type { LineRing } from './log-ring.js';
import type { ServerMemory } from './memory/server-memory.js';
import type { ServerProcess, SpawnFunction } from './server-process.js';
import type { EndedBy, ServerState } from './server-state.js';
import type { SupervisorDeps } from './supervisor-types.js';
import type { WarmSpare } from './warm-spare.js';

/** Lines of the model's log a LaunchError carries. */
export const LOG_TAIL_LINES = 40;

/** Thrown into a load that a caller or an eviction cancelled (an AbortError, not a LaunchError). */
export function cancelled(reason: string): DOMException {
  return new DOMException(reason, 'AbortError');
}

/** What every model's owner shares with the supervisor that made it: its plumbing, and where its reports go. */
export interface OwnerContext {
  readonly deps: SupervisorDeps;
  readonly spawn: SpawnFunction;
  readonly clock: Clock;
  readonly platform: NodeJS.Platform;
  /** SIGTERM → SIGKILL grace, ms. */
  readonly graceMs: number;
  readonly registry: EngineRegistry;
  readonly spare: WarmSpare | null;
  readonly memory: ServerMemory;
  /** Reports one transition of a server's life to the supervisor's subscribers. */
  emit(event: ServerEvent): void;
  /** Reports a loading server's new load fraction to the supervisor's subscribers. */
  loadProgress(modelId: string, fraction: number | null): void;
}

/** The owner as its launches see it (model-owner.ts says what each does). */
export interface LaunchOwner {
  readonly modelId: string;
  readonly log: LineRing;
  readonly ctx: OwnerContext;
  /** Its current server: a launch sets it once its process has started. */
  server: ServerProcess | null;
  /** Spawn to ready of the last load that became ready, ms. */
  lastLoadMs: number | null;
  stop(server: ServerProcess, endedBy: EndedBy): Promise<void>;
  busyChanged(server: ServerProcess, spec: LaunchSpec, busy: boolean): void;
  transitioned(server: ServerProcess, state: ServerState): void;
  afterExit(server: ServerProcess, keyFile: string | null, loadTimeoutMs: number): void;
  failedBeforeStart(level: LaunchLevel, placement: Placement | undefined, reason: string, unstarted?: ServerProcess | null): LaunchError;
}
