// What holds memory, as the records say, priced by a pass's memory observation: the servers
// that run (spawned or ready) and the launches in flight. The pass hands these to the policy,
// and the read model's `held` prices one model the same way, so the memory picture and the
// plan's reasons are one set of figures.
import { footprintAt } from '../policy/levels.js';
import type { Placement } from '../contracts/plan.js';
import type { LaunchLevel } from '../contracts/launch-level.js';
import type { ResidentServer } from './effects.js';
import type { Demands, ModelRecord, Records } from './model-record.js';
import { placedAt, type Loading } from './policy-inputs.js';

/** The model's device bytes at `level` as last measured, else its estimate there (0 without a demand). */
function priced(modelId: string, level: LaunchLevel, demands: Demands, serverBytes: ReadonlyMap<string, number> | null): number {
  const measured = serverBytes?.get(modelId);
  if (measured !== undefined) return measured;
  const estimate = demands.get(modelId)?.estimate;
  return estimate === undefined ? 0 : footprintAt(level, estimate).deviceBytes;
}

/** The servers running now, as the events say, priced by the observation's measurement (else the estimate). */
export function runningServers(records: Records, demands: Demands, serverBytes: ReadonlyMap<string, number>): ResidentServer[] {
  const out: ResidentServer[] = [];
  for (const record of records.values()) {
    const server = record.server;
    if (server === null) continue;
    const deviceBytes = priced(record.modelId, server.level, demands, serverBytes);
    out.push({ modelId: record.modelId, level: server.level, deviceBytes, ...(server.placement === undefined ? {} : { placement: server.placement }) });
  }
  return out;
}

/** Models loading: the controller's launch in flight, or a server spawned and not yet ready. */
export function loadingModels(records: Records): Map<string, Loading> {
  const out = new Map<string, Loading>();
  for (const record of records.values()) {
    if (record.op?.kind === 'loading') out.set(record.modelId, { level: record.op.level, placement: record.op.placement });
    else if (record.server?.phase === 'loading') {
      out.set(record.modelId, { level: record.server.level, ...(record.server.placement === undefined ? {} : { placement: record.server.placement }) });
    }
  }
  return out;
}

/**
 * What the model's server holds, or its launch in flight will, and where: priced as the pass
 * prices it (policy-inputs.ts), from the record as it is now. Null when it holds nothing.
 */
export function heldBy(record: ModelRecord, demands: Demands, serverBytes: ReadonlyMap<string, number> | null): { bytes: number; placement: Placement | null } | null {
  const loading = record.op?.kind === 'loading' ? record.op : null;
  const level = record.server?.level ?? loading?.level;
  if (level === undefined) return null;
  // A launch in flight with no process yet holds what its estimate says (nothing is measured).
  const bytes = record.server === null ? priced(record.modelId, level, demands, null) : priced(record.modelId, level, demands, serverBytes);
  const placement = record.server?.placement ?? loading?.placement;
  return { bytes, placement: placement === undefined ? null : placedAt(placement, bytes) };
}
