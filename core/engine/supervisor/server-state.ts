// A server's life as one value: its states, which may follow which, and the pure readings of
// it. A leaf of the supervisor: the process that lives it (server-process.ts) is its one writer,
// and everyone else reads it from here.
import type { ReportedServerPhase } from '../../contracts/server-events.js';
import type { FailureClassification } from '../failure-classifier.js';
import type { LlamaServerSlots } from '../llama-server/saved-slots.js';

/** What status() calls a server's state: its kind, a draining server still what it was until its output is read. */
export type ServerPhase = Exclude<ServerState['kind'], 'draining'>;

/**
 * The phases the lifecycle events report (loading, ready), which the controller keeps in its
 * records: checked here to be phases of this life, so that a phase renamed here fails to compile
 * instead of leaving the controller a word the supervisor no longer writes.
 */
export type PhaseTheEventsReport = PhaseOfThisLife<ReportedServerPhase>;
type PhaseOfThisLife<Phase extends ServerPhase> = Phase;

/**
 * Why the supervisor ended a server: 'requested' (an eviction, a cancelled load, a relaunch,
 * quit, a warm spare no longer wanted) makes its exit a stop, not a failure; 'load-timeout' and
 * 'hung' make it a hang.
 */
export type EndedBy = { why: 'requested' } | { why: 'load-timeout' } | { why: 'hung'; reason: string };

export interface ProcessExit {
  exitCode: number | null;
  signal: string | null;
}

/**
 * A server's whole life as one value; `ServerProcess` (server-process.ts) is its only writer.
 *
 * - spare: a warm spare (warm-spare.ts), an embedded engine started with no model and no launch
 *   yet: no port, no key, no claims. `runtimeReady`: it said its runtime has started. A launch
 *   that adopts it moves it to 'loading' (`adopt`): the same process, the same object.
 * - loading: started for a launch, not yet answering /health. `spawnedAt` (epoch ms), once its
 *   process has started for this launch (an adopted spare's, once the launch has it): the one
 *   sub-step of loading, reported as ServerSpawned, since a process now holds memory.
 * - ready: serving since `at` (epoch ms); `serves` is what it can do, known by then and fixed
 *   for its life.
 * - stopping: the supervisor is ending it for `by`, marked before it signals the process, so
 *   that from then on it takes no claims (and a spare is no longer adoptable). `killedByUs`: the
 *   supervisor sent it SIGKILL itself (a stop past its grace); any other SIGKILL came from elsewhere.
 * - draining: the process has exited (or never started), its output still draining: its port is
 *   dead, so nothing may be sent there any more. `by` is null when it ended on its own.
 * - exited: drained and classified: `failure` says how it failed, null after a stop (and for a
 *   spare, whose death is its own policy's, not a model's); `portTaken`: it ended while loading
 *   because another program had taken its port (a retry, not a failure).
 *
 * `readyAt` rides along after 'ready': whether it had been ready decides how its end is read.
 */
export type ServerState =
  | { kind: 'spare'; runtimeReady: boolean }
  | { kind: 'loading'; spawnedAt?: number }
  | { kind: 'ready'; at: number; serves: ServerAbilities }
  | { kind: 'stopping'; by: EndedBy; readyAt: number | null; killedByUs: boolean }
  | { kind: 'draining'; exit: ProcessExit; was: 'spare' | 'loading' | 'ready' | 'stopping'; by: EndedBy | null; readyAt: number | null; killedByUs: boolean }
  | { kind: 'exited'; exit: ProcessExit; readyAt: number | null; failure: FailureClassification | null; portTaken: boolean };

/** What a ready server can do: found out while it loads, its requests' route from then on. */
export interface ServerAbilities {
  /** It serves Anthropic's Messages API itself: asked once it answers /health (served-apis.ts). */
  anthropicMessages: boolean;
  /** It can call tools: false for a llama-server build without Jinja templates (capabilities.jinja 'absent'). */
  toolCalls: boolean;
  /** A llama-server's saved conversations (llama-server/saved-slots.ts); null for the embedded engine, which keeps its own. */
  savedSlots: LlamaServerSlots | null;
}

/**
 * Which state may follow which. A spare may be rewritten in place (its runtime became ready); a
 * stopping or draining server too (the supervisor's SIGKILL is learned while it stops, or while
 * its output drains); nothing follows 'exited', and nothing goes back to 'spare'. Beside the
 * table, loading's one sub-step (`spawnedSubStep`).
 */
const NEXT: Readonly<Record<ServerState['kind'], readonly ServerState['kind'][]>> = {
  spare: ['spare', 'loading', 'stopping', 'draining'],
  loading: ['ready', 'stopping', 'draining'],
  ready: ['stopping', 'draining'],
  stopping: ['stopping', 'draining'],
  draining: ['draining', 'exited'],
  exited: [],
};

/** A loading server's process started: loading gains its `spawnedAt`, once; no other change stays in 'loading'. */
function spawnedSubStep(from: ServerState, to: ServerState): boolean {
  return from.kind === 'loading' && to.kind === 'loading' && from.spawnedAt === undefined && to.spawnedAt !== undefined;
}

/** Whether its life has the change from `from` to `to`: the table, or loading's one sub-step. */
export function changeAllowed(from: ServerState, to: ServerState): boolean {
  return NEXT[from.kind].includes(to.kind) || spawnedSubStep(from, to);
}

/** A writer asked for a change the life of a server does not have: a bug in the supervisor, never the engine's doing. */
export class IllegalTransition extends Error {
  constructor(from: ServerState['kind'], to: ServerState['kind']) {
    super(`a server cannot go from '${from}' to '${to}'`);
    this.name = 'IllegalTransition';
  }
}

/** Why the supervisor is ending (or ended) it, while it stops or drains; null otherwise, or when it ended on its own. */
export function endedByOf(state: ServerState): EndedBy | null {
  return state.kind === 'stopping' || state.kind === 'draining' ? state.by : null;
}

/** When the server became ready, if it ever did. */
export function readyAtOf(state: ServerState): number | null {
  return state.kind === 'spare' || state.kind === 'loading' ? null : state.kind === 'ready' ? state.at : state.readyAt;
}
