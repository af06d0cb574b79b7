// What a request waiting for its model waits on, for the progress comments of a streamed request
// (core/router/progress-comments.ts words them). Read from the one owner of each fact: the
// supervisor for a server that is starting or stopping and its load progress, the controller for
// why nothing is starting yet, the gateway for a turn that is over. Map lookups only: the router
// asks every half second per waiting request.
//
// The fraction: the engine's own where it reports one (llama.cpp's loader progress in the 503
// body of /health; the embedded engine's onProgress), because it is the truth; otherwise the
// time this load has taken against the time this model's last load took, marked as an estimate
// (and held below 100 %: a load slower than last time has not finished); otherwise none.
import type { Controller } from '../controller/controller.js';
import type { Supervisor } from '../engine/supervisor/supervisor.js';
import type { WaitProgress } from '../router/model-gateway.js';

export interface WaitProgressParts {
  controller: Pick<Controller, 'servingModel' | 'status'>;
  supervisor: Pick<Supervisor, 'status'>;
  /** Whether the model, though loaded, must let models that waited longer go first (the gateway's turns). */
  turnIsOver(modelId: string): boolean;
  now(): number;
}

/** The highest estimated fraction: an estimate never claims a load is done. */
const MAX_ESTIMATE = 0.99;

export function waitProgressOf(parts: WaitProgressParts, modelId: string): WaitProgress {
  const servedBy = parts.controller.servingModel(modelId);
  const server = parts.supervisor.status(servedBy);
  if (server?.phase === 'loading') {
    if (server.loadProgress !== null) return { kind: 'loading', servedBy, fraction: server.loadProgress, estimated: false };
    if (server.lastLoadMs === null || server.lastLoadMs <= 0) return { kind: 'loading', servedBy, fraction: null, estimated: false };
    const fraction = Math.min(MAX_ESTIMATE, Math.max(0, parts.now() - server.startedAt) / server.lastLoadMs);
    return { kind: 'loading', servedBy, fraction, estimated: true };
  }
  if (server?.phase === 'stopping') return { kind: 'stopping', servedBy };
  const status = parts.controller.status(servedBy);
  switch (status?.state) {
    case 'loading':
      // Decided, but its process is not spawned yet (its spec is being read).
      return { kind: 'loading', servedBy, fraction: null, estimated: false };
    case 'ready':
    case 'active':
    case 'degraded':
      return { kind: parts.turnIsOver(servedBy) ? 'turn' : 'queued', servedBy };
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
