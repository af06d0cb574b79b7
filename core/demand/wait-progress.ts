// What a request waiting for its model waits on, for the progress comments of a streamed request
// (core/router/http/progress-comments.ts words them). Read from the one owner of each fact: the
// supervisor for a server that is starting or stopping and its load progress, the controller for
// why nothing is starting yet, the gateway for a turn that is over. Map lookups only: the router
// asks every half second per waiting request.
//
// The fraction: loadFractionAt's rule, the one the tray and the dashboard show.
import { isServing } from '../contracts/model-status.js';
import { loadFractionAt } from '../contracts/snapshot-words.js';
import type { Controller } from '../controller/controller.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { WaitProgress } from '../router/model-gateway.js';

export interface WaitProgressParts {
  controller: Pick<Controller, 'servingModel' | 'status'>;
  supervisor: Pick<Supervisor, 'status'>;
  /** Whether the model, though loaded, must let models that waited longer go first (the gateway's turns). */
  turnIsOver(modelId: string): boolean;
  /** Its slots (`parallel`) when every one holds a request; undefined when one is free or it has no limit. */
  slotsOf(modelId: string): number | undefined;
  now(): number;
}

export function waitProgressOf(parts: WaitProgressParts, modelId: string): WaitProgress {
  const servedBy = parts.controller.servingModel(modelId);
  const server = parts.supervisor.status(servedBy);
  if (server?.phase === 'loading') {
    const at = loadFractionAt({ fraction: server.loadProgress, startedAt: server.startedAt, expectedMs: server.lastLoadMs }, parts.now());
    return { kind: 'loading', servedBy, fraction: at?.fraction ?? null, estimated: at?.estimated ?? false };
  }
  if (server?.phase === 'stopping') return { kind: 'stopping', servedBy };
  const status = parts.controller.status(servedBy);
  if (status !== undefined && isServing(status.state)) {
    if (parts.turnIsOver(servedBy)) return { kind: 'turn', servedBy };
    const parallel = parts.slotsOf(servedBy);
    return parallel === undefined ? { kind: 'queued', servedBy } : { kind: 'slot', servedBy, parallel };
  }
  switch (status?.state) {
    case 'loading':
      // Decided, but its process is not spawned yet (its spec is being read).
      return { kind: 'loading', servedBy, fraction: null, estimated: false };
    case 'evicting':
      return { kind: 'stopping', servedBy };
    case 'failed':
      return { kind: 'retry', servedBy, failure: status.recovery.kind };
    case 'queued':
      return { kind: status.unschedulableReason === null ? 'queued' : 'memory', servedBy };
    default:
      return { kind: 'queued', servedBy };
  }
}
