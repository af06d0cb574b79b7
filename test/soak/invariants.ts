// The soak's verdict: each invariant measured from what the clients saw, what the daemon logged
// and what the kernel says, with a pass or a fail. Pure: the run gathers a SoakRecord, this
// judges it, so the judging is tested without a daemon (test/unit/soak/invariants.test.ts).
import { explain, isOpenAIShaped, type FaultRecord } from './explain.js';
import { FAULT_KINDS, planEpisodes, type FaultKind, type Profile } from './profiles.js';
import type { Outcome } from './request-outcome.js';

/** How many more descriptors the daemon may hold at the end than after its warm-up (sockets closing late). */
export const FD_SLACK = 4;
/**
 * The daemon's live heap after a full GC may grow by less than this over the run (after its
 * warm-up): the leak bound. Heap snapshots of a daemon under the same kind of load read +0.08 MiB
 * of compiled code and ~60 KB of log-ring strings from its 2,452nd request to its 4,104th
 * (RELIABILITY.md), so the bound is far past that noise, while a leak of a kilobyte a request
 * crosses it within the full soak's ~4,000 requests.
 */
export const LIVE_HEAP_GROWTH_LIMIT_BYTES = 4_000_000;
/**
 * The daemon's resident memory may grow by less than this: a backstop for memory the live heap
 * does not see (native allocations, a heap V8 keeps growing). Not the leak bound: RSS moves with
 * V8's and malloc's high-water marks under load, +3.6 to +19.1 MB over eight full runs of code
 * that changed little.
 */
export const RSS_GROWTH_LIMIT_BYTES = 30_000_000;

export interface ProcessSample {
  at: number;
  fds: number;
  rssBytes: number;
  /** V8's heap in use after a full collection, read through the daemon's inspector (live-heap.ts). */
  liveHeapBytes: number;
  /** process.memoryUsage().external after the same collection (Buffers and the like), reported beside it. */
  externalBytes: number;
}

export interface SoakRecord {
  profile: Profile;
  outcomes: readonly Outcome[];
  faults: readonly FaultRecord[];
  swaps: number;
  /** The pinned model's evictions in the daemons' logs. */
  pinnedEvictions: number;
  /** Per daemon life, the pinned model's engine pids in the order they served. */
  pinnedPidsByLife: readonly (readonly number[])[];
  /** Evictions the servers' logs record, each with the requests claimed at its moment of stopping (server-log.ts). */
  evictionsLogged: number;
  /** Those that stopped a server with a request in flight, described ("chat-a (pid 4242, life 0): 1 in flight"). */
  claimedEvictions: readonly string[];
  /** Server log lines the event stream did not bring: an eviction among them is not counted. */
  serverLogLinesNotSeen: number;
  /** The last daemon at rest after its warm-up, and at rest at the end. */
  baseline: ProcessSample | null;
  end: ProcessSample | null;
  /** Requests the daemon still counted in flight at the end, at rest. */
  inFlightAtEnd: number | null;
  enginesSeen: number;
  /** Engine processes alive after the final stop. */
  enginesLeft: readonly number[];
  portsSeen: number;
  /** Engine ports something still listens on after the final stop. */
  portsLeft: readonly number[];
  daemonExit: { code: number | null; signal: string | null } | null;
  /** Why the run ended early, if it did. */
  aborted: string | null;
}

export interface InvariantResult {
  name: string;
  measured: string;
  ok: boolean;
}

export interface Attribution {
  outcome: Outcome;
  fault: FaultRecord | null;
  why: string;
}

/** Every failed request with the fault that explains it, or why none does. */
export function attribute(outcomes: readonly Outcome[], faults: readonly FaultRecord[]): Attribution[] {
  return outcomes
    .filter((o) => !o.ok)
    .map((outcome) => {
      const found = explain(outcome, faults);
      return found.fault === null ? { outcome, fault: null, why: found.why } : { outcome, fault: found.fault, why: '' };
    });
}

/** How many times the profile injects each fault. */
export function plannedFaults(profile: Profile): Record<FaultKind, number> {
  const planned = Object.fromEntries(FAULT_KINDS.map((kind) => [kind, 0])) as Record<FaultKind, number>;
  const { restarts, warmUp, lastLife } = planEpisodes(profile);
  for (const kind of [...restarts, ...warmUp, ...lastLife]) planned[kind]++;
  return planned;
}

/** Whether the daemon classified the fault as the soak expects. */
export function classifiedRight(fault: FaultRecord): boolean {
  if (fault.classifiedAs === null) return false;
  return fault.kind === 'daemon-kill' ? fault.classifiedAs.startsWith('orphans ended') : fault.classifiedAs === fault.expected;
}

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;
/** "+1.2 MB over 11.0 min": how much `field` grew from `from` to `to`. */
const growth = (from: ProcessSample, to: ProcessSample, field: 'rssBytes' | 'liveHeapBytes') => {
  const delta = to[field] - from[field];
  return `${delta >= 0 ? '+' : ''}${(delta / 1e6).toFixed(1)} MB over ${((to.at - from.at) / 60_000).toFixed(1)} min`;
};

export function checkInvariants(record: SoakRecord): InvariantResult[] {
  const failures = attribute(record.outcomes, record.faults);
  const lost = failures.filter((f) => f.fault === null);
  const explained = failures.filter((f) => f.fault !== null);
  // A dead daemon cannot answer in any shape, and a client that hung up was answered nothing on purpose.
  const exempt = explained.filter((f) => f.fault?.kind === 'daemon-kill' || f.fault?.kind === 'client-abort');
  const unshaped = explained.filter((f) => !exempt.includes(f) && f.outcome.error !== null && !isOpenAIShaped(f.outcome.error));
  const cutOff = lost.filter((f) => f.outcome.firstByteAt !== null);
  const pinnedRestarts = record.pinnedPidsByLife.reduce((n, pids) => n + Math.max(0, pids.length - 1), 0);

  const planned = plannedFaults(record.profile);
  const missing = FAULT_KINDS.filter((kind) => record.faults.filter((f) => f.kind === kind).length < planned[kind]);
  const right = record.faults.filter((f) => f.seen && classifiedRight(f));
  const kills = record.faults.filter((f) => f.restart !== undefined);
  const orphansLeft = kills.reduce((n, f) => n + (f.restart?.left ?? 0), 0);
  const pinsKept = kills.filter((f) => f.restart?.pinKept === true).length;

  const rows: InvariantResult[] = [
    {
      name: 'requests lost (a failure no injected fault explains)',
      measured: `${lost.length} of ${record.outcomes.length} requests (${failures.length} failed, ${explained.length} explained by a fault)`,
      ok: lost.length === 0 && record.outcomes.length > 0,
    },
    {
      name: "failures not in OpenAI's error shape",
      measured: `${unshaped.length} (${exempt.length} need none: no daemon to answer, or the client hung up)`,
      ok: unshaped.length === 0,
    },
    {
      name: 'evictions or restarts of the pinned model',
      measured: `${record.pinnedEvictions} evicted, ${pinnedRestarts} new engines within a daemon's life`,
      ok: record.pinnedEvictions === 0 && pinnedRestarts === 0,
    },
    {
      name: 'evictions of a server with a request in flight (claimed)',
      measured: `${record.claimedEvictions.length} of ${record.evictionsLogged} evictions in the servers' logs${record.serverLogLinesNotSeen > 0 ? ` (${record.serverLogLinesNotSeen} server log lines not seen)` : ''}${record.claimedEvictions.length > 0 ? `: ${record.claimedEvictions.join('; ')}` : ''}`,
      // None seen at all would mean the evidence is missing (the line's wording changed), not that all is well.
      ok: record.claimedEvictions.length === 0 && record.evictionsLogged > 0,
    },
    {
      name: 'answers cut off that no fault explains',
      measured: `${cutOff.length}`,
      ok: cutOff.length === 0,
    },
    {
      name: 'faults injected as planned, seen and classified with their kind',
      measured: `${right.length} of ${record.faults.length}${missing.length > 0 ? `; too few: ${missing.join(', ')}` : ''}`,
      ok: missing.length === 0 && right.length === record.faults.length,
    },
    {
      name: 'after each kill -9: orphans left, pin kept',
      measured: `${kills.length} restart(s): ${orphansLeft} orphan(s) left, pin kept ${pinsKept} of ${kills.length}`,
      ok: orphansLeft === 0 && pinsKept === kills.length && kills.length === planned['daemon-kill'],
    },
    {
      name: 'requests still counted in flight at rest at the end',
      measured: record.inFlightAtEnd === null ? 'not measured' : `${record.inFlightAtEnd}`,
      ok: record.inFlightAtEnd === 0,
    },
    {
      name: 'engine processes left after the final stop',
      measured: `${record.enginesLeft.length} (of ${record.enginesSeen} engines that served)${record.enginesLeft.length > 0 ? `: pids ${record.enginesLeft.join(', ')}` : ''}`,
      ok: record.enginesLeft.length === 0 && record.enginesSeen > 0,
    },
    {
      name: 'engine ports still listening after the final stop',
      measured: `${record.portsLeft.length} (of ${record.portsSeen})${record.portsLeft.length > 0 ? `: ${record.portsLeft.join(', ')}` : ''}`,
      ok: record.portsLeft.length === 0 && record.portsSeen > 0,
    },
    {
      name: `daemon file descriptors at rest, after warm-up → end (slack ${FD_SLACK})`,
      measured: record.baseline === null || record.end === null ? 'not measured' : `${record.baseline.fds} → ${record.end.fds}`,
      ok: record.baseline !== null && record.end !== null && record.end.fds - record.baseline.fds <= FD_SLACK,
    },
    {
      name: `daemon live heap after a full GC at rest, after warm-up → end (growth < ${LIVE_HEAP_GROWTH_LIMIT_BYTES / 1e6} MB)`,
      measured:
        record.baseline === null || record.end === null
          ? 'not measured'
          : `${mib(record.baseline.liveHeapBytes)} → ${mib(record.end.liveHeapBytes)} (${growth(record.baseline, record.end, 'liveHeapBytes')}); external ${mib(record.baseline.externalBytes)} → ${mib(record.end.externalBytes)}`,
      ok: record.baseline !== null && record.end !== null && record.end.liveHeapBytes - record.baseline.liveHeapBytes < LIVE_HEAP_GROWTH_LIMIT_BYTES,
    },
    {
      name: `daemon RSS at rest, after warm-up → end (backstop: growth < ${RSS_GROWTH_LIMIT_BYTES / 1e6} MB)`,
      measured: record.baseline === null || record.end === null ? 'not measured' : `${mib(record.baseline.rssBytes)} → ${mib(record.end.rssBytes)} (${growth(record.baseline, record.end, 'rssBytes')})`,
      ok: record.baseline !== null && record.end !== null && record.end.rssBytes - record.baseline.rssBytes < RSS_GROWTH_LIMIT_BYTES,
    },
    {
      name: 'request-driven swaps',
      measured: `${record.swaps} (target ${record.profile.targetSwaps})`,
      ok: record.swaps >= record.profile.targetSwaps,
    },
    {
      name: 'the last daemon stops on SIGTERM with exit 0',
      measured: record.daemonExit === null ? 'not stopped' : `code ${record.daemonExit.code}, signal ${record.daemonExit.signal}`,
      ok: record.daemonExit?.code === 0,
    },
  ];
  if (record.aborted !== null) rows.push({ name: 'the run completed', measured: record.aborted, ok: false });
  return rows;
}
